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

The parallel tempering's share of the budget: :func:`run_allowance` (the CPU seconds of one
mode's runs together), :func:`tempering_need` (what its round trips would need) and
:func:`cpu_short_reasons` (the verdict's reason for runs that ended on their share short of
the round trips).
"""

import contextvars
import functools
import math
import time
from contextlib import contextmanager

import numpy as np

from bnmfzoo._base.interrupts import own_code_interrupts

__all__ = ["BudgetExhausted", "BudgetedSweep", "budget_scope", "budget_left", "check_budget",
           "PathSMCSize", "PathTooDear", "tempering_start_floor", "with_budget",
           "nothing_established",
           "tempering_need", "tempering_floor", "run_allowance", "cpu_short_reasons",
           "too_dear_reasons", "sweep_seconds", "product_barrier_cap", "PRODUCT_COST_MARGIN"]

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
    """Run ``fn`` inside :func:`budget_scope` of its ``budget_s`` keyword, from the call's start.

    Ctrl-C raises in the package's (or the caller's) own code only
    (:func:`~bnmfzoo._base.interrupts.own_code_interrupts`): these routes call short compiled
    kernels many thousand times a second, and a ``KeyboardInterrupt`` raised while numba
    unboxed a kernel's generator argument crashed the process.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with own_code_interrupts(), budget_scope(kwargs.get("budget_s"), time.process_time()):
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


#: share of the CPU budget left at the start of the per-mode check that the reference-path SMC
#: of all its modes may take; the rest is the tempering's, which ends on its round trips or its
#: share of what is left (on the established Poisson matrices the path SMC took 139-272 s of
#: 700-780 left; on Reuters 200 x 100 at rank 3, 4 x 100 particles of 10 modes needed about
#: 1,200 s where 725 were left)
PATH_SMC_SHARE = 0.5
#: fewest particles per run of the reference-path SMC (the command's floor for any SMC run)
PATH_MIN_PARTICLES = 20
#: particles of the pilot SMC along a mode's path, and the factor from its steps to a run's
#: (one move per step; Reuters: 59-60 steps at 16 x 1, 63 at 32 x 2)
PATH_PILOT_PARTICLES, PATH_STEP_FACTOR = 16, 1.25
#: particles of the warm-up run before the timed pilot: the first run of a path in a process
#: pays the compilation of its local moves (p40x20 at rank 3: a cold 16-particle pilot put a
#: particle-move at 12.6 ms, 30 times the 0.42 the runs then took, and shrank 100 to 82)
PATH_WARM_PARTICLES = 4


class PathTooDear(BudgetExhausted):
    """The reference-path SMC of the modes is predicted not to fit its share of the budget."""

    def __init__(self, budget_s, used_s, why):
        super().__init__(budget_s, used_s)
        self.why = why

    def __str__(self):
        return self.why


