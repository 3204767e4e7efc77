"""GibbsNoiseSD: the noise sd ``sigma ~ HalfNormal``/``HalfCauchy`` of a Gaussian NMF.

Checks: ``pm.sample()`` assigns it (with GibbsNMF on the rest) exactly when ``sigma`` is the
likelihood's sd and used nowhere else; its draws given fixed A, W follow the conditional computed
independently, by quadrature of ``sigma^-n exp(-SSR / (2 sigma^2)) p(sigma)`` on a grid (KS test,
level 0.001: the HalfNormal draws are exact and independent, so the false-failure rate is 0.1%
by construction; the HalfCauchy kernel's chain is thinned by its measured ESS, rate close to
that). The SBC of the whole compound step is ``test_sbc_sigma_halfnormal_compound_step``
(``test_recognize_sbc.py``, slow).
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from bnmfzoo import likelihoods
from bnmfzoo.diagnostics.calibration import chain_ess
from bnmfzoo.inference import GibbsNoiseSD

D, N, R = 5, 4, 2
X = np.random.default_rng(3).exponential(size=(D, N))
X[0, 0] = np.nan


def _model(prior="halfnormal", scale=1.0, extra_use=False, sd_times=1.0):
    with pm.Model() as model:
        if prior == "halfnormal":
            sigma = pm.HalfNormal("sigma", scale)
        elif prior == "halfcauchy":
            sigma = pm.HalfCauchy("sigma", scale)
        else:  # a random scale: not recognized
            sigma = pm.HalfNormal("sigma", pm.Gamma("s", 2.0, 2.0))
        A = pm.HalfNormal("A", sigma if extra_use else 1.0, shape=(D, R))
        lam = pm.Gamma("lam", 2.0, 2.0, shape=R)
        W = pm.Exponential("W", lam[:, None], shape=(R, N))
        likelihoods.gaussian("X", A, W, observed=X, sigma=sd_times * sigma)
    return model


def _assigned(model):
    from pymc.sampling.mcmc import assign_step_methods

    return {(c.__name__, tuple(sorted(model.values_to_rvs[v].name for v in vs)))
            for c, vs in assign_step_methods(model)[1].items() if vs}


@pytest.mark.parametrize("prior", ["halfnormal", "halfcauchy"])
def test_pm_sample_assigns_gibbs_noise_sd(prior):
    model = _model(prior)
    assert _assigned(model) == {("GibbsNMF", ("A", "W", "lam")), ("GibbsNoiseSD", ("sigma",))}
    with model:
        idata = pm.sample(draws=5, tune=0, chains=1, cores=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    stats_names = set(idata["sample_stats"].data_vars)
    assert "sigma" in stats_names and "step_size" not in stats_names, stats_names  # no NUTS


@pytest.mark.parametrize("kw, why", [
    (dict(extra_use=True), "used outside the likelihood"),
    (dict(prior="random_scale"), "random or shifted scale"),
    (dict(sd_times=2.0), "a function of"),
])
def test_left_to_nuts_when_not_recognized(kw, why):
    model = _model(**kw)
    assert any(c == "NUTS" and "sigma" in names for c, names in _assigned(model))
    with pytest.raises(TypeError, match=why):
        GibbsNoiseSD(model=model)


def _conditional_cdf(prior, scale, ssr, n):
    """CDF of sigma | A, W by quadrature on a grid (independent of the step's formulas)."""
    if prior == "halfnormal":
        logprior = lambda s: -s**2 / (2 * scale**2)  # noqa: E731
    else:
        logprior = lambda s: -np.log1p((s / scale) ** 2)  # noqa: E731
    grid = np.linspace(1e-4, 20.0, 400_001)
    logf = -n * np.log(grid) - ssr / (2 * grid**2) + logprior(grid)
    f = np.exp(logf - logf.max())
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2)])
    cdf /= cdf[-1]
    return lambda x: np.interp(x, grid, cdf)


def _draws(step, point, n_draws):
    out = np.empty(n_draws)
    for i in range(n_draws):
        point, st = step.step(point)
        out[i] = st[0]["sigma"]
    return out


