"""Replica exchange as a PyMC step method, for any family with a tempered sweep (PyMC glue).

:class:`ReplicaExchange` keeps a chain's replicas between PyMC steps (:class:`ReplicaSet`), runs
:func:`~bnmfzoo.inference.tempering._exchange.exchange_step` through its ``tempered`` family (the
tempered-sweep interface of :mod:`bnmfzoo.inference.tempering`), tunes the ladder while PyMC tunes
(:class:`~bnmfzoo.inference.tempering._ladder.LadderTuner`: spacing, and by default the size) and
records the ladder's stats. A family's step subclasses it together with the family's own PyMC glue
and fills in a few hooks: how a chain's first state is made from the point (:meth:`_first_state`),
how the cold state is written back (:meth:`_write_cold`), and optionally extra moves after each
sweep, extra work after the swaps, and stats.
"""

import math
import warnings
from dataclasses import field

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from bnmfzoo.inference._step_glue import TransformedStep
from bnmfzoo.inference.tempering._exchange import ReplicaSet, exchange_step
from bnmfzoo.inference.tempering._ladder import (
    LadderTuner,
    annealed_start,
    check_anneal_start,
    check_ladder,
    initial_size,
    nearest_rungs,
)
from bnmfzoo.inference.tempering.interface import check_tempered_sweep

__all__ = ["ReplicaExchange", "ExchangeState", "MIN_ROUND_TRIPS"]

#: fewer round trips than this in a chain's draws are warned about. Each round trip hands the
#: cold chain a state that has been through the hot end (a regeneration of its mode choice,
#: Syed et al. 2022): with K of them a mode's mass rests on about K independent visits, a
#: relative error of at least 1 / sqrt(K) (over 30 % below 10), and the batch-means or ESS
#: estimate of that error is itself unreliable with fewer than ~10 batches.
MIN_ROUND_TRIPS = 10


@dataclass_state
class ExchangeState(StepMethodState):
    """Sampling state of a :class:`ReplicaExchange` step (``step.sampling_state``).

    Attributes
    ----------
    replicas : ReplicaSet or None
        The chain's replicas, labels, swap parity and round trips; None before its first step.
    betas : numpy.ndarray
        The current ladder.
    tuner : LadderTuner
        Ladder-tuning round counters.
    n_steps : int
        Steps taken in this chain.
    tune : bool
        Whether the ladder is still being tuned.
    """

    replicas: ReplicaSet | None = field(default=None)
    betas: np.ndarray | None = field(default=None)
    tuner: LadderTuner | None = field(default=None)
    n_steps: int = 0
    tune: bool = False