class PathSMCSize:
    """Particles per run of each mode's reference-path SMC, sized from the budget left.

    Called as ``n_particles(k, path, position=i)`` by :func:`bnmfzoo.inference.reference_path.
    reference_log_z` once mode ``k``'s path is fitted (``i``: how many modes were estimated
    before it, :func:`~bnmfzoo.inference.reference_path.mode_order`; ``k`` when not given).
    Outside a budget it returns ``n_particles`` and runs nothing. Inside one, a pilot SMC along
    the path
    (:data:`PATH_PILOT_PARTICLES` particles, one move per step, its own random numbers, after a
    warm-up run of :data:`PATH_WARM_PARTICLES`) measures
    the steps (times :data:`PATH_STEP_FACTOR`) and the CPU seconds per particle-move; the
    modes still to do (this one included) share what is left of :data:`PATH_SMC_SHARE` of the
    budget left when this object was made, each at this mode's measured cost. The runs get
    ``min(n_particles, that share / (n_runs x n_moves x steps x cost))`` particles; below
    :data:`PATH_MIN_PARTICLES` it raises :class:`PathTooDear` naming the CPU seconds the modes
    need, before the runs start. ``log`` keeps ``(mode, steps, s per particle-move,
    particles)``.
    """

    def __init__(self, n_modes, n_runs, n_particles, n_moves, cess=0.9, seed=0,
                 share=PATH_SMC_SHARE):
        self.n_modes, self.n_runs, self.n_particles = int(n_modes), int(n_runs), int(n_particles)
        self.n_moves, self.cess, self.seed = int(n_moves), float(cess), int(seed)
        self.t0, self.pool, self.log = time.process_time(), share * budget_left(), []

    def cost(self, k, path):
        """``(steps, CPU s per particle-move)`` of mode ``k``'s path, by the pilot SMC."""
        from bnmfzoo.inference.tempering import smc

        moves = getattr(path.adapter, "moves", None)
        for n in (PATH_WARM_PARTICLES, PATH_PILOT_PARTICLES):  # the first run warms up
            if moves is not None:
                moves.reset()
            t = time.process_time()
            run = smc(path, path.draw, n, np.random.default_rng([self.seed, int(k)]),
                      cess=self.cess, n_moves=1)
        steps = max(1, run.betas.size - 1)
        return PATH_STEP_FACTOR * steps, (time.process_time() - t) / (PATH_PILOT_PARTICLES * steps)

    def __call__(self, k, path, position=None):
        if not math.isfinite(self.pool):
            return self.n_particles
        steps, per = self.cost(k, path)
        per_particle = self.n_runs * self.n_moves * steps * per  # one particle in every run
        todo = max(1, self.n_modes - int(k if position is None else position))
        left = self.pool - (time.process_time() - self.t0)
        n = int(max(left, 0.0) / (todo * per_particle))
        if n < PATH_MIN_PARTICLES:
            need = todo * PATH_MIN_PARTICLES * per_particle
            raise PathTooDear(self.pool, time.process_time() - self.t0, (
                f"the reference-path SMC of {todo} mode(s) is predicted to need {need:.0f} CPU "
                f"s at {PATH_MIN_PARTICLES} particles per run ({self.n_runs} runs x "
                f"{self.n_moves} moves x {steps:.0f} steps x {per * 1e3:.2f} ms per "
                f"particle-move, measured on mode {k}'s path), more than the {max(left, 0):.0f} "
                f"s left of its {PATH_SMC_SHARE:.0%} share of the budget; it was not started"))
        n = min(self.n_particles, n)
        self.log.append((int(k), steps, per, n))
        return n


#: share of the CPU seconds left that the modes' tempering still to do split evenly (the rest:
#: the next modes' pilot ladders and the verdict)
RUN_SHARE = 0.95


def tempering_need(trips, kept, cpu_s, target):
    """CPU seconds a mode's tempering would need for ``target`` round trips per run.

    From its runs' ``trips`` in ``kept`` kept scans at the measured rate, and the ``cpu_s``
    they took (tuning included, scaled with the kept scans); ``inf`` when no run made a trip.

    Examples
    --------
    >>> tempering_need([1, 2, 1, 0], [2000, 2000, 2000, 2000], 580.0, 15)  # 4 trips in 8,000
    8700.0
    >>> tempering_need([0, 0], [500, 500], 10.0, 15)
    inf
    """
    trips, kept = np.asarray(trips, float), np.asarray(kept, float)
    if trips.sum() <= 0 or kept.sum() <= 0:
        return math.inf
    per_run = target * kept.sum() / trips.sum()  # kept scans per run at the measured rate
    return float(cpu_s * per_run / kept.mean())


