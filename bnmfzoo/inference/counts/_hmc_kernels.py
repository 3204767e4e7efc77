"""The Poisson NMF log density on ``log A, log W``, its gradient, and the leapfrog (numba).

Shared by the HMC moves of ``gibbs/`` (``GibbsPoisson(moves="hmc")``, ``beta = 1``) and the
tempered ones of ``tempering/`` (a rung ``b`` of the reference path: ``beta = b``). The target
is

``log pi_b = sum_x (a_x theta_x - r_x e^theta_x) + b sum_cells (X log mu - mu) + const``

on ``theta = log x`` (with the Jacobian ``x``), each factor entry ``x`` with its own Gamma shape
``a_x`` and rate ``r_x``, ``mu_dn = o_dn sum_k A_dk W_kn`` over the observed cells. Its gradient
is ``a - r x`` plus ``b A_dk sum_n (X_dn / mu_dn - 1) o_dn W_kn`` (and the same for ``W``): no
latent counts, so one gradient costs O(cells K) over the cells (:func:`grad_cells`) or three
``D x K x N`` matrix products on dense counts (:func:`grad_dense`); on sparse counts with
separable offsets, O((nonzeros + missing + D + N) K) from the nonzero and missing cells alone
(:func:`grad_sparse`, ``beta = 1``; the zeros enter through the total mean).

The leapfrog pieces (:func:`momentum`, :func:`kick_drift`, :func:`kick`, :func:`kinetic`,
:func:`metropolis`) make one HMC transition (Duane et al. 1987; Neal 2011): a momentum
``p ~ N(0, M)`` with a diagonal mass ``M = diag(1 / inv_mass)``, leapfrog steps of size
``eps``, a Metropolis test on the change of the Hamiltonian. Every function here computes each
sum in one fixed order, so the draws of the moves built on them do not depend on which move
calls them.

References
----------
Duane, S., Kennedy, A. D., Pendleton, B. J. & Roweth, D. (1987). Hybrid Monte Carlo.
Physics Letters B 195(2), 216-222.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
ch. 5. Chapman & Hall/CRC.
"""

import math

import numba
import numpy as np

__all__ = ["finite", "finite_positive", "exp_prior", "cell_mean", "grad_cells", "grad_dense",
           "grad_sparse", "sparse_cells", "momentum", "kick_drift", "kick", "kinetic",
           "metropolis"]


@numba.njit(cache=True)
def finite(a):
    """Whether every entry of ``a`` is finite."""
    for v in a.ravel():
        if not math.isfinite(v):
            return False
    return True


@numba.njit(cache=True)
def finite_positive(a):
    """Whether every entry of ``a`` is positive and finite (no under- or overflowed ``exp``)."""
    for v in a.ravel():
        if not (v > 0.0 and v < np.inf):
            return False
    return True


@numba.njit(cache=True)
def exp_prior(t, x, g, a, r, lp, want_lp, prior_grad, check):
    """One factor's entries ``x = exp(t)`` and their Gamma prior on ``t = log x``.

    ``g`` receives the prior's gradient ``a - r x`` (``prior_grad``) or 0; returns ``lp``
    plus ``sum (a t - r x)`` (in row-major order) when ``want_lp``, else ``lp`` unchanged;
    NaN when ``check`` and an entry of ``x`` is not finite (the entries before it are set).
    """
    for i in range(t.shape[0]):
        for k in range(t.shape[1]):
            v = math.exp(t[i, k])
            if check and not v < np.inf:  # also NaN
                return np.nan
            x[i, k] = v
            g[i, k] = a[i, k] - r[i, k] * v if prior_grad else 0.0
            if want_lp:
                lp += a[i, k] * t[i, k] - r[i, k] * v
    return lp


@numba.njit(cache=True)
def cell_mean(A, Wt, d, n, off):
    """A cell's mean ``off * sum_k A_dk Wt_nk`` (the sum in the order of ``k``)."""
    m = 0.0
    for k in range(A.shape[1]):
        m += A[d, k] * Wt[n, k]
    return m * off


