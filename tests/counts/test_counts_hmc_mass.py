"""The low-rank correction of HMC's mass (:mod:`bnmfzoo.inference.counts.gibbs._hmc_mass`):
the momentum's law, the leapfrog's reversibility and order with that mass, and the fit."""

import numpy as np
import pytest

from bnmfzoo.inference.counts.gibbs._hmc_mass import (
    exposure_basis,
    lowrank_mass,
    lowrank_momentum,
    lowrank_velocity,
    spd_mean,
)
from bnmfzoo.inference.counts.gibbs._hmc_moves import _grad, hmc_trajectory

D, N, K = 4, 6, 2
P = D * K + N * K


def _case(seed=0, r=3):
    """Counts, cells (with row offsets), priors, a diagonal inverse mass and ``r`` directions."""
    rng = np.random.default_rng(seed)
    A, W = rng.gamma(2.0, 1.0, (D, K)), rng.gamma(2.0, 1.0, (K, N))
    rows, cols = (a.ravel().astype(np.int64) for a in np.indices((D, N)))
    offs = np.array([0.5, 1.0, 2.0, 1.0])[rows]
    x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
    cells = (rows, cols, offs, x, np.zeros((0, 0)), np.zeros((0, 0)))
    prior = (np.full((D, K), 2.0), np.ones((D, K)), np.full((N, K), 2.0), np.ones((N, K)))
    im = rng.uniform(0.05, 0.2, (D, K)), rng.uniform(0.05, 0.2, (N, K))
    U = np.linalg.qr(rng.standard_normal((P, r)))[0].T
    dirs = (np.ascontiguousarray(U[:, :D * K]), np.ascontiguousarray(U[:, D * K:]),
            np.array([6.0, 0.2, 15.0])[:r])
    return np.log(A), np.ascontiguousarray(np.log(W).T), cells, prior, im, dirs, U


def _inv_mass(im, U, lam):
    s = np.sqrt(np.concatenate([im[0].ravel(), im[1].ravel()]))
    return s[:, None] * (np.eye(P) + U.T @ np.diag(lam - 1.0) @ U) * s[None, :]


def _run(tA, tWt, z, cells, prior, im, dirs, eps, n):
    """A trajectory (always accepted): the end state and momentum, and ``H`` at both ends."""
    qA, qWt = tA.copy(), tWt.copy()
    zA, zWt = z[:D * K].reshape(D, K).copy(), z[D * K:].reshape(N, K).copy()
    g = np.empty((D, K)), np.empty((N, K))
    code, _, steps = hmc_trajectory(qA, qWt, zA, zWt, *cells, *prior, *im, eps, n, -np.inf, *g,
                                    False, np.zeros((0, 0)), np.zeros((0, 0)), *dirs)
    assert code == 0 and steps == n
    p = np.concatenate([zA.ravel(), zWt.ravel()])  # the kernel leaves the end momentum in z

    def lp(a, w):
        return _grad(a, w, *cells[:6], *prior, np.empty((D, K)), np.empty((N, K)),
                     np.empty((D, K)), np.empty((N, K)), True)

    Minv = _inv_mass(im, np.concatenate(dirs[:2], axis=1), dirs[2])
    h0 = -lp(tA, tWt) + 0.5 * z @ z
    h1 = -lp(qA, qWt) + 0.5 * p @ Minv @ p
    return qA, qWt, p, Minv, h1 - h0


def test_momentum_has_the_mass_as_covariance_and_velocity_is_the_inverse():
    """``p = M^1/2 z`` (so ``cov p = M``) and ``v = M^-1 p`` with ``p . v / 2`` returned, against
    dense linear algebra on a random orthonormal ``U`` (deterministic, to 1e-10)."""
    tA, tWt, cells, prior, im, dirs, U = _case()
    Minv = _inv_mass(im, U, dirs[2])
    sA, sWt = np.sqrt(im[0]), np.sqrt(im[1])
    cols = []
    for i in range(P):  # M^1/2 column by column
        e = np.zeros(P)
        e[i] = 1.0
        zA, zWt = e[:D * K].reshape(D, K).copy(), e[D * K:].reshape(N, K).copy()
        lowrank_momentum(zA, zWt, sA, sWt, *dirs)
        cols.append(np.concatenate([zA.ravel(), zWt.ravel()]))
    Mh = np.array(cols).T
    assert np.allclose(Mh @ Mh.T @ Minv, np.eye(P), atol=1e-10)
    p = np.random.default_rng(1).standard_normal(P)
    vA, vWt = np.empty((D, K)), np.empty((N, K))
    k = lowrank_velocity(p[:D * K].reshape(D, K).copy(), p[D * K:].reshape(N, K).copy(), sA,
                         sWt, *dirs[:2], dirs[2] - 1.0, vA, vWt, np.empty(D * K),
                         np.empty(N * K), np.empty(3))
    v = np.concatenate([vA.ravel(), vWt.ravel()])
    assert np.allclose(v, Minv @ p, rtol=1e-10, atol=1e-12)
    assert abs(k - 0.5 * p @ Minv @ p) < 1e-10 * abs(k)


