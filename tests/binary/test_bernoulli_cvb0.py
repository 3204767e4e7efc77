"""CVB0 for Beta-Dir: fixed point, orientation equivalence, quality, DataTree output."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo.diagnostics import active_components, perplexity
from bnmfzoo.inference import fit_cvb0
from bnmfzoo.inference.binary._core import bernoulli_nll, cvb0_counts, observed_entries
from bnmfzoo.models import beta_dir, dir_beta, dir_dir


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(3)
    D, N, K = 40, 30, 3
    A = rng.dirichlet(np.ones(K), size=D)
    W = rng.beta(0.3, 0.3, size=(K, N))
    V = (rng.random((D, N)) < A @ W).astype(float)
    test = rng.random((D, N)) < 0.25
    return V, test, A @ W


def test_cvb0_fixed_point_and_output(synthetic, tmp_path):
    V, test, truth = synthetic
    Vtrain = np.where(test, np.nan, V)
    model = beta_dir(Vtrain, rank=6)
    dt = fit_cvb0(model, max_iter=300, tol=1e-7, random_seed=1, n_draws=20, progressbar=False)
    var = dt["variational"]
    assert dt.attrs["method"] == "cvb0" and dt.attrs["model"] == "beta_dir"
    assert dt.attrs["converged"] == 1
    assert dt.posterior["A"].shape == (1, 20, 40, 6)
    np.testing.assert_allclose(dt.posterior["A"].sum("factor"), 1.0)
    np.testing.assert_allclose(var["X_mean"], var["A_mean"].values @ var["W_mean"].values)
    # Eq. 37-38: q(A_f) = Dir(g + E[L_f]); E[L] sums to the observed count of each row
    np.testing.assert_allclose(var["expected_row_counts"].sum("factor"), (~test).sum(axis=1))
    # CVB0 has no bound, so the NLL trace need not be monotone; the fit (Eq. 66) must close most
    # of the gap between the best constant predictor and the true mean on the training entries.
    nll = var["nll"].values
    p = np.nanmean(Vtrain)
    n1, n0 = np.nansum(Vtrain), np.sum(Vtrain == 0)
    constant_nll = -(n1 * np.log(p) + n0 * np.log1p(-p))
    oracle_nll = bernoulli_nll(V, ~test, truth)
    assert nll[-1] < constant_nll - 0.5 * (constant_nll - oracle_nll), (nll[-1], constant_nll)
    assert var["max_delta"].values[-1] < 1e-7
    # round trip
    path = tmp_path / "cvb0.nc"
    dt.to_netcdf(path)
    back = xr.open_datatree(path)
    np.testing.assert_allclose(back["variational"]["X_mean"], var["X_mean"])
    # same seed, same result
    dt2 = fit_cvb0(model, max_iter=300, tol=1e-7, random_seed=1, n_draws=20, progressbar=False)
    np.testing.assert_array_equal(dt2.posterior["W"].values, dt.posterior["W"].values)


def test_cvb0_update_is_fixed_point():
    """At convergence every q_fn equals Eq. 36 recomputed in NumPy from the other entries."""
    from bnmfzoo.inference.binary._core import cvb0_sweep

    rng = np.random.default_rng(8)
    V = (rng.random((6, 5)) < 0.4).astype(float)
    mask = rng.random((6, 5)) < 0.85
    rows, cols, v = observed_entries(V, mask)
    K = 3
    g, a, b = np.array([0.5, 1.0, 2.0]), np.array([1.0, 0.7, 1.3]), np.array([0.9, 1.1, 2.0])
    q = rng.dirichlet(np.ones(K), size=rows.size)
    for _ in range(5000):
        L, C1, C0 = cvb0_counts(rows, cols, v, q, 6, 5)
        if cvb0_sweep(rows, cols, v, q, L, C1, C0, g, a, b) < 1e-13:
            break
    for i in range(rows.size):
        others = np.arange(rows.size) != i
        same_row = others & (rows == rows[i])
        same_col = others & (cols == cols[i])
        EL = q[same_row].sum(axis=0)
        E1 = q[same_col & (v == 1)].sum(axis=0)
        E0 = q[same_col & (v == 0)].sum(axis=0)
        p = (g + EL) * (a + E1 if v[i] else b + E0) / (a + b + E1 + E0)
        np.testing.assert_allclose(q[i], p / p.sum(), atol=1e-10)


def test_cvb0_predicts_better_than_constant(synthetic):
    V, test, P = synthetic
    Vtrain = np.where(test, np.nan, V)
    dt = fit_cvb0(beta_dir(Vtrain, rank=10), max_iter=200, random_seed=0, n_draws=5,
                  progressbar=False)
    ours = perplexity(dt, V, mask=test)
    p = np.nanmean(Vtrain)
    constant = perplexity(np.full(V.shape, p), V, mask=test)
    oracle = perplexity(P, V, mask=test)
    assert oracle < ours < constant, (oracle, ours, constant)
    # paired test over the ~300 test entries: the per-entry log-loss improvement over the
    # constant predictor must be > 3 standard errors (one-sided, false-pass rate ~1e-3)
    pred = np.clip(dt["variational"]["X_mean"].values[test], 1e-12, 1 - 1e-12)
    y = V[test]
    loss_ours = -np.where(y == 1, np.log(pred), np.log1p(-pred))
    loss_const = -np.where(y == 1, np.log(p), np.log1p(-p))
    diff = loss_const - loss_ours
    assert diff.mean() > 3 * diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() == pytest.approx(constant - ours)


def test_dir_beta_is_beta_dir_transposed(synthetic):
    V, _, _ = synthetic
    a = fit_cvb0(beta_dir(V.T, rank=3), max_iter=30, random_seed=4, n_draws=3,
                 progressbar=False)
    b = fit_cvb0(dir_beta(V, rank=3), max_iter=30, random_seed=4, n_draws=3, progressbar=False)
    np.testing.assert_allclose(b["variational"]["X_mean"].values,
                               a["variational"]["X_mean"].values.T)
    np.testing.assert_allclose(b.posterior["A"].values,
                               a.posterior["W"].values.transpose(0, 1, 3, 2))
    assert active_components(a) == active_components(b)


def test_cvb0_rejects_dir_dir():
    with pytest.raises(TypeError, match="fit_cvb0"):
        fit_cvb0(dir_dir(np.eye(3), rank=2))
    with pytest.raises(ValueError, match="max_iter"):
        fit_cvb0(beta_dir(np.eye(3), rank=2), max_iter=0)


def test_cvb0_counts_kernel():
    V = np.array([[1.0, 0.0], [1.0, 1.0]])
    rows, cols, v = observed_entries(V, np.ones((2, 2), bool))
    q = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.25, 0.75]])
    L, C1, C0 = cvb0_counts(rows, cols, v, q, 2, 2)
    np.testing.assert_allclose(L, [[1.5, 0.5], [0.25, 1.75]])
    np.testing.assert_allclose(C1, [[1.0, 1.0], [0.25, 0.75]])
    np.testing.assert_allclose(C0, [[0.0, 0.0], [0.5, 0.5]])
