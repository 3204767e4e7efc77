"""Gold-standard comparison at equal CPU time (issue 16, item 5).

For each problem (:mod:`.problems`) the reference posterior is loaded from the cache or built
(:mod:`.reference`: Gibbs chains per mode, masses by parallel tempering, checked by bridge
sampling). Each method (:mod:`.methods`) then gets the same budget of process CPU seconds: two
calibration runs at sizes ``s0`` and ``2 s0`` (``s0`` doubled until the second costs a tenth
of the budget more than the first) fit ``cpu = a + b * size`` and the scored run uses
``size = (budget - a) / b`` (clipped to the method's range); the CPU of the scored run itself is
reported. Scores (:mod:`.scores`): energy distances on ``A @ W / sigma`` and on the aligned
unit-l1 basis, errors of the posterior mean and sd of ``A @ W`` in reference sd, the fraction of
reference modes covered, the held-out log predictive density and the weights' ``n_eff``. The
first row ("reference") scores a second resample of the reference itself (the noise floor).

Usage::

    python -m benchmarks.reproduce.gold_standard.run [--quick] [--budget 20] \\
        [--problems laurberg ccle swimmer] [--methods qt_stein gibbs ...]

``--quick`` uses the quick reference and a 5 s budget: a smoke test only (its Laurberg mode
masses were 0.959/0.041 against the full reference's 0.900 ± 0.010 / 0.100). Rows are written to
``benchmarks/results/gold_standard_<problem><tag>.json``.
"""

import argparse
import json
import resource
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS
from benchmarks.reproduce.gold_standard.methods import METHODS
from benchmarks.reproduce.gold_standard.problems import PROBLEMS, make_problem
from benchmarks.reproduce.gold_standard.reference import load_reference
from benchmarks.reproduce.gold_standard.scores import reference_floor, score


def _cpu():
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime \
        + resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime


def timed(run, prob, model, size, seed):
    c0 = _cpu()
    out = run(prob, model, size, seed)
    return out, _cpu() - c0


def calibrate(name, prob, model, budget, seed):
    run, s0, s_max, fixed = METHODS[name]
    if fixed:
        return s0, float("nan"), float("nan")
    _, c1 = timed(run, prob, model, s0, seed + 101)
    # double the probe until doubling it costs a tenth of the budget more (compilation,
    # tuning and other fixed costs dominate tiny runs)
    while True:
        _, c2 = timed(run, prob, model, 2 * s0, seed + 102)
        if c2 - c1 >= budget / 10 or 4 * s0 > s_max:
            break
        s0, c1 = 2 * s0, c2
    b = max((c2 - c1) / s0, 1e-6)
    a = max(c1 - b * s0, 0.0)
    size = int(np.clip((budget - a) / b, 1, s_max))
    return size, a, b


FMT = ("{method:>15} {size:>7} {cpu:>6.1f} {ed_AW:>8.3f} {ed_A:>7.4f} {mean_err:>8.3f} "
       "{sd_err:>7.3f} {coverage:>5.2f} {lpd:>8.3f} {n_eff:>7.1f}")
HEAD = (f"{'method':>15} {'size':>7} {'CPU s':>6} {'ED A@W':>8} {'ED A':>7} {'mean err':>8} "
        f"{'sd err':>7} {'cover':>5} {'LPD':>8} {'n_eff':>7}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=None, help="CPU seconds per method")
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="", help="suffix of the results file")
    args = ap.parse_args(argv)
    budget = args.budget or (5.0 if args.quick else 20.0)
    ref_budget = "quick" if args.quick else "full"
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in args.problems:
        prob = make_problem(name)
        ref = load_reference(prob, budget=ref_budget)
        meta = ref["meta"]
        print(f"\n== {name}: X {prob.X.shape}, rank {prob.rank}, sigma {prob.sigma:.4g}, "
              f"{int(prob.test.sum())} held-out entries; budget {budget:g} CPU s per method")
        print(f"   reference: {meta['n_modes']} modes, masses "
              + ", ".join(f"{m:.3f}±{s:.3f}" for m, s in zip(meta["mass"], meta["mass_se"]))
              + (f" (bridge sampling: {', '.join(f'{m:.3f}' for m in meta['bridge_mass'])})"
                 if meta.get("bridge_mass") else "")
              + f"; within-mode R-hat A@W <= {max(meta['rhat_AW']):.3f}, aligned A <= "
              f"{max(meta['rhat_A']):.3f}")
        print(HEAD)
        rows = [{"method": "reference", "size": 0, "cpu": meta["cpu_seconds"],
                 **reference_floor(prob, ref)}]
        print(FMT.format(**rows[0]))
        model = prob.model()
        for m in args.methods:
            try:
                size, a, b = calibrate(m, prob, model, budget, args.seed)
                (A, W, w), cpu = timed(METHODS[m][0], prob, model, size, args.seed)
                row = {"method": m, "size": size, "cpu": cpu, "calib_a": a, "calib_b": b,
                       **score(prob, ref, A, W, w)}
                print(FMT.format(**row), flush=True)
            except Exception as err:  # noqa: BLE001 - a failing method is a row, not a crash
                row = {"method": m, "error": f"{type(err).__name__}: {err}"[:200]}
                print(f"{m:>15}  failed: {row['error']}", flush=True)
            rows.append(row)
            RESULTS.mkdir(parents=True, exist_ok=True)
            with open(RESULTS / f"gold_standard_{name}{args.tag}.json", "w") as f:
                json.dump({"problem": name, "budget": budget, "reference": meta, "rows": rows},
                          f, indent=1)


if __name__ == "__main__":
    main()
