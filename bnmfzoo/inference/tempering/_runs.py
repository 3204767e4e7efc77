"""Round trips of parallel-tempering runs, and several runs advanced together to a target.

A run is a generator (:func:`bnmfzoo.inference.reference_tempering.pt_blocks`) that yields
after each block of kept scans ``(kept scans, labels so far, its own CPU seconds)`` and
takes back either ``None`` (go on) or why to stop (``"cpu"``, ``"trips"``); it returns its
result when stopped or out of scans. :func:`drive` runs one alone; :func:`run_together`
advances independent runs of one mode block by block, each until it has made ``stop_trips``
round trips, the runs furthest behind first: a fixed CPU share per run, spent one run after
another, left some runs short of the trips the verdict needs while others went on past them
(breast SBS96 under the negative binomial at K = 4: 11, 9, 15 and 15 trips in 2,000-2,150
kept scans each), where the same CPU spread by need brings every run there.

References
----------
Syed, S., Bouchard-Cote, A., Deligiannidis, G. & Doucet, A. (2022). Non-reversible parallel
tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2), 321-350.
"""

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["PTRun", "count_round_trips", "drive", "run_together"]


@dataclass
class PTRun:
    """One parallel-tempering run along a reference path.

    Attributes
    ----------
    betas : numpy.ndarray
        The frozen ladder, ``1`` first, ``0`` last.
    log_z : float
        Stepping-stone ``log Z``.
    log_ratios : numpy.ndarray
        Its terms ``log Z_(i+1) / Z_i``, ladder sorted increasingly.
    round_trips : numpy.ndarray
        Completed round trips of each replica's index process over the kept scans.
    rejection : numpy.ndarray
        Mean swap rejection rate of each neighbour pair of the frozen ladder.
    barrier : float
        ``Lambda``: the sum of ``rejection``.
    left : float
        Share of the checked ``b = 1`` draws outside the mode (NaN without ``in_mode``).
    n_scans, n_tune_scans : int
        Kept scans, and scans spent tuning and burning in.
    cpu_seconds : float
    local_acceptance : numpy.ndarray or None
        Each rung's mean acceptance of the HMC local move over the kept scans (NaN at rungs
        without one; None when not recorded).
    stopped : str
        Why the kept scans ended: ``"scans"`` (all ``n_scans``), ``"trips"`` (``stop_trips``
        reached) or ``"cpu"`` (``max_cpu_s`` used).
    logliks : numpy.ndarray or None
        The kept ``l'`` of every rung, ``(kept scans, rungs)`` in ladder order.
    """

    betas: np.ndarray
    log_z: float
    log_ratios: np.ndarray
    round_trips: np.ndarray
    rejection: np.ndarray
    barrier: float
    left: float
    n_scans: int
    n_tune_scans: int
    cpu_seconds: float
    local_acceptance: np.ndarray | None = None
    stopped: str = "scans"
    logliks: np.ndarray | None = None


def count_round_trips(labels):
    """Completed round trips of each index process from the labels at the rungs.

    ``labels[t, i]`` is the replica at rung ``i`` after scan ``t`` (rung 0: ``b = 1``, the
    last rung: ``b = 0``). A replica completes a round trip when, having been at rung 0, it
    reaches the last rung and then rung 0 again (Syed et al. 2022, Sec. 3.4).

    Examples
    --------
    >>> count_round_trips([[0, 1], [1, 0], [0, 1], [1, 0]]).tolist()
    [1, 1]
    >>> count_round_trips([[0, 1, 2], [1, 0, 2], [0, 1, 2]]).tolist()  # 0 never reaches b = 0
    [0, 0, 0]
    """
    lab = np.asarray(labels, dtype=np.int64)
    if lab.ndim != 2 or lab.shape[1] < 2:
        raise ValueError(f"labels must be (scans, rungs >= 2), got shape {lab.shape}")
    n = lab.shape[1]
    if np.any(np.sort(lab, axis=1) != np.arange(n)):
        raise ValueError("each row of labels must be a permutation of the replicas")
    phase = np.zeros(n, dtype=np.int64)  # 0: needs b = 1, 1: needs b = 0, 2: needs b = 1 again
    trips = np.zeros(n, dtype=np.int64)
    for cold, hot in zip(lab[:, 0], lab[:, -1], strict=True):
        if phase[hot] == 1:
            phase[hot] = 2
        if phase[cold] == 2:
            trips[cold] += 1
        phase[cold] = 1
    return trips


def _cpu():
    """CPU seconds of the process (one place to read the clock)."""
    return time.process_time()


def _why(block, stop_trips, max_cpu_s, min_scans, trips=None):
    """Why a run should stop after ``block`` (``None``: go on).

    ``trips``: the run's round trips so far, when already counted.
    """
    t, labels, cpu = block
    if max_cpu_s is not None and cpu > max_cpu_s:
        return "cpu"
    if stop_trips is None or t < min_scans:
        return None
    trips = count_round_trips(labels).sum() if trips is None else trips
    return "trips" if trips >= stop_trips else None


def _send(run, why):
    """``(next block, None)``, or ``(None, result)`` once the run has returned."""
    try:
        return (next(run) if why is ... else run.send(why)), None
    except StopIteration as done:
        return None, done.value


def drive(run, *, stop_trips=None, max_cpu_s=None, min_scans=0):
    """One run to its end.

    Stopped at ``stop_trips`` round trips (not before ``min_scans`` kept scans) or past
    ``max_cpu_s`` of its CPU, else at the end of its scans.
    """
    block, out = _send(run, ...)
    while out is None:
        block, out = _send(run, _why(block, stop_trips, max_cpu_s, min_scans))
    return out


def run_together(runs, *, stop_trips, min_trips, max_cpu_s=None, min_scans=0):
    """Independent runs advanced a block at a time until each has ``stop_trips`` round trips.

    Each round advances by one block every unfinished run below ``min_trips`` round trips
    (the verdict's minimum) or, when none is, every unfinished run: the CPU goes first to the
    runs the verdict would fail. A run stops at ``stop_trips`` (not before ``min_scans`` kept
    scans) or at the end of its scans; once the runs together have used ``max_cpu_s`` CPU
    seconds (from this call), every unfinished run is stopped with ``"cpu"``. Each run's
    draws depend only on its own random numbers, so a run that reaches ``stop_trips`` ends as
    it would have alone.

    Returns
    -------
    list
        The runs' results, in order.
    """
    t0 = _cpu()
    out, blocks = [None] * len(runs), [None] * len(runs)
    trips = np.zeros(len(runs))
    def advance(i, why):
        blocks[i], out[i] = _send(runs[i], why)
        if blocks[i] is not None:
            trips[i] = count_round_trips(blocks[i][1]).sum()

    for i in range(len(runs)):
        advance(i, ...)
    while any(o is None for o in out):
        live = [i for i, o in enumerate(out) if o is None]
        behind = [i for i in live if trips[i] < min_trips]
        for i in behind or live:
            why = _why(blocks[i], stop_trips, None, min_scans, trips[i])
            advance(i, "cpu" if max_cpu_s is not None and _cpu() - t0 > max_cpu_s else why)
    return out
