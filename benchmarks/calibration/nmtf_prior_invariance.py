"""False-failure rate and power of the fast GibbsNMTF-with-user-priors invariance test.

``tests/gaussian/test_nmtf_priors.py::test_nmtf_prior_sweep_keeps_the_posterior`` draws parameters
and
data from the prior, runs 3 sweeps from the drawn parameters and compares every scalar with an
independent prior sample (two-sample KS, Bonferroni at 1%). This script runs the same statistic
over many seeds (false-failure rate, and a second-level KS of each scalar's p-values across
seeds), or at a larger size to look for a small real defect::

    nice -n 15 python -m benchmarks.calibration.nmtf_prior_invariance rates_fixed_sigma \\
        --seeds 1000:1100
    nice -n 15 python -m benchmarks.calibration.nmtf_prior_invariance rates_fixed_sigma \\
        --seeds 1:3 --n-sims 10000 --n-sweeps 10
"""

import argparse
import sys
import time

import numpy as np
from scipy import stats

from benchmarks._common import ROOT


def main(argv=None):
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", choices=["mixed", "rates_fixed_sigma"])
    ap.add_argument("--seeds", default="1000:1100")
    ap.add_argument("--n-sims", type=int, default=1000)
    ap.add_argument("--n-sweeps", type=int, default=3)
    ap.add_argument("--wrong", action="store_true", help="F's and G's prior precision doubled")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    from test_nmtf_priors import invariance_pvalues

    start, stop = (int(x) for x in args.seeds.split(":"))
    rows, fails, t0 = [], 0, time.process_time()
    for seed in range(start, stop):
        p = invariance_pvalues(args.config, seed, n_sims=args.n_sims, n_sweeps=args.n_sweeps,
                               wrong=args.wrong)
        names = list(p)
        rows.append([p[n] for n in names])
        worst = min(p, key=p.get)
        failed = p[worst] < 0.01 / len(p)
        fails += failed
        print(f"seed {seed}: min p {p[worst]:.3g} ({worst}, {len(p)} scalars) "
              f"{'FAIL' if failed else 'pass'}", flush=True)
    P = np.array(rows)
    n = len(rows)
    ci = stats.binomtest(fails, n).proportion_ci(method="exact")
    print(f"{args.config}{' (wrong)' if args.wrong else ''}: {fails}/{n} seeds failed (95% CI "
          f"{100 * ci.low:.1f}-{100 * ci.high:.1f}%), {args.n_sims} sims x {args.n_sweeps} "
          f"sweeps, {(time.process_time() - t0) / n:.1f} CPU s a seed")
    if n >= 5:
        second = min(1.0, P.shape[1] * min(stats.kstest(P[:, j], "uniform").pvalue
                                           for j in range(P.shape[1])))
        print(f"  second level: KS of each scalar's p-values across seeds, Bonferroni-adjusted "
              f"min p = {second:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
