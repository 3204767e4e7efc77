"""Count models and their recognition: constructors, user models, offsets, sparse zeros."""

import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp

import bnmfzoo as bz
from bnmfzoo.models import recognize


def _X(seed=0, shape=(6, 5)):
    return np.random.default_rng(seed).poisson(2.0, size=shape)


def test_constructors_coords_and_names():
    X = _X()
    m = bz.models.poisson(X, 2, hierarchical=True)
    assert sorted(m.named_vars) == ["A", "W", "X", "eta", "xi"]
    assert m.named_vars_to_dims["A"] == ("row", "factor")
    f = recognize(m)
    assert f.factors["A"].rate_var == "xi" and f.factors["W"].rate_var == "eta"
    assert f.exposure["kind"] == "separable"


def test_sparse_unstored_cells_are_observed_zeros():
    """scipy.sparse input: zeros observed (cost O(nonzeros)); long format: listed = observed."""
    X = _X()
    f_sparse = recognize(bz.models.poisson(sp.csr_array(X), 2))
    f_dense = recognize(bz.models.poisson(X, 2))
    assert f_sparse.nz_counts.size == np.count_nonzero(X)
    assert f_sparse.exposure["rows"].size == 0  # every cell observed
    assert np.array_equal(f_sparse.nz_counts, f_dense.nz_counts)
    r, c = np.nonzero(X)
    f_long = recognize(bz.models.poisson(bz.long_format(r, c, X[r, c].astype(float),
                                                        shape=X.shape), 2))
    assert f_long.exposure["kind"] in ("entries", "separable")
    # only the nonzero cells are listed, so the zero cells are missing there
    if f_long.exposure["kind"] == "separable":
        assert f_long.exposure["rows"].size == X.size - r.size
    else:
        assert f_long.exposure["rows"].size == r.size


def test_user_model_with_offsets_and_nb():
    X = _X(1)
    s = np.linspace(0.5, 2.0, 6)
    with pm.Model() as m:
        A = pm.Exponential("A", 1.0, shape=(6, 2))
        Wt = pm.Gamma("Wt", 2.0, 3.0, shape=(5, 2))
        pm.Poisson("X", mu=s[:, None] * (A @ Wt.T), observed=X)
    f = recognize(m)
    assert f.factors["W"].transposed and np.allclose(f.exposure["row_offset"], s)
    assert np.allclose(f.factors["W"].rate, 3.0) and np.allclose(f.factors["A"].shape, 1.0)
    with pm.Model() as nb:
        A = pm.Gamma("A", 1.0, 1.0, shape=(6, 2))
        W = pm.Gamma("W", 1.0, 1.0, shape=(2, 5))
        alpha = pm.Gamma("alpha", 2.0, 0.5)
        pm.NegativeBinomial("X", n=alpha * (A @ W), p=alpha / (1 + alpha), observed=X)
    f = recognize(nb)
    assert f.family == "negative_binomial" and f.alpha_var == ("alpha", 2.0, 0.5)


@pytest.mark.parametrize("build, words", [
    (lambda A, W, X: pm.Poisson("X", mu=pm.math.exp(A @ W), observed=X), "offset"),
    (lambda A, W, X: pm.Poisson("X", mu=A @ W + 1.0, observed=X), "offset"),
])
def test_not_recognized_messages(build, words):
    X = _X(2)
    with pm.Model() as m:
        A = pm.Gamma("A", 1.0, 1.0, shape=(6, 2))
        W = pm.Gamma("W", 1.0, 1.0, shape=(2, 5))
        build(A, W, X)
    with pytest.raises(TypeError, match=words):
        recognize(m)


def test_nb_model_sampled_by_gibbs():
    """pm.sample() on our NB model uses GibbsPoisson for A, W and alpha."""
    from pymc.sampling.mcmc import assign_step_methods

    m = bz.models.negative_binomial(sp.csr_array(_X(3)), 2)
    _, selected = assign_step_methods(m)
    assert {c.__name__: sorted(v.name for v in vs) for c, vs in selected.items()} == {
        "GibbsPoisson": ["A_log__", "W_log__", "alpha_log__"]}
    with m:
        idata = pm.sample(draws=20, tune=5, chains=1, random_seed=0, progressbar=False,
                          compute_convergence_checks=False)
    assert np.isfinite(idata.posterior["alpha"]).all()


def test_bad_counts_refused():
    with pytest.raises(ValueError, match="integer counts"):
        bz.models.poisson(np.full((3, 3), 0.5), 1)
    with pytest.raises(ValueError, match="negative"):
        bz.models.poisson(-np.ones((3, 3)), 1)
    with pytest.raises(ValueError, match="row_offset"):
        bz.models.poisson(np.ones((3, 3)), 1, row_offset=[1.0, 2.0])