def tempering_floor(rejection, kept, cpu_s, target):
    """CPU seconds a mode's tempering needs at least for ``target`` round trips per run.

    Non-reversible parallel tempering whose local moves forget each replica's state between
    swaps makes ``tau = 1 / (2 + 2 sum_i r_i / (1 - r_i))`` round trips per scan over all its
    replicas (Syed et al. 2021), ``r_i`` the swap rejection rates of the neighbour pairs. A run
    counts a replica's trip only after it has been at ``b = 1``, so its first trips come late:
    under that model a run of ``N`` rungs reaches ``target`` trips after about
    ``(N / 2 + target) / tau`` scans (simulated index processes with independent swaps reach
    them at a median 0.96-1.18 times it). Real local moves forget more slowly, so this is a
    floor (breast SBS96, K = 4, negative binomial, one run of 6,675 kept scans: ``tau`` 1/70
    from its rejections and 1/72 measured after its first 4,000 scans; its 15th trip at scan
    3,300 against the floor's 2,330). The CPU scales as in :func:`tempering_need`.

    Examples
    --------
    >>> round(tempering_floor([0.5] * 36, [1000, 1000], 100.0, 15))  # 37 rungs, tau = 1/74
    248
    """
    r = np.asarray(rejection, float)
    kept = np.asarray(kept, float)
    if r.size == 0 or kept.sum() <= 0 or not np.all(np.isfinite(r)):
        return math.nan
    r = np.clip(r, 0.0, 1.0 - 1e-9)
    scans_per_trip = 2.0 + 2.0 * float(np.sum(r / (1.0 - r)))
    per_run = ((r.size + 1) / 2.0 + target) * scans_per_trip
    return float(cpu_s * per_run / kept.mean())


def sweep_seconds(path, betas, n_betas=5, n_sweeps=4, every=False):
    """CPU s of one sweep of ``path``: the median over ``n_betas`` rungs of ``betas``.

    ``every``: the mean over every rung instead (``n_sweeps`` timed sweeps each), what one scan
    costs per rung where the moves differ between rungs (the Poisson route adds HMC at the top
    rungs only, so the median of 5 rungs missed it: on a Reuters matrix it put the product's
    move at a quarter of its runs' cost per rung-scan, 0.45 against 1.92 ms).

    Each rung gets one warm-up sweep, then ``n_sweeps`` timed ones, from one reference draw
    and random numbers of its own (no draw of the route depends on them). The floor of
    :func:`~bnmfzoo.inference._mass_budget.tempering_start_floor` uses it: the runs' scans add
    the log-likelihoods, the swaps and any extra local move, so a sweep alone is below their
    cost per rung (the pilot SMC's CPU per sweep was not: on a 20 x 12 Poisson matrix its
    per-step overheads put it at 1.5 times the runs' cost per rung-scan).
    """
    rng = np.random.default_rng(0)
    state = path.draw(rng)
    per = []
    b_in = np.asarray(betas, float)
    b_in = b_in[b_in > 0.0]  # the sweeps of the path are at b > 0 (b = 0: exact draws)
    pick = range(len(b_in)) if every else np.linspace(0, len(b_in) - 1, n_betas).astype(int)
    for b in b_in[pick]:
        path.sweep(state, float(b), rng)
        t = time.process_time()
        for _ in range(n_sweeps):
            path.sweep(state, float(b), rng)
        per.append((time.process_time() - t) / n_sweeps)
    return float(np.mean(per) if every else np.median(per))


def tempering_start_floor(barrier, n_rungs, rung_scan_s, *, n_runs, target, tune_scans):
    """CPU seconds a mode's tempering needs at least, from its pilot ladder, before it starts.

    :func:`tempering_floor` with every neighbour pair rejecting ``barrier / (n_rungs - 1)``
    (for a given sum of rejections the even spread gives the fewest scans per trip, so this is
    lower still), plus the ``tune_scans`` of tuning and burn-in each run makes first: ``n_runs``
    x ``(tune_scans + (n_rungs / 2 + target) (2 + 2 sum r / (1 - r)))`` scans of ``n_rungs``
    rungs at ``rung_scan_s`` CPU s each. The pilot's sweep is the plain one (the runs' extra
    local moves only cost more), and the tuning adds rungs, never removes them: a floor, used
    to refuse a tempering its share of the budget cannot hold, before it spends the share.

    Examples
    --------
    >>> round(tempering_start_floor(12.0, 25, 1e-3, n_runs=4, target=10, tune_scans=340))
    ... # r = 0.5 per pair: 50 scans per trip, (12.5 + 10) x 50 + 340 = 1,465 scans per run
    146
    >>> math.isnan(tempering_start_floor(math.nan, 25, 1e-3, n_runs=4, target=10,
    ...                                  tune_scans=0))
    True
    """
    n = int(n_rungs)
    if n < 2 or not (math.isfinite(barrier) and math.isfinite(rung_scan_s)):
        return math.nan
    r = min(max(float(barrier), 0.0) / (n - 1), 1.0 - 1e-9)
    per_scan = float(n_runs) * n * float(rung_scan_s)  # one scan of every run
    # tempering_floor of runs of one kept scan that cost per_scan: the trips' scans alone
    return per_scan * float(tune_scans) + tempering_floor([r] * (n - 1), [1.0] * int(n_runs),
                                                          per_scan, target)


