"""How ``bnmfzoo masses`` spends its CPU budget.

The route per family, the pilot that sizes the SMC runs and the second estimator, and the
large route's refusal.

The command itself (reading, printing, the JSON line) is :mod:`bnmfzoo._cli.masses`.
"""

import json
import math
import time

import numpy as np

#: tempering steps of one run per square root of the dimension (cess 0.9; 6.6 on CCLE rank 3)
STEPS_PER_ROOT_DIM = 7.0


#: share of the pilot's sweeps for the SMC from the prior on the ``reference_pt`` route
PT_PRIOR_SHARE = 0.12


#: particles per run the SMC from the prior should keep on the ``reference_pt`` route (it only
#: finds modes, so its runs fall to :data:`PT_PRIOR_MIN_RUNS` and its share rises to
#: :data:`PT_PRIOR_MAX_SHARE` to reach them): Reuters 200 x 100 at rank 3 had 64 per run x 2
#: sweeps, and each of its 4 runs ended in a "mode" of its own (runs' log Z 83 nats apart);
#: the two established Poisson matrices had 362-423 per run, every run in the one mode; the
#: Gaussian route's floor (:data:`REF_MIN_PARTICLES`) is the same 200
PT_PRIOR_MIN_PARTICLES = 200


#: fewest runs of the SMC from the prior (two runs still give its log Z a spread)
PT_PRIOR_MIN_RUNS = 2


#: most of the pilot's sweeps the SMC from the prior may take on the ``reference_pt`` route:
#: ALL/AML 100 x 38 at rank 3 spent 37 % (330 of 900 s) on 4 x 61 particles, and the tempering
#: of its one mode then ran out; the per-mode estimators need the rest (the tempering is sized
#: from what is left, ``POISSON_ROUTE["pt_trips"]``)
PT_PRIOR_MAX_SHARE = 0.35


#: tempering steps of a reference-path run per step the pilot expects of a run from the prior
#: (its measured steps x 1.25; measured: CCLE rank 3, 147 of 331; GDSC rank 5, 205 of 606: the
#: fitted reference sits near the posterior)
REF_STEP_RATIO = 0.45


#: particles per run the SMC from the prior should keep beside the reference path, lowering the
#: sweeps per step to fit (GDSC rank 5: established with 229 x 2; 110 x 4 left its runs' log Z
#: 3 nats apart, not established)
REF_MIN_PARTICLES = 200


#: fewest sweeps per step the fall towards :data:`REF_MIN_PARTICLES` reaches while both
#: estimators still fit the budget (it goes on towards 2 only where they do not): at equal CPU
#: per run the faces (400 x 256, rank 3) gave the runs' log Z sd 1.36 at 150 x 5 against 3.26
#: at 375 x 2, and GDSC rank 5 3.21 at 100 x 4 against 3.63 at 200 x 2; at ``--budget 300``
#: the faces fell to 279 x 2 and were refused (sd 3.70); GDSC rank 5 at 900 s: 5 x 165, sd 1.26,
#: established (was 4 x 216, sd 1.56) (``docs/results/masses_copula_reference_3.md`` section
#: 43, ``masses_gaussian_check.md`` section 44)
REF_MIN_MOVES = 5


#: ``--check auto`` for Poisson models with constant prior rates: two per-mode estimators
#: along the reference path with the exact local moves (established breast SBS96 K = 4 in
#: 729 CPU s; ``docs/results/masses_default_route.md``); other families: the library's auto
#: ``pt_trips``: each tempering run ends at 15 round trips (the verdict needs 10,
#: ``_mass_verdict.MIN_ROUND_TRIPS``; 1.5 x for margin) or on its share of the budget left, the
#: 2,500 scans being a cap (at a fixed 2,500 the established matrices made 68-89 trips per run
#: and ALL/AML's one mode did not fit in the 417 s left)
#: The fit chains keep 1,000 draws each (the other routes 500): the copula fitted to 4 x 1,000
#: draws, with :data:`~bnmfzoo.inference.counts.tempering._reference_poisson.
#: POISSON_COPULA_FACTORS` factors, has a lower barrier (on a 96 x 214 SBS96 catalogue at K = 4
#: the command took 750 CPU s against 880, ``docs/results/masses_copula_reference_2.md``
#: section 27)
POISSON_ROUTE = {"check": "reference_pt", "pt_local": "sweep+shear+rescale+hmc", "pt_leap": 20,
                 "pt_scans": 2500, "moves": 2, "pt_trips": 15, "bridge_draws": 1000}
