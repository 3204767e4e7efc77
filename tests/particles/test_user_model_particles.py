"""fit_particles on a user's own model: data from the recognized likelihood, further free
variables (tau) completed per particle."""

import numpy as np
import pymc as pm

from bnmfzoo import likelihoods
from bnmfzoo.inference import fit_particles
from bnmfzoo.models._observed import observed_product


def test_fit_particles_on_user_model_with_gaussian_term():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(8, 3)) @ rng.exponential(size=(3, 6)) + 0.01 * rng.random((8, 6))
    X[0, 1] = np.nan
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(8, 3))
        W = pm.Exponential("W", 1.0, shape=(3, 6))
        likelihoods.gaussian("X", A, W, observed=X, sigma=0.1)
    # nothing is recorded on the model: the data come from the recognized likelihood
    assert not hasattr(model, "bnmfzoo_data")
    assert observed_product(model).entries.n_observed == X.size - 1
    dt = fit_particles(model, n_particles=4, init="random", random_seed=0, progressbar=False)
    w = dt["particles"]["weight"].values
    assert w.shape == (4,) and np.all(w >= 0) and abs(w.sum() - 1) < 1e-9
    assert np.isfinite(float(dt["diagnostics"]["stein_discrepancy"]))


def _readme_model(X):
    """The README's own example model (A ~ HalfNormal, W ~ Exponential, tau ~ Gamma)."""
    with pm.Model(coords={"row": range(X.shape[0]), "col": range(X.shape[1]),
                          "factor": range(3)}) as model:
        A = pm.HalfNormal("A", 1.0, dims=("row", "factor"))
        W = pm.Exponential("W", 1.0, dims=("factor", "col"))
        tau = pm.Gamma("tau", 1.0, 1.0)
        likelihoods.gaussian("X", A, W, observed=X, tau=tau)
    return model


def test_fit_particles_conditions_further_free_variables():
    """tau is not refused any more: each particle holds its conditional mode given A, W."""
    rng = np.random.default_rng(1)
    X = rng.exponential(size=(12, 3)) @ rng.exponential(size=(3, 9))
    X += 0.3 * rng.normal(size=X.shape)
    X[0, 1] = X[4, 4] = np.nan
    dt = fit_particles(_readme_model(X), n_particles=5, init="random", random_seed=0,
                       progressbar=False)
    A, W = dt["particles"]["A"].values, dt["particles"]["W"].values
    tau = dt["particles"]["tau"].values
    m = ~np.isnan(X)
    # conditional mode of log tau (value space: Jacobian included) given A, W is the mean of
    # Gamma(1 + n/2, 1 + SSE/2): (1 + n/2) / (1 + SSE/2); L-BFGS-B tolerance ~1e-5 relative
    sse = np.array([np.sum((X - a @ w)[m] ** 2) for a, w in zip(A, W)])
    np.testing.assert_allclose(tau, (1 + m.sum() / 2) / (1 + sse / 2), rtol=1e-4)
    assert dt.posterior["tau"].dims == ("chain", "draw")
    idx = dt["sample_stats"]["particle"].values[0]
    np.testing.assert_array_equal(dt.posterior["tau"].values[0], tau[idx])


def test_estimator_particles_on_gaussian_model():
    from bnmfzoo import BayesianNMF

    rng = np.random.default_rng(2)
    X = rng.exponential(size=(10, 2)) @ rng.exponential(size=(2, 8))
    est = BayesianNMF(n_components=2, method="particles", random_state=0).fit(X)
    assert est.components_.shape == (2, 8) and np.isfinite(est.reconstruction_err_)
