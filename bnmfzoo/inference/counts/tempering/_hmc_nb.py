"""Hamiltonian Monte Carlo on ``log A, log W`` of a negative-binomial rung (numeric core, no PyMC).

The target is a rung of the negative binomial's reference path
(:mod:`bnmfzoo.inference.counts.tempering._reference_nb`) at a fixed dispersion ``alpha``:

``pi_b(A, W) ∝ prod Gamma(x; a_x, r_x) * prod_cells f_b(X_dn)``,

``f_b(x) = Gamma(r + b x) / Gamma(r) (alpha / (alpha + b))^r (alpha + b)^(-b x) / x!^b``,
``r_dn = alpha o_dn sum_k A_dk W_kn`` (the Gamma-mixed power of
:mod:`bnmfzoo.inference.counts.tempering._power_nb`). On ``theta = log x`` (Jacobian ``x``)

``log pi_b = sum_x (a_x theta_x - r_x e^theta_x) + sum_cells log f_b(X_dn) + const``,

and ``d log f_b / d mu_dn = alpha o_dn (psi(r + b x) - psi(r) + log(alpha / (alpha + b)))``
for ``mu = (A W)_dn``, so the gradient is ``a - r x`` plus ``A_dk sum_n g_dn W_kn`` (and the
same for ``W``). One gradient costs O(cells K) and two digammas per nonzero cell.

:func:`hmc_step_nb` is one HMC transition, as :func:`bnmfzoo.inference.counts.tempering._hmc.
hmc_step` is for the Poisson rung (same leapfrog, mass and Metropolis test; a trajectory that
meets a non-finite value is rejected). The dispersion is not moved here: the rung's sweep
slice-samples it.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._hmc_kernels import (
    finite,
    kick,
    kick_drift,
    kinetic,
    metropolis,
    momentum,
)

__all__ = ["digamma", "nb_log_density_grad", "hmc_step_nb"]


@numba.njit(cache=True)
def digamma(x):
    """``psi(x)`` for ``x > 0`` (recurrence up to 6, then the asymptotic series).

    Relative error below 1e-11 on ``[1e-6, 1e4]`` against scipy (checked in the tests).

    Examples
    --------
    >>> from scipy.special import digamma as ref
    >>> bool(abs(digamma(0.37) - ref(0.37)) < 1e-10 and abs(digamma(250.0) - ref(250.0)) < 1e-10)
    True
    """
    if not (x > 0.0) or not math.isfinite(x):
        return np.nan
    out = 0.0
    while x < 6.0:
        out -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return out + math.log(x) - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (
        1.0 / 252.0 - f * (1.0 / 240.0 - f * (1.0 / 132.0)))))


@numba.njit(cache=True)
def nb_log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, alpha, gA, gWt):
    """``log pi_b`` on ``theta = (log A, log W.T)`` and its gradient into ``gA, gWt``.

    ``rows, cols, offs, x``: the observed cells (zeros included) with their offsets and counts.
    Returns NaN when a factor entry or a shape is zero or not finite, or the density or the
    gradient is not finite.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    A = np.exp(tA)
    Wt = np.exp(tWt)
    lp = 0.0
    for d in range(D):
        for k in range(K):
            lp += aA[d, k] * tA[d, k] - rA[d, k] * A[d, k]
            gA[d, k] = aA[d, k] - rA[d, k] * A[d, k]
    for n in range(N):
        for k in range(K):
            lp += aWt[n, k] * tWt[n, k] - rWt[n, k] * Wt[n, k]
            gWt[n, k] = aWt[n, k] - rWt[n, k] * Wt[n, k]
    la = math.log(alpha / (alpha + beta))
    lab = math.log(alpha + beta)
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        m = 0.0
        for k in range(K):
            m += A[d, k] * Wt[n, k]
        ao = alpha * offs[e]
        r = ao * m
        if not (r > 0.0 and r < np.inf):
            return np.nan
        bx = beta * x[e]
        lp += r * la
        if bx > 0.0:
            lp += (math.lgamma(r + bx) - math.lgamma(r) - bx * lab
                   - beta * math.lgamma(x[e] + 1.0))
            g = ao * (digamma(r + bx) - digamma(r) + la)
        else:
            g = ao * la
        for k in range(K):
            t = g * A[d, k] * Wt[n, k]
            gA[d, k] += t
            gWt[n, k] += t
    if not (math.isfinite(lp) and finite(gA) and finite(gWt)):
        return np.nan
    return lp


@numba.njit(cache=True)
def hmc_step_nb(tA, tWt, pA, pWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, alpha, imA,
                imWt, eps, n_leap, log_u):
    """One HMC transition of the NB rung, in place; returns ``(code, log_acc)``.

    As :func:`bnmfzoo.inference.counts.tempering._hmc.hmc_step` (codes 0 accepted, 1
    rejected, 2 a non-finite start), with the density of :func:`nb_log_density_grad`.
    """
    gA = np.empty_like(tA)
    gWt = np.empty_like(tWt)
    lp0 = nb_log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, alpha,
                              gA, gWt)
    if not math.isfinite(lp0):
        return 2, -np.inf
    qA = tA.copy()
    qWt = tWt.copy()
    k0 = momentum(pA, pWt, imA, imWt)
    lp = lp0
    for _ in range(n_leap):
        kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        lp = nb_log_density_grad(qA, qWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, alpha,
                                 gA, gWt)
        if not math.isfinite(lp):
            return 1, -np.inf
        kick(pA, pWt, gA, gWt, eps)
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, kinetic(pA, pWt, imA, imWt), log_u)
