"""Replica exchange of the collapsed Gibbs chains (numeric core, no PyMC).

Replica ``i`` of a ladder ``1 = beta_0 > ... > beta_{n-1} > 0`` targets the collapsed joint raised
to ``beta_i``: ``p(V, Z)^beta_i`` for Beta-Dir / Dir-Beta, ``p(V, Z, C)^beta_i`` for Dir-Dir
(Lumbreras et al. 2020, Eqs. 22-24 and 53-58). Tempering the whole collapsed joint, not only the
likelihood, keeps every conditional closed-form: it is the untempered one (Eq. 25, Eqs. 59-61)
raised to ``beta`` and renormalized (``betadir_sweep`` / ``dirdir_sweep`` with ``beta``). The
hottest replicas relabel almost freely (at ``beta -> 0`` the labels are uniform) and the swaps
of :mod:`bnmfzoo.inference.tempering`, with ``l`` the collapsed log joint, carry their
states down to ``beta = 1``, whose labels are the collapsed posterior's.

:class:`TemperedCollapsed` is this family's tempered-sweep interface for the generic replica
exchange (:mod:`bnmfzoo.inference.tempering`).
"""

from dataclasses import dataclass

__all__ = ["TemperedCollapsed"]


@dataclass(frozen=True)
class TemperedCollapsed:
    """The tempered-sweep interface of the collapsed chains (for the generic exchange).

    States are :class:`~bnmfzoo.inference.binary._core.BetaDirChain` or ``DirDirChain``
    objects; the tempered term is the whole collapsed log joint and the sweep the chain's own
    tempered sweep. ``dimension`` (the ladder's initial size) counts the latent labels, one per
    observed entry.

    Examples
    --------
    >>> from bnmfzoo.inference.tempering import TemperedSweep
    >>> isinstance(TemperedCollapsed(dimension=12), TemperedSweep)
    True
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
