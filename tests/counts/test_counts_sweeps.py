"""Compiled multi-sweep kernel of the Poisson Gibbs sampler and its exact group moves."""

import dataclasses

import numpy as np
import pymc as pm
import pytest
from _counts_cases import run_case
from scipy import stats

import bnmfzoo as bz
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
from bnmfzoo.inference.counts.gibbs._moves import group_moves, rescale_into, shear_into
from bnmfzoo.inference.counts.gibbs._moves import problem_arrays as _arrays
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.kernels import gig_sample, seed_state


@pytest.mark.parametrize("p, b", [(0.0, 0.05), (0.5, 0.6), (4.0, 1.0), (-3.0, 0.4),
                                  (-75.0, 300.0)])
def test_gig_matches_scipy(p, b):
    """The xoshiro-driven GIG sampler against SciPy's CDF: KS over 5,000 draws, p > 1e-3
    (five cases: false-failure probability 0.5%). The cases cover the three methods of
    Hörmann & Leydold (2014) and p < 0 (inversion); (-75, 300) is the regime of the rescaling
    move on the SBS96 catalogues (D a - N a = 21 - 96)."""
    x = gig_sample(p, b, 5000, np.random.default_rng(3))
    assert stats.kstest(x, stats.geninvgauss(p, b).cdf).pvalue > 1e-3


D, N, K = 3, 4, 2
A_SHAPE, A_RATE, W_SHAPE, W_RATE = 2.0, 1.5, 0.7, 0.8


def _prior_problem():
    """A 3 x 4, K = 2 problem whose A and W priors differ (so P = 6 - 2.8 != 0)."""
    prob = problem_from_factorization(bz.models.recognize(bz.models.poisson(np.ones((D, N)),
                                                                            K)))
    return dataclasses.replace(prob, aA=np.full((D, K), A_SHAPE), bA=np.full((D, K), A_RATE),
                               aW=np.full((K, N), W_SHAPE), bW=np.full((K, N), W_RATE))


@pytest.mark.parametrize("move", ["rescale", "shear"])
def test_group_moves_keep_the_prior(move):
    """Each group move leaves the prior invariant, hence (its kernel never reads the likelihood,
    which is constant along the move's orbits) every posterior of a likelihood in ``A @ W``.

    20,000 independent prior draws, each moved 3 times; KS of A[0, 0], A[0, 1], W[0, 2],
    W[1, 3], sum_d A[d, 0], sum_n W[0, n] and sum_n W[1, n] against their exact Gamma laws,
    each at level 1e-4 (7 tests: false-failure probability 7e-4). A rescaling move without
    the Jacobian / Haar factor (P off by D - N) moves the scale sums by ~10% (KS p ~ 0).
    About 1 CPU s.
    """
    prob = _prior_problem()
    arrs = _arrays(prob)
    rng = np.random.default_rng(11)
    reps = 20_000
    A = rng.gamma(A_SHAPE, 1 / A_RATE, (reps, D, K))
    Wt = rng.gamma(W_SHAPE, 1 / W_RATE, (reps, N, K))
    bA, bWt = np.full((D, K), A_RATE), np.full((N, K), W_RATE)
    xs = seed_state(rng)
    for r in range(reps):
        a, w = A[r], Wt[r]
        for _ in range(3):
            if move == "rescale":
                assert rescale_into(a, w, bA, bWt, arrs["P"], xs) == 0
            else:
                shear_into(a, w, arrs["aA"], bA, arrs["aWt"], bWt, xs)
    checks = [(A[:, 0, 0], A_SHAPE, A_RATE), (A[:, 0, 1], A_SHAPE, A_RATE),
              (Wt[:, 2, 0], W_SHAPE, W_RATE), (Wt[:, 3, 1], W_SHAPE, W_RATE),
              (A[:, :, 0].sum(1), D * A_SHAPE, A_RATE),
              (Wt[:, :, 0].sum(1), N * W_SHAPE, W_RATE),
              (Wt[:, :, 1].sum(1), N * W_SHAPE, W_RATE)]
    pvals = [stats.kstest(x, stats.gamma(a, scale=1 / b).cdf).pvalue for x, a, b in checks]
    assert min(pvals) > 1e-4, pvals


def test_group_moves_keep_a_times_w():
    """Both moves change the factors but not ``A @ W`` (any family, through ``group_moves``)."""
    X = np.random.default_rng(0).poisson(3.0, size=(5, 6))
    prob = problem_from_factorization(bz.models.recognize(bz.models.negative_binomial(X, 3)))
    rng = np.random.default_rng(1)
    s = initial_state(prob, rng)
    t = group_moves(prob, s, rng)
    assert not np.allclose(s["A"], t["A"]) and not np.allclose(s["W"], t["W"])
    assert np.allclose(s["A"] @ s["W"], t["A"] @ t["W"], rtol=1e-10)


@pytest.mark.parametrize("case", ["poisson", "poisson-missing-offsets",
                                  pytest.param("poisson-ard", marks=pytest.mark.slow)])
def test_sbc_compiled_sweeps(case):
    """SBC (100 simulations, ESS-thinned) of the compiled sweep with both group moves.

    The 3 x 4, K = 2 cases of ``tests/_counts_cases.py``: plain; missing cell + row offsets +
    sparse input; ARD rates (slow, ~45 s). Bonferroni level 0.01 over the tested scalars, so
    a correct sampler fails about 1% of seeds; measured over seeds 2-9 (26 Nov 2026): 0/8
    false failures for each fast case. 3-10 CPU s each.
    """
    result = run_case(case, 1, sweep=lambda p, s, r: gibbs_sweeps(p, s, r, 1))
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


def test_sbc_nb_sweep_with_group_moves():
    """SBC of what ``GibbsPoisson`` runs per sweep for the negative binomial (the Python sweep,
    then both group moves through ``group_moves``), learned dispersion; 3 x 4, K = 2, 100
    simulations, Bonferroni level 0.01 (about 1% false failures; 0/4 over seeds 2-5 on 26 Nov
    2026). About 10 CPU s.
    """
    from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep

    result = run_case("nb", 1, sweep=lambda p, s, r: group_moves(p, gibbs_sweep(p, s, r), r))
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


def test_sweeps_guard_and_arguments():
    """Non-finite factors raise; bad ``n_sweeps`` / ``sweeps_per_draw`` are ValueErrors; the
    step's default number of sweeps is the deterministic rule's."""
    X = np.random.default_rng(2).poisson(2.0, size=(6, 5))
    model = bz.models.poisson(X, 2)
    prob = problem_from_factorization(bz.models.recognize(model))
    rng = np.random.default_rng(0)
    s = initial_state(prob, rng)
    bad = dict(s, A=np.where(np.arange(2) == 0, np.nan, s["A"]))
    with pytest.raises(FloatingPointError, match="non-finite"):
        gibbs_sweeps(prob, bad, rng, 2)
    with pytest.raises(ValueError, match="n_sweeps"):
        gibbs_sweeps(prob, s, rng, 0)
    with model:
        with pytest.raises(ValueError, match="sweeps_per_draw"):
            bz.inference.GibbsPoisson(sweeps_per_draw=0)
        step = bz.inference.GibbsPoisson(sweeps_per_draw=3, rng=1)
        assert step.sweeps_per_draw == 3 and step.rescale and step.shear
        only_a = bz.inference.GibbsPoisson(vars=[model["A"]], rng=1)
        assert not (only_a.rescale or only_a.shear)  # W is not ours to move
        idata = pm.sample(draws=20, tune=5, chains=1, step=step, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    assert np.isfinite(idata.sample_stats["loglik"]).all()
