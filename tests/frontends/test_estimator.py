"""`BayesianNMF`: scikit-learn estimator checks, labels in and out, NaN, uncertainty, bad input."""

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import check_estimator

from bnmfzoo import BayesianNMF

# check_estimator for every method. Seconds per config measured on the shared 2-core machine:
# defaults 42-53, multiplicative 8-11, icm 15, vb 20, gibbs_small 43, tri_gibbs_small 51,
# particles_silf 144, nuts_small 325. The defaults (the promise that `BayesianNMF()` is a
# scikit-learn estimator) and one fitter stay in the fast suite.
CONFIGS = {
    "defaults": ({}, False),
    "multiplicative": ({"method": "multiplicative", "method_kwargs": {"max_iter": 50}}, False),
    "vb": ({"method": "vb", "method_kwargs": {"max_iter": 20}}, True),
    "icm": ({"method": "icm", "method_kwargs": {"max_iter": 20}}, True),
    "gibbs_small": ({"method": "gibbs", "draws": 20, "tune": 10}, True),
    # init="random": the default Q-Transform bank (3 x 3 rotations) needs min(D, N) >= 3, and
    # scikit-learn's checks use data with 1 or 2 features
    "particles_silf": ({"model": "silf", "draws": 50,
                        "method_kwargs": {"n_particles": 5, "max_iter": 20, "init": "random"}},
                       True),
    "nuts_small": ({"method": "nuts", "draws": 20, "tune": 20, "chains": 1}, True),
    "tri_gibbs_small": ({"model": "tri_exponential_gaussian", "draws": 20, "tune": 10}, True),
}


def _config(name):
    kwargs, slow = CONFIGS[name]
    marks = [pytest.mark.slow] if slow else []
    return pytest.param(kwargs, id=name, marks=marks)


@pytest.mark.parametrize("kwargs", [_config(name) for name in CONFIGS])
def test_check_estimator(kwargs):
    # with_scikit-learn's own defaults for the checks: every one must pass (on_fail=None
    # returns a record per check instead of raising at the first failure)
    results = check_estimator(BayesianNMF(**kwargs), on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results
              if r["status"] == "failed"]
    assert failed == []
    assert len(results) > 40


@pytest.fixture
def frame(rng):
    A = rng.exponential(size=(30, 3))
    W = rng.exponential(size=(3, 12))
    X = A @ W + 0.05 * rng.random((30, 12))
    X[rng.random(X.shape) < 0.1] = np.nan
    index = pd.Index([f"cell{i}" for i in range(30)], name="cell_line")
    columns = pd.Index([f"drug{j}" for j in range(12)], name="drug")
    return pd.DataFrame(X, index=index, columns=columns)


def test_dataframe_with_nan_keeps_its_labels(frame):
    est = BayesianNMF(n_components=3, random_state=0).fit(frame)
    post = est.posterior_["posterior"]
    assert list(post["A"]["row"].values) == list(frame.index)
    assert list(post["W"]["col"].values) == list(frame.columns)
    assert list(est.feature_names_in_) == list(frame.columns)
    assert list(est.get_feature_names_out()) == ["bayesiannmf0", "bayesiannmf1", "bayesiannmf2"]
    est.set_output(transform="pandas")
    out = est.transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(frame.index)
    assert list(out.columns) == list(est.get_feature_names_out())
    assert out.shape == (30, 3)
    assert (out.to_numpy() >= 0).all()


def test_same_seed_same_fit_and_sklearn_names(frame):
    a = BayesianNMF(n_components=3, random_state=7).fit(frame)
    b = BayesianNMF(n_components=3, random_state=7).fit(frame)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.get_params()["n_components"] == 3 and a.get_params()["random_state"] == 7
    assert a.n_components_ == 3
    assert a.n_iter_ == a.tune + a.draws  # Gibbs: sweeps per chain


