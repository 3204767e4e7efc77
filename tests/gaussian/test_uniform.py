"""Uniform-noise model (Masood & Doshi-Velez 2016): box likelihood, default epsilon, errors."""

import numpy as np
import pytest

from bnmfzoo._base.nmf_solvers import lin_pg_nmf, max_abs_residual
from bnmfzoo.models import uniform_noise
from bnmfzoo.models._spec import UniformHyper, find_spec
from bnmfzoo.models.uniform import epsilon_restarts

D, N, R = 7, 5, 2


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.random((D, R)) @ rng.random((R, N)) + 0.05 * rng.random((D, N))
    X[1, 2] = np.nan  # one missing entry: never enters the likelihood
    return X


@pytest.fixture(scope="module")
def model(data):
    return uniform_noise(data, R, random_seed=0)


@pytest.fixture(scope="module")
def logp(model):
    return model.compile_logp()  # the one compiled graph of this module


def _point(A, W):
    with np.errstate(divide="ignore"):
        return {"A_log__": np.log(A), "W_log__": np.log(W)}


def _hand_logp(X, A, W, eps, lam_A, lam_W):
    """-|obs| log(2 eps) + exponential log priors + log-transform Jacobian (sum log A, W)."""
    obs = ~np.isnan(X)
    if np.max(np.abs(X - A @ W)[obs]) > eps:
        return -np.inf
    prior = (A.size * np.log(lam_A) - lam_A * A.sum() + W.size * np.log(lam_W) - lam_W * W.sum())
    return -obs.sum() * np.log(2 * eps) + prior + np.log(A).sum() + np.log(W).sum()


def test_spec_and_default_epsilon(model, data):
    spec = find_spec(model)
    assert spec.family == "uniform_noise"
    assert spec.rank == R
    assert spec.mask.sum() == D * N - 1
    eps = spec.hyper.epsilon
    restarts = epsilon_restarts(spec.X_values, spec.mask, R, eps)  # remembered, not attached
    assert len(restarts) == 10
    obs = spec.mask
    worst = max(max_abs_residual(data, A, W, obs) for A, W in restarts)
    # epsilon is the largest restart residual (made strict by a relative 1e-9)
    assert worst < eps <= worst * (1 + 1e-8)
    assert set(model.named_vars) >= {"A", "W", "X"}


def test_logp_finite_inside_and_matches_hand(model, data, logp):
    spec = find_spec(model)
    A, W = epsilon_restarts(spec.X_values, spec.mask, R, spec.hyper.epsilon)[0]
    # strictly positive for the log transform; moves residuals by < 1e-12, far below the
    # 1e-9 relative margin that makes epsilon strict
    A, W = np.maximum(A, 1e-13), np.maximum(W, 1e-13)
    eps = spec.hyper.epsilon
    assert np.max(np.abs(data - A @ W)[spec.mask]) < eps
    val = logp(_point(A, W))
    assert np.isfinite(val)
    assert val == pytest.approx(_hand_logp(data, A, W, eps, 1.0, 1.0), rel=1e-10)


def test_logp_minus_inf_outside(model, data, logp):
    spec = find_spec(model)
    A, W = epsilon_restarts(spec.X_values, spec.mask, R, spec.hyper.epsilon)[0]
    A, W = np.maximum(A, 1e-3), np.maximum(W, 1e-3)
    eps = spec.hyper.epsilon
    # push one observed entry's fit far outside the box: scale A's first row
    A_bad = A.copy()
    A_bad[0] *= 1.0 + 10 * eps / max(A[0] @ W.min(axis=1), 1e-3) + 5.0
    assert np.max(np.abs(data - A_bad @ W)[spec.mask]) > eps
    assert logp(_point(A_bad, W)) == -np.inf


def test_missing_entry_is_ignored(data):
    A = lin_pg_nmf(np.nan_to_num(data), R, random_seed=1)[0]
    W = lin_pg_nmf(np.nan_to_num(data), R, random_seed=1)[1]
    A, W = np.maximum(A, 1e-3), np.maximum(W, 1e-3)
    obs = ~np.isnan(data)
    eps = float(np.max(np.abs(data - A @ W)[obs])) * 1.01
    X2 = data.copy()
    X2[1, 2] = 1e6  # would be infeasible if it were used ...
    mask = obs.copy()  # ... but the mask says it is not observed
    model = uniform_noise(X2, R, epsilon=eps, mask=mask)
    assert find_spec(model).mask.sum() == obs.sum()


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": -1.0}, ValueError),
        ({"epsilon": "big"}, TypeError),
        ({"lambda_": -1.0}, ValueError),
    ],
)
def test_bad_options(data, kwargs, err):
    with pytest.raises(err):
        uniform_noise(data, R, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="negative"):
        uniform_noise(-np.ones((4, 3)), 1, epsilon=0.1)
    with pytest.raises(ValueError, match="rank"):
        uniform_noise(np.ones((4, 3)), 4, epsilon=0.1)


def test_uniform_noise_is_recognized_from_the_graph(data):
    # the constructor attaches nothing: data, epsilon and rates are read from the graph, and a
    # pm.Uniform box written by hand around (A @ W)[rows, cols] gives the same description
    import pymc as pm

    from bnmfzoo.models import recognize

    model = uniform_noise(data, R, epsilon=0.7, lambda_A=2.0, lambda_W=0.5)
    assert not hasattr(model, "bnmfzoo_spec")
    f = recognize(model)
    assert (f.family, f.epsilon, f.lambda_A, f.lambda_W, f.rank) == ("uniform_noise", 0.7, 2.0,
                                                                     0.5, R)
    assert find_spec(model).hyper == UniformHyper(epsilon=0.7, lambda_A=2.0, lambda_W=0.5)
    obs = ~np.isnan(data)
    rows, cols = np.nonzero(obs)
    with pm.Model() as user:
        A = pm.Exponential("A", 2.0, shape=(D, R))
        W = pm.Exponential("W", 0.5, shape=(R, N))
        mu = (A @ W)[rows, cols]
        pm.Uniform("Y", lower=mu - 0.7, upper=mu + 0.7, observed=data[rows, cols])
    g = recognize(user)
    np.testing.assert_array_equal(g.mask, f.mask)
    np.testing.assert_array_equal(g.X_values, f.X_values)
    assert find_spec(user).hyper == find_spec(model).hyper
    with pm.Model() as lopsided:
        A = pm.Exponential("A", 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        mu = (A @ W)[rows, cols]
        pm.Uniform("Y", lower=mu - 0.7, upper=mu + 0.2, observed=data[rows, cols])
    with pytest.raises(TypeError, match="half-width"):
        recognize(lopsided)
