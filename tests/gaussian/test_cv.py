"""Tests of the cross-validation runner (serial and Dask give identical folds and results)."""

import functools

import numpy as np
import pytest

from bnmfzoo.inference.gaussian.cross_validation import cross_validate, posterior_prediction
from bnmfzoo.inference.gaussian.variational.vb import fit_vb
from bnmfzoo.models import exponential_gaussian


def _data():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(25, 2)) @ rng.exponential(size=(2, 15))
    X = np.abs(X + 0.3 * rng.normal(size=X.shape))
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def test_serial_equals_dask():
    distributed = pytest.importorskip("distributed")
    X = _data()
    make = functools.partial(exponential_gaussian, rank=2)
    serial = cross_validate(make, X, method="icm", k=3, random_seed=1, max_iter=30)
    assert len(serial) == 3
    assert np.all(serial["mse"] > 0)
    # the folds partition the splittable observed entries
    assert serial["n_test"].sum() <= np.isfinite(X).sum()
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as client:
        par = cross_validate(make, X, method="icm", k=3, random_seed=1, client=client,
                             max_iter=30)
    np.testing.assert_array_equal(par["mse"].values, serial["mse"].values)
    np.testing.assert_array_equal(par["seed"].values, serial["seed"].values)


def test_prediction_is_mean_of_products():
    X = _data()
    dt = fit_vb(exponential_gaussian(X, 2), max_iter=10, n_draws=50, random_seed=0,
                progressbar=False)
    A = dt["posterior"]["A"].values[0]
    W = dt["posterior"]["W"].values[0]
    expected = np.mean([a @ w for a, w in zip(A, W)], axis=0)
    np.testing.assert_allclose(posterior_prediction(dt), expected, rtol=1e-12)


def test_vb_cv_beats_column_mean():
    # rank-2 data with noise sd 0.3: held-out MSE of VB must beat predicting each column's
    # training mean (which ignores the low-rank structure) by a wide margin
    X = _data()
    res = cross_validate(functools.partial(exponential_gaussian, rank=2), X, k=3,
                         random_seed=0, max_iter=100, n_draws=20)
    col_var = np.nanvar(X, axis=0).mean()
    assert res["mse"].mean() < 0.5 * col_var


def test_bad_method():
    with pytest.raises(ValueError, match="method"):
        cross_validate(functools.partial(exponential_gaussian, rank=2), _data(), method="x")
    with pytest.raises(TypeError, match="make_model"):
        cross_validate(None, _data())
