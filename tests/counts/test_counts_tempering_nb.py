"""Replica exchange of the negative-binomial model: the tempered sweep and the cold chain."""

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from _counts_cases import batch_mcse
from _quadrature import NB_CELL_LOG_Z, nb_cell_log_z
from scipy.special import gammaln

import bnmfzoo as bz
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep
from bnmfzoo.inference.counts.tempering._rounding import TemperedCounts
from bnmfzoo.inference.tempering import ReplicaSet, exchange_step


def _problem(model):
    return problem_from_factorization(bz.models.recognize(model))


def test_tempered_sweep_matches_quadrature():
    """A chain of tempered sweeps at beta = 0.55 on one cell (x = 6, so ``beta x = 3.3``:
    ``n = 3``, ``f = 0.3``; K = 1, learned alpha) against the tempered marginal of
    ``(A, W, alpha)`` by quadrature on a 3-D log grid:

    ``p(A) p(W) p(alpha) (0.7 NB(3; r, p) + 0.3 NB(4; r, p))``, ``r = alpha beta A W``,
    ``p = alpha / (1 + alpha)``.

    Means of A W, log alpha and log A within 4.5 batch-means MCSE (20 batches of 30,000
    sweeps; 3 comparisons: a correct sweep fails with probability ~2e-5 plus batch-means
    error). Quadrature error (grids 100^3, 140^3, and 200^3 on wider ranges agree to 2e-9 on
    all three means, checked for this density) is negligible against the MCSE (~0.01). Measured
    with ``_quadrature_z(seed)`` for seeds 0-19 (26 Nov 2026): 0 failures, per-seed max |z|
    median 2.40, largest 3.28. About 6-9 CPU s.
    """
    _quadrature_z(21)


def _quadrature_z(seed):
    x, beta, a, b, a0, b0 = 6, 0.55, 2.0, 1.0, 4.0, 1.0
    prob = _problem(bz.models.negative_binomial(np.array([[x]]), 1, a=a, b=b,
                                                alpha_prior=(a0, b0)))
    fam = TemperedCounts(prob)
    rng = np.random.default_rng(seed)
    state = initial_state(prob, rng)
    draws = []
    for t in range(30_500):
        fam.sweep(state, beta, rng)
        if t >= 500:
            AW = float(state["A"][0, 0] * state["W"][0, 0])
            draws.append((AW, math.log(state["alpha"]), math.log(state["A"][0, 0])))
    draws = np.array(draws)
    g = np.linspace(-9.0, 4.0, 140)
    u, v, w = np.meshgrid(g, g, np.linspace(-4.0, 4.0, 140), indexing="ij")
    A, W, al = np.exp(u), np.exp(v), np.exp(w)
    r = al * beta * A * W
    n = math.floor(beta * x)
    f = beta * x - n

    def log_nb(k):
        return (gammaln(k + r) - gammaln(r) - gammaln(k + 1.0) + r * np.log(al / (1 + al))
                - k * np.log1p(al))

    logd = (a * u - b * A + a * v - b * W + a0 * w - b0 * al  # priors, log-grid Jacobians
            + np.logaddexp(math.log(1 - f) + log_nb(n), math.log(f) + log_nb(n + 1)))
    p = np.exp(logd - logd.max())
    p /= p.sum()
    ref = np.array([np.sum(p * A * W), np.sum(p * w), np.sum(p * u)])
    z = (draws.mean(0) - ref) / batch_mcse(draws)
    assert np.all(np.abs(z) <= 4.5), (draws.mean(0), ref, z)
    return z


def test_nb_replica_exchange_cold_chain_matches_gibbs():
    """Replica exchange of the NB model (3 rungs, learned alpha): the cold chain's means of
    A @ W (12 entries) and alpha agree with plain NB Gibbs within 4.5 joint batch-means MCSE.
    13 comparisons: a correct pair fails with probability < 1e-4 under normality, more with
    batch-means error at 20 batches. Measured with ``_cold_vs_gibbs(seed)`` for seeds 0-19
    (26 Nov 2026, ``TemperedCounts``): 0 failures; per-seed max |z| median 1.85, largest 3.12.
    About 5 CPU s.
    """
    _cold_vs_gibbs(7)


