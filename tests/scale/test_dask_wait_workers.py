"""A cluster with no worker yet (starting, or nannies restarting them) is waited for, briefly.

Under heavy load a fit once found all four workers of a ``LocalCluster`` being restarted by their
nannies and stopped at once with "the Dask cluster has no workers"; the executor now waits up to
``WAIT_FOR_WORKERS`` seconds for one before saying so.
"""

import threading
import time

import pytest

import bnmfzoo.inference.blocked._dask as dask_exec

distributed = pytest.importorskip("distributed")


def test_no_worker_is_an_error_after_the_wait(monkeypatch):
    monkeypatch.setattr(dask_exec, "WAIT_FOR_WORKERS", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        start = time.perf_counter()
        with pytest.raises(RuntimeError, match=r"has no workers \(waited 0.5 s\)"):
            dask_exec.DaskExecutor(client)._workers()
        assert 0.4 < time.perf_counter() - start < 10.0


def test_a_worker_joining_during_the_wait_is_used(monkeypatch):
    monkeypatch.setattr(dask_exec, "WAIT_FOR_WORKERS", 30.0)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        timer = threading.Timer(0.5, lambda: c.scale(1))
        timer.start()
        try:
            addrs, _ = dask_exec.DaskExecutor(client)._workers()
        finally:
            timer.join()
        assert len(addrs) == 1
