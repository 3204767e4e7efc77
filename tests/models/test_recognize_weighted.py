"""Gamma factor priors, per-row/column noise precisions and Student-t noise (issue 34, item 3).

Recognition of the models as users write them, ``pm.sample()`` choosing GibbsNMF by itself, the
exact sampler of the Gamma-prior conditional, SBC of every configuration
(``tests/_weighted_sbc.py``) and agreement with NUTS (slow).
"""

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from _weighted_sbc import WEIGHTED_CONFIGS, make_weighted_sbc, weighted_model
from scipy import stats

from bnmfzoo.diagnostics import sbc
from bnmfzoo.inference import GibbsNMF, fit_vb
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.priors._gamma_conditional import sample_gamma_conditional
from bnmfzoo.inference.gaussian.priors._gibbs_prior import plan_from_factorization
from bnmfzoo.inference.gaussian.priors._weighted_core import WeightedPlan, weighted_nmf_sweep
from bnmfzoo.models import recognize
from bnmfzoo.models._recognize import NotRecognized

KW = dict(progressbar=False, compute_convergence_checks=False, cores=1)
D, N, R = 5, 4, 2


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.gamma(2.0, 1.0, size=(D, R)) @ rng.gamma(2.0, 1.0, size=(R, N))
    return np.abs(X + rng.normal(scale=0.5, size=(D, N)))


def issue_model(kind, X, *, nu=4.0):
    """The issue's three models, written as users write them (full data matrix)."""
    with pm.Model(coords={"row": range(D), "col": range(N), "factor": range(R)}) as model:
        if kind == "gamma":
            A = pm.Gamma("A", 2.0, 1.0, dims=("row", "factor"))
            W = pm.Gamma("W", 2.0, 1.0, dims=("factor", "col"))
        else:
            A = pm.Gamma("A", 2.0, 1.0, dims=("row", "factor"))
            W = pm.Exponential("W", 1.0, dims=("factor", "col"))
        if kind == "col_tau":
            tau = pm.Gamma("tau", 2.0, 1.0, dims="col")
            pm.Normal("X", mu=A @ W, tau=tau[None, :], observed=X)
        elif kind == "student":
            tau = pm.Gamma("tau", 2.0, 1.0)
            nu = pm.Gamma("nu", 4.0, 1.0) if nu is None else nu
            pm.StudentT("X", nu=nu, mu=A @ W, sigma=tau ** -0.5, observed=X)
        else:
            tau = pm.Gamma("tau", 2.0, 1.0)
            pm.Normal("X", mu=A @ W, tau=tau, observed=X)
    return model


# ----------------------------------------------------------------------------- the sampler

#: (lin, prec, c): both envelopes, c = 0 (truncated normal), prec = 0 (Gamma), tiny c, a mode far
#: out, a mode near 0 with a large c
CONDITIONALS = [(-1.0, 0.0, 1.0), (2.0, 1.0, 1.0), (-3.0, 0.5, 0.01), (50.0, 10.0, 3.0),
                (-5.0, 100.0, 20.0), (0.1, 0.01, 0.05), (-10.0, 1.0, 0.5), (1.0, 2.0, 0.0),
                (5.0, 0.05, 1.0), (-30.0, 1e4, 50.0)]


def _numeric_cdf(lin, prec, c, upper):
    """CDF of ``x^c exp(-prec x^2/2 + lin x)`` on a fine grid (trapezoid), as a callable."""
    x = np.linspace(0.0, upper, 400_001)
    with np.errstate(divide="ignore", invalid="ignore"):
        logf = c * np.log(x) - 0.5 * prec * x * x + lin * x
    logf[0] = -np.inf if c > 0 else 0.0
    f = np.exp(logf - logf[np.isfinite(logf)].max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(x))])
    return lambda q: np.interp(q, x, cdf / cdf[-1])


def test_gamma_conditional_distribution():
    """KS test of 4000 exact draws against the numerically integrated CDF, per parameter set.

    Draws are independent and exact, so each KS p-value is uniform; the Bonferroni level
    0.01 / 10 gives a false-failure rate below 1% (the grid CDF's error, < 1e-6 at 400,001
    points, is far below the KS statistic's resolution 1/sqrt(4000))."""
    rng = np.random.default_rng(11)
    for lin, prec, c in CONDITIONALS:
        x = sample_gamma_conditional(lin, prec, np.full(4000, c), rng=rng)
        assert np.all(np.isfinite(x)) and np.all(x >= 0.0), (lin, prec, c)
        cdf = _numeric_cdf(lin, prec, c, 3.0 * x.max())
        p = stats.kstest(x, cdf).pvalue
        assert p > 0.01 / len(CONDITIONALS), (lin, prec, c, p)


