"""Posterior masses of the modes of any matrix: tempered SMC, checked by per-mode bridge sampling.

Run with::

    nice -n 10 python -m benchmarks.speed.real_data_masses --data FILE --rank K \\
        [--model poisson|negative_binomial|exponential_gaussian|beta_dir] [--budget 900] \\
        [--runs 4] [--particles N] [--moves M] [--check bridge|ais] [--bridge-draws 500] \\
        [--prior-chains 8] [--check-runs C] [--seed 0] \\
        [--check reference_pt --pt-runs 4 --pt-scans 500 --pt-sweeps 1]

``FILE`` is any matrix file ``bnmfzoo fit`` reads (CSV/TSV with or without header and row
labels, ``.txt`` with whitespace, ``.npy``, netCDF), through the command line's own reader
(:func:`bnmfzoo._fitcli.read_matrix`; a whitespace-separated ``.txt`` it refuses, such as R's
``write.table`` layout whose header lacks the row-label column, is split on blanks here,
:func:`_read`). Without ``--model`` the family follows the data: 0/1
entries -> ``beta_dir``, non-negative integers -> ``poisson``, otherwise
``exponential_gaussian``. Both estimators run through
:func:`bnmfzoo.inference.smc_mode_masses` (SMC: ``--runs`` independent adaptive-tempering runs
of ``--particles`` particles; check, by default: per-mode bridge sampling from 4 plain chains
of ``--bridge-draws`` draws per mode, and ``--prior-chains`` plain chains from the prior looking
for modes the particles missed; ``--check ais``: ``--check-runs`` AIS runs from the prior on
the SMC's schedule cut into up to 50 steps; ``--check reference_pt``: every mode estimated by
per-mode SMC and per-mode parallel tempering along a fitted reference path, the SMC from the
prior finding modes only, :mod:`bnmfzoo.inference.reference_tempering`). Without
``--particles`` a pilot sweep sets the
particles (and the AIS steps) so that all is expected to use about 80 % of ``--budget`` CPU
seconds.

**The default route** (``--check auto``), per family: Poisson with constant prior rates ->
``reference_pt`` with the exact local moves (``sweep+shear+rescale+hmc``, 20 leapfrog steps,
2,500 kept scans, 2 sweeps per SMC step, the SMC from the prior given 12 % of the pilot's
sweeps: it only finds modes); exponential-Gaussian and Beta-Dir -> the reference path against
the SMC from the prior; negative binomial -> the bridge. ``--budget`` caps the whole command
(CPU seconds, reading and pilot included): when it runs out, the JSON says
``"established": false`` with ``why_not`` (what ran, what to run next), and lists no mode when
the SMC from the prior itself did not finish. A mode the reference-path SMC bounds below 0.1 %
gets no second estimator and carries ``"note": "below 1 %: ..."`` and its ``"bound"``. Results
of the default command on unseen matrices: ``docs/results/masses_default_route.md``.

Prints a few human lines, then as its **last line one JSON object**::

    {"modes": [{"mass": m, "low": l, "high": h, "estimator": "smc", "mass_check": m2,
                "check_se": s2}, ...], "cpu_s": t, "established": true|false}

Bad input (a rank the data do not allow, an all-missing row or column, a budget too small)
prints one line ``error: ...`` and the JSON ``{"modes": [], "cpu_s": t, "established": false,
"error": "..."}``: no mass is printed as if it were one. Results in
``docs/results/masses_smc_bridge.md`` (sections 3.10-3.13).
"""

import argparse
import json
import math
import sys
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)

