"""Negative observations: accepted under a Gaussian likelihood, refused where X >= 0 is needed.

A Gaussian likelihood ``X_ij ~ Normal((A W)_ij, 1/tau)`` puts mass on negative values, so noisy
measurements of a non-negative signal near zero are valid data; only the factors are
non-negative. The SILF likelihood (Masood & Doshi-Velez 2019) is built on divergences (KL,
Itakura-Saito) that need ``X >= 0``, the multiplicative updates (Lee & Seung 2001) stay
non-negative only for ``X >= 0``, and Bernoulli models need 0/1 data.
"""

import numpy as np
import pymc as pm
import pytest

from bnmfzoo import likelihoods
from bnmfzoo.inference import GibbsNMF, GibbsNMTF, fit_icm, fit_multiplicative, fit_vb
from bnmfzoo.models import beta_dir, exponential_gaussian, silf, tri_exponential_gaussian
from bnmfzoo.models._spec import find_spec


@pytest.fixture
def noisy(rng):
    """A low-rank non-negative signal near zero plus unit-variance noise: many entries < 0."""
    A = rng.exponential(0.5, size=(15, 2))
    W = rng.exponential(0.5, size=(2, 10))
    X = A @ W + rng.normal(0.0, 1.0, size=(15, 10))
    X[0, 0] = np.nan
    assert (X[~np.isnan(X)] < 0).sum() > 20
    return X


def test_gaussian_models_accept_negative_data(noisy):
    model = exponential_gaussian(noisy, 2)
    np.testing.assert_array_equal(find_spec(model).X.values, noisy)
    tri = tri_exponential_gaussian(noisy, (2, 2))
    assert find_spec(tri).X.shape == noisy.shape
    with pm.Model() as mine:
        A = pm.Exponential("A", 1.0, shape=(15, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 10))
        obs = likelihoods.gaussian("X", A, W, observed=noisy, sigma=1.0)
    observed = np.asarray(mine.rvs_to_values[obs].data)
    np.testing.assert_array_equal(observed, noisy[~np.isnan(noisy)])
    assert np.isfinite(mine.compile_logp()(mine.initial_point()))


@pytest.mark.parametrize("fit", [fit_vb, fit_icm])
def test_vb_icm_run_on_negative_data(noisy, fit):
    dt = fit(exponential_gaussian(noisy, 2), max_iter=30, random_seed=0, progressbar=False)
    A = dt["posterior"]["A"].values
    W = dt["posterior"]["W"].values
    assert np.isfinite(A).all() and np.isfinite(W).all()
    assert A.min() >= 0 and W.min() >= 0


@pytest.mark.parametrize(("build", "step"), [
    (lambda X: exponential_gaussian(X, 2), GibbsNMF),
    (lambda X: tri_exponential_gaussian(X, (2, 2)), GibbsNMTF),
])
def test_gibbs_runs_on_negative_data(noisy, build, step):
    with build(noisy):
        dt = pm.sample(step=step(), draws=20, tune=10, chains=1, random_seed=0,
                       progressbar=False, compute_convergence_checks=False)
    for name in dt["posterior"].data_vars:
        values = dt["posterior"][name].values
        assert np.isfinite(values).all()
        assert values.min() >= 0, name  # factors (and tau) stay non-negative


def test_refused_where_the_likelihood_needs_nonnegative_data(noisy):
    with pytest.raises(ValueError, match="fit_multiplicative needs non-negative data"):
        fit_multiplicative(exponential_gaussian(noisy, 2), max_iter=5, progressbar=False)
    with pytest.raises(ValueError, match="sigma='reference'"):
        exponential_gaussian(noisy, 2, sigma="reference")
    with pytest.raises(ValueError, match="Negative values"):
        silf(noisy, 2)
    with pytest.raises(ValueError, match="binary"):
        beta_dir(noisy, 2)


@pytest.mark.parametrize("init", ["qtransform", "random"])
def test_particles_on_negative_masked_data(noisy, init):
    """The particles are placed by NMF solves on max(X, 0) (multiplicative updates need
    X >= 0) and weighted by the model's likelihood on the data as given: with negative and
    missing entries the fit runs and its weights and points are finite (it used to fail with
    'no unconstrained image' after the solver produced zeros and NaN)."""
    from bnmfzoo.inference import fit_particles

    model = exponential_gaussian(noisy, 2, sigma=1.0)
    dt = fit_particles(model, n_particles=6, init=init, random_seed=0, progressbar=False)
    w = dt["particles"]["weight"].values
    assert np.isclose(w.sum(), 1.0) and np.all(w >= 0)
    assert np.isfinite(dt["particles"]["A"].values).all()
    assert np.isfinite(float(dt["diagnostics"]["ksd_u"]))
