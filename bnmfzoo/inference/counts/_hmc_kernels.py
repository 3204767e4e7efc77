"""The Poisson NMF log density on ``log A, log W``, its gradient, and the leapfrog (numba).

Shared by the HMC moves of ``gibbs/`` (``GibbsPoisson(moves="hmc")``, ``beta = 1``) and the
tempered ones of ``tempering/`` (a rung ``b`` of the reference path: ``beta = b``). The target
is

``log pi_b = sum_x (a_x theta_x - r_x e^theta_x) + b sum_cells (X log mu - mu) + const``

on ``theta = log x`` (with the Jacobian ``x``), each factor entry ``x`` with its own Gamma shape
``a_x`` and rate ``r_x``, ``mu_dn = o_dn sum_k A_dk W_kn`` over the observed cells. Its gradient
is ``a - r x`` plus ``b A_dk sum_n (X_dn / mu_dn - 1) o_dn W_kn`` (and the same for ``W``): no
latent counts, so one gradient costs O(cells K) over the cells (:func:`grad_cells`) or three
``D x K x N`` matrix products on dense counts (:func:`grad_dense`).

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

__all__ = ["finite", "finite_positive", "grad_cells", "grad_dense", "momentum", "kick_drift",
           "kick", "kinetic", "metropolis"]


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
def grad_cells(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, A, Wt, gA, gWt, want_lp):
    """Gradient of ``log pi_b`` at ``(tA, tWt) = (log A, log W.T)`` into ``gA, gWt``.

    ``rows, cols, offs, x``: the observed cells (zeros included) with their offsets and counts;
    ``aA, rA, aWt, rWt``: the Gamma shapes and rates of the entries; ``beta``: the likelihood's
    power; ``A, Wt``: receive ``exp(tA), exp(tWt)``. Returns ``log pi_b`` (up to a constant) if
    ``want_lp`` else 0, NaN as soon as a mean is not positive and finite. The gradient is not
    checked here: the caller checks it (:func:`finite`).
    """
    D, K = tA.shape
    N = tWt.shape[0]
    lp = 0.0
    for d in range(D):
        for k in range(K):
            A[d, k] = math.exp(tA[d, k])
            gA[d, k] = aA[d, k] - rA[d, k] * A[d, k]
            if want_lp:
                lp += aA[d, k] * tA[d, k] - rA[d, k] * A[d, k]
    for n in range(N):
        for k in range(K):
            Wt[n, k] = math.exp(tWt[n, k])
            gWt[n, k] = aWt[n, k] - rWt[n, k] * Wt[n, k]
            if want_lp:
                lp += aWt[n, k] * tWt[n, k] - rWt[n, k] * Wt[n, k]
    for c in range(rows.shape[0]):
        d = rows[c]
        n = cols[c]
        m = 0.0
        for k in range(K):
            m += A[d, k] * Wt[n, k]
        m *= offs[c]
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
