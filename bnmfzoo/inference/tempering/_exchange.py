"""One replica-exchange step over any tempered family (numeric core, no PyMC).

:class:`ReplicaSet` holds a chain's replicas (coldest first), the label of the replica each
state started in, the parity of the next swap pass and the round-trip bookkeeping;
:func:`exchange_step` sweeps every replica at its inverse temperature through the family's
tempered-sweep interface (:mod:`bnmfzoo.inference.tempering`), then proposes one pass of
neighbour swaps (:func:`~bnmfzoo.inference.tempering._ladder.swap_pass`). Nothing here knows
what a state is.

A **round trip** is a label that has been at the cold end (``beta = 1``), reaches the hottest
rung and comes back to the cold end (Syed et al. 2022, Sec. 3.4: the number of such tours
measures how often the cold chain receives a state that has been through the hot end, the
replica-exchange analogue of a regeneration).
"""

from dataclasses import dataclass, field

import numpy as np

from bnmfzoo.inference.tempering._ladder import swap_pass
from bnmfzoo.inference.tempering.interface import log_target_of

__all__ = ["ReplicaSet", "exchange_step"]

# phases of a label in the round-trip count: must reach the cold end, then the hot end, then
# the cold end again (a completed trip)
_NEEDS_COLD, _NEEDS_HOT, _NEEDS_RETURN = 0, 1, 2


@dataclass
class ReplicaSet:
    """The replicas of one chain, coldest first.

    Attributes
    ----------
    states : list
        Family states, ``states[i]`` at ``betas[i]``.
    labels : list of int
        The replica each state started in (they travel with the states).
    parity : int
        Which pairs the next swap pass proposes (0: even, 1: odd).
    phase : list of int
        Round-trip phase of each label (indexed by label).
    round_trips : int
        Completed round trips (cold -> hottest -> cold) since the last :meth:`reset_trips`.

    Examples
    --------
    >>> rs = ReplicaSet.new(["cold", "warm", "hot"])
    >>> rs.labels, rs.round_trips
    ([0, 1, 2], 0)
    """

    states: list
    labels: list
    parity: int = 0
    phase: list = field(default_factory=list)
    round_trips: int = 0

    @classmethod
    def new(cls, states):
        """Replicas ``states`` with labels ``0..n-1``; label 0 starts at the cold end."""
        rs = cls(list(states), list(range(len(states))))
        rs.reset_trips()
        return rs

    def __len__(self):
        return len(self.states)

    def reset_trips(self):
        """Forget the round trips so far; the label now at the cold end has been there."""
        self.round_trips = 0
        self.phase = [_NEEDS_COLD] * (max(self.labels, default=-1) + 1)
        if self.labels:
            self.phase[self.labels[0]] = _NEEDS_HOT

    def _track(self):
        n = len(self.labels)
        if n < 2:
            return
        cold, hot = self.labels[0], self.labels[-1]
        if self.phase[hot] == _NEEDS_HOT:
            self.phase[hot] = _NEEDS_RETURN
        if self.phase[cold] == _NEEDS_RETURN:
            self.round_trips += 1
            self.phase[cold] = _NEEDS_HOT
        elif self.phase[cold] == _NEEDS_COLD:
            self.phase[cold] = _NEEDS_HOT

    def resize(self, index, copy):
        """Rebuild on a new ladder: position ``j`` takes (a ``copy`` of) old state ``index[j]``.

        The first position to take an old state keeps its state and label; any further one
        gets a copy with a new label (at the start of its round trip). Used while tuning only.

        Examples
        --------
        >>> rs = ReplicaSet.new(["c", "h"])
        >>> rs.resize([0, 0, 1], copy=str.upper)
        >>> rs.states, rs.labels
        (['c', 'C', 'h'], [0, 2, 1])
        """
        seen = set()
        states, labels = [], []
        next_label = max(self.labels, default=-1) + 1
        for i in index:
            i = int(i)
            if i in seen:
                states.append(copy(self.states[i]))
                labels.append(next_label)
                self.phase.append(_NEEDS_COLD)
                next_label += 1
            else:
                seen.add(i)
                states.append(self.states[i])
                labels.append(self.labels[i])
        self.states, self.labels = states, labels


def exchange_step(family, replicas, betas, rng, *, after_sweep=None, n_sweeps=1):
    """Sweep each replica at its temperature, then one swap pass of neighbours, in place.

    Parameters
    ----------
    family : TemperedSweep
        The family's tempered sweep (:class:`~bnmfzoo.inference.tempering.TemperedSweep`);
        only ``sweep`` and ``loglik`` are used here, and ``log_target`` for a
        :class:`~bnmfzoo.inference.tempering.TemperedPath` (used for the swaps,
        :func:`~bnmfzoo.inference.tempering.swap_pass`).
    replicas : ReplicaSet
        Coldest first, like ``betas``; an accepted swap exchanges two states and their labels.
    betas : numpy.ndarray
        The ladder.
    rng : numpy.random.Generator
    after_sweep : callable, optional
        ``after_sweep(i, state) -> float`` is called right after replica ``i``'s sweep (e.g.
        extra moves that leave its tempered target invariant); its values are returned.
    n_sweeps : int
        Sweeps of each replica before the swap pass (each leaves its tempered target
        invariant, so any number is exact). More sweeps decorrelate a replica's
        log-likelihood between swaps, which the non-reversible swaps need to carry states
        along the ladder (Syed et al. 2022): on CCLE IC50, rank 3, a ladder to 0.3 with 4
        sweeps made 20 round trips in 5000 steps where the default (1 sweep, ladder to 0.05)
        made none (``benchmarks/RESULTS.md`` §3.9).

    Returns
    -------
    prob : numpy.ndarray
        ``(n - 1,)`` acceptance probabilities of the proposed swaps (NaN where none).
    accepted : numpy.ndarray of bool
    logliks : list of float
        Each position's tempered log-likelihood after the swaps.
    infos : numpy.ndarray
        ``(n,)`` values of ``after_sweep`` (NaN without it).

    Examples
    --------
    >>> import numpy as np
    >>> class Toy:  # x ~ N(0, 1 / beta): the prior is flat, the log-likelihood -x^2 / 2
    ...     def sweep(self, state, beta, rng):
    ...         state[0] = rng.normal() / np.sqrt(beta)
    ...     def loglik(self, state):
    ...         return -0.5 * state[0] ** 2
    >>> rs = ReplicaSet.new([[0.0], [0.0]])
    >>> prob, acc, ll, _ = exchange_step(Toy(), rs, np.array([1.0, 0.3]),
    ...                                  np.random.default_rng(0))
    >>> prob.shape, len(ll), rs.parity
    ((1,), 2, 1)
    """
    infos = np.full(len(replicas), np.nan)
    for i, (state, beta) in enumerate(zip(replicas.states, betas, strict=True)):
        for _ in range(n_sweeps):
            family.sweep(state, beta, rng)
        if after_sweep is not None:
            value = after_sweep(i, state)
            if value is not None:
                infos[i] = value
    logliks = [family.loglik(state) for state in replicas.states]
    prob, accepted = swap_pass(replicas.states, np.asarray(betas), logliks, rng,
                               replicas.parity, log_target_of(family))
    labels = replicas.labels
    for i in np.flatnonzero(accepted):  # disjoint pairs: labels follow their states
        labels[i], labels[i + 1] = labels[i + 1], labels[i]
    replicas.parity ^= 1
    replicas._track()
    return prob, accepted, logliks, infos