@numba.njit(cache=True)
def grad_cells(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, A, Wt, gA, gWt, want_lp):
    """Gradient of ``log pi_b`` at ``(tA, tWt) = (log A, log W.T)`` into ``gA, gWt``.

    ``rows, cols, offs, x``: the observed cells (zeros included) with their offsets and counts;
    ``aA, rA, aWt, rWt``: the Gamma shapes and rates of the entries; ``beta``: the likelihood's
    power; ``A, Wt``: receive ``exp(tA), exp(tWt)``. Returns ``log pi_b`` (up to a constant) if
    ``want_lp`` else 0, NaN as soon as a mean is not positive and finite. The gradient is not
    checked here: the caller checks it (:func:`finite`).
    """
    K = tA.shape[1]
    lp = exp_prior(tA, A, gA, aA, rA, 0.0, want_lp, True, False)
    lp = exp_prior(tWt, Wt, gWt, aWt, rWt, lp, want_lp, True, False)
    for c in range(rows.shape[0]):
        d = rows[c]
        n = cols[c]
        m = cell_mean(A, Wt, d, n, offs[c])
        if not (m > 0.0 and m < np.inf):
            return np.nan
        if want_lp:
            if x[c] > 0.0:
                lp += beta * (x[c] * math.log(m) - m)
            else:
                lp -= beta * m
        r = beta * (x[c] / m - 1.0) * offs[c]
        for k in range(K):
            gA[d, k] += r * Wt[n, k] * A[d, k]
            gWt[n, k] += r * A[d, k] * Wt[n, k]
    return lp if want_lp else 0.0


@numba.njit(cache=True)
def grad_dense(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, A, Wt, gA, gWt, want_lp, views=False):
    """:func:`grad_cells` on dense ``D x N`` counts; returns ``(log pi_b, A W)``.

    ``X, Of``: the counts and offsets, ``Of`` 0 at missing cells (whose counts are 0):
    ``mu = Of * (A W)``, and the likelihood's gradient term ``b (X / mu - 1) o`` is
    ``R = b (X / (A W) - Of)``: three matrix products (BLAS), ``A W``, ``R W^T`` and ``A^T R``.
    ``log pi_b`` (0 unless ``want_lp``) includes the constant ``b sum X log Of``. Returns
    ``(NaN, empty (0, 0))`` as soon as a mean is not positive and finite.

    ``views``: the transposes ``W^T`` and ``R^T`` go to BLAS as views (transposed operands)
    instead of contiguous copies. The two give the same products up to rounding, but BLAS may
    sum in another order, so each caller keeps the form its draws were recorded with (the
    tempered moves views, the untempered ones copies).
    """
    A[:, :] = np.exp(tA)
    Wt[:, :] = np.exp(tWt)
    if views:
        M = A @ Wt.T
    else:
        M = A @ np.ascontiguousarray(Wt.T)
    lp = 0.0
    if want_lp:
        lp = np.sum(aA * tA - rA * A) + np.sum(aWt * tWt - rWt * Wt)
    D, N = M.shape
    R = np.empty((D, N))
    for d in range(D):
        for n in range(N):
            m = M[d, n]
            if not (m > 0.0 and m < np.inf):
                return np.nan, np.empty((0, 0))
            R[d, n] = beta * (X[d, n] / m - Of[d, n])
            if want_lp:
                if X[d, n] > 0.0:
                    lp += beta * (X[d, n] * math.log(Of[d, n] * m) - Of[d, n] * m)
                else:
                    lp -= beta * (Of[d, n] * m)
    gA[:, :] = aA - rA * A + (R @ Wt) * A
    if views:
        gWt[:, :] = aWt - rWt * Wt + (R.T @ A) * Wt
    else:
        gWt[:, :] = aWt - rWt * Wt + (np.ascontiguousarray(R.T) @ A) * Wt
    return lp, M


@numba.njit(cache=True)
def momentum(zA, zWt, imA, imWt):
    """The momentum ``p = z / sqrt(inv_mass)`` in place of ``z``; returns its kinetic energy.

    ``zA, zWt``: standard normal draws (overwritten); the energy is ``sum inv_mass p^2 / 2``.
    """
    k0 = 0.0
    for d in range(zA.shape[0]):
        for k in range(zA.shape[1]):
            zA[d, k] = zA[d, k] / math.sqrt(imA[d, k])
            k0 += 0.5 * imA[d, k] * zA[d, k] * zA[d, k]
    for n in range(zWt.shape[0]):
        for k in range(zWt.shape[1]):
            zWt[n, k] = zWt[n, k] / math.sqrt(imWt[n, k])
            k0 += 0.5 * imWt[n, k] * zWt[n, k] * zWt[n, k]
    return k0


@numba.njit(cache=True)
def kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps):
    """A leapfrog step's first half: ``p += eps g / 2``, then ``q += eps inv_mass p``."""
    for d in range(qA.shape[0]):
        for k in range(qA.shape[1]):
            pA[d, k] += 0.5 * eps * gA[d, k]
            qA[d, k] += eps * imA[d, k] * pA[d, k]
    for n in range(qWt.shape[0]):
        for k in range(qWt.shape[1]):
            pWt[n, k] += 0.5 * eps * gWt[n, k]
            qWt[n, k] += eps * imWt[n, k] * pWt[n, k]


