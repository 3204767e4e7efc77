"""Benchmark: the Gibbs sweep's two paths (Gram matrices vs residual) and the automatic choice.

Run with ``python -m benchmarks.speed.gibbs_paths [--ranks 4 10 20] [--full]``.

For scattered (every entry missing at random) and block-missing masks (row groups x column
groups missing together, plus one observed entry per row and column), 200 x 100 and 1000 x 500
(``--full``: also 4000 x 2000),
20-90 % observed: the median time of one full sweep on each path, the path the cost model in
``bnmfzoo.inference.gaussian.gibbs._gram.choose_half_sweep`` picks, and the ratio of the chosen
path's
time to the faster one (1.00 = the right choice). ``--fit`` refits the cost model's constants
(non-negative least squares on relative error) to the timings and prints them.
"""

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.optimize import nnls  # noqa: E402

from bnmfzoo.inference.gaussian.gibbs import _core as gc  # noqa: E402
from bnmfzoo.models._spec import GaussianHyper

HYPER = GaussianHyper(lambda_A=0.1, lambda_W=0.1)


def make_data(D, N, frac, kind, rng):
    """Exponential-Gaussian data with a scattered or block-missing mask."""
    X = rng.exponential(1.0, (D, 5)) @ rng.exponential(1.0, (5, N)) + rng.normal(0, 0.5, (D, N))
    if kind == "scattered":
        observed = rng.random((D, N)) < frac
    else:
        row_group, col_group = rng.integers(0, 12, D), rng.integers(0, 8, N)
        observed = (rng.random((12, 8)) < frac)[row_group][:, col_group]
    observed[np.arange(D), rng.integers(0, N, D)] = True
    observed[rng.integers(0, D, N), np.arange(N)] = True
    return np.where(observed, X, np.nan)


def sweep_time(X, rank, kernel, repeats):
    """Median seconds of one sweep on ``kernel`` (after one untimed sweep)."""
    obs = gc.observed_entries(X)
    rng = np.random.default_rng(0)
    st = gc.nmf_state(np.ones((X.shape[0], rank)), np.ones((rank, X.shape[1])), 1.0, None, obs)
    gc.nmf_sweep(st, obs, HYPER, rng, kernel=kernel)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gc.nmf_sweep(st, obs, HYPER, rng, kernel=kernel)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), obs


def fit_constants(rows):
    """Refit the per-operation costs of both paths (ns) to the measured whole sweeps."""
    def gram_features(r):
        D, N, R = r["D"], r["N"], r["rank"]
        return [2 * D * N * R, r["terms"] * R * R, r["patterns"] * R * R, 2.0]

    def residual_features(r):
        return [2 * r["n_obs"] * r["rank"], (r["D"] + r["N"]) * r["rank"], 2.0]

    for name, features in (("gram", gram_features), ("residual", residual_features)):
        F = np.array([features(r) for r in rows], dtype=float)
        t = np.array([r[name] for r in rows]) * 1e9
        c, _ = nnls(F / t[:, None], np.ones_like(t))
        rel = np.abs(F @ c / t - 1)
        print(f"  {name:8s} ns per operation {np.round(c, 3).tolist()}  "
              f"median |relative error| {np.median(rel):.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[4, 10, 20])
    parser.add_argument("--full", action="store_true", help="also 4000 x 2000 (about 10 min)")
    parser.add_argument("--fit", action="store_true", help="refit the cost model's constants")
    args = parser.parse_args()
    shapes = [(200, 100), (1000, 500)] + ([(4000, 2000)] if args.full else [])
    rng = np.random.default_rng(1)
    rows = []
    print(f"{'shape':>10} {'mask':>9} {'obs':>5} {'R':>3} {'gram ms':>9} {'resid ms':>9} "
          f"{'auto':>19} {'chosen/best':>11}")
    for rank in args.ranks:
        for D, N in shapes:
            for frac in (0.2, 0.5, 0.9):
                for kind in ("scattered", "block"):
                    X = make_data(D, N, frac, kind, rng)
                    repeats = 15 if D * N < 1e6 else 5
                    t_gram, obs = sweep_time(X, rank, "gram", repeats)
                    t_res, _ = sweep_time(X, rank, "residual", repeats)
                    auto = obs.half_sweep_paths(rank)
                    # a mixed choice is scored by the slower of the two paths (an upper bound)
                    chosen = {"gram": t_gram, "residual": t_res}
                    t_auto = max(chosen[p] for p in auto)
                    ratio = t_auto / min(t_gram, t_res)
                    rows.append(dict(D=D, N=N, rank=rank, n_obs=obs.n_observed, gram=t_gram,
                                     residual=t_res, ratio=ratio,
                                     terms=obs.row_patterns.n_tree_entries
                                     + obs.col_patterns.n_tree_entries,
                                     patterns=obs.row_patterns.n_patterns
                                     + obs.col_patterns.n_patterns))
                    print(f"{D:>5}x{N:<5} {kind:>9} {frac:>5.1f} {rank:>3} {t_gram * 1e3:>9.2f} "
                          f"{t_res * 1e3:>9.2f} {'/'.join(auto):>19} {ratio:>11.2f}", flush=True)
    ratios = np.array([r["ratio"] for r in rows])
    print(f"chosen path / faster path: median {np.median(ratios):.2f}, worst {ratios.max():.2f}; "
          f"{int((ratios > 1.1).sum())} of {ratios.size} cases more than 10 % slower")
    if args.fit:
        fit_constants(rows)


if __name__ == "__main__":
    main()
