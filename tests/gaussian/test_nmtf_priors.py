"""GibbsNMTF on user-written tri-factorization models with HalfNormal, TruncatedNormal(lower=0),
per-entry Exponential and Gamma-rate priors on F, S, G (issue 18, item 2).

Each configuration is a tiny ``pm.Model`` written in PyMC syntax; :func:`recognize` reads it and
:func:`nmtf_plan` turns it into the numeric plan GibbsNMTF runs (``prior_nmtf_sweep``). The prior
is simulated here independently, in NumPy, from the model as written, so a misread parameter
fails the SBC. Threshold: ``SBCResult.passed(alpha=0.01)`` (Bonferroni over the KS tests of every
tested scalar); each simulation's chain runs until the smallest bulk/tail ESS of its tested
quantities reaches 30 and is thinned by ``ceil(n / ESS)`` (``sbc(thin="ess")``).

Tested quantities: ``F S G^T`` and ``tau``; for "mixed", whose priors have no label symmetry
(S's exponential rates differ by entry), also the raw entries of F, S and G (without them the
SBC has little power: doubling the prior precision of F and G passed 3 of 3 seeds on ``F S G^T``
and ``tau`` alone, and fails with p < 3e-7 with them); for "rates_fixed_sigma", whose factors
are exchangeable a priori (label swaps are crossed slowly), the Gamma rates, sorted over the
factors, instead of raw entries. The rate priors are tight (Gamma(10, 10), Gamma(8, 6)) so the
chain moves quickly along the scale ridge ``(F c, S / c)``: with Gamma(4, 4) and Gamma(3, 2) a
seed took 111 s instead of 53 s (and passed).
"""

import logging

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from bnmfzoo.diagnostics import sbc
from bnmfzoo.diagnostics.calibration import run_to_ess
from bnmfzoo.inference import GibbsNMTF
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.priors._gibbs_prior_nmtf import nmtf_plan
from bnmfzoo.inference.gaussian.priors._prior_nmtf import prior_nmtf_sweep
from bnmfzoo.models import recognize

D, N, K, L = 4, 3, 2, 2
MASK = np.ones((D, N), dtype=bool)
MASK[0, 1] = False  # a held-out entry never enters the likelihood
S_RATES = np.array([[0.7, 1.5], [1.2, 2.0]])  # per-entry exponential rates of S
G_SIGMA = np.array([0.6, 1.3])  # per-column HalfNormal scales of G
ROWS, COLS = np.nonzero(MASK)


def _model(config, X=None):
    """The configuration written as a user would (placeholder data unless ``X``)."""
    X = np.where(MASK, 1.0, np.nan) if X is None else X
    with pm.Model() as model:
        if config == "mixed":
            F = pm.HalfNormal("F", 1.0, shape=(D, K))
            S = pm.Exponential("S", S_RATES, shape=(K, L))
            G = pm.TruncatedNormal("G", mu=0.5, sigma=0.8, lower=0.0, shape=(N, L))
            tau = pm.Gamma("tau", 2.0, 2.0)
            pm.Normal("X", (F @ S @ G.T)[ROWS, COLS], tau=tau, observed=X[ROWS, COLS])
        elif config == "rates_fixed_sigma":
            lam_F = pm.Gamma("lam_F", 10.0, 10.0, shape=K)
            F = pm.Exponential("F", lam_F[None, :], shape=(D, K))
            lam_S = pm.Gamma("lam_S", 8.0, 6.0)
            S = pm.Exponential("S", lam_S, shape=(K, L))
            G = pm.HalfNormal("G", G_SIGMA[None, :], shape=(N, L))
            pm.Normal("X", (F @ S @ G.T)[ROWS, COLS], sigma=0.7, observed=X[ROWS, COLS])
        else:
            raise ValueError(config)
    return model


def _prior(config, rng):
    p = {}
    if config == "mixed":
        p["F"] = np.abs(rng.normal(size=(D, K)))
        p["S"] = rng.exponential(1 / S_RATES)
        p["G"] = stats.truncnorm.rvs(-0.5 / 0.8, np.inf, loc=0.5, scale=0.8, size=(N, L),
                                     random_state=rng)
        p["tau"] = rng.gamma(2.0, 1 / 2.0)
    else:
        p["lam_F"] = rng.gamma(10.0, 1 / 10.0, size=K)
        p["F"] = rng.exponential(1 / p["lam_F"][None, :], size=(D, K))
        p["lam_S"] = np.array(rng.gamma(8.0, 1 / 6.0))
        p["S"] = rng.exponential(1 / p["lam_S"], size=(K, L))
        p["G"] = np.abs(rng.normal(size=(N, L))) * G_SIGMA[None, :]
        p["tau"] = 1 / 0.7**2
    return p