def _cold_vs_gibbs(seed, n_exchange=4200, n_gibbs=8200):
    X = np.random.default_rng(6).negative_binomial(3.0, 0.5, size=(4, 3))
    prob = _problem(bz.models.negative_binomial(X, 2, a=2.0, alpha_prior=(4.0, 1.0)))
    rng = np.random.default_rng(seed)
    fam = TemperedCounts(prob)
    betas = np.array([1.0, 0.6, 0.35])
    rs = ReplicaSet.new([initial_state(prob, rng) for _ in betas])
    cold, plain = [], []
    for t in range(n_exchange):
        exchange_step(fam, rs, betas, rng)
        if t >= 200:
            s0 = rs.states[0]
            cold.append(np.append((s0["A"] @ s0["W"]).ravel(), s0["alpha"]))
    s = initial_state(prob, rng)
    for t in range(n_gibbs):
        s = gibbs_sweep(prob, s, rng)
        if t >= 200:
            plain.append(np.append((s["A"] @ s["W"]).ravel(), s["alpha"]))
    cold, plain = np.array(cold), np.array(plain)
    se = np.sqrt(batch_mcse(cold) ** 2 + batch_mcse(plain) ** 2)
    z = (cold.mean(0) - plain.mean(0)) / se
    assert np.all(np.abs(z) <= 4.5), z
    return z


def test_nb_replica_exchange_step_in_pm_sample():
    """``ReplicaExchangePoisson`` on a learned-dispersion NB model through ``pm.sample``:
    every free variable (A, W, alpha) is assigned to it and alpha moves."""
    X = np.random.default_rng(0).negative_binomial(3.0, 0.5, size=(5, 4))
    model = bz.models.negative_binomial(X, 2)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too short a chain for round trips
        step = bz.inference.ReplicaExchangePoisson(betas=[1.0, 0.5], anneal_start=0)
        idata = pm.sample(draws=30, tune=5, chains=1, step=step, progressbar=False,
                          random_seed=0, compute_convergence_checks=False)
    alpha = idata.posterior["alpha"].values.ravel()
    assert np.unique(alpha).size > 10
    assert idata.sample_stats["beta_1"].values.ravel()[0] == 0.5


@pytest.mark.slow
def test_sbc_nb_replica_exchange():
    """SBC (100 simulations, ESS-thinned cold chains) of NB replica exchange (3 rungs) on the
    3 x 4, K = 2 case of ``tests/_counts_cases.py`` with a learned dispersion: scalars A @ W
    and alpha, Bonferroni level 0.01 (a correct sampler fails at most ~1% of seeds); measured
    over seeds 1-8 (26 Nov 2026): 8/8 passed, smallest p 0.050 against the threshold 0.00077.
    About 17-28 CPU s.
    """
    from _counts_cases import exchange_sweep, run_case

    result = run_case("nb", 1, sweep=exchange_sweep(np.array([1.0, 0.6, 0.35]),
                                                    TemperedCounts))
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


# ------------------------------------------------------------------------------------------
# the SMC from the prior along the rounding path: the batched log target and the evidence
# ------------------------------------------------------------------------------------------

def _batch_case(family):
    X = np.array([[0, 3, 7, 1], [12, 0, 2, 5], [1, 1, 0, 30]])
    model = (bz.models.negative_binomial(X, 2, row_offset=[1.0, 0.5, 2.0]) if family == "nb"
             else bz.models.poisson(X, 2, row_offset=[1.0, 0.5, 2.0]))
    fam = TemperedCounts(_problem(model))
    rng = np.random.default_rng(7)
    states = [initial_state(fam.problem, rng) for _ in range(5)]
    for s, b in zip(states, (0.01, 0.2, 0.5, 0.9, 1.0), strict=True):
        fam.sweep(s, b, rng)
    return fam, states


