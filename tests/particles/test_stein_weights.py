"""Stein-optimal weights: the simplex QP min w^T K w (Masood & Doshi-Velez 2019, Algorithm 5)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import (
    stein_discrepancy,
    stein_kernel_matrix,
    stein_matrix,
    stein_weights,
)
from bnmfzoo.diagnostics._stein._kernels import imq_kernel
from bnmfzoo.diagnostics._stein.weights import _project_simplex, solve_stein_qp

SOLVERS = ["CLARABEL", "SCS", "OSQP", "NUMPY"]


#: a fixed base kernel (IMQ, c = 1): the QP properties below need K not to depend on the points
FIXED = imq_kernel(c={})


def _gauss_K(x):
    """Stein kernel matrix of points x against a standard normal target (score -x)."""
    return stein_kernel_matrix(x, -x, kernel=FIXED)


def _kkt_gap(K, w):
    """Largest violation of the KKT conditions of min w'Kw on the simplex, relative to scale.

    At the optimum g = 2Kw satisfies g_i = mu where w_i > 0 and g_i >= mu where w_i = 0, with
    mu = 2 w'Kw (multiply g by w and sum).
    """
    g = 2 * K @ w
    mu = 2 * w @ K @ w
    active = w > 1e-6
    return max(np.abs(g[active] - mu).max(), max(0.0, (mu - g[~active]).max(initial=0.0))) / mu


def test_simplex_projection(rng):
    for _ in range(20):
        v = rng.normal(size=7) * 3
        p = _project_simplex(v)
        assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12
        # optimality of the projection: (v - p) . (q - p) <= 0 for simplex vertices q
        for q in np.eye(7):
            assert (v - p) @ (q - p) <= 1e-10


def test_diagonal_K_closed_form():
    # min sum K_ii w_i^2 on the simplex: w_i proportional to 1 / K_ii
    d = np.array([1.0, 2.0, 4.0, 8.0])
    for solver in SOLVERS:
        w = solve_stein_qp(np.diag(d), solver=solver)
        np.testing.assert_allclose(w, (1 / d) / (1 / d).sum(), atol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_weights_on_simplex_and_optimal(solver, rng):
    x = rng.normal(size=(25, 3))
    K = _gauss_K(x)
    w, ksd = stein_weights(K, solver=solver, return_discrepancy=True)
    assert w.shape == (25,) and (w >= 0).all()
    assert abs(w.sum() - 1) < 1e-12
    np.testing.assert_allclose(ksd, w @ K @ w, rtol=1e-12)
    # no worse than uniform weights or any single point
    assert ksd <= min(K.mean(), np.diag(K).min()) * (1 + 1e-9)
    # KKT: solver tolerances ~1e-8 (Clarabel) to ~1e-5 relative (first-order methods)
    assert _kkt_gap(K, w) < 1e-3


def test_solvers_agree(rng):
    x = rng.normal(size=(30, 2))
    K = _gauss_K(x)
    values = {s: (lambda w: w @ K @ w)(solve_stein_qp(K, solver=s)) for s in SOLVERS}
    best = min(values.values())
    for s, v in values.items():
        # Clarabel/OSQP solve to ~1e-9, SCS to eps 1e-9, projected gradient to step 1e-13:
        # all within 1e-5 relative of the best objective
        assert v <= best * (1 + 1e-5), (s, values)


def test_nearly_singular_and_badly_scaled_K(rng):
    # rank-3 PSD matrix with a 1e8 scale (diagonals of about 5000 DR in the paper's setting)
    B = rng.normal(size=(40, 3))
    K = 1e8 * (B @ B.T)
    K[0, 1] += 1e-3  # tiny asymmetry
    w, info = solve_stein_qp(K, return_info=True)
    assert info["solver"] is not None
    assert (w >= 0).all() and abs(w.sum() - 1) < 1e-12
    Ks = 0.5 * (K + K.T)
    assert w @ Ks @ w <= Ks.mean() * (1 + 1e-9)
    # the minimum of |B^T w|^2 over the simplex is 0 when 0 is in the convex hull of B's rows
    # (40 Gaussian points in R^3: it is, with overwhelming probability); allow solver tolerance
    assert w @ Ks @ w <= 1e-6 * np.diag(Ks).mean()


def test_fallback_when_solver_fails(rng):
    K = _gauss_K(rng.normal(size=(8, 2)))
    w, info = solve_stein_qp(K, solver="NOT_A_SOLVER", return_info=True)
    assert info["failures"] and info["failures"][0].startswith("NOT_A_SOLVER")
    assert info["solver"] == "SCS"
    ref = solve_stein_qp(K)
    np.testing.assert_allclose(w @ K @ w, ref @ K @ ref, rtol=1e-5)
    w2, info2 = solve_stein_qp(K, solver="NOT_A_SOLVER", fallback=(), return_info=True)
    assert info2["solver"] == "projected_gradient"
    np.testing.assert_allclose(w2 @ K @ w2, ref @ K @ ref, rtol=1e-5)


def test_duplicate_particle_does_not_lower_ksd(rng):
    x = rng.normal(size=(10, 2))
    ksd = stein_weights(_gauss_K(x), return_discrepancy=True)[1]
    # duplicating a point: any weighting of the copies equals one on the original set, so the
    # optimum is unchanged (it must not drop by more than solver tolerance, ~1e-8 relative)
    dup = np.vstack([x, x[[3]]])
    w_dup, ksd_dup = stein_weights(_gauss_K(dup), return_discrepancy=True)
    assert ksd_dup >= ksd * (1 - 1e-6)
    assert ksd_dup <= ksd * (1 + 1e-6)
    # a new well-separated point can only help
    new = np.vstack([x, [[0.5, -0.4]]])
    assert stein_weights(_gauss_K(new), return_discrepancy=True)[1] <= ksd * (1 + 1e-8)


def test_more_spread_points_lower_ksd(rng):
    # well-separated iid draws from the target: optimal KSD falls roughly like 1/M (V-statistic)
    x = rng.normal(size=(80, 2))
    k10 = stein_weights(_gauss_K(x[:10]), return_discrepancy=True)[1]
    k80 = stein_weights(_gauss_K(x), return_discrepancy=True)[1]
    assert k80 < k10 / 2


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        solve_stein_qp(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        solve_stein_qp(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="jitter"):
        solve_stein_qp(np.eye(2), jitter=-1)
    assert solve_stein_qp(np.array([[3.0]])).tolist() == [1.0]


def test_stein_weights_from_model_datatree(rng, tmp_path):
    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=2)
    m = 12
    x = rng.normal(size=(m, 2))
    particles = xr.Dataset(
        {"x": (("particle", "dim"), x), "weight": (("particle",), np.full(m, 1.0 / m))}
    )
    dt = build_datatree({"x": x[None]}, dims={"x": ["dim"]}, groups={"particles": particles})
    sm = stein_matrix(model, dt, group="particles", kernel=FIXED, progressbar=False)
    w, ksd = stein_weights(sm, return_discrepancy=True)
    np.testing.assert_allclose(ksd, w @ _gauss_K(x) @ w, rtol=1e-10)
    stored = dt["diagnostics"]["stein_weights"]
    assert stored.dims == ("particle",)
    np.testing.assert_allclose(stored.values, w)
    dt.to_netcdf(tmp_path / "w.nc")
    back = xr.open_datatree(tmp_path / "w.nc")
    np.testing.assert_allclose(back["diagnostics"]["stein_weights"].values, w)
    assert back["diagnostics"]["stein_discrepancy"].attrs["weights"] == "optimal"
    np.testing.assert_allclose(float(back["diagnostics"]["ksd_v"]), ksd, rtol=1e-12)
    np.testing.assert_allclose(float(back["diagnostics"]["n_eff"]), 1 / np.sum(w**2), rtol=1e-12)
    # raw dict input gives the same weights
    raw = stein_matrix(model, {"x": x}, kernel=FIXED, progressbar=False)
    np.testing.assert_allclose(stein_weights(raw), w, atol=1e-7)
    # the same as stein_discrepancy's optimal weights (one shared path)
    ksd2 = stein_discrepancy(model, {"x": x}, weights="optimal", kernel=FIXED,
                             progressbar=False)
    np.testing.assert_allclose(ksd2, ksd, rtol=1e-7)
    with pytest.raises(TypeError, match="stein_matrix"):
        stein_weights(model)
