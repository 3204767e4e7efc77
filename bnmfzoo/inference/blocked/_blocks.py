"""Row blocks, their random streams and the sources that load them (no PyMC, no Dask).

A *block* is a fixed range of rows of the data in CSR form. It is the unit of the blocked sweep:
its random stream is derived from ``(random_seed, sweep, block)`` only, so the serial chain
(the blocks in order, in-process) and a chain whose blocks are spread over any number of
workers draw the same numbers. A *source* knows the shape, the block boundaries and how to load
block ``b``; a worker can call ``source.load(b)`` itself, so the whole matrix never has to pass
through one process.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

#: Stream tags: one independent stream per purpose.
TAG_ROWS, TAG_COLS, TAG_TAU, TAG_INIT_ROWS, TAG_INIT_COLS = range(5)
#: Target number of stored entries per block when ``block_rows`` is not given.
TARGET_NNZ = 2**22


def block_seed(random_seed, sweep, block, tag):
    """The 32-bit seed of one (sweep, block, purpose); ``block=-1`` is the driver's stream."""
    ss = np.random.SeedSequence([int(random_seed), int(sweep) + 1, int(block) + 1, int(tag)])
    return int(ss.generate_state(1, np.uint32)[0])


@dataclass(frozen=True, eq=False)
class Block:
    """Rows ``row0 .. row0 + n_rows - 1`` of a D x N matrix, stored entries in CSR form.

    For counts every cell is observed and ``values`` lists the non-zero ones; for Gaussian data
    the stored entries are the observed ones (explicit zeros included).
    """

    index: int
    row0: int
    indptr: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    n_cols: int

    @property
    def n_rows(self):
        return self.indptr.size - 1

    @property
    def nnz(self):
        return int(self.indptr[-1])

    @property
    def full(self):
        """Whether every cell of the block is stored (fully observed Gaussian block)."""
        return self.nnz == self.n_rows * self.n_cols

    @property
    def nbytes(self):
        return self.indptr.nbytes + self.cols.nbytes + self.values.nbytes


def block_from_csr(csr, index, row0, row1, dtype=np.float64):
    """Cut rows ``row0:row1`` of a CSR matrix into a :class:`Block` (copies only that slice)."""
    lo, hi = int(csr.indptr[row0]), int(csr.indptr[row1])
    indptr = (csr.indptr[row0:row1 + 1] - lo).astype(np.int64)
    return Block(index, row0, indptr, np.asarray(csr.indices[lo:hi], dtype=np.int32),
                 np.asarray(csr.data[lo:hi], dtype=dtype), csr.shape[1])


def default_block_rows(D, nnz):
    """Rows per block so a block holds about :data:`TARGET_NNZ` entries (at least 1 row)."""
    return int(max(1, min(D, np.ceil(D * TARGET_NNZ / max(nnz, 1)))))


def boundaries(D, block_rows):
    """Row boundaries ``[0, r, 2r, ..., D]`` of the blocks."""
    return np.append(np.arange(0, D, block_rows), D).astype(np.int64)


class ArraySource:
    """Blocks cut from a ``scipy.sparse`` matrix in this process (scattered to the workers).

    Parameters
    ----------
    csr : scipy.sparse.csr_matrix
        The stored entries (sorted, no duplicates).
    block_rows : int
        Rows per block.
    dtype : numpy dtype
        Storage type of the values in a block.
    """

    in_memory = True

    def __init__(self, csr, block_rows, dtype=np.float64):
        self.csr = sp.csr_matrix(csr)
        self.csr.sort_indices()
        self.shape = self.csr.shape
        self.bounds = boundaries(self.shape[0], block_rows)
        self.dtype = dtype

    @property
    def n_blocks(self):
        return self.bounds.size - 1

    def load(self, b):
        """Block ``b``."""
        return block_from_csr(self.csr, b, int(self.bounds[b]), int(self.bounds[b + 1]),
                              self.dtype)

    def block_nbytes(self, b):
        """Bytes block ``b`` takes once loaded."""
        lo, hi = self.csr.indptr[self.bounds[b]], self.csr.indptr[self.bounds[b + 1]]
        rows = self.bounds[b + 1] - self.bounds[b]
        return int((hi - lo) * (4 + np.dtype(self.dtype).itemsize) + 8 * (rows + 1))


