"""Tests of fit_icm (iterated conditional modes, Brouwer et al. 2017)."""

import numpy as np
import pytest
import xarray as xr
from _synthetic import noisy_low_rank

from bnmfzoo.inference.gaussian.variational.icm import fit_icm
from bnmfzoo.models import exponential_gaussian, tri_exponential_gaussian

_data = noisy_low_rank


CONFIGS = {
    "nmf": lambda: exponential_gaussian(_data(0), 3),
    "nmf_ard": lambda: exponential_gaussian(_data(0), 4, ard=True),
    "nmf_sigma": lambda: exponential_gaussian(_data(0), 3, sigma=0.5),
    "tri": lambda: tri_exponential_gaussian(_data(1, tri=True), (3, 2)),
    "tri_ard": lambda: tri_exponential_gaussian(_data(1, tri=True), (3, 3), ard=True),
    "tri_sigma": lambda: tri_exponential_gaussian(_data(1, tri=True), (3, 2), sigma=0.5),
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("floor", [0.1, 0.0])
def test_log_joint_never_decreases(name, floor):
    dt = fit_icm(CONFIGS[name](), max_iter=100, floor=floor, random_seed=2, progressbar=False)
    obj = dt["diagnostics"]["objective"].values
    assert np.all(np.isfinite(obj))
    # each block is set to the maximizer of its conditional over [floor, inf), which contains
    # the current value (the initial point is raised to the floor): the log joint cannot
    # decrease beyond round-off (relative 1e-9)
    assert np.all(np.diff(obj) >= -1e-9 * np.abs(obj[1:]))
    if floor > 0:
        assert obj[-1] > obj[0]
    post = dt["posterior"]
    for role in ("F", "S", "G") if name.startswith("tri") else ("A", "W"):
        assert post[role].shape[:2] == (1, 1)
        assert post[role].values.min() >= floor


def test_fits_synthetic_and_traces():
    rng = np.random.default_rng(11)
    X = rng.exponential(size=(40, 3)) @ rng.exponential(size=(3, 30))
    X = np.abs(X + 0.5 * rng.normal(size=X.shape))
    dt = fit_icm(exponential_gaussian(X, 3), max_iter=300, random_seed=0, progressbar=False)
    mse = dt["diagnostics"]["mse"].values
    # MAP fit of a rank-3 model to rank-3 data with noise variance 0.25: training MSE near
    # 0.25 (the paper's ICM reaches 0.81 at noise variance 1, i.e. ~20 % below)
    assert 0.15 < mse[-1] < 0.3
    assert dt.attrs["method"] == "icm"
    # the stored point is the final iterate: its MSE matches the last trace entry
    np.testing.assert_allclose(dt["sample_stats"]["mse"].values[0, 0], mse[-1], rtol=1e-10)
    assert float(dt["posterior"]["tau"].values[0, 0]) > 1.0


def test_burn_in_keeps_iterates(tmp_path):
    dt = fit_icm(CONFIGS["nmf_ard"](), max_iter=40, burn_in=30, thinning=2, random_seed=1,
                 progressbar=False)
    post = dt["posterior"]
    assert post.sizes["draw"] == 5
    assert post["lambda_"].shape == (1, 5, 4)
    dt.to_netcdf(tmp_path / "icm.nc")
    back = xr.open_datatree(tmp_path / "icm.nc")
    np.testing.assert_array_equal(back["posterior"]["A"].values, post["A"].values)
    np.testing.assert_array_equal(back["diagnostics"]["objective"].values,
                                  dt["diagnostics"]["objective"].values)


def test_reproducible_and_errors():
    model = CONFIGS["nmf"]()
    a = fit_icm(model, max_iter=10, random_seed=4, progressbar=False)
    b = fit_icm(model, max_iter=10, random_seed=4, progressbar=False)
    np.testing.assert_array_equal(a["posterior"]["A"].values, b["posterior"]["A"].values)
    with pytest.raises(ValueError, match="floor"):
        fit_icm(model, floor=-1.0)
    with pytest.raises(ValueError, match="burn_in"):
        fit_icm(model, max_iter=10, burn_in=10)
    with pytest.raises(TypeError, match="fit_icm"):
        fit_icm(object())
