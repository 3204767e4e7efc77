"""Latent-count Gibbs for Poisson NMF (Cemgil 2009): numba kernels, no PyMC.

Model: ``X_dn ~ Poisson(o_dn sum_k A_dk W_kn)`` on the observed cells, ``A_dk ~ Gamma(a, b)``,
``W_kn ~ Gamma(a, b)`` (shape, rate; rates may be Gamma variables themselves). Each count is
split over the factors, ``Z_dn. | X_dn ~ Multinomial(X_dn, p_k ∝ A_dk W_kn)``, and then

* ``A_dk | Z, W ~ Gamma(a_dk + sum_n Z_dnk, b_dk + sum_{n obs in row d} o_dn W_kn)``
* ``W_kn | Z, A ~ Gamma(a_kn + sum_d Z_dnk, b_kn + sum_{d obs in col n} o_dn A_dk)``.

Only nonzero counts are split; zeros enter through the exposures ``sum o W`` and ``sum o A``,
which cost O((D + N) K) when the offsets are separable (``o_dn = s_d c_n``) and every cell is
observed (minus a correction over the missing cells), else O(observed K)
(:class:`Exposure`). Memory O(nonzeros + (D + N) K).

The split (:func:`split_counts`) runs over the nonzeros in a tiled order (blocks of
:data:`TILE_COLUMNS` columns; inside a block, nonzeros of equal count together, so the loop
over a count's units has a predictable length; :attr:`CountMatrix.tiled`) and scatters the
column counts into an N x K table that stays in cache for the block (no atomics: one thread).
Random numbers come from a xoshiro256+ generator inside numba, its state held in registers
during the split, seeded from the chain's ``numpy.random.Generator``, one per count;
the category is found without branches (the number of cumulative sums below the uniform: a
data-dependent search loop mispredicts about once per draw, and recycling one uniform for
several draws costs a division chain; both measured slower, 113 against ~40 ns per
nonzero).
Counts above :data:`BIG_COUNT` are split by sequential binomials
(numba's exact binomial sampler, seeded per sweep from the chain's generator).

Replica exchange does not temper this sweep: its replicas run it on a fraction of the data
(:mod:`bnmfzoo.inference.counts._tempering`).

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
"""

import math
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

__all__ = ["CountMatrix", "Exposure", "split_counts", "exposures", "gamma_update",
           "poisson_loglik", "seed_state", "BIG_COUNT", "sweep"]

#: counts above this are split by sequential binomials instead of count by count
BIG_COUNT = 32
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
        :data:`BIG_COUNT` as one group) come together, so the split's loop over the units of
        a count has a predictable length (measured about 15% faster on the same matrix,
        ``benchmarks/speed/counts_gibbs.py``). Memory: 12 bytes per nonzero.
        """
        rows = self.rows()
        cols = self.cols.astype(np.int64)
        size = np.minimum(self.counts, BIG_COUNT + 1)
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


# ----------------------------------------------------------------------------- random numbers

@numba.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, inline="always")
def _next_uniform(s):
    """xoshiro256+ step on a state array (updated in place); a float64 uniform on [0, 1)."""
    result, s[0], s[1], s[2], s[3] = _xoshiro_step(s[0], s[1], s[2], s[3])
    return _to_unit(result)


@numba.njit(cache=True, inline="always")
def _to_unit(result):
    """The top 53 bits of a xoshiro output as a float64 on [0, 1).

    Converted through int64 (exact below 2**53): the unsigned conversion costs a branch
    sequence on x86-64 without AVX-512.
    """
    return np.float64(np.int64(result >> np.uint64(11))) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, inline="always")
def _xoshiro_step(s0, s1, s2, s3):
    """One xoshiro256+ step on a state held in four scalars: ``(output, s0, s1, s2, s3)``.

    :func:`_next_uniform` wraps it for a state array; the split keeps the scalars in
    registers over its loop.
    """
    result = s0 + s3
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


def seed_state(rng):
    """A fresh xoshiro256+ state (4 uint64, not all zero) drawn from a numpy Generator.

    Every word takes all 64 bits: the generator's first output is ``s0 + s3``, which is uniform
    only when both words are; words below 2**63 made the first uniform of every fresh state
    the mean of two uniforms (triangular), which biased the first unit of each split.
    """
    while True:
        s = rng.integers(0, 2**64, size=4, dtype=np.uint64)
        if s.any():
            return s


# ----------------------------------------------------------------------------- the split

@numba.njit(cache=True)
def _split_kernel(rows, cols, counts, A, Wt, state, np_seed, ZA, ZWt):
    """Seed numba's generator (the binomials of big counts), then :func:`split_into`."""
    np.random.seed(np_seed)
    return split_into(rows, cols, counts, A, Wt, state, ZA, ZWt)


