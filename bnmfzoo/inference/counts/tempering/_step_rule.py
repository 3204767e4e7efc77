"""The HMC step size of the next SMC temperature from the population's acceptance (numeric core).

In adaptive-tempering SMC the target changes at every step, so a step size adapted by a chain
over many transitions at one target (as in parallel tempering) is not available. The step of
the move at temperature ``b_t`` is instead set from the mean Metropolis acceptance probability
of all particles' HMC transitions at the previous temperature ``b_(t-1)``, and held fixed for
every transition at ``b_t`` (:class:`bnmfzoo.inference.counts.tempering._local.RungMoves`,
``per_temperature``).

**The rule.** For HMC with a fixed number of leapfrog steps in high dimension the acceptance
rate behaves like ``a(eps) = 2 Phi(-c eps^2)`` (Beskos, Pillai, Roberts, Sanz-Serna & Stuart
2013, Theorem 3.6: ``a(l) = 2 Phi(-l^2 sqrt(Sigma) / 2)`` for ``eps = l d^(-1/4)``), so one
measured acceptance ``a`` at step ``eps`` gives ``c`` and the step that hits the target ``a*``:

``eps' = eps sqrt(Phi^-1(a* / 2) / Phi^-1(a / 2))``.

The factor is clipped to ``[MIN_FACTOR, MAX_FACTOR]`` (``a = 0`` and ``a = 1`` carry no scale).
Neighbouring temperatures have nearly the same target (the tempering steps are small by
construction), so one population's acceptance predicts the next step's well.
"""

import math

from scipy.special import ndtri

__all__ = ["next_log_step", "MIN_FACTOR", "MAX_FACTOR"]

#: bounds of the step's change from one temperature to the next
MIN_FACTOR, MAX_FACTOR = 0.25, 2.0


def next_log_step(log_eps, acceptance, target):
    """``log eps`` for the next temperature from the mean ``acceptance`` at ``exp(log_eps)``.

    Parameters
    ----------
    log_eps : float
        The log step size the acceptance was measured at.
    acceptance : float
        The mean Metropolis acceptance probability over the population's transitions; NaN
        (no transitions) keeps the step.
    target : float
        The acceptance rate aimed at, in ``(0, 1)``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(next_log_step(0.0, 0.8, 0.8), 12)
    0.0
    >>> next_log_step(0.0, 0.0, 0.8) == math.log(MIN_FACTOR)
    True
    """
    log_eps, a, target = float(log_eps), float(acceptance), float(target)
    if not math.isfinite(log_eps):
        raise ValueError(f"log_eps must be finite, got {log_eps!r}")
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must lie in (0, 1), got {target!r}")
    if math.isnan(a):
        return log_eps
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"acceptance must lie in [0, 1], got {acceptance!r}")
    lo, hi = math.log(MIN_FACTOR), math.log(MAX_FACTOR)
    if a <= 0.0:
        return log_eps + lo
    if a >= 1.0:
        return log_eps + hi
    z_target, z = float(ndtri(target / 2.0)), float(ndtri(a / 2.0))  # both negative
    return log_eps + min(max(0.5 * math.log(z_target / z), lo), hi)
