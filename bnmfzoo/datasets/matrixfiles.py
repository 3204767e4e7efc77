"""Matrices on disk read a range of rows (or columns) at a time, never densified as a whole.

:func:`open_matrix` describes a matrix file without reading its values and returns a
:class:`MatrixFile`; ``MatrixFile.rows(r0, r1)`` reads rows ``r0:r1`` as a CSR matrix and
``MatrixFile.T`` is the transposed view (its rows are the file's columns). The formats:

- AnnData ``.h5ad`` (HDF5) and AnnData ``.zarr`` stores: ``X`` stored as CSR, CSC or dense;
  ``obs_names`` / ``var_names`` label the rows and columns.
- HDF5 (``.h5``, ``.hdf5``) and Zarr (``.zarr``) files holding one chunked 2-D array (or a
  sparse group in AnnData's encoding: ``data``, ``indices``, ``indptr`` and a ``shape``), and
  10x Genomics HDF5 (``matrix`` group, genes x cells, read as cells x genes with barcodes and
  gene IDs as labels).
- 10x ``matrix.mtx(.gz)`` folders (genes x cells, read as cells x genes).

What a range costs depends on the layout. A range along the compressed axis of a sparse matrix
(rows of CSR, columns of CSC) reads only its own entries; a chunked dense array reads the chunks
that the range touches. A range across the compressed axis (rows of a CSC ``X``), and any range
of a MatrixMarket file, is found by scanning the stored entries in pieces of
:data:`SCAN_ENTRIES`: the whole file is read, but memory stays at one piece plus the range.

Values are checked as they are read (:func:`check_values`): the dtype must be real numeric; a
count model refuses negative, non-integer and non-finite values; a Gaussian model refuses
infinite values (NaN in a dense file marks a missing entry).
"""

import gzip
from pathlib import Path

import numpy as np
import scipy.sparse as sp

#: Stored entries read at a time when a range is found by scanning (bounds the memory).
SCAN_ENTRIES = 2**20
#: Stored values checked when a file is opened (a quick refusal of normalized data).
SAMPLE_VALUES = 2**16


def _attr(node, name, default=""):
    value = node.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _strings(values):
    return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in values],
                    dtype=object)


def _open_store(path):
    """``(root, kind)``: an open h5py file or zarr group/array; kind ``"hdf5"`` or ``"zarr"``."""
    p = Path(path)
    if p.is_dir() or p.suffix.lower() == ".zarr":
        import zarr

        try:
            return zarr.open(str(p), mode="r"), "zarr"
        except Exception as err:  # zarr raises several types for a store it cannot read
            raise ValueError(f"cannot read {p} as a Zarr store: {err}") from None
    import h5py

    try:
        return h5py.File(p, "r"), "hdf5"
    except OSError as err:
        raise ValueError(f"cannot read {p} as an HDF5 file: {err}") from None


def _close(root):
    if hasattr(root, "close"):
        root.close()


def check_values(values, *, counts, where):
    """Refuse values a model cannot take (one ``ValueError`` naming ``where``).

    Parameters
    ----------
    values : numpy.ndarray
        Stored values (sparse) or a dense piece (NaN: missing, Gaussian only).
    counts : bool
        Count model: non-negative finite integers only.
    where : str
        The file and range, for the message.
    """
    v = np.asarray(values)
    if not v.size:
        return
    if counts:
        finite = np.isfinite(v)
        if not finite.all():
            raise ValueError(f"{where} holds a non-finite value: a count model needs raw "
                             "counts")
        if v.min() < 0:
            raise ValueError(f"{where} holds negative values (min {v.min():g}): a count model "
                             "needs raw non-negative counts")
        if np.any(v != np.floor(v)):
            bad = v[v != np.floor(v)][0]
            raise ValueError(f"{where} holds non-integer values (e.g. {bad:g}; normalized or "
                             "log-transformed data?): a count model needs the raw counts "
                             "(e.g. adata.raw or a 'counts' layer)")
    elif np.isinf(v).any():
        raise ValueError(f"{where} holds an infinite value")


def _check_dtype(dtype, where):
    dtype = np.dtype(dtype)
    if dtype.kind not in "iuf":
        raise TypeError(f"{where} stores {dtype} values; a matrix file must hold real numbers "
                        "(integer or floating point)")


