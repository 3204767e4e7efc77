"""Hamiltonian Monte Carlo on ``log A, log W`` of a tempered Poisson NMF (numeric core, no PyMC).

The target is a rung of the reference path of :mod:`bnmfzoo.inference.reference_path`,

``pi_b(A, W) ∝ prod Gamma(x; a_x, r_x) * prod_cells Poisson(X_dn | o_dn (A W)_dn)^b``,

where each factor entry ``x`` has its own Gamma shape and rate (``q^(1 - b) p0^b`` is such a
product: ``a = b a0 + (1 - b) a_q``, ``r = b b0 + (1 - b) b_q``). On ``theta = log x`` (with the
Jacobian ``x``) the log density is

``log pi_b = sum_x (a_x theta_x - r_x e^theta_x) + b sum_cells (X log mu - mu) + const``,

``mu_dn = o_dn sum_k A_dk W_kn``, and its gradient is ``a - r x`` plus ``b x d/dx`` of the
likelihood term: ``A_dk sum_n (X_dn / mu_dn - 1) o_dn W_kn`` (and the same for ``W``). The
likelihood is evaluated directly over the observed cells (no latent counts), so one gradient
costs O(cells K).

:func:`hmc_step` is one HMC transition (Duane et al. 1987; Neal 2011): a fresh momentum
``p ~ N(0, M)`` with a diagonal mass ``M = diag(1 / inv_mass)``, ``n_leap`` leapfrog steps of
size ``eps``, and a Metropolis test on the change of the Hamiltonian. The leapfrog map is
volume-preserving and reversible, so the transition leaves ``pi_b`` invariant for any fixed
``eps``, ``n_leap`` and mass; the caller may draw ``eps`` at random (independently of the
state) each transition. A trajectory that meets a non-finite density or gradient is rejected
(the state is kept), which keeps the transition exact.

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

__all__ = ["log_density_grad", "hmc_step", "HMC_ERRORS"]

#: codes of :func:`hmc_step` besides 0 (accepted) and 1 (rejected by the test)
HMC_ERRORS = {2: "the starting state has a non-finite tempered log density or gradient"}


@numba.njit(cache=True)
def log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt):
    """``log pi_b`` on ``theta = (log A, log W.T)`` and its gradient into ``gA, gWt``.

    ``rows, cols, offs, x``: the observed cells (zeros included) with their offsets and counts.
    Returns NaN when a mean is zero or non-finite or the density is not finite.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    A = np.exp(tA)
    Wt = np.exp(tWt)
    lp = 0.0
    for d in range(D):
        for k in range(K):
            if not (A[d, k] > 0.0 and A[d, k] < np.inf):  # also exp underflow / NaN theta
                return np.nan
    for n in range(N):
        for k in range(K):
            if not (Wt[n, k] > 0.0 and Wt[n, k] < np.inf):
                return np.nan
    for d in range(D):
        for k in range(K):
            gA[d, k] = aA[d, k] - rA[d, k] * A[d, k]
            lp += aA[d, k] * tA[d, k] - rA[d, k] * A[d, k]
    for n in range(N):
        for k in range(K):
            gWt[n, k] = aWt[n, k] - rWt[n, k] * Wt[n, k]
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
        if x[c] > 0.0:
            lp += beta * (x[c] * math.log(m) - m)
        else:
            lp -= beta * m
        r = beta * (x[c] / m - 1.0) * offs[c]
        for k in range(K):
            gA[d, k] += r * Wt[n, k] * A[d, k]
            gWt[n, k] += r * A[d, k] * Wt[n, k]
    if not math.isfinite(lp):
        return np.nan
    for d in range(D):
        for k in range(K):
            if not math.isfinite(gA[d, k]):
                return np.nan
    for n in range(N):
        for k in range(K):
            if not math.isfinite(gWt[n, k]):
                return np.nan
    return lp


@numba.njit(cache=True)
def hmc_step(tA, tWt, pA, pWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, imA, imWt, eps,
             n_leap, log_u):
    """One HMC transition on ``theta = (log A, log W.T)``, in place; returns ``(code, log_acc)``.

    ``pA, pWt``: standard normal draws (overwritten: the momentum is ``z / sqrt(inv_mass)``);
    ``imA, imWt``: the diagonal inverse mass; ``log_u``: ``log`` of a uniform draw for the
    test. Codes: 0 accepted (``theta`` holds the new state), 1 rejected (``theta``
    unchanged; also when the trajectory met a non-finite value, ``log_acc`` then ``-inf``),
    2 the starting state is not finite (unchanged).
    """
    D, K = tA.shape
    N = tWt.shape[0]
    gA = np.empty((D, K))
    gWt = np.empty((N, K))
    lp0 = log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt)
    if not math.isfinite(lp0):
        return 2, -np.inf
    qA = tA.copy()
    qWt = tWt.copy()
    k0 = 0.0
    for d in range(D):
        for k in range(K):
            pA[d, k] = pA[d, k] / math.sqrt(imA[d, k])
            k0 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]
    for n in range(N):
        for k in range(K):
            pWt[n, k] = pWt[n, k] / math.sqrt(imWt[n, k])
            k0 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]
    lp = lp0
    for step in range(n_leap):
        for d in range(D):
            for k in range(K):
                pA[d, k] += 0.5 * eps * gA[d, k]
                qA[d, k] += eps * imA[d, k] * pA[d, k]
        for n in range(N):
            for k in range(K):
                pWt[n, k] += 0.5 * eps * gWt[n, k]
                qWt[n, k] += eps * imWt[n, k] * pWt[n, k]
        lp = log_density_grad(qA, qWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt)
        if not math.isfinite(lp):
            return 1, -np.inf
        for d in range(D):
            for k in range(K):
                pA[d, k] += 0.5 * eps * gA[d, k]
        for n in range(N):
            for k in range(K):
                pWt[n, k] += 0.5 * eps * gWt[n, k]
    k1 = 0.0
    for d in range(D):
        for k in range(K):
            k1 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]
    for n in range(N):
        for k in range(K):
            k1 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]
    log_acc = (lp - k1) - (lp0 - k0)
    if not math.isfinite(log_acc):
        return 1, -np.inf
    if log_u < log_acc:
        tA[:, :] = qA
        tWt[:, :] = qWt
        return 0, min(log_acc, 0.0)
    return 1, min(log_acc, 0.0)
