"""Numba kernels of the row-blocked Gibbs sweep (no PyMC, no Dask).

Every kernel that draws starts by seeding numba's own per-thread generator with a seed derived
from ``(random_seed, sweep, block)`` (:func:`bnmfzoo.inference.blocked._blocks.block_seed`), so
its draws depend on the block and the sweep only, never on the worker or thread that runs it.
Each kernel refuses non-finite input with a ``ValueError``.

Poisson NMF (Cemgil 2009): ``X_ij ~ Poisson(sum_k A_ik W_kj)`` with ``A_ik ~ Gamma(a, b)`` and
``W_kj ~ Gamma(a, b)``; the counts are split into latent ``Z_ijk`` (multinomial given ``A, W``),
then ``A_i | Z, W ~ Gamma(a + Z_i.k, b + sum_j W_kj)``, then ``W | Z, A`` likewise.

Exponential-Gaussian NMF (Schmidt et al. 2009): ``X_ij ~ Normal(A_i . W_j, 1/tau)`` on the
observed entries, ``A_ik ~ Exp(lambda_A)``, ``W_kj ~ Exp(lambda_W)``, ``tau ~ Gamma(alpha,
beta)``; each factor entry is drawn from its truncated-normal conditional.
"""

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


@numba.njit(cache=True, inline="always")
def _truncnorm_pos(mu, sd):
    """One draw of Normal(mu, sd^2) truncated to [0, inf), exact (Robert 1995)."""
    if not (np.isfinite(mu) and np.isfinite(sd) and sd > 0.0):
        raise ValueError("truncated normal: non-finite mean or scale")
    alpha = -mu / sd
    if alpha < 0.45:
        while True:
            z = np.random.standard_normal()
            if z >= alpha:
                return mu + sd * z
    lam = 0.5 * (alpha + np.sqrt(alpha * alpha + 4.0))
    while True:
        z = alpha - np.log(1.0 - np.random.random()) / lam
        if np.log(1.0 - np.random.random()) <= -0.5 * (z - lam) * (z - lam):
            return mu + sd * z


@numba.njit(cache=True, inline="always")
def _exp_draw(lam):
    return -np.log(1.0 - np.random.random()) / lam


@numba.njit(cache=True)
def _all_finite(x):
    for v in x.ravel():
        if not np.isfinite(v):
            return False
    return True


# ------------------------------------------------------------------------------------------------
# Poisson
# ------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def row_sums(W, out):
    """``out[k] = sum_j W[k, j]``, added in index order.

    NumPy's pairwise, vectorized sums may round differently with the array's alignment, so
    another process could get other bits.
    """
    for k in range(W.shape[0]):
        s = 0.0
        for j in range(W.shape[1]):
            s += W[k, j]
        out[k] = s


@numba.njit(cache=True)
def sum_squares(values):
    """``sum(values ** 2)`` in index order (the same bits in every process)."""
    s = 0.0
    for v in values:
        s += float(v) * float(v)
    return s


@numba.njit(cache=True)
def col_sums(A, out):
    """``out[k] = sum_i A[i, k]``, rows added in index order (the same bits in every process)."""
    if not _all_finite(A):
        raise ValueError("col_sums: non-finite entry")
    out[:] = 0.0
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            out[k] += A[i, k]


@numba.njit(cache=True)
def ordered_sum(x):
    """``sum(x)`` over a C-contiguous array in index order; refuses a non-finite entry."""
    s = 0.0
    for v in x.ravel():
        if not np.isfinite(v):
            raise ValueError("ordered_sum: non-finite entry")
        s += v
    return s


@numba.njit(cache=True)
def log_factorial_sum(values):
    """``sum log(x!)`` over non-negative integer counts stored as floats, in index order."""
    s = 0.0
    for v in values:
        if not np.isfinite(v):
            raise ValueError("log_factorial_sum: non-finite count")
        s += math.lgamma(float(v) + 1.0)
    return s


@numba.njit(cache=True)
def poisson_block(indptr, cols, counts, A, W, Wsum, a, b, seed, ZW, Asum):
    """Split the block's counts, draw its rows of ``A`` in place, accumulate statistics.

    Parameters
    ----------
    indptr, cols, counts : arrays
        The block's rows in CSR form (counts: non-negative integers stored as float64).
    A : ndarray (rows, K)
        The block's row factors (updated in place).
    W : ndarray (K, N)
        Column factors of this sweep.
    Wsum : ndarray (K,)
        ``W.sum(axis=1)``.
    a, b : float
        Gamma shape and rate of ``A``.
    seed : int
        Seed of this (sweep, block).
    ZW : ndarray (K, N)
        Latent-count column totals of the block (zeroed here, then filled).
    Asum : ndarray (K,)
        Column sums of the new ``A`` rows (filled).
    """
    if not (_all_finite(A) and _all_finite(W) and _all_finite(counts)):
        raise ValueError("poisson_block: non-finite factor or count")
    _seed(seed)
    n_rows, K = A.shape
    ZW[:] = 0.0
    Asum[:] = 0.0
    p = np.empty(K)
    zrow = np.empty(K)
    for i in range(n_rows):
        zrow[:] = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            j = cols[q]
            c = int(counts[q])
            if c <= 0:
                continue
            total = 0.0
            for k in range(K):
                total += A[i, k] * W[k, j]
                p[k] = total
            if c <= K:
                # c independent categorical draws: exact multinomial, one uniform per count
                for _ in range(c):
                    u = np.random.random() * total
                    k = 0
                    while k < K - 1 and p[k] <= u:
                        k += 1
                    zrow[k] += 1.0
                    ZW[k, j] += 1.0
            else:
                rest = c
                rest_p = total
                prev = 0.0
                for k in range(K - 1):
                    pk = p[k] - prev
                    prev = p[k]
                    if rest == 0:
                        break
                    frac = pk / rest_p if rest_p > 0.0 else 1.0
                    frac = min(max(frac, 0.0), 1.0)
                    z = np.random.binomial(rest, frac)
                    rest -= z
                    rest_p -= pk
                    zrow[k] += z
                    ZW[k, j] += z
                zrow[K - 1] += rest
                ZW[K - 1, j] += rest
        for k in range(K):
            A[i, k] = np.random.gamma(a + zrow[k], 1.0) / (b + Wsum[k])
            Asum[k] += A[i, k]