def test_leapfrog_with_the_lowrank_mass_is_reversible_and_second_order():
    """From the end of a 40-step trajectory with the momentum negated the leapfrog returns to
    its start (to 1e-9); at a fixed trajectory time, halving the step divides the energy error
    by about 4 (3-5.5 on each of five starts; a velocity or kinetic energy that ignored the
    low-rank part, or used it in one place only, leaves ``H`` non-conserved at first order or
    not at all). Deterministic."""
    tA, tWt, cells, prior, im, dirs, U = _case()
    rng = np.random.default_rng(2)
    z = rng.standard_normal(P)
    qA, qWt, p, Minv, _ = _run(tA, tWt, z, cells, prior, im, dirs, 0.05, 40)
    # z' with M^1/2 z' = -p: z' = -M^-1/2 p, M^-1/2 = (I + U (L^1/2 - 1) U^T) D^1/2
    s = np.sqrt(np.concatenate([im[0].ravel(), im[1].ravel()]))
    back = -(np.eye(P) + U.T @ np.diag(np.sqrt(dirs[2]) - 1.0) @ U) @ (s * p)
    rA, rWt, _, _, _ = _run(qA, qWt, back, cells, prior, im, dirs, 0.05, 40)
    assert np.max(np.abs(rA - tA)) < 1e-9 and np.max(np.abs(rWt - tWt)) < 1e-9
    ratios = []
    for seed in range(5):
        z = np.random.default_rng(10 + seed).standard_normal(P)
        e1 = _run(tA, tWt, z, cells, prior, im, dirs, 0.02, 20)[-1]
        e2 = _run(tA, tWt, z, cells, prior, im, dirs, 0.01, 40)[-1]
        ratios.append(e1 / e2)
    assert all(3.0 < r < 5.5 for r in ratios), ratios


def test_spd_mean_and_the_fit_find_a_planted_wide_direction():
    """:func:`spd_mean` is the geometric mean (equal to either input when they agree; the
    elementwise one for diagonal inputs); :func:`lowrank_mass` on Gaussian states whose
    whitened covariance has variance 9 along one total-exposure direction (gradients the
    Gaussian's) finds it with ``lam`` within 30 % of 9 and leaves out a unit-variance case
    (deterministic seeds; 400 states)."""
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert np.allclose(spd_mean(a, a), a)
    assert np.allclose(spd_mean(np.diag([4.0, 1.0]), np.diag([1.0, 9.0])), np.diag([2.0, 3.0]))
    rng = np.random.default_rng(3)
    theta0 = rng.normal(0.0, 0.1, P)
    f = exposure_basis(theta0[None, :], D, N, K)
    u = f[0] + f[K]  # the first component's log total exposure
    u = u / np.linalg.norm(u)
    cov = np.eye(P) + 8.0 * np.outer(u, u)
    th = theta0 + rng.multivariate_normal(np.zeros(P), cov, size=400)
    gr = -(th - theta0) @ np.linalg.inv(cov)
    U, lam = lowrank_mass(th, gr, np.ones(P), "exposures", D, N, K)
    assert lam.size >= 1
    i = np.argmax(lam)
    assert abs(lam[i] / 9.0 - 1.0) < 0.3, lam
    assert abs(abs(U[i] @ u) - 1.0) < 0.05
    th = theta0 + rng.standard_normal((400, P))
    U, lam = lowrank_mass(th, -(th - theta0), np.ones(P), "exposures", D, N, K)
    assert lam.size == 0, lam


@pytest.mark.parametrize("rule", ["exposures", "span"])
def test_lowrank_mass_guards(rule):
    """Too few or non-finite states give no correction; the directions are orthonormal."""
    rng = np.random.default_rng(4)
    th, gr = rng.standard_normal((3, P)), rng.standard_normal((3, P))
    assert lowrank_mass(th, gr, np.ones(P), rule, D, N, K)[1].size == 0
    th, gr = rng.standard_normal((60, P)), rng.standard_normal((60, P))
    th[:, 0] *= 10.0
    th[5, 3] = np.nan
    assert lowrank_mass(th, gr, np.ones(P), rule, D, N, K)[1].size == 0
    th[5, 3] = 0.0
    U, lam = lowrank_mass(th, gr, np.ones(P), rule, D, N, K)
    assert np.allclose(U @ U.T, np.eye(lam.size), atol=1e-10)
    with pytest.raises(ValueError):
        lowrank_mass(th, gr, np.ones(P), "full", D, N, K)
