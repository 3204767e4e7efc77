"""Posterior masses of the modes of any matrix: tempered SMC, checked by AIS from the prior.

Run with::

    nice -n 10 python -m benchmarks.speed.real_data_masses --data FILE --rank K \\
        [--model poisson|negative_binomial|exponential_gaussian|beta_dir] [--budget 900] \\
        [--runs 4] [--particles N] [--moves M] [--check-runs C] [--seed 0]

``FILE`` is any matrix file ``bnmfzoo fit`` reads (CSV/TSV with or without header and row
labels, ``.txt`` with whitespace, ``.npy``, netCDF), through the command line's own reader
(:func:`bnmfzoo._fitcli.read_matrix`). Without ``--model`` the family follows the data: 0/1
entries -> ``beta_dir``, non-negative integers -> ``poisson``, otherwise
``exponential_gaussian``. Both estimators run through
:func:`bnmfzoo.inference.smc_mode_masses` (SMC: ``--runs`` independent adaptive-tempering runs
of ``--particles`` particles; check: ``--check-runs`` AIS runs from the prior of the same cost
per SMC step cut into up to 50 steps). Without ``--particles`` a pilot sweep sets the
particles and the check's steps so that both are expected to use about 80 % of ``--budget``
CPU seconds.

Prints a few human lines, then as its **last line one JSON object**::

    {"modes": [{"mass": m, "low": l, "high": h, "estimator": "smc", "mass_check": m2,
                "check_se": s2}, ...], "cpu_s": t, "established": true|false}

Bad input (a rank the data do not allow, an all-missing row or column, a budget too small)
prints one line ``error: ...`` and the JSON ``{"modes": [], "cpu_s": t, "established": false,
"error": "..."}``: no mass is printed as if it were one. Results in
``docs/results/modes_and_masses.md`` (section "Masses by SMC on real data").
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


def _guess_model(X):
    v = X[np.isfinite(X)]
    if v.size and np.all((v == 0) | (v == 1)):
        return "beta_dir"
    if v.size and np.all(v >= 0) and np.all(v == np.round(v)):
        return "poisson"
    return "exponential_gaussian"


def _check_data(X, rank):
    D, N = X.shape
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
        return beta_dir(X, rank)
    return exponential_gaussian(X, rank)


def _pilot(model, budget, runs, moves, check_runs):
    """``(particles, check_refine, sweep seconds)`` filling about 80 % of ``budget``.

    The tempering steps of a run are expected at ``STEPS_PER_ROOT_DIM * sqrt(dimension)``
    (the log-likelihood's sd grows like the root of the dimension; measured 261 steps on CCLE
    rank 3, dimension 1585). The AIS check gets 40 % of the budget, the SMC the rest.
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
    sweeps = 0.8 * budget / (steps * per_sweep)  # sweeps per tempering step in the budget
    refine = int(min(50, 0.4 * sweeps / max(check_runs, 1)))
    particles = int(0.6 * sweeps / (runs * moves))
    return particles, refine, per_sweep


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--model", choices=MODELS)
    p.add_argument("--budget", type=float, default=900.0, help="CPU seconds (default 900)")
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--particles", type=int)
    p.add_argument("--moves", type=int, default=5)
    p.add_argument("--cess", type=float, default=0.9)
    p.add_argument("--check-runs", type=int)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    t0 = time.process_time()
    try:
        from bnmfzoo._fitcli import read_matrix
        from bnmfzoo.inference.smc_masses import smc_mode_masses

        X = np.asarray(read_matrix(a.data).values, float)
        _check_data(X, a.rank)
        model_name = a.model or _guess_model(X)
        model = _build(X, a.rank, model_name)
        check_runs = a.check_runs if a.check_runs is not None else 32
        particles, refine, per_sweep = a.particles, 50, math.nan
        if particles is None:
            particles, refine, per_sweep = _pilot(model, a.budget, a.runs, a.moves, check_runs)
            if particles < 20 or refine < 5:
                raise ValueError(f"--budget {a.budget:g} CPU s is too small for this matrix: "
                                 f"one sweep takes {per_sweep * 1e3:.2f} ms, so {a.runs} runs "
                                 f"would get {particles} particles each (at least 20 needed) "
                                 f"and the check {refine} AIS steps per SMC step (at least 5)")
        print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, {model_name}, rank {a.rank}; "
              f"{a.runs} SMC runs x {particles} particles x {a.moves} sweeps per step, "
              f"{check_runs} AIS runs x {refine} steps per SMC step; "
              f"sweep {per_sweep * 1e3:.2f} ms", flush=True)
        out = smc_mode_masses(model, n_runs=a.runs, n_particles=particles, n_moves=a.moves,
                              cess=a.cess, check_runs=check_runs, check_refine=refine,
                              budget_s=a.budget,
                              random_seed=a.seed)
    except (ValueError, TypeError, FileNotFoundError) as err:
        msg = " ".join(str(err).split())
        print(f"error: {msg}")
        print(json.dumps({"modes": [], "cpu_s": round(time.process_time() - t0, 2),
                          "established": False, "error": msg}))
        return 2
    for k, m in enumerate(out["modes"]):
        print(f"mode {k}: SMC {m['mass']:.4f} [{m['low']:.4f}, {m['high']:.4f}] "
              f"(se {m['se']:.4f}, {m['n_members']} particles); AIS {m['mass_check']:.4f} "
              f"+- {m['check_se']:.4f}")
    print(f"log Z {out['log_z']:.2f} +- {out['log_z_se']:.2f}; temperatures "
          f"{out['settings']['n_temperatures']}; min final ESS {out['final_ess']:.2f}")
    print(out["statement"])
    cpu = time.process_time() - t0
    print(json.dumps({
        "modes": [{"mass": m["mass"], "low": m["low"], "high": m["high"],
                   "estimator": m["estimator"], "mass_check": m["mass_check"],
                   "check_se": m["check_se"]} for m in out["modes"]],
        "cpu_s": round(cpu, 2), "established": bool(out["established"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
