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
    ap.add_argument("--markdown", action="store_true",
                    help="one table: median [min, max] of ED per method and problem, wins")
    args = ap.parse_args(argv)
    if args.markdown:
        return markdown(args.problems, args.seeds)
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


def markdown(problems, seeds):
    """Print a Markdown table: per problem, ED on A@W as median [min, max] over seeds, and the
    number of seeds in which the method had the lowest ED."""
    cells, methods, n_seeds = {}, [], {}
    for problem in problems:
        per_seed = {s: load_rows(problem, s) for s in seeds}
        used = [s for s in seeds if per_seed[s]]
        n_seeds[problem] = len(used)
        wins = {}
        for s in used:
            scored = {m: r["ed_AW"] for m, r in per_seed[s].items()
                      if m != "reference" and "ed_AW" in r}
            if scored:
                best = min(scored, key=scored.get)
                wins[best] = wins.get(best, 0) + 1
        for s in used:
            for m in per_seed[s]:
                if m not in methods:
                    methods.append(m)
        for m in methods:
            eds = [per_seed[s][m]["ed_AW"] for s in used if "ed_AW" in per_seed[s].get(m, {})]
            if eds:
                cells[m, problem] = (f"{np.median(eds):.3g} [{min(eds):.3g}, {max(eds):.3g}]"
                                     + ("" if m == "reference"
                                        else f", best {wins.get(m, 0)}/{len(eds)}"))
    print("| method | " + " | ".join(f"{p} ({n_seeds[p]} seeds)" for p in problems) + " |")
    print("|---" * (len(problems) + 1) + "|")
    for m in methods:
        print(f"| {m} | " + " | ".join(cells.get((m, p), "–") for p in problems) + " |")


if __name__ == "__main__":
    main()