def test_gamma_conditional_guards():
    """Non-finite or improper parameters give NaN at once (never a loop); extremes stay finite."""
    bad = [(np.nan, 1.0, 1.0), (1.0, np.inf, 1.0), (1.0, 1.0, np.nan), (1.0, -1.0, 1.0),
           (1.0, 0.0, 1.0), (0.0, 0.0, 2.0), (1.0, 1.0, -0.5)]
    for lin, prec, c in bad:
        assert np.isnan(sample_gamma_conditional(lin, prec, c, rng=0)), (lin, prec, c)
    extreme = [(1e8, 1e12, 1e3), (-1e8, 1e-12, 1.0), (1e3, 1e-10, 0.5), (-1e-9, 1e10, 1e-6)]
    for lin, prec, c in extreme:
        x = sample_gamma_conditional(lin, prec, np.full(50, c), rng=1)
        assert np.all(np.isfinite(x)) and np.all(x > 0.0), (lin, prec, c, x)


# ----------------------------------------------------------------------------- recognition


def test_recognized_forms(data):
    f = recognize(weighted_model("gamma"))
    assert f.factors["A"].family == f.factors["W"].family == "gamma"
    np.testing.assert_array_equal(f.factors["W"].params["alpha"].value,
                                  np.broadcast_to([[1.5], [3.0]], (2, 3)))
    np.testing.assert_array_equal(f.factors["W"].params["beta"].value, np.full((2, 3), 2.0))
    assert f.noise.kind == "precision" and f.noise.nu is None
    f = recognize(weighted_model("gamma_col_tau"))
    assert f.noise.kind == "col_precision" and f.var_names["tau"] == "tau"
    np.testing.assert_array_equal(f.noise.alpha, [3.0, 3.0, 3.0])
    assert recognize(weighted_model("row_tau")).noise.kind == "row_precision"
    f = recognize(weighted_model("student"))
    assert f.noise.kind == "precision" and float(f.noise.nu.value) == 3.0
    f = recognize(issue_model("col_tau", data))
    assert f.noise.kind == "col_precision" and f.noise.beta.shape == (N,)
    f = recognize(issue_model("student", data, nu=None))  # nu ~ Gamma: another step's variable
    assert f.noise.nu.depends_on == ("nu",) and f.others == ("nu",)
    for config in WEIGHTED_CONFIGS:
        assert isinstance(plan_from_factorization(recognize(weighted_model(config))),
                          WeightedPlan)


def _raises(build, match):
    with pm.Model() as model:
        build()
    with pytest.raises(NotRecognized, match=match):
        recognize(model)