def _funcs(p, config):
    out = {"FSG": p["F"] @ p["S"] @ p["G"].T}
    if config == "mixed":  # no symmetry a priori (S's rates differ by entry): raw entries too
        out.update(F=p["F"], S=p["S"], G=p["G"], tau=np.array(p["tau"]))
    else:  # F's columns are exchangeable a priori (with S's rows): sorted rates
        out["lam_F"] = np.sort(p["lam_F"])
        out["lam_S"] = np.asarray(p["lam_S"])
    return out


def make_sbc(config, *, burn=100, ess_target=30, wrong=False):
    """``(simulate, infer)`` for ``config``; ``wrong=True`` doubles the prior precision terms
    ``q`` of F and G (deliberately wrong priors), which the SBC must reject."""
    f = recognize(_model(config))
    plan = nmtf_plan(f)
    if wrong:
        from dataclasses import replace

        plan = replace(plan, F=replace(plan.F, q=2 * plan.F.q), G=replace(plan.G, q=2 * plan.G.q))
    update = {"F", "S", "G", "tau", *f.rates}

    def simulate(rng):
        p = _prior(config, rng)
        X = p["F"] @ p["S"] @ p["G"].T + rng.normal(size=(D, N)) / np.sqrt(p["tau"])
        X[~MASK] = np.nan
        return _funcs(p, config), X

    def infer(X, rng):
        obs = gc.observed_entries(X)
        p0 = _prior(config, rng)  # independent start, then burn-in
        st = gc.nmtf_state(p0["F"], p0["S"], p0["G"], p0["tau"], None, None, obs)
        rates = {name: np.atleast_1d(np.asarray(p0[name], dtype=float)).ravel()
                 for name in f.rates}

        def step():
            prior_nmtf_sweep(st, obs, plan, rng, rates=rates, update=update)
            p = {"F": st.F, "S": st.S, "G": st.G, "tau": st.tau,
                 **{k: v.reshape(np.shape(p0[k])) for k, v in rates.items()}}
            return _funcs(p, config)

        for _ in range(burn):
            step()
        return run_to_ess(step, ess_target=ess_target, min_draws=200, max_draws=25_600)

    return simulate, infer


CONFIGS = ["mixed", "rates_fixed_sigma"]


def test_recognized_plan_reads_the_priors():
    """The plan's per-entry terms are the model's priors as written."""
    plan = nmtf_plan(recognize(_model("mixed")))
    np.testing.assert_array_equal(plan.F.q, np.ones((D, K)))
    np.testing.assert_array_equal(plan.S.lin, -S_RATES)
    np.testing.assert_allclose(plan.G.q, np.full((N, L), 1 / 0.8**2))
    np.testing.assert_allclose(plan.G.lin, np.full((N, L), 0.5 / 0.8**2))
    plan = nmtf_plan(recognize(_model("rates_fixed_sigma")))
    assert (plan.F.kind, plan.S.kind, plan.noise, plan.sigma) == ("rate", "rate", "fixed", 0.7)
    np.testing.assert_array_equal(plan.F.index, np.tile(np.arange(K), (D, 1)))
    np.testing.assert_allclose(plan.G.q, np.broadcast_to(1 / G_SIGMA**2, (N, L)))


