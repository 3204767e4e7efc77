"""Exactness of the annealed mode jump (``bnmfzoo.inference.gaussian.modes._mode_jump``).

* **Joint-distribution test** (Geweke 2004's successive-conditional idea, one move): draw
  ``theta`` from the prior and ``X | theta``; ``theta`` is then an exact posterior draw given
  ``X``. One jump from ``theta`` (references fitted to short Gibbs runs on ``X``) must leave it
  an exact posterior draw, so over independent simulations the jumped ``theta'`` has the
  prior's marginals: ``tau ~ Gamma(alpha, beta)``, each entry of ``A`` and ``W`` Exponential.
  KS tests against those exact CDFs, Bonferroni at 1 % over the tested scalars (independent
  simulations: the nominal false-failure rate is at most 1 %). The same test rejects a
  deliberately wrong jump that always accepts the annealed proposal.
* **SBC** of Gibbs sweeps followed by a jump at every iteration (the kernel of
  ``[GibbsNMF(), ModeJumps(jump_every=1, n_anneal=2)]``, with two unmerged references fitted
  to short runs), with the harness of
  ``test_replica_exchange.py`` (label-invariant functions, chains to ESS 30, thinned by
  ``ceil(n / ESS)``, Bonferroni at 1 %). Slow (68 s); passed at its seed, 35.
  False-failure rate (``nice -n 15 python -m benchmarks.calibration.sbc_false_failure
  gibbs+jumps --seeds 1000:1033``, records in benchmarks/calibration/results/): 0 of 33 seeds
  (95% CI 0-10.6%), second level (KS of each scalar's p-values across seeds,
  Bonferroni-adjusted) p = 1; thinning median 6 (max 191), kept draws median 50 (min 29);
  60 s a seed. Few seeds: the interval does not show the nominal 1%.

The joint-distribution tests use independent simulations and KS tests against exact CDFs, so
their false-failure rate is the KS tests' size: at most 1 % (Bonferroni over 8 scalars).
Measured once over seeds 1000-1019 (the test's statistic, 1000 simulations each): 0 failures,
smallest minimum p-value 0.011 against the threshold 0.00125.
"""

import math

import numpy as np
import pytest
from scipy import stats
from test_replica_exchange import HYPER, MASK, D, N, _funcs, _prior

from bnmfzoo.diagnostics import sbc
from bnmfzoo.diagnostics.calibration import run_to_ess
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.modes import _mode_jump as mj


def _simulate(rng):
    p = _prior(rng, HYPER)
    X = p["A"] @ p["W"] + rng.normal(size=(D, N)) / np.sqrt(p["tau"])
    X[~MASK] = np.nan
    return p, X


def _references(state, obs, rng, n_fit=50):
    # two references from short runs (not merged): the move must be exact whatever they are
    return mj.discover_references(state, obs, HYPER, rng, n_starts=1, n_quench=20,
                                  n_fit=n_fit, merge=False)


def _jumped_draws(n_sims, seed, *, n_anneal=10, wrong=False):
    rng = np.random.default_rng(seed)
    gammas = mj.anneal_schedule(n_anneal)
    out, probs = [], []
    for _ in range(n_sims):
        p, X = _simulate(rng)
        obs = gc.observed_entries(X)
        st = gc.nmf_state(p["A"], p["W"], p["tau"], None, obs)
        refs = _references(st, obs, rng)
        if wrong:  # always accept the annealed proposal: a deliberately wrong move
            target = int(rng.integers(len(refs)))
            st, _ = mj.ais_forward(refs[target], obs, HYPER, gammas, rng)
            prob = 1.0
        else:
            st, prob, _, _ = mj.mode_jump(st, obs, HYPER, refs, gammas, rng)
        probs.append(prob)
        out.append(np.concatenate([[st.tau], st.A[:, 0], st.W[0]]))
    return np.array(out), np.array(probs)


def _marginal_pvalues(draws):
    p = [stats.kstest(draws[:, 0], stats.gamma(HYPER.alpha_tau, scale=1 / HYPER.beta_tau).cdf)
         .pvalue]
    p += [stats.kstest(draws[:, 1 + i], stats.expon(scale=1 / HYPER.lambda_A).cdf).pvalue
          for i in range(D)]
    p += [stats.kstest(draws[:, 1 + D + j], stats.expon(scale=1 / HYPER.lambda_W).cdf).pvalue
          for j in range(N)]
    return np.array(p)


def test_mode_jump_keeps_exact_posterior_draws_exact():
    """1000 simulations, ten annealing steps (the tempered kernels at ``g = (k / 10)^2`` are
    exercised; the move is exact for any number of steps)."""
    draws, probs = _jumped_draws(1000, 3)
    # the test has power only if the jump moves: the mean acceptance probability was 0.185
    # over 600 simulations (seed 3); half the proposals land nearer the other reference of
    # this one-mode posterior and are rejected for that
    assert np.mean(probs) > 0.1, np.mean(probs)
    p = _marginal_pvalues(draws)
    assert p.min() > 0.01 / p.size, p


