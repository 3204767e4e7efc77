"""The row-blocked Gibbs sweep on Dask workers is bit for bit the serial chain.

One ``LocalCluster`` of 4 worker processes (1 thread each) for the module; the 1-, 2- and
4-worker runs use the first 1, 2 or 4 of its workers. Exact equality (``np.array_equal``) is
the right check: each block's stream depends on the seed, the sweep and the block only, and the
driver sums the blocks' statistics in block order, so no rounding differs between the runs.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.inference.blocked import SyntheticCountSource, fit_blocked_gibbs

distributed = pytest.importorskip("distributed")

DRAWS = 200


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _addresses(client, n):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])[:n]


def _counts():
    """UMI-like sparse counts: 48 cells x 15 genes, about 70% zeros."""
    rng = np.random.default_rng(11)
    mu = rng.gamma(0.5, 1.0, size=(48, 3)) @ rng.gamma(0.5, 1.0, size=(3, 15))
    return sp.csr_matrix(rng.poisson(0.4 * mu))


def _gaussian():
    """36 x 10 exponential-Gaussian data with 25% of the entries missing (NaN)."""
    rng = np.random.default_rng(12)
    X = rng.exponential(size=(36, 2)) @ rng.exponential(size=(2, 10))
    X += rng.normal(scale=0.3, size=X.shape)
    X[rng.random(X.shape) < 0.25] = np.nan
    return X


CASES = {
    "poisson": (_counts, {"model": "poisson", "block_rows": 12}),
    "exponential_gaussian": (_gaussian, {"model": "exponential_gaussian", "block_rows": 9}),
}


@pytest.fixture(scope="module")
def serial():
    out = {}
    for name, (make, kw) in CASES.items():
        out[name] = fit_blocked_gibbs(make(), 2, draws=DRAWS, tune=0, random_seed=5, **kw)
    return out


def _same(a, b):
    for var in a.posterior.data_vars:
        assert np.array_equal(a.posterior[var].values, b.posterior[var].values), var
    for var in ("A_mean", "A_last"):
        assert np.array_equal(a["rows"][var].values, b["rows"][var].values), var


# Two workers for the 4 blocks in the fast suite (blocks on different workers, and two blocks
# sharing one); all on one worker and one block per worker are slow (about 52 s together).
@pytest.mark.parametrize("n_workers", [pytest.param(1, marks=pytest.mark.slow), 2,
                                       pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(CASES))
def test_bitwise_equal_to_serial(client, serial, name, n_workers):
    make, kw = CASES[name]
    dt = fit_blocked_gibbs(make(), 2, draws=DRAWS, tune=0, random_seed=5, client=client,
                           workers=_addresses(client, n_workers), **kw)
    assert dt.attrs["n_blocks"] == 4
    _same(dt, serial[name])
    # a different seed is a different chain: the equality above is not vacuous
    assert not np.array_equal(
        fit_blocked_gibbs(make(), 2, draws=3, tune=0, random_seed=6, **kw).posterior.W.values,
        serial[name].posterior.W.values[:3])


def _kill_worker_holding_block(client, block, n_blocks):
    addrs = _addresses(client, 4)
    target = addrs[block % len(addrs)]
    try:
        client.run(os._exit, 1, workers=[target])
    except Exception:  # noqa: BLE001 - the worker dies while answering
        pass


@pytest.mark.slow  # a worker process restarts (imports the package again): ~20 s
def test_worker_killed_mid_chain_same_bits(client, serial):
    make, kw = CASES["poisson"]
    killed = []

    def after(sweep):
        if sweep == 25 and not killed:
            _kill_worker_holding_block(client, 1, 4)
            killed.append(sweep)

    dt = fit_blocked_gibbs(make(), 2, draws=DRAWS, tune=0, random_seed=5, client=client,
                           checkpoint_every=10, _after_sweep=after, **kw)
    client.wait_for_workers(4, timeout=60)
    assert killed and dt.attrs["restarts"] >= 1
    _same(dt, serial["poisson"])


class _SlowSource(SyntheticCountSource):
    """A source whose blocks take longer to load than the timeout allows (a stalled worker)."""

    def load(self, b):
        import time

        time.sleep(3.0)
        return super().load(b)


def test_stalled_worker_times_out_with_clear_message(client):
    src = _SlowSource(20, 10, 40, 2, block_rows=10, seed=1)
    with pytest.raises(TimeoutError, match=r"did not finish within timeout=1 s"):
        fit_blocked_gibbs(src, 2, draws=2, tune=0, client=client, timeout=1.0)


def test_blocks_above_memory_limit_refused_before_running(client):
    limit = client.scheduler_info(n_workers=-1)["workers"]
    limit = min(w["memory_limit"] for w in limit.values())
    src = SyntheticCountSource(1000, 50, 2 * limit, 2, block_rows=500, seed=1)
    with pytest.raises(MemoryError, match=r"memory_limit .* nothing was run"):
        fit_blocked_gibbs(src, 2, draws=2, tune=0, client=client)


def test_unreachable_scheduler_one_line():
    with pytest.raises(ConnectionError, match=r"no Dask scheduler answered at 'tcp://127.0.0.1:9'"):
        fit_blocked_gibbs(_counts(), 2, draws=2, tune=0, client="tcp://127.0.0.1:9",
                          timeout=2.0)
