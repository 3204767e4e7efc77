"""SILF loss, likelihood term and the Dirichlet-column SILF model."""

import numpy as np
import pytest

from bnmfzoo._terms.silf import (
    objective_value,
    silf_derivative,
    silf_loss,
    silf_loss_pt,
)
from bnmfzoo.inference.particles._init import project_columns_to_simplex, random_init, solve_nmf
from bnmfzoo.likelihoods import epsilon_from_reference
from bnmfzoo.likelihoods import silf as silf_term
from bnmfzoo.models import recognize, silf
from bnmfzoo.models._spec import SilfHyper, find_spec

EPS, BETA = 0.5, 0.1


def _data(seed=0, D=8, N=7, R=3):
    rng = np.random.default_rng(seed)
    return rng.random((D, R)) @ rng.random((R, N)) + 0.05 * rng.random((D, N))


@pytest.mark.parametrize("knot", [(1 - BETA) * EPS, (1 + BETA) * EPS])
def test_silf_continuous_and_c1_at_knots(knot):
    h = 1e-7
    left, right = silf_loss(knot - h, EPS, BETA), silf_loss(knot + h, EPS, BETA)
    # value continuity: a jump would be O(1); a C0 function moves by at most slope*h ~ 1e-7
    assert abs(right - left) < 3e-7
    dl, dr = silf_derivative(knot - h, EPS, BETA), silf_derivative(knot + h, EPS, BETA)
    # derivative continuity: second derivative in the band is 1/(2 beta eps) = 10, so the
    # derivative moves by at most 10 * 2h = 2e-6 across the knot
    assert abs(dr - dl) < 3e-6
    # derivative equals the finite difference on both sides (central FD error O(h^2 * 10))
    for y in (knot - 1e-3, knot + 1e-3):
        fd = (silf_loss(y + 1e-6, EPS, BETA) - silf_loss(y - 1e-6, EPS, BETA)) / 2e-6
        assert abs(fd - silf_derivative(y, EPS, BETA)) < 1e-6


def test_silf_pieces():
    y = np.array([0.0, 0.3, (1 - BETA) * EPS, EPS, (1 + BETA) * EPS, 2.0])
    out = silf_loss(y, EPS, BETA)
    assert out[0] == 0 and out[1] == 0 and out[2] == 0
    assert out[3] == pytest.approx((BETA * EPS) ** 2 / (4 * BETA * EPS))
    assert out[4] == pytest.approx(BETA * EPS)  # quadratic meets y - eps
    assert out[5] == pytest.approx(2.0 - EPS)
    assert np.all(np.diff(out) >= 0)


def test_silf_pytensor_matches_numpy():
    import pytensor.tensor as pt

    y = np.linspace(0, 2, 41)
    yt = pt.dvector("y")
    f = silf_loss_pt(yt, EPS, BETA)
    np.testing.assert_allclose(f.eval({yt: y}), silf_loss(y, EPS, BETA), rtol=1e-12)


def test_objectives_numpy():
    rng = np.random.default_rng(1)
    X = rng.random((4, 5))
    M = rng.random((4, 5)) + 0.1
    X[0, 0] = np.nan
    obs = ~np.isnan(X)
    x, m = X[obs], M[obs]
    assert objective_value(X, M) == pytest.approx(np.sum((x - m) ** 2))
    assert objective_value(X, M, objective="kl") == pytest.approx(
        np.sum(x * np.log(x / m) - x + m))
    assert objective_value(X, M, objective="itakura_saito") == pytest.approx(
        np.sum(x / m - np.log(x / m) - 1))
    # divergences vanish at a perfect fit
    for obj in ("frobenius", "kl", "itakura_saito"):
        assert objective_value(X, np.nan_to_num(X, nan=1.0), objective=obj) == pytest.approx(0)


def test_objectives_pytensor_match_numpy():
    import pytensor.tensor as pt

    from bnmfzoo._terms.silf import _objective_pt

    rng = np.random.default_rng(2)
    x = rng.random(10)
    x[3] = 0.0  # KL's 0 log 0 = 0
    m = rng.random(10) + 0.1
    mt = pt.dvector("m")
    for obj in ("frobenius", "kl"):
        val = _objective_pt(x, mt, obj).eval({mt: m})
        assert val == pytest.approx(objective_value(x[None], m[None], objective=obj), rel=1e-10)
    x[3] = 0.2
    val = _objective_pt(x, mt, "itakura_saito").eval({mt: m})
    assert val == pytest.approx(objective_value(x[None], m[None], objective="itakura_saito"))


def test_epsilon_from_reference_is_factor_times_worst_fit():
    from bnmfzoo._terms.silf import masked_objective_fits

    X = _data()
    eps = epsilon_from_reference(X, 3, n=5, random_seed=3)
    fits = masked_objective_fits(X, 3, n=5, random_seed=3)
    assert eps == pytest.approx(1.2 * fits.max(), rel=1e-12)
    assert epsilon_from_reference(X, 3, n=5, random_seed=3) == eps  # same seed, same value
    assert eps > 0