def test_fit_with_missing_values_and_attributes(frame):
    X = frame.to_numpy()
    est = BayesianNMF(n_components=3, method="vb", random_state=1,
                      method_kwargs={"max_iter": 300}).fit(X)
    assert est.components_.shape == (3, 12)
    assert est.A_.shape == (30, 3)
    assert "posterior" in est.posterior_.children
    assert est.n_iter_ == est.posterior_["variational"].sizes["iteration"]
    obs = ~np.isnan(X)
    resid = np.nan_to_num(X) - est.A_ @ est.components_
    # the reported error averages A @ W per draw; it must be close to the plug-in error and
    # small relative to ||X|| (the data are rank 3 plus noise of size 0.05)
    assert est.reconstruction_err_ < 0.1 * np.linalg.norm(X[obs])
    assert est.reconstruction_err_ == pytest.approx(np.linalg.norm(resid[obs]), rel=0.2)
    # transform of the training data recovers A up to the fit's own error
    T = est.transform(X)
    assert np.linalg.norm((T @ est.components_ - np.nan_to_num(X))[obs]) < (
        1.05 * est.reconstruction_err_ + 1e-9)
    # score is minus the mean squared error of exactly that reconstruction
    expected = -np.mean(((T @ est.components_ - np.nan_to_num(X))[obs]) ** 2)
    assert est.score(X) == pytest.approx(expected)


def test_uncertainty_sd_and_draws(frame):
    from bnmfzoo.diagnostics._modes.point_estimate import point_estimate

    est = BayesianNMF(n_components=3, random_state=0, draws=100).fit(frame)
    _, W, info = point_estimate(est.posterior_)
    np.testing.assert_allclose(est.components_, W)
    mode_draws, weights = info["W_draws"], info["draw_weights"]
    assert est.components_sd_.shape == est.components_.shape
    # the spread within the heaviest mode, factors aligned (never across unmatched labels)
    np.testing.assert_allclose(
        est.components_sd_, np.sqrt(np.tensordot(weights, (mode_draws - W) ** 2, axes=1)))
    assert (est.components_sd_ > 0).all()
    sample = est.sample_components(10, random_state=3)
    assert sample.shape == (10, 3, 12)
    # each returned draw is one of that mode's aligned draws, and no draw is repeated
    matches = [np.flatnonzero((mode_draws == s).all(axis=(1, 2))) for s in sample]
    assert all(m.size >= 1 for m in matches)
    assert len({int(m[0]) for m in matches}) == 10
    # aligned: each sampled factor is closest in angle to the same factor of components_
    unit = est.components_ / np.linalg.norm(est.components_, axis=1, keepdims=True)
    for s in sample:
        cos = (s / np.linalg.norm(s, axis=1, keepdims=True)) @ unit.T
        assert (cos.argmax(axis=1) == np.arange(3)).all()
    np.testing.assert_array_equal(sample, est.sample_components(10, random_state=3))
    with pytest.raises(ValueError, match="n_samples"):
        est.sample_components(0)


def test_pymc_log_lines_silenced(frame, capfd):
    BayesianNMF(n_components=2, random_state=0, draws=10, tune=10).fit(frame)
    captured = capfd.readouterr()
    assert "GibbsNMF" not in captured.err + captured.out
    assert "Sequential sampling" not in captured.err + captured.out


def test_negative_data_gaussian_accepted_others_refused(rng):
    X = rng.exponential(0.3, size=(12, 6)) + rng.normal(0.0, 0.5, size=(12, 6))
    assert (X < 0).any()
    est = BayesianNMF(n_components=2, random_state=0, draws=20, tune=10).fit(X)
    assert (est.components_ >= 0).all()
    assert not est.__sklearn_tags__().input_tags.positive_only
    for kwargs in ({"method": "multiplicative"}, {"model": "silf"}):
        assert BayesianNMF(**kwargs).__sklearn_tags__().input_tags.positive_only
        with pytest.raises(ValueError, match="Negative values"):
            BayesianNMF(n_components=2, **kwargs).fit(X)


def test_bad_input():
    with pytest.raises(ValueError, match="n_components"):
        BayesianNMF(n_components=9, method="vb").fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="unknown model"):
        BayesianNMF(n_components=1, model="nope").fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="unknown method"):
        BayesianNMF(n_components=1, method="nope").fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="draws"):
        BayesianNMF(n_components=1, draws=0).fit(np.ones((5, 4)))
    with pytest.raises(TypeError, match="random_state"):
        BayesianNMF(n_components=1, method="vb", random_state="x").fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="binary"):
        BayesianNMF(n_components=1, model="beta_dir").fit(np.full((5, 4), 0.5))
