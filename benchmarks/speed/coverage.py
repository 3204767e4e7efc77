"""Coverage diagnostics: speed of ours vs the digest's naive loops, and the paper's exact values.

Ours: ``pairwise_distances`` (vectorized costs, numba exhaustive matching for R <= 5, scipy per
pair above) and ``covering_curve`` (numba greedy cover with incremental counts).
Baseline, measured in the same run: the per-pair Python loop with scipy
``linear_sum_assignment`` and the numpy greedy cover of the digest (§5.3-5.4 pseudo-code).
Paper values: Masood, Pan & Doshi-Velez (2016), All Modes columns of Tables 3-4 (small data).
Run: ``python -m benchmarks.speed.coverage`` (``make bench``).
"""

import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from bnmfzoo.diagnostics import (
    angle_distance,
    covering_curve,
    l1_distance,
    pairwise_distances,
)

REPEATS = 3


def naive_angle(A, B):
    An = A / np.linalg.norm(A, axis=0)
    Bn = B / np.linalg.norm(B, axis=0)
    C = np.arccos(np.clip(An.T @ Bn, 0.0, 1.0))
    r, c = linear_sum_assignment(C)
    return np.degrees(C[r, c].max())


def naive_pairwise(As):
    S = len(As)
    dm = np.zeros((S, S))
    for i in range(S):
        for j in range(i + 1, S):
            dm[i, j] = dm[j, i] = naive_angle(As[i], As[j])
    return dm


def naive_cover(dm, eps):
    N = dm <= eps
    unc = np.ones(len(dm), bool)
    k = 0
    while unc.any():
        j = np.argmax(N[:, unc].sum(1))
        unc &= ~N[j]
        k += 1
    return k


def timed(f, *args, repeats=REPEATS):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = f(*args)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def laurberg_pair():
    a = 0.5
    W = np.array([[a, 1, 1, a, 0, 0], [1, a, 0, 0, a, 1], [0, 0, a, 1, 1, a]])
    Q = np.array([[-1, 2, 2], [2, -1, 2], [2, 2, -1]]) / 3.0
    return W.T, W.T @ Q


def continuum_A(d):
    return np.vstack([np.eye(6), [1 - d] * 3 + [d] * 3])


def main():
    rng = np.random.default_rng(0)
    pairwise_distances(rng.random((3, 6, 3)))  # load numba caches outside the timings
    covering_curve(rng.random((3, 6, 3)), n_eps=3)
    print("== speed (median of 3; 2-core shared machine)")
    print(f"{'task':44s} {'ours [s]':>9s} {'naive [s]':>10s} {'ratio':>7s}")
    for S, D, R in ((400, 6, 3), (400, 7, 6)):
        As = rng.gamma(0.5, size=(S, D, R)) + 1e-3
        t_ours, dm = timed(pairwise_distances, As)
        t_naive, dm_ref = timed(naive_pairwise, As, repeats=1)
        assert np.allclose(dm, dm_ref, atol=1e-6)
        print(f"{f'pairwise angle S={S} D={D} R={R}':44s} {t_ours:9.3f} {t_naive:10.3f} "
              f"{t_naive / t_ours:7.1f}x")
    As = rng.gamma(0.5, size=(1000, 6, 3)) + 1e-3
    t_ours, dm = timed(pairwise_distances, As, repeats=1)
    print(f"{'pairwise angle S=1000 D=6 R=3 (paper size)':44s} {t_ours:9.3f} {'-':>10s}")
    grid = np.linspace(0, dm.max(), 100)
    t_ours, curve = timed(lambda: covering_curve(dm, eps=grid, distance="precomputed"))
    t_naive, ref = timed(lambda: [naive_cover(dm, e) for e in grid], repeats=1)
    assert curve.values.tolist() == ref
    print(f"{'covering curve S=1000, 100 eps':44s} {t_ours:9.3f} {t_naive:10.3f} "
          f"{t_naive / t_ours:7.1f}x")

    print("\n== exact values vs paper (All Modes, small data; paper has sigma ~1e-3 noise)")
    A1, A2 = laurberg_pair()
    S = 400
    grid_As = np.array([continuum_A((k + 0.5) / S) for k in range(S)])
    rows = [
        ("two modes: max angle (deg)", angle_distance(A1, A2), 36.965),
        ("two modes: max MM-l1", l1_distance(A1, A2), 0.67),
        ("two modes: mean angle, 2 equal modes", angle_distance(A1, A2) / 2, 18.467),
        ("infinite: max angle (deg)", angle_distance(continuum_A(0), continuum_A(1)), 44.973),
        ("infinite: max MM-l1", l1_distance(continuum_A(0), continuum_A(1)), 1.0),
        ("infinite: mean angle, delta ~ U[0,1]", pairwise_distances(grid_As).mean(), 16.572),
        ("infinite: mean MM-l1, delta ~ U[0,1]",
         pairwise_distances(grid_As, distance="l1").mean(), 0.373),
    ]
    print(f"{'quantity':40s} {'ours':>9s} {'paper':>9s}")
    for name, ours, paper in rows:
        print(f"{name:40s} {ours:9.4f} {paper:9.4f}")


if __name__ == "__main__":
    main()
