"""Recognition of user-written PyMC models, and ``pm.sample()`` choosing GibbsNMF by itself."""

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

from bnmfzoo import likelihoods
from bnmfzoo.inference import GibbsNMF, fit_icm, fit_vb
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.priors._gibbs_prior import plan_from_factorization
from bnmfzoo.inference.gaussian.priors._prior_core import prior_nmf_sweep
from bnmfzoo.models import exponential_gaussian, recognize
from bnmfzoo.models._recognize import NotRecognized

KW = dict(progressbar=False, compute_convergence_checks=False, cores=1)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(5, 2)) @ rng.exponential(size=(2, 4))
    X = np.abs(X + rng.normal(scale=0.3, size=(5, 4)))
    X[0, 1] = X[2, 3] = X[4, 0] = np.nan  # 3 missing entries
    return X


def user_model(X, *, noise="tau", R=2):
    """The issue's model: A ~ HalfNormal(1), lam ~ Gamma(2, 2) per factor, W ~ Exp(lam)."""
    D, N = X.shape
    with pm.Model(coords={"row": range(D), "col": range(N), "factor": range(R)}) as model:
        A = pm.HalfNormal("A", 1.0, dims=("row", "factor"))
        lam = pm.Gamma("lam", 2.0, 2.0, dims="factor")
        W = pm.Exponential("W", lam[:, None], dims=("factor", "col"))
        if noise == "tau":
            tau = pm.Gamma("tau", 1.0, 1.0)
            likelihoods.gaussian("X", A, W, observed=X, tau=tau)
        else:
            sigma = pm.HalfNormal("sigma", 1.0)
            likelihoods.gaussian("X", A, W, observed=X, sigma=sigma)
    return model


# ----------------------------------------------------------------------------- recognition


@pytest.mark.parametrize("form", ["term", "mask", "pairs", "transposed"])
def test_mean_forms(data, form):
    m = ~np.isnan(data)
    rows, cols = np.nonzero(m)
    with pm.Model() as model:
        A = pm.Exponential("A", 1.0, shape=(5, 2))
        if form == "transposed":
            Wt = pm.Exponential("Wt", 1.0, shape=(4, 2))
            pm.Normal("X", mu=(A @ Wt.T)[m], sigma=0.5, observed=data[m])
        else:
            W = pm.Exponential("W", 1.0, shape=(2, 4))
            if form == "term":
                likelihoods.gaussian("X", A, W, observed=data, sigma=0.5)
            elif form == "mask":
                pm.Normal("X", mu=(A @ W)[m], sigma=0.5, observed=data[m])
            else:
                pm.Normal("X", mu=(A @ W)[rows, cols], sigma=0.5, observed=data[rows, cols])
    f = recognize(model)
    assert f.kind == "nmf" and f.rank == 2 and f.likelihood == "X"
    np.testing.assert_array_equal(f.mask, m)
    np.testing.assert_array_equal(f.X.values[m], data[m])
    assert f.factors["W"].transposed == (form == "transposed")
    assert f.noise.kind == "fixed" and f.noise.sigma == 0.5


def test_full_product_and_tri(data):
    full = np.nan_to_num(data, nan=1.0)
    with pm.Model() as model:
        F = pm.Exponential("F", 1.0, shape=(5, 2))
        S = pm.Exponential("S", 1.0, shape=(2, 3))
        G = pm.Exponential("G", 1.0, shape=(4, 3))
        pm.Normal("X", mu=F @ S @ G.T, sigma=1.0, observed=full)
    f = recognize(model)
    assert f.kind == "nmtf" and f.rank == (2, 3) and f.mask.all()
    assert [f.factors[r].name for r in ("F", "S", "G")] == ["F", "S", "G"]


def test_priors_rates_noise(data):
    with pm.Model() as model:
        lam_row = pm.Gamma("lam_row", 2.0, 3.0, shape=5)
        A = pm.Exponential("A", lam_row[:, None], shape=(5, 2))
        s = pm.HalfCauchy("s", 1.0)
        W = pm.TruncatedNormal("W", mu=np.arange(4.0), sigma=s, lower=0.0, shape=(2, 4))
        sd = pm.HalfNormal("sd", 1.0)
        likelihoods.gaussian("X", A, W, observed=data, sigma=sd)
    f = recognize(model)
    a, w = f.factors["A"], f.factors["W"]
    assert (a.family, a.rate, w.family) == ("exponential", "lam_row", "truncated_normal")
    rate = f.rates["lam_row"]
    np.testing.assert_array_equal(dict(rate.users)["A"], np.repeat(np.arange(5)[:, None], 2, 1))
    assert rate.alpha.tolist() == [2.0] * 5 and rate.beta.tolist() == [3.0] * 5
    np.testing.assert_array_equal(w.params["mu"].value, np.tile(np.arange(4.0), (2, 1)))
    assert w.params["sigma"].depends_on == ("s",)
    assert f.noise.kind == "other" and f.noise.depends_on == ("sd",)
    assert set(f.others) == {"s", "sd"}
    assert set(f.var_names.values()) == {"A", "W", "lam_row"}


