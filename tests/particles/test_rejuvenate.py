"""Particle rejuvenation by HMC under the model (fit_particles(rejuvenate=...))."""

import numpy as np
import pytest

from bnmfzoo.inference import fit_particles
from bnmfzoo.inference.particles.rejuvenate import ValueSpace, hmc_rejuvenate
from bnmfzoo.inference.particles.weighted import resolve_nmf_model
from bnmfzoo.models import exponential_gaussian, silf


def _normal(q):
    return -0.5 * float(q @ q), -q


def _final_states(q0s, seed, **kw):
    rng = np.random.default_rng(seed)
    return np.array([hmc_rejuvenate(_normal, q, rng=rng, **kw)[0] for q in q0s])


def test_hmc_kernel_leaves_the_target_invariant():
    """Chains started at exact N(0, I) draws, without adaptation, end at exact draws.

    400 independent chains in 3 dimensions: the final states are iid N(0, I) if the kernel is
    invariant, so each coordinate's mean has sd 1/20 and its variance sd sqrt(2/399) = 0.071;
    the bounds are 4 sd (all 6 statistics inside with probability > 0.999 for a correct
    kernel; 0 failures in 50 seeds measured, seeds 1000-1049 / 2000-2049).
    """
    rng = np.random.default_rng(0)
    q0 = rng.standard_normal((400, 3))
    out = _final_states(q0, 1, n_steps=5, n_leapfrog=5, step_size=0.7, n_adapt=0)
    assert np.abs(out.mean(0)).max() < 4 / 20
    assert np.abs(out.var(0, ddof=1) - 1).max() < 4 * np.sqrt(2 / 399)
    assert np.abs(out - q0).max() > 0.5  # the chains moved


def test_hmc_reaches_the_target_from_far_away():
    """From q = 8 (8 sd out) with step-size adaptation the chains end near N(0, I).

    200 chains, 200 transitions (100 adapting): tolerance 4 sd of the mean of 200 iid draws
    (0.28) and of their variance (0.4); 0 failures in 50 seeds measured (3000-3049).
    """
    out = _final_states(np.full((200, 2), 8.0), 2, n_steps=200, n_leapfrog=5, step_size=0.05)
    assert np.abs(out.mean(0)).max() < 4 / np.sqrt(200)
    assert np.abs(out.var(0, ddof=1) - 1).max() < 4 * np.sqrt(2 / 199)


def _X(seed=0, D=6, N=5, R=2):
    rng = np.random.default_rng(seed)
    return rng.exponential(size=(D, R)) @ rng.exponential(size=(R, N))


def test_value_space_matches_pymc():
    """Round trip and log density equal PyMC's own (value space, with the log-Jacobian)."""
    for model in (exponential_gaussian(_X(), 2, sigma=0.3), silf(_X(), 2, n_reference=3)):
        info = resolve_nmf_model(model)
        vs = ValueSpace(model, info.names)
        rng = np.random.default_rng(0)
        A = rng.random((6, 2)) + 0.1
        W = rng.random((2, 5)) + 0.1
        A, W = info.project(A, W)
        q = vs.to_values(A, W)
        A2, W2 = vs.from_values(q)
        np.testing.assert_allclose(A2, A, rtol=1e-10)
        np.testing.assert_allclose(W2, W, rtol=1e-10)
        point = dict(zip([v.name for v in model.value_vars], vs._split(q)))
        assert vs.logp_grad(q)[0] == pytest.approx(float(model.compile_logp()(point)), rel=1e-10)