MODELS = ("poisson", "negative_binomial", "exponential_gaussian", "beta_dir")
#: tempering steps of one run per square root of the dimension (cess 0.9; 6.6 on CCLE rank 3)
STEPS_PER_ROOT_DIM = 7.0
#: share of the pilot's sweeps for the SMC from the prior on the ``reference_pt`` route
PT_PRIOR_SHARE = 0.12
#: tempering steps of a reference-path run per step the pilot expects of a run from the prior
#: (its measured steps x 1.25; measured: CCLE rank 3, 147 of 331; GDSC rank 5, 205 of 606: the
#: fitted reference sits near the posterior)
REF_STEP_RATIO = 0.45
#: particles per run the SMC from the prior should keep beside the reference path, lowering the
#: sweeps per step to fit (GDSC rank 5: established with 229 x 2; 110 x 4 left its runs' log Z
#: 3 nats apart, not established)
REF_MIN_PARTICLES = 200
#: ``--check auto`` for Poisson models with constant prior rates: two per-mode estimators
#: along the reference path with the exact local moves (established breast SBS96 K = 4 in
#: 729 CPU s; ``docs/results/masses_default_route.md``); other families: the library's auto
POISSON_ROUTE = {"check": "reference_pt", "pt_local": "sweep+shear+rescale+hmc", "pt_leap": 20,
                 "pt_scans": 2500, "moves": 2}
#: the route settings when neither ``--check`` nor the option is given
ROUTE_DEFAULTS = {"pt_local": "sweep", "pt_leap": 10, "pt_scans": 500, "moves": 5}


def _route(model, a):
    """Resolve ``--check auto`` and the route options not given (``None``) in place of ``a``.

    ``auto``: :data:`POISSON_ROUTE` where the Poisson reference path with local moves exists
    (constant prior rates), else the library's ``"auto"`` (the reference path for
    exponential-Gaussian and Beta-Dir models, the bridge for negative binomial ones).
    """
    defaults = dict(ROUTE_DEFAULTS)
    if a.check == "auto":
        from bnmfzoo.inference.reference_path import reference_adapter
        from bnmfzoo.inference.smc_masses import family_of_model

        fam = family_of_model(model)
        try:
            if fam.name != "poisson":
                raise ValueError(fam.name)
            reference_adapter(fam, POISSON_ROUTE["pt_local"], POISSON_ROUTE["pt_leap"])
            defaults.update(POISSON_ROUTE)
            a.check = "reference_pt"
        except ValueError:
            pass
    for k, v in defaults.items():
        if k != "check" and getattr(a, k) is None:
            setattr(a, k, v)


def _num(x):
    """A JSON number, or null when not finite (strict JSON has no NaN)."""
    return float(x) if math.isfinite(x) else None


#: the estimator of a mode only the second estimator's plain chains from the prior found
UNREACHED = "smc_not_reached"
UNREACHED_NOTE = ("no SMC particle reached this mode, so its SMC mass is unknown (null, not "
                  "zero; interval [0, 1]); mass_check is the second estimator's")


def _share(x):
    """A mass as a JSON number in [0, 1] (rounding can put a sole mode's at 1 + 1e-16), or
    null when not finite."""
    return _num(min(1.0, max(0.0, float(x)))) if math.isfinite(x) else None


def _read(path):
    """The matrix ``bnmfzoo fit`` reads from ``path``; a whitespace-separated text file the
    command line's reader refuses (a header one field short, as R's ``write.table`` writes it)
    is split on runs of blanks,
    with an optional header row and row-label column (non-numeric) dropped."""
    from pathlib import Path

    from bnmfzoo._fitcli import read_matrix

    try:
        return np.asarray(read_matrix(path).values, float)
    except ValueError:
        p = Path(path)
        if p.suffix.lower() not in (".txt", ".dat", ".tsv", ""):
            raise
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a text matrix (not UTF-8 text)") from None
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        if any(c in first for c in ",;\t"):
            raise
    rows = [ln.split() for ln in text.splitlines() if ln.strip()]

    def num(c):
        c = c.strip().lower()
        if c in ("na", "nan", "n/a", "null", "none", "-nan"):
            return math.nan
        return float(c)

    def numeric(cells):
        try:
            [num(c) for c in cells]
        except ValueError:
            return False
        return True

    if rows and not numeric(rows[0]) and len(rows) > 1:
        rows = rows[1:]  # header row (it may lack the row-label column's name)
    if rows and not all(numeric(r[:1]) for r in rows):
        rows = [r[1:] for r in rows]
    width = {len(r) for r in rows}
    if len(width) != 1:
        raise ValueError(f"{path}: rows of different lengths ({sorted(width)} fields)")
    try:
        return np.array([[num(c) for c in r] for r in rows], float)
    except ValueError as err:
        raise ValueError(f"{path}: not a numeric matrix ({err})") from None