@numba.njit(cache=True)
def split_into(rows, cols, counts, A, Wt, state, ZA, ZWt):
    """Multinomial split of every nonzero count; fills ZA (D, K) and ZWt (N, K). Returns code.

    ``rows, cols, counts`` in tiled order (:attr:`CountMatrix.tiled`). Codes: 0 ok, 1 a
    nonzero count whose means are all 0 or non-finite. Counts above :data:`BIG_COUNT` use
    numba's binomial sampler (its generator is seeded by the caller). The xoshiro state is
    held in scalars during the loop and written back to ``state`` at the end.
    """
    D, K = A.shape
    ZA[:] = 0.0
    ZWt[:] = 0.0
    cum = np.empty(K)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    code = 0
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        x = counts[e]
        tot = 0.0
        for k in range(K):
            tot += A[d, k] * Wt[n, k]
            cum[k] = tot
        if not (tot > 0.0 and tot < np.inf):
            code = 1
            break
        if x <= BIG_COUNT:
            for _ in range(x):
                out, s0, s1, s2, s3 = _xoshiro_step(s0, s1, s2, s3)
                v = _to_unit(out) * tot
                k = 0
                for j in range(K - 1):  # branchless: how many cumulative sums are <= v
                    k += v >= cum[j]
                ZA[d, k] += 1.0
                ZWt[n, k] += 1.0
        else:
            left = x
            rest = tot
            for k in range(K):
                if left == 0:
                    break
                p = A[d, k] * Wt[n, k]
                if k == K - 1 or rest <= p:
                    z = left
                else:
                    z = np.random.binomial(left, min(p / rest, 1.0))
                ZA[d, k] += z
                ZWt[n, k] += z
                left -= z
                rest -= p
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return code


def split_counts(data, A, W, rng, state=None):
    """Split the nonzero counts multinomially: ``(ZA (D, K), ZW (K, N))`` count tables.

    Parameters
    ----------
    data : CountMatrix
    A : numpy.ndarray, shape (D, K)
    W : numpy.ndarray, shape (K, N)
    rng : numpy.random.Generator
        Seeds the kernel's generators (one draw per call).
    state : numpy.ndarray of uint64, optional
        A xoshiro256+ state to continue (updated in place); drawn from ``rng`` when None.

    Examples
    --------
    >>> import numpy as np
    >>> m = CountMatrix.from_entries([0, 1], [1, 0], [5, 2], (2, 2))
    >>> ZA, ZW = split_counts(m, np.ones((2, 3)), np.ones((3, 2)), np.random.default_rng(0))
    >>> ZA.sum(axis=1).tolist(), ZW.sum(axis=0).tolist()
    ([5.0, 2.0], [2.0, 5.0])
    """
    D, N = data.shape
    K = A.shape[1]
    if state is None:
        state = seed_state(rng)
    ZA = np.empty((D, K))
    ZWt = np.empty((N, K))
    rows, cols, counts = data.tiled
    code = _split_kernel(rows, cols, counts, np.ascontiguousarray(A, float),
                         np.ascontiguousarray(W.T, float), state,
                         int(rng.integers(0, 2**31 - 1)), ZA, ZWt)
    if code:
        raise FloatingPointError("a nonzero count has a zero or non-finite mean A @ W: the "
                                 "factors are degenerate (all zero, inf or NaN)")
    return ZA, np.ascontiguousarray(ZWt.T)


# ----------------------------------------------------------------------------- exposures

@numba.njit(cache=True)
def _entry_exposure_A(rows, cols, offsets, W, out):
    # out[d, k] = sum_{e in row d} o_e W[k, n_e]
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
    _entry_exposure_A(rows, cols, expo.offsets, W, out)
    return out


# ----------------------------------------------------------------------------- conjugate draws

def gamma_update(rng, shape_prior, rate_prior, Z, E):
    """Draws of ``Gamma(shape_prior + Z, rate_prior + E)`` (elementwise, shape-rate)."""
    shape = shape_prior + Z
    rate = rate_prior + E
    out = rng.gamma(shape, 1.0 / rate)
    # a Gamma draw with a small shape can underflow to 0, which would make a count impossible
    np.maximum(out, np.finfo(float).tiny, out=out)
    return out


@numba.njit(cache=True)
def _nz_loglik(indptr, cols, counts, A, Wt, offsets_nz):
    D, K = A.shape
    out = 0.0
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            n = cols[e]
            m = 0.0
            for k in range(K):
                m += A[d, k] * Wt[n, k]
            out += counts[e] * np.log(m * offsets_nz[e])
    return out


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
    nz = _nz_loglik(data.indptr, data.cols, data.counts, np.ascontiguousarray(A, float),
                    np.ascontiguousarray(W.T, float), offsets_nz)
    return float(nz - data.log_factorial_sum - np.sum(A * E))


# ----------------------------------------------------------------------------- one sweep

def sweep(data, expo, A, W, prior, rng, *, rates=None):
    """One Gibbs sweep: split, ``A | Z, W``, ``W | Z, A`` (and Gamma rates). Returns new A, W.

    Parameters
    ----------
    data : CountMatrix
    expo : Exposure
    A, W : numpy.ndarray
        Current factors (D x K, K x N).
    prior : dict
        ``"aA", "bA"`` (D x K) and ``"aW", "bW"`` (K x N): Gamma shapes and rates, the rates
        already evaluated at the current rate variables.
    rng : numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> m = CountMatrix.from_entries([0, 1], [1, 0], [5, 2], (2, 2))
    >>> pr = {"aA": np.ones((2, 2)), "bA": np.ones((2, 2)), "aW": np.ones((2, 2)),
    ...       "bW": np.ones((2, 2))}
    >>> A, W = sweep(m, Exposure.full(2, 2), np.ones((2, 2)), np.ones((2, 2)), pr,
    ...              np.random.default_rng(0))
    >>> A.shape, W.shape
    ((2, 2), (2, 2))
    """
    ZA, ZW = split_counts(data, A, W, rng)
    A = gamma_update(rng, prior["aA"], prior["bA"], ZA, exposures(expo, W))
    W = gamma_update(rng, prior["aW"], prior["bW"], ZW, exposures(expo, A.T, transpose=True).T)
    return A, W
