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
costs O(cells K). The gradient and the leapfrog are those of the untempered HMC moves
(:mod:`bnmfzoo.inference.counts._hmc_kernels`, there with ``beta = 1``).

:func:`hmc_step` is one HMC transition (Duane et al. 1987; Neal 2011): a fresh momentum
``p ~ N(0, M)`` with a diagonal mass ``M = diag(1 / inv_mass)``, ``n_leap`` leapfrog steps of
size ``eps``, and a Metropolis test on the change of the Hamiltonian. The leapfrog map is
volume-preserving and reversible, so the transition leaves ``pi_b`` invariant for any fixed
``eps``, ``n_leap`` and mass; the caller may draw ``eps`` at random (independently of the
state) each transition. A trajectory that meets a non-finite density or gradient is rejected
(the state is kept), which keeps the transition exact.

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
    grad_cells,
    kick,
    kick_drift,
    kinetic,
    metropolis,
    momentum,
)

__all__ = ["log_density_grad", "hmc_step", "HMC_ERRORS"]

#: codes of :func:`hmc_step` besides 0 (accepted) and 1 (rejected by the test)
HMC_ERRORS = {2: "the starting state has a non-finite tempered log density or gradient"}


@numba.njit(cache=True)
def log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt):
    """``log pi_b`` on ``theta = (log A, log W.T)`` and its gradient into ``gA, gWt``.

    ``rows, cols, offs, x``: the observed cells (zeros included) with their offsets and counts.
    Returns NaN when a factor entry (``exp`` of ``theta``) or a mean is zero or non-finite, or
    the density or the gradient is not finite.
    """
    A = np.empty_like(tA)
    Wt = np.empty_like(tWt)
    lp = grad_cells(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, A, Wt, gA, gWt, True)
    if not (math.isfinite(lp) and finite_positive(A) and finite_positive(Wt) and finite(gA)
            and finite(gWt)):
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
    gA = np.empty_like(tA)
    gWt = np.empty_like(tWt)
    lp0 = log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt)
    if not math.isfinite(lp0):
        return 2, -np.inf
    qA = tA.copy()
    qWt = tWt.copy()
    k0 = momentum(pA, pWt, imA, imWt)
    lp = lp0
    for _ in range(n_leap):
        kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        lp = log_density_grad(qA, qWt, rows, cols, offs, x, aA, rA, aWt, rWt, beta, gA, gWt)
        if not math.isfinite(lp):
            return 1, -np.inf
        kick(pA, pWt, gA, gWt, eps)
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, kinetic(pA, pWt, imA, imWt), log_u)
