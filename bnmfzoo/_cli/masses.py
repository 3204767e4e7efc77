"""Posterior masses of the modes of any matrix, each checked by a second estimator.

Run with::

    bnmfzoo masses FILE --rank K
        [--model poisson|negative_binomial|exponential_gaussian|beta_dir] [--budget 900]
        [--runs 4] [--particles N] [--moves M] [--check bridge|ais] [--bridge-draws N]
        [--prior-chains 8] [--prior-sweeps 300] [--check-runs C] [--seed 0]
        [--check reference_pt --pt-runs 4 --pt-scans 500 --pt-sweeps 1]

(``python -m benchmarks.speed.real_data_masses --data FILE ...`` in a checkout is the same
command.) The masses come from tempered SMC; the second estimator is chosen per family below.

``FILE`` is any matrix file ``bnmfzoo fit`` reads (CSV/TSV with or without header and row
labels, ``.txt`` with whitespace, ``.npy``, netCDF), through the command line's own reader
(:func:`bnmfzoo._fitcli.read_matrix`; a whitespace-separated ``.txt`` it refuses, such as R's
``write.table`` layout whose header lacks the row-label column, is split on blanks here,
:func:`_read`). Without ``--model`` the family follows the data: 0/1
entries -> ``beta_dir``, non-negative integers -> ``poisson``, otherwise
``exponential_gaussian``. Both estimators run through
:func:`bnmfzoo.inference.smc_mode_masses` (SMC: ``--runs`` independent adaptive-tempering runs
of ``--particles`` particles; check, by default: per-mode bridge sampling from 4 plain chains
of ``--bridge-draws`` draws per mode, and ``--prior-chains`` plain chains from prior draws
(KL-refined for count models) looking for modes the particles missed; ``--check ais``:
``--check-runs`` AIS runs from the prior on the SMC's schedule cut into up to 50 steps;
``--check reference_pt``: every mode estimated by per-mode SMC and per-mode parallel
tempering along a fitted reference path, the SMC from the prior finding modes only,
:mod:`bnmfzoo.inference.reference_tempering`). Without ``--particles`` a pilot sweep sets the
particles (and the AIS steps) so that all is expected to use about 80 % of ``--budget`` CPU
seconds.

**The default route** (``--check auto``), per family: Poisson with constant prior rates ->
``reference_pt`` with the exact local moves (``sweep+shear+rescale+hmc``, 20 leapfrog steps,
each tempering run ending at 15 round trips or on its share of the budget left, 2,500 kept
scans at most, 2 sweeps per SMC step; the SMC from the prior, which only finds modes, gets
12 % of the pilot's sweeps, its steps measured by the pilot, and keeps 200 particles per run
where it can by running 2 runs and taking up to 35 %: :func:`_prior_smc_size`);
Beta-Dir -> the same ``reference_pt`` route with the plain sweep as the local move
(:data:`~bnmfzoo._cli.masses_budget.BETA_DIR_ROUTE`); negative binomial with constant prior
rates -> ``reference_pt`` along its Gamma-mixed path with the exact NB sweep (8,000 kept scans
at most); exponential-Gaussian -> the reference path against the SMC from the prior; negative
binomial with rate variables -> the bridge, refused in one line naming the budget it needs
when four short SMC runs' log Z spread says the budget's particles are too few
(:func:`~bnmfzoo._cli.masses_budget.spread_need`). ``--budget`` caps the whole command
(CPU seconds, reading and pilot included): when it runs out, the JSON says
``"established": false`` with ``why_not`` (what ran, what to run next), and lists no mode when
the SMC from the prior itself did not finish. A mode the reference-path SMC bounds below 0.1 %
gets no second estimator and carries ``"note": "below 1 %: ..."`` and its ``"bound"``; on the
reference route (exponential-Gaussian) that includes a mode only the plain chains
from prior draws found, which then does not block ``established``. Results
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

from bnmfzoo._cli.layout_options import add_layout_options
from bnmfzoo._cli.masses_budget import (
    _large,
    _num,
    _pilot,
    _route,
)

_EPILOG = """examples:
  bnmfzoo masses ic50.txt --rank 3          # 900 CPU s at most
  bnmfzoo masses counts.csv --rank 4 --model negative_binomial --budget 1800