def test_epsilon_default_rank_is_the_papers_70_percent_rule():
    from bnmfzoo._terms.silf import svd_energy_rank

    rng = np.random.default_rng(4)
    # exactly rank 3 and non-negative: all of the energy needs exactly 3 factors
    X = rng.random((12, 3)) @ rng.random((3, 9))
    assert svd_energy_rank(X, 1.0) == 3
    s2 = np.linalg.svd(X, compute_uv=False) ** 2
    share = np.cumsum(s2) / s2.sum()
    for f in (0.5, 0.7, 0.95, 0.999):
        R = svd_energy_rank(X, f)
        assert share[R - 1] >= f and (R == 1 or share[R - 2] < f)
    R70 = svd_energy_rank(X)
    assert epsilon_from_reference(X, n=3, random_seed=1) == epsilon_from_reference(
        X, R70, n=3, random_seed=1)
    Xm = X.copy()
    Xm[0, 0] = np.nan  # missing entries are mean-filled, not propagated as NaN
    filled = Xm.copy()
    filled[0, 0] = np.nanmean(Xm)
    assert [svd_energy_rank(Xm, f) for f in (0.7, 0.999)] == [
        svd_energy_rank(filled, f) for f in (0.7, 0.999)]
    with pytest.raises(ValueError, match="fraction"):
        svd_energy_rank(X, 0.0)


def test_bad_arguments():
    X = _data()
    with pytest.raises(ValueError, match="beta"):
        silf(X, 3, epsilon=1.0, beta=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        silf(X, 3, epsilon=-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        silf(X, 3, epsilon="auto")
    with pytest.raises(ValueError, match="objective"):
        silf(X, 3, epsilon=1.0, objective="l1")
    with pytest.raises(ValueError, match="negative"):
        silf(-X, 3, epsilon=1.0)
    with pytest.raises(ValueError, match="rank"):
        silf(X, 0, epsilon=1.0)
    with pytest.raises(ValueError, match="n must"):
        epsilon_from_reference(X, 3, n=0)


@pytest.fixture(scope="module")
def masked_model():
    X = _data()
    X[0, 0] = np.nan
    X[3, 5] = np.nan
    return X, silf(X, 3, n_reference=5, random_seed=1)


def test_model_structure(masked_model):
    X, model = masked_model
    spec = find_spec(model)
    assert not hasattr(model, "bnmfzoo_spec") and not hasattr(model, "bnmfzoo_data")
    assert spec.family == "silf" and spec.rank == 3
    assert spec.mask.sum() == X.size - 2
    assert [v.name for v in model.value_vars] == ["A_simplex__", "W_log__"]
    assert model.named_vars_to_dims["A"] == ("row", "factor")
    assert spec.hyper.epsilon > 0 and spec.hyper.beta == 0.1 and spec.hyper.C == 2.0


def test_model_logp_matches_formula_and_ignores_missing(masked_model):
    from bnmfzoo.models.silf_dirichlet import ColumnSimplexTransform

    X, model = masked_model
    eps = find_spec(model).hyper.epsilon
    mask = ~np.isnan(X)
    lp = model.compile_logp(jacobian=False)
    rng = np.random.default_rng(5)
    D, R = 8, 3
    log_norm_dir = R * np.log(float(np.prod(np.arange(1, D))))  # Dirichlet(1): log Gamma(D)
    for scale in (1.0, 3.0):  # inside the flat region and on the linear branch
        A, W = solve_nmf(np.nan_to_num(X), *random_init(np.nan_to_num(X), 3, rng, mask=mask),
                         mask=mask)[:2]
        A, W = project_columns_to_simplex(A, W)
        W = W * scale
        f = objective_value(X, A @ W)  # observed entries only
        expected = -2.0 * silf_loss(f, eps, 0.1) - W.sum() + log_norm_dir
        val = lp({"A_simplex__": ColumnSimplexTransform().forward(A).eval(),
                  "W_log__": np.log(W)})
        assert val == pytest.approx(float(expected), rel=1e-9)
    # A draw from the prior is column-stochastic
    import pymc as pm

    A_draw = pm.draw(model["A"], random_seed=0)
    np.testing.assert_allclose(A_draw.sum(axis=0), 1.0)


def test_term_in_user_model_is_recognized_from_the_graph():
    import pymc as pm

    X = _data()
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(8, 3))
        W = pm.Exponential("W", 1.0, shape=(3, 7))
        silf_term("lik", A, W, observed=X, epsilon=1.0, objective="kl")
    f = recognize(model)  # data and parameters read back from the potential's graph
    np.testing.assert_array_equal(f.X.values, X)
    assert (f.kind, f.objective, f.epsilon, f.beta, f.C) == ("silf", "kl", 1.0, 0.1, 2.0)
    assert f.var_names == {"A": "A", "W": "W"} and f.rank == 3 and not f.simplex_columns
    assert find_spec(model) is None  # HalfNormal basis: not silf()'s priors
    with pm.Model(), pytest.raises(ValueError, match="observed"):
        silf_term("lik", pm.HalfNormal("A", 1.0, shape=(8, 3)),
                  pm.HalfNormal("W", 1.0, shape=(3, 7)), observed=-X, epsilon=1.0)


@pytest.mark.parametrize("objective", ["frobenius", "kl", "itakura_saito"])
@pytest.mark.parametrize("beta", [0.1, 1 / 3, 0.7])
def test_term_parameters_read_back_exactly(objective, beta):
    # the constructor attaches nothing: epsilon, beta, C, the objective and the data are read
    # back from the potential's graph, bit for bit (beta from the knots (1 +- beta) eps)
    X = _data()
    X[0, 0] = np.nan
    model = silf(X, 3, epsilon=0.37, beta=beta, C=1.7, objective=objective, lambda_=0.25,
                 alpha=2.0)
    spec = find_spec(model)
    assert spec.hyper == SilfHyper(epsilon=0.37, beta=beta, C=1.7, objective=objective,
                                   lambda_=0.25, alpha=2.0)
    np.testing.assert_array_equal(spec.mask, ~np.isnan(X))
    np.testing.assert_array_equal(spec.X_values, np.nan_to_num(X))
    assert recognize(model).simplex_columns