@numba.njit(cache=True)
def kick(pA, pWt, gA, gWt, eps):
    """A leapfrog step's second half: ``p += eps g / 2`` with the gradient at the new ``q``."""
    for d in range(pA.shape[0]):
        for k in range(pA.shape[1]):
            pA[d, k] += 0.5 * eps * gA[d, k]
    for n in range(pWt.shape[0]):
        for k in range(pWt.shape[1]):
            pWt[n, k] += 0.5 * eps * gWt[n, k]


@numba.njit(cache=True)
def kinetic(pA, pWt, imA, imWt):
    """The kinetic energy ``sum inv_mass p^2 / 2`` (in :func:`momentum`'s order)."""
    k1 = 0.0
    for d in range(pA.shape[0]):
        for k in range(pA.shape[1]):
            k1 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]
    for n in range(pWt.shape[0]):
        for k in range(pWt.shape[1]):
            k1 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]
    return k1


@numba.njit(cache=True)
def metropolis(tA, tWt, qA, qWt, lp0, k0, lp, k1, log_u):
    """The Metropolis test of a trajectory; returns ``(code, log_acc)``.

    From ``(tA, tWt)`` (log density ``lp0``, kinetic energy ``k0``) to ``(qA, qWt)`` (``lp``,
    ``k1``).

    Code 0: accepted, ``(tA, tWt)`` set to ``(qA, qWt)``; 1: rejected (unchanged), with
    ``log_acc = -inf`` when the change of the Hamiltonian is not finite.
    """
    log_acc = (lp - k1) - (lp0 - k0)
    if not math.isfinite(log_acc):
        return 1, -np.inf
    if log_u < log_acc:
        tA[:, :] = qA
        tWt[:, :] = qWt
        return 0, min(log_acc, 0.0)
    return 1, min(log_acc, 0.0)


# --- the sparse form: the log density and gradient from the nonzero counts alone ---------
#
# Looping over every observed cell costs O(D N K) even when most counts are zero (word counts,
# UMI counts: a few percent of the cells are nonzero). When the offsets are separable,
# ``o_dn = r_d c_n``, and every cell is observed except a listed few (the missing ones), the
# zeros enter only through the total mean
#
# ``sum_observed mu = sum_k (sum_d r_d A_dk) (sum_n c_n W_kn) - sum_missing mu``,
#
# so the log density (``beta = 1``) is ``sum_nonzero X log mu - T + sum_missing mu`` (``T`` the
# first term, O((D + N) K)) and its gradient on ``log A_dk`` is
#
# ``a - b A_dk + A_dk (sum_{n: X_dn > 0} (X_dn / mu_dn) o_dn W_kn - r_d sum_n c_n W_kn
# + sum_{n missing in row d} o_dn W_kn)``
#
# (and the same for ``W``): O((nonzeros + missing + D + N) K) per gradient, the same as the
# latent-count sweep's cost (Cemgil 2009; Zhou & Carin 2015 use the same identity for the
# Gamma rates). The sums are those of :func:`grad_cells`, taken in another order: equal to it
# up to rounding.
#
# Data form (:func:`sparse_cells`, what ``gibbs._hmc_moves.hmc_cells`` returns for such
# problems): the cell arrays ``rows, cols, offs, x`` hold the nonzero cells (row-major)
# followed by the missing cells, whose count is 0 (a count is never 0 at a nonzero cell, so
# ``x > 0`` tells the two apart); the offsets ``r`` and ``c`` travel in one row ``[r, c]``
# (length ``D + N``).
#
# Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
# Computational Intelligence and Neuroscience, 785152.
# Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE
# TPAMI 37(2), 307-320.


@numba.njit(cache=True)
def grad_sparse(tA, tWt, rows, cols, offs, x, rc, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp):
    """:func:`grad_cells` (``beta = 1``) from the nonzero and missing cells (comment above).

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
    # gA, gWt first gather the likelihood's sums without the factor A_dk (resp. W_kn)
    lp = exp_prior(tA, A, gA, aA, bA, 0.0, want_lp, False, True)
    if math.isnan(lp):
        return np.nan
    lp = exp_prior(tWt, Wt, gWt, aWt, bWt, lp, want_lp, False, True)
    if math.isnan(lp):
        return np.nan
    sA = np.zeros(K)  # sum_d r_d A_dk
    sW = np.zeros(K)  # sum_n c_n W_kn
    for d in range(D):
        for k in range(K):
            sA[k] += rc[d] * A[d, k]
    for n in range(N):
        for k in range(K):
            sW[k] += rc[D + n] * Wt[n, k]
    total = 0.0
    for k in range(K):
        total += sA[k] * sW[k]
    if not total < np.inf:
        return np.nan
    lp -= total
    for c in range(rows.shape[0]):
        d = rows[c]
        n = cols[c]
        m = cell_mean(A, Wt, d, n, offs[c])
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
    """``(rows, cols, offsets, counts, rc)`` of the sparse form (comment above :func:`grad_sparse`).

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
