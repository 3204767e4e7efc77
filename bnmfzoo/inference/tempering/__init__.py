"""Replica exchange written once, for every family with an exact tempered sweep.

Replica ``i`` of a ladder ``1 = beta_0 > ... > beta_{n-1} > 0`` targets
``pi_i(x) ~ p0(x) exp(beta_i l(x))``; a family plugs in by providing its **tempered-sweep
interface**, an object with

``sweep(state, beta, rng)``
    one exact MCMC sweep of ``p0 exp(beta l)``, in place (``beta = 1``: the family's own step);
``loglik(state) -> float``
    ``l(state)``, the term multiplied by ``beta`` (the log-likelihood for the Gaussian family,
    the whole collapsed log joint for the binary one);
``copy(state) -> state``
    an independent copy (annealed start, rungs inserted while tuning);
``dimension``
    the number of terms whose fluctuations add up in ``l`` (free parameters, or latent labels):
    it sets the ladder's initial size (:func:`~bnmfzoo.inference.tempering._ladder.initial_size`).
``log_target(state, beta) -> float`` (optional)
    for a family whose tempered targets are another path from ``p0`` to the posterior than
    ``p0 exp(beta l)``: the log target at ``beta`` up to terms free of ``beta``; the swaps
    then use it (the count family: :mod:`bnmfzoo.inference.counts._tempering`).

Nothing else: states are opaque. The numeric core (:func:`exchange_step`, :class:`ReplicaSet`,
the ladder and its tuning in :mod:`~bnmfzoo.inference.tempering._ladder`) never imports PyMC or
a wing; :class:`~bnmfzoo.inference.tempering.step.ReplicaExchange` is the PyMC step base a
family's step subclasses beside its own PyMC glue (``ReplicaExchangeGibbs`` in
``gaussian/modes``, ``ReplicaExchangeCollapsed`` in ``binary``), writing only how a chain starts
(``_first_state``) and how the cold state is written back (``_write_cold``). The design follows
BlackJAX's ``smc/tempered.py`` (tempering written once over any kernel).

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
from bnmfzoo.inference.tempering._ladder import ladder_stats
from bnmfzoo.inference.tempering.step import ReplicaExchange

__all__ = ["ReplicaExchange", "ReplicaSet", "exchange_step", "ladder_stats"]
