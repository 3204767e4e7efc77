"""Seconds per collapsed sweep / CVB0 iteration (K = 100): numba kernels vs a NumPy sweep.

The NumPy baseline is a straightforward implementation of the same sweep (Eq. 25 / Eq. 36):
a Python loop over observed entries with the K-vector conditional vectorized in NumPy.
The authors' compiled Rcpp sampler, measured on these machines: 0.39 s per Gibbs sweep on
lastfm, 19.6 ms on parliament, 0.76 s per CVB0 iteration on lastfm. Target: >= 2x faster.
Run: ``python -m benchmarks.speed.nbmf``.
"""

import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets import load_nbmf
from bnmfzoo.inference.binary._core import (
    BetaDirChain,
    DirDirChain,
    cvb0_counts,
    cvb0_sweep,
    observed_entries,
)

K = 100
RCPP = {("lastfm", "gibbs"): 0.39, ("parliament", "gibbs"): 0.0196, ("lastfm", "cvb0"): 0.76}


def numpy_betadir_sweep(rows, cols, v, z, L, C1, C0, g, a, b, u):
    """Reference: same sweep, one NumPy vector op per entry."""
    for i in range(rows.size):
        f, n, k = rows[i], cols[i], z[i]
        L[f, k] -= 1
        (C1 if v[i] else C0)[n, k] -= 1
        lik = (a + C1[n]) if v[i] else (b + C0[n])
        p = (g + L[f]) * lik / (a + b + C1[n] + C0[n])
        c = np.cumsum(p)
        k = min(int(np.searchsorted(c, u[i] * c[-1], side="right")), K - 1)
        z[i] = k
        L[f, k] += 1
        (C1 if v[i] else C0)[n, k] += 1


def median_time(fn, repeats):
    """Median CPU seconds (process time: the machine is shared, wall time is noisy)."""
    times, walls = [], []
    for _ in range(repeats):
        t, w = time.process_time(), time.perf_counter()
        fn()
        times.append(time.process_time() - t)
        walls.append(time.perf_counter() - w)
    WALL.append(float(np.median(walls)))
    return float(np.median(times))


WALL = []


def main():
    rng = np.random.default_rng(0)
    g, a, b = np.full(K, 1.0 / K), np.ones(K), np.ones(K)
    print("CPU seconds per sweep / iteration (median); wall-clock medians listed at the end")
    print(f"{'data':<11}{'method':<16}{'ours (s)':>10}{'numpy (s)':>11}{'np/ours':>9}"
          f"{'Rcpp (s)':>10}{'Rcpp/ours':>10}")
    for name in ("parliament", "lastfm"):
        X = load_nbmf(name).values
        mask = ~np.isnan(X)
        rows, cols, v = observed_entries(np.nan_to_num(X), mask)
        D, N = X.shape
        chain = BetaDirChain(rows, cols, v, D, N, g, a, b, rng)
        chain.sweep(rng)  # compile / warm up
        for _ in range(20):  # leave the random start (sweeps get cheaper as counts sparsify)
            chain.sweep(rng)
        ours = median_time(lambda: chain.sweep(rng), 15)
        z, L, C1, C0 = chain.z.copy(), chain.L.copy(), chain.C1.copy(), chain.C0.copy()
        u = rng.random(rows.size)
        ref = median_time(lambda: numpy_betadir_sweep(rows, cols, v, z, L, C1, C0, g, a, b, u),
                          1 if name == "lastfm" else 3)
        r = RCPP.get((name, "gibbs"))
        print(f"{name:<11}{'Beta-Dir Gibbs':<16}{ours:>10.4f}{ref:>11.3f}{ref / ours:>9.1f}"
              f"{r if r else float('nan'):>10.4f}{(r / ours) if r else float('nan'):>10.1f}")

        dd = DirDirChain(rows, cols, v, D, N, g, np.ones(K), rng)
        dd.sweep(rng)
        for _ in range(20):
            dd.sweep(rng)
        ours_dd = median_time(lambda: dd.sweep(rng), 15)
        print(f"{name:<11}{'Dir-Dir Gibbs':<16}{ours_dd:>10.4f}{'':>11}{'':>9}{'':>10}{'':>10}")

        q = np.zeros((rows.size, K))
        q[np.arange(rows.size), rng.integers(0, K, rows.size)] = 1.0

        def cvb0_iter():
            Lq, C1q, C0q = cvb0_counts(rows, cols, v, q, D, N)
            cvb0_sweep(rows, cols, v, q, Lq, C1q, C0q, g, a, b)

        cvb0_iter()
        ours_vb = median_time(cvb0_iter, 5)
        r = RCPP.get((name, "cvb0"))
        print(f"{name:<11}{'Beta-Dir CVB0':<16}{ours_vb:>10.4f}{'':>11}{'':>9}"
              f"{r if r else float('nan'):>10.4f}{(r / ours_vb) if r else float('nan'):>10.1f}")


if __name__ == "__main__":
    main()
    print("wall-clock medians (same order):", " ".join(f"{w:.4f}" for w in WALL))
