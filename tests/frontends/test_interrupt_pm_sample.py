"""A plain ``pm.sample`` with bnmfzoo's steps, interrupted, raises instead of returning the
truncated chains PyMC would return (``bnmfzoo.inference._assignment._interrupt_wrapper``).

Deterministic (no statistical tolerance; false-failure rate 0).
"""

import signal
import threading

import numpy as np
import pymc as pm
import pytest

import bnmfzoo as bz
from bnmfzoo.inference._interrupt import SamplingInterrupted

X = np.random.default_rng(0).exponential(size=(6, 5))
MAIN = threading.current_thread() is threading.main_thread()


def _run(callback, cores=1):
    model = bz.models.exponential_gaussian(X, 2)
    with model:
        return pm.sample(draws=200, tune=10, chains=2, cores=cores, random_seed=0,
                         progressbar=False, compute_convergence_checks=False,
                         callback=callback)


def test_keyboard_interrupt_in_pm_sample_with_our_step_raises():
    seen = []

    def callback(*, trace, draw):
        seen.append(draw.chain)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(SamplingInterrupted, match="no result"):
        _run(callback)
    assert seen == [0] * 5  # stopped there: the second chain never ran


@pytest.mark.skipif(not MAIN, reason="signal handlers need the main thread")
def test_ctrl_c_in_pm_sample_with_our_step_raises_and_restores_the_handler():
    before = signal.getsignal(signal.SIGINT)
    seen = []

    def callback(*, trace, draw):
        seen.append(draw.chain)
        if len(seen) == 3:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt) as info:
        _run(callback)
    assert isinstance(info.value, SamplingInterrupted)
    assert info.value.signum == signal.SIGINT and seen == [0] * 3
    assert signal.getsignal(signal.SIGINT) is before


def test_uninterrupted_pm_sample_is_unchanged():
    dt = _run(None)
    assert dt.posterior.sizes["chain"] == 2 and dt.posterior.sizes["draw"] == 200


@pytest.mark.slow
def test_keyboard_interrupt_in_parallel_pm_sample_with_our_step_raises():
    # cores=2: PyMC's parallel sampler; the callback runs in the main process
    def callback(*, trace, draw):
        if len(trace) >= 5:
            raise KeyboardInterrupt

    with pytest.raises(SamplingInterrupted):
        _run(callback, cores=2)