def invariance_pvalues(config, seed, *, n_sims=1000, n_sweeps=3, wrong=False):
    """KS p-values of the joint-distribution invariance check of ``prior_nmtf_sweep``.

    Each simulation draws the parameters from the prior (``_prior``, NumPy, independent of the
    recognizer) and data given them, then runs ``n_sweeps`` sweeps of the sampler *started at
    the drawn parameters*. They are an exact posterior draw given the data, so a kernel that
    leaves the posterior invariant ends at an exact posterior draw, whose marginal over data
    sets is the prior (Geweke 2004's marginal-conditional argument, with the exact start
    replacing burn-in). Every tested scalar after the sweeps is compared with an independent
    prior sample of the same size (two-sample KS). No burn-in, no ESS, no label switching
    needed: raw entries of F, S, G, the rates and tau are all tested. Returns ``{name: p}``.
    """
    f = recognize(_model(config))
    plan = nmtf_plan(f)
    if wrong:
        from dataclasses import replace

        plan = replace(plan, F=replace(plan.F, q=2 * plan.F.q), G=replace(plan.G, q=2 * plan.G.q))
    update = {"F", "S", "G", "tau", *f.rates}
    rng = np.random.default_rng(seed)

    def scalars(p):
        out = {"FSG": p["F"] @ p["S"] @ p["G"].T, "F": p["F"], "S": p["S"], "G": p["G"]}
        out.update({k: np.asarray(p[k]) for k in ("tau", *f.rates)})
        return np.concatenate([np.ravel(v) for v in out.values()]), out

    after, ref = [], []
    for _ in range(n_sims):
        p = _prior(config, rng)
        X = p["F"] @ p["S"] @ p["G"].T + rng.normal(size=(D, N)) / np.sqrt(p["tau"])
        X[~MASK] = np.nan
        obs = gc.observed_entries(X)
        st = gc.nmtf_state(p["F"].copy(), p["S"].copy(), p["G"].copy(), p["tau"], None, None,
                           obs)
        rates = {k: np.atleast_1d(np.asarray(p[k], dtype=float)).ravel() for k in f.rates}
        for _ in range(n_sweeps):
            prior_nmtf_sweep(st, obs, plan, rng, rates=rates, update=update)
        q = {"F": st.F, "S": st.S, "G": st.G, "tau": st.tau,
             **{k: v.reshape(np.shape(p[k])) for k, v in rates.items()}}
        after.append(scalars(q)[0])
        ref.append(scalars(_prior(config, rng))[0])
    _, parts = scalars(_prior(config, np.random.default_rng(0)))
    names = [f"{k}{[int(j) for j in np.unravel_index(i, np.shape(v))]}" if np.ndim(v) else k
             for k, v in parts.items() for i in range(np.size(v))]
    after, ref = np.array(after), np.array(ref)
    return {n: stats.ks_2samp(after[:, j], ref[:, j]).pvalue for j, n in enumerate(names)
            if np.ptp(ref[:, j]) > 0}  # (tau under fixed sigma is a constant)


# Fast correctness test of GibbsNMTF on user-written priors (issue #36), both configurations:
# 1000 simulations x 3 sweeps from the prior draw, rejected when the smallest KS p-value is
# below 0.01 / (number of scalars) (Bonferroni: false-failure rate <= 1%; KS two-sample p-values
# are exact-size here since every row is an independent draw). False-failure rates over seeds
# 1000-1099 (``nice -n 15 python -m benchmarks.calibration.nmtf_prior_invariance <config>
# --seeds 1000:1100``, 2026-11-26): rates_fixed_sigma 1/100 (95% CI 0.0-5.4%; seed 1003,
# F S G^T[3, 2] p = 1.7e-5), second level (KS of each scalar's p-values across seeds,
# Bonferroni-adjusted) p = 0.40, 0.8 CPU s a seed; mixed 2/100 (0.2-7.0%; seeds 1020 and 1046,
# F S G^T[0, 2] p = 2.4e-4 and F S G^T[1, 2] p = 2.1e-5), second level p = 0.021, 1.3 CPU s.
# Power: doubling F's and G's prior precision gives p = 1e-20
# (test_invariance_detects_wrong_prior_terms); the NMTF-prior mutations of
# benchmarks/mutation/catalog_gaussian.py are caught (benchmarks/mutation/REPORT.md).
@pytest.mark.parametrize("config, seed", [("mixed", 61), ("rates_fixed_sigma", 62)])
def test_nmtf_prior_sweep_keeps_the_posterior(config, seed):
    p = invariance_pvalues(config, seed)
    assert min(p.values()) > 0.01 / len(p), min(p.items(), key=lambda kv: kv[1])


def test_invariance_detects_wrong_prior_terms():
    """Power check of the test above: F's and G's prior precision doubled must be rejected."""
    p = invariance_pvalues("mixed", 61, wrong=True)
    assert min(p.values()) < 0.01 / len(p), min(p.values())


# Measured false-failure rate at this setting (100 simulations, ESS thinning; ``nice -n 10
# python -m benchmarks.calibration.sbc_false_failure nmtf-priors-<config> --seeds 1000:1040``,
# records in benchmarks/calibration/results/): "mixed" 1/40 (seeds 1000-1039, 95% CI
# 0.1-13.2%; seed 1031, F[1, 0] p = 8.6e-5; second-level KS of each scalar's p-values across
# seeds: Bonferroni-adjusted min p = 0.44; thinning median 7, max 640; 50-63 s a seed).
# "rates_fixed_sigma": RATES_FF below; its test runs 300 simulations (see the test).
RATES_FF = ("3/80 over seeds 1000-1079 (seeds 1006, 1036, 1057: single F S G^T entries at "
            "p = 5.4e-4, 1.6e-4, 3.8e-4; 95% CI 0.8-10.6%), 4/81 with seed 52; "
            "second-level KS of each scalar's p-values across seeds: Bonferroni-adjusted min "
            "p = 0.26; thinning median 4, max 18388, kept draws min 2; 15-60 s a seed")