#: the product's pilot stops at the barrier where its floor would pass the copula's even with
#: its rung-scans this many times cheaper than timed (timing noise; the product's ladder puts
#: its rungs at other temperatures than the copula's, where it was timed)
PRODUCT_COST_MARGIN = 2.0


def product_barrier_cap(floor_s, rung_scan_s, *, n_runs, target, tune_scans, max_rungs=200,
                        margin=PRODUCT_COST_MARGIN):
    """The barrier beyond which a reference's tempering cannot start below ``floor_s``.

    The smallest ``Lambda`` whose :func:`tempering_start_floor` (``2 Lambda + 1`` rungs, as a
    pilot ladder has, at ``rung_scan_s / margin`` CPU s per rung-scan) reaches ``floor_s``: a
    pilot that finds a longer path cannot win, so it may stop there
    (:func:`~bnmfzoo.inference.tempering._ladder.pilot_ladder`'s ``max_barrier``). On ESCC
    SBS96 at K = 4 the product references' two pilots cost 68 of the tempering's first 82
    CPU s and lost to the copula's barrier of 6.4 against 25-29. ``inf`` when no barrier
    reaches it (or the inputs are not finite and positive).

    Examples
    --------
    >>> cap = product_barrier_cap(500.0, 0.1, n_runs=4, target=10, tune_scans=340)
    >>> floor = lambda lam: tempering_start_floor(lam, math.ceil(2 * lam) + 1, 0.05, n_runs=4,
    ...                                           target=10, tune_scans=340)
    >>> bool(floor(cap) >= 500.0 > floor(cap - 0.01))
    True
    >>> product_barrier_cap(math.inf, 0.1, n_runs=4, target=10, tune_scans=340)
    inf
    """
    cost = float(rung_scan_s) / float(margin)
    if not (math.isfinite(floor_s) and floor_s > 0 and math.isfinite(cost) and cost > 0):
        return math.inf

    def floor(lam):
        n = int(np.clip(math.ceil(2.0 * lam) + 1, 2, max_rungs))
        return tempering_start_floor(lam, n, cost, n_runs=n_runs, target=target,
                                     tune_scans=tune_scans)

    lo, hi = 0.0, 1e4
    if floor(hi) < floor_s:
        return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if floor(mid) < floor_s else (lo, mid)
    return hi


def run_allowance(left_s, runs_left):
    """CPU seconds one share of the tempering may use, ``None`` without a budget.

    :data:`RUN_SHARE` of ``left_s`` split evenly over the ``runs_left`` shares still to do
    (this one included): the per-mode route gives one share to each mode still to temper, and
    a mode's runs spend theirs together
    (:func:`bnmfzoo.inference.tempering._runs.run_together`).

    Examples
    --------
    >>> run_allowance(100.0, 4)
    23.75
    >>> run_allowance(math.inf, 4) is None
    True
    """
    if not math.isfinite(left_s):
        return None
    return RUN_SHARE * max(float(left_s), 0.0) / max(int(runs_left), 1)


