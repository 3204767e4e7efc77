"""Mean-parameterized Bernoulli models, likelihood term and perplexity helpers."""

import numpy as np
import pymc as pm
import pytensor
import pytest
import xarray as xr
from scipy.stats import beta as beta_dist
from scipy.stats import dirichlet

from bnmfzoo import likelihoods
from bnmfzoo.diagnostics import active_components, heldout_loglik, perplexity, predict_mean
from bnmfzoo.models import beta_dir, dir_beta, dir_dir
from bnmfzoo.models._recognize_binary import BinaryPriors
from bnmfzoo.models._spec import find_spec

V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, np.nan]])


def test_models_structure_and_spec():
    Vda = xr.DataArray(V, dims=("a", "b"), coords={"a": list("pqrs"), "b": [10, 20, 30]})
    m = beta_dir(Vda, rank=2, alpha=2.0, beta=[1.0, 3.0], gamma=0.5)
    assert not hasattr(m, "bnmfzoo_spec")  # nothing attached: read from the graph
    spec = find_spec(m)
    assert spec.family == "beta_dir" and spec.rank == 2 and not spec.hyper.nonparametric
    assert isinstance(spec.hyper, BinaryPriors) and spec.hyper.eta is None
    np.testing.assert_allclose(spec.hyper.beta, [1.0, 3.0])
    np.testing.assert_allclose(spec.hyper.gamma, [0.5, 0.5])
    assert list(m.coords["row"]) == list("pqrs") and list(m.coords["col"]) == [10, 20, 30]
    assert m.named_vars_to_dims["A"] == ("row", "factor")
    assert m.named_vars_to_dims["W"] == ("factor", "col")
    assert m.rvs_to_values[m["X"]].data.shape == (11,)  # missing entry skipped
    assert spec.mask.sum() == 11 and spec.var_names["A"] == "A"
    assert m.rvs_to_transforms[m["A"]].name == "simplex"

    m2 = dir_beta(V, rank=2)
    assert find_spec(m2).family == "dir_beta"
    assert m2.named_vars_to_dims["Wt"] == ("col", "factor")
    assert m2.named_vars_to_dims["W"] == ("factor", "col")
    assert m2.rvs_to_transforms[m2["A"]].name == "logodds"

    m3 = dir_dir(V, rank=3, gamma=3.0, eta=2.0)
    np.testing.assert_allclose(find_spec(m3).hyper.gamma, 3.0)


def test_nonparametric_truncation():
    m = beta_dir(V)  # rank=None -> K = 100, gamma_k = 1 / 100 (rank may exceed min(D, N))
    spec = find_spec(m)
    assert spec.rank == 100 and spec.hyper.nonparametric
    np.testing.assert_allclose(spec.hyper.gamma, 0.01)
    m = dir_dir(V, rank=20, nonparametric=True, gamma=2.0, eta=1.0)
    np.testing.assert_allclose(find_spec(m).hyper.gamma, 0.1)
    np.testing.assert_allclose(find_spec(m).hyper.eta, 1.0)  # eta not divided (paper)
    m = dir_beta(V, rank=10, nonparametric=True, eta=1.0)
    np.testing.assert_allclose(find_spec(m).hyper.eta, 0.1)