#: ``--check auto`` for negative-binomial models with constant prior rates: the same two
#: per-mode estimators along the reference path of the Gamma-mixed power path
#: (:mod:`bnmfzoo.inference.counts.tempering._reference_nb`); the local move is the exact NB
#: sweep with the group moves. HMC of the rung at ``b >= 0.7`` (``--pt-local sweep+hmc``,
#: :mod:`bnmfzoo.inference.counts.tempering._hmc_nb`) made no more round trips per scan on
#: breast SBS96 at K = 4 and cost 1.4 times as much per scan, so it is not the default
#: (``docs/results/masses_nb_route_2.md`` section 15). Its runs' first round trips come late (a
#: replica's first trip needs about ``N / 2`` rungs' worth of start-up, ``_mass_budget.
#: tempering_floor``): on breast SBS96 at K = 4 one run's 10th trip came at kept scan 2,900,
#: so the cap on kept scans is 8,000, not the Poisson route's 2,500 (section 16)
NB_ROUTE = dict(POISSON_ROUTE, pt_local="sweep", pt_leap=10, pt_scans=8000, bridge_draws=500)
#: ``--check auto`` for Beta-Dir (binary) models: the Poisson route's two per-mode estimators
#: along the reference path, with the plain sweep as the local move. On parliament (130 x
#: 130, K = 2) it was established in 267 CPU s (every run's 15 round trips in 675-950 kept
#: scans over 15-16 rungs, barrier 6.7-6.9), where the reference check route (the SMC from
#: the prior giving the masses) took 671 s and was refused when its pilot was timed beside
#: another job (2 sweeps per step, its runs' log Z sd 2.93 nats)
#: (``docs/results/masses_copula_reference_3.md`` section 41). The exponential-Gaussian
#: models keep the reference check: on CCLE IC50 at rank 3 this route's tempering met a
#: barrier of 25.5 over 54 rungs and made 1-5 round trips per run in 2,500 kept scans
BETA_DIR_ROUTE = dict(POISSON_ROUTE, pt_local="sweep", pt_leap=10, bridge_draws=500)


#: ``--check auto`` for models with the library's reference check (exponential Gaussian): the
#: sweeps per step start at 10 (falling until the SMC from the prior keeps
#: :data:`REF_MIN_PARTICLES` per run, down to :data:`REF_MIN_MOVES` while both estimators fit). At
#: equal CPU per run, 10 sweeps gave the runs' log Z a smaller spread or bias than fewer sweeps
#: and more particles: the faces (400 x 256, rank 3) 75 x 10 sd 1.51 against 375 x 2 sd 3.26, and
#: 150 x 10 sd 1.29 (mean within 0.5 nat of the reference path's total) against 375 x 5 sd 2.08 (2
#: nats low); GDSC rank 5 40 x 10 sd 1.74 against 100 x 4 sd 3.21 and 200 x 2 sd 3.63 (7 nats
#: low). The two faces seeds refused at 5 sweeps (sd 2.26, 2.20) were established at 10 (sd 1.12,
#: 0.48) (``docs/results/masses_copula_reference_3.md`` section 43)
REFERENCE_CHECK_ROUTE = {"moves": 10}


#: the route settings when neither ``--check`` nor the option is given
ROUTE_DEFAULTS = {"pt_local": "sweep", "pt_leap": 10, "pt_scans": 500, "moves": 5,
                  "pt_trips": None, "runs": 4, "bridge_draws": 500}