def cpu_short_reasons(pt_out, target, min_trips):
    """The verdict's reason (a list of 0 or 1) for tempering runs that ended on their CPU share.

    A run of ``pt_out`` (:func:`~bnmfzoo.inference.reference_tempering.reference_pt_log_z`)
    that ended on its share of the budget (``stopped == "cpu"``) counts against the masses
    only below ``min_trips`` round trips, the rule for every run however it ended
    (``target``, the trips a run stops at, is a target with margin; a run ended on its CPU
    share is stopped at a time its estimate does not choose). The reason names the CPU
    seconds the modes' tempering would need for ``target`` trips per run.

    Examples
    --------
    >>> out = {"stopped": np.array([["cpu", "trips"]]), "round_trips": np.array([[12, 15]]),
    ...        "kept_scans": np.array([[600, 500]]), "cpu_s_mode": np.array([50.0])}
    >>> cpu_short_reasons(out, 15, 10)
    []
    >>> out["round_trips"][0, 0] = 4
    >>> cpu_short_reasons(out, 15, 10)[0][:46]
    '1 tempering run(s) (mode, run) [(0, 0)] ended '
    """
    short = [(int(k), int(r)) for k, r in zip(*np.nonzero(pt_out["stopped"] == "cpu"),
                                               strict=True)
             if pt_out["round_trips"][k, r] < min(target, min_trips)]
    if not short:
        return []
    modes = sorted({k for k, _ in short})
    need = sum(tempering_need(pt_out["round_trips"][k], pt_out["kept_scans"][k],
                              pt_out["cpu_s_mode"][k], target) for k in modes)
    had = sum(float(pt_out["cpu_s_mode"][k]) for k in modes)
    rejection = pt_out.get("rejection")
    floor = sum(tempering_floor(rejection[k] if rejection is not None else [],
                                pt_out["kept_scans"][k], pt_out["cpu_s_mode"][k], target)
                for k in modes)
    at_least = (f"at least about {floor:.0f} CPU s (the round-trip time of its swap rejections, "
                "start-up included)") if math.isfinite(floor) and floor > had else ""
    if math.isfinite(need) and at_least and need > floor:
        how = (f"their modes' tempering needs {at_least} and at most about {need:.0f} (its "
               f"round trips' rate so far, which counts its start-up against it; it had "
               f"{had:.0f}): raise the budget by the difference")
    elif at_least:
        how = (f"{'making none; ' if not math.isfinite(need) else ''}their modes' tempering "
               f"needs {at_least} (it had {had:.0f}): raise the budget by more than the "
               "difference")
    elif math.isfinite(need):
        how = (f"at the round trips measured, their modes' tempering needs about {need:.0f} CPU "
               f"s (it had {had:.0f}): raise the budget by the difference")
    else:
        how = "making none, so the rate is unknown: raise the budget many times"
    return [f"{len(short)} tempering run(s) (mode, run) {short} ended on their CPU share before "
            f"{min(target, min_trips)} round trips; {how}"]


def too_dear_reasons(pt_out, min_trips):
    """The verdict's reason (a list of 0 or 1) for modes whose tempering was not started.

    ``pt_out["too_dear"]`` (:func:`~bnmfzoo.inference.reference_tempering.reference_pt_log_z`)
    holds per mode ``(floor, share)``: :func:`tempering_start_floor` from the mode's pilot
    ladder for ``min_trips`` round trips per run, and the share of the budget left it would
    have had (NaN where the tempering ran).

    Examples
    --------
    >>> out = {"too_dear": np.array([[np.nan, np.nan], [1800.0, 350.0]])}
    >>> too_dear_reasons(out, 10)[0][:60]
    'the tempering of mode(s) [1] was not started: it needs at le'
    >>> too_dear_reasons({"too_dear": np.full((1, 2), np.nan)}, 10)
    []
    """
    dear = np.asarray(pt_out.get("too_dear", np.zeros((0, 2))), float)
    modes = [int(k) for k in np.flatnonzero(np.isfinite(dear[:, 0]))] if dear.size else []
    if not modes:
        return []
    floor, share = float(dear[modes, 0].sum()), float(dear[modes, 1].sum())
    return [f"the tempering of mode(s) {modes} was not started: it needs at least about "
            f"{floor:.0f} CPU s ({min_trips} round trips per run at its pilot ladder's "
            f"barrier, tuning and start-up included), more than the {share:.0f} s of the "
            f"budget left for it: raise the budget by at least {floor - share:.0f} s"]
