"""Replica exchange written once, for every family with an exact tempered sweep."""

from bnmfzoo.inference.tempering._exchange import ReplicaSet, exchange_step
from bnmfzoo.inference.tempering._ladder import ladder_stats
from bnmfzoo.inference.tempering.step import ReplicaExchange

__all__ = ["ReplicaExchange", "ReplicaSet", "exchange_step", "ladder_stats"]
