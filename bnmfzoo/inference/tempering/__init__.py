"""Replica exchange written once, for every family with an exact tempered sweep.

Replica ``i`` of a ladder ``1 = beta_0 > ... > beta_{n-1} > 0`` targets
``pi_i(x) ~ p0(x) exp(beta_i l(x))``. A family plugs in by providing a **tempered sweep**:
an object with the members of the protocol :class:`TemperedSweep` (``sweep(state, beta, rng)``,
``loglik(state)``, ``copy(state)``, ``dimension``), and, for a family whose tempered targets
follow another path from ``p0`` to the posterior, the ``log_target(state, beta)`` of
:class:`TemperedPath` (the count family's power posterior). Each member is documented on the
protocol (:mod:`bnmfzoo.inference.tempering.interface`).

The same interface carries adaptive-tempering sequential Monte Carlo (:func:`smc`, independent
runs by :func:`smc_runs`, their log normalizing constant by :func:`log_z_summary`): particles
from the reference, the next ``beta`` from the conditional ESS, the family's sweeps as moves.

Nothing else: states are opaque. The numeric core (:func:`exchange_step`, :class:`ReplicaSet`,
the ladder and its tuning: :func:`geometric_ladder`, :func:`swap_pass`, :func:`retune_ladder`,
:class:`LadderTuner`, :func:`initial_size`, :func:`annealed_start`) never imports PyMC or a wing;
:class:`ReplicaExchange` is the PyMC step base a family's step subclasses beside its own PyMC
glue (``ReplicaExchangeGibbs`` in ``gaussian/modes``, ``ReplicaExchangeCollapsed`` in
``binary``, ``ReplicaExchangePoisson`` in ``counts``), writing only how a chain starts
(``_first_state``) and how the cold state is written back (``_write_cold``). Wings import the
names listed here only, never the private modules. The design follows BlackJAX's
``smc/tempered.py`` (tempering written once over any kernel).

Examples
--------
A toy family: a flat prior and ``l(x) = -x^2 / 2``, so replica ``i`` is exactly
``N(0, 1 / beta_i)`` and its sweep an independent draw.

>>> import numpy as np
>>> class Toy:
...     dimension = 1
...     def sweep(self, state, beta, rng):
...         state[0] = rng.normal() / np.sqrt(beta)
...     def loglik(self, state):
...         return -0.5 * state[0] ** 2
...     def copy(self, state):
...         return list(state)
>>> betas, rng = np.array([1.0, 0.25]), np.random.default_rng(0)
>>> rs = ReplicaSet.new([[0.0], [0.0]])
>>> cold = []
>>> for _ in range(4000):
...     prob, accepted, logliks, _ = exchange_step(Toy(), rs, betas, rng)
...     cold.append(rs.states[0][0])
>>> round(float(np.var(cold)), 1)  # the cold replica's law: N(0, 1)
1.0
>>> rs.round_trips > 100  # labels travel cold -> hot -> cold
True
"""

from bnmfzoo.inference.tempering._exchange import ReplicaSet, exchange_step
from bnmfzoo.inference.tempering._ladder import (
    LadderTuner,
    annealed_start,
    geometric_ladder,
    initial_size,
    ladder_stats,
    retune_ladder,
    swap_pass,
)
from bnmfzoo.inference.tempering.interface import TemperedPath, TemperedSweep
from bnmfzoo.inference.tempering.smc import SMCRun, log_z_summary, smc, smc_runs
from bnmfzoo.inference.tempering.step import ExchangeState, ReplicaExchange

__all__ = [
    "ExchangeState",
    "LadderTuner",
    "ReplicaExchange",
    "ReplicaSet",
    "SMCRun",
    "TemperedPath",
    "TemperedSweep",
    "annealed_start",
    "exchange_step",
    "geometric_ladder",
    "initial_size",
    "ladder_stats",
    "log_z_summary",
    "retune_ladder",
    "smc",
    "smc_runs",
    "swap_pass",
]
