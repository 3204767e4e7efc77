"""The log_likelihood group of sparse count data covers the implicit zero cells.

Deterministic checks: the same draws give the same pointwise values, cell for cell, whether the
counts come dense (every observed cell listed) or sparse (zeros implicit in a potential).
"""

import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp
import xarray as xr

import bnmfzoo as bz
from bnmfzoo.diagnostics._modes.stacking import add_log_likelihood
from bnmfzoo.diagnostics.zero_cells import add_zero_cells, implicit_zero_cells


def _draws(model, n=5):
    with model:
        dt = pm.sample_prior_predictive(draws=n, random_seed=1)
    out = xr.DataTree()
    out["posterior"] = dt["prior"]
    return out


@pytest.mark.parametrize("family", ["poisson", "negative_binomial"])
def test_sparse_equals_dense_cell_for_cell(family):
    """Offsets, a mask with missing cells, a learned NB dispersion: every observed cell's
    pointwise value matches the dense model's; missing cells are absent from both."""
    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, (7, 9)).astype(float)
    mask = rng.random(X.shape) > 0.15
    s, c = rng.uniform(0.5, 2.0, 7), rng.uniform(0.5, 2.0, 9)
    build = getattr(bz.models, family)
    kw = dict(row_offset=s, col_offset=c, mask=mask)
    dense, sparse = build(X, 2, **kw), build(sp.csr_array(X), 2, **kw)
    assert implicit_zero_cells(dense) == 0
    assert implicit_zero_cells(sparse) == int(((X == 0) & mask).sum())
    draws = _draws(dense)
    a = add_log_likelihood(draws.copy(), dense)["log_likelihood"]["X"]
    b = add_log_likelihood(draws.copy(), sparse)["log_likelihood"]["X"]
    assert a.sizes["X_obs"] == mask.sum() == b.sizes["X_obs"]
    np.testing.assert_array_equal(a["X_obs"].values, b["X_obs"].values)
    np.testing.assert_allclose(b.values, a.values, rtol=1e-10, atol=1e-12)
    # the labels follow the flat index
    np.testing.assert_array_equal(b["row_index"].values, np.nonzero(mask)[0])


def test_thinned_group_reads_the_matching_draws():
    """A group on every 2nd draw gets its zero cells from those draws, not the first ones."""
    X = np.array([[0, 3, 0], [1, 0, 2]])
    dense, sparse = bz.models.poisson(X, 1), bz.models.poisson(sp.csr_array(X), 1)
    draws = _draws(dense, n=6)
    full = add_log_likelihood(draws.copy(), dense)["log_likelihood"]["X"]
    thin = draws.copy()
    post = thin["posterior"].to_dataset().isel(draw=slice(None, None, 2))
    sub = xr.DataTree.from_dict({"posterior": post})
    thin["log_likelihood"] = xr.DataTree(pm.compute_log_likelihood(
        sub, model=sparse, extend_inferencedata=False, progressbar=False))
    got = add_zero_cells(thin, sparse)["log_likelihood"]["X"]
    np.testing.assert_allclose(got.values, full.isel(draw=slice(None, None, 2)).values,
                               rtol=1e-12)


def test_too_large_a_group_is_refused_whole(monkeypatch):
    """Above the memory budget the group is refused in one line, and no group is left
    without its zero cells (a nonzero-only group would mislead az.loo)."""
    import bnmfzoo._base.memory as memory

    X = np.array([[0, 3, 0], [1, 0, 2]])
    sparse = bz.models.poisson(sp.csr_array(X), 1)
    draws = _draws(sparse)
    monkeypatch.setattr(memory, "memory_budget", lambda: 100)
    with pytest.raises(ValueError, match=r"log_likelihood group of 'X' over its 6 cells "
                                         r"\(3 of them zero counts\)"):
        add_log_likelihood(draws, sparse)
    assert "log_likelihood" not in draws.children