def _route(model, a):
    """Resolve ``--check auto`` and the route options not given (``None``) in place of ``a``.

    ``auto``: :data:`POISSON_ROUTE` / :data:`NB_ROUTE` where the count family's reference
    path exists (constant prior rates), :data:`BETA_DIR_ROUTE` for Beta-Dir models, else the
    library's ``"auto"``: the reference path check for exponential-Gaussian models, with
    :data:`REFERENCE_CHECK_ROUTE`.
    """
    defaults = dict(ROUTE_DEFAULTS)
    if a.check == "auto":
        from bnmfzoo.inference.reference_path import reference_adapter
        from bnmfzoo.inference.smc_masses import family_of_model

        fam = family_of_model(model)
        route = {"poisson": POISSON_ROUTE, "negative_binomial": NB_ROUTE,
                 "beta_dir": BETA_DIR_ROUTE}.get(fam.name)
        try:
            if route is None:  # the library's reference check (exponential-Gaussian models)
                reference_adapter(fam)
                defaults.update(REFERENCE_CHECK_ROUTE)
            else:
                reference_adapter(fam, route["pt_local"], route["pt_leap"])
                defaults.update(route)
                a.check = "reference_pt"
        except ValueError:
            pass
    for k, v in defaults.items():
        if k != "check" and getattr(a, k) is None:
            setattr(a, k, v)


def _num(x):
    """A JSON number, or null when not finite (strict JSON has no NaN)."""
    return float(x) if math.isfinite(x) else None


#: particles of the pilot's short SMC, and its tempering steps' factor to the full run's (an
#: SMC of 16 particles and 1 sweep per step took 173 / 47 steps where 100 particles x 5
#: sweeps took 205 / 60: a 60 x 40 Gaussian at rank 3 and a 50 x 30 binary matrix at rank 2)
PILOT_PARTICLES, PILOT_STEP_FACTOR = 16, 1.25


class _CountedSweep:
    """A tempered sweep that counts its sweeps and their CPU s (the pilot's short SMC)."""

    def __init__(self, tempered):
        self._t, self.n, self.dimension, self.cpu = tempered, 0, tempered.dimension, 0.0

    def __getattr__(self, name):
        if name == "_t":
            raise AttributeError(name)
        return getattr(self._t, name)

    def sweep(self, state, beta, rng):
        self.n += 1
        t0 = time.process_time()
        try:
            return self._t.sweep(state, beta, rng)
        finally:
            self.cpu += time.process_time() - t0

    def loglik(self, state):
        return self._t.loglik(state)

    def copy(self, state):
        return self._t.copy(state)


def _measured_steps(fam, per_sweep, moves, budget, guess):
    """``(steps, CPU s per particle-sweep, CPU s per sweep)`` of the SMC from the prior.

    A short SMC (:data:`PILOT_PARTICLES` particles, one sweep per step) gives the number of
    steps (times :data:`PILOT_STEP_FACTOR`), the mean CPU of its sweeps (timed one by one: the
    sweeps at the temperatures the SMC visits) and the per-particle overhead of a step (log-
    likelihood, copies, weights: its CPU less the sweeps'), spread over the ``moves`` sweeps.
    The guess from the dimension (``guess`` steps) was 1.7 times too few on a 60 x 40
    Gaussian matrix at rank 3 (the budget ran out in the SMC from the prior) and 4.5 times too
    many on a 50 x 30 binary one; on the negative binomial's rounding path a sweep at
    ``beta = 0.7`` (``per_sweep``) costs 1.6-2.3 times the path's mean sweep (the rounded counts
    are small for most of the path), so timing it there under-filled the budget by as much.
    Falls back to ``(guess, per_sweep, per_sweep)`` when the short SMC would take more than
    5 % of ``budget`` by the guess; when it runs past 5 % all the same, the steps it did
    (times the factor; at least ``guess``) are a lower bound, used as the steps, and the sweep
    stays ``per_sweep`` (the sweeps done are the path's cheap start): on breast SBS96 with the
    negative binomial model the guess was 152 steps and a run took 400-800. Before it, an
    untimed SMC of 2 particles (at most 1 % of ``budget``, 2 s) compiles the SMC's kernels: on
    a cold compile cache the timed run's per-step overhead was 1.4 times the warm one's, and a
    25 x 10 Gaussian matrix got 805 particles per run where a warm cache gave 1,331.
    """
    from bnmfzoo.inference._mass_budget import BudgetedSweep, BudgetExhausted, budget_scope
    from bnmfzoo.inference.tempering.smc import smc

    if 2 * PILOT_PARTICLES * guess * per_sweep > 0.05 * budget:
        return guess, per_sweep, per_sweep
    _compile_smc(fam, budget)
    counted = _CountedSweep(BudgetedSweep(fam.tempered))
    t0 = time.process_time()
    try:
        with budget_scope(0.05 * budget):
            run = smc(counted, fam.draw_prior, PILOT_PARTICLES, np.random.default_rng(1),
                      n_moves=1)
    except BudgetExhausted:
        used = time.process_time() - t0
        done = max(1.0, counted.n / PILOT_PARTICLES)
        overhead = max(0.0, used / (PILOT_PARTICLES * done) - per_sweep)
        return (max(guess, PILOT_STEP_FACTOR * done), per_sweep + overhead / max(moves, 1),
                per_sweep)
    steps = max(1, len(run.betas) - 1)
    sweep = counted.cpu / max(counted.n, 1)
    overhead = max(0.0, (time.process_time() - t0 - counted.cpu) / (PILOT_PARTICLES * steps))
    return PILOT_STEP_FACTOR * steps, sweep + overhead / max(moves, 1), sweep