@pytest.mark.parametrize("prior, scale", [("halfnormal", 1.0), ("halfnormal", 0.3),
                                          ("halfcauchy", 1.0), ("halfcauchy", 0.2)])
def test_draws_follow_the_conditional(prior, scale):
    model = _model(prior, scale)
    step = GibbsNoiseSD(model=model, rng=11)
    rng = np.random.default_rng(5)
    point = model.initial_point()
    A, W = rng.exponential(size=(D, R)), rng.exponential(size=(R, N))
    point["A_log__"], point["W_log__"] = np.log(A), np.log(W)
    r = (X - A @ W)[~np.isnan(X)]
    ssr, n = float(r @ r), r.size
    assert np.isclose(step.ssr(point), ssr, rtol=1e-12)
    draws = _draws(step, point, 10_000)
    if prior == "halfcauchy":  # a Markov chain: keep about ESS nearly independent draws
        ess = chain_ess({"sigma": draws})
        draws = draws[::int(np.ceil(draws.size / ess))]
        assert draws.size > 500, draws.size
    cdf = _conditional_cdf(prior, scale, ssr, n)
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    # power: the conditional for a residual sum of squares 30% off is rejected
    assert stats.kstest(draws, _conditional_cdf(prior, scale, 1.3 * ssr, n)).pvalue < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("prior", ["halfnormal", "halfcauchy"])
def test_compound_step_agrees_with_nuts(prior):
    """``pm.sample()``'s compound step (GibbsNMF + GibbsNoiseSD) against PyMC's NUTS on every
    variable, same model and data: posterior means of the 20 entries of A W (label-invariant)
    and of sigma. Under agreement each ``z = diff / sqrt(mcse1^2 + mcse2^2)`` is about N(0, 1)
    (MCSE from ESS), so ``|z| < 4`` for all 21 fails with probability < 21 * 6.3e-5 < 0.2%."""
    import arviz_stats as azs

    from bnmfzoo.inference import pymc_default_steps

    model = _model(prior)
    kw = dict(chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
    with model:
        ours = pm.sample(draws=5000, tune=300, random_seed=7, **kw)
        with pymc_default_steps():
            nuts = pm.sample(draws=2000, tune=1000, random_seed=8, target_accept=0.95, **kw)
    assert "step_size" in nuts["sample_stats"] and "step_size" not in ours["sample_stats"]

    def scalars(dt):
        p = dt["posterior"]
        aw = np.einsum("cdik,cdkj->cdij", p["A"].values, p["W"].values).reshape(
            *p["A"].shape[:2], -1)
        return np.concatenate([aw, p["sigma"].values[..., None]], axis=-1)

    a, b = scalars(ours), scalars(nuts)
    diff = a.mean(axis=(0, 1)) - b.mean(axis=(0, 1))
    se = np.sqrt(azs.mcse(a, chain_axis=0, draw_axis=1) ** 2
                 + azs.mcse(b, chain_axis=0, draw_axis=1) ** 2)
    z = diff / se
    assert np.all(np.abs(z) < 4), z
    assert se[-1] < 0.05 * b[..., -1].mean()  # sigma's comparison has resolving power


def test_transposed_factor_and_plain_normal():
    """W stored as N x R and a plain ``pm.Normal`` on the observed entries: the same SSR."""
    m = ~np.isnan(X)
    with pm.Model() as model:
        A = pm.Exponential("A", 1.0, shape=(D, R))
        Wt = pm.Exponential("Wt", 1.0, shape=(N, R))
        pm.Normal("X", mu=(A @ Wt.T)[m], sigma=pm.HalfCauchy("sigma", 2.0), observed=X[m])
    assert _assigned(model) == {("GibbsNMF", ("A", "Wt")), ("GibbsNoiseSD", ("sigma",))}
    step = GibbsNoiseSD(model=model, rng=0)
    rng = np.random.default_rng(1)
    A, Wt = rng.exponential(size=(D, R)), rng.exponential(size=(N, R))
    point = {**model.initial_point(), "A_log__": np.log(A), "Wt_log__": np.log(Wt)}
    r = (X - A @ Wt.T)[m]
    assert np.isclose(step.ssr(point), float(r @ r), rtol=1e-12)