def _guess_model(X):
    v = X[np.isfinite(X)]
    if v.size and np.all((v == 0) | (v == 1)):
        return "beta_dir"
    if v.size and np.all(v >= 0) and np.all(v == np.round(v)):
        return "poisson"
    return "exponential_gaussian"


def _check_data(X, rank):
    D, N = X.shape
    inf = np.argwhere(np.isinf(X))
    if inf.size:
        raise ValueError(f"the data have an infinite entry (row {int(inf[0, 0])}, column "
                         f"{int(inf[0, 1])}{' and others' if len(inf) > 1 else ''}): only "
                         "finite numbers and missing values (NaN) are allowed")
    if isinstance(rank, bool) or rank < 1 or rank > min(D, N):
        raise ValueError(f"--rank {rank} is not possible for a {D} x {N} matrix: the rank must "
                         f"lie in 1..{min(D, N)}")
    obs = np.isfinite(X)
    for axis, what in ((1, "row"), (0, "column")):
        empty = np.flatnonzero(~obs.any(axis=axis))
        if empty.size:
            raise ValueError(f"the data have an all-missing {what} ({what} {int(empty[0])}"
                             f"{' and others' if empty.size > 1 else ''}): drop it first")


def _build(X, rank, model):
    from bnmfzoo.models import beta_dir, exponential_gaussian, negative_binomial, poisson

    if model in ("poisson", "negative_binomial"):
        v = X[np.isfinite(X)]
        if np.any(v < 0) or np.any(v != np.round(v)):
            raise ValueError(f"--model {model} needs non-negative integer counts")
        fn = poisson if model == "poisson" else negative_binomial
        return fn(np.where(np.isfinite(X), X, np.nan), rank)
    if model == "beta_dir":
        v = X[np.isfinite(X)]
        if np.any((v != 0) & (v != 1)):
            raise ValueError("--model beta_dir needs binary data (0/1 entries, NaN for missing)")
        return beta_dir(X, rank)
    return exponential_gaussian(X, rank)


#: particles of the pilot's short SMC, and its tempering steps' factor to the full run's (an
#: SMC of 16 particles and 1 sweep per step took 173 / 47 steps where 100 particles x 5
#: sweeps took 205 / 60: a 60 x 40 Gaussian at rank 3 and a 50 x 30 binary matrix at rank 2)
PILOT_PARTICLES, PILOT_STEP_FACTOR = 16, 1.25


class _CountedSweep:
    """A tempered sweep that counts its sweeps (the pilot's short SMC)."""

    def __init__(self, tempered):
        self._t, self.n, self.dimension = tempered, 0, tempered.dimension

    def __getattr__(self, name):
        if name == "_t":
            raise AttributeError(name)
        return getattr(self._t, name)

    def sweep(self, state, beta, rng):
        self.n += 1
        return self._t.sweep(state, beta, rng)

    def loglik(self, state):
        return self._t.loglik(state)

    def copy(self, state):
        return self._t.copy(state)


def _measured_steps(fam, per_sweep, moves, budget, guess):
    """``(tempering steps, CPU s per particle-sweep)`` of the SMC from the prior, measured.

    A short SMC (:data:`PILOT_PARTICLES` particles, one sweep per step) gives the number of
    steps (times :data:`PILOT_STEP_FACTOR`) and the per-particle overhead of a step (log-
    likelihood, copies, weights), spread over the ``moves`` sweeps. The guess from the
    dimension (``guess`` steps) was 1.7 times too few on a 60 x 40 Gaussian matrix at rank 3
    (the budget ran out in the SMC from the prior) and 4.5 times too many on a 50 x 30
    binary one. Falls back to ``(guess, per_sweep)`` when the short SMC would take more than
    5 % of ``budget`` by the guess; when it runs past 5 % all the same, the steps it did
    (times the factor; at least ``guess``) are a lower bound, used as the steps: on breast
    SBS96 with the negative binomial model the guess was 152 steps and a run took 400-800.
    """
    from bnmfzoo.inference._mass_budget import BudgetedSweep, BudgetExhausted, budget_scope
    from bnmfzoo.inference.tempering.smc import smc

    if 2 * PILOT_PARTICLES * guess * per_sweep > 0.05 * budget:
        return guess, per_sweep
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
        return max(guess, PILOT_STEP_FACTOR * done), per_sweep + overhead / max(moves, 1)
    steps = max(1, len(run.betas) - 1)
    overhead = max(0.0, (time.process_time() - t0) / (PILOT_PARTICLES * steps) - per_sweep)
    return PILOT_STEP_FACTOR * steps, per_sweep + overhead / max(moves, 1)