def test_truncation_is_the_nonparametric_prior_and_rank_the_parametric_one():
    paper = beta_dir(V, truncation=100)  # the paper's "K = 100": gamma_k = 1 / K
    assert find_spec(paper).rank == 100 and find_spec(paper).hyper.nonparametric
    np.testing.assert_allclose(find_spec(paper).hyper.gamma, 0.01)
    np.testing.assert_allclose(find_spec(beta_dir(V)).hyper.gamma, 0.01)  # same default
    parametric = beta_dir(V, rank=3)  # gamma_k = gamma per component
    assert not find_spec(parametric).hyper.nonparametric
    np.testing.assert_allclose(find_spec(parametric).hyper.gamma, 1.0)
    np.testing.assert_allclose(find_spec(dir_beta(V, truncation=10, eta=2.0)).hyper.eta,
                               0.2)
    m = dir_dir(V, truncation=20, gamma=2.0)
    np.testing.assert_allclose(find_spec(m).hyper.gamma, 0.1)
    np.testing.assert_allclose(find_spec(m).hyper.eta, 1.0)
    for build in (beta_dir, dir_beta, dir_dir):
        with pytest.raises(ValueError, match="not both"):
            build(V, rank=2, truncation=100)
        with pytest.raises(ValueError, match="nonparametric=False"):
            build(V, truncation=100, nonparametric=False)
        for bad in (0, 2.5, True):
            with pytest.raises(ValueError, match="truncation must be an integer"):
                build(V, truncation=bad)


def test_nonparametric_is_read_from_the_concentration():
    """The truncated prior is known from the model: mean concentration below 1/2.

    ``truncation=K`` (gamma_k = gamma / K) and ``rank=K`` (gamma_k = gamma) give the flag the
    constructor's argument implies for the defaults; when both spellings give the same
    concentrations they are the same model, and the model decides. A user's own model follows
    the same rule.
    """
    for K in (5, 20, 100):
        assert find_spec(beta_dir(V, truncation=K)).hyper.nonparametric
        assert find_spec(dir_beta(V, truncation=K)).hyper.nonparametric  # eta / K
        assert find_spec(dir_dir(V, truncation=K)).hyper.nonparametric  # gamma / K, eta = 1
        assert not find_spec(beta_dir(V, rank=3 if K > 3 else K)).hyper.nonparametric
    assert not find_spec(dir_beta(V, rank=3, eta=0.5)).hyper.nonparametric  # mean 0.5
    # the same concentrations (0.01 each) by either spelling: the same model, the same answer
    same = (beta_dir(V, truncation=100), beta_dir(V, rank=3, gamma=0.01))
    assert [find_spec(m).hyper.nonparametric for m in same] == [True, True]
    # gamma >= K / 2 with the truncation has a mean concentration >= 1/2: read as parametric
    assert not find_spec(beta_dir(V, truncation=10, gamma=5.0)).hyper.nonparametric
    with pm.Model() as user:  # a user's model, same rule
        A = pm.Dirichlet("A", a=np.full(10, 0.1), shape=(4, 10))
        W = pm.Beta("W", 1.0, 1.0, shape=(10, 3))
        pm.Bernoulli("X", p=(A @ W)[~np.isnan(V)], observed=V[~np.isnan(V)])
    assert find_spec(user).hyper.nonparametric and find_spec(user).family == "beta_dir"


def test_dataarray_without_coordinates_gets_integer_labels():
    Vda = xr.DataArray(np.nan_to_num(V), dims=("a", "b"))  # no coordinate values
    for build in (beta_dir, dir_beta, dir_dir):
        m = build(Vda, rank=2)
        assert list(m.coords["row"]) == [0, 1, 2, 3] and list(m.coords["col"]) == [0, 1, 2]


def test_model_input_errors():
    with pytest.raises(ValueError, match="V must be binary"):
        beta_dir(V * 2, rank=2)
    with pytest.raises(ValueError, match="rank"):
        beta_dir(V, rank=5)  # parametric rank > min(D, N)
    with pytest.raises(TypeError, match="rank"):
        beta_dir(V, rank=2.5)
    with pytest.raises(ValueError, match="rank must be >= 2"):
        dir_dir(V, rank=1)
    with pytest.raises(ValueError, match="alpha"):
        beta_dir(V, rank=2, alpha=-1.0)
    with pytest.raises(ValueError, match="gamma must be a scalar or a length-2"):
        beta_dir(V, rank=2, gamma=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="row"):
        beta_dir(np.array([[np.nan, np.nan], [1.0, 0.0]]), rank=1)


