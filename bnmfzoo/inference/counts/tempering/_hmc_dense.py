"""HMC on ``log A, log W`` of a tempered Poisson NMF with dense matrix products (numeric core).

The same target and transition as :func:`bnmfzoo.inference.counts.tempering._hmc.hmc_step`,

``log pi_b = sum_x (a_x theta_x - r_x e^theta_x) + b sum_dn (X_dn log (A W)_dn - O_dn (A W)_dn)
+ const``,

with ``X`` the counts (0 on unobserved cells) and ``Of`` the offsets (0 on unobserved cells, so
they carry no weight), evaluated with three ``D x K x N`` matrix products per gradient
(``A W``, ``R W^T``, ``A^T R`` for ``R = b (X / (A W) - Of)``) instead of a loop over the
observed cells, and the logarithm only at the two ends of a trajectory (the leapfrog steps need
the gradient only). On ESCC SBS96 (96 x 552, K = 4) one gradient costs 0.12 ms against 0.97 ms
for the cell loop (``docs/results/masses_large.md``). The gradient and the leapfrog are those of
:mod:`bnmfzoo.inference.counts._hmc_kernels`. The constant ``sum X log Of`` is dropped:
the Metropolis test uses differences of ``log pi_b`` along one trajectory only.

The leapfrog map is volume-preserving and reversible and the Metropolis test uses the exact
change of the Hamiltonian, so the transition leaves ``pi_b`` invariant for any fixed step
size, number of steps and diagonal mass (Duane et al. 1987; Neal 2011). A trajectory that meets
a non-finite density or gradient is rejected.

References
----------
Duane et al. (1987), Hybrid Monte Carlo, and Neal (2011), MCMC using Hamiltonian dynamics:
in full in :mod:`bnmfzoo.inference.counts._hmc_kernels`.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._hmc_kernels import (
    finite,
    finite_positive,
    grad_dense,
    kick,
    kick_drift,
    metropolis,
)

__all__ = ["dense_grad", "dense_log_density", "hmc_step_dense"]


@numba.njit(cache=True)
def dense_grad(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, gA, gWt):
    """Gradient of ``log pi_b`` on ``(log A, log W.T)`` into ``gA, gWt``; returns ``A W``.

    Returns an empty ``(0, 0)`` array when a factor entry or a mean is zero or not finite, or
    the gradient is not finite.
    """
    A = np.empty_like(tA)
    Wt = np.empty_like(tWt)
    M = grad_dense(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, A, Wt, gA, gWt, False,
                   True)[1]
    if not (M.shape[0] > 0 and finite_positive(A) and finite_positive(Wt) and finite(gA)
            and finite(gWt)):
        return np.empty((0, 0))
    return M


@numba.njit(cache=True)
def dense_log_density(tA, tWt, M, X, Of, aA, rA, aWt, rWt, beta):
    """``log pi_b`` (up to the constant) from the means ``M = A W`` of :func:`dense_grad`."""
    lp = np.sum(aA * tA - rA * np.exp(tA)) + np.sum(aWt * tWt - rWt * np.exp(tWt))
    like = 0.0
    D, N = M.shape
    for d in range(D):
        for n in range(N):
            if X[d, n] > 0.0:
                like += X[d, n] * math.log(M[d, n])
            like -= Of[d, n] * M[d, n]
    lp += beta * like
    return lp if math.isfinite(lp) else np.nan


@numba.njit(cache=True)
def hmc_step_dense(tA, tWt, pA, pWt, X, Of, aA, rA, aWt, rWt, beta, imA, imWt, eps, n_leap,
                   log_u):
    """One HMC transition on ``(log A, log W.T)`` in place; returns ``(code, log_acc)``.

    As :func:`bnmfzoo.inference.counts.tempering._hmc.hmc_step` (same arguments, with the
    dense counts ``X`` and offsets ``Of`` in place of the cells): codes 0 accepted, 1 rejected
    (also on a non-finite trajectory), 2 the starting state is not finite.
    """
    gA = np.empty_like(tA)
    gWt = np.empty_like(tWt)
    M = dense_grad(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, gA, gWt)
    if M.shape[0] == 0:
        return 2, -np.inf
    lp0 = dense_log_density(tA, tWt, M, X, Of, aA, rA, aWt, rWt, beta)
    if not math.isfinite(lp0):
        return 2, -np.inf
    pA[:, :] = pA / np.sqrt(imA)
    pWt[:, :] = pWt / np.sqrt(imWt)
    k0 = 0.5 * (np.sum(imA * pA * pA) + np.sum(imWt * pWt * pWt))
    qA = tA.copy()
    qWt = tWt.copy()
    for _ in range(n_leap):
        kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        M = dense_grad(qA, qWt, X, Of, aA, rA, aWt, rWt, beta, gA, gWt)
        if M.shape[0] == 0:
            return 1, -np.inf
        kick(pA, pWt, gA, gWt, eps)
    lp = dense_log_density(qA, qWt, M, X, Of, aA, rA, aWt, rWt, beta)
    k1 = 0.5 * (np.sum(imA * pA * pA) + np.sum(imWt * pWt * pWt))
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, k1, log_u)
