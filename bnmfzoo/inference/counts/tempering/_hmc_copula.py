"""The leapfrog of a Poisson rung with a Gaussian-copula reference, compiled (numeric core).

The transition of :func:`~bnmfzoo.inference.counts.tempering._hmc_term.hmc_step_term` on dense
counts with the copula's surrogate kicks (``term_grad``), with the whole trajectory in one
numba call: each step's gradient is the rung's Gamma-and-likelihood part
(:func:`~bnmfzoo.inference.counts.tempering._hmc_dense.dense_grad`) plus ``1 - b`` times the
copula's surrogate field (:func:`~bnmfzoo.inference.kernels.gamma_scores.surrogate_field`), and
only the two ends' exact densities are computed outside (SciPy's incomplete gamma functions;
the start's copula term comes from the copula's memo when the caller starts where its last move
ended, :meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.log_point`).
The map and the test are those of ``hmc_step_term`` (same target ``pi_b``, same leapfrog, same
Metropolis test on the exact change of the Hamiltonian), so the transition leaves ``pi_b``
invariant (Duane et al. 1987; Neal 2011); only the cost differs: a rung's transition (20
leapfrog steps) cost 1.2-1.4 times less than the NumPy form on ESCC SBS96 (96 x 552, K = 4),
1.5 times on 214 of its genomes at K = 6 and 2.1 times on breast SBS96 (96 x 21, K = 4)
(``python -m benchmarks.speed.copula_rung``; ``docs/results/masses_copula_reference_2.md``
section 28).

:func:`hmc_step_copula_mass` is the same transition with the copula's correlation as the
mass: kinetic energy ``p' S C S p / 2`` with ``C = B + U U'`` the copula's correlation (block
diagonal plus low rank, so a velocity costs ``O(d (k + r))``) and ``S`` the diagonal scales of
the diagonal form. A posterior of an NMF is long along its scale and shear ridges, which the
copula fitted to its draws holds in ``U``; with a diagonal mass a trajectory of 20 steps
crosses them instead of moving along them. Any constant mass leaves the transition exact
(Neal 2011, section 5.4.1).

References
----------
Duane et al. (1987), Hybrid Monte Carlo, and Neal (2011), MCMC using Hamiltonian dynamics:
in full in :mod:`bnmfzoo.inference.counts._hmc_kernels`.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._hmc_kernels import kick, kick_drift, kinetic, metropolis, momentum
from bnmfzoo.inference.counts.tempering._hmc_dense import dense_grad, dense_log_density
from bnmfzoo.inference.counts.tempering._hmc_term import flat_into, flat_theta, unflat_into
from bnmfzoo.inference.kernels.gamma_scores import surrogate_field

__all__ = ["copula_gradient", "hmc_step_copula", "hmc_step_copula_mass", "copula_velocity",
           "copula_momentum"]


@numba.njit(cache=True)
def copula_gradient(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, weight, parts, gA, gWt):
    """The rung's gradient with the copula's surrogate field into ``gA, gWt``; returns ``A W``.

    ``parts``: :meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.surrogate_parts`.
    The flat order of the copula's ``theta`` is ``log A`` row by row, then ``log W`` row by row
    (:func:`~bnmfzoo.inference.counts.tempering._hmc_term.flat_theta`). Returns an empty
    ``(0, 0)`` array when a value is not finite.
    """
    M = dense_grad(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, gA, gWt)
    if M.shape[0] == 0 or weight == 0.0:
        return M
    D, K = tA.shape
    N = tWt.shape[0]
    theta = np.empty(D * K + K * N)
    flat_into(tA, tWt, theta)
    g = np.empty_like(theta)
    a, r, log_norm_a, wh, log_ra, sqrt_a, blocks, binv, H, G, z_max = parts
    if not surrogate_field(theta, a, r, log_norm_a, wh, log_ra, sqrt_a, blocks, binv, H, G,
                           z_max, g):
        return np.empty((0, 0))
    for d in range(D):
        for k in range(K):
            gA[d, k] += weight * g[d * K + k]
    for k in range(K):
        for n in range(N):
            gWt[n, k] += weight * g[D * K + k * N + n]
    for i in range(g.size):
        if not math.isfinite(g[i]):
            return np.empty((0, 0))
    return M


@numba.njit(cache=True)
def _trajectory(qA, qWt, pA, pWt, X, Of, aA, rA, aWt, rWt, beta, imA, imWt, eps, n_leap,
                weight, parts, gA, gWt):
    """``n_leap`` leapfrog steps in place from the gradient ``gA, gWt`` at ``qA, qWt``.

    Returns the end's means ``A W`` (empty on a non-finite value).
    """
    M = np.empty((0, 0))
    for _ in range(n_leap):
        kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        M = copula_gradient(qA, qWt, X, Of, aA, rA, aWt, rWt, beta, weight, parts, gA, gWt)
        if M.shape[0] == 0:
            return M
        kick(pA, pWt, gA, gWt, eps)
    return M


def _start(tA, tWt, grid, shapes, beta, copula, weight):
    """A transition's start: ``(density, surrogate parts, log density, gA, gWt)``.

    ``density(qA, qWt, M)`` is the rung's exact log density from the means ``M = A W`` of the
    last gradient (NaN when ``M`` is empty or a value is not finite): the Gamma-and-likelihood
    part plus ``weight`` times the copula's exact term. ``gA, gWt`` hold the gradient (with the
    copula's surrogate field) at the start.
    """
    X, Of = grid
    aA, rA, aWt, rWt = shapes
    parts = copula.surrogate_parts()
    gA, gWt = np.empty_like(tA), np.empty_like(tWt)

    def density(qA, qWt, M):
        if M.shape[0] == 0:
            return math.nan
        lp = dense_log_density(qA, qWt, M, X, Of, aA, rA, aWt, rWt, beta)
        if not math.isfinite(lp) or weight == 0.0:
            return lp
        v = copula.copula_value(flat_theta(qA, qWt))
        return lp + weight * v if math.isfinite(v) else math.nan

    M = copula_gradient(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, weight, parts, gA, gWt)
    return density, parts, density(tA, tWt, M), gA, gWt


def hmc_step_copula(tA, tWt, pA, pWt, grid, shapes, beta, imA, imWt, eps, n_leap, log_u,
                    copula, weight):
    """One HMC transition in place; returns ``(code, log_acc)`` as ``hmc_step_term``.

    ``grid``: the dense counts and offsets ``(X, Of)``; ``shapes``: ``(aA, rA, aWt, rWt)``;
    ``copula``: the :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula` whose log
    density, weighted ``weight``, is the rung's extra term (its exact value at the two ends,
    its surrogate field in the kicks). Codes: 0 accepted, 1 rejected (also on a non-finite
    trajectory, ``log_acc`` then ``-inf``), 2 the starting state is not finite.
    """
    X, Of = grid
    aA, rA, aWt, rWt = shapes
    density, parts, lp0, gA, gWt = _start(tA, tWt, grid, shapes, beta, copula, weight)
    if not math.isfinite(lp0):
        return 2, -math.inf
    qA, qWt = tA.copy(), tWt.copy()
    k0 = momentum(pA, pWt, imA, imWt)
    M = _trajectory(qA, qWt, pA, pWt, X, Of, aA, rA, aWt, rWt, beta, imA, imWt, eps,
                    int(n_leap), weight, parts, gA, gWt)
    lp = density(qA, qWt, M)
    if not math.isfinite(lp):
        return 1, -math.inf
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, kinetic(pA, pWt, imA, imWt), log_u)


@numba.njit(cache=True)
def copula_velocity(p, s, blocks, bcov, U, out):
    """``out = S (B + U U') S p``: the velocity of momentum ``p`` under the copula's mass.

    ``s (d,)``: the scales ``S`` (square roots of the diagonal inverse mass); ``blocks (m, k)``,
    ``bcov (m, k, k)`` and ``U (d, r)``: the copula's correlation ``B + U U'``. Returns
    ``p' out`` (twice the kinetic energy).
    """
    d = p.size
    sp = np.empty(d)
    for i in range(d):
        sp[i] = s[i] * p[i]
    m, k = blocks.shape
    for b in range(m):
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += bcov[b, i, j] * sp[blocks[b, j]]
            out[blocks[b, i]] = acc
    r = U.shape[1]
    u = np.zeros(r)
    for i in range(d):
        for f in range(r):
            u[f] += U[i, f] * sp[i]
    two_k = 0.0
    for i in range(d):
        acc = out[i]
        for f in range(r):
            acc += U[i, f] * u[f]
        out[i] = s[i] * acc
        two_k += p[i] * out[i]
    return two_k


@numba.njit(cache=True)
def _trajectory_mass(theta, p, tA, tWt, X, Of, aA, rA, aWt, rWt, beta, eps, n_leap, weight,
                     parts, s, blocks, bcov, U, gA, gWt):
    """``n_leap`` leapfrog steps on the flat ``theta, p`` under the copula's mass, in place.

    ``tA, tWt`` hold ``theta`` unflattened on entry and ``gA, gWt`` the gradient there.
    Returns ``(end means A W, p' v at the end)``; the means are empty on a non-finite value.
    """
    d = theta.size
    g, v = np.empty(d), np.empty(d)
    M = np.empty((0, 0))
    flat_into(gA, gWt, g)
    for _ in range(n_leap):
        for i in range(d):
            p[i] += 0.5 * eps * g[i]
        copula_velocity(p, s, blocks, bcov, U, v)
        for i in range(d):
            theta[i] += eps * v[i]
        unflat_into(theta, tA, tWt)
        M = copula_gradient(tA, tWt, X, Of, aA, rA, aWt, rWt, beta, weight, parts, gA, gWt)
        if M.shape[0] == 0:
            return M, 0.0
        flat_into(gA, gWt, g)
        for i in range(d):
            p[i] += 0.5 * eps * g[i]
    return M, copula_velocity(p, s, blocks, bcov, U, v)


def copula_momentum(copula, s, rng):
    """A momentum ``p ~ N(0, (S C S)^-1)`` for the copula's mass, ``C = B + U U'``.

    ``u ~ N(0, C)`` (:meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.draw_scores`),
    then ``p = S^-1 C^-1 u``, whose covariance is ``S^-1 C^-1 C C^-1 S^-1``.
    """
    return copula.solve(copula.draw_scores(rng)) / s


def hmc_step_copula_mass(tA, tWt, grid, shapes, beta, scale, eps, n_leap, log_u, copula,
                         weight, rng):
    """One HMC transition with the copula's correlation as the mass, in place.

    The same target and Metropolis test as :func:`hmc_step_copula`; the kinetic energy is
    ``p' S C S p / 2`` with ``C = B + U U'`` the copula's correlation and ``S = diag(scale)``
    (``scale``: the flat square roots of the diagonal inverse mass that
    :func:`hmc_step_copula` uses, in the copula's flat order). A constant mass keeps the
    leapfrog volume-preserving and reversible, so the transition leaves ``pi_b`` invariant
    (Neal 2011, section 5.4.1); the copula, fitted to the posterior's draws, holds the
    correlations along which the posterior is long (the scale and shear ridges of an NMF), so
    the trajectory moves along them instead of across. Returns ``(code, log_acc)`` as
    :func:`hmc_step_copula`.
    """
    X, Of = grid
    aA, rA, aWt, rWt = shapes
    density, parts, lp0, gA, gWt = _start(tA, tWt, grid, shapes, beta, copula, weight)
    if not math.isfinite(lp0):
        return 2, -math.inf
    p = copula_momentum(copula, scale, rng)
    v = np.empty_like(p)
    k0 = 0.5 * copula_velocity(p, scale, copula.blocks, copula.block_cov, copula.U, v)
    theta = flat_theta(tA, tWt)
    qA, qWt = tA.copy(), tWt.copy()
    M, two_k = _trajectory_mass(theta, p, qA, qWt, X, Of, aA, rA, aWt, rWt, beta, eps,
                                int(n_leap), weight, parts, scale, copula.blocks,
                                copula.block_cov, copula.U, gA, gWt)
    lp = density(qA, qWt, M)
    if not math.isfinite(lp):
        return 1, -math.inf
    return metropolis(tA, tWt, qA, qWt, lp0, k0, lp, 0.5 * two_k, log_u)
