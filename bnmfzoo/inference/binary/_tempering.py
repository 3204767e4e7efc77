"""Replica exchange of the collapsed Gibbs chains (numeric core, no PyMC).

Replica ``i`` of a ladder ``1 = beta_0 > ... > beta_{n-1} > 0`` targets the collapsed joint raised
to ``beta_i``: ``p(V, Z)^beta_i`` for Beta-Dir / Dir-Beta, ``p(V, Z, C)^beta_i`` for Dir-Dir
(Lumbreras et al. 2020, Eqs. 22-24 and 53-58). Tempering the whole collapsed joint, not only the
likelihood, keeps every conditional closed-form: it is the untempered one (Eq. 25, Eqs. 59-61)
raised to ``beta`` and renormalized (``betadir_sweep`` / ``dirdir_sweep`` with ``beta``). The
hottest replicas relabel almost freely (at ``beta -> 0`` the labels are uniform) and the swaps
of :mod:`bnmfzoo.inference.tempering._ladder`, with ``l`` the collapsed log joint, carry their
states down to ``beta = 1``, whose labels are the collapsed posterior's.

:class:`TemperedCollapsed` is this family's tempered-sweep interface for the generic replica
exchange (:mod:`bnmfzoo.inference.tempering`).
"""

from dataclasses import dataclass

import numpy as np

from bnmfzoo.inference.tempering._exchange import ReplicaSet
from bnmfzoo.inference.tempering._exchange import exchange_step as _exchange

__all__ = ["exchange_step", "TemperedCollapsed"]


@dataclass(frozen=True)
class TemperedCollapsed:
    """The tempered-sweep interface of the collapsed chains (for the generic exchange).

    States are :class:`~bnmfzoo.inference.binary._core.BetaDirChain` or ``DirDirChain``
    objects; the tempered term is the whole collapsed log joint and the sweep the chain's own
    tempered sweep. ``dimension`` (the ladder's initial size) counts the latent labels, one per
    observed entry.
    """

    dimension: int = 0

    def sweep(self, state, beta, rng):
        """The chain's collapsed sweep at ``beta``, in place."""
        state.sweep(rng, beta)

    def loglik(self, state):
        """The collapsed log joint, the term multiplied by ``beta``."""
        return state.log_joint()

    def copy(self, state):
        """An independent copy of the chain (labels and count tables)."""
        return state.copy()


def exchange_step(chains, betas, rng, parity):
    """Sweep each chain at its temperature, then one swap pass of neighbours, in place.

    ``chains`` (:class:`~bnmfzoo.inference.binary._core.BetaDirChain` or ``DirDirChain``) are
    ordered like ``betas`` (coldest first); an accepted swap exchanges two list entries.

    Returns ``(prob, accepted, log_joints)``: the swap acceptance probabilities (NaN where
    none was proposed), which pairs swapped, and each position's collapsed log joint after
    the swaps.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.binary._core import BetaDirChain
    >>> rows, cols = np.array([0, 0, 1]), np.array([0, 1, 1])
    >>> v, ones, rng = np.array([1, 0, 1], np.int8), np.ones(2), np.random.default_rng(0)
    >>> chains = [BetaDirChain(rows, cols, v, 2, 2, ones, ones, ones, rng) for _ in range(2)]
    >>> prob, accepted, logj = exchange_step(chains, np.array([1.0, 0.3]), rng, 0)
    >>> prob.shape, len(logj)
    ((1,), 2)
    """
    replicas = ReplicaSet(chains, list(range(len(chains))), int(parity))  # swaps `chains`
    replicas.reset_trips()
    prob, accepted, log_joints, _ = _exchange(TemperedCollapsed(), replicas, np.asarray(betas),
                                              rng)
    return prob, accepted, log_joints
