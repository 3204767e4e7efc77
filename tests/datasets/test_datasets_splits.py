"""Train/test splits over observed entries: disjointness, coverage, fractions, errors."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo.datasets import holdout_columns, holdout_mask, kfold_masks


@pytest.fixture(scope="module")
def sparse():
    """40 x 60 with ~30 % observed, a singleton row and a singleton column."""
    rng = np.random.default_rng(7)
    X = rng.random((40, 60))
    X[rng.random(X.shape) > 0.3] = np.nan
    X[0] = np.nan
    X[0, 5] = 1.0  # row 0 has one observation
    X[:, 7] = np.nan
    X[3, 7] = 2.0  # column 7 has one observation
    X[:, 9] = np.nan  # an all-missing column
    return X


def _nonempty(train, observed):
    rows = observed.any(axis=1)
    cols = observed.any(axis=0)
    return (train.any(axis=1) | ~rows).all() and (train.any(axis=0) | ~cols).all()


def test_holdout_mask_basic(sparse):
    observed = ~np.isnan(sparse)
    train, test = holdout_mask(sparse, 0.2, random_seed=0)
    assert train.dtype == bool and test.dtype == bool and train.shape == sparse.shape
    assert not (train & test).any()
    assert np.array_equal(train | test, observed)  # over observed entries only
    assert test.sum() == round(0.2 * observed.sum())  # exact fraction (rounded count)
    assert _nonempty(train, observed)
    assert train[0, 5] and train[3, 7]  # singletons are never held out


def test_holdout_mask_reproducible_and_inputs(sparse):
    a = holdout_mask(sparse, 0.1, random_seed=3)
    b = holdout_mask(sparse, 0.1, random_seed=3)
    c = holdout_mask(sparse, 0.1, random_seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[1], c[1])
    observed = ~np.isnan(sparse)
    from_mask = holdout_mask(observed, 0.1, random_seed=3)  # a boolean mask works too
    assert np.array_equal(from_mask[1], a[1])
    da = xr.DataArray(sparse, dims=("row", "col"))
    assert np.array_equal(holdout_mask(da, 0.1, random_seed=3)[1], a[1])


def test_holdout_mask_uniform_without_guarantee():
    # Without ensure_nonempty every observed entry is equally likely to be held out: over 400
    # seeds each of the 12 entries is held out Binomial(400, 1/4) times (mean 100, sd 8.7);
    # 5 sd bounds.
    counts = np.zeros((3, 4))
    for seed in range(400):
        counts += holdout_mask(np.ones((3, 4)), 0.25, ensure_nonempty=False, random_seed=seed)[1]
    assert np.abs(counts - 100).max() < 44


def test_holdout_mask_errors(sparse):
    with pytest.raises(ValueError, match="fraction"):
        holdout_mask(sparse, 1.0)
    with pytest.raises(ValueError, match="fraction"):
        holdout_mask(sparse, 0.0)
    with pytest.raises(ValueError, match="non-empty"):
        holdout_mask(np.ones((3, 3)), 0.9, random_seed=0)  # 9 entries, at most 6 can go
    with pytest.raises(ValueError, match="no observed"):
        holdout_mask(np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="2-dimensional"):
        holdout_mask(np.ones(5))
    with pytest.raises(TypeError):
        holdout_mask(np.array([["a", "b"]]))


@pytest.mark.parametrize("shape", [(30, 50), (50, 30)])  # stratified by row / by column
def test_kfold_partition(shape):
    rng = np.random.default_rng(11)
    X = rng.random(shape)
    X[rng.random(shape) > 0.5] = np.nan
    observed = ~np.isnan(X)
    folds = kfold_masks(X, 10, random_seed=0)
    assert len(folds) == 10
    tests = np.array([t for _, t in folds])
    assert (tests.sum(axis=0) <= 1).all()  # pairwise disjoint
    singles = (observed.sum(1, keepdims=True) == 1) | (observed.sum(0, keepdims=True) == 1)
    assert np.array_equal(tests.any(axis=0), observed & ~singles)  # cover the observed entries
    sizes = tests.sum(axis=(1, 2))
    # round-robin dealing gives near-equal folds; the repair step moves only a few entries
    assert sizes.max() - sizes.min() <= max(0.1 * sizes.mean(), 10)
    for train, test in folds:
        assert not (train & test).any()
        assert np.array_equal(train | test, observed)
        assert _nonempty(train, observed)


def test_kfold_singletons_and_no_guarantee(sparse):
    observed = ~np.isnan(sparse)
    folds = kfold_masks(sparse, 5, random_seed=1)
    for train, _ in folds:
        assert train[0, 5] and train[3, 7]
        assert _nonempty(train, observed)
    plain = kfold_masks(sparse, 5, ensure_nonempty=False, random_seed=1)
    tests = np.array([t for _, t in plain])
    assert np.array_equal(tests.sum(axis=0), observed.astype(int))  # an exact partition


def test_kfold_reproducible_and_errors(sparse):
    a = kfold_masks(sparse, 4, random_seed=9)
    b = kfold_masks(sparse, 4, random_seed=9)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="k must"):
        kfold_masks(sparse, 1)
    with pytest.raises(ValueError, match="max_tries"):
        kfold_masks(sparse, 3, max_tries=0)
    # a 1 x 3 matrix has only singleton columns: nothing can be held out
    with pytest.raises(ValueError, match="entries can be split"):
        kfold_masks(np.ones((1, 3)), 2)


def test_holdout_columns():
    X = np.ones((5, 20))
    train, test = holdout_columns(X, 0.1, random_seed=0)
    assert len(test) == 2 and len(train) == 18
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(20))
    again = holdout_columns(X, 0.1, random_seed=0)
    assert np.array_equal(again[1], test)
    assert len(holdout_columns(np.ones((3, 4)), 0.01, random_seed=0)[1]) == 1  # at least one
    with pytest.raises(ValueError, match="fraction"):
        holdout_columns(X, 1.5)
    with pytest.raises(ValueError, match="2 columns"):
        holdout_columns(np.ones((3, 1)), 0.5)
