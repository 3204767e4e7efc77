"""Stein kernel matrix, scores and weights on faces-sized problems (Masood & Doshi-Velez 2019).

Faces (CBCL) in the paper: A is 4096 x 10 (pixels x rank), W is 10 x 400; M = 50 particles
(Appendix D collection size). Random data of that size.

* Stein matrix: our Gram-matrix closed form (``stein_kernel_matrix``) against a naive double loop
  over pairs computing eq. 3 pair by pair (written here), same kernel, same inputs; medians.
* Scores: ``score_function`` on a user-written exponential-Gaussian pm.Model of that size
  (compile once, then one call per particle).
* Weights: the simplex QP for M = 50 with each solver.

Paper values: the paper reports no numeric timings for the KSD or the weights (figures only; the
weight time "depends only on M", Fig. 33, and is excluded from its runtimes), so there is no
paper number to print beside ours.

Run: ``python -m benchmarks.speed.stein [--reps 5] [--numba]``.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread)
from bnmfzoo.diagnostics import score_function, stein_kernel_matrix, stein_weights
from bnmfzoo.diagnostics._stein._kernels import imq_kernel

D, N, R, M = 4096, 400, 10, 50


def naive_stein_matrix(pos, sco, kernel):
    """Eq. 3 pair by pair (the textbook double loop), blocks given as dicts of (M, d_g)."""
    names = list(pos)
    m = len(pos[names[0]])
    K = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            delta = {g: pos[g][i] - pos[g][j] for g in names}
            r2 = {g: np.array(delta[g] @ delta[g]) for g in names}
            k, d1, d2 = kernel.evaluate(r2)
            val = sum(sco[g][i] @ sco[g][j] for g in names) * k
            for g in names:
                # grad_x k = 2 d1 delta, grad_y k = -2 d1 delta
                val += sco[g][j] @ (2 * d1[g] * delta[g]) + sco[g][i] @ (-2 * d1[g] * delta[g])
                val += -2 * len(delta[g]) * d1[g] - 4 * r2[g] * d2[g]
            K[i, j] = val
    return K


def timed(fn, reps):
    times = []
    out = None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def bench_matrix(rng, reps):
    A = rng.dirichlet(np.ones(D), size=(M, R)).transpose(0, 2, 1)  # column-stochastic
    W = rng.exponential(size=(M, R, N)) * 50
    pos = {"A": A.reshape(M, -1), "W": W.reshape(M, -1)}
    sco = {"A": rng.normal(size=pos["A"].shape) * 100, "W": rng.normal(size=pos["W"].shape)}
    kernel = imq_kernel()
    t_ours, K = timed(lambda: stein_kernel_matrix(pos, sco, kernel=kernel), reps)
    t_naive, K_naive = timed(lambda: naive_stein_matrix(pos, sco, kernel), max(1, reps // 2))
    err = np.abs(K - K_naive).max() / np.abs(K_naive).max()
    print(f"Stein matrix, M={M}, A {D}x{R}, W {R}x{N} (d={D * R + R * N})")
    print(f"  ours (Gram matrices)   median {t_ours * 1e3:9.2f} ms")
    print(f"  naive double loop      median {t_naive * 1e3:9.2f} ms")
    print(f"  speed-up naive/ours    {t_naive / t_ours:9.1f}x   max rel. difference {err:.1e}")
    return K


def bench_scores(rng, reps, numba):
    import pymc as pm

    X = rng.random((D, N))
    with pm.Model() as model:
        A = pm.Exponential("A", 1.0, shape=(D, R))
        W = pm.Exponential("W", 1.0, shape=(R, N))
        pm.Normal("X", A @ W, 0.1, observed=X)
    pts = {"A": rng.exponential(size=(M, D, R)), "W": rng.exponential(size=(M, R, N))}
    modes = [("python VM (default)", None)] + ([("NUMBA", "NUMBA")] if numba else [])
    print(f"Scores of a {D}x{N} exponential-Gaussian pm.Model at M={M} points")
    for label, mode in modes:
        t = time.perf_counter()
        fn = score_function(model, mode=mode)
        fn({k: v[:1] for k, v in pts.items()})
        t_compile = time.perf_counter() - t
        t_call, _ = timed(lambda: fn(pts), reps)
        print(f"  {label:22s} compile+first {t_compile:7.2f} s   {M} points median "
              f"{t_call * 1e3:8.1f} ms ({t_call / M * 1e3:.2f} ms/point)")


def bench_weights(K, reps):
    print(f"Stein weights (simplex QP), M={M}")
    base = None
    for solver in ("CLARABEL", "SCS", "OSQP", "NUMPY"):
        stein_weights(K, solver=solver)  # warm up (imports)
        t, (w, ksd) = timed(
            lambda s=solver: stein_weights(K, solver=s, return_discrepancy=True), reps
        )
        base = ksd if base is None else base
        print(f"  {solver:9s} median {t * 1e3:8.1f} ms   w'Kw = {ksd:.8e} "
              f"(rel. to CLARABEL {ksd / base - 1:+.1e})   nonzero weights {(w > 1e-8).sum()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--numba", action="store_true", help="also time the NUMBA mode")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    K = bench_matrix(rng, args.reps)
    bench_scores(rng, max(1, args.reps // 2), args.numba)
    bench_weights(K, args.reps)
    print("paper: no numeric KSD/weight timings are reported (figures only)")


if __name__ == "__main__":
    main()