def test_fit_particles_rejuvenate_records_diagnostics():
    model = exponential_gaussian(_X(), 2, sigma=0.3)
    dt = fit_particles(model, n_particles=4, init="random", rejuvenate=20, random_seed=0,
                       progressbar=False)
    d = dt["diagnostics"]
    assert int(d["rejuvenate_steps"]) == 20
    assert 0.0 < float(d["rejuvenate_accept"]) <= 1.0
    assert float(d["rejuvenate_cpu_time"]) > 0
    A = dt["particles"]["A"].values
    assert np.isfinite(A).all() and (A > 0).all()
    # same seed, same result
    dt2 = fit_particles(model, n_particles=4, init="random", rejuvenate=20, random_seed=0,
                        progressbar=False)
    np.testing.assert_array_equal(dt2["particles"]["A"].values, A)


def _quadrature_moments():
    g = np.linspace(1e-4, 8, 1200)
    a, w = np.meshgrid(g, g, indexing="ij")
    logp = -a - w - 0.5 * ((2.0 - a * w) / 0.5) ** 2
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = float((p * a * w).sum())
    return mean, float(np.sqrt((p * (a * w - mean) ** 2).sum()))


def test_gibbs_rejuvenation_matches_a_quadrature_posterior():
    """Exact Gibbs sweeps as the kernel: same check as the HMC one below (60 particles, 30
    sweeps each; 4 standard errors on the mean, 35 % on the sd). Measured over seeds
    100-119: 0 failures; z of the mean in [-1.9, 1.7], sd ratio in [0.85, 1.22]."""
    from bnmfzoo.inference.gaussian.gibbs.rejuvenation import GibbsRejuvenation

    mean, sd = _quadrature_moments()
    model = exponential_gaussian(np.array([[2.0]]), 1, sigma=0.5, lambda_=1.0)
    dt = fit_particles(model, n_particles=60, init="random", weights="uniform",
                       rejuvenate=GibbsRejuvenation(30), random_seed=0, progressbar=False)
    assert int(dt["diagnostics"]["rejuvenate_steps"]) == 30
    prod = dt["particles"]["A"].values[:, 0, 0] * dt["particles"]["W"].values[:, 0, 0]
    assert abs(prod.mean() - mean) < 4 * sd / np.sqrt(60)
    assert abs(prod.std(ddof=1) / sd - 1) < 0.35