@pytest.mark.slow
def test_a_jump_that_always_accepts_is_rejected():
    """Power of the test above (slow: it shows the test's power and guards no code the test
    above does not run; 47 s). At 300 simulations it caught the wrong jump at 1 of 5 seeds."""
    draws, _ = _jumped_draws(1000, 3, wrong=True)
    p = _marginal_pvalues(draws)
    assert p.min() < 0.01 / p.size, p


def test_annealed_tau_conditional_at_one_is_the_posterior_conditional():
    """At ``g = 1`` the reference's terms vanish: ``tau`` is drawn from
    ``Gamma(alpha + n/2, beta + SSE/2)`` (KS against it; false-failure rate 1e-3)."""
    rng = np.random.default_rng(0)
    p, X = _simulate(rng)
    obs = gc.observed_entries(X)
    st = gc.nmf_state(p["A"], p["W"], p["tau"], None, obs)
    ref = _references(st, obs, rng)[0]
    shape = HYPER.alpha_tau + 0.5 * obs.n_observed
    draws = []
    for _ in range(4000):
        x = gc.nmf_state(p["A"], p["W"], p["tau"], None, obs)
        mj._update_tau(x, obs, HYPER, ref, 1.0, rng)
        draws.append(x.tau)
    rate = HYPER.beta_tau + 0.5 * st.sse
    assert stats.kstest(draws, stats.gamma(shape, scale=1 / rate).cdf).pvalue > 1e-3


def test_weights_are_consistent_estimates_of_the_normalizer():
    """Forward and reverse annealed weights estimate the same normalizer: on one data set the
    mean of ``exp(log w)`` from q (forward) and the mean of ``exp(-log w)`` from posterior
    draws (reverse, an estimate of ``1 / Z``) agree within their Monte-Carlo errors."""
    rng = np.random.default_rng(7)
    p, X = _simulate(rng)
    obs = gc.observed_entries(X)
    st = gc.nmf_state(p["A"], p["W"], p["tau"], None, obs)
    ref = _references(st, obs, rng, n_fit=200)[0]
    gammas = mj.anneal_schedule(20)
    fwd = np.array([mj.ais_forward(ref, obs, HYPER, gammas, rng)[1] for _ in range(400)])
    for _ in range(200):  # posterior draws by Gibbs from the true parameters
        gc.nmf_sweep(st, obs, HYPER, rng)
    rev = []
    for _ in range(400):
        for _ in range(5):
            gc.nmf_sweep(st, obs, HYPER, rng)
        rev.append(mj.ais_reverse(st, ref, obs, HYPER, gammas, rng))
    rev = np.array(rev)
    m = fwd.max()
    log_z_fwd = m + math.log(np.mean(np.exp(fwd - m)))
    m2 = (-rev).max()
    log_z_rev = -(m2 + math.log(np.mean(np.exp(-rev - m2))))
    # both log-weight spreads are small here, so each estimate's error is about sd / sqrt(n)
    se = math.hypot(fwd.std() / math.sqrt(fwd.size), rev.std() / math.sqrt(rev.size))
    assert abs(log_z_fwd - log_z_rev) < 5 * se + 0.02, (log_z_fwd, log_z_rev, se)


def make_jump_sbc(*, n_anneal=2, ess_target=30):
    """``(simulate, infer)``: a Gibbs sweep then a mode jump at every iteration."""

    def simulate(rng):
        p, X = _simulate(rng)
        return _funcs(p, HYPER), X

    def infer(X, rng):
        obs = gc.observed_entries(X)
        p = _prior(rng, HYPER)
        st = gc.nmf_state(p["A"], p["W"], p["tau"], None, obs)
        refs = _references(st, obs, rng)
        gammas = mj.anneal_schedule(n_anneal)
        box = [st]

        def step():
            gc.nmf_sweep(box[0], obs, HYPER, rng)
            box[0], _, _, _ = mj.mode_jump(box[0], obs, HYPER, refs, gammas, rng)
            s = box[0]
            return _funcs({"A": s.A, "W": s.W, "tau": s.tau, "lambda_": None}, HYPER)

        for _ in range(50):
            step()
        return run_to_ess(step, ess_target=ess_target, min_draws=200, max_draws=25_600)

    return simulate, infer


@pytest.mark.slow
def test_sbc_gibbs_with_mode_jumps():
    simulate, infer = make_jump_sbc()
    result = sbc(simulate, infer, n_sims=100, thin="ess", random_seed=35, progressbar=False)
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)