def _compile_smc(fam, budget):
    """A few untimed steps of an SMC of 2 particles: they compile its kernels on a cold cache.

    At most 1 % of ``budget`` or 2 CPU s (:func:`_measured_steps` times the next SMC).
    """
    from bnmfzoo.inference._mass_budget import BudgetedSweep, BudgetExhausted, budget_scope
    from bnmfzoo.inference.tempering.smc import smc

    try:
        with budget_scope(min(0.01 * budget, 2.0)):
            smc(BudgetedSweep(fam.tempered), fam.draw_prior, 2, np.random.default_rng(2),
                n_moves=1)
    except BudgetExhausted:
        pass


def _reference_sweep_cost(fam, s, rng):
    """CPU s of one reference-path sweep at ``beta = 0.5`` (``None``: no reference path).

    A rough reference fitted to 8 sweeps from ``s``, timed for 0.2 s after one untimed sweep:
    on a cold compile cache the first sweep compiles the path's kernels, and timing it made one
    sweep of a 30 x 12 Gaussian matrix cost 326 ms instead of 0.09, so the route refused the
    default budget (0 particles) on a fresh cache and ran on a warm one.
    """
    from bnmfzoo.inference.reference_path import reference_adapter

    try:
        ad = reference_adapter(fam)
    except ValueError:
        return None
    draws, K = [], np.shape(fam.factors(s)[0])[1]  # the count adapters have no ``K``
    for _ in range(8):
        fam.tempered.sweep(s, 1.0, rng)
        draws.append(ad.draws(s, np.arange(K)))
    q, s = ad.fit(np.array(draws), 2.0), ad.copy(s)
    ad.sweep(q, s, 0.5, rng)  # compiles on a cold cache: not timed
    t0, n = time.process_time(), 0
    while time.process_time() - t0 < 0.2 or n < 3:
        ad.sweep(q, s, 0.5, rng)
        n += 1
    return (time.process_time() - t0) / n


def _prior_smc_size(sweeps, moves, runs, fewer_runs):
    """``(particles per run, runs, share)`` of the SMC from the prior on ``reference_pt``.

    From ``sweeps``: the particle-sweeps per tempering step 80 % of the budget buys.

    The rule: :data:`PT_PRIOR_SHARE` of them; below :data:`PT_PRIOR_MIN_PARTICLES` per run the
    runs fall to :data:`PT_PRIOR_MIN_RUNS` (when ``fewer_runs``: ``--runs`` not given), then
    the share rises towards :data:`PT_PRIOR_MAX_SHARE` to reach them. This SMC only finds
    modes (the masses come from the per-mode estimators), so fewer, larger runs are worth
    more than many small ones that each collapse into a mode of their own.

    Examples
    --------
    >>> _prior_smc_size(20000.0, 2, 4, True)  # plenty: 12 % gives 300 per run
    (300, 4, 0.12)
    >>> _prior_smc_size(2000.0, 2, 4, True)  # 2 runs x 200 at 40 %: capped at 35 %
    (175, 2, 0.35)
    """
    def per_run(share, r):
        return int(share * sweeps / (r * moves))

    share = PT_PRIOR_SHARE
    if per_run(share, runs) < PT_PRIOR_MIN_PARTICLES and fewer_runs:
        runs = min(runs, PT_PRIOR_MIN_RUNS)
    if per_run(share, runs) < PT_PRIOR_MIN_PARTICLES:
        share = min(PT_PRIOR_MAX_SHARE, PT_PRIOR_MIN_PARTICLES * runs * moves / sweeps)
    return per_run(share, runs), runs, share