class SyntheticCountSource:
    """UMI-like synthetic counts generated block by block where they are needed.

    ``X_ij ~ Poisson(s_i (A W)_ij)``, ``A`` and ``W`` Gamma(0.3, 1) (sparse, heavy-tailed
    programs), ``s_i`` log-normal library sizes scaled so the matrix holds about ``nnz``
    non-zero entries. Block ``b`` depends on ``(seed, b)`` only, so a worker generates its own
    block and no process ever holds the whole matrix.

    Parameters
    ----------
    n_rows, n_cols : int
        Cells and genes.
    nnz : int
        Target number of non-zero counts.
    rank : int
        Rank of the generating factors.
    block_rows : int
        Rows per block.
    seed : int
        Seed of the generator.
    """

    in_memory = False

    def __init__(self, n_rows, n_cols, nnz, rank, block_rows, seed=0):
        self.shape = (int(n_rows), int(n_cols))
        self.nnz_target = int(nnz)
        self.rank = int(rank)
        self.seed = int(seed)
        self.bounds = boundaries(self.shape[0], block_rows)
        rng = np.random.default_rng([self.seed, 0])
        self.W = rng.gamma(0.3, 1.0, size=(self.rank, self.shape[1]))
        self.W /= self.W.sum(axis=1, keepdims=True)
        # mean row total t gives a non-zero fraction about 1 - E exp(-t m_j); solve for t
        density = self.nnz_target / (self.shape[0] * self.shape[1])
        m = self.W.mean(axis=0) * self.rank
        lo, hi = 1e-6, 1e9
        for _ in range(200):
            t = np.sqrt(lo * hi)
            frac = np.mean(1.0 - np.exp(-t * m / self.rank))
            lo, hi = (t, hi) if frac < density else (lo, t)
        self.total = t

    @property
    def n_blocks(self):
        return self.bounds.size - 1

    def load(self, b):
        """Generate block ``b``."""
        r0, r1 = int(self.bounds[b]), int(self.bounds[b + 1])
        rng = np.random.default_rng([self.seed, 1, b])
        n = r1 - r0
        A = rng.gamma(0.3, 1.0, size=(n, self.rank))
        A /= A.sum(axis=1, keepdims=True)
        A *= (self.total * rng.lognormal(0.0, 0.5, size=n) / np.exp(0.125))[:, None]
        indptr = np.zeros(n + 1, dtype=np.int64)
        cols, vals = [], []
        for start in range(0, n, 64):  # 64 dense rows at a time bound the temporaries
            mu = A[start:start + 64] @ self.W
            X = rng.poisson(mu)
            r, c = np.nonzero(X)
            cols.append(c.astype(np.int32))
            vals.append(X[r, c].astype(np.float32))
            indptr[start + 1:start + 1 + mu.shape[0]] = np.cumsum(
                np.bincount(r, minlength=mu.shape[0])) + indptr[start]
        return Block(b, r0, indptr, np.concatenate(cols), np.concatenate(vals), self.shape[1])

    def block_nbytes(self, b):
        """Expected bytes of block ``b`` once generated."""
        rows = int(self.bounds[b + 1] - self.bounds[b])
        return int(self.nnz_target * rows / self.shape[0] * 8 + 8 * (rows + 1))

    def whole_matrix_bytes(self):
        """Expected bytes of the whole matrix in the same CSR form."""
        return int(self.nnz_target * 8 + 8 * (self.shape[0] + 1))


class SyntheticGaussianSource:
    """Exponential-Gaussian synthetic data with missing entries, generated block by block.

    ``X_ij = (A W)_ij + Normal(0, 0.1^2)`` with ``A, W ~ Exp(1)``, each entry observed with
    probability ``nnz / (n_rows n_cols)``; block ``b`` depends on ``(seed, b)`` only.
    """

    in_memory = False

    def __init__(self, n_rows, n_cols, nnz, rank, block_rows, seed=0):
        self.shape = (int(n_rows), int(n_cols))
        self.nnz_target = int(nnz)
        self.rank = int(rank)
        self.seed = int(seed)
        self.bounds = boundaries(self.shape[0], block_rows)
        self.W = np.random.default_rng([self.seed, 0]).exponential(
            size=(self.rank, self.shape[1]))
        self.fraction = min(1.0, self.nnz_target / (self.shape[0] * self.shape[1]))

    @property
    def n_blocks(self):
        return self.bounds.size - 1

    def load(self, b):
        """Generate block ``b``."""
        r0, r1 = int(self.bounds[b]), int(self.bounds[b + 1])
        rng = np.random.default_rng([self.seed, 1, b])
        A = rng.exponential(size=(r1 - r0, self.rank))
        X = A @ self.W + rng.normal(scale=0.1, size=(r1 - r0, self.shape[1]))
        X[rng.random(X.shape) >= self.fraction] = 0.0
        # a noisy value is never exactly 0.0, so the unobserved cells are the zeros dropped here
        csr = sp.csr_matrix(X)
        return Block(b, r0, csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                     csr.data, self.shape[1])

    def block_nbytes(self, b):
        rows = int(self.bounds[b + 1] - self.bounds[b])
        return int(self.nnz_target * rows / self.shape[0] * 12 + 8 * (rows + 1))

    def whole_matrix_bytes(self):
        return int(self.nnz_target * 12 + 8 * (self.shape[0] + 1))


class H5adSource:
    """Row blocks of an AnnData ``.h5ad`` file, each read by the worker that holds it.

    Only ``X``'s ``indptr`` is read here (to size the blocks); a worker reads its rows of
    ``indices`` and ``data`` itself (:func:`bnmfzoo.datasets.singlecell.h5ad_rows`), so no
    process reads the whole matrix. The file must be reachable at ``path`` from every worker.

    Parameters
    ----------
    path : str
        The ``.h5ad`` file (``X`` stored as CSR, or dense).
    block_rows : int, optional
        Rows per block (default: about :data:`TARGET_NNZ` stored entries per block).
    """

    in_memory = False

    def __init__(self, path, block_rows=None):
        from bnmfzoo.datasets.singlecell import h5ad_layout, h5ad_nnz_per_row

        self.path = str(path)
        self.shape, _ = h5ad_layout(self.path)
        per_row = h5ad_nnz_per_row(self.path)
        self.nnz = int(per_row.sum())
        block_rows = block_rows or default_block_rows(self.shape[0], self.nnz)
        self.bounds = boundaries(self.shape[0], block_rows)
        self._bytes = [int(per_row[a:b].sum()) * 12 + 8 * (b - a + 1)
                       for a, b in zip(self.bounds[:-1], self.bounds[1:])]

    @property
    def n_blocks(self):
        return self.bounds.size - 1

    def load(self, b):
        """Read block ``b`` from the file."""
        from bnmfzoo.datasets.singlecell import h5ad_rows

        r0, r1 = int(self.bounds[b]), int(self.bounds[b + 1])
        indptr, cols, vals = h5ad_rows(self.path, r0, r1)
        return Block(b, r0, indptr, cols, vals, self.shape[1])

    def block_nbytes(self, b):
        return self._bytes[b]

    def whole_matrix_bytes(self):
        return int(sum(self._bytes))
