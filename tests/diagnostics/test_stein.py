"""Kernelized Stein discrepancy: base kernels, closed-form Stein kernel, score functions.

Model graphs are compiled with the Python VM (the default of ``score_function``), about a second
each, so the handful of tiny models below costs little; they are module-scoped fixtures.
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import (
    ksd_statistics,
    score_function,
    stein_discrepancy,
    stein_kernel_matrix,
)
from bnmfzoo.diagnostics._stein._kernels import (
    IMQ,
    BlockKernel,
    Gaussian,
    PreconditionedIMQ,
    imq_kernel,
)

D, N, R = 5, 4, 2
SIGMA = 0.7


# ----------------------------------------------------------------------------------------------
# fixtures: tiny models
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nmf_data():
    rng = np.random.default_rng(7)
    A = rng.exponential(size=(D, R))
    W = rng.exponential(size=(R, N))
    return A @ W + SIGMA * rng.normal(size=(D, N))


@pytest.fixture(scope="module")
def exp_gauss_model(nmf_data):
    """The exponential-Gaussian BNMF written as a user would (Masood 2019, Section 5.1)."""
    with pm.Model() as model:
        A = pm.Exponential("A", 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.Normal("X", A @ W, SIGMA, observed=nmf_data)
    return model


@pytest.fixture(scope="module")
def halfnormal_model(nmf_data):
    """A user's own priors: HalfNormal(2) on A, Exponential(1) on W, Gaussian likelihood."""
    with pm.Model() as model:
        A = pm.HalfNormal("A", 2.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.Normal("X", A @ W, SIGMA, observed=nmf_data)
    return model


@pytest.fixture(scope="module")
def gauss_posterior():
    """x ~ N(0, I_2), y_k ~ N(x, I_2), k=1..5: posterior N(sum(y)/6, I/6)."""
    y = np.array([[0.3, -1.0], [1.2, 0.4], [0.8, -0.2], [-0.1, 0.5], [0.9, 0.1]])
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Normal("y", x, 1.0, observed=y)
    mean = y.sum(0) / (1 + len(y))
    return model, y, mean, 1.0 / (1 + len(y))


def _eg_score(A, W, X, lam=1.0, sigma=SIGMA):
    """Analytic score of the exponential-Gaussian model (Masood & Doshi-Velez 2019, Sec. 5.1)."""
    resid = X - A @ W
    return resid @ W.T / sigma**2 - lam, A.T @ resid / sigma**2 - lam


# ----------------------------------------------------------------------------------------------
# base kernels
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kernel",
    [
        imq_kernel(),
        imq_kernel(combine="product"),
        BlockKernel({"A": Gaussian(0.3)}, default=IMQ(2.0, -0.3)),
    ],
    ids=["paper-sum", "imq-product", "gauss+imq"],
)
def test_base_kernel_normalized(kernel, rng):
    pts = {"A": rng.random((6, D, R)), "W": 10 * rng.random((6, R, N))}
    G = kernel(pts)
    np.testing.assert_allclose(np.diag(G), 1.0, rtol=0, atol=1e-14)
    off = G[~np.eye(6, dtype=bool)]
    assert (off > 0).all() and (off < 1).all()
    np.testing.assert_allclose(G, G.T, rtol=1e-15)


def test_paper_kernel_constants():
    # eq. 7: 1/(2 gamma_A) (r^2 + c_A^2)^b with gamma = (c^2)^b: prefactors 0.005 and 500
    kern = imq_kernel()
    r2 = {"A": np.array([0.3]), "W": np.array([2.0e5])}
    expected = 0.005 * (0.3 + 1e-4) ** -0.5 + 500.0 * (2.0e5 + 1e6) ** -0.5
    np.testing.assert_allclose(kern.evaluate(r2)[0], expected, rtol=1e-13)


def test_kernel_bad_arguments():
    with pytest.raises(ValueError, match="c must"):
        IMQ(c=0.0)
    with pytest.raises(ValueError, match="b must"):
        IMQ(b=0.5)
    with pytest.raises(ValueError, match="combine"):
        BlockKernel(combine="max")
    with pytest.raises(ValueError, match="bandwidth"):
        Gaussian(-1.0)