@numba.njit(cache=True)
def poisson_columns(ZW, Asum, a, b, seed, W):
    """Draw ``W_kj ~ Gamma(a + Z_.jk, b + sum_i A_ik)`` in place."""
    if not (_all_finite(ZW) and _all_finite(Asum)):
        raise ValueError("poisson_columns: non-finite statistic")
    _seed(seed)
    K, N = W.shape
    for k in range(K):
        for j in range(N):
            W[k, j] = np.random.gamma(a + ZW[k, j], 1.0) / (b + Asum[k])


@numba.njit(cache=True)
def gamma_matrix(shape_, rate, seed, out):
    """Fill ``out`` with Gamma(shape_, rate) draws (prior starts)."""
    _seed(seed)
    flat = out.ravel()
    for q in range(flat.size):
        flat[q] = np.random.gamma(shape_, 1.0) / rate


@numba.njit(cache=True)
def exponential_matrix(lam, seed, out):
    """Fill ``out`` with Exponential(lam) draws (prior starts)."""
    _seed(seed)
    flat = out.ravel()
    for q in range(flat.size):
        flat[q] = _exp_draw(lam)


# ------------------------------------------------------------------------------------------------
# exponential-Gaussian
# ------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def gaussian_block(indptr, cols, values, A, W, tau, lam_A, seed, full, Bstat, Gstat):
    """Draw the block's rows of ``A`` in place given ``W, tau``; accumulate column statistics.

    ``Bstat`` (N, K) receives ``sum_i A_ik x_ij`` over the observed entries of the block;
    ``Gstat`` receives ``sum_i A_i A_i^T``: shape (1, K, K) when the block is fully observed
    (``full``), else (N, K, K), one Gram matrix per column over its observed rows.
    """
    if not (_all_finite(A) and _all_finite(W) and _all_finite(values) and np.isfinite(tau)):
        raise ValueError("gaussian_block: non-finite factor, value or precision")
    _seed(seed)
    n_rows, K = A.shape
    Bstat[:] = 0.0
    Gstat[:] = 0.0
    for i in range(n_rows):
        lo, hi = indptr[i], indptr[i + 1]
        r = np.empty(hi - lo)
        for q in range(lo, hi):
            j = cols[q]
            s = values[q]
            for k in range(K):
                s -= A[i, k] * W[k, j]
            r[q - lo] = s
        for k in range(K):
            prec = 0.0
            lin = 0.0
            for q in range(lo, hi):
                w = W[k, cols[q]]
                prec += w * w
                lin += w * (r[q - lo] + A[i, k] * w)
            if prec > 0.0:
                prec *= tau
                mu = (tau * lin - lam_A) / prec
                new = _truncnorm_pos(mu, 1.0 / np.sqrt(prec))
            else:
                new = _exp_draw(lam_A)
            d = new - A[i, k]
            if d != 0.0:
                for q in range(lo, hi):
                    r[q - lo] -= d * W[k, cols[q]]
            A[i, k] = new
        for q in range(lo, hi):
            j = cols[q]
            for k in range(K):
                Bstat[j, k] += A[i, k] * values[q]
            if not full:
                for k in range(K):
                    for m in range(K):
                        Gstat[j, k, m] += A[i, k] * A[i, m]
        if full:
            for k in range(K):
                for m in range(K):
                    Gstat[0, k, m] += A[i, k] * A[i, m]


@numba.njit(cache=True)
def gaussian_columns(B, G, tau, lam_W, seed, W):
    """Coordinate-wise Gibbs update of every column of ``W`` in place from the reduced statistics.

    ``G`` holds one Gram matrix (all columns fully observed) or one per column.
    """
    if not (_all_finite(B) and _all_finite(G) and np.isfinite(tau)):
        raise ValueError("gaussian_columns: non-finite statistic")
    _seed(seed)
    K, N = W.shape
    one = G.shape[0] == 1
    for j in range(N):
        g = G[0] if one else G[j]
        for k in range(K):
            if g[k, k] > 0.0:
                lin = B[j, k]
                for m in range(K):
                    if m != k:
                        lin -= g[k, m] * W[m, j]
                prec = tau * g[k, k]
                mu = (tau * lin - lam_W) / prec
                W[k, j] = _truncnorm_pos(mu, 1.0 / np.sqrt(prec))
            else:
                W[k, j] = _exp_draw(lam_W)


@numba.njit(cache=True)
def gaussian_sse(B, G, sumsq, W):
    """Sum of squared residuals ``sum (x_ij - A_i . W_j)^2`` from the statistics (clipped at 0)."""
    K, N = W.shape
    one = G.shape[0] == 1
    out = sumsq
    for j in range(N):
        g = G[0] if one else G[j]
        for k in range(K):
            out -= 2.0 * W[k, j] * B[j, k]
            for m in range(K):
                out += W[k, j] * g[k, m] * W[m, j]
    return max(out, 0.0)


@numba.njit(cache=True)
def gamma_draw(shape_, rate, seed):
    """One Gamma(shape_, rate) draw."""
    _seed(seed)
    return np.random.gamma(shape_, 1.0) / rate
