"""Run the sampling-quality case study and print the paper's tables with its numbers beside ours.

Usage (from the project root)::

    python -m benchmarks.reproduce.sampling_quality.run --reps 10 --draws 10000  # paper size
    python -m benchmarks.reproduce.sampling_quality.reduced                      # reduced

The protocol itself (one repetition) is :mod:`bnmfzoo.experiments.sampling_quality`.

Each cell is ``ours: mean [Q1, median, Q3] over reps | paper mean``. After the tables the
script checks the paper's three conclusions on every data set it ran and prints the covering
curves (C_eps at a few eps, rep-mean) per method.
"""

import argparse
import time

import numpy as np

from benchmarks.reproduce.sampling_quality.paper_values import PAPER
from bnmfzoo.experiments.sampling_quality import (
    DATASETS,
    METHODS,
    covering_curves,
    run_repetition,
    summarize,
)

METRICS = (
    ("loglik", "Mean log-likelihood (Tables 1/5)", "{:.3g}"),
    ("iat", "IAT (Tables 2/6)", "{:.1f}"),
    ("max_angle", "Max pairwise max-angle, degrees (Tables 3/7)", "{:.2f}"),
    ("max_l1", "Max pairwise MM-l1 (Tables 3/7)", "{:.3f}"),
    ("mean_angle", "Mean pairwise max-angle, degrees (Tables 4/8)", "{:.2f}"),
    ("mean_l1", "Mean pairwise MM-l1 (Tables 4/8)", "{:.3f}"),
)


def run(datasets, *, reps, draws, baseline, restarts, cover, methods, seed=0, progressbar=False):
    """Run ``reps`` repetitions of every data set; returns ``{dataset: [rep results]}``."""
    results = {}
    for name in datasets:
        results[name] = []
        for r in range(reps):
            t = time.perf_counter()
            res = run_repetition(name, rep_seed=seed * 1000 + r, n_draws=draws,
                                 n_baseline=baseline, n_restarts=restarts, n_cover=cover,
                                 methods=methods, progressbar=progressbar)
            res.pop("samples")
            results[name].append(res)
            timing = ", ".join(f"{k} {v:.1f}s" for k, v in res["timings"].items())
            print(f"[{name} rep {r}] {time.perf_counter() - t:.1f}s ({timing})", flush=True)
    return results


def print_tables(results, methods):
    """Print one table per metric: rows data sets, columns methods."""
    for key, title, fmt in METRICS:
        print(f"\n### {title}: ours mean [Q1, median, Q3] | paper mean")
        print("| data | " + " | ".join(methods) + " |")
        print("|---" * (len(methods) + 1) + "|")
        for name, reps in results.items():
            cells = []
            for m in methods:
                vals = [r["metrics"][m].get(key, np.nan) for r in reps if m in r["metrics"]]
                mean, q1, med, q3 = summarize(vals)
                paper = PAPER.get(name, {}).get(key, {}).get(m, np.nan)
                ours = "—" if np.isnan(mean) else (
                    f"{fmt.format(mean)} [{fmt.format(q1)}, {fmt.format(med)}, {fmt.format(q3)}]")
                cells.append(f"{ours} | {fmt.format(paper)}")
            print(f"| {name} | " + " | ".join(cells) + " |")
        n_rrf = [r["metrics"].get("rrf", {}).get("n", 0) for reps in results.values() for r in reps]
    if any(n_rrf):
        print(f"\nfiltered restarts kept per rep: {n_rrf}")


def print_curves(results, n_eps=100):
    """Rep-mean covering curves; printed at 10 eps values (degrees / l1)."""
    for name, reps in results.items():
        for dist in ("angle", "l1"):
            grid, curves = covering_curves(reps, dist, n_eps=n_eps)
            idx = np.linspace(0, len(grid) - 1, 10).astype(int)
            print(f"\n{name} covering curve ({dist}); eps = "
                  + ", ".join(f"{g:.3g}" for g in grid[idx]))
            for m, c in curves.items():
                print(f"  {m:10s} " + " ".join(f"{v:7.1f}" for v in c[idx]))


def check_conclusions(results):
    """The paper's conclusions, checked on the two-mode data sets that ran; returns dict."""
    out = {}
    for name, reps in results.items():
        if not name.startswith("two"):
            continue
        mt = [r["metrics"] for r in reps]
        mean = lambda m, k: float(np.mean([x[m][k] for x in mt if m in x and k in x[m]]))  # noqa: E731
        checks = {}
        if "gibbs" in mt[0]:
            checks["gibbs stays in one mode"] = mean("gibbs", "max_angle") < 1.0
        if "hmc" in mt[0]:
            checks["hmc stays in one mode"] = mean("hmc", "max_angle") < 1.0
        if "rrf" in mt[0] and name == "two":
            checks["filtered restarts reach both modes"] = (
                mean("rrf", "max_angle") > 0.5 * mean("all_modes", "max_angle"))
        if "rrf" in mt[0] and name == "two_large":
            # at 500 x 50 the paper's own RRf covers only half the All-Modes angle (5.08 vs
            # 10.78 degrees): its finding there is that the filter keeps few restarts
            kept = np.mean([x["rrf"]["n"] / x["rr"]["n"] for x in mt])
            checks[f"filter keeps few restarts ({100 * kept:.1f}%; paper 0.05-3.1%)"] = kept < 0.1
            if all(x["rrf"]["n"] > 1 for x in mt):  # needs the paper's 10,000 restarts
                rrf, full = mean("rrf", "max_angle"), mean("all_modes", "max_angle")
                checks[f"filtered restarts reach both modes ({rrf:.2f} of All Modes' "
                       f"{full:.2f} degrees; paper 5.08 of 10.78)"] = rrf > 0.5 * full
        if "gibbs" in mt[0]:
            checks["IAT: chain IAT >> 1 although coverage tiny"] = mean("gibbs", "iat") > 10.0
        out[name] = checks
        for k, v in checks.items():
            print(f"{name}: {k}: {'yes' if v else 'NO'}")
    return out


def main(argv=None):
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--draws", type=int, default=10_000, help="Gibbs / HMC draws")
    p.add_argument("--baseline", type=int, default=None, help="One/All-Modes samples")
    p.add_argument("--restarts", type=int, default=None, help="random restarts")
    p.add_argument("--cover", type=int, default=1000, help="first samples used for coverage")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--progressbar", action="store_true")
    args = p.parse_args(argv)
    methods = tuple(m for m in METHODS if m in args.methods)
    print(f"sampling-quality case study: reps={args.reps} draws={args.draws} "
          f"baseline={args.baseline or args.draws} restarts={args.restarts or args.draws} "
          f"cover={args.cover} sigma=1e-3 (paper: 10 reps x 10,000 samples, first 1000 covered)")
    results = run(args.datasets, reps=args.reps, draws=args.draws, baseline=args.baseline,
                  restarts=args.restarts, cover=args.cover, methods=methods, seed=args.seed,
                  progressbar=args.progressbar)
    print_tables(results, methods)
    print_curves(results)
    print()
    check_conclusions(results)
    return results


if __name__ == "__main__":
    main()
