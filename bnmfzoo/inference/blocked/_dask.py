"""The Dask executor of the blocked sweep: blocks and their row states live on the workers.

Each block is placed once on a worker (sent from this process for in-memory data, or loaded by
the worker itself from the source, which keeps every process's memory bounded) and stays in
that worker's memory with its row state, under a key private to the run. Each sweep is one
task per block, pinned to its worker: the column state goes in (``K N`` numbers) and the
block's statistics come back (``K N`` numbers, plus ``K^2`` or ``K^2 N`` for Gaussian blocks),
never the data. A lost worker is noticed (its tasks fail or it leaves the scheduler) and
reported as :class:`~bnmfzoo.inference.blocked._chain.WorkerLost`; the driver then restores
the last checkpoint on the workers alive.
"""

import time
import uuid

import numpy as np

from bnmfzoo.inference.blocked._chain import WorkerLost
from bnmfzoo.inference.blocked._families import summarize

#: This worker process's blocks: ``{(run, block): [Block, BlockState]}``.
_STORE = {}


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _entry(run, b):
    try:
        return _STORE[(run, b)]
    except KeyError:
        raise LookupError(f"block {b} is not on this worker (worker restarted?)") from None


def _put(run, b, block, family, state):
    """Keep ``block`` here with ``state`` (a prior draw when None); return its summary."""
    _STORE[(run, b)] = [block, family.init_state(block) if state is None else state]
    return summarize(block)


def _load(run, b, source, family, state):
    return _put(run, b, source.load(b), family, state)


def _sweep_worker(run, blocks, family, cols, sweep, keep):
    """One sweep of this worker's blocks (in block order); their statistics, folded."""
    out = []
    for b in blocks:
        entry = _entry(run, b)
        entry[1] = family.step(entry[0], entry[1], cols, sweep, keep)
        out.append(entry[1].stats)
    return family.fold(out)


def _reset(run, b, state):
    """Put block ``b``'s row state back to a checkpoint; False if the block is not here."""
    if (run, b) not in _STORE:
        return False
    _STORE[(run, b)][1] = state
    return True


def _state(run, b):
    return _entry(run, b)[1]


def _rows(run, b):
    return _entry(run, b)[1].A


def _drop(run):
    for key in [k for k in _STORE if k[0] == run]:
        del _STORE[key]


def _lost_errors():
    import concurrent.futures as cf

    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError

    return (FutureCancelledError, CommClosedError, OSError, cf.CancelledError, LookupError)


#: seconds to wait for a worker when the cluster has none (starting, or nannies restarting them)
WAIT_FOR_WORKERS = 30.0


