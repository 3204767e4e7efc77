"""Exponential-Gaussian models: log densities by hand, specs, coordinates, bad input."""

import dataclasses

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

from bnmfzoo import likelihoods
from bnmfzoo.models import exponential_gaussian, tri_exponential_gaussian
from bnmfzoo.models._spec import GaussianHyper, find_spec, get_spec
from bnmfzoo.models.gaussian import BROUWER2017, BROUWER2017_NMTF, reference_sigma


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.exponential(size=(5, 4))
    X[0, 1] = X[2, 3] = X[4, 0] = np.nan
    return X


def _logp(model, values):
    """Model log density (no Jacobian) at natural-space ``values``."""
    point = {}
    for rv in model.free_RVs:
        value_var = model.rvs_to_values[rv]
        point[value_var.name] = np.log(np.asarray(values[rv.name], dtype=float))
    return float(model.compile_logp(jacobian=False, mode="FAST_COMPILE")(point))


# PyMC's compiled log densities differ from scipy's by up to ~1e-8 per scalar term (measured:
# 1.9e-9 per Normal entry, rounding in the compiled constants), so log densities are compared
# with an absolute tolerance of 1e-8 per scalar term; a mask error would change them by O(1).


def _tol(model):
    return 1e-8 * sum(int(np.size(v)) for v in model.initial_point().values()) + 1e-8 * 17


def _exp_logpdf(x, rate):
    return np.sum(np.log(rate) - rate * x)


def _lik(X, mean, tau):
    m = ~np.isnan(X)
    return np.sum(stats.norm.logpdf(X[m], mean[m], 1 / np.sqrt(tau)))


def test_nmf_logp_by_hand(data):
    rng = np.random.default_rng(1)
    model = exponential_gaussian(data, 2, lambda_A=0.3, lambda_W=0.7, alpha_tau=2.0,
                                 beta_tau=3.0)
    A, W, tau = rng.exponential(size=(5, 2)), rng.exponential(size=(2, 4)), 1.7
    expected = (_exp_logpdf(A, 0.3) + _exp_logpdf(W, 0.7)
                + stats.gamma.logpdf(tau, 2.0, scale=1 / 3.0) + _lik(data, A @ W, tau))
    got = _logp(model, {"A": A, "W": W, "tau": tau})
    assert got == pytest.approx(expected, abs=_tol(model))
    # only the 17 observed entries are in the likelihood
    assert len(model.coords["X_obs"]) == 17


def test_nmf_ard_logp_by_hand(data):
    rng = np.random.default_rng(2)
    model = exponential_gaussian(data, 2, ard=True, alpha0=1.5, beta0=0.5, beta_tau=1.0)
    A, W, tau = rng.exponential(size=(5, 2)), rng.exponential(size=(2, 4)), 0.8
    lam = np.array([0.4, 2.5])
    expected = (_exp_logpdf(A, lam[None, :]) + _exp_logpdf(W, lam[:, None])
                + stats.gamma.logpdf(lam, 1.5, scale=2.0).sum()
                + stats.gamma.logpdf(tau, 1.0, scale=1.0) + _lik(data, A @ W, tau))
    got = _logp(model, {"A": A, "W": W, "tau": tau, "lambda_": lam})
    assert got == pytest.approx(expected, abs=_tol(model))


def test_nmtf_logp_by_hand_fixed_sigma(data):
    rng = np.random.default_rng(3)
    model = tri_exponential_gaussian(data, (2, 3), sigma=0.5, ard=True, lambda_S=0.1,
                                     beta0=1.0)
    F, S, G = rng.exponential(size=(5, 2)), rng.exponential(size=(2, 3)), rng.exponential(
        size=(4, 3))
    lF, lG = np.array([0.5, 1.5]), np.array([1.0, 2.0, 3.0])
    expected = (_exp_logpdf(F, lF[None, :]) + _exp_logpdf(S, 0.1) + _exp_logpdf(G, lG[None, :])
                + stats.gamma.logpdf(lF, 1.0).sum() + stats.gamma.logpdf(lG, 1.0).sum()
                + _lik(data, F @ S @ G.T, 1 / 0.25))
    got = _logp(model, {"F": F, "S": S, "G": G, "lambda_F": lF, "lambda_G": lG})
    assert got == pytest.approx(expected, abs=_tol(model))
    assert "tau" not in model.named_vars