def _reference_sweep_cost(fam, s, rng):
    """CPU s of one reference-path sweep at ``beta = 0.5``, or ``None`` where the family has no
    reference path: a rough reference fitted to 8 sweeps from ``s``, timed for 0.2 s."""
    from bnmfzoo.inference.reference_path import reference_adapter

    try:
        ad = reference_adapter(fam)
    except ValueError:
        return None
    draws = []
    for _ in range(8):
        fam.tempered.sweep(s, 1.0, rng)
        draws.append(ad.draws(s, np.arange(ad.K)))
    q, s = ad.fit(np.array(draws), 2.0), ad.copy(s)
    t0, n = time.process_time(), 0
    while time.process_time() - t0 < 0.2 or n < 3:
        ad.sweep(q, s, 0.5, rng)
        n += 1
    return (time.process_time() - t0) / n


def _pilot(model, budget, runs, moves, check_runs, check="bridge", ref_size=(4, 100),
           fewer_moves=False):
    """``(particles, check_refine, sweep seconds, budget for 20 particles, moves)`` filling
    about 80 % of ``budget``.

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
    until the SMC from the prior gets :data:`REF_MIN_PARTICLES` per run (both estimators use
    the same moves).
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
    cost = per_sweep  # CPU s per particle-sweep in the SMC, its overhead included
    if check != "reference_pt":
        steps, cost = _measured_steps(fam, per_sweep, moves, budget, steps)
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
        if particles >= REF_MIN_PARTICLES:
            break
    return particles, refine, per_sweep, need, m


def _print_per_mode(out):
    """The two per-mode estimators of ``--check reference_pt``, mode by mode (the
    reference-path SMC alone when the budget ran out in the tempering)."""
    pm = out["per_mode"]
    s, t = pm["smc"], pm["pt"]
    if s is None:
        return
    r2 = lambda v: np.round(np.asarray(v, float), 2).tolist()  # noqa: E731
    print(f"reference-path SMC: log Z per mode {r2(s['log_z'])} +- {r2(s['log_z_se'])}; runs "
          f"{r2(s['run_log_z'])}; total {s['log_z_total']:.2f} +- {s['log_z_total_se']:.2f}; "
          f"chain draws left {np.round(s['left'], 3).tolist()}, path particles left "
          f"{np.round(s['path_left'], 3).tolist()}; temperatures {s['n_temperatures']}; "
          f"{s['cpu_s']:.1f} CPU s ({s['fit_cpu_s']:.1f} for the fit chains; per mode "
          f"{r2(s.get('cpu_s_mode', [math.nan]))}); lowest HMC acceptance of a temperature "
          f"{r2(s.get('local_acceptance', [math.nan]))}; skipped (bounded below 0.1 %) "
          f"{pm.get('skipped', [])}")
    if t is not None:
            print(f"reference-path tempering: log Z per mode {r2(t['log_z'])} +- "
              f"{r2(t['log_z_se'])}; runs {r2(t['run_log_z'])}; total {t['log_z_total']:.2f} +- "
              f"{t['log_z_total_se']:.2f}; round trips per run {t['round_trips'].tolist()}; "
              f"rungs {t['n_rungs'].tolist()}; barrier {r2(t['barrier'])}; max rejection "
              f"{r2(t['max_rejection'])}; b = 1 draws left "
              f"{np.round(t['pt_left'], 3).tolist()}; {t['cpu_s']:.1f} CPU s (per mode "
              f"{r2(t['cpu_s_mode'])}; per rung-scan "
              f"{np.round(t['cpu_s_per_rung_scan'] * 1e3, 2).tolist()} ms); lowest rung's HMC "
              f"acceptance {r2(t.get('local_acceptance', [math.nan]))}")
    print(f"prior chains ending in SMC modes {pm.get('prior_ends_in_smc_modes')} of "
          f"{pm.get('prior_chains')} ({pm.get('prior_cpu_s', 0.0):.1f} CPU s)")
    for k, m in enumerate(out["modes"]):
        print(f"mode {k}: SMC from the prior {m['smc_prior_mass']:.4f} +- "
              f"{m['smc_prior_se']:.4f}")


def _minute(seconds):
    """``seconds`` rounded up to a whole minute, as a ``--budget`` value."""
    return f"{math.ceil(seconds / 60) * 60:g}"


def _large(model, a, t0, per_sweep, need):
    """The large-matrix Poisson route when the measured costs choose it (else None): prints
    its lines and the JSON, returns the exit code.

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
    full = large_route_need(family_of_model(model).tempered.dimension, costs["hmc"],
                            n_runs=a.runs, pt_runs=a.pt_runs)
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
                            n_runs=a.runs, pt_runs=a.pt_runs, n_particles=a.particles)
    r2 = lambda v: np.round(np.asarray(v, float), 2).tolist()  # noqa: E731
    s, t, c = out["smc"], out["pt"], out.get("costs", {})
    if s is not None:
        print(f"reference-path SMC ({out['settings']['n_runs']} runs x "
              f"{out['settings']['n_particles']} particles): log Z per mode {r2(s['log_z'])} +- "
              f"{r2(s['log_z_se'])}; runs {r2(s['run_log_z'])}; temperatures "
              f"{s['n_temperatures']}; {s['cpu_s']:.1f} CPU s (fit chains {s['fit_cpu_s']:.1f}; "
              f"per mode {r2(c['smc_s_per_mode'])}; per particle-move "
              f"{np.round(c['smc_s_per_particle_move'] * 1e3, 2).tolist()} ms); restarts "
              f"{c['restarts_s']:.1f} CPU s")
    if t is not None:
        print(f"reference-path tempering ({out['settings']['pt_runs']} runs x "
              f"{out['settings']['pt_scans']} scans): log Z per mode {r2(t['log_z'])} +- "
              f"{r2(t['log_z_se'])}; runs {r2(t['run_log_z'])}; round trips per run "
              f"{t['round_trips'].tolist()}; rungs {t['n_rungs'].tolist()}; {t['cpu_s']:.1f} CPU "
              f"s (per mode {r2(t['cpu_s_mode'])}; per rung-scan "
              f"{np.round(t['cpu_s_per_rung_scan'] * 1e3, 2).tolist()} ms)")
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