# ----------------------------------------------------------------------------------------------
# closed-form Stein kernel vs automatic differentiation
# ----------------------------------------------------------------------------------------------
def _autodiff_stein(kernel_spec, combine, sizes):
    """Stein kernel of eq. 3 by PyTensor autodiff of a symbolic base kernel, one pair at a time."""
    x = pt.vector("x")
    y = pt.vector("y")
    sx = pt.vector("sx")
    sy = pt.vector("sy")
    parts = []
    start = 0
    for (c, b, kind), size in zip(kernel_spec, sizes):
        r2 = pt.sum((x[start : start + size] - y[start : start + size]) ** 2)
        if kind == "imq":
            parts.append(((r2 + c**2) / c**2) ** b)
        else:
            parts.append(pt.exp(-r2 / c**2))
        start += size
    if combine == "joint":  # PreconditionedIMQ: one IMQ over all blocks, c_g = length scales
        u = 1.0
        start = 0
        for (c, b, kind), size in zip(kernel_spec, sizes):
            u = u + pt.sum((x[start : start + size] - y[start : start + size]) ** 2) / c**2
            start += size
        k = u ** kernel_spec[0][1]
    elif combine == "sum":
        k = sum(parts) / len(parts)
    else:
        k = parts[0]
        for p in parts[1:]:
            k = k * p
    gx = pt.grad(k, x)
    gy = pt.grad(k, y)
    # unrolled (no scan): sum_i d/dx_i of (d k / d y_i)
    trace = sum(pt.grad(gy[i], x)[i] for i in range(sum(sizes)))
    kp = pt.dot(sx, sy) * k + pt.dot(sy, gx) + pt.dot(sx, gy) + trace
    return pytensor.function([x, y, sx, sy], kp, mode="FAST_COMPILE")


@pytest.mark.parametrize("combine", ["sum", "product"])
def test_stein_kernel_matches_autodiff(combine, rng):
    sizes = (6, 4)
    spec = [(0.5, -0.5, "imq"), (2.0, -0.3, "imq")]
    kernel = BlockKernel({"A": IMQ(0.5, -0.5), "W": IMQ(2.0, -0.3)}, combine=combine)
    m = 5
    pos = rng.normal(size=(m, sum(sizes)))
    pos[1] = pos[0] + 1e-3 * rng.normal(size=sum(sizes))  # a near-duplicate pair
    sco = rng.normal(size=(m, sum(sizes)))
    blocks = {"A": slice(0, 6), "W": slice(6, 10)}
    K = stein_kernel_matrix(pos, sco, blocks=blocks, kernel=kernel)
    f = _autodiff_stein(spec, combine, sizes)
    ref = np.array([[f(pos[i], pos[j], sco[i], sco[j]) for j in range(m)] for i in range(m)])
    # both are exact formulas in double precision: only rounding differs
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_preconditioned_imq_matches_autodiff(rng):
    sizes = (6, 4)
    kernel = PreconditionedIMQ({"A": 0.5, "W": 2.0}, b=-0.5)
    pos = rng.normal(size=(5, 10))
    sco = rng.normal(size=(5, 10))
    blocks = {"A": slice(0, 6), "W": slice(6, 10)}
    K = stein_kernel_matrix(pos, sco, blocks=blocks, kernel=kernel)
    f = _autodiff_stein([(0.5, -0.5, "imq"), (2.0, -0.5, "imq")], "joint", sizes)
    ref = np.array([[f(pos[i], pos[j], sco[i], sco[j]) for j in range(5)] for i in range(5)])
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_median_kernel_is_fitted_to_the_points(rng):
    pos = {"A": rng.normal(size=(30, 4)), "W": 100.0 * rng.normal(size=(30, 3))}
    sco = {"A": rng.normal(size=(30, 4)), "W": rng.normal(size=(30, 3))}
    K, kern = stein_kernel_matrix(pos, sco, return_kernel=True)  # default: MedianIMQ
    for name, x in pos.items():
        d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))[np.triu_indices(30, 1)]
        assert kern.lengthscale(name) == pytest.approx(np.median(d), rel=1e-12)
    np.testing.assert_array_equal(K, stein_kernel_matrix(pos, sco, kernel=kern))
    # translating a block leaves it unchanged; rescaling it rescales the length scale
    shifted = {"A": pos["A"] + 3.0, "W": 10.0 * pos["W"]}
    kern2 = stein_kernel_matrix(shifted, sco, return_kernel=True)[1]
    assert kern2.lengthscale("A") == pytest.approx(kern.lengthscale("A"), rel=1e-12)
    assert kern2.lengthscale("W") == pytest.approx(10 * kern.lengthscale("W"), rel=1e-12)