@pytest.mark.parametrize("family", ["nb", "poisson"])
def test_batched_log_target_is_the_per_state_one(family):
    """``log_target_batch`` (what the SMC's search for the next beta evaluates) equals
    :meth:`TemperedCounts.log_target` state by state, at betas where some ``beta x`` is an
    integer (``f = 0``), tiny, in between and 1, in any order (the kept rung must follow
    ``beta``). Deterministic: the tolerance is rounding (means linear in beta are scaled
    instead of recomputed)."""
    fam, states = _batch_case(family)
    at = fam.log_target_batch(states)
    for beta in (0.5, 1e-6, 0.37, 1.0, 0.5, 0.999, 0.2):
        one = np.array([fam.log_target(s, beta) for s in states])
        assert np.allclose(at(beta), one, rtol=1e-12, atol=1e-9), (beta, at(beta), one)
        assert np.allclose(fam.log_target_batch(states)(beta), one, rtol=1e-12, atol=1e-9)


def test_kept_rung_is_the_rung_of_the_beta_asked():
    """The rung kept between calls is recomputed when beta changes: sweeps alternating between
    two betas use each beta's rounding (a stale rung would draw the other beta's counts)."""
    fam, _ = _batch_case("nb")
    for beta in (0.3, 0.7, 0.3, 1e-3, 0.7):
        kept, fresh = fam._rung(beta), fam._new_rung(beta)
        assert np.array_equal(kept.n, fresh.n) and np.array_equal(kept.log_f, fresh.log_f)
        assert np.array_equal(kept.offsets_nz, fresh.offsets_nz)


def test_nb_smc_from_the_prior_log_z_matches_quadrature():
    """Adaptive SMC from the prior along the NB family's path (the Gamma-mixed power path of
    ``counts.tempering._power_nb``, batched log target, the next beta searched from the
    previous step) on one cell, x = 6, learned alpha: 8 runs x 100 particles x 2 sweeps,
    ``|mean - exact| <= 4 se`` with the exact log Z by quadrature (:data:`NB_CELL_LOG_Z`).
    ``P(|t_7| > 4) = 0.5 %`` nominal; measured with ``_nb_smc_z(seed)`` over seeds 0-39 on
    this path (30 Nov 2026): 0 failures of 40, largest |z| 1.92, mean z 0.19, sd 0.91 (on the
    rounding path, 29 Nov: 0 of 40, largest 3.23). About 3 CPU s."""
    z = _nb_smc_z(0)
    assert abs(z) <= 4.0, z


def _nb_smc_z(seed):
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering import log_z_summary, smc_runs

    fam = family_of_model(bz.models.negative_binomial(np.array([[6]]), 1, a=2.0, b=1.0,
                                                      alpha_prior=(4.0, 1.0)))
    mean, se, _ = log_z_summary(smc_runs(fam.tempered, fam.draw_prior, 8, 100, seed,
                                         n_moves=2))
    return (mean - NB_CELL_LOG_Z) / se


def test_the_quadrature_constant_is_the_grids():
    """:data:`NB_CELL_LOG_Z` is what the grid gives (finer and wider grids: its comment)."""
    assert abs(nb_cell_log_z() - NB_CELL_LOG_Z) < 1e-8


def test_the_smc_searches_the_next_beta_in_few_batched_evaluations():
    """On the rounding path the SMC evaluates every particle's log target only through
    ``log_target_batch``, at most 14 trial betas per step on average (the plain bisection to
    1e-10 takes about 35: the per-step cost on a 50 x 25 NB matrix was 56 % such evaluations).
    Deterministic (counts, no timing)."""
    from bnmfzoo.inference.tempering import smc

    fam, _ = _batch_case("nb")
    calls = {"batch": 0, "one": 0}

    class Counted:
        dimension = fam.dimension

        def sweep(self, s, b, rng):
            fam.sweep(s, b, rng)

        def loglik(self, s):
            return fam.loglik(s)

        def copy(self, s):
            return fam.copy(s)

        def log_target(self, s, b):
            calls["one"] += 1
            return fam.log_target(s, b)

        def log_target_batch(self, states):
            f = fam.log_target_batch(states)

            def at(b):
                calls["batch"] += 1
                return f(b)

            return at

    def prior(rng):
        return initial_state(fam.problem, rng)

    run = smc(Counted(), prior, 20, np.random.default_rng(3), n_moves=1)
    steps = len(run.betas) - 1
    assert calls["one"] == 0 and steps > 10
    assert calls["batch"] / steps <= 14, (calls, steps)
