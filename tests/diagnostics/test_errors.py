"""Reconstruction errors (posterior mean of the product) and per-draw log-likelihoods."""

import numpy as np
import pytest
from scipy import stats

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import log_likelihood, reconstruction_error


@pytest.fixture(scope="module")
def draws():
    rng = np.random.default_rng(11)
    C, S, D, N, R = 2, 5, 6, 4, 2
    A = rng.gamma(2.0, size=(C, S, D, R))
    W = rng.gamma(2.0, size=(C, S, R, N))
    X = A[0, 0] @ W[0, 0] + 0.3 * rng.standard_normal((D, N))
    test = np.zeros((D, N), bool)
    test[rng.random((D, N)) < 0.3] = True
    tau = rng.gamma(5.0, size=(C, S))
    return A, W, X, test, tau


def test_mean_of_product_not_product_of_means(draws):
    A, W, X, test, _ = draws
    prods = np.einsum("csdr,csrn->csdn", A, W)
    mean_prod = prods.mean((0, 1))
    train = ~test
    expected_train = ((X - mean_prod)[train] ** 2).mean()
    expected_test = ((X - mean_prod)[test] ** 2).mean()
    out = reconstruction_error(X, A, W, test_mask=test)
    assert out["train"] == pytest.approx(expected_train, rel=1e-12)
    assert out["test"] == pytest.approx(expected_test, rel=1e-12)
    naive = ((X - A.mean((0, 1)) @ W.mean((0, 1)))[train] ** 2).mean()
    assert abs(out["train"] - naive) > 1e-3  # the two differ on these draws
    # DataTree input gives the same, and tri-factor F S G^T too
    dt = build_datatree({"A": A, "W": W})
    assert reconstruction_error(X, dt, test_mask=test) == pytest.approx(out)
    G = np.swapaxes(W, -1, -2)
    S = np.broadcast_to(np.eye(2), A.shape[:2] + (2, 2)).copy()
    dt3 = build_datatree({"F": A, "S": S, "G": G})
    assert reconstruction_error(X, dt3, test_mask=test) == pytest.approx(out)


def test_kinds_and_masks(draws):
    A, W, X, test, _ = draws
    a, w = A[0, 0], W[0, 0]
    r = X - a @ w
    Xn = X.copy()
    Xn[0, 0] = np.nan  # missing entry: never counted
    m = ~np.isnan(Xn)
    assert reconstruction_error(Xn, a, w, kind="sse") == pytest.approx((r[m] ** 2).sum())
    assert reconstruction_error(Xn, a, w, kind="rmse") == pytest.approx(
        np.sqrt((r[m] ** 2).mean())
    )
    assert reconstruction_error(Xn, a, w, kind="mae") == pytest.approx(np.abs(r[m]).mean())
    assert reconstruction_error(Xn, a, w, kind="frobenius") == pytest.approx(
        np.sqrt((r[m] ** 2).sum())
    )
    r2 = 1 - (r[m] ** 2).sum() / ((Xn[m] - Xn[m].mean()) ** 2).sum()
    assert reconstruction_error(Xn, a, w, kind="r2") == pytest.approx(r2)
    train_mask = np.ones_like(m)
    train_mask[1] = False
    sel = m & train_mask
    assert reconstruction_error(Xn, a, w, mask=train_mask) == pytest.approx((r[sel] ** 2).mean())


def test_per_draw(draws):
    A, W, X, test, _ = draws
    out = reconstruction_error(X, A, W, test_mask=test, reduce="per_draw")
    assert out["train"].dims == ("chain", "draw")
    c, s = 1, 3
    r = X - A[c, s] @ W[c, s]
    assert float(out["test"][c, s]) == pytest.approx((r[test] ** 2).mean())
    # a flat stack gives a 'sample' dim
    flat = reconstruction_error(X, A.reshape(-1, 6, 2), W.reshape(-1, 2, 4), reduce="per_draw")
    assert flat.dims == ("sample",) and flat.size == 10


def test_log_likelihood_against_scipy(draws):
    A, W, X, test, tau = draws
    dt = build_datatree({"A": A, "W": W, "tau": tau})
    ll = log_likelihood(X, dt)
    assert ll.dims == ("chain", "draw")
    c, s = 0, 2
    ref = stats.norm.logpdf(X, A[c, s] @ W[c, s], 1 / np.sqrt(tau[c, s])).sum()
    assert float(ll[c, s]) == pytest.approx(ref, rel=1e-12)
    # held-out entries only
    ll_test = log_likelihood(X, dt, mask=test)
    ref = stats.norm.logpdf(X, A[c, s] @ W[c, s], 1 / np.sqrt(tau[c, s]))[test].sum()
    assert float(ll_test[c, s]) == pytest.approx(ref, rel=1e-12)
    # Masood et al. (2016) form: -|X - AW|^2 / (2 sigma^2), no constant
    sigma = 0.3
    ll_m = log_likelihood(X, A[0], W[0], sigma=sigma, include_constant=False)
    assert ll_m.dims == ("sample",)
    assert float(ll_m[1]) == pytest.approx(-((X - A[0, 1] @ W[0, 1]) ** 2).sum() / (2 * 0.09))
    # single factorization -> float
    assert isinstance(log_likelihood(X, A[0, 0], W[0, 0], tau=2.0), float)


def test_bad_input(draws):
    A, W, X, test, _ = draws
    with pytest.raises(ValueError, match="kind"):
        reconstruction_error(X, A, W, kind="mape")
    with pytest.raises(ValueError, match="shape"):
        reconstruction_error(X[:3], A, W)
    with pytest.raises(TypeError, match="W is required"):
        reconstruction_error(X, A)
    with pytest.raises(ValueError, match="columns"):
        reconstruction_error(X, A[0, 0], W[0, 0, :1])
    with pytest.raises(ValueError, match="tau or sigma"):
        log_likelihood(X, A, W)
    with pytest.raises(ValueError, match="test_mask"):
        reconstruction_error(X, A, W, test_mask=np.zeros_like(test))
    with pytest.raises(ValueError, match="not both"):
        log_likelihood(X, A, W, tau=1.0, sigma=1.0)
    with pytest.raises(ValueError, match="variable"):
        reconstruction_error(X, build_datatree({"B": A}))
