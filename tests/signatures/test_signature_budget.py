"""The signature workflow's CPU budget is checked between sweep chunks, not after the run.

``extract(..., budget_s=)`` / ``bnmfzoo signatures --budget`` sets a deadline on the process
CPU clock; the Gibbs sweeps (run in chunks of about ``CHUNK_SECONDS``) stop at the first chunk
boundary after it, and the workflow raises one ``ValueError`` saying where the run was, what it
would need and what to run next. Nothing is returned or written. A run that finishes in time has
the numbers of a run without a budget (the check draws no random numbers).
"""

import time

import numpy as np
import pytest
import xarray as xr
from _sigdata import catalog

from bnmfzoo.cli import main
from bnmfzoo.signatures import _gibbs, extract
from bnmfzoo.signatures import workflow as wf


def _problem():
    df, _ = catalog(n_samples=12, burden=300, seed=1)
    Y = df.iloc[:, 1:].to_numpy()
    r, c = np.nonzero(Y)
    data = (r.astype(np.int64), c.astype(np.int64), Y[r, c].astype(np.int64))
    rng = np.random.default_rng(0)
    _gibbs.seed(np.random.default_rng(5))
    T = rng.dirichlet(np.ones(Y.shape[0]), 3).T.copy()
    V = rng.gamma(1.0, 100.0, (3, Y.shape[1]))
    return data, T, V, (1.0, 1.0, np.zeros(Y.shape[1]))


class _Clock:
    """A process clock that reads ``0, 1, 2, ...`` seconds, one per call."""

    def __init__(self):
        self.t = -1.0

    def __call__(self):
        self.t += 1.0
        return self.t


def test_sweeps_stop_at_the_first_chunk_boundary_after_the_deadline(monkeypatch):
    monkeypatch.setattr(_gibbs, "CHUNK_SECONDS", 0.0)  # one chunk of `thin` sweeps each
    data, T, V, pri = _problem()
    with _gibbs.budget(time.process_time() - 1.0), pytest.raises(_gibbs.BudgetExceeded) as info:
        _gibbs.sweeps(data, T, V, pri, 20, keep=("TV",), thin=2)
    assert (info.value.done, info.value.n_sweeps) == (2, 20)
    assert info.value.per_sweep is None  # the first chunk includes loading the kernel
    # a fake clock read once per chunk boundary (0, 1, 2, 3 s): the deadline 2.5 passes at
    # the fourth boundary, after 4 chunks of 2 sweeps
    monkeypatch.setattr(_gibbs.time, "process_time", _Clock())
    with _gibbs.budget(2.5), pytest.raises(_gibbs.BudgetExceeded) as info:
        _gibbs.sweeps(data, T, V, pri, 20, keep=("TV",), thin=2)
    assert info.value.done == 8 and info.value.per_sweep > 0
    # outside the block: no deadline (the context restores the previous one)
    assert _gibbs._DEADLINE[0] is None
    _gibbs.sweeps(data, T, V, pri, 20, keep=("TV",), thin=2)


def test_a_run_within_its_budget_has_the_same_draws(monkeypatch):
    monkeypatch.setattr(_gibbs, "CHUNK_SECONDS", 0.0)
    runs = []
    for deadline in (None, time.process_time() + 1e6):
        data, T, V, pri = _problem()
        with _gibbs.budget(deadline):
            runs.append(_gibbs.sweeps(data, T, V, pri, 12, keep=("TV",), thin=3)["T"])
    assert np.array_equal(runs[0], runs[1])


@pytest.fixture(scope="module")
def small():
    return catalog(n_samples=20, burden=300, seed=3)[0]


def test_too_small_a_budget_stops_the_compressive_run_early(small):
    with pytest.raises(ValueError) as info:
        extract(small, ranks=[1, 2], budget_s=0.05, random_seed=0)  # default 4 x 3000 sweeps
    msg = str(info.value)
    assert msg.startswith("budget_s = 0.05 CPU s ran out after")
    assert "in the compressive run (chain 1 of 4, " in msg and " of 3000 sweeps)" in msg
    assert "nothing is returned or written" in msg and "Raise budget_s (--budget)" in msg
    assert "\n" not in msg
    # stopped within the first chain: far below the ~4 x 3000 sweeps of the whole run
    done = int(msg.split("chain 1 of 4, ")[1].split(" of")[0])
    assert 1 <= done < 3000


def test_same_numbers_within_the_budget(small):
    kw = dict(ranks=[1], random_seed=4, n_burn=20, n_keep=60, n_chains=2)
    a, b = extract(small, **kw), extract(small, budget_s=1e6, **kw)
    for node in ("ranks", "signatures", "exposures"):
        xr.testing.assert_equal(a[node].to_dataset(), b[node].to_dataset())


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "10"])
def test_bad_budget_is_named(small, bad):
    with pytest.raises(ValueError, match="budget_s must be a positive number of CPU seconds"):
        extract(small, ranks=[1], budget_s=bad)


def test_budget_spent_before_the_alternatives_says_so(small, monkeypatch):
    """The rank route finishes, then the workflow's clock jumps past the budget: the
    alternatives' SMC is not started with nothing left, and nothing is returned."""
    real, jump = wf.compressive_rank_posterior, [0.0]

    def route(*args, **kwargs):
        out = real(*args, **kwargs)
        jump[0] = 1e3
        return out

    class _Time:
        @staticmethod
        def process_time():
            return time.process_time() + jump[0]

    monkeypatch.setattr(wf, "compressive_rank_posterior", route)
    monkeypatch.setattr(wf, "time", _Time)
    with pytest.raises(ValueError, match="ran out before the alternatives' SMC"):
        extract(small, ranks=[1], budget_s=100.0, n_burn=10, n_keep=20, n_chains=1,
                alternatives=True, random_seed=0)


def test_cli_budget_one_line_nothing_written(small, tmp_path, capsys):
    small.to_csv(tmp_path / "cat.txt", sep="\t", index=False)
    out = tmp_path / "out"
    assert main(["signatures", str(tmp_path / "cat.txt"), "--ranks", "1-2", "--budget", "0.05",
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("bnmfzoo signatures")
    assert "budget_s = 0.05 CPU s ran out" in err and "--budget" in err
    assert not out.exists()