def test_specs_and_coords(data):
    X = xr.DataArray(data, dims=("cell", "drug"),
                     coords={"cell": list("abcde"), "drug": ["d1", "d2", "d3", "d4"]})
    model = exponential_gaussian(X, 3, **BROUWER2017)  # the pre-#34 defaults, explicitly
    spec = get_spec(model, families="exponential_gaussian", method="test")
    assert spec.rank == 3 and spec.mask.sum() == 17
    assert spec.hyper == GaussianHyper(lambda_A=0.1, lambda_W=0.1, alpha_tau=1.0, beta_tau=1.0,
                                       sigma=None, ard=False, alpha0=1.0, beta0=1.0)
    assert spec.var_names == {"A": "A", "W": "W", "tau": "tau", "lambda_": None}
    assert list(model.coords["row"]) == list("abcde")
    assert list(model.coords["col"]) == ["d1", "d2", "d3", "d4"]
    assert model.named_vars_to_dims["A"] == ("row", "factor")
    assert model.named_vars_to_dims["W"] == ("factor", "col")

    tri = tri_exponential_gaussian(X, (2, 3), ard=True, **BROUWER2017_NMTF)
    tspec = get_spec(tri, families="tri_exponential_gaussian", method="test")
    assert tspec.rank == (2, 3)
    assert tspec.hyper == GaussianHyper(lambda_S=0.1, ard=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tspec.hyper.sigma = 1.0  # typed and frozen
    assert tspec.var_names == {"F": "F", "S": "S", "G": "G", "tau": "tau",
                               "lambda_F": "lambda_F", "lambda_G": "lambda_G"}
    assert tri.named_vars_to_dims["G"] == ("col", "factor_col")
    with pytest.raises(TypeError, match="GibbsNMF fits"):
        get_spec(tri, families="exponential_gaussian", method="GibbsNMF")


def test_reference_sigma(data):
    rng = np.random.default_rng(4)
    A, W = rng.exponential(size=(30, 2)), rng.exponential(size=(2, 20))
    X = A @ W + rng.normal(scale=0.05, size=(30, 20))
    X = np.abs(X)
    sigma = reference_sigma(X, 2)
    # a rank-2 fit leaves roughly the noise: between 0.5x and 1x the true sd 0.05
    assert 0.025 < sigma < 0.05
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.2] = np.nan
    sigma_m = reference_sigma(Xm, 2)
    # masked multiplicative updates converge slowly: within 20% of the noise sd is enough to
    # show the fit ignores the missing entries (filling them with row means gave 0.105)
    assert 0.025 < sigma_m < 0.06
    model = exponential_gaussian(Xm, 2, sigma="reference")
    assert find_spec(model).hyper.sigma == pytest.approx(sigma_m)
    assert find_spec(model).var_names["tau"] is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(X=-np.ones((4, 3)), rank=2, sigma="reference"), "negative"),
        (dict(rank=5), "rank"),
        (dict(rank=0), "rank"),
        (dict(sigma="residual"), "sigma"),
        (dict(sigma=-1.0), "sigma"),
        (dict(lambda_=0.0), "lambda_"),
        (dict(alpha_tau=-1.0), "alpha_tau"),
    ],
)
def test_bad_input(data, kwargs, match):
    kwargs = {"X": data, "rank": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        exponential_gaussian(kwargs.pop("X"), kwargs.pop("rank"), **kwargs)


def test_bad_input_missing_row_and_tri(data):
    X = data.copy()
    X[1, :] = np.nan
    with pytest.raises(ValueError, match="row"):
        exponential_gaussian(X, 2)
    with pytest.raises(ValueError, match="ranks"):
        tri_exponential_gaussian(data, (2, 9))
    with pytest.raises(TypeError, match="ranks"):
        tri_exponential_gaussian(data, 2)
    with pytest.raises(TypeError, match="rank"):
        exponential_gaussian(data, 2.5)


def test_likelihood_term_in_user_model(data):
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(5, 2))
        W = pm.HalfNormal("W", 1.0, shape=(2, 4))
        likelihoods.gaussian("Y", A, W, data, sigma=0.5)
    a, w = np.full((5, 2), 0.5), np.full((2, 4), 0.8)
    point = {"A_log__": np.log(a), "W_log__": np.log(w)}
    got = model.compile_logp(vars=[model["Y"]], mode="FAST_COMPILE")(point)
    assert got == pytest.approx(_lik(data, a @ w, 4.0), abs=_tol(model))
    assert list(model.coords["Y_obs"]) == list(np.flatnonzero(~np.isnan(data)))
    with pytest.raises(ValueError, match="exactly one"):
        with pm.Model():
            likelihoods.gaussian("Y", a, w, data)
