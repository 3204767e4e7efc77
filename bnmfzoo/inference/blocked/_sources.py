"""Block sources read from matrix files, and column blocks through the transpose.

:class:`FileSource` cuts a matrix file (:func:`bnmfzoo.datasets.matrixfiles.open_matrix`:
``.h5ad``, Zarr, HDF5, 10x folders) into row blocks that each worker reads from the file
itself, so no process holds the whole matrix; only the per-row entry counts (``D`` integers)
are read on the driver to size the blocks.

Column blocks. NMF is symmetric under transposition, ``X^T = W^T A^T``, and so are the blocked
families' posteriors once the priors of ``A`` and ``W`` are swapped: the Poisson family's
``Gamma(a, b)`` is the same for both, the exponential-Gaussian family's rates ``lambda_A`` and
``lambda_W`` trade places, and the noise precision is untouched. A matrix with more columns
than rows (genes x cells, documents as columns) is therefore blocked along its columns by
fitting ``X^T`` in row blocks and swapping the factors back (:func:`swap_axes`), labels
included.
"""

import os

import numpy as np
import scipy.sparse as sp

from bnmfzoo.inference.blocked._blocks import Block, boundaries, default_block_rows

AXES = ("auto", "rows", "cols")


class FileSource:
    """Row blocks of a matrix file, each read by the worker that holds it.

    Parameters
    ----------
    matrix : MatrixFile, str or Path
        The file (:func:`~bnmfzoo.datasets.matrixfiles.open_matrix`); it must be reachable at
        the same path from every worker.
    block_rows : int, optional
        Rows per block (default: about 4 M stored entries per block, from the exact per-row
        counts, as for an in-memory matrix).
    counts : bool
        Count model (zeros of a dense file are not stored; negative, non-integer and
        non-finite values refused); otherwise Gaussian (NaN in a dense file is missing).

    Examples
    --------
    >>> import tempfile, pathlib, h5py, numpy as np
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.h5"
    >>> with h5py.File(p, "w") as f:
    ...     _ = f.create_dataset("X", data=np.ones((6, 3)), chunks=(2, 3))
    >>> src = FileSource(p, block_rows=4)
    >>> src.n_blocks, src.load(1).n_rows
    (2, 2)
    """

    in_memory = False

    def __init__(self, matrix, block_rows=None, *, counts=True):
        from bnmfzoo.datasets.matrixfiles import MatrixFile, open_matrix

        self.matrix = matrix if isinstance(matrix, MatrixFile) else open_matrix(matrix)
        self.counts = bool(counts)
        self.matrix.sample(counts=self.counts)  # normalized data refused before any block
        self.shape = tuple(self.matrix.shape)
        if min(self.shape) < 1:
            raise ValueError(f"X has shape {self.shape}: it needs at least one row and one "
                             "column")
        per_row = self.matrix.nnz_per_row(counts=self.counts)
        self.nnz = int(per_row.sum())
        self.block_rows = block_rows or default_block_rows(self.shape[0], self.nnz)
        self.bounds = boundaries(self.shape[0], self.block_rows)
        starts = np.concatenate([[0], np.cumsum(per_row)])[self.bounds]
        self._bytes = [int(hi - lo) * 12 + 8 * int(b - a + 1) for lo, hi, a, b in
                       zip(starts[:-1], starts[1:], self.bounds[:-1], self.bounds[1:])]
        if self.matrix.layout == "dense":  # the dense piece read before it is made sparse
            self._bytes = [nb + 8 * int(b - a) * self.shape[1] for nb, a, b in
                           zip(self._bytes, self.bounds[:-1], self.bounds[1:])]
        self.row_labels, self.col_labels = self.matrix.row_labels, self.matrix.col_labels

    def __repr__(self):
        return f"FileSource({self.matrix!r}, n_blocks={self.n_blocks})"

    def __getstate__(self):
        """Pickled without the labels: a worker reads numbers only (an atlas has 10^6)."""
        import copy

        state = dict(self.__dict__)
        state["matrix"] = copy.copy(self.matrix)
        state["matrix"].row_labels = state["matrix"].col_labels = None
        state["row_labels"] = state["col_labels"] = None
        return state

    @property
    def n_blocks(self):
        return self.bounds.size - 1

    @property
    def T(self):
        """The transposed file's row blocks (``block_rows`` then counts columns)."""
        return FileSource(self.matrix.T, None, counts=self.counts)

    def load(self, b):
        """Read block ``b`` from the file."""
        r0, r1 = int(self.bounds[b]), int(self.bounds[b + 1])
        try:
            csr = self.matrix.rows(r0, r1, counts=self.counts)
        except (ValueError, TypeError) as err:
            raise type(err)(f"X: block {b}: {err}") from None
        return Block(b, r0, csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                     np.asarray(csr.data, dtype=np.float64), self.shape[1])

    def block_nbytes(self, b):
        """Bytes block ``b`` takes while it is read (stored entries, plus a dense piece)."""
        return self._bytes[b]

    def whole_matrix_bytes(self):
        """Bytes of the whole matrix in the blocks' CSR form."""
        return int(self.nnz * 12 + 8 * (self.shape[0] + 1))


