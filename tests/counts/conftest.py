"""The count wing's tests exercise our latent-count step on small dense synthetic counts.

``pm.sample()`` hands Poisson models of dense counts (more than one count per observed cell on
average) to NUTS, as measured (:mod:`bnmfzoo.inference._assignment`); that choice is tested in
``tests/frontends/test_sampler_choice.py``. Here the density threshold is lifted so that
``pm.sample()`` without ``step=`` still reaches the step whose recognition these tests check.
"""

import math

import pytest


@pytest.fixture(autouse=True)
def _our_step_on_dense_counts(monkeypatch):
    from bnmfzoo.inference import _assignment

    monkeypatch.setattr(_assignment, "DENSE_COUNTS_PER_CELL", math.inf)