#: the negative binomial route's spread rule: :data:`SPREAD_RUNS` short SMC runs from the
#: prior (:data:`PILOT_PARTICLES` particles, one sweep per step); a run's log Z should come
#: within :data:`SPREAD_SD` nat (its low bias is about half its variance, and the bridge's
#: agreement allows 0.5 nat beyond the errors); the need is a :data:`SPREAD_LEVEL` lower
#: confidence bound. Measured at 16 particles x 1 sweep: the 50 x 25 Gamma-Poisson matrix at
#: rank 3 (established at the default budget before the bridge's overlap rule) sd 1.8 nats over 8
#: runs; breast SBS96 K = 4
#: (not established: its runs 12 nats apart at 28 particles x 5 sweeps) sd 29 over 4 runs
SPREAD_RUNS, SPREAD_SD, SPREAD_LEVEL = 4, 1.0, 0.975


def _spread_runs(fam, budget):
    """The log Z of :data:`SPREAD_RUNS` short SMC runs from the prior, or ``None``.

    ``None`` when they do not finish within 10 % of ``budget`` or a log Z is not finite.
    """
    from bnmfzoo.inference._mass_budget import BudgetedSweep, BudgetExhausted, budget_scope
    from bnmfzoo.inference.tempering.smc import smc

    z = []
    try:
        with budget_scope(0.1 * budget):
            for i in range(SPREAD_RUNS):
                z.append(smc(BudgetedSweep(fam.tempered), fam.draw_prior, PILOT_PARTICLES,
                             np.random.default_rng(100 + i), n_moves=1).log_z)
    except BudgetExhausted:
        return None
    z = np.array(z, float)
    return z if np.all(np.isfinite(z)) else None


def spread_need(log_z, particles, moves):
    """``(at least, about)`` particles per run the log Z spread of short runs asks for.

    ``log_z`` of runs of ``particles`` particles and one sweep per step; a run of ``P``
    particles has a log Z variance ``sigma^2 / P`` (Del Moral, Doucet & Jasra 2006), and
    ``moves`` sweeps per step are counted as at most ``moves`` times the particles (they
    decorrelate the particles at best as fresh ones would), so the need for a run within
    :data:`SPREAD_SD` nat is ``particles s^2 / (moves SPREAD_SD^2)``; "at least" replaces
    ``s^2`` by its :data:`SPREAD_LEVEL` lower confidence bound (chi-square, ``R - 1``
    degrees of freedom).

    Examples
    --------
    >>> low, about = spread_need([0.0, 2.0, 4.0, 6.0], 16, 5)  # s^2 = 20/3
    >>> round(about, 2), round(low, 2)
    (21.33, 6.85)
    """
    from scipy.stats import chi2

    z = np.asarray(log_z, float)
    dof = z.size - 1
    s2 = float(np.var(z, ddof=1))
    about = particles * s2 / (moves * SPREAD_SD ** 2)
    return about * dof / float(chi2.ppf(SPREAD_LEVEL, dof)), about


