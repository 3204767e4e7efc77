"""The tempered-sweep interface: what a family provides to be tempered (no PyMC, no wing).

A family's tempered sweep is any object with the members of :class:`TemperedSweep`; one whose
tempered targets follow another path from the prior to the posterior than
``p0(x) exp(beta l(x))`` (the count family's power posterior) also has the member of
:class:`TemperedPath`. Both are :class:`typing.Protocol` classes checked at run time, so
``isinstance(obj, TemperedSweep)`` says whether an object can be handed to
:func:`~bnmfzoo.inference.tempering.exchange_step` and the other functions of
:mod:`bnmfzoo.inference.tempering`, and a type checker reads the same contract.

States are opaque to the tempering core: it only passes them back to these members. The design
follows BlackJAX's ``smc/tempered.py`` (tempering written once over any kernel).

Examples
--------
A toy family: a flat prior and ``l(x) = -x^2 / 2``, so the replica at ``beta`` is exactly
``N(0, 1 / beta)`` and its sweep an independent draw.

>>> import numpy as np
>>> class Toy:
...     dimension = 1
...     def sweep(self, state, beta, rng):
...         state[0] = rng.normal() / np.sqrt(beta)
...     def loglik(self, state):
...         return -0.5 * state[0] ** 2
...     def copy(self, state):
...         return list(state)
>>> isinstance(Toy(), TemperedSweep), isinstance(Toy(), TemperedPath)
(True, False)
>>> class ToyPath(Toy):
...     def log_target(self, state, beta):
...         return beta * self.loglik(state)
>>> isinstance(ToyPath(), TemperedPath)
True
"""

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["TemperedSweep", "TemperedPath", "log_target_of", "check_tempered_sweep"]


@runtime_checkable
class TemperedSweep(Protocol):
    """A family's exact MCMC sweep at any inverse temperature ``beta`` in ``(0, 1]``.

    Replica ``i`` of a ladder ``1 = beta_0 > ... > beta_{n-1} > 0`` targets
    ``pi_i(x) ~ p0(x) exp(beta_i l(x))``.

    Attributes
    ----------
    dimension : int
        The number of terms whose fluctuations add up in ``l`` (free parameters, or latent
        labels). It sets the ladder's initial size
        (:func:`~bnmfzoo.inference.tempering.initial_size`): the swap rate between two rungs
        falls with the variance of ``l``, which grows with ``dimension``.
    """

    dimension: int

    def sweep(self, state: Any, beta: float, rng: np.random.Generator) -> None:
        """One exact MCMC sweep of ``p0 exp(beta l)``, in place.

        ``beta = 1`` is the family's own (untempered) step. The sweep must leave the tempered
        target invariant; any number of sweeps between swaps is then exact.
        """
        ...

    def loglik(self, state: Any) -> float:
        """``l(state)``: the term multiplied by ``beta``.

        The log-likelihood for the Gaussian and count families, the whole collapsed log joint
        for the binary one. Swaps of neighbours ``i, j`` are accepted with probability
        ``min(1, exp((beta_i - beta_j) (l(x_j) - l(x_i))))``.
        """
        ...

    def copy(self, state: Any) -> Any:
        """An independent copy of ``state``: nothing mutable is shared with the original.

        Used by the annealed start and when rungs are inserted while the ladder is tuned.
        """
        ...


@runtime_checkable
class TemperedPath(TemperedSweep, Protocol):
    """A tempered sweep whose targets are another path than ``p0 exp(beta l)``.

    The count family tempers along the power posterior of its latent-count augmentation; the
    swaps then use :meth:`log_target` instead of ``beta l``.
    """

    def log_target(self, state: Any, beta: float) -> float:
        """The log target at ``beta``, up to terms that do not depend on ``beta``.

        A swap of neighbours ``i, j`` is accepted with probability
        ``min(1, pi_i(x_j) pi_j(x_i) / (pi_i(x_i) pi_j(x_j)))``; at ``beta = 1`` it must equal
        ``loglik(state)`` up to such terms.
        """
        ...


def log_target_of(family):
    """``family.log_target`` when ``family`` follows a :class:`TemperedPath`, else None.

    None means the tempered targets are ``p0 exp(beta l)`` and swaps use ``beta l``.

    Examples
    --------
    >>> class Flat:
    ...     def loglik(self, state): return 0.0
    >>> log_target_of(Flat()) is None
    True
    """
    log_target = getattr(family, "log_target", None)
    return log_target if callable(log_target) else None


def check_tempered_sweep(family):
    """``family``, after checking that it has every member of :class:`TemperedSweep`.

    Raises a ``TypeError`` naming the missing members.

    Examples
    --------
    >>> class NoCopy:
    ...     dimension = 1
    ...     def sweep(self, state, beta, rng): ...
    ...     def loglik(self, state): return 0.0
    >>> check_tempered_sweep(NoCopy())
    Traceback (most recent call last):
    ...
    TypeError: a tempered sweep needs sweep, loglik, copy and dimension; NoCopy lacks copy
    """
    if not isinstance(family, TemperedSweep):
        missing = [m for m in ("sweep", "loglik", "copy", "dimension") if not hasattr(family, m)]
        raise TypeError("a tempered sweep needs sweep, loglik, copy and dimension; "
                        f"{type(family).__name__} lacks {', '.join(missing)}")
    return family
