"""A CPU budget that caps a whole :func:`bnmfzoo.inference.smc_mode_masses` call.

:func:`budget_scope` sets a deadline in process CPU seconds for the code run inside it (a
context variable, so a call in another thread is not affected), and :func:`check_budget` raises
:class:`BudgetExhausted` once the deadline has passed. The checks sit where every estimator
spends its time: each sweep, log-likelihood and copy of the family's tempered sweep
(:class:`BudgetedSweep`, which wraps ``family.tempered``: the SMC from the prior, the plain
chains, the reference fits) and each sweep of a reference path
(:class:`bnmfzoo.inference.reference_path.ReferencePath`: the per-mode SMC and the parallel
tempering's scans). A check costs one ``time.process_time()`` call, against sweeps of a
fraction of a millisecond or more, so the overrun past the budget is at most one sweep of one
particle or replica.

:class:`BudgetExhausted` derives from ``BaseException`` (as ``KeyboardInterrupt`` does), so no
``except Exception`` on the way up swallows it; :func:`bnmfzoo.inference.smc_mode_masses`
catches it and returns what was done, **not established**, with what to run next.
"""

import contextvars
import functools
import math
import time
from contextlib import contextmanager

__all__ = ["BudgetExhausted", "BudgetedSweep", "budget_scope", "budget_left", "check_budget",
           "with_budget", "nothing_established"]

_DEADLINE = contextvars.ContextVar("bnmfzoo_mass_deadline", default=None)


class BudgetExhausted(BaseException):
    """The CPU budget of the enclosing :func:`budget_scope` ran out.

    Attributes
    ----------
    budget_s : float
        The budget (CPU seconds).
    used_s : float
        CPU seconds used when the check fired.
    """

    def __init__(self, budget_s, used_s):
        self.budget_s, self.used_s = float(budget_s), float(used_s)
        super().__init__(f"the CPU budget of {self.budget_s:.0f} s ran out ({self.used_s:.0f} s "
                         "used)")


@contextmanager
def budget_scope(budget_s, start=None):
    """Cap the CPU seconds of the code inside at ``budget_s`` counted from ``start``.

    ``budget_s=None``: no cap (an enclosing scope's cap still holds). ``start`` defaults to
    now (``time.process_time()``).

    Examples
    --------
    >>> with budget_scope(1e-9, start=time.process_time() - 1.0):
    ...     try:
    ...         check_budget()
    ...     except BudgetExhausted as e:
    ...         print(e.budget_s)
    1e-09
    """
    if budget_s is None:
        yield
        return
    t0 = time.process_time() if start is None else float(start)
    token = _DEADLINE.set((t0, float(budget_s)))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_budget():
    """Raise :class:`BudgetExhausted` when the current scope's budget has run out."""
    d = _DEADLINE.get()
    if d is not None:
        used = time.process_time() - d[0]
        if used > d[1]:
            raise BudgetExhausted(d[1], used)


def budget_left():
    """CPU seconds left in the current scope (``inf`` outside any scope; may be negative).

    Examples
    --------
    >>> budget_left()
    inf
    >>> with budget_scope(10.0):
    ...     0.0 < budget_left() <= 10.0
    True
    """
    d = _DEADLINE.get()
    return math.inf if d is None else d[1] - (time.process_time() - d[0])


class BudgetedSweep:
    """A tempered sweep whose ``sweep``, ``loglik`` and ``copy`` first call :func:`check_budget`.

    Every other attribute is the wrapped sweep's, so the draws are the same, bit for bit.
    """

    def __init__(self, tempered):
        self._inner = tempered
        self.dimension = tempered.dimension  # an attribute, as the protocol's check looks

    def __getattr__(self, name):
        if name == "_inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)

    def sweep(self, state, beta, rng):
        check_budget()
        return self._inner.sweep(state, beta, rng)

    def loglik(self, state):
        check_budget()
        return self._inner.loglik(state)

    def copy(self, state):
        check_budget()
        return self._inner.copy(state)


def with_budget(fn):
    """Run ``fn`` inside :func:`budget_scope` of its ``budget_s`` keyword, from the call's start."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with budget_scope(kwargs.get("budget_s"), time.process_time()):
            return fn(*args, **kwargs)

    return wrapper


def nothing_established(err, family, stage, done, total, t0, what_next):
    """The result when the budget ran out before any mass existed: no mode, not established.

    ``stage`` names what was running, ``done`` of ``total`` of its parts had finished,
    ``what_next`` says what to run. No mass is reported (``modes`` is empty): the masses of all
    modes are unknown.
    """
    statement = (f"Masses NOT established: {err} during {stage} ({done} of {total} done), "
                 f"before any mass was estimated. {what_next}. No mode is listed: every mode's "
                 "mass is unknown, not zero.")
    return {"modes": [], "established": False, "statement": statement, "estimator": "smc",
            "log_z": math.nan, "log_z_se": math.nan, "cpu_s": time.process_time() - t0,
            "family": family.name, "final_ess": math.nan, "bridge": None, "reference": None,
            "budget_exhausted": stage, "settings": {"n_temperatures": []}}