def test_model_logp_matches_numpy(rng):
    """Model log density (priors + likelihood on observed entries only) vs. scipy."""
    model = beta_dir(V, rank=2, alpha=[1.5, 0.8], beta=[2.0, 1.0], gamma=[0.7, 1.3])
    A = rng.dirichlet([0.7, 1.3], size=4)
    W = rng.beta([[1.5], [0.8]], [[2.0], [1.0]], size=(2, 3))
    terms = model.logp(jacobian=False, sum=False)
    fn = pytensor.function(model.value_vars, terms, mode="FAST_COMPILE")
    ip = {"A_simplex__": None, "W_logodds__": None}
    logA = np.log(A)
    ip["A_simplex__"] = logA[:, :-1] - logA.mean(axis=1, keepdims=True)
    ip["W_logodds__"] = np.log(W / (1 - W))
    lA, lW, lX = (np.sum(t) for t in fn(*[ip[v.name] for v in model.value_vars]))
    P = A @ W
    obs = ~np.isnan(V)
    expected_X = np.sum(np.where(V[obs] == 1, np.log(P[obs]), np.log1p(-P[obs])))
    expected_A = sum(dirichlet.logpdf(A[f], [0.7, 1.3]) for f in range(4))
    expected_W = beta_dist.logpdf(W, [[1.5], [0.8]], [[2.0], [1.0]]).sum()
    np.testing.assert_allclose([lA, lW, lX], [expected_A, expected_W, expected_X], rtol=1e-10)


def test_likelihood_term_in_user_model():
    with pm.Model() as model:
        A = pm.Dirichlet("A", a=np.ones((4, 2)))
        W = pm.Beta("W", 1.0, 1.0, shape=(2, 3))
        obs = likelihoods.bernoulli_mean("Y", A, W, observed=V)
    assert model.rvs_to_values[obs].data.shape == (11,)
    assert list(model.coords["Y_obs"]) == list(np.flatnonzero(~np.isnan(V)))
    with pm.Model():
        A = pm.Dirichlet("A", a=np.ones((4, 2)))
        W = pm.Beta("W", 1.0, 1.0, shape=(2, 3))
        with pytest.raises(ValueError, match="binary"):
            likelihoods.bernoulli_mean("Y", A, W, observed=np.where(np.isnan(V), np.nan, 0.5))


def test_perplexity_and_predictions():
    X = np.array([[1.0, 0.0], [np.nan, 1.0]])
    mean = np.array([[0.8, 0.4], [0.5, 0.9]])
    ll = np.log(0.8) + np.log(0.6) + np.log(0.9)
    assert heldout_loglik(mean, X) == pytest.approx(ll)
    assert perplexity(mean, X) == pytest.approx(-ll / 3)
    test = np.array([[True, False], [True, True]])
    assert perplexity(mean, X, mask=test) == pytest.approx(-(np.log(0.8) + np.log(0.9)) / 2)
    # per-draw average of A @ W, not product of means
    from bnmfzoo._base.results import build_datatree

    A = np.array([[[[1.0, 0.0]], [[0.0, 1.0]]]])  # (chain, draw, row, factor)
    W = np.array([[[[1.0], [0.0]], [[1.0], [0.0]]]])  # (chain, draw, factor, col)
    dt = build_datatree({"A": A, "W": W})
    np.testing.assert_allclose(predict_mean(dt), [[0.5]])  # E[A] E[W] would give 0.5 * 1 too?
    assert (A.mean(axis=(0, 1)) @ W.mean(axis=(0, 1)))[0, 0] == pytest.approx(0.5)
    W2 = np.array([[[[1.0], [0.0]], [[0.0], [1.0]]]])
    dt2 = build_datatree({"A": A, "W": W2})
    # draws: [1,0]@[1,0] = 1 and [0,1]@[0,1] = 1 -> 1, while E[A] E[W] = 0.5
    np.testing.assert_allclose(predict_mean(dt2), [[1.0]])
    assert active_components(dt2, threshold=0.01) == 1
    with pytest.raises(ValueError, match="binary"):
        perplexity(mean, X * 2)