def _pilot(model, budget, runs, moves, check_runs, check="bridge", ref_size=(4, 100),
           fewer_moves=False, sizes=None):
    """``(particles, check_refine, sweep s, budget for 20 particles, moves)`` for 80 % of it.

    The tuple fills about 80 % of ``budget``.

    The tempering steps of a run are expected at ``STEPS_PER_ROOT_DIM * sqrt(dimension)``
    (the log-likelihood's sd grows like the root of the dimension; measured 261 steps on CCLE
    rank 3, dimension 1585). The AIS check gets 40 % of the budget, the SMC the rest; the
    bridge check (a few thousand sweeps per mode) 10 %. With ``reference_pt`` the SMC from
    the prior only finds modes and gets ``PT_PRIOR_SHARE`` (the per-mode SMC and tempering
    the rest: on breast SBS96 K = 4, 62 particles x 2 moves, as in the established run).
    The reference-path check (``auto`` or ``reference`` where the family has one) gets its
    predicted cost instead of 10 %: ``ref_size`` = (runs, particles) of one mode's path,
    ``moves`` sweeps per step, :data:`REF_STEP_RATIO` times the steps, each sweep timed on a
    rough reference (GDSC rank 5: about 1 ms against the plain sweep's 0.34; at 10 % the check
    ran out of budget after the SMC from the prior had taken 542 of 900 s). With
    ``fewer_moves`` (``--moves`` not given) the sweeps per step fall from ``moves`` towards 2
    until the SMC from the prior gets :data:`REF_MIN_PARTICLES` per run, stopping at
    :data:`REF_MIN_MOVES` where both estimators fit the budget (both use the same moves).
    With ``check="reference_pt"`` the SMC from the prior's steps are measured too
    (:func:`_measured_steps`) and its particles and runs follow
    :func:`_prior_smc_size`; the runs it chose go in ``sizes["runs"]`` (a dict, when given;
    ``fewer_runs`` there lets the runs fall). ``sizes["steps"]``, whenever ``sizes`` is
    given: the tempering steps a run of the SMC from the prior is expected to take.
    """
    from bnmfzoo.inference.smc_masses import family_of_model

    fam = family_of_model(model)
    rng = np.random.default_rng(0)
    s = fam.draw_prior(rng)
    for b in (0.5, 1.0):
        fam.tempered.sweep(s, b, rng)
    t0 = time.process_time()
    n = 0
    while time.process_time() - t0 < 0.5 or n < 3:
        fam.tempered.sweep(s, 0.7, rng)
        n += 1
    per_sweep = (time.process_time() - t0) / n
    steps = STEPS_PER_ROOT_DIM * math.sqrt(fam.tempered.dimension)
    steps, cost, per_sweep = _measured_steps(fam, per_sweep, moves, budget, steps)  # CPU s
    # per particle-sweep in the SMC, its overhead included; the mean sweep of its path
    ref = _reference_sweep_cost(fam, s, rng) if check in ("auto", "reference") else None
    for m in range(moves, 1, -1) if ref is not None and fewer_moves else (moves,):
        cost_m = per_sweep + (cost - per_sweep) * moves / m  # the step's overhead over m
        sweeps = 0.8 * budget / (steps * cost_m)  # sweeps per tempering step in the budget
        share = 0.4 if check == "ais" else 0.1
        refine = int(min(50, share * sweeps / max(check_runs, 1)))
        smc_share = PT_PRIOR_SHARE if check == "reference_pt" else 1.0 - share
        if ref is not None:  # the SMC from the prior gets what the predicted check leaves
            check_s = max(0.08 * budget,
                          ref_size[0] * ref_size[1] * m * REF_STEP_RATIO * steps * ref)
            smc_share = max(0.0, 1.0 - check_s / (0.8 * budget))
            need = (20.0 * runs * m * steps * cost_m + check_s) / 0.8
        else:
            need = budget * 20.0 * runs * m / (smc_share * sweeps)
        particles = int(smc_share * sweeps / (runs * m))
        if particles >= REF_MIN_PARTICLES or (m <= REF_MIN_MOVES and need <= budget):
            break
    if check == "reference_pt":
        sizes = {} if sizes is None else sizes
        particles, runs, share = _prior_smc_size(sweeps, m, runs, sizes.get("fewer_runs", False))
        need = budget * 20.0 * runs * m / (PT_PRIOR_MAX_SHARE * sweeps)
        sizes.update(runs=runs, share=share, steps=steps)
    elif fam.name == "negative_binomial" and ref is None and check in ("auto", "bridge"):
        _spread_rule(fam, budget, particles, runs, m, steps * cost_m / (0.8 * smc_share))
    if sizes is not None:
        sizes["steps"] = steps
    return particles, refine, per_sweep, need, m


