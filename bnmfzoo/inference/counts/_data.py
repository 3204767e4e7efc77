"""Count data as the samplers see it, and the likelihoods of the three count families (no PyMC).

:class:`CountMatrix` holds the nonzero counts (CSR order, and the tiled order the split walks),
:class:`Exposure` which cells are observed and their offsets ``o_dn``. Zeros never enter a
loop: they enter the Gamma rates only through the exposures ``sum_n o_dn W_kn`` and
``sum_d o_dn A_dk`` (:func:`exposures`; the compiled sweep's :func:`exposure_into`), which cost
O((D + N) K) when the offsets are separable (``o_dn = s_d c_n``) and every cell is observed
(minus a correction over the missing cells), else O(observed K). Memory O(nonzeros + (D + N) K).

Likelihoods: Poisson (:func:`poisson_loglik`), the negative binomial with shape
``alpha o (A W)_dn`` (:func:`nb_loglik`, Zhou & Carin 2015) and NB2, PyMC's
``NegativeBinomial(mu, alpha)`` (:func:`nb2_cell_loglik`; Cameron & Trivedi 1986).

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
Cameron, A. C. & Trivedi, P. K. (1986). Econometric models based on count data. Journal of
Applied Econometrics 1(1), 29-53.
"""

import math
import weakref
from dataclasses import dataclass, replace
from functools import cached_property

import numba
import numpy as np
from scipy.special import gammaln

from bnmfzoo._terms._pairs import _product
from bnmfzoo.inference.kernels.countvb import nonzero_means_into as _nz_means

__all__ = ["CountMatrix", "Exposure", "scaled_exposure", "exposures", "exposure_into",
           "entry_exposure", "nonzero_offsets", "nonzero_means", "total_mean", "poisson_loglik",
           "nb_loglik", "nb2_cell_loglik", "cell_means", "big_count", "MAX_BIG_COUNT",
           "TILE_COLUMNS"]



#: a count above ``BIG_COUNT_PER_COMPONENT * K`` (at most :data:`MAX_BIG_COUNT`) is split by
#: K - 1 sequential binomials instead of count by count: a unit costs one uniform and K - 1
#: comparisons, a binomial (numba's sampler) grows dearer with K too: the split of ESCC SBS96
#: counts (median 72) is 0.99, 1.13, 1.35 and 1.63 times as fast as at the former fixed 32 at
#: K = 3, 4, 6 and 10 (``python -m benchmarks.speed.split_threshold``; ``counts_core_2.md``)
BIG_COUNT_PER_COMPONENT = 20
#: the largest count ever split count by count (the tiled order groups counts up to it)
MAX_BIG_COUNT = 256


@numba.njit(cache=True)
def big_count(K):
    """The largest count split count by count at rank ``K`` (:data:`BIG_COUNT_PER_COMPONENT`).

    Examples
    --------
    >>> big_count(3), big_count(6), big_count(40)
    (60, 120, 256)
    """
    return min(MAX_BIG_COUNT, BIG_COUNT_PER_COMPONENT * K)


#: columns per block of the split's tiled order (:attr:`CountMatrix.tiled`)
TILE_COLUMNS = 2048


