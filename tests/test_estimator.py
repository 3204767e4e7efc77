"""`BayesianNMF`: the scikit-learn estimator checks, NaN handling, attributes."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from bnmfzoo import BayesianNMF


def _fast(**kwargs):
    return BayesianNMF(rank=2, method="vb", random_seed=0,
                       method_kwargs={"max_iter": 20, "n_draws": 50}, **kwargs)


@parametrize_with_checks([_fast()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_fit_with_missing_values_and_attributes(rng):
    A = rng.exponential(size=(30, 3))
    W = rng.exponential(size=(3, 12))
    X = A @ W + 0.05 * rng.random((30, 12))
    X[rng.random(X.shape) < 0.1] = np.nan
    est = BayesianNMF(rank=3, method="vb", random_seed=1,
                      method_kwargs={"max_iter": 300, "n_draws": 200}).fit(X)
    assert est.components_.shape == (3, 12)
    assert est.A_.shape == (30, 3)
    assert "posterior" in est.posterior_.children
    obs = ~np.isnan(X)
    resid = np.nan_to_num(X) - est.A_ @ est.components_
    # the reported error averages A @ W per draw; it must be close to (and, by Jensen on the
    # residual, typically not above) the plug-in error, and small relative to ||X||
    assert est.reconstruction_err_ < 0.1 * np.linalg.norm(X[obs])
    assert est.reconstruction_err_ == pytest.approx(np.linalg.norm(resid[obs]), rel=0.2)
    # transform of the training data recovers A up to the fit's own error
    T = est.transform(X)
    assert np.linalg.norm((T @ est.components_ - np.nan_to_num(X))[obs]) < (
        1.05 * est.reconstruction_err_ + 1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="Negative values"):
        _fast().fit(-np.ones((5, 4)))
    with pytest.raises(ValueError, match="rank"):
        BayesianNMF(rank=9, method="vb").fit(np.ones((5, 4)))
    with pytest.raises(ValueError, match="unknown model"):
        BayesianNMF(rank=1, model="nope").fit(np.ones((5, 4)))
