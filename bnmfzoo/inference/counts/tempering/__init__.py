"""Replica exchange of the count family: its two tempered paths and the PyMC step.

``_power`` (the power posterior of Poisson models, sampled exactly by the sweep's ``power=``
option), ``_rounding`` (a fraction ``beta`` of the data, randomly rounded: both families) and
``replica_exchange`` (:class:`ReplicaExchangePoisson`, on :mod:`bnmfzoo.inference.tempering`).
"""
