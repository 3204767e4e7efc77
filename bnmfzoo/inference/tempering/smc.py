"""Adaptive-tempering sequential Monte Carlo over any tempered sweep (numeric core, no PyMC).

Particles start as exact draws of the reference ``p0`` (``beta = 0``) and are carried to the
posterior (``beta = 1``) through the tempered targets of a family's
:class:`~bnmfzoo.inference.tempering.TemperedSweep` (``p0 exp(beta l)``) or
:class:`~bnmfzoo.inference.tempering.TemperedPath` (``log_target(state, beta)``). Each step

1. picks the next ``beta`` so that the **conditional effective sample size** of the incremental
   weights, ``CESS = N (sum_i W_i u_i)^2 / sum_i W_i u_i^2`` with ``u_i = pi_beta'(x_i) /
   pi_beta(x_i)``, equals ``cess * N`` (bisection; Zhou, Johansen & Aston 2016). For a
   :class:`~bnmfzoo.inference.tempering.TemperedPath`, each of whose trial ``beta'`` costs a
   pass over the particles' log targets (through the family's ``log_target_batch`` where it
   has one), the search starts from the previous step's size and stops within 2 % of the
   step (:func:`next_beta_near`: about 11 trials instead of 35);
2. multiplies the weights by ``u_i`` and adds ``log sum_i W_i u_i`` to the log normalizing
   constant ``log Z = log int p0 exp(l)`` (the evidence for the likelihood families; for the
   collapsed binary family, whose ``p0`` is the uniform law of the labels, the evidence minus
   the log number of labellings);
3. resamples (systematic) when the ESS falls below ``resample_below * N``;
   For a :class:`~bnmfzoo.inference.tempering.TemperedPath` the incremental log weight is
   ``log_target(x, beta') - log_target(x, beta)``, with the log target taken as 0 at
   ``beta = 0`` (the path must start at ``p0``: ``log_target(x, beta) -> 0`` as ``beta -> 0``,
   as the count family's rounding path does);
4. moves every particle by ``n_moves`` of the family's exact sweeps at the new ``beta`` (the
   sweeps leave the tempered target invariant, so the weighted population stays a valid
   importance sample; Chopin 2002, Del Moral, Doucet & Jasra 2006) and **recomputes each
   particle's log-likelihood** (a stale one would bias the next weights).

With ``waste_free=P`` (Dau & Chopin 2022) each step resamples ``M = N / P`` ancestors and
keeps every state of their ``P``-long chains of sweeps, so the population is the ``N`` states
of the chains, not only their ends.

One run's ``log Z`` is unbiased for ``Z`` on the natural scale and slightly low on the log
scale; its error comes from independent runs (:func:`smc_runs`, :func:`log_z_summary`).

References
----------
Chopin, N. (2002). A sequential particle filter method for static models. Biometrika 89(3).
Del Moral, P., Doucet, A. & Jasra, A. (2006). Sequential Monte Carlo samplers. JRSS B 68(3).
Zhou, Y., Johansen, A. M. & Aston, J. A. D. (2016). Toward automatic model comparison: an
adaptive sequential Monte Carlo approach. J. Comput. Graph. Statist. 25(3), 701-726.
Dau, H.-D. & Chopin, N. (2022). Waste-free sequential Monte Carlo. JRSS B 84(1), 114-148.

Examples
--------
A conjugate toy: ``p0 = N(0, 1)``, ``l(x) = -x^2 / 2``, so ``pi_beta = N(0, 1 / (1 + beta))``
and ``Z = int N(x; 0, 1) exp(-x^2 / 2) dx = 2^(-1/2)``.

>>> import numpy as np
>>> class Toy:
...     dimension = 1
...     def sweep(self, state, beta, rng):
...         state[0] = rng.normal() / np.sqrt(1.0 + beta)
...     def loglik(self, state):
...         return -0.5 * state[0] ** 2
...     def copy(self, state):
...         return list(state)
>>> run = smc(Toy(), lambda rng: [rng.normal()], 2000, np.random.default_rng(0))
>>> bool(abs(run.log_z - np.log(2 ** -0.5)) < 0.05)
True
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from bnmfzoo.inference.tempering.interface import check_tempered_sweep, log_target_of

__all__ = ["SMCRun", "smc", "smc_runs", "log_z_summary", "systematic_resample", "next_beta",
           "next_beta_near", "TooManySteps"]


class TooManySteps(RuntimeError):
    """An SMC run did not reach ``beta = 1`` within its ``max_steps``."""


@dataclass
class SMCRun:
    """One SMC run: the final weighted population and its path.

    Attributes
    ----------
    states : list
        Final particles (at ``beta = 1``).
    log_weights : numpy.ndarray
        Their normalized log weights (``logsumexp == 0``).
    logliks : numpy.ndarray
        ``loglik`` of each final particle.
    log_z : float
        The run's estimate of ``log int p0 exp(l)``.
    betas : numpy.ndarray
        The adapted schedule, from 0 to 1.
    ess : numpy.ndarray
        ESS fraction after each reweighting (before resampling).
    n_resampled : int
        Steps at which the population was resampled.
    n_sweeps : int
        Family sweeps spent (prior draws not counted).
    cpu_seconds : float
        Process CPU time of the run.
    """

    states: list
    log_weights: np.ndarray
    logliks: np.ndarray
    log_z: float
    betas: np.ndarray
    ess: np.ndarray
    n_resampled: int = 0
    n_sweeps: int = 0
    cpu_seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def weights(self):
        """Normalized weights."""
        return np.exp(self.log_weights)

    @property
    def final_ess(self):
        """ESS fraction of the final population."""
        w = self.weights
        return float(1.0 / (w.size * np.sum(w ** 2)))


def systematic_resample(log_weights, n, rng):
    """``n`` ancestor indices by systematic resampling of normalized ``log_weights``.

    Examples
    --------
    >>> systematic_resample(np.log([0.5, 0.25, 0.25]), 4, np.random.default_rng(0))
    array([0, 0, 1, 2])
    """
    w = np.exp(np.asarray(log_weights, float) - logsumexp(log_weights))
    c = np.cumsum(w)
    c[-1] = 1.0
    u = (rng.random() + np.arange(n)) / n
    return np.searchsorted(c, u, side="left").astype(np.int64)


def _lse(a):
    """``log(sum(exp(a)))`` of a 1-d float array, in NumPy alone.

    SciPy's ``logsumexp`` costs about 20 times more per call on a hundred entries, and the
    bisection of :func:`next_beta` calls this about 70 times per temperature.
    """
    m = float(a.max())
    if not math.isfinite(m):
        return m if m == -math.inf or math.isnan(m) else math.inf
    return m + math.log(float(np.exp(a - m).sum()))


def _cess(log_w, inc):
    """``CESS / N`` of incremental log weights ``inc`` under normalized ``log_w``.

    Examples
    --------
    >>> lw = np.full(4, -np.log(4))
    >>> round(_cess(lw, np.zeros(4)), 12), round(_cess(lw, np.array([0.0, 0, 0, -np.inf])), 12)
    (1.0, 0.75)
    """
    a = log_w + inc
    return float(math.exp(2.0 * _lse(a) - _lse(a + inc)))


def next_beta(log_w, increment, beta, cess, tol=1e-10):
    """The next inverse temperature: ``CESS(beta') / N = cess`` (bisection), at most 1.

    ``increment(b)`` returns the incremental log weights from ``beta`` to ``b``.

    Examples
    --------
    >>> l = np.linspace(-3.0, 0.0, 100)
    >>> lw = np.full(100, -np.log(100))
    >>> b = next_beta(lw, lambda b: b * l, 0.0, 0.9)
    >>> round(_cess(lw, b * l), 6)
    0.9
    """
    if _cess(log_w, increment(1.0)) >= cess:
        return 1.0
    lo, hi = beta, 1.0
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if _cess(log_w, increment(mid)) >= cess:
            lo = mid
        else:
            hi = mid
    return lo if lo > beta else hi


def next_beta_near(log_w, increment, beta, cess, step, rel=0.02, tol=1e-10):
    """:func:`next_beta` searched from the previous step's size ``step``, to ``rel`` of the step.

    The next ``beta`` is bracketed by doubling or halving ``step`` and then bisected until the
    bracket is within ``rel`` of the step found; the lower end is returned, so the step's CESS
    is at least ``cess`` as with :func:`next_beta`, and the step is at most ``rel`` shorter.
    About 10 evaluations of ``increment`` instead of 35 (each costs a pass over every particle
    for a :class:`~bnmfzoo.inference.tempering.TemperedPath`, whose log target is no multiple of
    a cached log-likelihood). Any rule that picks the next ``beta`` from the current particles
    keeps the SMC estimate what it was (the adaptive rule already does).

    Examples
    --------
    >>> l = np.linspace(-3.0, 0.0, 100)
    >>> lw = np.full(100, -np.log(100))
    >>> b = next_beta_near(lw, lambda b: b * l, 0.0, 0.9, 0.01)
    >>> c = _cess(lw, b * l)
    >>> bool(0.9 <= c < 0.901), bool(abs(b - next_beta(lw, lambda b: b * l, 0.0, 0.9)) < 0.02 * b)
    (True, True)
    """
    def ok(b):
        return _cess(log_w, increment(b)) >= cess

    if ok(1.0):
        return 1.0
    lo, hi = beta, 1.0
    b = beta + step
    if b < 1.0 and ok(b):
        lo = b
        while beta + 2.0 * (lo - beta) < 1.0:
            b = beta + 2.0 * (lo - beta)
            if not ok(b):
                hi = b
                break
            lo = b
    else:
        hi = min(b, 1.0)
        while hi - beta > tol * max(1.0, hi):
            b = beta + 0.5 * (hi - beta)
            if ok(b):
                lo = b
                break
            hi = b
    while hi - lo > max(rel * (lo - beta), tol * max(1.0, hi)):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo if lo > beta else hi


def _check_settings(n_particles, cess, resample_below, n_moves, waste_free):
    if isinstance(n_particles, bool) or not isinstance(n_particles, (int, np.integer)) \
            or n_particles < 2:
        raise ValueError(f"n_particles must be an integer >= 2, got {n_particles!r}")
    if not (isinstance(cess, (int, float)) and 0.0 < cess < 1.0):
        raise ValueError(f"cess must lie in (0, 1), got {cess!r}")
    if not (isinstance(resample_below, (int, float)) and 0.0 <= resample_below <= 1.0):
        raise ValueError(f"resample_below must lie in [0, 1], got {resample_below!r}")
    if isinstance(n_moves, bool) or not isinstance(n_moves, (int, np.integer)) or n_moves < 1:
        raise ValueError(f"n_moves must be a positive integer, got {n_moves!r}")
    if waste_free is not None:
        if isinstance(waste_free, bool) or not isinstance(waste_free, (int, np.integer)) \
                or not 2 <= waste_free <= n_particles or n_particles % waste_free:
            raise ValueError("waste_free must be an integer >= 2 dividing n_particles, got "
                             f"{waste_free!r}")


def _loglik(family, state):
    value = float(family.loglik(state))
    if math.isnan(value) or value == math.inf:
        raise FloatingPointError(f"loglik returned {value!r}: the tempered sweep's state is "
                                 "not finite")
    return value


class _Path:
    """The tempered log target of each particle, cached at the current ``beta``.

    A path family's ``log_target_batch(states)`` (optional: ``beta ->`` the log targets of
    ``states``, valid while they are unchanged) replaces the per-state calls.
    """

    def __init__(self, family):
        self.family = family
        self.log_target = log_target_of(family)
        self.batch = getattr(family, "log_target_batch", None) if self.log_target else None

    def of(self, states):
        """``beta ->`` the log targets of ``states`` (unchanged meanwhile)."""
        f = None if self.batch is None else self.batch(states)

        def values(beta):
            if beta == 0.0:  # the reference p0 itself (a path's log target tends to 0 there)
                return np.zeros(len(states))
            with np.errstate(divide="ignore", invalid="ignore"):
                out = (np.asarray(f(beta), float) if f is not None else
                       np.array([float(self.log_target(s, beta)) for s in states]))
            if np.any(np.isnan(out)):
                raise FloatingPointError("log_target returned NaN")
            return out

        return values

    def at(self, states, logliks, beta):
        if beta == 0.0:  # the reference p0 itself (a path's log target tends to 0 there)
            return np.zeros(len(states))
        if self.log_target is None:
            return beta * logliks
        return self.of(states)(beta)


def smc(family, draw_prior, n_particles, rng, *, cess=0.9, resample_below=0.5, n_moves=5,
        waste_free=None, max_steps=100_000, schedule=None):
    """One adaptive-tempering SMC run from ``p0`` to the posterior (see the module docstring).

    Parameters
    ----------
    family : TemperedSweep
        The family's tempered sweep (``sweep``, ``loglik``, ``copy``; ``log_target`` for a
        :class:`~bnmfzoo.inference.tempering.TemperedPath`).
    draw_prior : callable
        ``draw_prior(rng)``: one exact draw of the reference ``p0`` (``beta = 0``).
    n_particles : int
        Population size ``N``.
    rng : numpy.random.Generator
    cess : float
        Target conditional ESS fraction of each step (higher: more, smaller steps).
    resample_below : float
        Resample when the ESS fraction falls below this (always, with ``waste_free``).
    n_moves : int
        Sweeps per particle after each step (per chain step with ``waste_free``).
    waste_free : int, optional
        Chain length ``P`` of waste-free SMC (Dau & Chopin 2022); ``N / P`` ancestors.
    max_steps : int
        Most tempering steps (:class:`TooManySteps`, a ``RuntimeError``, beyond).
    schedule : array-like, optional
        A fixed increasing schedule ending at 1 instead of the adaptive one. With
        ``resample_below=0`` the run is annealed importance sampling (Neal 2001): ``N``
        independent annealed runs whose final log weights are the AIS weights.

    Returns
    -------
    SMCRun
    """
    check_tempered_sweep(family)
    _check_settings(n_particles, cess, resample_below, n_moves, waste_free)
    t0 = time.process_time()
    N = int(n_particles)
    path = _Path(family)
    states = [draw_prior(rng) for _ in range(N)]
    logliks = np.array([_loglik(family, s) for s in states])
    beta = 0.0
    cur = path.at(states, logliks, beta)
    log_w = np.full(N, -math.log(N))
    fixed = None if schedule is None else _check_schedule(schedule)
    log_z, betas, ess, n_res, n_sweeps = 0.0, [0.0], [], 0, 0
    while beta < 1.0:
        if len(betas) > max_steps:
            raise TooManySteps(f"SMC did not reach beta = 1 in {max_steps} steps "
                               f"(beta = {beta:.3g})")
        if path.log_target is None:
            def increment(b, _l=logliks, _c=cur):
                with np.errstate(invalid="ignore"):
                    return np.where(np.isneginf(_l), -np.inf, b * _l - _c)
        else:
            def increment(b, _f=path.of(states), _c=cur):
                return _f(b) - _c
        if fixed is not None:
            new = fixed[len(betas) - 1]
        elif path.log_target is not None and len(betas) > 1:  # each trial: every particle
            new = next_beta_near(log_w, increment, beta, cess, betas[-1] - betas[-2])
        else:
            new = next_beta(log_w, increment, beta, cess)
        inc = increment(new)
        log_z += float(logsumexp(log_w + inc))
        log_w = log_w + inc
        log_w -= logsumexp(log_w)
        if not np.all(np.isfinite(log_w) | np.isneginf(log_w)):
            raise FloatingPointError("non-finite SMC weights")
        beta = new
        betas.append(beta)
        e = float(1.0 / (N * np.sum(np.exp(2.0 * log_w))))
        ess.append(e)
        if waste_free is not None:
            P = int(waste_free)
            anc = systematic_resample(log_w, N // P, rng)
            n_res += 1
            states, logliks = _waste_free_chains(family, [states[a] for a in anc], beta, P,
                                                 n_moves, rng)
            n_sweeps += (N // P) * (P - 1) * n_moves
            log_w = np.full(N, -math.log(N))
        else:
            if e < resample_below:
                anc = systematic_resample(log_w, N, rng)
                states = [family.copy(states[a]) for a in anc]
                log_w = np.full(N, -math.log(N))
                n_res += 1
            for s in states:
                for _ in range(n_moves):
                    family.sweep(s, beta, rng)
            n_sweeps += N * n_moves
            logliks = np.array([_loglik(family, s) for s in states])
        cur = path.at(states, logliks, beta)
    return SMCRun(states, log_w, logliks, log_z, np.asarray(betas), np.asarray(ess), n_res,
                  n_sweeps, time.process_time() - t0,
                  {"n_particles": N, "cess": cess, "n_moves": n_moves, "waste_free": waste_free})


def _check_schedule(schedule):
    b = np.asarray(schedule, float).ravel()
    if b.size < 1 or not np.all(np.diff(np.concatenate([[0.0], b])) > 0) or b[-1] != 1.0:
        raise ValueError("schedule must increase strictly from above 0 to exactly 1")
    return b


def _waste_free_chains(family, ancestors, beta, P, n_moves, rng):
    """Every state of the ``P``-long chains started at ``ancestors`` (copies), and logliks."""
    out = []
    for a in ancestors:
        s = family.copy(a)
        out.append(family.copy(s))
        for _ in range(P - 1):
            for _ in range(n_moves):
                family.sweep(s, beta, rng)
            out.append(family.copy(s))
    return out, np.array([_loglik(family, s) for s in out])


def smc_runs(family, draw_prior, n_runs, n_particles, seed, **kwargs):
    """``n_runs`` independent :func:`smc` runs (seeds spawned from ``seed``).

    Runs share nothing, so they can go to separate processes or Dask tasks.
    """
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 1:
        raise ValueError(f"n_runs must be a positive integer, got {n_runs!r}")
    seeds = np.random.SeedSequence(seed).spawn(int(n_runs))
    return [smc(family, draw_prior, n_particles, np.random.default_rng(s), **kwargs)
            for s in seeds]


def log_z_summary(runs):
    """``(mean log Z, its standard error, sd over runs)`` from independent runs.

    The standard error is ``sd / sqrt(R)``; with one run it is NaN.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> log_z_summary([SimpleNamespace(log_z=v) for v in (1.0, 2.0, 3.0)])
    (2.0, 0.5773502691896258, 1.0)
    """
    z = np.array([r.log_z for r in runs], float)
    if z.size < 2:
        return float(z.mean()), math.nan, math.nan
    sd = float(z.std(ddof=1))
    return float(z.mean()), sd / math.sqrt(z.size), sd
