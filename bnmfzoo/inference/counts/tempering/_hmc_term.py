"""HMC on ``log A, log W`` of a tempered Poisson or NB NMF rung with one more log-density term.

The rung of a reference path whose reference is not a product of Gammas (the Gaussian copula of
:mod:`bnmfzoo.inference.kernels.gamma_copula`) has the log density on ``theta = (log A, log W)``

``log pi_b = [sum_x (a_x theta_x - r_x e^theta_x) + b log L] + w t(theta) + const``,

the bracket being the product-reference rung of :mod:`bnmfzoo.inference.counts.tempering._hmc`
(per-entry shapes and rates ``a = b a0 + (1 - b) a_q``, ``r = b b0 + (1 - b) b_q``) and
``w t(theta)`` the extra term (for the copula, ``w = 1 - b`` and ``t`` the log copula density).
:func:`hmc_step_term` is one HMC transition on it: the bracket's density and gradient from the
compiled kernels (the cell loop or the dense products), the term's from ``term``, the same
leapfrog and Metropolis test. The leapfrog map is volume-preserving and reversible for any
gradient field and the test uses the exact change of the Hamiltonian, so the transition leaves
``pi_b`` invariant (Duane et al. 1987; Neal 2011); a trajectory that meets a non-finite value is
rejected.

``theta``'s order for ``term`` is ``log A`` row by row, then ``log W`` row by row (``K x N``):
the order of the reference adapters' flat draws (:mod:`bnmfzoo.inference.reference_path`).
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._hmc_kernels import kick, kick_drift, kinetic, metropolis, momentum
from bnmfzoo.inference.counts.tempering._hmc import log_density_grad
from bnmfzoo.inference.counts.tempering._hmc_dense import dense_grad, dense_log_density
from bnmfzoo.inference.counts.tempering._hmc_nb import nb_log_density_grad

__all__ = ["hmc_step_term", "flat_theta", "flat_into", "unflat_into"]


@numba.njit(cache=True)
def flat_into(tA, tWt, theta):
    """``theta[:]`` = ``tA (D x K)`` row by row, then ``tWt (N x K)`` column by column.

    So ``theta`` holds ``log A`` and then ``log W (K x N)``, each row by row.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    for d in range(D):
        for k in range(K):
            theta[d * K + k] = tA[d, k]
    for k in range(K):
        for n in range(N):
            theta[D * K + k * N + n] = tWt[n, k]


@numba.njit(cache=True)
def unflat_into(theta, tA, tWt):
    """The inverse of :func:`flat_into`: ``tA, tWt`` filled from ``theta``."""
    D, K = tA.shape
    N = tWt.shape[0]
    for d in range(D):
        for k in range(K):
            tA[d, k] = theta[d * K + k]
    for k in range(K):
        for n in range(N):
            tWt[n, k] = theta[D * K + k * N + n]


def flat_theta(tA, tWt):
    """``(log A row by row, log W row by row)`` from ``tA (D x K)`` and ``tWt (N x K)``.

    >>> flat_theta(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [5.0, 6.0]])).tolist()
    [1.0, 2.0, 3.0, 5.0, 4.0, 6.0]
    """
    tA, tWt = np.asarray(tA, float), np.asarray(tWt, float)
    theta = np.empty(tA.size + tWt.size)
    flat_into(tA, tWt, theta)
    return theta


def _density_grad(tA, tWt, data, dense, shapes, beta, gA, gWt, term, weight, want_lp,
                  term_grad=None, alpha=None):
    """The rung's log density and gradient into ``gA, gWt``; NaN when a value is not finite.

    Without ``want_lp`` the dense form skips the density (0 in its place). With ``term_grad``
    the term's gradient is ``term_grad(theta)`` and its value (exact) is computed only when
    ``want_lp``. With ``alpha`` the bracket is the negative-binomial rung at that dispersion
    (:func:`~bnmfzoo.inference.counts.tempering._hmc_nb.nb_log_density_grad`, cells only).
    """
    aA, rA, aWt, rWt = shapes
    if alpha is not None:
        lp = nb_log_density_grad(tA, tWt, *data, aA, rA, aWt, rWt, beta, float(alpha), gA,
                                 gWt)
    elif dense:
        M = dense_grad(tA, tWt, *data, aA, rA, aWt, rWt, beta, gA, gWt)
        if M.shape[0] == 0:
            return math.nan
        lp = dense_log_density(tA, tWt, M, *data, aA, rA, aWt, rWt, beta) if want_lp else 0.0
    else:
        lp = log_density_grad(tA, tWt, *data, aA, rA, aWt, rWt, beta, gA, gWt)
    if not math.isfinite(lp):
        return math.nan
    if weight == 0.0:
        return lp
    theta = flat_theta(tA, tWt)
    if term_grad is None:
        v, g = term(theta)
    else:
        g = term_grad(theta)
        v = term(theta)[0] if want_lp else 0.0
    if not (math.isfinite(v) and np.all(np.isfinite(g))):
        return math.nan
    n = gA.size
    gA += weight * g[:n].reshape(gA.shape)
    gWt += weight * g[n:].reshape(gWt.shape[::-1]).T
    return lp + weight * v


def hmc_step_term(tA, tWt, pA, pWt, data, dense, shapes, beta, imA, imWt, eps, n_leap, log_u,
                  term, weight, term_grad=None, alpha=None):
    """One HMC transition on ``theta = (log A, log W.T)`` in place; returns ``(code, log_acc)``.

    ``data``: the cells ``(rows, cols, offs, x)`` of :func:`~bnmfzoo.inference.counts.
    tempering._hmc.hmc_step`, or with ``dense`` the grids ``(X, Of)`` of
    :func:`~bnmfzoo.inference.counts.tempering._hmc_dense.hmc_step_dense`; ``shapes``:
    ``(aA, rA, aWt, rWt)``; ``term(theta) -> (value, gradient)`` on the flat ``theta``
    (:func:`flat_theta`), added with ``weight``. ``term_grad(theta)``, given, is the gradient
    field of every kick in place of ``term``'s (a cheaper approximation: the leapfrog stays
    volume-preserving and reversible for any fixed gradient field, and the Metropolis test
    still uses ``term``'s exact values at the two ends). ``alpha``, given: the rung is the
    negative binomial's at that dispersion (the cells ``data``, not ``dense``), the Gamma-mixed
    power path of :mod:`bnmfzoo.inference.counts.tempering._power_nb`. The other arguments and
    the codes are
    :func:`~bnmfzoo.inference.counts.tempering._hmc.hmc_step`'s: 0 accepted, 1 rejected (also on
    a non-finite trajectory, ``log_acc`` then ``-inf``), 2 the starting state is not finite.
    """
    gA, gWt = np.empty_like(tA), np.empty_like(tWt)
    if alpha is not None and dense:
        raise ValueError("the negative-binomial rung runs the cell loop, not the dense form")
    lp0 = _density_grad(tA, tWt, data, dense, shapes, beta, gA, gWt, term, weight, True,
                        term_grad, alpha)
    if not math.isfinite(lp0):
        return 2, -math.inf
    qA, qWt = tA.copy(), tWt.copy()
    k0 = momentum(pA, pWt, imA, imWt)
    lp = lp0
    for i in range(n_leap):
        kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        lp = _density_grad(qA, qWt, data, dense, shapes, beta, gA, gWt, term, weight,
                           i == n_leap - 1, term_grad, alpha)
        if not math.isfinite(lp):
            return 1, -math.inf
        kick(pA, pWt, gA, gWt, eps)
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, kinetic(pA, pWt, imA, imWt), log_u)
