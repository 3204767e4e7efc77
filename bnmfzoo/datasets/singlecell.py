"""Single-cell count files: AnnData ``.h5ad`` and 10x Genomics ``matrix.mtx`` folders.

Both are read as sparse counts (cells x genes, :class:`~bnmfzoo.datasets.SparseCounts`) with
their labels: ``obs_names`` / barcodes label the rows, ``var_names`` / gene IDs the columns.
Nothing is made dense. :func:`h5ad_rows` reads a range of rows of a CSR ``X`` straight from the
file (``h5py``), so a worker can load its own block of an atlas without the rest.

The 10x layout (Cell Ranger 3+): ``matrix.mtx(.gz)`` (genes x cells, MatrixMarket coordinate
integers), ``features.tsv(.gz)`` (gene ID, symbol, type; ``genes.tsv`` in Cell Ranger 2) and
``barcodes.tsv(.gz)``. AnnData: ``X`` as CSR, CSC or dense, ``obs_names`` and ``var_names``.
"""

import gzip
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from bnmfzoo.datasets.counts import SparseCounts


def _open_text(path):
    return gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)


def _first(folder, names):
    for name in names:
        for cand in (folder / name, folder / f"{name}.gz"):
            if cand.exists():
                return cand
    return None


def _tsv_column(path, col):
    with _open_text(path) as fh:
        rows = [ln.rstrip("\n").split("\t") for ln in fh if ln.strip()]
    return np.array([r[col] if len(r) > col else r[0] for r in rows], dtype=object)


def is_10x_folder(path):
    """Whether ``path`` is a folder holding a 10x ``matrix.mtx(.gz)``."""
    p = Path(path)
    return p.is_dir() and _first(p, ["matrix.mtx"]) is not None


def is_h5ad(path):
    """Whether ``path`` names an ``.h5ad`` file."""
    return str(path).lower().endswith(".h5ad")


def _check_counts(values, what):
    v = np.asarray(values)
    if v.size and (not np.all(np.isfinite(v)) or v.min() < 0 or np.any(v != np.floor(v))):
        raise ValueError(f"{what} holds non-integer or negative values (normalized or "
                         "log-transformed data?): a count model needs the raw counts "
                         "(e.g. adata.raw or a 'counts' layer)")


def _unique(labels, what):
    labels = np.asarray(labels).astype(str)
    if np.unique(labels).size != labels.size:
        raise ValueError(f"{what} holds duplicate labels")
    return labels


def read_10x_mtx(folder, *, counts=True):
    """Read a 10x ``matrix.mtx`` folder as cells x genes sparse counts.

    Parameters
    ----------
    folder : str or Path
        Folder with ``matrix.mtx(.gz)``, ``barcodes.tsv(.gz)`` and ``features.tsv(.gz)``
        (or ``genes.tsv(.gz)``).
    counts : bool
        Refuse non-integer or negative values (default).

    Returns
    -------
    SparseCounts
        Rows labelled by barcode, columns by gene ID; ``col_coords["gene_symbol"]`` when the
        features file has a second column.
    """
    folder = Path(folder)
    mtx = _first(folder, ["matrix.mtx"])
    if mtx is None:
        raise ValueError(f"folder: {folder} holds no matrix.mtx(.gz)")
    bar = _first(folder, ["barcodes.tsv"])
    feat = _first(folder, ["features.tsv", "genes.tsv"])
    if bar is None or feat is None:
        raise ValueError(f"folder: {folder} needs barcodes.tsv(.gz) and features.tsv(.gz) "
                         "(or genes.tsv) beside matrix.mtx")
    try:
        M = scipy.io.mmread(mtx, spmatrix=False)
    except (ValueError, OSError) as err:
        raise ValueError(f"cannot read {mtx} as a MatrixMarket file: {err}") from None
    if not sp.issparse(M):
        M = sp.coo_matrix(M)
    X = sp.csr_array(M.T.tocsr(), dtype=np.float64)
    X.sum_duplicates()
    barcodes = _unique(_tsv_column(bar, 0), f"{bar.name}")
    genes = _unique(_tsv_column(feat, 0), f"{feat.name}")
    if X.shape != (barcodes.size, genes.size):
        raise ValueError(f"{mtx.name} is {M.shape[0]} genes x {M.shape[1]} cells but "
                         f"{feat.name} lists {genes.size} genes and {bar.name} "
                         f"{barcodes.size} barcodes")
    if counts:
        _check_counts(X.data, f"{mtx}")
    col_coords = {"gene_symbol": _tsv_column(feat, 1)}
    return SparseCounts(X, barcodes, genes, {}, col_coords, {"source": str(folder)})


