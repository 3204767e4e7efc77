"""Summarize gold-standard runs over seeds: energy distance on A@W per method and seed.

Reads ``benchmarks/results/gold_standard_<problem><tag>.json`` for every tag given (default
``_s0 … _s4``; rows of a file ``<tag>_<suffix>.json``, e.g. ``_s0_nuts.json``, replace the
same method's rows of ``<tag>.json``), and prints per problem: each method's ED on ``A@W / σ``
per seed, its median, its median sd error, and in how many seeds it was the most accurate
method (lowest ED). The reference's own floor (a second resample) is printed first.

Usage::

    python -m benchmarks.reproduce.gold_standard.summarize [--seeds 0 1 2 3 4]
"""

import argparse
import json

import numpy as np

from benchmarks._common import RESULTS
from benchmarks.reproduce.gold_standard.problems import PROBLEMS


def load_rows(problem, seed):
    """Method -> row for one problem and seed (override files applied), or {} when absent."""
    rows = {}
    main = RESULTS / f"gold_standard_{problem}_s{seed}.json"
    if not main.exists():
        return rows
    for path in [main, *sorted(RESULTS.glob(f"gold_standard_{problem}_s{seed}_*.json"))]:
        for row in json.loads(path.read_text())["rows"]:
            rows[row["method"]] = row
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    args = ap.parse_args(argv)
    for problem in args.problems:
        per_seed = {s: load_rows(problem, s) for s in args.seeds}
        seeds = [s for s in args.seeds if per_seed[s]]
        if not seeds:
            continue
        methods = []
        for s in seeds:
            methods += [m for m in per_seed[s] if m not in methods]
        wins = dict.fromkeys(methods, 0)
        for s in seeds:
            scored = {m: r["ed_AW"] for m, r in per_seed[s].items()
                      if m != "reference" and "ed_AW" in r}
            if scored:
                wins[min(scored, key=scored.get)] += 1
        print(f"\n== {problem}: energy distance on A@W/sigma, seeds {seeds}")
        print(f"{'method':>15} " + " ".join(f"{'s' + str(s):>8}" for s in seeds)
              + f" {'median':>8} {'sd err':>7} {'CPU s':>6} {'best in':>7}")
        for m in methods:
            eds = [per_seed[s].get(m, {}).get("ed_AW", np.nan) for s in seeds]
            sds = [per_seed[s].get(m, {}).get("sd_err", np.nan) for s in seeds]
            cpu = [per_seed[s].get(m, {}).get("cpu", np.nan) for s in seeds]
            best = "" if m == "reference" else f"{wins[m]}/{len(seeds)}"
            print(f"{m:>15} " + " ".join(f"{e:>8.3g}" for e in eds)
                  + f" {np.nanmedian(eds):>8.3g} {np.nanmedian(sds):>7.3g} "
                  f"{np.nanmedian(cpu):>6.1f} {best:>7}")


if __name__ == "__main__":
    main()
