"""Nothing silent (issue #34): why an NMF-like model gets NUTS, NUTS options with our steps,
a step built outside ``with model:``, and a skipped or compact ``log_likelihood``.

Deterministic checks of messages and shapes (no statistical tolerance; false-failure rate 0).
"""

import logging
import warnings

import numpy as np
import pymc as pm
import pytest

import bnmfzoo as bz
from bnmfzoo.inference import GibbsNMF
from bnmfzoo.inference._assignment import nmf_like_factors, not_recognized_reason

X = np.random.default_rng(0).exponential(size=(6, 5))


def _unrecognized():
    with pm.Model() as model:
        A = pm.Exponential("A", 1.0, shape=(6, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 5))
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("X", mu=A @ W + b, sigma=1.0, observed=X)
    return model


def _assign(model):
    """PyMC's step assignment, as ``pm.sample`` runs it (no sampler is compiled)."""
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    with model:
        return assign_step_methods(model, None, methods=STEP_METHODS)[1]


def _sample(model, **kwargs):
    with model:
        return pm.sample(draws=3, tune=3, chains=1, progressbar=False, random_seed=0,
                         compute_convergence_checks=False, **kwargs)


def test_unrecognized_nmf_like_model_says_why(caplog):
    model = _unrecognized()
    assert [rv.name for rv in nmf_like_factors(model)] == ["A", "W"]
    with caplog.at_level(logging.WARNING, logger="bnmfzoo"):
        selected = _assign(model)
    assert {type(s).__name__ if not isinstance(s, type) else s.__name__ for s in selected} \
        == {"NUTS"}
    lines = [r.getMessage() for r in caplog.records if r.name == "bnmfzoo"]
    assert len(lines) == 1, lines  # one line per step assignment (per pm.sample)
    assert "did not recognize" in lines[0] and "factors A, W" in lines[0]
    assert "depends on ['A', 'W', 'b'] but is not A @ W" in lines[0]  # the recognizer's reason


def test_no_notice_for_recognized_or_non_nmf_models(caplog):
    with pm.Model() as regression:
        beta = pm.Normal("beta", 0.0, 1.0, shape=5)
        pm.Normal("y", mu=X @ beta, sigma=1.0, observed=X[:, 0])
    assert nmf_like_factors(regression) == []  # a product with data, not of two factors
    recognized = bz.models.exponential_gaussian(X, 2)
    assert not_recognized_reason(recognized) is None
    with caplog.at_level(logging.WARNING, logger="bnmfzoo"):
        _assign(regression)
        _assign(recognized)
    assert not [r for r in caplog.records if "did not recognize" in r.getMessage()]


def test_target_accept_with_our_steps_is_explained_not_an_error(caplog):
    model = bz.models.exponential_gaussian(X, 2)
    with caplog.at_level(logging.WARNING, logger="bnmfzoo"):
        dt = _sample(model, target_accept=0.9)
        dt2 = bz.inference.sample(model, draws=3, tune=3, chains=1, progressbar=False,
                                  nuts={"target_accept": 0.9})
    assert dt.posterior.sizes["draw"] == 3 and dt2.posterior.sizes["draw"] == 3
    lines = [r.getMessage() for r in caplog.records if "NUTS options" in r.getMessage()]
    assert len(lines) == 2 and "GibbsNMF" in lines[0] and "target_accept" in lines[0]


def test_step_built_outside_the_model():
    model = bz.models.exponential_gaussian(X, 2)
    step = GibbsNMF()  # no model on the context stack
    a = bz.inference.sample(model, step=step, draws=4, tune=2, chains=2, random_seed=1,
                            progressbar=False)
    with model:
        b = bz.inference.sample(model, step=GibbsNMF(), draws=4, tune=2, chains=2,
                                random_seed=1, progressbar=False)
    np.testing.assert_array_equal(a.posterior["A"].values, b.posterior["A"].values)


def test_skipped_log_likelihood_is_announced(monkeypatch):
    from bnmfzoo.diagnostics._modes import stacking

    monkeypatch.setattr(stacking, "MAX_DEFAULT_LOGLIK_VALUES", 130)
    model = bz.models.exponential_gaussian(X, 2)
    with pytest.warns(UserWarning, match=r"log_likelihood not recorded: 2 chains x 10 draws x "
                                         r"30 observed.*log_likelihood_thin=5"):
        dt = bz.inference.sample(model, draws=10, tune=2, chains=2, random_seed=1,
                                 progressbar=False)
    assert "log_likelihood" not in dt.children
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # within the limit once thinned: silent
        dt = bz.inference.sample(model, draws=10, tune=2, chains=2, random_seed=1,
                                 progressbar=False, log_likelihood_thin=5)
    assert dt["log_likelihood"]["X"].sizes["draw"] == 2


def test_compact_log_likelihood_matches_float64():
    model = bz.models.exponential_gaussian(X, 2)
    kw = dict(draws=12, tune=2, chains=2, random_seed=3, progressbar=False)
    full = bz.inference.sample(model, log_likelihood=True, **kw)["log_likelihood"]["X"]
    small = bz.inference.sample(model, log_likelihood="float32", log_likelihood_thin=5,
                                **kw)["log_likelihood"]["X"]
    assert small.dtype == np.float32 and small["draw"].values.tolist() == [0, 5, 10]
    assert int(small["row"][7]) == int(full["row"][7])  # labelled like the full group
    np.testing.assert_allclose(small.values, full.isel(draw=[0, 5, 10]).values, rtol=1e-6)
    with pytest.raises(ValueError, match="log_likelihood must be"):
        bz.inference.sample(model, log_likelihood="half", **kw)
