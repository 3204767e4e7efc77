"""GibbsNMF / GibbsNMTF as PyMC step methods: same draws as the kernel, seeds, cores, NUTS."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

from bnmfzoo.inference import GibbsNMF, GibbsNMTF
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.models import exponential_gaussian, tri_exponential_gaussian
from bnmfzoo.models._spec import find_spec


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(5, 2)) @ rng.exponential(size=(2, 4))
    X = np.abs(X + rng.normal(scale=0.3, size=(5, 4)))
    X[0, 1] = X[2, 3] = X[4, 0] = np.nan  # 3 missing entries
    return X


@pytest.fixture(scope="module")
def nmf_model(data):
    return exponential_gaussian(data, 2, lambda_=1.0)


@pytest.fixture(scope="module")
def gibbs_run(nmf_model):
    with nmf_model:
        return pm.sample(draws=2000, tune=500, chains=2, cores=1, step=GibbsNMF(),
                         random_seed=1, progressbar=False, compute_convergence_checks=False)


def _run_step(step, point, rng, n):
    step.setup_chain(rng, 0, n)
    out = []
    for _ in range(n):
        point, stats = step.step(point)
        out.append((point, stats[0]))
    return out


@pytest.mark.parametrize("ard", [False, True])
def test_nmf_step_equals_kernel(data, ard):
    model = exponential_gaussian(data, 2, ard=ard)
    step = GibbsNMF(model=model)
    point = model.initial_point()
    trace = _run_step(step, point, np.random.default_rng(5), 10)

    spec = find_spec(model)
    obs = gc.observed_entries(spec.X, spec.mask)
    st = gc.nmf_state(np.exp(point["A_log__"]), np.exp(point["W_log__"]),
                      np.exp(point["tau_log__"]),
                      np.exp(point["lambda__log__"]) if ard else None, obs)
    rng = np.random.default_rng(5)
    for p, stats in trace:  # GibbsNMF's defaults: overrelaxed updates and the rescaling move
        gc.nmf_sweep(st, obs, spec.hyper, rng, overrelax=-0.9, rescale=True)
        np.testing.assert_allclose(np.exp(p["A_log__"]), st.A, rtol=1e-13)
        np.testing.assert_allclose(np.exp(p["W_log__"]), st.W, rtol=1e-13)
        assert stats["tau"] == pytest.approx(st.tau, rel=1e-13)
        assert stats["train_mse"] == pytest.approx(st.train_mse(), rel=1e-12)
        if ard:
            np.testing.assert_allclose(np.exp(p["lambda__log__"]), st.lambda_, rtol=1e-13)


def test_nmtf_step_equals_kernel(data):
    model = tri_exponential_gaussian(data, (2, 3), ard=True)
    step = GibbsNMTF(model=model)
    point = model.initial_point()
    trace = _run_step(step, point, np.random.default_rng(6), 5)
    spec = find_spec(model)
    obs = gc.observed_entries(spec.X, spec.mask)
    ex = {k: np.exp(v) for k, v in point.items()}
    st = gc.nmtf_state(ex["F_log__"], ex["S_log__"], ex["G_log__"], ex["tau_log__"],
                       ex["lambda_F_log__"], ex["lambda_G_log__"], obs)
    rng = np.random.default_rng(6)
    for p, _ in trace:
        gc.nmtf_sweep(st, obs, spec.hyper, rng)
        for name in ("F", "S", "G", "lambda_F", "lambda_G"):
            np.testing.assert_allclose(np.exp(p[f"{name}_log__"]), getattr(st, name),
                                       rtol=1e-13)


def test_seeds_chains_cores(data):
    model = tri_exponential_gaussian(data, (2, 2))
    kw = dict(draws=30, tune=10, chains=2, random_seed=4, progressbar=False,
              compute_convergence_checks=False)
    with model:
        a = pm.sample(step=GibbsNMTF(), cores=1, **kw)
        b = pm.sample(step=GibbsNMTF(), cores=2, **kw)  # multiprocess: the step pickles
        c = pm.sample(step=GibbsNMTF(), cores=1, **{**kw, "random_seed": 5})
    assert np.array_equal(a.posterior["S"].values, b.posterior["S"].values)
    assert not np.array_equal(a.posterior["S"].values, c.posterior["S"].values)
    # chains differ from each other
    assert not np.array_equal(a.posterior["S"].values[0], a.posterior["S"].values[1])
    assert set(a.sample_stats.data_vars) >= {"train_mse", "tau"}
    assert a.posterior["G"].dims == ("chain", "draw", "col", "factor_col")


def test_fixed_sigma_and_subset_vars(data, gibbs_run, nmf_model):
    model = exponential_gaussian(data, 2, sigma=0.5)
    with model:
        dt = pm.sample(draws=20, tune=0, chains=1, step=GibbsNMF(), random_seed=1,
                       progressbar=False, compute_convergence_checks=False)
    np.testing.assert_allclose(dt.sample_stats["tau"].values, 4.0)
    # two Gibbs steps on complementary blocks give the same posterior as one full step
    with nmf_model:
        step = [GibbsNMF([nmf_model["A"], nmf_model["W"]]), GibbsNMF([nmf_model["tau"]])]
        split = pm.sample(draws=2000, tune=500, chains=2, step=step, cores=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    full_mean, full_se = _mean_mcse(gibbs_run)
    split_mean, split_se = _mean_mcse(split)
    _assert_agree(full_mean, full_se, split_mean, split_se)


def test_refuses_other_models(data):
    with pm.Model() as plain:
        pm.Normal("x")
    with pytest.raises(TypeError, match="GibbsNMF cannot sample this model: the model has no "
                       "observed variable"):
        GibbsNMF(model=plain)
    with pytest.raises(TypeError, match=r"GibbsNMTF samples X ~ F S G\^T models; this model is "
                       "X ~ A W"):
        GibbsNMTF(model=exponential_gaussian(data, 2))
    with pytest.raises(TypeError, match=r"GibbsNMF samples X ~ A W models; this model is "
                       r"X ~ F S G\^T"):
        GibbsNMF(model=tri_exponential_gaussian(data, (2, 2)))


def _mean_mcse(dt):
    p = dt.posterior
    ds = xr.Dataset({"AW": xr.dot(p["A"], p["W"], dim="factor"), "tau": p["tau"]})
    return ds.mean(("chain", "draw")), az.mcse(ds)


def _assert_agree(m1, s1, m2, s2):
    # |diff| < 4 * sqrt(mcse1^2 + mcse2^2) for each of 21 quantities (20 entries of A W,
    # 3 of them held out, and tau): a 4-sigma bound, false alarm ~ 21 * 6e-5 ~ 1e-3
    for name in ("AW", "tau"):
        diff = np.abs((m1[name] - m2[name]).values)
        bound = 4 * np.sqrt(s1[name].values ** 2 + s2[name].values ** 2)
        assert (diff < bound).all(), (name, diff, bound)


def test_gibbs_agrees_with_nuts(nmf_model, gibbs_run):
    # NUTS with max_treedepth=6 (still an exact MCMC kernel, only less efficient per step) so
    # the run is short; MCSE from arviz accounts for its autocorrelation
    with nmf_model:
        nuts = pm.sample(draws=800, tune=400, chains=2, cores=1,
                         step=pm.NUTS(max_treedepth=6, target_accept=0.9), random_seed=2,
                         progressbar=False, compute_convergence_checks=False)
    _assert_agree(*_mean_mcse(gibbs_run), *_mean_mcse(nuts))


def test_ard_switches_off_extra_factors():
    rng = np.random.default_rng(9)
    A, W = rng.exponential(size=(30, 5)), rng.exponential(size=(5, 20))
    X = A @ W + rng.normal(scale=0.1, size=(30, 20))
    X = np.abs(X)
    X[rng.random(X.shape) < 0.1] = np.nan
    model = exponential_gaussian(X, 10, ard=True)
    with model:
        dt = pm.sample(draws=1000, tune=4000, chains=2, cores=1, step=GibbsNMF(),
                       random_seed=7, progressbar=False, compute_convergence_checks=False)
    post = dt.posterior
    lam = post["lambda_"].mean("draw").values  # (chain, factor)
    # total mass sum_ij A_ik W_kj of each rank-1 term
    mass = (post["A"].sum("row") * post["W"].sum("col")).mean("draw").values
    # ARD works slowly in Gibbs (a switched-off factor's entries follow their prior, so its
    # rate settles near 5-8 rather than growing without bound) and chains can stay in a
    # 6-active-factor state (one surplus factor absorbing noise). Measured (3 chains, this
    # seed): off factors have mass 10-12.5 and rates 6.4-7.1; active ones mass 340-910 and
    # rates 0.8-1.3. So per chain: 4 or 5 factors off (never a true one), every off factor
    # with a rate > 3x every active one, and 5 off in at least one chain.
    n_off = []
    for c in range(2):
        off = mass[c] < 0.05 * mass[c].max()
        n_off.append(int(off.sum()))
        assert 4 <= off.sum() <= 5, mass[c]
        assert lam[c][off].min() > 3 * lam[c][~off].max(), lam[c]
    assert max(n_off) == 5, n_off
