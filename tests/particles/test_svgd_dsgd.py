"""Gradient baselines: SVGD / SVGD-Q with the IMQ kernel and direct Stein gradient descent."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo.inference import fit_dsgd, fit_svgd
from bnmfzoo.inference.particles.dsgd import ksd_graph
from bnmfzoo.inference.particles.qtransform import generate_q_bank
from bnmfzoo.inference.particles.svgd import initial_particles, svgd_direction
from bnmfzoo.inference.particles.weighted import default_kernel, resolve_nmf_model
from bnmfzoo.models import silf


def _data(seed=0, D=8, N=7, R=3):
    rng = np.random.default_rng(seed)
    return rng.random((D, R)) @ rng.random((R, N)) + 0.05 * rng.random((D, N))


@pytest.fixture(scope="module")
def model():
    return silf(_data(), 3, n_reference=5, random_seed=1)


@pytest.fixture(scope="module")
def info(model):
    return resolve_nmf_model(model)


def test_svgd_direction_matches_pairwise_loop(model, info):
    from bnmfzoo.diagnostics import score_function

    A, W = initial_particles(info, "random", 4, np.random.default_rng(0))
    kernel = default_kernel(info)
    score = score_function(model, var_names=["A", "W"])
    dA, dW = svgd_direction(score, info, kernel)(A, W)
    S = score({"A": A, "W": W})
    M = len(A)
    for i in range(M):
        phi_A = np.zeros_like(A[i])
        phi_W = np.zeros_like(W[i])
        for j in range(M):
            r2 = {"A": np.array(np.sum((A[j] - A[i]) ** 2)),
                  "W": np.array(np.sum((W[j] - W[i]) ** 2))}
            k, d1, _ = kernel.evaluate(r2)
            phi_A += k * S[j, score.blocks["A"]].reshape(A[i].shape) \
                + 2 * d1["A"] * (A[j] - A[i])
            phi_W += k * S[j, score.blocks["W"]].reshape(W[i].shape) \
                + 2 * d1["W"] * (W[j] - W[i])
        np.testing.assert_allclose(dA[i], phi_A / M, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(dW[i], phi_W / M, rtol=1e-9, atol=1e-12)


def test_fit_svgd_and_svgd_q(model, tmp_path):
    dt = fit_svgd(model, n_particles=3, n_steps=20, checkpoints=[0, 10, 20], random_seed=0,
                  progressbar=False)
    p = dt["particles"]
    np.testing.assert_allclose(p["A"].values.sum(axis=1), 1.0, atol=1e-12)
    assert (p["W"].values > 0).all()
    assert p["weight"].sum() == pytest.approx(1.0) and (p["weight"].values >= 0).all()
    d = dt["diagnostics"]
    np.testing.assert_array_equal(d["checkpoint_step"].values, [0, 10, 20])
    assert np.all(np.diff(d["checkpoint_time"].values) >= 0)
    assert dt.attrs["method"] == "svgd"
    dt.to_netcdf(tmp_path / "svgd.nc")
    back = xr.open_datatree(tmp_path / "svgd.nc")
    np.testing.assert_allclose(back["diagnostics"]["checkpoint_stein_discrepancy"].values,
                               d["checkpoint_stein_discrepancy"].values)
    back.close()
    bank = generate_q_bank(n_datasets=1, n_restarts=3, cache=False)
    dq = fit_svgd(model, n_particles=3, n_steps=5, init="qtransform", q_bank=bank,
                  random_seed=0, progressbar=False)
    assert dq.attrs["method"] == "svgd_q"
    # same seed, same result
    dt2 = fit_svgd(model, n_particles=3, n_steps=20, checkpoints=[0, 10, 20], random_seed=0,
                   progressbar=False)
    np.testing.assert_array_equal(dt2["particles"]["A"].values, p["A"].values)
    with pytest.raises(ValueError, match="n_particles"):
        fit_svgd(model, n_particles=1, progressbar=False)
    with pytest.raises(ValueError, match="init"):
        fit_svgd(model, init="nndsvd", progressbar=False)


def test_ksd_graph_value_and_gradient(model, info):
    """The autodiff KSD equals the closed form of the Stein helper; its gradient matches FD."""
    from bnmfzoo.diagnostics import stein_discrepancy

    A, W = initial_particles(info, "random", 2, np.random.default_rng(1))
    kernel = default_kernel(info)
    fn = ksd_graph(model, info, 2, kernel)
    val, gA, gW = fn(A, W)
    ref = stein_discrepancy(model, {"A": A, "W": W}, weights="uniform", kernel="masood2019",
                            space="constrained", progressbar=False)
    assert val == pytest.approx(ref, rel=1e-10)
    # central differences: truncation error ~ h^2 f''' / 6; with these h it is < 1e-6 relative
    for (arr, grad, idx, h) in ((W, gW, (1, 2, 3), 1e-5), (A, gA, (0, 4, 1), 1e-7)):
        E = np.zeros_like(arr)
        E[idx] = h
        if arr is W:
            fd = (fn(A, W + E)[0] - fn(A, W - E)[0]) / (2 * h)
        else:
            fd = (fn(A + E, W)[0] - fn(A - E, W)[0]) / (2 * h)
        assert grad[idx] == pytest.approx(fd, rel=1e-5)


def test_fit_dsgd_descends(model):
    dt = fit_dsgd(model, n_particles=3, n_steps=30, checkpoints=[0, 30], random_seed=0,
                  space="constrained", ksd_kernel="masood2019", progressbar=False)
    ksd_u = dt["diagnostics"]["checkpoint_stein_discrepancy_uniform"].values
    # DSGD descends the uniform-weight KSD directly (Adam, small steps): it must go down
    assert ksd_u[-1] < ksd_u[0]
    np.testing.assert_allclose(dt["particles"]["A"].values.sum(axis=1), 1.0, atol=1e-12)
    assert dt.attrs["method"] == "dsgd"
