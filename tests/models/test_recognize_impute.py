"""PyMC's automatic imputation (NaN in the observed data of a ``pm.Normal`` on ``A @ W``) is
recognized: the observed entries are the non-NaN ones and ``X_unobserved`` is drawn by
GibbsNMF from its exact conditional ``Normal((A @ W)[missing], sd)``.

Why the scheme is exact: GibbsNMF's sweep draws (A, W, tau) from conditionals given the
observed entries only, i.e. it leaves p(A, W, tau | X_obs) invariant with the imputed entries
integrated out; the imputed entries are then drawn from p(X_unobserved | A, W, tau). The pair
leaves the joint posterior invariant (a collapsed Gibbs step followed by the exact conditional
of the collapsed block), so GibbsNMF must update the imputed entries whenever it updates the
factors (enforced).
"""

import logging

import numpy as np
import pymc as pm
import pytest

from bnmfzoo import likelihoods
from bnmfzoo.inference import GibbsNMF, fit_vb
from bnmfzoo.models import recognize

D, N, R = 8, 6, 2
# PyMC announces the imputation it makes; that is the subject here
pytestmark = pytest.mark.filterwarnings("ignore:Data in X contains missing values")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.exponential(size=(D, R)) @ rng.exponential(size=(R, N)) + 0.2 * rng.normal(size=(D, N))
    X[0, 1] = X[3, 2] = X[7, 5] = np.nan
    return X


def _model(X, *, imputed=True):
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        tau = pm.Gamma("tau", 2.0, 1.0)
        if imputed:
            pm.Normal("X", mu=A @ W, tau=tau, observed=X)
        else:
            likelihoods.gaussian("X", A, W, observed=X, tau=tau)
    return model


def test_imputation_is_recognized(data):
    f = recognize(_model(data))
    assert f.imputed.name == "X_unobserved"
    assert list(zip(f.imputed.rows, f.imputed.cols)) == [(0, 1), (3, 2), (7, 5)]
    assert f.noise.kind == "precision" and f.others == ()
    assert f.entries.n_observed == D * N - 3 and not np.isnan(f.entries.values).any()


def test_sweep_equals_the_model_without_imputation(data):
    """One step from the same point: A, W and tau are bitwise those of the model that leaves
    the NaN entries out of the likelihood (the imputed entries do not enter the sweep)."""
    out = []
    for imputed in (True, False):
        model = _model(data, imputed=imputed)
        point = model.initial_point()
        new, _ = GibbsNMF(model=model, rng=5).step(point)
        out.append([new[k] for k in ("A_log__", "W_log__", "tau_log__")])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_imputed_entries_are_exact_conditional_draws(data, caplog):
    """pm.sample() assigns X_unobserved to GibbsNMF; (X_unobserved - (A W)[missing]) sqrt(tau)
    over all draws is iid N(0, 1) by construction (each draw given that draw's A, W, tau).
    3 x 2000 values: 5-sigma bounds on the mean (0.046) and the variance (0.13); a wrong sd
    (e.g. 1 / tau instead of 1 / sqrt(tau)) moves the variance far outside."""
    with caplog.at_level(logging.INFO, logger="pymc"), _model(data):
        trace = pm.sample(draws=1000, tune=100, chains=2, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert any("GibbsNMF: [A, W, tau, X_unobserved]" in r.getMessage() for r in caplog.records)
    post = trace.posterior
    AW = np.einsum("cdik,cdkj->cdij", post["A"].values, post["W"].values)
    mu = AW[..., [0, 3, 7], [1, 2, 5]]
    z = ((post["X_unobserved"].values - mu) * np.sqrt(post["tau"].values)[..., None]).ravel()
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


def test_imputed_variable_must_be_updated_with_the_factors(data):
    model = _model(data)
    with pytest.raises(ValueError, match="must also update 'X_unobserved'"):
        GibbsNMF(vars=[model["A"], model["W"], model["tau"]], model=model)


def test_fitters_say_to_leave_nan_out(data):
    with pytest.raises(TypeError, match="fit_vb does not fill in the missing entries PyMC "
                                        "imputes .*likelihoods.gaussian"):
        fit_vb(_model(data), progressbar=False)