@pytest.mark.slow  # mixed 50-110 s; rates_fixed_sigma (300 simulations) ~70 CPU s
@pytest.mark.parametrize("config, seed, n_sims", [
    ("mixed", 51, 100), ("rates_fixed_sigma", 52, 300)])
def test_sbc_nmtf_priors(config, seed, n_sims):
    """SBC of GibbsNMTF with user priors (100 / 300 simulations, ESS thinning).

    "rates_fixed_sigma" was a strict xfail (issue #36 resolved it): at 100 simulations seed 52
    fails (min p 6.1e-4 on F S G^T[3, 0], 15 tests, threshold 6.7e-4; re-run on 2026-11-26 with
    the current code: 6.07e-4, 26 CPU s). Is it real? A miscalibrated scalar's KS p-value falls
    roughly exponentially with the number of simulations, so the same seed was run at 300
    simulations: the smallest p over the 15 scalars is 0.065 (2026-11-26, 68 CPU s; that entry
    alone p = 0.25 in the earlier run), far above the threshold. Two independent checks of the
    same kernel agree that the sampler is correct: the exact-start invariance test
    (``test_nmtf_prior_sweep_keeps_the_posterior``: 1/100 seeds below its Bonferroni threshold,
    second level p = 0.40) at 10,000 simulations x 10 sweeps also passed (seeds 1 and 2, min p
    0.004 and 0.017 over 33 scalars; ``python -m benchmarks.calibration.nmtf_prior_invariance
    rates_fixed_sigma --seeds 1:3 --n-sims 10000 --n-sweeps 10``), and three planted bugs of the
    NMTF prior sweep are caught by it (``benchmarks/mutation/REPORT.md``). So the 100-simulation
    failure at seed 52 is a false failure (100-simulation rate 4/81, RATES_FF), not a bug; the
    seed is kept and this configuration runs the 300 simulations that decided it. Its
    false-failure rate at 300 simulations is not measured over seeds (70 CPU s a seed: ``python
    -m benchmarks.calibration.sbc_false_failure nmtf-priors-rates_fixed_sigma --n-sims 300 --tag
    _300``); at 100 it is RATES_FF, above the nominal 1% like the suite's other ESS-thinned SBCs
    (pooled 11/555 = 2.0%, 95% CI 1.0-3.5%; ``test_recognize_sbc.py``).
    """
    simulate, infer = make_sbc(config)
    result = sbc(simulate, infer, n_sims=n_sims, thin="ess", random_seed=seed,
                 progressbar=False)
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


@pytest.mark.slow  # ~70 s
def test_sbc_detects_wrong_prior_terms():
    """Power check: doubling F's and G's prior precision fails (measured min p 2.7e-9,
    2.5e-7, 2.2e-12 at seeds 51-53)."""
    simulate, infer = make_sbc("mixed", wrong=True)
    result = sbc(simulate, infer, n_sims=100, thin="ess", random_seed=51, progressbar=False)
    assert not result.passed(alpha=0.01), result.min_pvalue


# ----------------------------------------------------------------------------- pm.sample()


def _issue_model(X):
    """The tri-factorization model of the issue, as a user writes it (whole matrix observed)."""
    D_, N_ = X.shape
    with pm.Model() as model:
        F = pm.HalfNormal("F", 1.0, shape=(D_, K))
        S = pm.Exponential("S", 1.0, shape=(K, L))
        G = pm.TruncatedNormal("G", 0.0, 1.0, lower=0, shape=(N_, L))
        tau = pm.Gamma("tau", 1.0, 1.0)
        pm.Normal("X", F @ S @ G.T, tau=tau, observed=X)
    return model


@pytest.fixture(scope="module")
def tri_data():
    rng = np.random.default_rng(3)
    F, S, G = rng.exponential(size=(6, K)), rng.exponential(size=(K, L)), \
        rng.exponential(size=(5, L))
    return F @ S @ G.T + 0.3 * rng.normal(size=(6, 5))