def test_not_recognized_says_why(data):
    def per_entry_sd():
        A = pm.Gamma("A", 2.0, 1.0, shape=(D, R))
        W = pm.Gamma("W", 2.0, 1.0, shape=(R, N))
        tau = pm.Gamma("tau", 1.0, 1.0, shape=(D, N))  # one per entry: not a row/column
        pm.Normal("X", mu=A @ W, tau=tau, observed=data)

    _raises(per_entry_sd, "varies by entry; recognized: one scalar sd or precision, or one "
            "Gamma precision per row or per column")

    def tau_elsewhere():
        A = pm.Gamma("A", 2.0, 1.0, shape=(D, R))
        W = pm.Gamma("W", 2.0, 1.0, shape=(R, N))
        tau = pm.Gamma("tau", 1.0, 1.0, shape=N)
        pm.Potential("pen", -tau.sum())
        pm.Normal("X", mu=A @ W, tau=tau[None, :], observed=data)

    _raises(tau_elsewhere, "varies by entry")

    def nu_per_entry():
        A = pm.Exponential("A", 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.StudentT("X", nu=np.linspace(2, 5, N), mu=A @ W, sigma=1.0, observed=data)

    _raises(nu_per_entry, "degrees of freedom nu of 'X' are not one positive constant")

    def gamma_shape_random():
        a = pm.Gamma("a", 2.0, 1.0)
        A = pm.Gamma("A", a + 1.0, 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.Normal("X", mu=A @ W, sigma=1.0, observed=data)

    _raises(gamma_shape_random, "shape alpha of the Gamma prior of A .* depends on random")


def test_other_methods_refuse_clearly(data):
    """VB, the tri-factorization step and GibbsNoiseSD refuse these models with the reason."""
    with pytest.raises(TypeError, match="only GibbsNMF samples Gamma factor priors"):
        fit_vb(issue_model("gamma", data), random_seed=0)
    for noise, match in (("col_tau", "is one per column; only GibbsNMF"),
                         ("student", "the likelihood is Student-t; only GibbsNMF")):
        with pm.Model() as model:
            A = pm.Exponential("A", 1.0, shape=(D, R))
            W = pm.Exponential("W", 1.0, shape=(R, N))
            if noise == "col_tau":
                tau = pm.Gamma("tau", 2.0, 1.0, shape=N)
                pm.Normal("X", mu=A @ W, tau=tau[None, :], observed=data)
            else:
                pm.StudentT("X", nu=4.0, mu=A @ W, sigma=pm.HalfNormal("s", 1.0),
                            observed=data)
        with pytest.raises(TypeError, match=match):
            fit_vb(model, random_seed=0)
    from bnmfzoo.inference.gaussian.gibbs.noise_sd import noise_sd_prior

    assert noise_sd_prior(model)[:2] == (None, "the likelihood is Student-t, not Normal")


# ----------------------------------------------------------------------------- pm.sample


def _assigned(caplog):
    return sorted(r.getMessage() for r in caplog.records if ": [" in r.getMessage())


@pytest.mark.parametrize("kind", ["gamma", "col_tau", "student"])
def test_pm_sample_assigns_gibbs(data, kind, caplog):
    """``pm.sample()`` with no ``step=``: GibbsNMF on A, W and tau (per column too)."""
    with caplog.at_level(logging.INFO, logger="pymc"), issue_model(kind, data):
        dt = pm.sample(draws=20, tune=5, chains=1, random_seed=4, **KW)
    assert _assigned(caplog) == ["GibbsNMF: [A, W, tau]"]
    assert "train_mse" in dt.sample_stats
    assert dt.posterior["tau"].shape == ((1, 20, N) if kind == "col_tau" else (1, 20))


def test_student_nu_learned_is_a_compound_step(data, caplog):
    """``nu ~ Gamma``: GibbsNMF keeps A, W, tau (reading nu from the point), NUTS takes nu."""
    with caplog.at_level(logging.INFO, logger="pymc"), issue_model("student", data, nu=None):
        dt = pm.sample(draws=10, tune=5, chains=1, random_seed=4, **KW)
    assert _assigned(caplog) == [">GibbsNMF: [A, W, tau]", ">NUTS: [nu]"]
    assert np.isfinite(dt.posterior["nu"].values).all()


def test_step_equals_weighted_sweeps(data):
    """The step on the per-column model runs exactly the numeric sweeps (same generator)."""
    model = issue_model("col_tau", data)
    step = GibbsNMF(model=model)
    assert step.general and isinstance(step.plan, WeightedPlan)
    point = model.initial_point()
    step.setup_chain(np.random.default_rng(5), 0, 5)
    f = recognize(model)
    obs = gc.observed_entries(f.X, f.mask)
    st = gc.nmf_state(np.exp(point["A_log__"]), np.exp(point["W_log__"]), 1.0, None, obs)
    st.tau = np.exp(point["tau_log__"])
    plan, rng = plan_from_factorization(f), np.random.default_rng(5)
    for _ in range(5):
        point, stats_ = step.step(point)
        weighted_nmf_sweep(st, obs, plan, rng, rates={}, update={"A", "W", "tau"})
        np.testing.assert_allclose(np.exp(point["A_log__"]), st.A, rtol=1e-13)
        np.testing.assert_allclose(np.exp(point["W_log__"]), st.W, rtol=1e-13)
        np.testing.assert_allclose(np.exp(point["tau_log__"]), st.tau, rtol=1e-13)


# ----------------------------------------------------------------------------- SBC

# Threshold: ``SBCResult.passed(alpha=0.01)`` (Bonferroni over the KS tests of the 27-30 tested
# scalars), nominal false-failure rate < 1% per test when the ESS-thinned draws are nearly
# independent, as in test_recognize_sbc.py (whose pooled measured rate is 2%). Measured here so
# far (``nice -n 15 python -m benchmarks.calibration.sbc_false_failure weighted-<config> --seeds
# 1000:<stop>``, records in benchmarks/calibration/results/sbc_weighted-<config>.jsonl; the
# shared machine allowed only a few seeds on 2026-11-26): gamma 0/3 (seeds 1000-1002; smallest
# min p 0.0024), student 0/2, row_tau 0/2, gamma_col_tau 0/2 (second-level KS across seeds:
# Bonferroni-adjusted min p 0.72-1), plus the test seeds below, which passed on their first run
# (not moved). Too few seeds to bound the rate (95% CI upper bounds 63-84%): expect about the 2%
# of the other recognized-prior SBCs until more seeds are measured.
SBC_SEEDS = {"gamma": 51, "gamma_col_tau": 52, "row_tau": 53, "student": 54,
             "student_ard": 55}


@pytest.mark.parametrize("config", [c if c != "student_ard" else pytest.param(
    c, marks=pytest.mark.slow) for c in WEIGHTED_CONFIGS])
def test_sbc_weighted(config):
    """SBC of the weighted sweep, 100 simulations of a 4 x 3 rank-2 model with two missing
    entries (both in column 1, so a per-column tau's shape must not count them). Costs 5-14
    CPU s per configuration; "student_ard" (ARD rates with Student-t noise, slower mixing:
    about 30 CPU s) is in the slow suite."""
    simulate, infer = make_weighted_sbc(config)
    result = sbc(simulate, infer, n_sims=100, thin="ess", random_seed=SBC_SEEDS[config],
                 progressbar=False)
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


# ----------------------------------------------------------------------------- NUTS


def _mean_mcse(dt):
    p = dt.posterior
    ds = xr.Dataset({"AW": xr.dot(p["A"], p["W"], dim="factor"), "tau": p["tau"]})
    return ds.mean(("chain", "draw")), az.mcse(ds)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gamma", "col_tau", "student"])
def test_agrees_with_nuts(data, kind):
    """Posterior means of A W (20 entries) and tau (1 or 4): pm.sample()'s automatic GibbsNMF
    against NUTS on everything; |diff| < 4 sqrt(mcse_1^2 + mcse_2^2) for each of 21-24
    quantities, a 4-sigma bound: false alarm ~ 24 * 6e-5 ~ 1.5e-3 per model when the MCSEs
    are right."""
    with issue_model(kind, data):
        ours = pm.sample(draws=3000, tune=500, chains=2, random_seed=1, **KW)
        nuts = pm.sample(draws=1000, tune=1000, chains=2, random_seed=2, nuts_sampler="pymc",
                         step=pm.NUTS(target_accept=0.9), **KW)
    assert "train_mse" in ours.sample_stats and "train_mse" not in nuts.sample_stats
    m1, s1 = _mean_mcse(ours)
    m2, s2 = _mean_mcse(nuts)
    for name in ("AW", "tau"):
        diff = np.abs((m1[name] - m2[name]).values)
        bound = 4 * np.sqrt(s1[name].values ** 2 + s2[name].values ** 2)
        assert (diff < bound).all(), (name, diff, bound)


def test_masked_column_model_recognized():
    """The per-column precision on a masked selection ``(A @ W)[mask]`` (the SBC model) and on
    the flat-index pairs form agree on what they read."""
    X = np.random.default_rng(0).exponential(size=(4, 3))
    mask = np.ones((4, 3), bool)
    mask[1, 2] = False
    rows, cols = np.nonzero(mask)
    with pm.Model() as model:
        A = pm.Gamma("A", 2.0, 1.0, shape=(4, 2))
        W = pm.Gamma("W", 2.0, 1.0, shape=(2, 3))
        tau = pm.Gamma("tau", 2.0, 1.0, shape=3)
        pm.Normal("X", mu=(A @ W)[rows, cols], tau=tau[cols], observed=X[rows, cols])
    f = recognize(model)
    assert f.noise.kind == "col_precision" and int(f.mask.sum()) == 11
    with pm.Model() as model:
        A = pm.Gamma("A", 2.0, 1.0, shape=(4, 2))
        W = pm.Gamma("W", 2.0, 1.0, shape=(2, 3))
        tau = pm.Gamma("tau", 2.0, 1.0, shape=4)
        pm.Normal("X", mu=(A @ W)[rows, cols], tau=pt.as_tensor(tau)[rows],
                  observed=X[rows, cols])
    assert recognize(model).noise.kind == "row_precision"
