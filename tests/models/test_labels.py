"""Labels are respected: data dims by name, masks by label, arrays without coordinates."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo._base.validation import as_dataarray, check_matrix
from bnmfzoo.models import (
    beta_dir,
    dir_dir,
    exponential_gaussian,
    silf,
    tri_exponential_gaussian,
    uniform_noise,
)


def _labelled(rng, D=6, N=5):
    return xr.DataArray(rng.random((D, N)) + 0.1, dims=("row", "col"),
                        coords={"row": [f"r{i}" for i in range(D)],
                                "col": [f"c{j}" for j in range(N)]})


def test_col_row_dims_are_matched_by_name_not_position(rng):
    X = _labelled(rng)
    Xt = X.transpose("col", "row")
    da = as_dataarray(Xt)
    assert da.dims == ("row", "col")
    np.testing.assert_array_equal(da.values, X.values)
    assert list(da.row.values) == list(X.row.values)


def test_mask_dataarray_is_matched_by_label(rng):
    X = _labelled(rng)
    mask = xr.DataArray(rng.random(X.shape) < 0.7, dims=("row", "col"),
                        coords={"row": X.row.values, "col": X.col.values})
    mask[:, 0] = True
    mask[0, :] = True
    shuffled = mask.isel(row=rng.permutation(X.sizes["row"]), col=rng.permutation(X.sizes["col"]))
    _, observed = check_matrix(X, mask=shuffled)
    np.testing.assert_array_equal(observed, mask.values)
    _, observed_t = check_matrix(X, mask=shuffled.transpose("col", "row"))
    np.testing.assert_array_equal(observed_t, mask.values)


def test_mask_missing_a_label_is_refused(rng):
    X = _labelled(rng)
    mask = xr.DataArray(np.ones(X.shape, bool), dims=("row", "col"),
                        coords={"row": [f"x{i}" for i in range(6)], "col": X.col.values})
    with pytest.raises(ValueError, match="no row labelled 'r0'"):
        check_matrix(X, mask=mask)


def test_unlabelled_mask_dataarray_is_positional(rng):
    X = _labelled(rng)
    m = np.ones(X.shape, bool)
    m[2, 3] = False
    _, observed = check_matrix(X, mask=xr.DataArray(m, dims=("row", "col")))
    np.testing.assert_array_equal(observed, m)


@pytest.mark.parametrize("build", [
    lambda X: exponential_gaussian(X, 2),
    lambda X: tri_exponential_gaussian(X, (2, 2)),
    lambda X: silf(X, 2, epsilon=1.0),
    lambda X: beta_dir((X > 0.5).astype(float), rank=2),
    lambda X: dir_dir((X > 0.5).astype(float), rank=2),
    lambda X: uniform_noise(X, 2, epsilon=1.0),
])
def test_dataarray_without_coordinates_gets_integer_labels(rng, build):
    X = xr.DataArray(rng.random((6, 5)) + 0.1, dims=("row", "col"))
    model = build(X)
    assert list(model.coords["row"]) == list(range(6))
    assert list(model.coords["col"]) == list(range(5))