def test_pm_sample_picks_gibbs_nmtf(tri_data, caplog):
    """``pm.sample()`` without ``step=`` assigns GibbsNMTF to F, S, G, tau (assert on the
    step actually used), and its draws are those of ``step=GibbsNMTF()``."""
    kw = dict(draws=30, tune=10, chains=1, random_seed=7, progressbar=False,
              compute_convergence_checks=False)
    with caplog.at_level(logging.INFO, logger="pymc"), _issue_model(tri_data) as model:
        from pymc.sampling.mcmc import assign_step_methods

        assigned = {c.__name__: sorted(model.values_to_rvs[v].name for v in vs)
                    for c, vs in assign_step_methods(model)[1].items()}
        auto = pm.sample(**kw)
        explicit = pm.sample(step=GibbsNMTF(), **kw)
    assert assigned == {"GibbsNMTF": ["F", "G", "S", "tau"]}, assigned
    assert any("GibbsNMTF: [F, S, G, tau]" in r.getMessage() for r in caplog.records)
    for name in ("F", "S", "G", "tau"):
        np.testing.assert_array_equal(auto.posterior[name].values,
                                      explicit.posterior[name].values)
    assert np.all(auto.posterior["S"].values >= 0)


def _means_and_mcse(post, names):
    """Posterior mean and MCSE (arviz, mean) of F S G^T per entry and of tau."""
    import arviz as az
    import xarray as xr

    F, S, G = (post[n] for n in ("F", "S", "G"))
    fsg = xr.DataArray(np.einsum("cdik,cdkl,cdjl->cdij", F.values, S.values, G.values),
                       dims=("chain", "draw", "i", "j"))
    ds = xr.Dataset({"FSG": fsg, "tau": post["tau"].variable})
    mean = {n: ds[n].mean(("chain", "draw")).values for n in names}
    mcse = {n: np.asarray(az.mcse(ds)[n].values) for n in names}
    return mean, mcse


@pytest.mark.slow
def test_gibbs_nmtf_agrees_with_nuts(tri_data, caplog):
    """Posterior means of F S G^T (every entry) and tau from GibbsNMTF (chosen by
    ``pm.sample()``) against PyMC's NUTS on the issue's tri-factorization model, within
    4 combined MCSEs ``sqrt(mcse_gibbs^2 + mcse_nuts^2)`` (MCSE from each run's own ESS). With
    31 compared means, a per-mean two-sided normal tail of 6e-5 gives a family-wise false-failure
    rate below 0.2 % if the MCSEs are right. Label swaps and the scale ridge do not matter:
    F S G^T and tau are invariant to both. Measured once at this seed (2026-11-23): F S G^T
    largest z 3.16, median 0.80; tau z 0.01; ESS of tau 5087 (Gibbs, 16 s) and 2358 (NUTS,
    387 s on the shared machine), no divergences. The false-failure rate over seeds is not
    measured (one NUTS run costs minutes); the median 0.80 against 0.67 for |N(0, 1)| hints
    that one of the MCSEs is somewhat optimistic."""
    names = ("FSG", "tau")
    kw = dict(tune=1000, chains=2, random_seed=11, progressbar=False,
              compute_convergence_checks=False)
    with caplog.at_level(logging.ERROR, logger="pymc"), _issue_model(tri_data):
        gibbs = pm.sample(draws=5000, **kw)
        nuts = pm.sample(draws=2000, step=pm.NUTS(target_accept=0.95), nuts_sampler="pymc", **kw)
    assert "train_mse" in gibbs.sample_stats  # GibbsNMTF's own stat: it was the step used
    assert "diverging" in nuts.sample_stats
    mg, sg = _means_and_mcse(gibbs.posterior, names)
    mn, sn = _means_and_mcse(nuts.posterior, names)
    for n in names:
        z = np.abs(mg[n] - mn[n]) / np.sqrt(sg[n] ** 2 + sn[n] ** 2)
        assert np.all(z < 4.0), (n, z.max())


def test_unsupported_nmtf_prior_is_named(tri_data):
    """A prior parameter with its own hyperprior is not sampled by GibbsNMTF: the error names
    it, and ``pm.sample()`` leaves the model to PyMC's samplers."""
    with pm.Model() as model:
        s = pm.HalfCauchy("s", 1.0)
        F = pm.HalfNormal("F", s, shape=(6, K))
        S = pm.Exponential("S", 1.0, shape=(K, L))
        G = pm.HalfNormal("G", 1.0, shape=(5, L))
        pm.Normal("X", F @ S @ G.T, sigma=0.5, observed=tri_data)
    with pytest.raises(TypeError, match=r"the halfnormal prior of F \('F'\) depends on \['s'\]"):
        GibbsNMTF(model=model)
    from pymc.sampling.mcmc import assign_step_methods

    with model:
        assigned = {c.__name__ for c in assign_step_methods(model)[1]}
    assert "GibbsNMTF" not in assigned, assigned