class DaskExecutor:
    """Blocks on the workers of ``client``.

    Parameters
    ----------
    client : distributed.Client
    timeout : float
        Seconds a sweep may take before the stalled blocks are reported (``TimeoutError``).
    workers : list of str, optional
        Use only these workers.
    """

    def __init__(self, client, timeout=600.0, workers=None):
        self.client = client
        self.timeout = float(timeout)
        self.only = None if workers is None else list(workers)
        self.run = uuid.uuid4().hex
        self.where = []

    # ---------------------------------------------------------------- placement
    def _workers(self):
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if not workers:  # none yet, or all being restarted by their nannies: wait a little
            try:
                self.client.wait_for_workers(1, timeout=min(self.timeout, WAIT_FOR_WORKERS))
            except (TimeoutError, OSError):
                raise RuntimeError("the Dask cluster has no workers (waited "
                                   f"{min(self.timeout, WAIT_FOR_WORKERS):g} s)") from None
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if self.only is not None:
            workers = {w: v for w, v in workers.items() if w in self.only} or workers
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        self._in_use = {w: int(workers[w].get("metrics", {}).get("memory") or 0)
                        for w in workers}
        self._limits = {w: workers[w].get("memory_limit") or 0 for w in workers}
        return sorted(workers), dict(self._limits)

    def _place(self, n_blocks):
        addrs, _ = self._workers()
        self.where = [addrs[b % len(addrs)] for b in range(n_blocks)]
        self.n_workers = len(addrs)

    def check_memory(self, source, family):
        """Refuse, before anything runs, a placement whose blocks exceed a worker's limit."""
        addrs, limits = self._workers()
        where = [addrs[b % len(addrs)] for b in range(source.n_blocks)]
        need = {w: self._in_use.get(w, 0) for w in addrs}  # the worker process itself
        for b, w in enumerate(where):
            rows = int(source.bounds[b + 1] - source.bounds[b])
            need[w] += source.block_nbytes(b) + 4 * 8 * rows * family.rank
        for w in addrs:
            if limits[w] and need[w] > 0.7 * limits[w]:
                worst = max((b for b in range(source.n_blocks) if where[b] == w),
                            key=source.block_nbytes)
                raise MemoryError(
                    f"worker {w} would need about {_human(need[w])} (its process "
                    f"{_human(self._in_use.get(w, 0))}, block {worst}: "
                    f"{_human(source.block_nbytes(worst))}), more than 70% of its "
                    f"memory_limit of {_human(limits[w])}: use more workers or a larger "
                    "memory_limit (block_rows sets the block size); nothing was run")

    def _submit(self, fn, b, *args):
        return self.client.submit(fn, self.run, b, *args, workers=[self.where[b]],
                                  allow_other_workers=False, pure=False)

    def _place_blocks(self, states, only=None):
        futs = []
        for b in range(self.source.n_blocks):
            st = None if states is None else states[b]
            if only is not None and b not in only:  # still in place: reset its row state
                futs.append(self._submit(_reset, b, st))
            elif self.source.in_memory:
                futs.append(self._submit(_put, b, self.source.load(b), self.family, st))
            else:
                futs.append(self._submit(_load, b, self.source, self.family, st))
        return self._gather(futs, "placing the blocks")

    # ---------------------------------------------------------------- protocol
    def _defer_pymc(self):
        """Keep PyMC out of the workers (and of those their nannies start after a loss)."""
        from bnmfzoo._base.lazy import defer_pymc

        for nanny in (False, True):
            try:
                self.client.run(defer_pymc, nanny=nanny)
            except Exception:  # noqa: BLE001 - no nannies, or a worker leaving: only memory
                pass

    def start(self, source, family):
        self.source = source
        self.family = family
        self._defer_pymc()  # before any block function reaches a worker
        self._place(source.n_blocks)
        try:
            return self._place_blocks(None)
        except WorkerLost as err:
            raise MemoryError(self.loss_message(err, "loading the blocks")) from None

    def loss_message(self, err, what):
        """One line naming the lost worker's blocks, their bytes and its memory limit."""
        from bnmfzoo.inference.blocked._sources import loss_message

        return loss_message(err, self.where, self.source, getattr(self, "_limits", {}), what)

    def _gather(self, futs, what):
        from distributed import wait

        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                wait(futs, timeout=max(min(left, 1.0), 0.01))
                break
            except TimeoutError:
                alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
                gone = sorted({self.where[b] for b, f in enumerate(futs)
                               if not f.done() and self.where[b] not in alive})
                if gone:
                    self.client.cancel(futs)
                    lost = WorkerLost(f"{what}: worker(s) {', '.join(gone)} left")
                    lost.workers = gone
                    raise lost from None
                if time.monotonic() >= deadline:
                    late = [b for b, f in enumerate(futs) if not f.done()]
                    workers = sorted({self.where[b] for b in late})
                    self.client.cancel(futs)
                    raise TimeoutError(
                        f"{what}: block(s) {late} on worker(s) {', '.join(workers)} did not "
                        f"finish within timeout={self.timeout:g} s (a stalled or overloaded "
                        "worker)") from None
        try:
            return self.client.gather(futs)
        except _lost_errors() as err:
            raise WorkerLost(f"{what}: {type(err).__name__}: {err}") from err

    def sweep(self, family, cols, sweep, keep):
        """One task per worker (its blocks in order); the blocks' statistics in block order."""
        groups = {}
        for b, w in enumerate(self.where):
            groups.setdefault(w, []).append(b)
        order = list(groups.items())
        futs = [self.client.submit(_sweep_worker, self.run, blocks, family, cols, sweep, keep,
                                   workers=[w], allow_other_workers=False, pure=False)
                for w, blocks in order]
        where = self.where
        self.where = [w for w, _ in order]  # for the error messages of _gather
        try:
            parts = self._gather(futs, f"sweep {sweep}")
        finally:
            self.where = where
        out = [None] * len(where)
        for (_, blocks), stats in zip(order, parts):
            for b, st in zip(blocks, stats):
                out[b] = st
        self._stats_nbytes = sum(sum(np.asarray(a).nbytes for a in s if a is not None)
                                 for s in out) + len(order) * cols.W.nbytes
        return out

    def stats_nbytes(self):
        return self._stats_nbytes

    def snapshot(self):
        return self._gather([self._submit(_state, b) for b in range(len(self.where))],
                            "checkpoint")

    def restore(self, states):
        """Restore the checkpointed row states; only a lost worker's blocks are loaded again.

        The blocks of the workers alive stay where they are (their row states are reset); the
        lost ones go to the workers that joined since (the nanny's restart), else round robin
        to the workers alive.
        """
        try:  # a nanny restarts a lost worker: wait for it rather than crowd the others
            self.client.wait_for_workers(self.n_workers, timeout=min(self.timeout, 120.0))
        except TimeoutError:
            pass
        self._defer_pymc()
        addrs, _ = self._workers()
        fresh = [w for w in addrs if w not in set(self.where)] or addrs
        lost = [b for b, w in enumerate(self.where) if w not in set(addrs)]
        for i, b in enumerate(lost):
            self.where[b] = fresh[i % len(fresh)]
        self.n_workers = len(addrs)
        kept = self._place_blocks(states, only=set(lost))
        missing = {b for b, ok in enumerate(kept) if ok is False}  # a worker restarted in place
        if missing:
            self._place_blocks(states, only=missing)

    def rows(self):
        futs = [self._submit(_rows, b) for b in range(len(self.where))]
        return np.concatenate(self._gather(futs, "gathering rows"))

    def close(self):
        try:
            self.client.run(_drop, self.run)
        except _lost_errors():
            pass


def connect(address, timeout=10.0):
    """A ``distributed.Client`` for the scheduler at ``address``, or one clear error."""
    from distributed import Client

    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as err:
        raise ConnectionError(
            f"client: no Dask scheduler answered at {address!r} within {timeout:g} s "
            f"({type(err).__name__})") from None