def _spread_rule(fam, budget, particles, runs, moves, per_particle):
    """Refuse in one line a budget whose ``particles`` per run the spread rule finds too few.

    ``per_particle``: the budget one particle per run and sweep per step takes (the pilot's
    sizing inverted). The rule (:func:`spread_need`) runs only where the SMC from the prior
    gives the masses (the negative binomial's bridge route); it is skipped when its short
    runs do not fit in 10 % of the budget.
    """
    z = _spread_runs(fam, budget)
    if z is None:
        return
    low, about = spread_need(z, PILOT_PARTICLES, moves)
    if low <= particles:
        return
    raise ValueError(
        f"--budget {budget:g} CPU s is too small for this matrix: {z.size} short SMC runs "
        f"from the prior ({PILOT_PARTICLES} particles, one sweep per step) gave log Z "
        f"{float(np.std(z, ddof=1)):.1f} nats apart (sd), so a run needs about "
        f"{math.ceil(about)} particles x {moves} sweeps per step (at least {math.ceil(low)}) "
        f"to bring its log Z within {SPREAD_SD:g} nat, where the budget gives {particles}; "
        f"it needs about {_minute(about * runs * moves * per_particle)} CPU s; run with "
        f"--budget {_minute(about * runs * moves * per_particle)}")


def _minute(seconds):
    """``seconds`` rounded up to a whole minute, as a ``--budget`` value."""
    return f"{math.ceil(seconds / 60) * 60:g}"


def _capped(caps):
    """The tempering line's note on product pilots stopped at a barrier cap (or ``""``).

    >>> print(_capped(np.array([12.34, np.nan]))[:65])
    ; the product references' pilots stopped past barrier [12.3, nan]
    >>> _capped(None), _capped(np.array([np.nan]))
    ('', '')
    """
    caps = np.asarray([] if caps is None else caps, float)
    if not np.isfinite(caps).any():
        return ""
    return (f"; the product references' pilots stopped past barrier "
            f"{np.round(caps, 1).tolist()} (their floor would pass the copula's)")