def main(argv=None):
    """The command; an unexpected failure still ends with one ``error:`` line and the JSON
    (``established: false``, no mode), the traceback going to standard error."""
    t0 = time.process_time()
    try:
        return _main(argv)
    except Exception as err:  # the JSON must stay the last line whatever failed
        import traceback

        traceback.print_exc(file=sys.stderr)
        msg = " ".join(f"unexpected failure: {type(err).__name__}: {err}".split())
        print(f"error: {msg}")
        print(json.dumps({"modes": [], "cpu_s": round(time.process_time() - t0, 2),
                          "established": False, "error": msg}))
        return 3


def _main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--model", choices=MODELS)
    p.add_argument("--budget", type=float, default=900.0, help="CPU seconds (default 900)")
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--particles", type=int)
    p.add_argument("--moves", type=int,
                   help="sweeps per particle per step (default 5, fewer down to 2 where the "
                        "reference path's predicted cost would leave the SMC from the prior "
                        "under 200 particles per run; 2 on the Poisson route)")
    p.add_argument("--cess", type=float, default=0.9)
    p.add_argument("--check-runs", type=int)
    p.add_argument("--check", choices=("auto", "reference", "reference_pt", "bridge", "ais"),
                   default="auto",
                   help="the second estimator (auto: Poisson with constant prior rates -> "
                        "reference_pt with the local moves sweep+shear+rescale+hmc, 20 leapfrog "
                        "steps, 2,500 scans; other families: the reference path where the "
                        "family has one, else the bridge; reference_pt: per-mode SMC and "
                        "per-mode parallel tempering along the reference path, the SMC from "
                        "the prior finding modes only)")
    p.add_argument("--pt-runs", type=int, default=4,
                   help="reference_pt: parallel-tempering runs per mode")
    p.add_argument("--pt-scans", type=int,
                   help="reference_pt: kept scans per run (after tuning and burn-in; default "
                        "500, 2500 on the Poisson route)")
    p.add_argument("--pt-sweeps", type=int, default=1,
                   help="reference_pt: sweeps per replica per scan")
    p.add_argument("--pt-local",
                   help="reference_pt, Poisson: each replica's moves per scan, joined by '+' "
                        "from sweep, shear, rescale (the exact group moves), hmc (HMC on "
                        "log A, log W); default sweep, sweep+shear+rescale+hmc on the Poisson "
                        "route")
    p.add_argument("--pt-leap", type=int,
                   help="reference_pt: leapfrog steps per HMC transition (default 10, 20 on "
                        "the Poisson route)")
    p.add_argument("--ref-runs", type=int, default=4,
                   help="reference check: SMC runs per mode from the fitted reference")
    p.add_argument("--ref-particles", type=int, default=100,
                   help="reference check: particles per run")
    p.add_argument("--bridge-draws", type=int, default=500,
                   help="kept draws per bridge chain (4 chains per mode)")
    p.add_argument("--prior-chains", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    t0 = time.process_time()
    try:
        from bnmfzoo.inference.smc_masses import smc_mode_masses

        for name, v in (("--budget", a.budget), ("--runs", a.runs), ("--particles", a.particles)):
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive, got {v:g}")
        X = _read(a.data)
        _check_data(X, a.rank)
        model_name = a.model or _guess_model(X)
        model = _build(X, a.rank, model_name)
        auto, moves_given = a.check == "auto", a.moves is not None
        _route(model, a)
        check_runs = a.check_runs if a.check_runs is not None else 32
        particles, refine, per_sweep = a.particles, 50, math.nan
        if particles is None:
            particles, refine, per_sweep, need, a.moves = _pilot(
                model, a.budget, a.runs, a.moves, check_runs, a.check,
                (a.ref_runs, a.ref_particles), fewer_moves=not moves_given)
            if particles < 20 and auto and a.check == "reference_pt":
                large = _large(model, a, t0, per_sweep, need)
                if large is not None:
                    return large
            if particles < 20 or (a.check == "ais" and refine < 5):
                ais = (f" and the check {refine} AIS steps per SMC step (at least 5)"
                       if a.check == "ais" else "")
                raise ValueError(f"--budget {a.budget:g} CPU s is too small for this matrix: "
                                 f"one sweep takes {per_sweep * 1e3:.2f} ms, so {a.runs} runs "
                                 f"would get {particles} particles each (at least 20 needed)"
                                 + ais + "; it needs at least --budget "
                                 f"{math.ceil(need / 60) * 60:g} (or fewer --runs)")
        print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, {model_name}, rank {a.rank}; "
              f"{a.runs} SMC runs x {particles} particles x {a.moves} sweeps per step, "
              + (f"{check_runs} AIS runs x {refine} steps per SMC step; " if a.check == "ais"
                 else (f"reference path: {a.ref_runs} runs x {a.ref_particles} particles "
                       "per mode (auto: where the family has one, else the bridge), fitted to "
                       if a.check in ("reference", "auto") else
                       f"reference path: {a.ref_runs} runs x {a.ref_particles} particles and "
                       f"{a.pt_runs} tempering runs x {a.pt_scans} scans per mode, fitted to "
                       if a.check == "reference_pt" else "bridge: ")
                 + f"4 chains x {a.bridge_draws} draws per mode, "
                   f"{a.prior_chains} plain chains from the prior; ") +
              f"sweep {per_sweep * 1e3:.2f} ms", flush=True)
        out = smc_mode_masses(model, n_runs=a.runs, n_particles=particles, n_moves=a.moves,
                              cess=a.cess, check=a.check, check_runs=check_runs,
                              check_refine=refine, bridge_draws=a.bridge_draws,
                              prior_chains=a.prior_chains,
                              reference_runs=a.ref_runs,
                              reference_particles=a.ref_particles,
                              pt_runs=a.pt_runs, pt_scans=a.pt_scans, pt_sweeps=a.pt_sweeps,
                              pt_local=a.pt_local, pt_leap=a.pt_leap,
                              budget_s=a.budget - (time.process_time() - t0),
                              random_seed=a.seed)
    except (ValueError, TypeError, FileNotFoundError) as err:
        msg = " ".join(str(err).split())
        print(f"error: {msg}")
        print(json.dumps({"modes": [], "cpu_s": round(time.process_time() - t0, 2),
                          "established": False, "error": msg}))
        return 2
    for k, m in enumerate(out["modes"]):
        print(f"mode {k}: SMC {m['mass']:.4f} [{m['low']:.4f}, {m['high']:.4f}] "
              f"(se {m['se']:.4f}, {m['n_members']} particles); check {m['mass_check']:.4f} "
              f"+- {m['check_se']:.4f} ({m['check_estimator']})")
    if out.get("bridge"):
        b = out["bridge"]
        print(f"bridge: log Z per mode {np.round(b['log_z'], 2).tolist()} +- "
              f"{np.round(b['log_z_se'], 2).tolist()}; total {b['log_z_total']:.2f} +- "
              f"{b['log_z_total_se']:.2f}; left {np.round(b['left'], 3).tolist()}; "
              f"autocorrelation time {np.round(b['tau'], 1).tolist()}; {b['cpu_s']:.1f} CPU s; "
              f"prior chains ending in SMC modes {b['prior_ends_in_smc_modes']} of "
              f"{b['prior_chains']} ({b['prior_cpu_s']:.1f} CPU s)")
    if out.get("per_mode"):
        _print_per_mode(out)
    elif out.get("reference"):
        b = out["reference"]
        print(f"reference path: log Z per mode {np.round(b['log_z'], 2).tolist()} +- "
              f"{np.round(b['log_z_se'], 2).tolist()}; runs {np.round(b['run_log_z'], 2).tolist()}"
              f"; total {b['log_z_total']:.2f} +- {b['log_z_total_se']:.2f}; chain draws left "
              f"{np.round(b['left'], 3).tolist()}, path particles left "
              f"{np.round(b['path_left'], 3).tolist()}; temperatures {b['n_temperatures']}; "
              f"{b['cpu_s']:.1f} CPU s ({b['fit_cpu_s']:.1f} for the fit chains); prior chains "
              f"ending in SMC modes {b['prior_ends_in_smc_modes']} of {b['prior_chains']} "
              f"({b['prior_cpu_s']:.1f} CPU s)")
    print(f"log Z {out['log_z']:.2f} +- {out['log_z_se']:.2f}; temperatures "
          f"{out['settings']['n_temperatures']}; min final ESS {out['final_ess']:.2f}")
    print(out["statement"])
    cpu = time.process_time() - t0
    print(json.dumps({
        "modes": [{"mass": None if m["estimator"] == UNREACHED else _share(m["mass"]),
                   "low": _share(m["low"]), "high": _share(m["high"]),
                   "estimator": m["estimator"], "mass_check": _num(m["mass_check"]),
                   "check_se": _num(m["check_se"]),
                   **({"bound": _num(m["bound"]), "note": m["note"]} if m.get("note") else {}),
                   **({"note": UNREACHED_NOTE} if m["estimator"] == UNREACHED else {})}
                  for m in out["modes"]],
        "cpu_s": round(cpu, 2), "established": bool(out["established"]),
        **({} if out["established"] else {"why_not": " ".join(out["statement"].split())})}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