def test_ksd_statistics_v_and_u(rng):
    x = rng.normal(size=(12, 2))
    K = stein_kernel_matrix(x, -x)
    stats = ksd_statistics(K)
    assert stats["ksd_v"] == pytest.approx(K.mean(), rel=1e-14)
    off = K[~np.eye(12, dtype=bool)]
    assert stats["ksd_u"] == pytest.approx(off.mean(), rel=1e-12)
    assert stats["n_eff"] == pytest.approx(12.0)
    w = rng.dirichlet(np.ones(12))
    stats = ksd_statistics(K, w)
    assert stats["ksd_v"] == pytest.approx(w @ K @ w, rel=1e-14)
    num = w @ K @ w - np.sum(w**2 * np.diag(K))
    assert stats["ksd_u"] == pytest.approx(num / (1 - np.sum(w**2)), rel=1e-12)
    assert np.isnan(ksd_statistics(K, np.eye(12)[0])["ksd_u"])


def test_stein_kernel_gaussian_block_matches_autodiff(rng):
    sizes = (3, 2)
    spec = [(0.8, None, "gauss"), (1.5, -0.5, "imq")]
    kernel = BlockKernel({"a": Gaussian(0.8), "b": IMQ(1.5, -0.5)})
    pos = rng.normal(size=(4, 5))
    sco = rng.normal(size=(4, 5))
    K = stein_kernel_matrix(
        {"a": pos[:, :3], "b": pos[:, 3:]}, {"a": sco[:, :3], "b": sco[:, 3:]}, kernel=kernel
    )
    f = _autodiff_stein(spec, "sum", sizes)
    ref = np.array([[f(pos[i], pos[j], sco[i], sco[j]) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_stein_kernel_diagonal_closed_form(rng):
    # eq. 3 at theta = theta': K_ii = |S_i|^2 + sum_g d_g / (2 c_g^2) (paper kernel, b = -1/2)
    a = rng.random((4, D * R))
    w = rng.random((4, R * N))
    sa, sw = rng.normal(size=a.shape), rng.normal(size=w.shape)
    K = stein_kernel_matrix({"A": a, "W": w}, {"A": sa, "W": sw}, kernel=imq_kernel())
    diag = (sa**2).sum(1) + (sw**2).sum(1) + D * R / (2 * 1e-4) + R * N / (2 * 1e6)
    np.testing.assert_allclose(np.diag(K), diag, rtol=1e-12)


def test_stein_kernel_matrix_psd(rng):
    m = 40
    pos = {"A": rng.random((m, D * R)) * 0.05, "W": rng.random((m, R * N))}
    pos["A"][:10] = pos["A"][0] + 1e-4 * rng.random((10, D * R))  # a cluster of near-duplicates
    sco = {"A": rng.normal(size=(m, D * R)) * 50, "W": rng.normal(size=(m, R * N))}
    for kernel in (imq_kernel(), imq_kernel(c={"A": 0.3, "W": 1.0}, combine="product")):
        K = stein_kernel_matrix(pos, sco, kernel=kernel)
        ev = np.linalg.eigvalsh(K)
        assert ev.min() >= -1e-8 * ev.max()
        np.testing.assert_array_equal(K, K.T)


def test_stein_kernel_matrix_bad_input(rng):
    with pytest.raises(ValueError, match="same shape"):
        stein_kernel_matrix(rng.normal(size=(3, 2)), rng.normal(size=(3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        stein_kernel_matrix(np.full((3, 2), np.nan), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="exactly once"):
        stein_kernel_matrix(np.zeros((3, 4)), np.zeros((3, 4)), blocks={"a": slice(0, 2)})
    with pytest.raises(TypeError, match="evaluate"):
        stein_kernel_matrix(np.zeros((3, 4)), np.zeros((3, 4)), kernel=IMQ())


# ----------------------------------------------------------------------------------------------
# score functions of PyMC models
# ----------------------------------------------------------------------------------------------
def test_score_gaussian_model(gauss_posterior, rng):
    model, y, mean, var = gauss_posterior
    score = score_function(model)
    x = rng.normal(size=(7, 2))
    expected = -x + (y.sum(0)[None, :] - len(y) * x)
    np.testing.assert_allclose(score({"x": x}), expected, rtol=1e-12, atol=1e-12)
    assert score.var_names == ("x",) and score.blocks == {"x": slice(0, 2)}
    np.testing.assert_array_equal(score.positions({"x": x}), x)


def test_score_exponential_gaussian_constrained(exp_gauss_model, nmf_data, rng):
    score = score_function(exp_gauss_model)
    assert score.var_names == ("A", "W") and score.dim == D * R + R * N
    A = rng.exponential(size=(6, D, R))
    W = rng.exponential(size=(6, R, N))
    got = score({"A": A, "W": W})
    for i in range(6):
        ga, gw = _eg_score(A[i], W[i], nmf_data)
        np.testing.assert_allclose(got[i, score.blocks["A"]], ga.ravel(), rtol=1e-10)
        np.testing.assert_allclose(got[i, score.blocks["W"]], gw.ravel(), rtol=1e-10)


def test_score_exponential_gaussian_unconstrained(exp_gauss_model, nmf_data, rng):
    score = score_function(exp_gauss_model, space="unconstrained")
    A = rng.exponential(size=(4, D, R))
    W = rng.exponential(size=(4, R, N))
    got = score({"A": A, "W": W})
    pos = score.positions({"A": A, "W": W})
    for i in range(4):
        ga, gw = _eg_score(A[i], W[i], nmf_data)
        # d/d log a [log p(a) + log a] = a * dlogp/da + 1 (log-transform Jacobian)
        np.testing.assert_allclose(got[i, score.blocks["A"]], (A[i] * ga + 1).ravel(), rtol=1e-10)
        np.testing.assert_allclose(got[i, score.blocks["W"]], (W[i] * gw + 1).ravel(), rtol=1e-10)
        np.testing.assert_allclose(pos[i, score.blocks["A"]], np.log(A[i]).ravel(), rtol=1e-12)


def test_score_subset_and_errors(exp_gauss_model, nmf_data, rng):
    score = score_function(exp_gauss_model, var_names=["W"])
    A = rng.exponential(size=(2, D, R))
    W = rng.exponential(size=(2, R, N))
    got = score({"A": A, "W": W})
    assert got.shape == (2, R * N)
    np.testing.assert_allclose(got[1], _eg_score(A[1], W[1], nmf_data)[1].ravel(), rtol=1e-10)
    with pytest.raises(ValueError, match="lack values"):
        score({"W": W})
    with pytest.raises(ValueError, match="shape"):
        score({"A": A[:, :, :1], "W": W})
    with pytest.raises(ValueError, match="not free random variables"):
        score_function(exp_gauss_model, var_names=["X"])
    with pytest.raises(ValueError, match="space"):
        score_function(exp_gauss_model, space="ambient")
    with pytest.raises(TypeError, match="pymc.Model"):
        score_function("model")
    bad = A.copy()
    bad[0, 0, 0] = -1.0
    with pytest.raises(ValueError, match="outside the model.s support"):
        score_function(exp_gauss_model)({"A": bad, "W": W})


def test_score_halfnormal_user_model(halfnormal_model, nmf_data, rng):
    score = score_function(halfnormal_model)
    A = np.abs(rng.normal(size=(3, D, R)))
    W = rng.exponential(size=(3, R, N))
    got = score({"A": A, "W": W})
    for i in range(3):
        ga, gw = _eg_score(A[i], W[i], nmf_data)
        ga = ga + 1.0 - A[i] / 4.0  # HalfNormal(2) prior score -a/4 instead of Exp(1)'s -1
        np.testing.assert_allclose(got[i, score.blocks["A"]], ga.ravel(), rtol=1e-10)
        np.testing.assert_allclose(got[i, score.blocks["W"]], gw.ravel(), rtol=1e-10)


def test_score_dirichlet_columns(nmf_data, rng):
    # SILF-style scale fixing: columns of A on the simplex, stored as A_T (R, D) for PyMC
    with pm.Model() as model:
        A_T = pm.Dirichlet("A_T", np.ones(D), shape=(R, D))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.Normal("X", A_T.T @ W, SIGMA, observed=nmf_data)
    A_T = rng.dirichlet(np.ones(D), size=(3, R))
    W = rng.exponential(size=(3, R, N))
    got = score_function(model)({"A_T": A_T, "W": W})
    for i in range(3):
        ga, gw = _eg_score(A_T[i].T, W[i], nmf_data)
        # Dirichlet(1) contributes (alpha - 1)/a = 0: ambient likelihood gradient only
        np.testing.assert_allclose(got[i, : R * D], (ga + 1.0).T.ravel(), rtol=1e-10)
        np.testing.assert_allclose(got[i, R * D :], gw.ravel(), rtol=1e-10)
    unc = score_function(model, space="unconstrained")
    assert unc.shapes["A_T"] == (R, D - 1)
    assert np.isfinite(unc({"A_T": A_T, "W": W})).all()


# ----------------------------------------------------------------------------------------------
# stein_discrepancy
# ----------------------------------------------------------------------------------------------
def test_spread_sample_beats_collapsed(gauss_posterior, rng):
    model, y, mean, var = gauss_posterior
    m = 200
    spread = mean + np.sqrt(var) * rng.normal(size=(m, 2))
    collapsed = mean + 1e-3 * rng.normal(size=(m, 2))
    # a fixed IMQ(c = 1) kernel: the expectations below are for it (x has no transform, so both
    # spaces coincide)
    kern = imq_kernel(c={})
    ksd_spread = stein_discrepancy(model, {"x": spread}, kernel=kern, progressbar=False)
    ksd_collapsed = stein_discrepancy(model, {"x": collapsed}, kernel=kern, progressbar=False)
    # For an iid sample from p, E[w^T K w] = E[K(x, x)] / M (off-diagonal terms have mean zero):
    # E|S|^2 = d / var = 12, trace term d * (-2b) / c^2 = 2 (c = 1, b = -1/2): 14 / 200 = 0.07.
    # A sample collapsed at the mean has K_ij ~ K(mean, mean) = 2 for all pairs, so KSD ~ 2.
    # Allow the spread KSD a 5x margin over its expectation (its sd is about 0.3x its mean here).
    assert ksd_spread < 5 * 14 / m
    assert ksd_collapsed > 1.5
    # optimal weights can only lower the discrepancy of a given set of points
    ksd_opt = stein_discrepancy(model, {"x": spread}, weights="optimal", kernel=kern,
                                progressbar=False)
    assert ksd_opt <= ksd_spread * (1 + 1e-9)


def test_ksd_on_posterior_datatree(exp_gauss_model, nmf_data, rng, tmp_path):
    chains, draws = 2, 30
    post = {
        "A": rng.exponential(size=(chains, draws, D, R)),
        "W": rng.exponential(size=(chains, draws, R, N)),
    }
    dt = build_datatree(post, observed_data={"X": nmf_data}, attrs={"method": "test"})
    ksd, K = stein_discrepancy(
        exp_gauss_model, dt, max_points=25, return_matrix=True, progressbar=False
    )
    assert K.shape == (25, 25)
    # the same thinned points as raw arrays give the same number
    idx = np.unique(np.linspace(0, chains * draws - 1, 25).round().astype(int))
    raw = {k: v.reshape((-1,) + v.shape[2:])[idx] for k, v in post.items()}
    np.testing.assert_allclose(
        stein_discrepancy(exp_gauss_model, raw, progressbar=False), ksd, rtol=1e-12
    )
    assert float(dt["diagnostics"]["stein_discrepancy"]) == pytest.approx(ksd, rel=1e-14)
    path = tmp_path / "ksd.nc"
    dt.to_netcdf(path)
    back = xr.open_datatree(path)
    assert float(back["diagnostics"]["stein_discrepancy"]) == pytest.approx(ksd, rel=1e-14)
    assert back["diagnostics"]["stein_discrepancy"].attrs["space"] == "unconstrained"
    # the V- and U-statistics and the effective size are stored beside it
    stats = stein_discrepancy(exp_gauss_model, raw, statistic="all", progressbar=False)
    assert float(back["diagnostics"]["ksd_v"]) == pytest.approx(stats["ksd_v"], rel=1e-12)
    assert float(back["diagnostics"]["ksd_u"]) == pytest.approx(stats["ksd_u"], rel=1e-12)
    assert float(back["diagnostics"]["n_eff"]) == pytest.approx(25.0, rel=1e-12)


def test_ksd_particles_group_uses_weights(halfnormal_model, rng):
    m = 6
    A = np.abs(rng.normal(size=(m, D, R)))
    W = rng.exponential(size=(m, R, N))
    weight = rng.dirichlet(np.ones(m))
    particles = xr.Dataset(
        {
            "A": (("particle", "row", "factor"), A),
            "W": (("particle", "factor", "col"), W),
            "weight": (("particle",), weight),
        }
    )
    dt = build_datatree(
        {"A": A[None], "W": W[None]}, groups={"particles": particles}, attrs={"method": "t"}
    )
    ksd, K = stein_discrepancy(
        halfnormal_model, dt, group="particles", return_matrix=True, progressbar=False
    )
    np.testing.assert_allclose(ksd, weight @ K @ weight, rtol=1e-12)
    uni = stein_discrepancy(
        halfnormal_model, dt, group="particles", weights="uniform", progressbar=False
    )
    np.testing.assert_allclose(uni, K.mean(), rtol=1e-12)
    opt = stein_discrepancy(
        halfnormal_model, dt, group="particles", weights="optimal", progressbar=False
    )
    w = dt["diagnostics"]["stein_weights"]
    assert w.dims == ("particle",) and w.size == m
    assert opt <= min(uni, ksd) * (1 + 1e-7)
    with pytest.raises(ValueError, match="no 'posterior_predictive' group|group must"):
        stein_discrepancy(halfnormal_model, dt, group="posterior_predictive")
    with pytest.raises(ValueError, match="weights must have shape"):
        stein_discrepancy(halfnormal_model, dt, group="particles", weights=np.ones(3))


def test_ksd_unconstrained_space_runs(exp_gauss_model, rng):
    pts = {"A": rng.exponential(size=(5, D, R)), "W": rng.exponential(size=(5, R, N))}
    ksd = stein_discrepancy(exp_gauss_model, pts, space="unconstrained", progressbar=False)
    assert np.isfinite(ksd) and ksd > 0


def test_silf_flat_region_score(rng):
    # Masood & Doshi-Velez 2019, eq. 5: a factorization with ||X - AW||^2 <= (1 - beta) epsilon
    # sits in SILF's flat region, so its score is exactly (0, -lambda) (Dirichlet(1) columns
    # contribute zero)
    from bnmfzoo.models import silf

    X = rng.random((6, 5))
    model = silf(X, 2, epsilon=1e6)
    A = rng.dirichlet(np.ones(6), size=(3, 2)).transpose(0, 2, 1)
    W = rng.exponential(size=(3, 2, 5))
    score = score_function(model, var_names=["A", "W"])
    got = score({"A": A, "W": W})
    np.testing.assert_array_equal(got[:, score.blocks["A"]], 0.0)
    np.testing.assert_allclose(got[:, score.blocks["W"]], -1.0, rtol=1e-14)


def test_posterior_dims_follow_model_dims(nmf_data, rng):
    # a posterior stored with dims in another order is transposed to the model's named dims
    coords = {"row": np.arange(D), "factor": np.arange(R), "col": np.arange(N)}
    with pm.Model(coords=coords) as model:
        A = pm.Exponential("A", 1.0, dims=("row", "factor"))
        W = pm.Exponential("W", 1.0, dims=("factor", "col"))
        pm.Normal("X", A @ W, SIGMA, observed=nmf_data)
    A = rng.exponential(size=(1, 4, D, R))
    W = rng.exponential(size=(1, 4, R, N))
    posterior = xr.Dataset(
        {
            "A": (("chain", "draw", "factor", "row"), A.transpose(0, 1, 3, 2)),
            "W": (("chain", "draw", "factor", "col"), W),
        }
    )
    dt = xr.DataTree.from_dict({"posterior": posterior})
    got = stein_discrepancy(model, dt, progressbar=False)
    ref = stein_discrepancy(model, {"A": A[0], "W": W[0]}, progressbar=False)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    with pytest.raises(ValueError, match="lacks the model's free variables"):
        stein_discrepancy(model, xr.DataTree.from_dict({"posterior": posterior[["A"]]}))


# ----------------------------------------------------------------------------------------------
# spaces, the paper's setting by name, boundaries
# ----------------------------------------------------------------------------------------------
def test_constrained_space_warns_unless_paper_setting(exp_gauss_model, rng):
    import warnings

    pts = {"A": rng.exponential(size=(5, D, R)), "W": rng.exponential(size=(5, R, N))}
    with pytest.warns(UserWarning, match="not a valid Stein discrepancy"):
        stein_discrepancy(exp_gauss_model, pts, space="constrained", progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paper, K = stein_discrepancy(exp_gauss_model, pts, space="constrained",
                                     kernel="masood2019", return_matrix=True, progressbar=False)
    # the paper's arithmetic: eq. 7 kernel, diagonal |S|^2 + sum_g d_g / (2 c_g^2)
    S = score_function(exp_gauss_model, space="constrained")(pts)
    diag = (S**2).sum(1) + D * R / (2 * 1e-4) + R * N / (2 * 1e6)
    np.testing.assert_allclose(np.diag(K), diag, rtol=1e-12)
    assert paper == pytest.approx(K.mean(), rel=1e-14)
    with pytest.raises(ValueError, match="kernel must be one of"):
        stein_discrepancy(exp_gauss_model, pts, kernel="paper", progressbar=False)


def test_boundary_points_floor_or_fail(exp_gauss_model, rng, tmp_path):
    A = rng.exponential(size=(6, D, R))
    W = rng.exponential(size=(6, R, N))
    A[2, 1, 0] = 0.0  # an exact zero, as NMF solvers return: no unconstrained image
    with pytest.raises(ValueError, match="no unconstrained image"):
        stein_discrepancy(exp_gauss_model, {"A": A, "W": W}, floor=0.0, progressbar=False)
    ksd = stein_discrepancy(exp_gauss_model, {"A": A, "W": W}, progressbar=False)
    assert np.isfinite(ksd)
    # the default floor moves the zero to 1e-6 x the mean of A, and nothing else
    moved = A.copy()
    moved[2, 1, 0] = 1e-6 * A.mean()
    ref = stein_discrepancy(exp_gauss_model, {"A": moved, "W": W}, floor=0.0, progressbar=False)
    assert ksd == pytest.approx(ref, rel=1e-12)
    dt = build_datatree({"A": A[None], "W": W[None]}, attrs={"method": "t"})
    stein_discrepancy(exp_gauss_model, dt, progressbar=False)
    assert dt["diagnostics"]["ksd_v"].attrs["n_floored"] == 1


def test_floor_keeps_simplex_columns(rng):
    from bnmfzoo.diagnostics._stein._stein_scores import floor_points
    from bnmfzoo.models import silf

    model = silf(rng.random((6, 5)), 2, epsilon=1e6)
    A = rng.dirichlet(np.ones(6), size=(3, 2)).transpose(0, 2, 1)
    A[0, :, 1] = [0.0, 0.5, 0.5, 0.0, 0.0, 0.0]  # a column on a face of the simplex
    W = rng.exponential(size=(3, 2, 5))
    out, n = floor_points(model, {"A": A, "W": W}, 1e-6)
    np.testing.assert_allclose(out["A"].sum(axis=1), 1.0, rtol=1e-14)
    assert n == {"A": 4, "W": 0}
    assert out["A"][0, 0, 1] == pytest.approx(1e-6 / 6 / (1 + 4e-6 / 6), rel=1e-12)
    np.testing.assert_array_equal(out["A"][1:], A[1:])
    np.testing.assert_array_equal(out["W"], W)
    assert np.isfinite(stein_discrepancy(model, {"A": A, "W": W}, progressbar=False))