class MatrixFile:
    """A D x N matrix in a file, read by ranges of rows (picklable: no open handle is kept).

    Built by :func:`open_matrix`. ``rows(r0, r1)`` reads rows ``r0:r1``; ``T`` is the
    transposed view.

    Attributes
    ----------
    path : str
    shape : tuple of int
    layout : str
        ``"csr"``, ``"csc"``, ``"dense"`` or ``"mtx"`` (as stored).
    row_labels, col_labels : numpy.ndarray or None
    dtype : numpy.dtype
        Stored value type.
    """

    def __init__(self, path, node, layout, stored_shape, dtype, row_labels, col_labels,
                 transposed=False, mtx_header=0):
        self.path, self.node, self.layout = str(path), node, layout
        self.stored_shape = tuple(int(s) for s in stored_shape)
        self.dtype = np.dtype(dtype)
        self.transposed = bool(transposed)
        self.row_labels, self.col_labels = row_labels, col_labels
        self.mtx_header = mtx_header
        self.shape = self.stored_shape[::-1] if self.transposed else self.stored_shape
        #: a MatrixMarket file whose entries are in order of rows (found by nnz_per_row):
        #: a range stops reading past its last row
        self.sorted_rows = False

    def __repr__(self):
        return (f"MatrixFile({self.path!r}, shape={self.shape}, layout={self.layout!r}"
                f"{', transposed' if self.transposed else ''})")

    @property
    def T(self):
        """The transposed matrix (its rows are this one's columns), labels swapped."""
        return MatrixFile(self.path, self.node, self.layout, self.stored_shape, self.dtype,
                          self.col_labels, self.row_labels, not self.transposed,
                          self.mtx_header)

    # ------------------------------------------------------------------ reading
    def rows(self, r0, r1, *, counts=True):
        """Rows ``r0:r1`` as a ``scipy.sparse.csr_matrix`` of float64, column indices sorted.

        Parameters
        ----------
        r0, r1 : int
        counts : bool
            Count model (zeros of a dense file are not stored; values checked as counts);
            otherwise Gaussian (NaN of a dense file is missing, every other cell is stored).
        """
        r0, r1 = int(r0), int(r1)
        if not 0 <= r0 <= r1 <= self.shape[0]:
            raise ValueError(f"rows {r0}:{r1} out of range for {self.shape[0]} rows")
        where = f"{self.path} (rows {r0}:{r1}{' of the transpose' if self.transposed else ''})"
        if self.layout == "mtx":
            csr = self._mtx_range(r0, r1)
        else:
            root, _ = _open_store(self.path)
            try:
                node = root[self.node] if self.node else root
                if self.layout == "dense":
                    csr = self._dense_range(node, r0, r1, counts, where)
                elif (self.layout == "csr") != self.transposed:
                    csr = _compressed_slice(node, r0, r1, self.stored_shape[::-1]
                                            if self.transposed else self.stored_shape)
                else:
                    csr = _compressed_scan(node, r0, r1, self.shape[1])
            finally:
                _close(root)
        if self.layout != "dense":
            if not counts and csr.nnz and np.isnan(csr.data).any():
                raise ValueError(f"{where} stores NaN: sparse data list the observed entries "
                                 "only (leave a missing entry out)")
            check_values(csr.data, counts=counts, where=where)
        csr.sort_indices()
        return csr

    def _dense_range(self, node, r0, r1, counts, where):
        """A dense piece as CSR: the non-zero cells (counts) or the non-NaN ones (Gaussian).

        Only the stored piece, a mask and the kept entries are allocated (never a float64
        copy of the piece).
        """
        piece = np.asarray(node[:, r0:r1].T if self.transposed else node[r0:r1])
        keep = (piece != 0) if counts else ~np.isnan(piece)
        r, c = np.nonzero(keep)
        del keep
        values = piece[r, c].astype(np.float64)
        check_values(values, counts=counts, where=where)
        indptr = np.zeros(piece.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=piece.shape[0]), out=indptr[1:])
        return sp.csr_matrix((values, c.astype(np.int32), indptr), shape=piece.shape)

    def _mtx_range(self, r0, r1):
        """Rows of a MatrixMarket file (stored genes x cells: rows are its columns)."""
        keep_r, keep_c, keep_v = [], [], []
        by = 1 if self.transposed else 0  # logical rows: stored columns when transposed
        for ij, vals in _mtx_chunks(self.path, self.mtx_header):
            if self.sorted_rows and ij[by].size and ij[by][0] >= r1:
                break  # entries in row order: the rest of the file is past the range
            m = (ij[by] >= r0) & (ij[by] < r1)
            keep_r.append(ij[by][m] - r0)
            keep_c.append(ij[1 - by][m])
            keep_v.append(vals[m])
        r, c, v = (np.concatenate(a) for a in (keep_r, keep_c, keep_v))
        csr = sp.csr_matrix((v, (r, c)), shape=(r1 - r0, self.shape[1]))
        csr.sum_duplicates()
        return csr

    def nnz_per_row(self, counts=True):
        """Entries of each row that a block stores (read piece by piece, never all at once).

        Sparse layouts: the stored entries. Dense: the non-zero cells (``counts``) or the
        non-NaN ones (Gaussian), as :meth:`rows` stores them.
        """
        D = self.shape[0]
        if self.layout == "dense":
            out = np.empty(D, dtype=np.int64)
            step = max(1, SCAN_ENTRIES // max(self.shape[1], 1))
            root, _ = _open_store(self.path)
            try:
                node = root[self.node] if self.node else root
                for a in range(0, D, step):
                    b = min(a + step, D)
                    piece = np.asarray(node[:, a:b].T if self.transposed else node[a:b])
                    out[a:b] = ((piece != 0) if counts else ~np.isnan(piece)).sum(axis=1)
            finally:
                _close(root)
            return out
        if self.layout == "mtx":
            out = np.zeros(D, dtype=np.int64)
            by = 1 if self.transposed else 0
            last, ordered = -1, True
            for ij, _ in _mtx_chunks(self.path, self.mtx_header, values=False):
                out += np.bincount(ij[by], minlength=D)
                if ij[by].size:
                    ordered = ordered and ij[by][0] >= last and bool(
                        np.all(np.diff(ij[by]) >= 0))
                    last = int(ij[by][-1])
            self.sorted_rows = ordered
            return out
        root, _ = _open_store(self.path)
        try:
            node = root[self.node] if self.node else root
            if (self.layout == "csr") != self.transposed:
                return np.diff(np.asarray(node["indptr"][:], dtype=np.int64))
            out = np.zeros(D, dtype=np.int64)
            idx = node["indices"]
            for lo in range(0, idx.shape[0], SCAN_ENTRIES):
                out += np.bincount(np.asarray(idx[lo:lo + SCAN_ENTRIES]), minlength=D)
            return out
        finally:
            _close(root)

    def sample(self, counts=True):
        """Check the first :data:`SAMPLE_VALUES` stored values (a quick refusal)."""
        where = f"{self.path}"
        if self.layout == "mtx":
            for _, vals in _mtx_chunks(self.path, self.mtx_header, limit=SAMPLE_VALUES):
                check_values(vals, counts=counts, where=where)
            return
        root, _ = _open_store(self.path)
        try:
            node = root[self.node] if self.node else root
            if self.layout == "dense":
                rows = max(1, SAMPLE_VALUES // max(self.stored_shape[1], 1))
                piece = np.asarray(node[:rows], dtype=np.float64)
            else:
                piece = np.asarray(node["data"][:SAMPLE_VALUES], dtype=np.float64)
                if not counts and np.isnan(piece).any():
                    raise ValueError(f"{where} stores NaN: sparse data list the observed "
                                     "entries only (leave a missing entry out)")
            check_values(piece, counts=counts, where=where)
        finally:
            _close(root)

    def read(self, counts=True, block_rows=None):
        """The whole matrix as CSR (read range by range; only for data that fit in memory)."""
        step = block_rows or max(1, self.shape[0])
        parts = [self.rows(a, min(a + step, self.shape[0]), counts=counts)
                 for a in range(0, self.shape[0], step)]
        return sp.vstack(parts, format="csr")


def _compressed_slice(node, a, b, shape):
    """Major-axis range ``a:b`` of a compressed group as CSR rows (only its own entries)."""
    indptr = np.asarray(node["indptr"][a:b + 1], dtype=np.int64)
    lo, hi = int(indptr[0]), int(indptr[-1])
    return sp.csr_matrix((np.asarray(node["data"][lo:hi], dtype=np.float64),
                          np.asarray(node["indices"][lo:hi], dtype=np.int32), indptr - lo),
                         shape=(b - a, shape[1]))


def _compressed_scan(node, a, b, n_out):
    """Minor-axis range ``a:b`` of a compressed group as CSR rows, scanning in pieces."""
    indptr = np.asarray(node["indptr"][:], dtype=np.int64)
    idx, dat = node["indices"], node["data"]
    rows, cols, vals = [], [], []
    for lo in range(0, int(indptr[-1]), SCAN_ENTRIES):
        hi = min(lo + SCAN_ENTRIES, int(indptr[-1]))
        piece = np.asarray(idx[lo:hi])
        keep = np.flatnonzero((piece >= a) & (piece < b))
        if keep.size:
            rows.append((piece[keep] - a).astype(np.int64))
            cols.append(np.searchsorted(indptr, keep + lo, side="right") - 1)
            vals.append(np.asarray(dat[lo:hi], dtype=np.float64)[keep])
    if not rows:
        return sp.csr_matrix((b - a, n_out))
    r, c, v = (np.concatenate(x) for x in (rows, cols, vals))
    return sp.csr_matrix((v, (r, c)), shape=(b - a, n_out))


# ---------------------------------------------------------------------- MatrixMarket
def _open_text(path):
    return gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)


def _mtx_header(path):
    """``(lines before the entries, (rows, cols, entries), field)`` of a MatrixMarket file."""
    with _open_text(path) as fh:
        first = fh.readline()
        if not first.startswith("%%MatrixMarket"):
            raise ValueError(f"{path} is not a MatrixMarket file (no %%MatrixMarket header)")
        words = first.lower().split()
        if len(words) < 5 or words[2] != "coordinate" or words[4] != "general":
            raise ValueError(f"{path}: only coordinate general MatrixMarket files are read "
                             f"(got {' '.join(words[2:])})")
        n = 1
        for line in fh:
            n += 1
            if not line.startswith("%") and line.strip():
                sizes = tuple(int(t) for t in line.split()[:3])
                return n, sizes, words[3]
    raise ValueError(f"{path}: MatrixMarket file without a size line")


def _mtx_chunks(path, header, values=True, limit=None):
    """``((i, j), vals)`` pieces of :data:`SCAN_ENTRIES` entries: 0-based positions, values.

    Memory per piece: two int32 and one float64 column (16 bytes an entry), never the file.
    """
    import pandas as pd

    with _open_text(path) as fh:
        reader = pd.read_csv(fh, sep=r"\s+", header=None, skiprows=header, comment="%",
                             chunksize=SCAN_ENTRIES, dtype={0: np.int32, 1: np.int32},
                             engine="c")
        seen = 0
        for df in reader:
            i = df[0].to_numpy() - 1
            j = df[1].to_numpy() - 1
            n = i.size
            vals = (df[2].to_numpy(dtype=np.float64) if values and df.shape[1] > 2
                    else np.ones(n) if values else None)
            del df
            yield (i, j), vals
            seen += n
            if limit is not None and seen >= limit:
                return


# ---------------------------------------------------------------------- opening
def _index_labels(group):
    """The index (``_index`` column) of an AnnData ``obs`` / ``var`` group."""
    from anndata.io import read_elem

    name = _attr(group, "_index", "_index")
    return _strings(np.asarray(read_elem(group[name])))


def _describe(node, name, where):
    """``(layout, stored shape, dtype)`` of an array or a sparse group."""
    enc = _attr(node, "encoding-type", "")
    if hasattr(node, "shape") and hasattr(node, "dtype") and not hasattr(node, "keys"):
        if len(node.shape) != 2:
            raise ValueError(f"{where}: {name or 'the array'} has {len(node.shape)} dimensions; "
                             "a matrix needs 2")
        return "dense", node.shape, node.dtype
    keys = set(node.keys())
    if not {"data", "indices", "indptr"} <= keys:
        raise ValueError(f"{where}: {name or 'the group'} is neither a 2-D array nor a sparse "
                         "matrix (data, indices, indptr)")
    if "shape" in keys:  # 10x HDF5: genes x cells, compressed over cells
        shape = tuple(int(s) for s in np.asarray(node["shape"][:]))
        layout = "csc"
    else:
        shape = tuple(int(s) for s in node.attrs["shape"])
        layout = {"csr_matrix": "csr", "csc_matrix": "csc"}.get(enc)
        if layout is None:
            raise ValueError(f"{where}: sparse group {name!r} has encoding-type {enc!r}; "
                             "expected csr_matrix or csc_matrix")
    if int(node["indptr"].shape[0]) != shape[0 if layout == "csr" else 1] + 1:
        raise ValueError(f"{where}: {name}/indptr does not match its shape {shape}")
    return layout, shape, node["data"].dtype


def open_matrix(path, *, dataset=None):
    """Describe a matrix file (no values read) as a :class:`MatrixFile`.

    Parameters
    ----------
    path : str or Path
        ``.h5ad``, an AnnData or plain ``.zarr`` store, an HDF5 file (``.h5``, ``.hdf5``,
        10x ``filtered_feature_bc_matrix.h5`` included) or a 10x ``matrix.mtx`` folder.
    dataset : str, optional
        Path of the matrix inside an HDF5 file or Zarr store (default: ``X`` when present,
        then ``matrix``, then the only 2-D array at the top level).

    Returns
    -------
    MatrixFile
        Cells x genes for the 10x layouts (the files store genes x cells).

    Examples
    --------
    >>> import tempfile, pathlib, h5py, numpy as np
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.h5"
    >>> with h5py.File(p, "w") as f:
    ...     _ = f.create_dataset("X", data=np.arange(12.0).reshape(4, 3), chunks=(2, 3))
    >>> m = open_matrix(p)
    >>> m.shape, m.rows(1, 3, counts=False).toarray()[0].tolist()
    ((4, 3), [3.0, 4.0, 5.0])
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file {str(p)!r} does not exist")
    if p.is_dir() and p.suffix.lower() != ".zarr" and not (p / "zarr.json").exists() \
            and not (p / ".zgroup").exists() and not (p / ".zarray").exists():
        return _open_10x_folder(p)
    root, kind = _open_store(p)
    try:
        is_array = hasattr(root, "shape") and not hasattr(root, "keys")
        if is_array:
            layout, shape, dtype = _describe(root, "", str(p))
            name = None
        else:
            name = dataset or next((n for n in ("X", "matrix") if n in root), None)
            if name is None:
                arrays = [n for n in root.keys()
                          if hasattr(root[n], "shape") and len(root[n].shape) == 2]
                if len(arrays) != 1:
                    raise ValueError(f"{p} holds {len(arrays)} 2-D arrays ({', '.join(arrays)})"
                                     " and no X or matrix: name one with dataset=")
                name = arrays[0]
            if name not in root:
                raise ValueError(f"{p} has no {name!r} (dataset=)")
            layout, shape, dtype = _describe(root[name], name, str(p))
        _check_dtype(dtype, f"{p}" + (f" ({name})" if name else ""))
        rows = cols = None
        transposed = False
        if not is_array and "obs" in root and "var" in root:  # AnnData
            rows, cols = _index_labels(root["obs"]), _index_labels(root["var"])
        elif not is_array and name == "matrix" and "barcodes" in root[name]:  # 10x HDF5
            g = root[name]
            transposed = True
            rows = _strings(g["barcodes"][:])
            if "features" in g:
                cols = _strings(g["features"]["id"][:])
            elif "genes" in g:
                cols = _strings(g["genes"][:])
    finally:
        _close(root)
    m = MatrixFile(p, name, layout, shape, dtype, rows, cols, transposed)
    for lab, n, what in ((m.row_labels, m.shape[0], "row"), (m.col_labels, m.shape[1], "col")):
        if lab is not None and lab.size != n:
            raise ValueError(f"{p}: {lab.size} {what} labels for {n} {what}s")
        if lab is not None and np.unique(lab.astype(str)).size != lab.size:
            raise ValueError(f"{p}: the {what} labels hold duplicates (make them unique, "
                             "e.g. adata.obs_names_make_unique())")
    return m


def _open_10x_folder(folder):
    from bnmfzoo.datasets.singlecell import _first, _tsv_column, _unique

    mtx = _first(folder, ["matrix.mtx"])
    if mtx is None:
        raise ValueError(f"{folder} is a folder without matrix.mtx(.gz) (a 10x folder) and "
                         "not a Zarr store")
    bar = _first(folder, ["barcodes.tsv"])
    feat = _first(folder, ["features.tsv", "genes.tsv"])
    if bar is None or feat is None:
        missing = "barcodes.tsv(.gz)" if bar is None else "features.tsv(.gz) (or genes.tsv)"
        raise ValueError(f"{folder}: a 10x folder needs {missing} beside matrix.mtx")
    header, (n_genes, n_cells, _), field = _mtx_header(mtx)
    if field not in ("integer", "real", "pattern"):
        raise TypeError(f"{mtx} stores {field} values; a matrix file must hold real numbers")
    barcodes = _unique(_tsv_column(bar, 0), bar.name)
    genes = _unique(_tsv_column(feat, 0), feat.name)
    if (n_genes, n_cells) != (genes.size, barcodes.size):
        raise ValueError(f"{mtx.name} is {n_genes} genes x {n_cells} cells but {feat.name} "
                         f"lists {genes.size} genes and {bar.name} {barcodes.size} barcodes")
    return MatrixFile(mtx, None, "mtx", (n_genes, n_cells),
                      np.int64 if field != "real" else np.float64,
                      barcodes.astype(object), genes.astype(object), transposed=True,
                      mtx_header=header)


def is_matrix_file(path):
    """Whether ``path`` looks like a file :func:`open_matrix` reads (by name, no reading)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".h5ad", ".zarr", ".hdf5"):
        return True
    if p.is_dir():
        return True
    if suffix == ".h5" and p.is_file():
        import h5py

        try:
            with h5py.File(p, "r") as f:
                return "_NCProperties" not in f.attrs and ("X" in f or "matrix" in f)
        except OSError:
            return False
    return False