def write_10x_mtx(data, folder):
    """Write cells x genes sparse counts as a 10x folder (gzipped files).

    Parameters
    ----------
    data : SparseCounts
    folder : str or Path
        Created if missing.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "matrix.mtx.gz", "wb") as fh:
        scipy.io.mmwrite(fh, sp.coo_matrix(data.X.T), field="integer")
    symbols = data.col_coords.get("gene_symbol", data.col_labels)
    with gzip.open(folder / "features.tsv.gz", "wt") as fh:
        for g, s in zip(data.col_labels, symbols):
            fh.write(f"{g}\t{s}\tGene Expression\n")
    with gzip.open(folder / "barcodes.tsv.gz", "wt") as fh:
        for b in data.row_labels:
            fh.write(f"{b}\n")


def anndata_counts(adata, *, integral=True, name="X"):
    """``(csr, obs_names, var_names)`` of an AnnData's ``X`` (kept sparse).

    Parameters
    ----------
    adata : anndata.AnnData
    integral : bool
        Refuse non-integer or negative values (count models).
    name : str
        Argument name used in error messages.
    """
    X = adata.X
    if X is None:
        raise ValueError(f"{name}: the AnnData has no X")
    if hasattr(X, "to_memory"):  # backed sparse dataset
        X = X.to_memory()
    X = sp.csr_array(X, dtype=np.float64) if sp.issparse(X) else sp.csr_array(
        np.asarray(X, dtype=np.float64))
    X.sum_duplicates()
    if integral:
        _check_counts(X.data, f"{name}: the AnnData's X")
    return (X, _unique(adata.obs_names, f"{name}: obs_names"),
            _unique(adata.var_names, f"{name}: var_names"))


def read_h5ad(path, *, counts=True):
    """Read an AnnData ``.h5ad`` file as cells x genes sparse counts.

    Parameters
    ----------
    path : str or Path
    counts : bool
        Refuse non-integer or negative values in ``X`` (default).

    Returns
    -------
    SparseCounts
        Rows labelled by ``obs_names``, columns by ``var_names``.
    """
    import anndata

    try:
        adata = anndata.read_h5ad(path)
    except (OSError, KeyError, ValueError) as err:
        raise ValueError(f"cannot read {path} as an .h5ad file: {err}") from None
    X, rows, cols = anndata_counts(adata, integral=counts, name=str(path))
    return SparseCounts(X, rows, cols, {}, {}, {"source": str(path)})


def as_sparse_counts(X, *, integral=True, name="X"):
    """An AnnData or :class:`SparseCounts` as ``(csr, row labels, col labels)``, else None."""
    if type(X).__name__ == "AnnData":
        return anndata_counts(X, integral=integral, name=name)
    if isinstance(X, SparseCounts):
        return sp.csr_array(X.X), np.asarray(X.row_labels), np.asarray(X.col_labels)
    return None


def h5ad_layout(path):
    """``(shape, encoding)`` of an ``.h5ad`` file's ``X`` without reading it."""
    import h5py

    with h5py.File(path, "r") as f:
        if "X" not in f:
            raise ValueError(f"{path} has no X")
        node = f["X"]
        if isinstance(node, h5py.Dataset):
            return tuple(int(s) for s in node.shape), "dense"
        enc = node.attrs.get("encoding-type", "")
        enc = enc.decode() if isinstance(enc, bytes) else str(enc)
        shape = tuple(int(s) for s in node.attrs["shape"])
        return shape, enc


def h5ad_rows(path, row0, row1):
    """Rows ``row0:row1`` of an ``.h5ad`` file's ``X`` as ``(indptr, indices, data)`` (CSR).

    Reads only those rows (CSR or dense ``X``); a CSC ``X`` is refused (its rows are spread
    over the whole file).
    """
    import h5py

    with h5py.File(path, "r") as f:
        node = f["X"]
        if isinstance(node, h5py.Dataset):
            dense = np.asarray(node[row0:row1], dtype=np.float64)
            csr = sp.csr_matrix(dense)
            return csr.indptr.astype(np.int64), csr.indices.astype(np.int32), csr.data
        enc = node.attrs.get("encoding-type", "")
        enc = enc.decode() if isinstance(enc, bytes) else str(enc)
        if enc != "csr_matrix":
            raise ValueError(f"{path}: X is stored as {enc or 'unknown'}; reading it by row "
                             "blocks needs CSR (adata.X = scipy.sparse.csr_matrix(adata.X))")
        indptr = np.asarray(node["indptr"][row0:row1 + 1], dtype=np.int64)
        lo, hi = int(indptr[0]), int(indptr[-1])
        return (indptr - lo, np.asarray(node["indices"][lo:hi], dtype=np.int32),
                np.asarray(node["data"][lo:hi], dtype=np.float64))


def h5ad_nnz_per_row(path):
    """Stored entries of each row of a CSR ``X`` (reads ``indptr`` only)."""
    import h5py

    with h5py.File(path, "r") as f:
        node = f["X"]
        if isinstance(node, h5py.Dataset):
            return np.full(node.shape[0], node.shape[1], dtype=np.int64)
        return np.diff(np.asarray(node["indptr"], dtype=np.int64))
