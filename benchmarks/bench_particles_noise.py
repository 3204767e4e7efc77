"""Sec. 8.2 of Masood & Doshi-Velez (2019): when does Q-Transform beat random restarts?

Target ``X = max(0, A W + eps N)`` with ``A, W ~ |N(0, 1)|`` (D = N = 500, R = 20 in the paper) and
Gaussian ``N`` rescaled so that ``||N|| = ||A W||``. For each noise level: the median
initialization error ``||X - A0 W0|| / ||X||`` and the median time to converge (scikit-learn cd)
of Q-Transform inits (the 100-pair bank) and random inits, and their ratios (Q / random).
Paper (Fig. 13, no numbers): both ratios below 1 at low noise, the time ratio approaching 1 at
high noise. Run: ``.venv/bin/python benchmarks/bench_particles_noise.py [--size 500 --n 100]``.
"""

import argparse
import os
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402


def main():
    from bnmfzoo.inference._particle_init import random_init, solve_nmf
    from bnmfzoo.inference.qtransform import apply_q_transform, generate_q_bank, svd_symmetric

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--size", type=int, default=200)
    p.add_argument("--rank", type=int, default=20)
    p.add_argument("--n", type=int, default=20, help="inits per method and noise level")
    p.add_argument("--levels", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1, 1.0, 10.0])
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    bank = generate_q_bank()
    A = np.abs(rng.standard_normal((a.size, a.rank)))
    W = np.abs(rng.standard_normal((a.rank, a.size)))
    AW = A @ W
    noise = rng.standard_normal(AW.shape)
    noise *= np.linalg.norm(AW) / np.linalg.norm(noise)
    print(f"D = N = {a.size}, R = {a.rank}, {a.n} inits per method (paper: 500, 20, 100)")
    print(f"{'eps':>8}{'err Q':>10}{'err rand':>10}{'ratio':>8}{'t Q':>9}{'t rand':>9}{'ratio':>8}")
    for eps in a.levels:
        X = np.maximum(AW + eps * noise, 0.0)
        nx = np.linalg.norm(X)
        svd = svd_symmetric(X, 3)
        res = {"q": ([], []), "r": ([], [])}
        for i in range(a.n):
            g = np.random.default_rng([a.seed, i])
            for key in ("q", "r"):
                if key == "q":
                    A0, W0 = apply_q_transform(X, bank.QA[i % len(bank)], bank.QW[i % len(bank)],
                                               a.rank, rng=g, svd=svd)
                else:
                    A0, W0 = random_init(X, a.rank, g)
                res[key][0].append(np.linalg.norm(X - A0 @ W0) / nx)
                t = time.perf_counter()
                solve_nmf(X, A0, W0, max_iter=500)
                res[key][1].append(time.perf_counter() - t)
        eq, er = np.median(res["q"][0]), np.median(res["r"][0])
        tq, tr = np.median(res["q"][1]), np.median(res["r"][1])
        print(f"{eps:>8.0e}{eq:>10.3f}{er:>10.3f}{eq / er:>8.3f}"
              f"{tq:>9.3f}{tr:>9.3f}{tq / tr:>8.3f}")
    print("paper (Fig. 13): both ratios < 1 at low noise; time ratio -> 1 at high noise")


if __name__ == "__main__":
    main()
