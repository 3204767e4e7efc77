"""The Poisson NMF log density and its gradient from the nonzero counts alone (numba).

The HMC moves of :mod:`bnmfzoo.inference.counts.gibbs._hmc_moves` evaluate

``log pi = sum_x (a_x theta_x - b_x e^theta_x) + sum_observed (X log mu - mu) + const``

on ``theta = (log A, log W.T)``, ``mu_dn = o_dn (A W)_dn``. Looping over every observed cell
costs O(D N K) even when most counts are zero (word counts, UMI counts: a few percent of the
cells are nonzero). When the offsets are separable, ``o_dn = r_d c_n``, and every cell is
observed except a listed few (the missing ones), the zeros enter only through the total mean

``sum_observed mu = sum_k (sum_d r_d A_dk) (sum_n c_n W_kn) - sum_missing mu``,

so the log density is ``sum_nonzero X log mu - T + sum_missing mu`` (``T`` the first term,
O((D + N) K)) and its gradient on ``log A_dk`` is

``a - b A_dk + A_dk (sum_{n: X_dn > 0} (X_dn / mu_dn) o_dn W_kn - r_d sum_n c_n W_kn
+ sum_{n missing in row d} o_dn W_kn)``

(and the same for ``W``): O((nonzeros + missing + D + N) K) per gradient, the same as the
latent-count sweep's cost (Cemgil 2009; Zhou & Carin 2015 use the same identity for the
Gamma rates). The sums are those of the loop over every cell, taken in another order: equal to
it up to rounding.

**Data form** (:func:`sparse_cells`, what ``hmc_cells`` returns for such problems): the cell
arrays ``rows, cols, offs, x`` hold the nonzero cells (row-major) followed by the missing
cells, whose count is 0 (a count is never 0 at a nonzero cell, so ``x > 0`` tells the two
apart); the offsets ``r`` and ``c`` travel in one row ``[r, c]`` (length ``D + N``).

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
"""

import math

import numba
import numpy as np

__all__ = ["grad_sparse", "sparse_cells"]


@numba.njit(cache=True)
def grad_sparse(tA, tWt, rows, cols, offs, x, rc, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp):
    """Gradient of ``log pi`` at ``(tA, tWt)`` into ``gA, gWt`` from the nonzero cells.

    ``rows, cols, offs, x``: the nonzero cells then the missing ones (count 0), with their
    offsets ``o_dn``; ``rc``: the row offsets ``r`` (``D``) then the column offsets ``c``
    (``N``); ``aA, bA, aWt, bWt``: the Gamma shapes and rates; ``A, Wt``: work buffers
    (receive ``exp(tA), exp(tWt)``). Returns ``log pi`` (up to the constant, as the loop over
    every cell) if ``want_lp`` else 0; NaN when an entry of ``exp(theta)`` is not finite, the
    total mean ``T`` is not finite or a nonzero or missing cell's mean is not positive and
    finite. (A zero cell's mean is never formed: where it underflows to exactly 0 the loop
    over every cell returns NaN and this one a finite value, the Poisson term being 0 there.)
    """
    D, K = tA.shape
    N = tWt.shape[0]
    lp = 0.0
    sA = np.zeros(K)  # sum_d r_d A_dk
    sW = np.zeros(K)  # sum_n c_n W_kn
    for d in range(D):
        for k in range(K):
            a = math.exp(tA[d, k])
            if not a < np.inf:  # also NaN
                return np.nan
            A[d, k] = a
            gA[d, k] = 0.0
            sA[k] += rc[d] * a
            if want_lp:
                lp += aA[d, k] * tA[d, k] - bA[d, k] * a
    for n in range(N):
        for k in range(K):
            w = math.exp(tWt[n, k])
            if not w < np.inf:
                return np.nan
            Wt[n, k] = w
            gWt[n, k] = 0.0
            sW[k] += rc[D + n] * w
    if want_lp:
        for n in range(N):
            for k in range(K):
                lp += aWt[n, k] * tWt[n, k] - bWt[n, k] * Wt[n, k]
    total = 0.0
    for k in range(K):
        total += sA[k] * sW[k]
    if not total < np.inf:
        return np.nan
    lp -= total
    # gA, gWt first gather the likelihood's sums without the factor A_dk (resp. W_kn)
    for c in range(rows.shape[0]):
        d = rows[c]
        n = cols[c]
        m = 0.0
        for k in range(K):
            m += A[d, k] * Wt[n, k]
        m *= offs[c]
        if not (m > 0.0 and m < np.inf):
            return np.nan
        if x[c] > 0.0:  # a nonzero cell: X log mu (its -mu is in the total)
            if want_lp:
                lp += x[c] * math.log(m)
            r = x[c] / m * offs[c]
        else:  # a missing cell: its mean, counted in the total, is given back
            if want_lp:
                lp += m
            r = offs[c]
        for k in range(K):
            gA[d, k] += r * Wt[n, k]
            gWt[n, k] += r * A[d, k]
    for d in range(D):
        for k in range(K):
            gA[d, k] = aA[d, k] - bA[d, k] * A[d, k] + (gA[d, k] - rc[d] * sW[k]) * A[d, k]
    for n in range(N):
        for k in range(K):
            gWt[n, k] = (aWt[n, k] - bWt[n, k] * Wt[n, k]
                         + (gWt[n, k] - rc[D + n] * sA[k]) * Wt[n, k])
    return lp if want_lp else 0.0


def sparse_cells(problem):
    """``(rows, cols, offsets, counts, rc)`` of the sparse form (module docstring).

    ``problem``: a Poisson :class:`~bnmfzoo.inference.counts._problem.CountProblem` with
    separable offsets (``problem.expo.kind == "separable"``). The nonzero cells in CSR order
    (row-major), then the missing cells in row-major order with count 0; ``rc`` the row offsets
    then the column offsets. Memory O(nonzeros + missing + D + N): the zeros are never listed.
    """
    e = problem.expo
    if e.kind != "separable":
        raise ValueError("sparse_cells needs separable offsets (o_dn = r_d c_n); got "
                         f"exposure kind {e.kind!r}")
    data = problem.data
    D, N = data.shape
    nz_r = data.rows().astype(np.int64)
    nz_c = np.asarray(data.cols, np.int64)
    miss = np.unique(np.asarray(e.rows, np.int64) * np.int64(N) + np.asarray(e.cols, np.int64))
    m_r, m_c = miss // N, miss % N
    rows = np.ascontiguousarray(np.concatenate([nz_r, m_r]))
    cols = np.ascontiguousarray(np.concatenate([nz_c, m_c]))
    r = np.asarray(e.row_offset, float)
    c = np.asarray(e.col_offset, float)
    offs = np.ascontiguousarray(r[rows] * c[cols])
    x = np.ascontiguousarray(np.concatenate([np.asarray(data.counts, float),
                                             np.zeros(miss.size)]))
    return rows, cols, offs, x, np.ascontiguousarray(np.concatenate([r, c]))
