"""The blocked chain's driver loop, checkpoints, and the serial (in-process) executor.

The driver keeps the column state and the draws; an *executor* keeps the blocks and their row
states and runs one sweep of every block. The serial executor runs the blocks in order in this
process; :mod:`bnmfzoo.inference.blocked._dask` runs them on Dask workers. Both call the same
block functions with the same streams, and the driver reduces their statistics in block order,
so the chains are bit for bit the same.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from bnmfzoo.inference.blocked._families import summarize


class WorkerLost(RuntimeError):
    """A worker (and the blocks it held) was lost during a sweep; restart from a checkpoint."""


@dataclass
class Checkpoint:
    """Everything needed to resume: the next sweep, the row states, the column state."""

    next_sweep: int
    states: list
    cols: object


@dataclass
class ChainResult:
    """Draws and bookkeeping of one blocked chain."""

    W: np.ndarray
    tau: np.ndarray
    A_mean: np.ndarray
    A_last: np.ndarray
    A_draws: object
    sweep_seconds: list = field(default_factory=list)
    bytes_per_sweep: int = 0
    restarts: int = 0
    n_blocks: int = 0
    summaries: list = field(default_factory=list)


class SerialExecutor:
    """Every block in this process, in block order."""

    n_workers = 0

    def start(self, source, family):
        self.blocks = [source.load(b) for b in range(source.n_blocks)]
        self.states = [family.init_state(blk) for blk in self.blocks]
        return [summarize(blk) for blk in self.blocks]

    def sweep(self, family, cols, sweep, keep):
        self.states = [family.step(blk, st, cols, sweep, keep)
                       for blk, st in zip(self.blocks, self.states)]
        return [st.stats for st in self.states]

    def stats_nbytes(self):
        """Bytes of every block's statistics (what a sweep on workers would gather)."""
        return sum(sum(np.asarray(s).nbytes for s in st.stats) for st in self.states)

    def snapshot(self):
        return list(self.states)

    def restore(self, states):
        self.states = list(states)

    def rows(self):
        return np.concatenate([st.A for st in self.states])

    def close(self):
        pass


def run_chain(family, source, executor, *, draws, tune, keep_rows=False, checkpoint_every=10,
              max_restarts=3, after_sweep=None):
    """Run ``tune + draws`` blocked sweeps and return a :class:`ChainResult`.

    A :class:`WorkerLost` during a sweep restores the last checkpoint (row states every
    ``checkpoint_every`` sweeps, and the column state) and redoes the sweeps since: the streams
    depend on the sweep and the block only, so the chain's bits do not change.
    """
    summaries = executor.start(source, family)
    family.check(summaries)
    D, N = source.shape
    K = family.rank
    cols = family.init_cols(N, summaries)
    total = tune + draws
    W = np.empty((draws, K, N))
    tau = np.empty(draws)
    A_draws = np.empty((draws, D, K)) if keep_rows else None
    ckpt = Checkpoint(0, executor.snapshot(), cols)
    res = ChainResult(W, tau, None, None, A_draws, n_blocks=source.n_blocks, summaries=summaries)
    s = 0
    while s < total:
        t0 = time.perf_counter()
        try:
            stats = executor.sweep(family, cols, s, keep=s >= tune)
        except WorkerLost as err:
            res.restarts += 1
            if res.restarts > max_restarts:
                raise WorkerLost(
                    f"{err}; gave up after {max_restarts} restarts from the checkpoint (a worker "
                    "lost again and again has usually run out of memory: its blocks need more "
                    "than its memory_limit; use more workers, more memory or smaller blocks)"
                ) from None
            executor.restore(ckpt.states)
            s, cols = ckpt.next_sweep, ckpt.cols
            continue
        cols = family.draw_cols(family.reduce(stats), cols, s, summaries)
        res.sweep_seconds.append(time.perf_counter() - t0)
        if s == 0:
            res.bytes_per_sweep = executor.stats_nbytes()
        if s >= tune:
            W[s - tune] = cols.W
            tau[s - tune] = cols.tau
            if keep_rows:
                A_draws[s - tune] = executor.rows()
        s += 1
        if checkpoint_every and s % checkpoint_every == 0 and s < total:
            ckpt = Checkpoint(s, executor.snapshot(), cols)
        if after_sweep is not None:
            after_sweep(s)
    states = executor.snapshot()
    res.A_last = np.concatenate([st.A for st in states])
    res.A_mean = np.concatenate([st.A_sum for st in states]) / max(draws, 1)
    return res