def _large(model, a, t0, per_sweep, need):
    """The large-matrix Poisson route when the measured costs choose it (else None).

    Prints its lines and the JSON, returns the exit code.

    ``need``: the CPU s the sweep route needs for 20 particles per run. The large route's
    move is ``sweep / hmc`` times cheaper but may need up to :data:`TAU_RATIO` times the
    moves, so a budget below ``need * TAU_RATIO * hmc / sweep`` fits neither route; nor does
    one below the large route's full predicted cost of one mode
    (:func:`~bnmfzoo.inference.large_route.large_route_need`: its reference-path SMC and
    ``pt_runs`` tempering runs of ``2 Lambda + 1`` rungs x the scans of 10 round trips, from
    the measured HMC move). Either is refused in one line naming the budget it would need
    (the route is not started).
    """
    from bnmfzoo.inference._mass_verdict import MIN_ROUND_TRIPS
    from bnmfzoo.inference.large_route import (
        TAU_RATIO,
        choose_route,
        large_mode_masses,
        large_route_need,
        move_costs,
    )
    from bnmfzoo.inference.smc_masses import family_of_model

    costs = move_costs(family_of_model(model), np.random.default_rng(a.seed))
    large, why = choose_route(False, costs)
    print(f"route: {why}; one latent-count sweep {per_sweep * 1e3:.2f} ms", flush=True)
    if not large:
        return None
    large_need = need * TAU_RATIO * costs["hmc"] / costs["sweep"]
    copula = bool(getattr(a, "pt_copula", False))
    full = large_route_need(family_of_model(model).tempered.dimension, costs["hmc"],
                            n_runs=a.runs, pt_runs=a.pt_runs, copula=copula)
    used = time.process_time() - t0
    if a.budget - used < max(large_need, full["total_s"]):
        if a.budget - used < large_need:
            why = f"20 particles per run need at least --budget {_minute(large_need + used)}"
        else:
            why = (f"one mode needs {full['smc_s']:.0f} s of reference-path SMC ({a.runs} "
                   f"runs x 20 particles) and {full['pt_s']:.0f} s of tempering ({a.pt_runs} "
                   f"runs x {full['rungs']} rungs x {full['scans']} scans for "
                   f"{MIN_ROUND_TRIPS} round trips each at the predicted barrier "
                   f"{full['barrier']:.1f}), so it needs at least --budget "
                   f"{_minute(full['total_s'] + used)}")
        raise ValueError(f"--budget {a.budget:g} CPU s is too small for this matrix: the "
                         f"large route's move takes {costs['hmc'] * 1e3:.2f} ms, and {why} "
                         "(or fewer --runs)")
    out = large_mode_masses(model, budget_s=a.budget - (time.process_time() - t0),
                            random_seed=a.seed, move_cost=costs["hmc"], route_note=why,
                            n_runs=a.runs, pt_runs=a.pt_runs, n_particles=a.particles,
                            copula=copula, pt_trips=a.pt_trips,
                            pt_scans=a.pt_scans if a.pt_trips else None)
    r2 = lambda v: np.round(np.asarray(v, float), 2).tolist()  # noqa: E731
    s, t, c = out["smc"], out["pt"], out.get("costs", {})
    if s is not None:
        print(f"reference-path SMC ({out['settings']['n_runs']} runs x "
              f"{out['settings']['n_particles']} particles): log Z per mode {r2(s['log_z'])} +- "
              f"{r2(s['log_z_se'])}; runs {r2(s['run_log_z'])}; temperatures "
              f"{s['n_temperatures']}; {s['cpu_s']:.1f} CPU s (fit chains {s['fit_cpu_s']:.1f}; "
              f"per mode {r2(c['smc_s_per_mode'])}; per particle-move "
              f"{np.round(c['smc_s_per_particle_move'] * 1e3, 2).tolist()} ms); restarts "
              f"{c['restarts_s']:.1f} CPU s; reference per mode {s.get('reference')}"
              + ("" if out.get("fit_draws") is None else "; fit-chain draws kept after the "
                 "start-up transients per mode " + ", ".join(
                     f"{k} of {n}" for k, n in out["fit_draws"])
                 + (", and HMC draws under the copula's mass " + ", ".join(
                     str(h) for h in out["hmc_fit_draws"]) if out.get("hmc_fit_draws")
                    else "")))
    if t is not None:
        print(f"reference-path tempering ({out['settings']['pt_runs']} runs x "
              f"{out['settings']['pt_scans']} scans): log Z per mode {r2(t['log_z'])} +- "
              f"{r2(t['log_z_se'])}; runs {r2(t['run_log_z'])}; round trips per run "
              f"{t['round_trips'].tolist()}; rungs {t['n_rungs'].tolist()}; {t['cpu_s']:.1f} CPU "
              f"s (per mode {r2(t['cpu_s_mode'])}; per rung-scan "
              f"{np.round(t['cpu_s_per_rung_scan'] * 1e3, 2).tolist()} ms); reference (fit, "
              f"pilot barrier marginal, ridge-free, widening used, its barrier) "
              f"{[f and (f[0], round(f[1], 1), round(f[2], 1), f[3], round(f[4], 1))
                  for f in t.get('reference_fit', [])]}; CPU floor from the pilot ladder and "
              f"the share of the budget left, per mode "
              f"{np.round(t.get('start_floor', np.full((1, 2), np.nan)), 1).tolist()}"
              + _capped(t.get("pilot_cap")))
    if out.get("merged_early"):
        print(f"restart groups the short fit chains showed to be copies (copy: kept), merged "
              f"before the full fit chains: {out['merged_early']}")
    print(out["statement"])
    print(json.dumps({
        "modes": [{"mass": m["mass"], "low": m["low"], "high": m["high"],
                   "estimator": m["estimator"], "mass_check": _num(m["mass_check"]),
                   "check_se": _num(m["check_se"]), "n_starts": m["n_starts"],
                   **({"bound": _num(m["bound"]), "note": m["note"]} if m["note"] else {})}
                  for m in out["modes"]],
        "cpu_s": round(time.process_time() - t0, 2), "established": bool(out["established"]),
        "route": "large", "notes": why,
        **({} if out["established"] else {"why_not": " ".join(out["statement"].split())})}))
    return 0

