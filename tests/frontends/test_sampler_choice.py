"""The measured cost model (:mod:`bnmfzoo.inference._assignment`) decides whether
``pm.sample()`` gives a recognized model our step or NUTS, and one log line says which and why.

Deterministic checks of the choice and its message (no statistical tolerance; false-failure
rate 0).
"""

import logging

import numpy as np
import pymc as pm
import pytest

import bnmfzoo as bz
from bnmfzoo.inference import _assignment
from bnmfzoo.inference._assignment import MEASURED, Measured, choose

X = np.random.default_rng(0).exponential(size=(6, 5))
COUNTS = np.random.default_rng(1).poisson(3.0, size=(6, 5))  # dense: 3 counts per cell
SPARSE = np.random.default_rng(1).poisson(0.3, size=(6, 5))  # sparse: 0.3 per cell (words, UMIs)


def _assign(model):
    """PyMC's step assignment, as ``pm.sample`` runs it: ``{class name: variable names}``."""
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    with model:
        selected = assign_step_methods(model, None, methods=STEP_METHODS)[1]
    return {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs)
            for cls, vs in selected.items() if vs}


def _lines(caplog):
    return [r for r in caplog.records if r.name == "bnmfzoo"]


def _student():
    with pm.Model() as model:
        A = pm.Gamma("A", 2.0, 1.0, shape=(6, 2))
        W = pm.Gamma("W", 2.0, 1.0, shape=(2, 5))
        tau = pm.Gamma("tau", 2.0, 1.0)
        pm.StudentT("X", nu=4.0, mu=A @ W, sigma=tau ** -0.5, observed=X)
    return model


def _nb2():
    with pm.Model() as model:
        A = pm.Gamma("A", 1.0, 1.0, shape=(6, 2))
        W = pm.Gamma("W", 1.0, 1.0, shape=(2, 5))
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pm.NegativeBinomial("X", mu=A @ W, alpha=alpha, observed=COUNTS)
    return model


@pytest.mark.parametrize("make,step,names", [
    (lambda: bz.models.exponential_gaussian(X, 2), "GibbsNMF", ["A", "W", "tau"]),
    (_student, "GibbsNMF", ["A", "W", "tau"]),
    (lambda: bz.models.poisson(SPARSE, 2), "GibbsPoisson", ["A", "W"]),
    (lambda: bz.models.poisson(COUNTS, 2), "HmcPoisson", ["A", "W"]),
])
def test_measured_faster_gets_our_step_and_says_why(make, step, names, caplog):
    model = make()
    with caplog.at_level(logging.INFO, logger="bnmfzoo"):
        chosen = _assign(model)
    assert chosen == {step: names}
    lines = _lines(caplog)
    assert len(lines) == 1, [r.getMessage() for r in lines]  # one line per step assignment
    msg = lines[0].getMessage()
    assert lines[0].levelno == logging.INFO
    assert msg.startswith(f"bnmfzoo's {step} samples {', '.join(names)}: measured ")
    assert "x PyMC NUTS in effective samples per CPU second" in msg and "benchmarks." in msg


def test_nb2_is_handed_to_nuts_and_announced(caplog):
    model = _nb2()
    with caplog.at_level(logging.INFO, logger="bnmfzoo"):
        chosen = _assign(model)
    assert chosen == {"NUTS": ["A", "W", "alpha"]}
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    msg = lines[0].getMessage()
    assert msg.startswith("PyMC's NUTS samples A, W, alpha, not bnmfzoo's GibbsPoisson: ")
    assert f"measured {MEASURED['counts', 'nb2'].ratio:g}x PyMC NUTS" in msg
    assert "--likelihood nb2" in msg and "pm.sample(step=bnmfzoo.inference.GibbsPoisson())" in msg


def test_dense_counts_get_hmc_moves_and_sparse_ones_the_sweep(caplog):
    # the same model on dense counts (a catalogue) gets our HMC moves (HmcPoisson, measured
    # faster than NUTS there); on sparse counts our sweep; dense counts with rate variables
    # (ARD, which the HMC moves do not take) NUTS, as the sweep loses there
    with caplog.at_level(logging.INFO, logger="bnmfzoo"):
        dense = _assign(bz.models.poisson(COUNTS, 2))
        sparse = _assign(bz.models.poisson(SPARSE, 2))
        ard = _assign(bz.models.poisson(COUNTS, 2, ard=True))
    assert dense == {"HmcPoisson": ["A", "W"]} and sparse == {"GibbsPoisson": ["A", "W"]}
    assert set(ard) == {"NUTS"} and {"A", "W"} <= set(ard["NUTS"])
    msgs = [r.getMessage() for r in _lines(caplog)]
    assert len(msgs) == 3 and msgs[0].startswith("bnmfzoo's HmcPoisson samples A, W: measured ")
    assert f"measured {MEASURED['counts', 'poisson_dense_hmc'].ratio:g}x PyMC NUTS" in msgs[0]
    assert "dense catalogues" in msgs[0] and "sparse counts" in msgs[1]
    assert msgs[2].startswith("PyMC's NUTS samples ")
    assert f"measured {MEASURED['counts', 'poisson_dense'].ratio:g}x PyMC NUTS" in msgs[2]
    assert _assignment.count_key("poisson", 30.0, 30) == "poisson"  # exactly 1 per cell: sparse
    assert _assignment.count_key("poisson", 31.0, 30) == "poisson_dense"
    assert _assignment.count_key("negative_binomial", 1e6, 30) == "negative_binomial"


def test_a_model_measured_slower_gets_nuts(monkeypatch, caplog):
    # the table, not a hard-coded family, decides: mark the Student-t model slower than NUTS
    monkeypatch.setitem(MEASURED, ("gaussian", "student_t"),
                        Measured(0.5, "a test's measurement", "python -m benchmarks.x"))
    with caplog.at_level(logging.INFO, logger="bnmfzoo"):
        chosen = _assign(_student())
        kept = _assign(bz.models.exponential_gaussian(X, 2))
    assert chosen == {"NUTS": ["A", "W", "tau"]}
    assert kept == {"GibbsNMF": ["A", "W", "tau"]}
    msgs = [r.getMessage() for r in _lines(caplog)]
    assert len(msgs) == 2
    assert msgs[0].startswith("PyMC's NUTS samples A, W, tau, not bnmfzoo's GibbsNMF: ")
    assert "measured 0.5x PyMC NUTS" in msgs[0] and "a test's measurement" in msgs[0]


def test_choose_rules():
    assert choose("gaussian", "normal").ours
    assert not choose("counts", "nb2").ours
    unmeasured = choose("no_such_family", "normal")
    assert unmeasured.ours and "no measured comparison" in unmeasured.reason
    for m in MEASURED.values():  # every entry says how to measure it again
        assert m.command.startswith("python -m benchmarks.") and m.ratio > 0
    assert _assignment.logger.name == "bnmfzoo"


@pytest.mark.parametrize("configured", [False, True])
def test_the_choice_line_is_shown_unless_logging_is_configured(configured):
    """The line saying which sampler and why is INFO on the ``bnmfzoo`` logger; like PyMC's own
    lines it reaches standard error in a plain program (``import bnmfzoo`` gives the logger a
    handler at INFO), and a program that configured logging itself keeps its own settings."""
    import subprocess
    import sys

    setup = "import logging; logging.basicConfig(level=logging.ERROR); " if configured else ""
    code = (setup + "import logging, bnmfzoo; from bnmfzoo.inference import _assignment as c; "
            "c.logger.info('the choice line')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("the choice line" in done.stderr) is not configured, done.stderr