@dataclass(frozen=True, eq=False)
class CountMatrix:
    """Nonzero counts in CSR order (rows outer, columns increasing).

    Attributes
    ----------
    shape : tuple of int
    indptr : numpy.ndarray of int64, shape (D + 1,)
    cols : numpy.ndarray of int32
    counts : numpy.ndarray of int32
    """

    shape: tuple
    indptr: np.ndarray
    cols: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_entries(cls, rows, cols, values, shape):
        """Build from COO triples (zeros dropped, duplicates refused upstream).

        Examples
        --------
        >>> m = CountMatrix.from_entries([1, 0, 0], [0, 2, 1], [3.0, 1.0, 0.0], (2, 3))
        >>> m.indptr.tolist(), m.cols.tolist(), m.counts.tolist()
        ([0, 1, 2], [2, 0], [1, 3])
        """
        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        values = np.asarray(values, dtype=float)
        keep = values != 0
        rows, cols, values = rows[keep], cols[keep], values[keep]
        D, N = int(shape[0]), int(shape[1])
        order = np.lexsort((cols, rows))
        indptr = np.zeros(D + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=D), out=indptr[1:])
        return cls((D, N), indptr, cols[order].astype(np.int32),
                   np.rint(values[order]).astype(np.int32))

    @cached_property
    def log_factorial_sum(self):
        """``sum log(x!)`` over the counts: the likelihood's constant, computed once."""
        return float(_log_factorial_sum(self.counts))

    @property
    def nnz(self):
        """Number of nonzero counts."""
        return int(self.counts.size)

    def rows(self):
        """Row index of each nonzero (int64)."""
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    @cached_property
    def tiled(self):
        """``(rows, cols, counts)`` (int32) sorted by (column block, count, row, column).

        The split walks this order: the columns' tables (``W`` and the column counts, 2 K
        floats per column) of one block of :data:`TILE_COLUMNS` columns stay in cache while
        every nonzero in the block is split (measured 1.3-1.5x faster than CSR order on
        3,774 x 16,791, K = 6). Inside a block, nonzeros with equal counts (counts above
        :data:`MAX_BIG_COUNT` as one group) come together, so the split's loop over the units of
        a count has a predictable length (measured about 15% faster on the same matrix,
        ``benchmarks/speed/counts_gibbs.py``). Memory: 12 bytes per nonzero.
        """
        rows = self.rows()
        cols = self.cols.astype(np.int64)
        size = np.minimum(self.counts, MAX_BIG_COUNT + 1)
        order = np.lexsort((cols, rows, size, cols // TILE_COLUMNS))
        return (rows[order].astype(np.int32), self.cols[order].copy(),
                self.counts[order].copy())


@dataclass(frozen=True, eq=False)
class Exposure:
    """Which cells are observed, with their offsets ``o_dn``: what the Gamma rates sum over.

    ``kind="separable"``: ``o_dn = row_offset[d] * col_offset[n]`` and every cell is observed
    except the listed ``rows, cols`` (the missing ones). ``kind="entries"``: the listed
    ``rows, cols`` are the observed cells and ``offsets`` their ``o_dn``.
    """

    kind: str
    row_offset: np.ndarray
    col_offset: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    offsets: np.ndarray | None = None

    @classmethod
    def full(cls, D, N, row_offset=None, col_offset=None):
        """Every cell observed, separable offsets (ones by default)."""
        empty = np.array([], dtype=np.int64)
        s = np.ones(D) if row_offset is None else np.asarray(row_offset, float)
        c = np.ones(N) if col_offset is None else np.asarray(col_offset, float)
        return cls("separable", s, c, empty, empty)


def scaled_exposure(expo, beta):
    """``expo`` with every offset multiplied by ``beta`` (a tempered rung's exposures)."""
    if expo.kind == "separable":
        return replace(expo, row_offset=beta * expo.row_offset)
    return replace(expo, offsets=beta * expo.offsets)


# ----------------------------------------------------------------------------- exposures


@numba.njit(cache=True)
def entry_exposure(rows, cols, offsets, W, out):
    """``out[d, k] = sum_{e in row d} o_e W[k, n_e]`` over the listed entries ``(d, n_e)``."""
    out[:] = 0.0
    K = W.shape[0]
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        o = offsets[e]
        for k in range(K):
            out[d, k] += o * W[k, n]


@numba.njit(cache=True)
def _missing_correction(rows, cols, s, c, W, out):
    # out[d, k] -= s_d c_n W[k, n] over the missing cells
    K = W.shape[0]
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        o = s[d] * c[n]
        for k in range(K):
            out[d, k] -= o * W[k, n]


def exposures(expo, W, *, transpose=False):
    """``E[d, k] = sum_{n observed in row d} o_dn W[k, n]`` (the Gamma rate increment of A).

    With ``transpose=True`` the roles swap: ``W`` is then ``A.T`` (K x D) and the result is
    ``E[n, k] = sum_{d observed in column n} o_dn A[d, k]`` (N x K).

    Examples
    --------
    >>> import numpy as np
    >>> e = Exposure.full(2, 3, row_offset=[1.0, 2.0])
    >>> exposures(e, np.ones((1, 3))).tolist()
    [[3.0], [6.0]]
    """
    W = np.ascontiguousarray(W, dtype=float)
    if not transpose:
        s, c, rows, cols = expo.row_offset, expo.col_offset, expo.rows, expo.cols
    else:
        s, c, rows, cols = expo.col_offset, expo.row_offset, expo.cols, expo.rows
    D = s.size
    if expo.kind == "separable":
        base = s[:, None] * (W @ c)[None, :]
        if rows.size:
            _missing_correction(rows, cols, s, c, W, base)
            np.maximum(base, 0.0, out=base)  # round-off of the subtraction
        return base
    out = np.empty((D, W.shape[0]))
    entry_exposure(rows, cols, expo.offsets, W, out)
    return out


@numba.njit(cache=True)
def exposure_into(F, s_self, c_other, miss_self, miss_other, separable, e_self, e_other,
                  e_offs, out):
    """``out[i, k] = sum_{j observed with i} o_ij F[j, k]`` (F: the other factor, rows = j)."""
    M, K = out.shape
    L = F.shape[0]
    if separable:
        for k in range(K):
            t = 0.0
            for j in range(L):
                t += c_other[j] * F[j, k]
            for i in range(M):
                out[i, k] = s_self[i] * t
        if miss_self.size:
            for e in range(miss_self.size):
                i = miss_self[e]
                j = miss_other[e]
                o = s_self[i] * c_other[j]
                for k in range(K):
                    out[i, k] -= o * F[j, k]
            for i in range(M):
                for k in range(K):
                    out[i, k] = max(out[i, k], 0.0)  # round-off of the subtraction
    else:
        out[:] = 0.0
        for e in range(e_self.size):
            i = e_self[e]
            j = e_other[e]
            for k in range(K):
                out[i, k] += e_offs[e] * F[j, k]


# ----------------------------------------------------------------------------- likelihoods


@numba.njit(cache=True)
def _nz_log_means(rows, cols, counts, A, Wt):
    """``sum_e x_e log((A Wt^T)_{rows_e, cols_e})`` over the listed nonzeros (any order).

    Walked in the tiled order of :attr:`CountMatrix.tiled` (the columns' rows of ``Wt`` stay
    in cache), the counts of 1 are folded into one running product whose binary exponent is
    moved out by ``frexp`` before it can leave [1e-150, 1e150]: one ``log`` per count above 1
    instead of one per nonzero (20 against 37 ms on 3,774 x 16,791 with 2.7 M nonzeros, K = 6;
    ``docs/results/counts_core.md``). A zero mean gives -inf, a NaN NaN.
    """
    K = A.shape[1]
    p = 1.0
    ex = 0
    out = 0.0
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        m = 0.0
        for k in range(K):
            m += A[d, k] * Wt[n, k]
        x = counts[e]
        if x == 1:
            p *= m
            if not (p > 1e-150 and p < 1e150):
                f, k2 = math.frexp(p)
                p = f
                ex += k2
        else:
            out += x * math.log(m)
    return out + (math.log(p) + ex * math.log(2.0))


#: per count matrix: (the offsets array last seen, sum_e x_e log o_e)
_LOG_OFFSETS = weakref.WeakKeyDictionary()


def _log_offset_sum(data, offsets_nz):
    """``sum_e x_e log o_e`` (CSR order), cached per matrix for the same offsets array."""
    got = _LOG_OFFSETS.get(data)
    if got is not None and got[0] is offsets_nz:
        return got[1]
    val = float(np.dot(data.counts, np.log(offsets_nz)))
    _LOG_OFFSETS[data] = (offsets_nz, val)
    return val


@numba.njit(cache=True)
def _log_factorial_sum(counts):
    out = 0.0
    for x in counts:
        out += math.lgamma(x + 1.0)
    return out


def nonzero_offsets(data, expo):
    """The offset ``o_dn`` of every nonzero count (CSR order)."""
    rows = data.rows()
    if expo.kind == "separable":
        return expo.row_offset[rows] * expo.col_offset[data.cols]
    key = expo.rows * np.int64(data.shape[1]) + expo.cols
    order = np.argsort(key)
    pos = order[np.searchsorted(key[order], rows * np.int64(data.shape[1]) + data.cols)]
    return expo.offsets[pos]


def poisson_loglik(data, expo, A, W, offsets_nz=None):
    """Poisson log-likelihood of the observed cells, O(nonzeros K + (D + N) K).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import poisson
    >>> X = np.array([[0, 2], [1, 0]])
    >>> m = CountMatrix.from_entries(*np.nonzero(X), X[np.nonzero(X)], X.shape)
    >>> A, W = np.full((2, 1), 0.5), np.full((1, 2), 3.0)
    >>> bool(np.isclose(poisson_loglik(m, Exposure.full(2, 2), A, W),
    ...                 poisson.logpmf(X, A @ W).sum()))
    True
    """
    if offsets_nz is None:
        offsets_nz = nonzero_offsets(data, expo)
    E = exposures(expo, W)
    rows, cols, counts = data.tiled
    nz = _nz_log_means(rows, cols, counts, np.ascontiguousarray(A, float),
                       np.ascontiguousarray(W.T, float)) + _log_offset_sum(data, offsets_nz)
    return float(nz - data.log_factorial_sum - np.sum(A * E))


@numba.njit(cache=True)
def _nb_nz_part(counts, mu_nz, alpha):
    out = 0.0
    for e in range(counts.size):
        x = counts[e]
        r = alpha * mu_nz[e]
        out += math.lgamma(x + r) - math.lgamma(r) - math.lgamma(x + 1.0)
    return out


def nonzero_means(data, A, W, offsets_nz):
    """``o_dn (A @ W)_dn`` at every nonzero (CSR order)."""
    out = np.empty(data.nnz)
    _nz_means(data.indptr, data.cols, np.ascontiguousarray(A, float),
              np.ascontiguousarray(W.T, float), offsets_nz, out)
    return out


def nb_loglik(alpha, data, mu_nz, total_mu):
    """NB log-likelihood of the observed cells given the means (``total_mu``: their sum).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import nbinom
    >>> from bnmfzoo.inference.counts._data import CountMatrix
    >>> X = np.array([[0, 2], [1, 0]]); mu = np.array([[0.5, 1.5], [2.0, 1.0]])
    >>> m = CountMatrix.from_entries(*np.nonzero(X), X[np.nonzero(X)], X.shape)
    >>> a = 1.7
    >>> ours = nb_loglik(a, m, mu[np.nonzero(X)], mu.sum())
    >>> bool(np.isclose(ours, nbinom.logpmf(X, a * mu, a / (1 + a)).sum()))
    True
    """
    x = data.counts
    lp = math.log(alpha / (1.0 + alpha))
    lq = math.log(1.0 / (1.0 + alpha))
    return (_nb_nz_part(x, mu_nz, alpha) + float(x.sum()) * lq + alpha * lp * total_mu)


def total_mean(expo, A, W):
    """``sum over observed cells of o_dn (A @ W)_dn``."""
    return float(np.sum(A * exposures(expo, W)))


def nb2_cell_loglik(x, mu, alpha):
    """NB2 log-pmf of counts ``x`` with means ``mu`` and dispersion ``alpha`` (elementwise).

    Examples
    --------
    >>> from scipy.stats import nbinom
    >>> x, mu, a = np.array([0.0, 3.0]), np.array([1.5, 2.0]), 0.8
    >>> bool(np.allclose(nb2_cell_loglik(x, mu, a), nbinom.logpmf(x, a, a / (a + mu))))
    True
    """
    return (gammaln(x + alpha) - gammaln(alpha) - gammaln(x + 1.0)
            + alpha * np.log(alpha / (alpha + mu)) + x * np.log(mu / (alpha + mu)))


def cell_means(A, W, rows, cols, offsets):
    """``offsets * (A @ W)[rows, cols]`` without forming ``A @ W`` (the pair-product kernel)."""
    out = np.empty(rows.size)
    _product(np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(np.asarray(W).T,
                                                                          dtype=float),
             rows, cols, out)
    return out * offsets
