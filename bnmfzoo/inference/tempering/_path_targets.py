"""Stepping stones and swaps of a tempered path that is not geometric in its temperature.

A geometric path ``p0 exp(b l)`` is read through one number per state, ``l``: a swap's ratio is
``exp((b - b') (l' - l))`` and a stepping stone's term ``(b' - b) l``. A path whose targets are
given by ``log_target(state, b)`` (the negative binomial's Gamma-mixed power,
:mod:`bnmfzoo.inference.counts.tempering._power_nb`, and its reference path) needs each state's
value at the neighbouring temperatures instead: :class:`PathTargets` computes them once per
scan, :func:`stepping_stone_path` sums the increments (the stepping-stone estimator of Xie et al.
2011, with the path's own ratios).

References
----------
Xie, W., Lewis, P. O., Fan, Y., Kuo, L. & Chen, M.-H. (2011). Improving marginal likelihood
estimation for Bayesian phylogenetic model selection. Systematic Biology 60(2), 150-160.
"""

import math

import numpy as np
from scipy.special import logsumexp

__all__ = ["stepping_stone", "stepping_stone_path", "PathTargets"]


def stepping_stone(betas, logliks):
    """Stepping-stone ``log Z`` and its terms from the kept ``l'`` of every rung.

    ``betas`` is the ladder (any order, ``0`` and ``1`` included), ``logliks[t, i]`` the
    ``l'`` of the state at ``betas[i]`` in scan ``t``.

    Examples
    --------
    >>> lz, _ = stepping_stone([1.0, 0.0], [[-1.0, -1.0], [-1.0, -1.0]])
    >>> float(lz)
    -1.0
    """
    b = np.asarray(betas, float)
    ll = np.asarray(logliks, float)
    if ll.ndim != 2 or ll.shape[1] != b.size or ll.shape[0] < 1:
        raise ValueError(f"logliks must be (scans, {b.size}), got shape {ll.shape}")
    if not np.all(np.isfinite(ll)):
        raise ValueError("logliks must be finite")
    order = np.argsort(b)
    b, ll = b[order], ll[:, order]
    if b[0] != 0.0 or b[-1] != 1.0:
        raise ValueError("the ladder must run from 0 to 1")
    terms = logsumexp(np.diff(b)[None, :] * ll[:, :-1], axis=0) - math.log(ll.shape[0])
    return float(terms.sum()), terms


def stepping_stone_path(increments):
    """Stepping-stone ``log Z`` of a path that is not geometric, from its kept increments.

    ``increments[t, j]``: ``log_target(s, b') - log_target(s, b)`` of scan ``t``'s state at
    rung ``b`` towards the next rung up ``b'``, one column per rung below 1 (any order). The
    geometric form (:func:`stepping_stone`) is the case
    ``(b' - b) l'(s)``.

    Examples
    --------
    >>> lz, _ = stepping_stone_path([[-0.5, -0.5], [-0.5, -0.5]])
    >>> float(lz)
    -1.0
    """
    inc = np.asarray(increments, float)
    if inc.ndim != 2 or inc.shape[0] < 1:
        raise ValueError(f"increments must be (scans, rungs - 1), got shape {inc.shape}")
    if not np.all(np.isfinite(inc)):
        raise ValueError("increments must be finite")
    terms = logsumexp(inc, axis=0) - math.log(inc.shape[0])
    return float(terms.sum()), terms


class PathTargets:
    """One scan's ``log_target(state, b)`` of a path family, each state's terms computed once.

    A state's value at several ``b`` (its swap with either neighbour, its stepping-stone
    increment) comes from one ``log_target_batch`` of it; valid until the states move again.
    """

    def __init__(self, path):
        self.path, self.batches = path, {}

    def __call__(self, state, beta):
        at = self.batches.get(id(state))
        if at is None:
            at = self.batches[id(state)] = self.path.log_target_batch([state])
        return float(at(beta)[0])

    def increments(self, states, betas):
        """Each state's increment towards the rung above it (rungs ``1..n-1`` of ``betas``)."""
        return [self(states[i], betas[i - 1]) - self(states[i], betas[i])
                for i in range(1, len(betas))]
