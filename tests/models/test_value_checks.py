"""A user's own PyMC model with data or constants out of range: a clear error up front.

Our constructors validate their input; a user model reaches the samplers and fitters through
recognition, which applies the same limits (``bnmfzoo.models._value_checks``). Each case ends
within seconds with a message naming the problem, from ``pm.sample()`` (GibbsNMF's competence
raises rather than declining the model silently to NUTS) and from the fitters; before, data of
1e200 gave "mu must be finite" in fit_vb, sigma = 1e-170 a ZeroDivisionError, and pm.sample a
FloatingPointError after the first half-sweep.
"""

import numpy as np
import pymc as pm
import pytest

from bnmfzoo import likelihoods
from bnmfzoo.inference import fit_icm, fit_vb
from bnmfzoo.models._value_checks import OutOfRange

RNG = np.random.default_rng(0)
X = RNG.exponential(size=(8, 6))
X[0, 0] = np.nan


def _model(data=X, prior="halfnormal", param=1.0, sigma=None, nmtf=False):
    with pm.Model() as model:
        if prior == "halfnormal":
            A = pm.HalfNormal("A", param, shape=(8, 2))
        elif prior == "truncated":
            A = pm.TruncatedNormal("A", mu=param, sigma=1.0, lower=0, shape=(8, 2))
        else:
            A = pm.Exponential("A", param, shape=(8, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 6))
        if nmtf:
            S = pm.Exponential("S", 1.0, shape=(2, 2))
            tau = pm.Gamma("tau", 1.0, 1.0)
            obs = ~np.isnan(data)
            pm.Normal("X", (A @ S @ W)[obs], tau=tau, observed=data[obs])
        elif sigma is None:
            tau = pm.Gamma("tau", 1.0, 1.0)
            likelihoods.gaussian("X", A, W, tau=tau, observed=data)
        else:
            likelihoods.gaussian("X", A, W, sigma=sigma, observed=data)
    return model


def _huge():
    data = X.copy()
    data[1, 1] = 1e200
    return data


CASES = {
    "data 1e200": (lambda: _model(_huge()), "has an entry of magnitude 1e\\+200"),
    "data 1e200, F S G": (lambda: _model(_huge(), nmtf=True), "magnitude 1e\\+200"),
    "sigma 1e-170": (lambda: _model(sigma=1e-170), "sigma=1e-170"),
    "HalfNormal sd 1e-300": (lambda: _model(param=1e-300), "halfnormal prior's sigma of A"),
    "TruncatedNormal mu 1e300": (lambda: _model(prior="truncated", param=1e300),
                                 "truncated_normal prior's mu of A"),
    "Exponential rate 1e300": (lambda: _model(prior="exponential", param=1e300),
                               "exponential prior's lam of A"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("how", ["pm.sample", "fit_vb", "fit_icm"])
def test_out_of_range_user_model_fails_fast_and_clearly(case, how):
    build, match = CASES[case]
    model = build()
    with pytest.raises(OutOfRange, match=match):
        if how == "pm.sample":
            with model:
                pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=0)
        else:
            {"fit_vb": fit_vb, "fit_icm": fit_icm}[how](model, random_seed=0)


def test_in_range_user_model_is_still_ours():
    model = _model(param=1e-3)  # inside the limits: GibbsNMF is chosen as before
    from pymc.sampling.mcmc import assign_step_methods

    with model:
        steps = assign_step_methods(model)[1]
    assert {c.__name__ for c in steps} == {"GibbsNMF"}