def _raises(build, match):
    with pm.Model() as model:
        build()
    with pytest.raises(NotRecognized, match=match):
        recognize(model)


def test_not_recognized_says_why(data):
    m = ~np.isnan(data)

    def gamma_prior():  # Gamma(a >= 1) is recognized (tests/models/test_recognize_weighted.py)
        A = pm.Gamma("A", 0.5, 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        likelihoods.gaussian("X", A, W, observed=data, sigma=1.0)

    _raises(gamma_prior, r"the Gamma prior of A \('A'\) has shape alpha < 1 \(min 0.5\): its "
            r"conditional is not log-concave")

    def lognormal_prior():
        A = pm.LogNormal("A", 0.0, 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        likelihoods.gaussian("X", A, W, observed=data, sigma=1.0)

    _raises(lognormal_prior, r"the prior of A \('A'\) is LogNormal; recognized priors on "
            r"factors: Exponential\(lam\), HalfNormal\(sigma\), TruncatedNormal")

    def intercept():
        A = pm.Exponential("A", 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        b = pm.Normal("b")
        pm.Normal("X", mu=(A @ W + b)[m], sigma=1.0, observed=data[m])

    _raises(intercept, r"depends on \['A', 'W', 'b'\] but is not A @ W")

    def bounded():
        A = pm.TruncatedNormal("A", 0.0, 1.0, lower=0.0, upper=3.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        likelihoods.gaussian("X", A, W, observed=data, sigma=1.0)

    _raises(bounded, "not truncated to \\[0, inf\\)")

    def bernoulli():
        A = pm.Beta("A", 1.0, 1.0, shape=(5, 2))
        W = pm.Dirichlet("W", np.ones(2), shape=(4, 2))
        pm.Bernoulli("X", p=(A @ W.T / 2)[m], observed=(data[m] > 1).astype(int))

    # a Bernoulli on A @ W itself is recognized (tests/models/test_recognize_binary.py); this mean
    # is not
    _raises(bernoulli, r"depends on \['A', 'W'\] but is not A @ W")

    def potential():
        A = pm.Exponential("A", 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        pm.Potential("pen", -A.sum())
        likelihoods.gaussian("X", A, W, observed=data, sigma=1.0)

    _raises(potential, r"A \('A'\) is also used by \['pen'\]")

    def per_entry_noise():
        A = pm.Exponential("A", 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        pm.Normal("X", mu=(A @ W)[m], sigma=np.linspace(0.5, 1, m.sum()), observed=data[m])

    _raises(per_entry_noise, "noise sd of 'X' varies by entry")


# ----------------------------------------------------------------------------- one path


def test_user_exponential_model_is_our_model(data):
    """Written by hand like exponential_gaussian: the same spec, the same fits."""
    ours = exponential_gaussian(data, 2, lambda_=0.5, alpha_tau=2.0, beta_tau=3.0)
    with pm.Model(coords=ours.coords) as mine:
        A = pm.Exponential("A", 0.5, dims=("row", "factor"))
        W = pm.Exponential("W", 0.5, dims=("factor", "col"))
        tau = pm.Gamma("tau", 2.0, 3.0)
        likelihoods.gaussian("X", A, W, observed=data, tau=tau)
    assert not hasattr(mine, "bnmfzoo_spec")
    a, b = fit_icm(ours, random_seed=3), fit_icm(mine, random_seed=3)
    np.testing.assert_array_equal(a.posterior["A"].values, b.posterior["A"].values)
    a, b = fit_vb(ours, random_seed=3), fit_vb(mine, random_seed=3)
    np.testing.assert_array_equal(a.posterior["W"].values, b.posterior["W"].values)


def test_fitters_name_the_prior_they_lack(data):
    """The issue's model fits (the Gamma rates: tests/gaussian/test_vb_rates.py), also with a
    ``sigma ~ HalfNormal`` noise sd (tests/gaussian/test_vb_noise_sd.py); a noise sd whose prior
    has a
    random scale is named."""
    dt = fit_vb(user_model(data), max_iter=5, n_draws=4, progressbar=False)
    assert dt.posterior["lam"].dims == ("chain", "draw", "factor")
    dt = fit_vb(user_model(data, noise="sigma"), max_iter=5, n_draws=4, progressbar=False)
    assert dt.posterior["sigma"].dims == ("chain", "draw")
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(5, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 4))
        scale = pm.Gamma("scale", 2.0, 2.0)
        likelihoods.gaussian("X", A, W, observed=data, sigma=pm.HalfNormal("sigma", scale))
    with pytest.raises(TypeError, match=r"fit_vb cannot fit this model: the noise sd depends on "
                       r"\['sigma'\] \(the prior of 'sigma' has a random or shifted scale\); "
                       r"fit_vb implements Exponential"):
        fit_vb(model)


# ----------------------------------------------------------------------------- pm.sample()


def _assigned(caplog):
    return [r.getMessage() for r in caplog.records if ": [" in r.getMessage()]


def test_pm_sample_picks_gibbs_and_changes_no_draw(data, caplog):
    """exponential_gaussian + pm.sample() without step=: GibbsNMF, and the draws of
    step=GibbsNMF() bit for bit (the refactor and the automatic choice change no number)."""
    model = exponential_gaussian(data, 2, ard=True)
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        auto = pm.sample(draws=20, tune=5, chains=2, random_seed=4, **KW)
    assert _assigned(caplog) == ["GibbsNMF: [lambda_, A, W, tau]"]
    with model:
        explicit = pm.sample(draws=20, tune=5, chains=2, random_seed=4, step=GibbsNMF(), **KW)
    for name in ("A", "W", "tau", "lambda_"):
        np.testing.assert_array_equal(auto.posterior[name].values, explicit.posterior[name].values)
    assert "train_mse" in auto.sample_stats


def test_step_equals_plan_sweeps(data):
    """The step on a user model runs exactly the sweeps the SBC tests (same generator)."""
    model = user_model(data)
    step = GibbsNMF(model=model)
    assert step.general and sorted(step.update_roles) == ["A", "W", "rate:lam", "tau"]
    point = model.initial_point()
    step.setup_chain(np.random.default_rng(5), 0, 5)
    f = recognize(model)
    obs = gc.observed_entries(f.X, f.mask)
    st = gc.nmf_state(np.exp(point["A_log__"]), np.exp(point["W_log__"]),
                      np.exp(point["tau_log__"]), None, obs)
    rates = {"lam": np.exp(point["lam_log__"])}
    plan, rng = plan_from_factorization(f), np.random.default_rng(5)
    for _ in range(5):
        point, stats = step.step(point)
        prior_nmf_sweep(st, obs, plan, rng, rates=rates, update={"A", "W", "tau", "lam"})
        np.testing.assert_allclose(np.exp(point["A_log__"]), st.A, rtol=1e-13)
        np.testing.assert_allclose(np.exp(point["W_log__"]), st.W, rtol=1e-13)
        np.testing.assert_allclose(np.exp(point["lam_log__"]), rates["lam"], rtol=1e-13)
        assert stats[0]["tau"] == pytest.approx(st.tau, rel=1e-13)


def test_pm_sample_user_model_and_compound(data, caplog):
    with caplog.at_level(logging.INFO, logger="pymc"), user_model(data):
        auto = pm.sample(draws=20, tune=5, chains=1, random_seed=4, **KW)
    assert _assigned(caplog) == ["GibbsNMF: [A, lam, W, tau]"]
    assert "train_mse" in auto.sample_stats
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pymc"), user_model(data, noise="sigma"):
        comp = pm.sample(draws=20, tune=5, chains=1, random_seed=4, **KW)
    assert _assigned(caplog) == [">GibbsNMF: [A, lam, W]", ">GibbsNoiseSD: [sigma]"]
    assert {"train_mse", "sigma"} <= set(comp.sample_stats.data_vars)
    # the Gibbs step used the sigma GibbsNoiseSD wrote into the point: its tau stat is
    # 1 / sigma^2 of the previous draw (GibbsNMF runs first in the compound step)
    sigma = comp.posterior["sigma"].values[0]
    tau_stat = comp.sample_stats["tau"].values[0]
    np.testing.assert_allclose(tau_stat[1:], 1 / sigma[:-1] ** 2, rtol=1e-12)
    # explicit step= keeps working
    with user_model(data) as model:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pymc"):
            pm.sample(draws=5, tune=0, chains=1, step=GibbsNMF(vars=[model["A"], model["W"]]),
                      **KW)
    assert _assigned(caplog) == [">GibbsNMF: [A, W]", ">GibbsNMF: [lam, tau]"]


def _mean_mcse(dt):
    p = dt.posterior
    ds = xr.Dataset({"AW": xr.dot(p["A"], p["W"], dim="factor"), "tau": p["tau"]})
    return ds.mean(("chain", "draw")), az.mcse(ds)


def _assert_agree(m1, s1, m2, s2):
    # |diff| < 4 * sqrt(mcse1^2 + mcse2^2) for each of 21 quantities (20 entries of A W,
    # 3 of them held out, and tau): a 4-sigma bound, false alarm ~ 21 * 6e-5 ~ 1e-3 when the
    # MCSEs are right
    for name in ("AW", "tau"):
        diff = np.abs((m1[name] - m2[name]).values)
        bound = 4 * np.sqrt(s1[name].values ** 2 + s2[name].values ** 2)
        assert (diff < bound).all(), (name, diff, bound)


@pytest.mark.slow
@pytest.mark.parametrize("hyper", ["ard_gamma", "halfcauchy_scale"])
def test_agrees_with_nuts(data, hyper):
    """Posterior means of A W and tau: automatic steps (GibbsNMF, with NUTS on an unrecognized
    hyperprior as a compound step) against NUTS on everything."""
    if hyper == "ard_gamma":
        model = user_model(data)
    else:
        with pm.Model(coords={"row": range(5), "col": range(4), "factor": range(2)}) as model:
            s = pm.HalfCauchy("s", 1.0)  # unrecognized hyperprior: NUTS takes it
            A = pm.HalfNormal("A", sigma=s, dims=("row", "factor"))
            W = pm.TruncatedNormal("W", mu=0.5, sigma=1.0, lower=0.0, dims=("factor", "col"))
            tau = pm.Gamma("tau", 2.0, 1.0)
            likelihoods.gaussian("X", A, W, observed=data, tau=tau)
    with model:
        ours = pm.sample(draws=2000, tune=500, chains=2, random_seed=1, **KW)
        nuts = pm.sample(draws=800, tune=400, chains=2, random_seed=2, nuts_sampler="pymc",
                         step=pm.NUTS(max_treedepth=6, target_accept=0.9), **KW)
    assert "train_mse" in ours.sample_stats and "train_mse" not in nuts.sample_stats
    _assert_agree(*_mean_mcse(ours), *_mean_mcse(nuts))


def test_choice_outside_a_model_context(data):
    """``pm.sample(model=m)`` enters no context; competence finds the model all the same."""
    from pymc.sampling.mcmc import assign_step_methods

    model = user_model(data)
    assert pm.Model.get_context(error_if_none=False) is None
    _, selected = assign_step_methods(model)
    assert {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs)
            for cls, vs in selected.items()} == {"GibbsNMF": ["A", "W", "lam", "tau"]}


@pytest.mark.parametrize("shape", [(30, 12), (6, 5)])
def test_prior_sweep_paths_agree(shape):
    """Gram and residual paths of the per-entry-prior sweep: the same chain up to rounding."""
    rng = np.random.default_rng(3)
    X = rng.exponential(size=(shape[0], 2)) @ rng.exponential(size=(2, shape[1]))
    X[:3, :2] = np.nan  # block-missing
    f = recognize(user_model(X))
    plan = plan_from_factorization(f)
    obs = gc.observed_entries(f.X, f.mask)
    out = {}
    for kernel in ("gram", "residual"):
        st = gc.nmf_state(np.ones((shape[0], 2)), np.ones((2, shape[1])), 1.0, None, obs)
        rates, r = {"lam": np.ones(2)}, np.random.default_rng(1)
        for _ in range(30):
            prior_nmf_sweep(st, obs, plan, r, rates=rates, update={"A", "W", "tau", "lam"},
                            kernel=kernel)
        out[kernel] = (st.A.copy(), st.W.copy(), st.tau, rates["lam"].copy())
    for a, b in zip(out["gram"], out["residual"]):
        np.testing.assert_allclose(a, b, rtol=1e-9)


def test_halfcauchy_noise_goes_to_gibbs_noise_sd(data):
    """sigma ~ HalfCauchy (not conjugate): GibbsNMF takes the factors and rate, GibbsNoiseSD
    sigma (its own step; tests/gaussian/test_noise_sd.py)."""
    from pymc.sampling.mcmc import assign_step_methods

    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(5, 2))
        lam = pm.Gamma("lam", 2.0, 2.0, shape=2)
        W = pm.Exponential("W", lam[:, None], shape=(2, 4))
        likelihoods.gaussian("X", A, W, observed=data, sigma=pm.HalfCauchy("sigma", 1.0))
        _, selected = assign_step_methods(model)
    assert recognize(model).noise.kind == "other"
    assert {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs)
            for cls, vs in selected.items()} == {"GibbsNMF": ["A", "W", "lam"],
                                                 "GibbsNoiseSD": ["sigma"]}
