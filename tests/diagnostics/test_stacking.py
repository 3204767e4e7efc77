"""Stacking of non-mixing chains (Yao, Vehtari & Gelman 2022) and labelled observations."""

import warnings

import arviz_stats as azs
import numpy as np
import pymc as pm
import pytest
import xarray as xr

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics._modes.stacking import (
    add_log_likelihood,
    chain_elpd,
    chain_weights,
    label_observations,
    stacking_weights,
)


def _normal_chains(mus, n_obs=60, S=300, seed=0):
    """Chains of draws of a normal mean (chain c near mus[c]) with their log-likelihoods."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1.0, n_obs)
    mu = np.stack([rng.normal(m, 0.1, S) for m in mus])
    ll = -0.5 * (y - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    dt = build_datatree({"mu": mu})
    dt["log_likelihood"] = xr.DataTree(xr.Dataset({"y": (("chain", "draw", "obs"), ll)}))
    return dt


def test_stacking_weights_simplex_and_agree_with_arviz_compare():
    dt = _normal_chains([0.0, 0.7, -0.6])
    el = chain_elpd(dt)
    lpd = el["elpd_i"].values
    w = stacking_weights(lpd)
    assert w.shape == (3,) and (w >= 0).all() and w.sum() == pytest.approx(1.0)
    # arviz_stats.compare(method="stacking") solves the same problem on the same elpd_i
    loos = {}
    for c in range(3):
        sub = xr.DataTree.from_dict({"posterior": dt.posterior.to_dataset().isel(chain=[c]),
                                     "log_likelihood": dt.log_likelihood.to_dataset()
                                     .isel(chain=[c])})
        loos[f"c{c}"] = azs.loo(sub, pointwise=True)
    ref = azs.compare(loos, method="stacking")["weight"]
    ref = np.array([ref[f"c{c}"] for c in range(3)])
    # both optimizers stop at tolerance ~1e-6 on a smooth concave objective
    assert np.allclose(w, ref, atol=1e-3)


def test_stacking_weights_log_domain_and_input_checks():
    # densities far below exp(-745) underflow in exp(lpd); the per-observation shift does not
    lpd = np.log(np.array([[0.9, 0.1], [0.8, 0.2]])) - 2000.0
    assert stacking_weights(lpd).round(6).tolist() == [1.0, 0.0]
    assert stacking_weights(np.zeros((4, 1))).tolist() == [1.0]
    with pytest.raises(ValueError, match="lpd"):
        stacking_weights(np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        stacking_weights(np.array([[0.0, np.nan]]))


def test_chain_in_better_mode_gets_the_weight():
    # three chains stuck at a mean that misfits the data (mu = 2.5), one at the truth (mu = 0)
    dt = _normal_chains([2.5, 0.0, 2.5, 2.5], seed=1)
    w = chain_weights(dt)
    assert w.dims == ("chain",) and w.sum() == pytest.approx(1.0) and (w >= 0).all()
    # elpd differs by ~n_obs * 2.5^2 / 2 = 190 nats: the stacking optimum is the good chain
    assert float(w.sel(chain=1)) > 0.99
    # pooling draws would have given the bad mode 3/4 of the mass


def test_no_log_likelihood_group():
    dt = build_datatree({"mu": np.zeros((2, 5))})
    with pytest.raises(ValueError, match="log_likelihood"):
        chain_weights(dt)


@pytest.fixture(scope="module")
def gibbs_run():
    from bnmfzoo.datasets import laurberg
    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=0)
    X = d.X.copy()
    X.values[0, 1] = np.nan  # one missing entry: flat indices skip it
    model = exponential_gaussian(X, 3)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = pm.sample(step=GibbsNMF(), draws=100, tune=50, chains=2, cores=1, random_seed=2,
                       progressbar=False, compute_convergence_checks=False)
        add_log_likelihood(dt, model)
    return X, dt


def test_add_log_likelihood_labels_entries(gibbs_run):
    X, dt = gibbs_run
    ll = dt["log_likelihood"].to_dataset()
    obs = dt["observed_data"].to_dataset()
    (dim,) = [d for d in obs["X"].dims]
    assert dim in ll["X"].dims and ll["X"].sizes[dim] == 35
    for ds in (ll, obs):
        assert {"row", "col", "row_index", "col_index"} <= set(ds.coords)
    # each observed value sits at its (row, col) in the data matrix, labels included
    i, j = obs["row_index"].values, obs["col_index"].values
    assert np.array_equal(obs["X"].values, X.values[i, j])
    assert np.array_equal(obs["row"].values, X["row"].values[i])
    assert np.array_equal(obs["col"].values, X["col"].values[j])
    assert (0, 1) not in set(zip(i.tolist(), j.tolist()))
    # LOO values come back labelled by cell
    el = chain_elpd(dt)
    assert "row" in el["elpd_i"].coords and el["elpd_i"].dims == (dim, "chain")
    w = chain_weights(dt)
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()


def test_label_observations_is_idempotent(gibbs_run):
    _, dt = gibbs_run
    again = label_observations(dt)
    xr.testing.assert_identical(again["observed_data"].to_dataset(),
                                dt["observed_data"].to_dataset())


@pytest.mark.slow
@pytest.mark.data
def test_ccle_ic50_four_gibbs_chains(data_home):
    """CCLE IC50, rank 3, 4 Gibbs chains. Since ``GibbsNMF`` mixes within its mode
    (overrelaxation and the exact rescaling) the chains agree on one mode, the one mode whose
    mass 1 ``bnmfzoo masses`` establishes on this matrix by two estimators
    (``docs/results/masses_copula_reference_3.md`` section 37). ``modes`` then says that chains
    which agree without crossing leave other modes' masses unknown; ``summary`` has no mode
    level; the stacking weights lie on the simplex. (With the earlier sweep the chains sat in
    different modes and this test asserted that; stacking across modes is tested above.)"""
    from bnmfzoo.datasets import load_ccle
    from bnmfzoo.diagnostics import summary
    from bnmfzoo.diagnostics._modes.mode_clustering import modes
    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian

    X = load_ccle(kind="ic50", data_home=data_home)
    model = exponential_gaussian(X, 3)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = pm.sample(step=GibbsNMF(), chains=4, cores=1, random_seed=11, progressbar=False,
                       compute_convergence_checks=False)
        add_log_likelihood(dt, model)
    with pytest.warns(UserWarning, match="in one mode, but no chain was shown to cross"):
        m = modes(dt)["modes"]
    assert m.sizes["mode"] == 1
    table = summary(dt, var_names=["A"])
    assert "mode" not in table.index.names and len(table) == X.shape[0] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto k of the chains' PSIS-LOO
        w = chain_weights(dt)
        mw = modes(dt, weights="stacking", warn=False)["modes"]["weight"].values
    assert w.sum() == pytest.approx(1.0) and (w >= -1e-12).all()
    assert mw.tolist() == pytest.approx([1.0])


def test_mcmc_methods_record_log_likelihood_when_small():
    from bnmfzoo._registry import run_method
    from bnmfzoo.diagnostics._modes.stacking import maybe_add_log_likelihood
    from bnmfzoo.models import exponential_gaussian

    X = np.random.default_rng(0).random((12, 7))
    model = exponential_gaussian(X, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = run_method("gibbs", model, draws=30, tune=10, chains=2, random_seed=0,
                        progressbar=False)
    assert "log_likelihood" in dt.children  # 2 x 30 x 84 values: under the size limit
    assert "row" in dt["observed_data"].to_dataset().coords
    big = dt.copy()
    del big["log_likelihood"]
    maybe_add_log_likelihood(big, model, max_values=10)  # over the limit: labels only
    assert "log_likelihood" not in big.children


def test_sample_records_labelled_log_likelihood_by_default():
    """bnmfzoo.inference.sample (pm.sample with our defaults) gives az.loo and chain_weights
    what they need without extra calls: a log_likelihood group whose observed entries carry
    the data's row/col labels; log_likelihood=False keeps only the labels."""
    import pandas as pd

    from bnmfzoo.inference import GibbsNMF, sample
    from bnmfzoo.models import exponential_gaussian

    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.exponential(size=(7, 5)), index=[f"cell{i}" for i in range(7)],
                      columns=[f"drug{j}" for j in range(5)])
    df.iloc[2, 3] = np.nan
    model = exponential_gaussian(df, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = sample(model, step=GibbsNMF, draws=40, tune=20, chains=2, random_seed=3,
                    progressbar=False)
        plain = sample(model, step=GibbsNMF, draws=40, tune=20, chains=2, random_seed=3,
                       progressbar=False, log_likelihood=False)
    ll = dt["log_likelihood"]["X"]
    assert ll.sizes["X_obs"] == 34
    cells = set(zip(ll["row"].values.tolist(), ll["col"].values.tolist()))
    assert ("cell0", "drug0") in cells and ("cell2", "drug3") not in cells
    obs = dt["observed_data"]["X"]
    assert np.array_equal(obs.values, df.values[obs["row_index"].values, obs["col_index"].values])
    w = chain_weights(dt)
    assert w.sum() == pytest.approx(1.0)
    assert "log_likelihood" not in plain.children
    assert "row" in plain["observed_data"].to_dataset().coords
    np.testing.assert_array_equal(plain["posterior"]["A"].values, dt["posterior"]["A"].values)
    with pytest.raises(ValueError, match="log_likelihood must be"):
        sample(model, step=GibbsNMF, draws=2, tune=0, chains=1, log_likelihood="yes")
