"""The Gram-matrix path of the VB / ICM NMF sweep against the residual path.

Both paths make the same coordinate updates in the same order (only sums over entries are
formed differently), so from the same start they must give the same iterates up to
floating-point rounding, which stays far below 1e-9 relative over a few dozen sweeps of a
well-conditioned problem. VB's own correctness (the ELBO never decreases, agreement with the
paper) is tested in ``test_vb.py`` on whichever path ``"auto"`` picks.
"""

import functools

import numpy as np
import pytest

from bnmfzoo.inference import fit_icm, fit_vb
from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.models import exponential_gaussian


def _block_missing(seed=0, D=40, N=15, R=3):
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(D, R)) @ rng.exponential(size=(R, N)) + rng.normal(0, 0.3, (D, N))
    X = np.abs(X)
    X[: D // 3, : N // 4] = np.nan
    X[rng.random((D, N)) < 0.05] = np.nan
    return X


_SWEEP = core.sweep


def _fit(monkeypatch, fit, model, kernel, **kw):
    """``fit`` with every NMF sweep forced onto ``kernel`` (checked: the Gram kernel ran)."""
    calls = []
    gram_columns = core._gram_columns
    monkeypatch.setattr(core, "_gram_columns", lambda *a: calls.append(1) or gram_columns(*a))
    monkeypatch.setattr(core, "sweep", functools.partial(_SWEEP, kernel=kernel))
    out = fit(model, random_seed=5, progressbar=False, **kw)
    assert bool(calls) == (kernel == "gram")
    return out


@pytest.mark.parametrize("ard", [False, True])
def test_vb_gram_and_residual_paths_agree(monkeypatch, ard):
    model = exponential_gaussian(_block_missing(), 3, ard=ard)
    out = {k: _fit(monkeypatch, fit_vb, model, k, max_iter=30, n_draws=5)
           for k in ("gram", "residual")}
    g, r = out["gram"], out["residual"]
    np.testing.assert_allclose(g["variational"]["elbo"], r["variational"]["elbo"], rtol=1e-9)
    for name in ("A", "W"):
        np.testing.assert_allclose(g["posterior"][name], r["posterior"][name], rtol=1e-8,
                                   atol=1e-12)
    assert (np.diff(g["variational"]["elbo"].values) >= -1e-9 * abs(
        g["variational"]["elbo"].values[-1])).all()


def test_icm_gram_and_residual_paths_agree(monkeypatch):
    model = exponential_gaussian(_block_missing(seed=1), 3)
    out = {k: _fit(monkeypatch, fit_icm, model, k, max_iter=30) for k in ("gram", "residual")}
    np.testing.assert_allclose(out["gram"]["diagnostics"]["objective"],
                               out["residual"]["diagnostics"]["objective"], rtol=1e-9)


def test_auto_takes_the_gram_path_on_block_missing_data():
    obs = core.Observed(np.nan_to_num(_block_missing(D=200, N=60)),
                        ~np.isnan(_block_missing(D=200, N=60)))
    assert obs.half_sweep_paths(10) == ("gram", "gram")


def test_dense_product_matches_the_observed_entries():
    X = _block_missing()
    obs = core.Observed(np.nan_to_num(X), ~np.isnan(X))
    rng = np.random.default_rng(0)
    P, Q = rng.random((3, X.shape[0])), rng.random((3, X.shape[1]))
    np.testing.assert_allclose(obs.product(P, Q), (P.T @ Q)[~np.isnan(X)], rtol=1e-14)


def test_unknown_kernel_is_refused():
    model = exponential_gaussian(_block_missing(), 2)
    problem = glue.problem_from_model(model, method="test")
    state = core.MomentState(problem, core.init_means(problem, "random",
                                                      np.random.default_rng(0)))
    with pytest.raises(ValueError, match="kernel"):
        core.sweep(state, core.tn_moments_rule, kernel="dense")


def test_dense_and_sparse_mask_sums_agree():
    X = _block_missing()
    observed = ~np.isnan(X)
    dense = core.Observed(np.nan_to_num(X), observed)
    sparse = core.Observed(np.nan_to_num(X), observed)
    sparse.dense_mask = None  # force the sparse products
    rng = np.random.default_rng(1)
    Q, P = rng.random((3, X.shape[1])), rng.random((3, X.shape[0]))
    assert dense.dense_mask is not None
    np.testing.assert_allclose(dense.rows_of(Q), sparse.rows_of(Q), rtol=1e-13)
    np.testing.assert_allclose(dense.cols_of(P), sparse.cols_of(P), rtol=1e-13)
    np.testing.assert_allclose(dense.product(P, Q), sparse.product(P, Q), rtol=1e-13)
    np.testing.assert_allclose(dense.pair_sum(P, Q), sparse.pair_sum(P, Q), rtol=1e-13)