def as_file_source(X, model, block_rows):
    """A :class:`FileSource` for a path or a ``MatrixFile`` (None for anything else)."""
    from bnmfzoo.datasets.matrixfiles import MatrixFile

    if isinstance(X, FileSource):
        return X
    if isinstance(X, (str, os.PathLike)) or isinstance(X, MatrixFile):
        return FileSource(X, block_rows, counts=model == "poisson")
    return None


def _shape(X):
    if isinstance(X, (str, os.PathLike)):
        from bnmfzoo.datasets.matrixfiles import open_matrix

        return open_matrix(X).shape
    if hasattr(X, "load") and hasattr(X, "n_blocks"):
        return None
    X = getattr(X, "X", X) if type(X).__name__ == "SparseCounts" else X
    shape = getattr(X, "shape", None)
    return tuple(shape) if shape is not None and len(shape) == 2 else None


def column_view(X, axis, model):
    """``(data to fit in row blocks, whether they are X's columns)`` for ``axis``.

    ``axis="auto"`` blocks the columns when there are more columns than rows and the input
    can be transposed (arrays, sparse matrices, AnnData, labelled counts, matrix files and
    :class:`FileSource`; a synthetic source keeps its rows).
    """
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    if axis == "rows":
        return X, False
    if isinstance(X, (str, os.PathLike)):  # opened once (its labels read once)
        from bnmfzoo.datasets.matrixfiles import open_matrix

        X = open_matrix(X)
    shape = _shape(X)
    if isinstance(X, FileSource):
        shape = X.shape
    elif shape is None:
        if axis == "cols":
            raise ValueError(f"axis='cols' needs data that can be transposed; "
                             f"{type(X).__name__} is a block source of rows")
        return X, False
    if axis == "auto" and shape[1] <= shape[0]:
        return X, False
    return _transposed(X, model), True


def _transposed(X, model):
    from bnmfzoo.datasets.counts import SparseCounts
    from bnmfzoo.datasets.matrixfiles import MatrixFile, open_matrix
    from bnmfzoo.datasets.singlecell import as_sparse_counts

    if isinstance(X, FileSource):
        return X.T
    if isinstance(X, (str, os.PathLike)):
        X = open_matrix(X)
    if isinstance(X, MatrixFile):
        return X.T
    labelled = as_sparse_counts(X, integral=model == "poisson")
    if labelled is not None:
        csr, rows, cols = labelled
        return SparseCounts(sp.csr_array(csr.T), cols, rows, {}, {}, {})
    if sp.issparse(X):
        return X.T
    return np.asarray(X, dtype=np.float64).T


def swap_axes(dt):
    """The result of a fit of ``X^T`` as the result for ``X``: factors and labels swapped.

    ``posterior``: the driver's draws become ``A`` (chain, draw, row, factor), ``W`` when the
    block factor's draws were kept, ``tau`` unchanged; the block factor's posterior mean and
    last draw go to the group ``cols`` as ``W_mean`` and ``W_last`` (factor, col).
    """
    from bnmfzoo._base.results import build_datatree

    post, rows = dt.posterior, dt["rows"]
    posterior = {"A": np.swapaxes(post["W"].values, 2, 3)}
    if "A" in post:
        posterior["W"] = np.swapaxes(post["A"].values, 2, 3)
    if "tau" in post:
        posterior["tau"] = post["tau"].values
    cols = {"W_mean": (("factor", "col"), rows["A_mean"].values.T),
            "W_last": (("factor", "col"), rows["A_last"].values.T)}
    coords = {"row": post["col"].values, "col": rows["row"].values,
              "factor": post["factor"].values}
    attrs = {**dt.attrs, "blocks": "cols"}
    return build_datatree(posterior, coords=coords, groups={"cols": cols}, attrs=attrs)


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def loss_message(err, where, source, limits, what):
    """One line for a worker lost while it held blocks: which blocks, their bytes, the limit.

    Parameters
    ----------
    err : Exception
        The loss (``err.workers``: the addresses gone, when known).
    where : list of str
        The worker of each block.
    source : block source
        ``block_nbytes(b)`` sizes the blocks.
    limits : dict
        ``memory_limit`` of each worker (0: none).
    what : str
        What was running (``"loading the blocks"``, ``"sweep 12"``).
    """
    gone = list(getattr(err, "workers", None) or sorted(set(where)))
    blocks = [b for b, w in enumerate(where) if w in gone]
    if not blocks:
        return f"{what}: {err}"
    worst = max(blocks, key=source.block_nbytes)
    held = sum(source.block_nbytes(b) for b in blocks)
    limit = max((limits.get(w) or 0) for w in gone)
    shown = ", ".join(str(b) for b in blocks[:8]) + (", ..." if len(blocks) > 8 else "")
    return (f"{what}: worker {', '.join(gone)} was lost holding block(s) {shown} "
            f"({_human(held)} of data; block {worst}: {_human(source.block_nbytes(worst))}) "
            f"with a memory_limit of {_human(limit) if limit else 'none'}: a worker that "
            "outgrows its memory_limit is killed by its nanny; use more workers or a higher "
            "memory_limit (or smaller blocks: block_rows); nothing was written")
