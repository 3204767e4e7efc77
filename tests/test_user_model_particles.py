"""fit_particles finds the data of a user's own model through our likelihood term."""

import numpy as np
import pymc as pm

from bnmfzoo import likelihoods
from bnmfzoo.inference import fit_particles


def test_fit_particles_on_user_model_with_gaussian_term():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(8, 3)) @ rng.exponential(size=(3, 6)) + 0.01 * rng.random((8, 6))
    X[0, 1] = np.nan
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(8, 3))
        W = pm.Exponential("W", 1.0, shape=(3, 6))
        likelihoods.gaussian("X", A, W, observed=X, sigma=0.1)
    assert model.bnmfzoo_data["X"]["mask"].sum() == X.size - 1
    dt = fit_particles(model, n_particles=4, init="random", random_seed=0, progressbar=False)
    w = dt["particles"]["weight"].values
    assert w.shape == (4,) and np.all(w >= 0) and abs(w.sum() - 1) < 1e-9
    assert np.isfinite(float(dt["diagnostics"]["stein_discrepancy"]))