def test_gibbs_rejuvenation_rejects_other_models():
    from bnmfzoo.inference.gaussian.gibbs.rejuvenation import GibbsRejuvenation

    with pytest.raises(TypeError, match="GibbsRejuvenation"):
        GibbsRejuvenation(3)(silf(_X(), 2, n_reference=3), np.ones((1, 6, 2)) / 6,
                             np.ones((1, 2, 5)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_sweeps"):
        GibbsRejuvenation(0)


def test_rejuvenated_particles_match_a_quadrature_posterior():
    """1 x 1 rank-1 model: E[A W] and sd(A W) of the particles against 2-D quadrature.

    ``x = 2``, ``sigma = 0.5``, Exp(1) priors: the posterior of ``(A, W)`` is a curved ridge
    ``A W ~ 2``. The 60 particles start at the NMF solution and each runs its own chain (60
    transitions, 30 adapting), so they are nearly independent draws: the mean of ``A W`` must
    be within 4 standard errors (sd / sqrt(60)) of the quadrature value and its sd within
    35 % (the sd of a 60-draw sample sd is about 9 %, so 35 % is ~4 of them). Without
    rejuvenation every particle sits at the mode and the sd is 0. Measured over seeds 100-119:
    0 failures; z of the mean in [-1.5, 2.4], sd ratio in [0.84, 1.15].
    """
    model = exponential_gaussian(np.array([[2.0]]), 1, sigma=0.5, lambda_=1.0)
    mean, sd = _quadrature_moments()
    dt = fit_particles(model, n_particles=60, init="random", weights="uniform",
                       rejuvenate={"n_steps": 60, "n_leapfrog": 5}, random_seed=0,
                       progressbar=False)
    prod = (dt["particles"]["A"].values[:, 0, 0] * dt["particles"]["W"].values[:, 0, 0])
    assert abs(prod.mean() - mean) < 4 * sd / np.sqrt(60)
    assert abs(prod.std(ddof=1) / sd - 1) < 0.35


@pytest.mark.parametrize("bad, err", [("yes", TypeError), (True, TypeError), (0, ValueError),
                                      ({"n_step": 3}, TypeError)])
def test_rejuvenate_bad_input(bad, err):
    model = exponential_gaussian(_X(), 2, sigma=0.3)
    with pytest.raises(err, match="rejuvenate"):
        fit_particles(model, n_particles=2, init="random", rejuvenate=bad, progressbar=False)


def _default_moments(seed):
    model = exponential_gaussian(np.array([[2.0]]), 1, sigma=0.5, lambda_=1.0)
    dt = fit_particles(model, n_particles=60, init="random", weights="uniform",
                       random_seed=seed, progressbar=False)
    prod = dt["particles"]["A"].values[:, 0, 0] * dt["particles"]["W"].values[:, 0, 0]
    return dt, prod


def test_default_rejuvenation_matches_a_quadrature_posterior():
    """The default (``rejuvenate="auto"``: 100 GibbsNMF sweeps per particle through PyMC's step
    interface) on the 1 x 1 model of the tests above: mean of ``A W`` within 4 standard errors
    of the quadrature value, sd within 35 % (same reasoning as above: 60 nearly independent
    chains). Measured over seeds 100-119 once: 0 failures; z of the mean in [-1.4, 1.9], sd
    ratio in [0.86, 1.21]."""
    mean, sd = _quadrature_moments()
    dt, prod = _default_moments(0)
    assert dt.attrs["rejuvenate"] == "GibbsNMF"
    assert int(dt["diagnostics"]["rejuvenate_steps"]) == 100
    assert abs(prod.mean() - mean) < 4 * sd / np.sqrt(60)
    assert abs(prod.std(ddof=1) / sd - 1) < 0.35


def test_default_kernel_follows_the_model():
    from bnmfzoo.inference import pymc_default_steps

    X = _X()
    kw = {"n_particles": 3, "init": "random", "random_seed": 1, "progressbar": False}
    # tau ~ Gamma is a free variable: GibbsNMF samples it too; the particles keep the
    # conditional mode of tau given their final A and W
    dt = fit_particles(exponential_gaussian(X, 2), **kw)
    assert dt.attrs["rejuvenate"] == "GibbsNMF"
    assert "tau" in dt["particles"] and np.isfinite(dt["particles"]["tau"].values).all()
    # no step with exact conditionals: the paper's Algorithm 1, and the DataTree says so
    dt = fit_particles(silf(X, 2, n_reference=3), **kw)
    assert dt.attrs["rejuvenate"].startswith("none")
    assert "rejuvenate_steps" not in dt["diagnostics"]
    with pymc_default_steps():
        dt = fit_particles(exponential_gaussian(X, 2, sigma=0.3), **kw)
    assert dt.attrs["rejuvenate"].startswith("none")
    with pytest.raises(TypeError, match="exact"):
        fit_particles(silf(X, 2, n_reference=3), rejuvenate={"sweeps": 5}, **kw)
    # explicit None: the paper's algorithm even where Gibbs exists; same seed, same particles
    a = fit_particles(exponential_gaussian(X, 2, sigma=0.3), rejuvenate=None, **kw)
    b = fit_particles(exponential_gaussian(X, 2, sigma=0.3), rejuvenate=None, **kw)
    assert a.attrs["rejuvenate"] == "none"
    np.testing.assert_array_equal(a["particles"]["A"].values, b["particles"]["A"].values)
    c = fit_particles(exponential_gaussian(X, 2, sigma=0.3), **kw)
    d = fit_particles(exponential_gaussian(X, 2, sigma=0.3), **kw)
    np.testing.assert_array_equal(c["particles"]["A"].values, d["particles"]["A"].values)
    assert not np.array_equal(a["particles"]["A"].values, c["particles"]["A"].values)
