"""Step methods' sampling state (``step.sampling_state``) and the shared value-space glue."""

import pickle
from dataclasses import fields

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import StepMethodState

from bnmfzoo.inference import (
    CollapsedGibbsBetaDir,
    CollapsedGibbsDirDir,
    GibbsNMF,
    GibbsNMTF,
)
from bnmfzoo.inference._step_glue import ValueMap
from bnmfzoo.models import (
    beta_dir,
    dir_beta,
    dir_dir,
    exponential_gaussian,
    tri_exponential_gaussian,
)

V = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 0, 1], [0, 1, np.nan, 0], [1, 1, 0, 0]])


def _X():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(6, 2)) @ rng.exponential(size=(2, 5))
    X[0, 1] = np.nan
    return X


CASES = {
    "GibbsNMF": (lambda: exponential_gaussian(_X(), 2, ard=True), GibbsNMF, {"chain"}),
    "GibbsNMTF": (lambda: tri_exponential_gaussian(_X(), (2, 2)), GibbsNMTF, {"chain"}),
    "CGBetaDir": (lambda: beta_dir(V, rank=3), CollapsedGibbsBetaDir, {"z"}),
    "CGDirBeta": (lambda: dir_beta(V, rank=3), CollapsedGibbsBetaDir, {"z"}),
    "CGDirDir": (lambda: dir_dir(V, rank=3), CollapsedGibbsDirDir, {"z", "c"}),
}


def _run(step, point, n):
    draws = []
    for _ in range(n):
        point, _ = step.step(point)
        draws.append(point)
    return point, draws


def _same(draws1, draws2):
    assert len(draws1) == len(draws2)
    for p1, p2 in zip(draws1, draws2):
        assert p1.keys() == p2.keys()
        for name in p1:
            assert np.array_equal(p1[name], p2[name]), name


@pytest.mark.parametrize("case", list(CASES))
def test_snapshot_restore_continues_identically(case):
    make_model, cls, extra = CASES[case]
    model = make_model()
    step = cls(model=model)
    state_class = type(step.sampling_state)
    assert issubclass(state_class, StepMethodState) and state_class is cls._state_class
    assert extra <= {f.name for f in fields(state_class)}
    step.setup_chain(np.random.default_rng(7), 0, 20)
    point, _ = _run(step, model.initial_point(), 3)
    snapshot = step.sampling_state
    # the snapshot holds the chain's state, not just the generator
    for name in extra:
        assert getattr(snapshot, name) is not None
    _, first = _run(step, point, 6)
    step.sampling_state = snapshot
    _, again = _run(step, point, 6)
    _same(first, again)
    # the snapshot is a copy: sampling after the restore did not alter it
    step.sampling_state = snapshot
    _, third = _run(step, point, 6)
    _same(first, third)


@pytest.mark.parametrize("case", ["GibbsNMF", "CGDirDir"])
def test_snapshot_survives_pickle_and_fresh_step(case):
    """A snapshot restored into a new step instance (e.g. another process) continues alike."""
    make_model, cls, _ = CASES[case]
    model = make_model()
    step = cls(model=model)
    step.setup_chain(np.random.default_rng(3), 0, 10)
    point, _ = _run(step, model.initial_point(), 2)
    snapshot = pickle.loads(pickle.dumps(step.sampling_state))
    _, first = _run(step, point, 4)
    other = cls(model=model)
    other.sampling_state = snapshot
    _, again = _run(other, point, 4)
    _same(first, again)


def test_collapsed_restore_rebuilds_counts_from_assignments():
    model = beta_dir(V, rank=3)
    step = CollapsedGibbsBetaDir(model=model)
    step.setup_chain(np.random.default_rng(1), 0, 5)
    point, _ = _run(step, model.initial_point(), 2)
    snap = step.sampling_state
    counts = step.chain.L.copy(), step.chain.C1.copy(), step.chain.C0.copy()
    _run(step, point, 3)
    step.sampling_state = snap
    chain = step._current_chain()
    for old, new in zip(counts, (chain.L, chain.C1, chain.C0)):
        assert np.array_equal(old, new)


def test_value_map_uses_the_models_transforms():
    model = beta_dir(V, rank=2)
    names = {vm: ValueMap(model, vm) for vm in ("A", "W")}
    rng = np.random.default_rng(0)
    for name, vm in names.items():
        rv = model[name]
        value = rng.normal(size=model.initial_point()[vm.value_name].shape)
        expected = pm.draw(model.rvs_to_transforms[rv].backward(value, *rv.owner.inputs))
        np.testing.assert_allclose(vm.backward(value), expected, rtol=1e-12)
        np.testing.assert_allclose(vm.forward(vm.backward(value)), value, atol=1e-10)
    m2 = exponential_gaussian(_X(), 2)
    vm = ValueMap(m2, "A")
    assert vm.value_name == "A_log__"
    x = np.array([[0.5, 2.0]])
    assert np.array_equal(vm.forward(x), np.log(x))
    assert np.array_equal(vm.backward(np.log(x)), np.exp(np.log(x)))


def test_gibbs_runs_without_transforms():
    """The glue follows the model's transforms: with none, values are used as they are."""
    X = _X()
    m_log = exponential_gaussian(X, 2, sigma=0.5)
    from bnmfzoo.likelihoods import gaussian

    # the same model written without transforms: recognized from its graph like ours
    with pm.Model(coords=m_log.coords) as m_plain:
        A, W = (pm.Exponential(name, lam=1.0, dims=m_log.named_vars_to_dims[name],
                               default_transform=None) for name in ("A", "W"))
        gaussian("X", A, W, X, sigma=0.5)
    step = GibbsNMF(model=m_plain)
    assert [vm.transform for vm in step.value_maps.values()] == [None, None]
    step.setup_chain(np.random.default_rng(0), 0, 3)
    point = {"A": np.ones((6, 2)), "W": np.ones((2, 5))}
    new, _ = step.step(point)
    assert (new["A"] >= 0).all() and not np.array_equal(new["A"], point["A"])