class ReplicaExchange(TransformedStep):
    """Replica exchange (parallel tempering) of any exact tempered sweep; PyMC step base.

    A subclass sets ``self.tempered`` (the tempered-sweep interface of
    :mod:`bnmfzoo.inference.tempering`) and calls :meth:`_init_exchange` from its constructor,
    then implements :meth:`_first_state` and :meth:`_write_cold`. One step sweeps every replica
    at its temperature, proposes swaps of neighbours (even and odd pairs in alternate steps;
    Syed et al. 2022), updates the ladder while tuning, and writes the ``beta = 1`` state.

    The ladder: an explicit ``betas`` or ``n_replicas`` is used as given (its spacing retuned
    while tuning if ``adapt``). Otherwise (the default) its size is chosen from the data:
    ``initial_size(tempered.dimension, beta_min)`` rungs to start with, and rungs inserted at the
    end of tuning rounds until the ladder reaches about ``2 Lambda + 1`` rungs (every pair near
    rejection 1/2; :mod:`bnmfzoo.inference.tempering._ladder`), at most ``max_replicas``.

    Sample stats of every replica-exchange step: ``cold_label`` (the replica the cold state
    started in), ``round_trips`` (completed cold -> hottest -> cold tours of any replica,
    cumulative since the end of tuning), ``swap_prob_i`` (acceptance probability of the swap
    proposed between rungs ``i`` and ``i + 1``, NaN where none) and ``beta_i`` (the ladder);
    both NaN for rungs beyond the chain's ladder. A chain ending with fewer than
    :data:`MIN_ROUND_TRIPS` round trips is warned about.
    """

    _state_class = ExchangeState
    _exchange_stats = {"cold_label": (np.int64, []), "round_trips": (np.int64, [])}
    tempered = None

    @classmethod
    def competence(cls, var, has_grad=True):
        """Never chosen automatically (INCOMPATIBLE): pass it as ``step=``.

        Listed first among a family step's bases, it also overrides the competence of the
        family's plain step (which would claim the variables).
        """
        from pymc.step_methods.compound import Competence

        return Competence.INCOMPATIBLE

    def _init_exchange(self, *, betas, n_replicas, beta_min, adapt, anneal_start,
                       max_replicas=None, n_sweeps=1):
        """Check and store the ladder settings; declare the per-rung stats."""
        if isinstance(n_sweeps, bool) or not isinstance(n_sweeps, (int, np.integer)) \
                or n_sweeps < 1:
            raise ValueError(f"n_sweeps must be a positive integer (sweeps of every replica "
                             f"between swap passes), got {n_sweeps!r}")
        check_tempered_sweep(self.tempered)
        self.n_sweeps = int(n_sweeps)
        self.adapt = bool(adapt)
        self.anneal_start = check_anneal_start(anneal_start)
        self.grow = betas is None and n_replicas is None and self.adapt
        if betas is None and n_replicas is None:
            if not 0.0 < float(beta_min) < 1.0:
                raise ValueError(f"beta_min must lie in (0, 1), got {beta_min!r}")
            n_replicas = initial_size(self.tempered.dimension, beta_min)
        self.initial_betas = check_ladder(betas, n_replicas, beta_min)
        n = self.initial_betas.size
        if max_replicas is None:
            max_replicas = max(16, 2 * n) if self.grow else n
        if isinstance(max_replicas, bool) or not isinstance(max_replicas, (int, np.integer)) \
                or max_replicas < n:
            raise ValueError(f"max_replicas must be an integer of at least the initial "
                             f"{n} rungs, got {max_replicas!r}")
        self.max_replicas = int(max_replicas) if self.grow else n
        m = self.max_replicas
        # PyMC's NDArray trace stores scalar stats only: one stat per pair / temperature
        self.stats_dtypes_shapes = {**type(self).stats_dtypes_shapes, **self._exchange_stats,
                                    **{f"swap_prob_{i}": (np.float64, []) for i in range(m - 1)},
                                    **{f"beta_{i}": (np.float64, []) for i in range(m)}}
        self.stats_dtypes = [{k: d for k, (d, _) in self.stats_dtypes_shapes.items()}]
        self._plan = None

    def _reset_exchange(self):
        if getattr(self, "initial_betas", None) is None:  # a base constructor's early reset
            return
        self.replicas = None
        self.betas = self.initial_betas.copy()
        self.tuner = LadderTuner(grow=self.grow, max_replicas=self.max_replicas)
        self.n_steps = 0

    def setup_chain(self, rng, tune, draws):
        """Take this chain's generator and forget the previous chain's replicas and ladder."""
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        # PyMC's sequential sampler sets ``step.tune`` itself, its multiprocess sampler does
        # not (only ``stop_tuning()`` at the end): take it from the chain's plan
        self.tune = int(tune) > 0
        self._plan = int(tune) + int(draws)

    def _reset_chain(self):
        self._reset_exchange()

    @property
    def n_replicas(self):
        """Number of temperatures."""
        return self.betas.size

    # -- hooks of a family's step ----------------------------------------------------------
    def _first_state(self, point):
        """A new state for a chain's first step (from the point or the family's ``init``)."""
        raise NotImplementedError

    def _write_cold(self, point, cold, loglik, info):
        """``(new_point, stats)``: the cold state written into ``point``, the family's stats.

        ``loglik`` is its tempered term, ``info`` what :meth:`_after_sweep` returned for it.
        """
        raise NotImplementedError

    def _sync(self, point, replicas):
        """Adjust the replicas to a point another step may have changed (default: nothing)."""

    def _after_sweep(self, i, state):
        """Extra move of replica ``i`` after its sweep; returns a float (or None: none)."""
        return None

    def _after_swaps(self, replicas, logliks):
        """Work after the swap pass (may change ``replicas`` and ``logliks``); extra stats."""
        return {}

    def _adapt(self, infos):
        """Tune the family's own settings from ``_after_sweep``'s values (while tuning)."""

    def _on_resize(self, index):
        """The ladder grew: position ``j`` now holds (a copy of) old position ``index[j]``."""

    # -- the step ------------------------------------------------------------------------
    def _first_replicas(self, point):
        """Annealed from the hottest rung while tuning (``anneal_start``), else independent."""
        if self.anneal_start and self.n_replicas > 1 and getattr(self, "tune", False):
            return annealed_start(self._first_state(point), self.betas, self.anneal_start,
                                  lambda s, beta: self.tempered.sweep(s, beta, self.rng),
                                  self.tempered.copy)
        return [self._first_state(point) for _ in range(self.n_replicas)]

    def step(self, point):
        """Sweep every replica, propose swaps, tune the ladder; write the ``beta = 1`` state."""
        tune = getattr(self, "tune", False)
        if self.replicas is None:
            self.replicas = ReplicaSet.new(self._first_replicas(point))
        else:
            self._sync(point, self.replicas)
        rs = self.replicas
        if not tune and not self.tuner.reported:  # first step after tuning: count afresh
            rs.reset_trips()
        after = type(self)._after_sweep is not ReplicaExchange._after_sweep
        prob, _, logliks, infos = exchange_step(self.tempered, rs, self.betas, self.rng,
                                                after_sweep=self._after_sweep if after else None,
                                                n_sweeps=getattr(self, "n_sweeps", 1))
        extra = self._after_swaps(rs, logliks)
        self.n_steps += 1
        betas = self.tuner.update(prob, self.betas, tune=tune, adapt=self.adapt,
                                  where=type(self).__name__)
        if betas.size != self.betas.size:  # the ladder grew (tuning only)
            index = nearest_rungs(self.betas, betas)
            rs.resize(index, self.tempered.copy)
            self._on_resize(index)
        self.betas = betas
        if tune:
            self._adapt(infos)
        new_point, stats = self._write_cold(point, rs.states[0], logliks[0], infos[0])
        stats.update(extra)
        stats["cold_label"] = np.int64(rs.labels[0])
        stats["round_trips"] = np.int64(rs.round_trips)
        m = self.max_replicas
        stats.update({f"swap_prob_{i}": float(prob[i]) if i < prob.size else math.nan
                      for i in range(m - 1)})
        stats.update({f"beta_{i}": float(betas[i]) if i < betas.size else math.nan
                      for i in range(m)})
        if self._plan is not None and self.n_steps == self._plan:
            self._report_round_trips(rs)
        return new_point, [stats]

    def _report_round_trips(self, rs):
        if len(rs) > 1 and rs.round_trips < MIN_ROUND_TRIPS:
            warnings.warn(
                f"{type(self).__name__}: only {rs.round_trips} round trips (a replica "
                f"travelling from beta = 1 to the hottest rung {self.betas[-1]:.3g} and back) "
                f"in this chain's draws, fewer than {MIN_ROUND_TRIPS}: mode masses from its "
                "draws rest on too few independent visits to estimate them or their error. "
                "Run longer, or check the swap rates (ladder_stats). Good swap rates are not "
                "enough: on real data (CCLE IC50, rank 3: 98 rungs, every pair swapping at "
                ">= 0.5) no round trip happened in 5000 steps, while "
                "ReplicaExchangeGibbs(beta_min=0.3, n_sweeps=4) made 20 in 5000 at 1.7 times "
                "the CPU (benchmarks/RESULTS.md 3.9). For exponential-Gaussian models, "
                "bnmfzoo.inference.mode_evidence estimates the masses independently.",
                UserWarning, stacklevel=2)