The last line printed is one JSON object: the modes (mass, interval, estimator, the
second estimate), cpu_s, established and, when not established, why_not.
"""
MODELS = ("poisson", "negative_binomial", "exponential_gaussian", "beta_dir")


UNREACHED_NOTE = ("no SMC particle reached this mode, so its SMC mass is unknown (null, not "
                  "zero; interval [0, 1]); mass_check is the second estimator's")


def _share(x):
    """A mass as a JSON number in [0, 1], or null when not finite.

    Rounding can put a sole mode's mass at 1 + 1e-16.
    """
    return _num(min(1.0, max(0.0, float(x)))) if math.isfinite(x) else None


def _read(path, header="auto", index_col="auto"):
    """The matrix ``bnmfzoo fit`` reads from ``path`` (``header``, ``index_col``: its options).

    A whitespace-separated text file the command line's reader refuses (a header one field
    short, as R's ``write.table`` writes it) is split on runs of blanks, with a header row
    and a row-label column dropped as ``header`` and ``index_col`` say (``"auto"``: a
    non-numeric first row, a non-numeric first column).
    """
    from pathlib import Path

    from bnmfzoo._fitcli import read_matrix

    try:
        return np.asarray(read_matrix(path, header=header, index_col=index_col).values,
                          float)
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

    if header is True or (header == "auto" and rows and not numeric(rows[0])
                          and len(rows) > 1):
        rows = rows[1:]  # header row (it may lack the row-label column's name)
    if index_col == "auto":
        index_col = 0 if rows and not all(numeric(r[:1]) for r in rows) else None
    if index_col is not None:
        if any(len(r) <= index_col for r in rows):
            raise ValueError(f"{path}: --index-col {index_col} is past the end of a row")
        rows = [r[:index_col] + r[index_col + 1:] for r in rows]
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


#: the library's statement names Python arguments; the command's flags in their place
CLI_WORDS = (("(n_runs, n_particles)", "(--runs, --particles; by default both are sized from "
              "--budget)"), ("(n_moves)", "(--moves)"), ("a higher cess", "a higher --cess"),
             ("(bridge_draws)", "(--bridge-draws)"),
             ("(check='reference' or 'ais')", "(--check reference or --check ais)"),
             ("(budget_s; --budget on the command line)", "(--budget)"),
             ("raise budget_s", "raise --budget"), ("(pt_scans)", "(--pt-scans)"),
             ("pt_scans / pt_runs", "--pt-scans / --pt-runs"))

#: the SMC from the prior's runs' log Z sd the suggested budget aims at (the verdict asks for
#: below 2 nats; an sd from 4 runs exceeds 2 by chance 4 % of the time at a true 1.2)
TARGET_LOG_Z_SD = 1.2


def cli_statement(out, a):
    """``out["statement"]`` in the command's words, plus the budget to run next.

    The budget is suggested when the SMC from the prior's runs disagreed (``log Z`` sd of 2
    nats or more) and its particles were sized from ``--budget``. Where a run's ``log Z``
    variance falls as 1 / particles, ``(sd / TARGET_LOG_Z_SD)^2`` times the particles bring the
    sd to about the target; scaling the whole budget by that factor is an upper bound (the
    per-mode check's cost does not grow with it). Where the sweeps per step set the spread
    instead (the faces at rank 3: 2.5 times the particles left it at 2.1 nats, twice the
    sweeps brought it to 1.3; ``docs/results/masses_copula_reference_3.md`` section 43), the
    text also names twice the sweeps per step.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> out = {"statement": "Masses NOT established: x. Run more SMC runs or particles "
    ...        "(n_runs, n_particles).", "established": False, "log_z_se": 1.13,
    ...        "settings": {"n_runs": 4, "n_moves": 5}}
    >>> text = cli_statement(out, NS(particles=None, budget=900.0, data="m.csv", rank=3))
    >>> text.split(" (--runs")[0]
    'Masses NOT established: x. Run more SMC runs or particles'
    >>> text.split("Next: ")[1][:48]
    'bnmfzoo masses m.csv --rank 3 --budget 3240 (the'
    >>> text.split("; where the sweeps per step set it, ")[1]
    'add --moves 10)'
    """
    text = out["statement"]
    for old, new in CLI_WORDS:
        text = text.replace(old, new)
    n_runs = out.get("settings", {}).get("n_runs", 0)
    sd = float(out.get("log_z_se", math.nan)) * math.sqrt(n_runs) if n_runs > 1 else math.nan
    if not out["established"] and a.particles is None and sd >= 2.0:
        factor = (sd / TARGET_LOG_Z_SD) ** 2
        text += (f" Next: bnmfzoo masses {a.data} --rank {a.rank} --budget "
                 f"{math.ceil(a.budget * factor / 60) * 60:g} (the SMC from the prior's runs' "
                 f"log Z sd {sd:.2f} nats; about {factor:.1f} times the particles bring it to "
                 f"{TARGET_LOG_Z_SD} where the particles set it; where the sweeps per step "
                 f"set it, add --moves {2 * int(out.get('settings', {}).get('n_moves', 5))})")
    return text


def _extended(b):
    """The modes whose leaking fit chains were continued, as a clause (``""``: none)."""
    if not b.get("extended"):
        return ""
    return (f"; fit chains continued for leaking modes {list(b['extended'])} (left before "
            f"{np.round(b['left_before'], 3).tolist()})")


def _print_per_mode(out):
    """Print the two per-mode estimators of ``--check reference_pt``, mode by mode.

    The reference-path SMC alone when the budget ran out in the tempering.
    """
    pm = out["per_mode"]
    s, t = pm["smc"], pm["pt"]
    if s is None:
        return
    r2 = lambda v: np.round(np.asarray(v, float), 2).tolist()  # noqa: E731
    print(f"reference-path SMC: log Z per mode {r2(s['log_z'])} +- {r2(s['log_z_se'])}; runs "
          f"{r2(s['run_log_z'])}; total {s['log_z_total']:.2f} +- {s['log_z_total_se']:.2f}; "
          f"chain draws left {np.round(s['left'], 3).tolist()}, path particles left "
          f"{np.round(s['path_left'], 3).tolist()}; temperatures {s['n_temperatures']}; "
          f"particles per run (sized from the budget) {[z[3] for z in s.get('sizes', [])]}; "
          f"{s['cpu_s']:.1f} CPU s ({s['fit_cpu_s']:.1f} for the fit chains; per mode "
          f"{r2(s.get('cpu_s_mode', [math.nan]))}); lowest HMC acceptance of a temperature "
          f"{r2(s.get('local_acceptance', [math.nan]))}; skipped (bounded below 0.1 %) "
          f"{pm.get('skipped', [])}{_extended(s)}")
    if t is not None:
            print(f"reference-path tempering: log Z per mode {r2(t['log_z'])} +- "
              f"{r2(t['log_z_se'])}; runs {r2(t['run_log_z'])}; total {t['log_z_total']:.2f} +- "
              f"{t['log_z_total_se']:.2f}; round trips per run {t['round_trips'].tolist()}; "
              f"rungs {t['n_rungs'].tolist()}; kept scans {t['kept_scans'].tolist()} (ended "
              f"on {t['stopped'].tolist()}); barrier {r2(t['barrier'])}; max rejection "
              f"{r2(t['max_rejection'])}; b = 1 draws left "
              f"{np.round(t['pt_left'], 3).tolist()}, on another label copy "
              f"{np.round(t.get('pt_swapped', [math.nan]), 3).tolist()}; "
              f"{t['cpu_s']:.1f} CPU s (per mode "
              f"{r2(t['cpu_s_mode'])}; per rung-scan "
              f"{np.round(t['cpu_s_per_rung_scan'] * 1e3, 2).tolist()} ms); lowest rung's HMC "
              f"acceptance {r2(t.get('local_acceptance', [math.nan]))}; reference (fit, pilot "
              f"barrier marginal, ridge-free, widening used, its barrier) "
              f"{[f and (f[0], round(f[1], 1), round(f[2], 1), f[3], round(f[4], 1))
                  for f in t.get('reference_fit', [])]}; CPU floor from the pilot ladder and "
              f"the share of the budget left, per mode "
              f"{np.round(t.get('start_floor', np.full((1, 2), np.nan)), 1).tolist()}; copula "
              f"(its pilot barrier, its CPU floor, the other reference's) "
              f"{[c and tuple(round(float(v), 1) for v in c) for c in t.get('copula_pilot', [])]}")
    print(f"prior chains ending in SMC modes {pm.get('prior_ends_in_smc_modes')} of "
          f"{pm.get('prior_chains')} ({pm.get('prior_cpu_s', 0.0):.1f} CPU s)")
    for k, m in enumerate(out["modes"]):
        print(f"mode {k}: SMC from the prior {m['smc_prior_mass']:.4f} +- "
              f"{m['smc_prior_se']:.4f}")


def _bridge_draws_text(model_name, model, n_draws):
    """The bridge's draws per mode, as the header states them.

    The negative binomial's warped bridge keeps more, sized by its dimension
    (:func:`bnmfzoo.inference.mode_bridge.sized_draws`), which is read from the same
    parametrisation the bridge uses.
    """
    if model_name != "negative_binomial":
        return f"4 chains x {n_draws} draws per mode"
    from bnmfzoo.inference.mode_bridge import (
        MAX_SIZED_SWEEP_S,
        bridge_parametrisation,
        sized_draws,
    )
    from bnmfzoo.inference.smc_masses import family_of_model

    dim = bridge_parametrisation(model, family_of_model(model)).dim
    return (f"4 chains x about {sized_draws(dim, 4, n_draws, 2, 0.0)} draws per mode (the "
            f"warped bridge sized to {dim} parameters, fewer if they would take over "
            f"{MAX_SIZED_SWEEP_S:g} CPU s or the budget's share)")


def main(argv=None):
    """The command with ``--data FILE``, as the results pages run it.

    ``python -m benchmarks.speed.real_data_masses`` calls this; :func:`command` is
    ``bnmfzoo masses FILE``.
    """
    return _guarded(_main, argv)


def command(args):
    """``bnmfzoo masses``: run on the parsed ``args`` with one BLAS thread.

    CPU seconds are the budget's unit: BLAS threads would spend it several times over.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _guarded(_run, args)


def _guarded(run, arg):
    """``run(arg)``, its failures reported as the command's last lines.

    An unexpected failure still ends with one ``error:`` line and the JSON
    (``established: false``, no mode), the traceback going to standard error.
    """
    t0 = time.process_time()
    try:
        return run(arg)
    except Exception as err:  # the JSON must stay the last line whatever failed
        import traceback

        traceback.print_exc(file=sys.stderr)
        msg = " ".join(f"unexpected failure: {type(err).__name__}: {err}".split())
        print(f"error: {msg}")
        print(json.dumps({"modes": [], "cpu_s": round(time.process_time() - t0, 2),
                          "established": False, "error": msg}))
        return 3


def add_parser(sub, formatter_class=argparse.RawDescriptionHelpFormatter):
    """Add ``masses`` to the ``bnmfzoo`` command's sub-parsers ``sub``."""
    p = sub.add_parser(
        "masses", help="posterior masses of a matrix's modes, each checked by a second "
                       "estimator, within a CPU budget",
        description=__doc__.split("\n")[0], epilog=_EPILOG, formatter_class=formatter_class)
    p.add_argument("data", help="the matrix file (CSV/TSV, whitespace .txt, .npy, netCDF)")
    _arguments(p)
    p.set_defaults(func=command)
    return p


def _main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    return _run(_arguments(p).parse_args(argv))


def _arguments(p):
    """Add the options of the command (all but the data file) to the parser ``p``."""
    p.add_argument("--rank", type=int, required=True, help="the number of factors")
    add_layout_options(p)  # the reader's refusals name them
    p.add_argument("--model", choices=MODELS,
                   help="the likelihood and priors (default from the data: 0/1 entries "
                        "beta_dir, non-negative integers poisson, else exponential_gaussian)")
    p.add_argument("--budget", type=float, default=900.0, help="CPU seconds (default 900)")
    p.add_argument("--runs", type=int,
                   help="SMC runs from the prior (default 4; on the Poisson route down to 2 "
                        "when 4 would get under 200 particles each)")
    p.add_argument("--particles", type=int,
                   help="particles per SMC run (default: what the budget affords, from a "
                        "pilot)")
    p.add_argument("--moves", type=int,
                   help="sweeps per particle per step (default 5, fewer down to 2 where the "
                        "reference path's predicted cost would leave the SMC from the prior "
                        "under 200 particles per run; 2 on the Poisson route)")
    p.add_argument("--cess", type=float, default=0.9,
                   help="conditional ESS fraction kept per tempering step (default 0.9)")
    p.add_argument("--check-runs", type=int, help="--check ais: AIS runs (default 32)")
    p.add_argument("--check", choices=("auto", "reference", "reference_pt", "bridge", "ais"),
                   default="auto",
                   help="the second estimator (auto: Poisson with constant prior rates -> "
                        "reference_pt with the local moves sweep+shear+rescale+hmc, 20 leapfrog "
                        "steps, runs ending at 15 round trips (2,500 scans at most); other "
                        "families: the reference path where the "
                        "family has one, else the bridge; reference_pt: per-mode SMC and "
                        "per-mode parallel tempering along the reference path, the SMC from "
                        "the prior finding modes only)")
    p.add_argument("--pt-runs", type=int, default=4,
                   help="reference_pt: parallel-tempering runs per mode")
    p.add_argument("--pt-scans", type=int,
                   help="reference_pt: kept scans per run (after tuning and burn-in; default "
                        "500; 2500 on the Poisson and Beta-Dir routes, 8000 on the negative "
                        "binomial's)")
    p.add_argument("--pt-trips", type=int,
                   help="reference_pt: end each tempering run at this many round trips or on "
                        "its share of the budget left, --pt-scans being the cap (default: "
                        "none, 15 on the Poisson, Beta-Dir and negative-binomial routes)")
    p.add_argument("--pt-sweeps", type=int, default=1,
                   help="reference_pt: sweeps per replica per scan")
    p.add_argument("--pt-local",
                   help="reference_pt, count models: each replica's moves per scan, joined "
                        "by '+' from sweep, shear, rescale (the exact group moves), hmc (HMC "
                        "on log A, log W; negative binomial: sweep+hmc); default sweep, "
                        "sweep+shear+rescale+hmc on the Poisson route")
    p.add_argument("--pt-copula", action=argparse.BooleanOptionalAction, default=True,
                   help="reference_pt, count models (Poisson, negative binomial): the "
                        "tempering also tries a reference whose Gamma marginals are joined by "
                        "a Gaussian copula (HMC moves) and keeps it where its runs' predicted "
                        "CPU is lower (on the large-matrix route too); on Poisson models the "
                        "per-mode SMC then runs along the copula's path; on by default")
    p.add_argument("--pt-leap", type=int,
                   help="reference_pt: leapfrog steps per HMC transition (default 10, 20 on "
                        "the Poisson route)")
    p.add_argument("--ref-runs", type=int, default=4,
                   help="reference check: SMC runs per mode from the fitted reference")
    p.add_argument("--ref-particles", type=int, default=100,
                   help="reference check: particles per run")
    p.add_argument("--bridge-draws", type=int,
                   help="kept draws per bridge chain, or per fit chain of the reference path "
                        "(4 chains per mode; default 1,000 on the Poisson route, else 500)")
    p.add_argument("--prior-chains", type=int, default=8,
                   help="plain chains from prior draws (count models: KL-refined, the best by "
                        "log joint) looking for modes the particles missed")
    p.add_argument("--prior-sweeps", type=int, default=300,
                   help="sweeps of each of those chains before its mode is read (default 300)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    return p


def _run(a):
    """The command on the parsed arguments ``a``; returns the exit code."""
    t0 = time.process_time()
    try:
        from bnmfzoo.inference._mass_result import UNREACHED
        from bnmfzoo.inference.smc_masses import smc_mode_masses

        for name, v in (("--budget", a.budget), ("--runs", a.runs), ("--particles", a.particles)):
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive, got {v:g}")
        X = _read(a.data, a.header, a.index_col)
        _check_data(X, a.rank)
        model_name = a.model or _guess_model(X)
        model = _build(X, a.rank, model_name)
        auto, moves_given, runs_given = a.check == "auto", a.moves is not None, a.runs is not None
        _route(model, a)
        check_runs = a.check_runs if a.check_runs is not None else 32
        particles, refine, per_sweep, runs = a.particles, 50, math.nan, a.runs
        if particles is None:
            sizes = {"fewer_runs": not runs_given}
            particles, refine, per_sweep, need, a.moves = _pilot(
                model, a.budget, a.runs, a.moves, check_runs, a.check,
                (a.ref_runs, a.ref_particles), fewer_moves=not moves_given, sizes=sizes)
            runs = sizes.get("runs", a.runs)  # the SMC from the prior's (the large route
            # keeps --runs for its reference-path SMC)
            if particles < 20 and auto and a.check == "reference_pt" and model_name == "poisson":
                large = _large(model, a, t0, per_sweep, need)
                if large is not None:
                    return large
            if particles < 20 or (a.check == "ais" and refine < 5):
                ais = (f" and the check {refine} AIS steps per SMC step (at least 5)"
                       if a.check == "ais" else "")
                raise ValueError(f"--budget {a.budget:g} CPU s is too small for this matrix: "
                                 f"one sweep takes {per_sweep * 1e3:.2f} ms and a run of the "
                                 f"SMC from the prior about {sizes['steps']:.0f} tempering "
                                 f"steps ({model_name} model, rank {a.rank}), so {runs} runs "
                                 f"would get {particles} particles each (at least 20 needed)"
                                 + ais + "; it needs at least --budget "
                                 f"{math.ceil(need / 60) * 60:g} (or fewer --runs)")
        print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, {model_name}, rank {a.rank}; "
              f"{runs} SMC runs x {particles} particles x {a.moves} sweeps per step, "
              + (f"{check_runs} AIS runs x {refine} steps per SMC step; " if a.check == "ais"
                 else (f"reference path: {a.ref_runs} runs x {a.ref_particles} particles "
                       "per mode (auto: where the family has one, else the bridge), fitted to "
                       if a.check in ("reference", "auto") else
                       f"reference path: {a.ref_runs} runs x {a.ref_particles} particles and "
                       f"{a.pt_runs} tempering runs x {a.pt_scans} scans per mode"
                       + (f" (ending at {a.pt_trips} round trips or on the budget left)"
                          if a.pt_trips else "") + ", fitted to "
                       if a.check == "reference_pt" else "bridge: ")
                 + _bridge_draws_text(model_name if a.check == "bridge" else "", model,
                                      a.bridge_draws)
                 + f", {a.prior_chains} plain chains of {a.prior_sweeps} sweeps from prior draws"
                 + (" (KL-refined, the best by log joint)"
                    if model_name in ("poisson", "negative_binomial") else "")
                 + "; ") +
              f"sweep {per_sweep * 1e3:.2f} ms", flush=True)
        if particles is not None and a.particles is None and "share" in sizes:
            print(f"SMC from the prior: {sizes['steps']:.0f} steps expected (pilot), "
                  f"{sizes['share']:.0%} of the pilot's sweeps", flush=True)
        out = smc_mode_masses(model, n_runs=runs, n_particles=particles, n_moves=a.moves,
                              cess=a.cess, check=a.check, check_runs=check_runs,
                              check_refine=refine, bridge_draws=a.bridge_draws,
                              prior_chains=a.prior_chains, prior_sweeps=a.prior_sweeps,
                              reference_runs=a.ref_runs,
                              reference_particles=a.ref_particles,
                              pt_runs=a.pt_runs, pt_scans=a.pt_scans, pt_sweeps=a.pt_sweeps,
                              pt_local=a.pt_local, pt_leap=a.pt_leap, pt_trips=a.pt_trips,
                              pt_copula=a.pt_copula, budget_s=a.budget - (time.process_time() - t0),
                              random_seed=a.seed)
    except (ValueError, TypeError, FileNotFoundError) as err:
        msg = " ".join(str(err).split())
        print(f"error: {msg}")
        print(json.dumps({"modes": [], "cpu_s": round(time.process_time() - t0, 2),
                          "established": False, "error": msg}))
        return 2
    for k, m in enumerate(out["modes"]):
        if m.get("note") and m["estimator"] == "reference_path" and out.get("estimator") == "smc":
            print(f"mode {k}: reached by no SMC particle; reference path {m['mass']:.1e}, "
                  f"bounded by {m['bound']:.1e} (no second estimator: below 1 %)")
            continue
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
              f"({b['prior_cpu_s']:.1f} CPU s){_extended(b)}")
        if b.get("cross_fit") is not None:
            dropped = (f" (numbered before modes {b['dropped']} were dropped as copies)"
                       if b.get("dropped") else "")
            print(f"reference path: share of each mode's fit-chain draws (row) in each mode's "
                  f"basin (column){dropped}: {np.round(b['cross_fit'], 3).tolist()}")
    print(f"log Z {out['log_z']:.2f} +- {out['log_z_se']:.2f}; temperatures "
          f"{out['settings']['n_temperatures']}; min final ESS {out['final_ess']:.2f}")
    statement = cli_statement(out, a)
    print(statement)
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
        **({} if out["established"] else {"why_not": " ".join(statement.split())})}))
    return 0

