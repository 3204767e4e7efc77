"""Q-Transform particles vs NUTS on the SILF model of the faces (Masood & Doshi-Velez 2019).

Claim checked (Sec. 7.2, Fig. 4/31-32): on SILF, Q-Transform particles reach a lower Stein
discrepancy in less time than MCMC; HMC/NUTS collections are not diverse.

Both methods are weighted by the same Stein QP (Algorithm 5) and scored with the same kernel.
Times follow App. E: particle generation only (Q-bank + SVD + init + solve; NUTS from the start
of ``pm.sample`` incl. compilation and tuning to the checkpoint); weighting excluded.

A 1000-draw NUTS run on the full 4096 x 400 faces (45k parameters) is far too slow on a shared
2-core machine, so the head-to-head runs on a subsample (``--size``/``--faces``); Q-Transform on
the full faces is timed as well. Run: ``make bench`` or
``.venv/bin/python benchmarks/bench_particles_vs_nuts.py [--size 16 16 --faces 100]``.
"""

import argparse
import os
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if _SHARED.is_dir():
    os.environ.setdefault("BNMFZOO_DATA", str(_SHARED))


def _faces(size, n_faces):
    from bnmfzoo.datasets import load_faces

    X = load_faces(tuple(size))
    if n_faces < X.shape[1]:
        # every (400 / n)-th face: all subjects represented
        idx = np.linspace(0, X.shape[1] - 1, n_faces).round().astype(int)
        X = X.isel(col=idx)
    return X


def _diversity(dt):
    A = dt["particles"]["A"].values
    w = dt["particles"]["weight"].values
    d = [np.linalg.norm(A[i] - A[j]) for i in range(len(A)) for j in range(i + 1, len(A))]
    return float(np.median(d)), float(1.0 / np.sum(w**2))


def run(size, n_faces, rank, M, draws, tune, full, seed):
    from bnmfzoo.inference import fit_nuts, fit_particles
    from bnmfzoo.inference.qtransform import generate_q_bank
    from bnmfzoo.models import silf

    bank = generate_q_bank()
    print(f"Q bank: {len(bank)} pairs generated in {bank.generation_time:.2f} s "
          "(paper: < 0.5 s for 100 pairs)")
    if full:
        X = _faces((64, 64), 400)
        t = time.perf_counter()
        model = silf(X, rank, random_seed=seed)
        t_eps = time.perf_counter() - t
        dt = fit_particles(model, n_particles=M, q_bank=bank, random_seed=seed,
                           progressbar=False)
        d = dt["diagnostics"]
        eps = model.bnmfzoo_spec.hyper["epsilon"]
        print(f"\n[full faces 4096 x 400, rank {rank}, M={M}] epsilon={eps:.4g} "
              f"(50 reference fits: {t_eps:.1f} s)")
        print(f"  Q-Transform: time {float(d['total_time']):.1f} s "
              f"(wall {float(d['wall_time']):.1f} s), "
              f"KSD {float(d['stein_discrepancy']):.6g} "
              f"(uniform {float(d['stein_discrepancy_uniform']):.6g}), "
              f"weighting {float(d['weighting_time']):.1f} s")

    X = _faces(size, n_faces)
    D, N = X.shape
    print(f"\n[head-to-head on subsample: {D} pixels ({size[0]}x{size[1]}) x {N} faces, "
          f"rank {rank}, M={M}]")
    model = silf(X, rank, random_seed=seed)
    print(f"  epsilon = {model.bnmfzoo_spec.hyper['epsilon']:.4g}")
    rows = []
    for init in ("qtransform", "random", "nndsvdar"):
        dt = fit_particles(model, n_particles=M, init=init, q_bank=bank, random_seed=seed,
                           progressbar=False)
        d = dt["diagnostics"]
        div, ess = _diversity(dt)
        rows.append((init, float(d["total_time"]), float(d["stein_discrepancy"]), div, ess))
    t = time.perf_counter()
    nuts = fit_nuts(model, draws=draws, tune=tune, n_particles=M, random_seed=seed,
                    progressbar=False)
    wall = time.perf_counter() - t
    d = nuts["diagnostics"]
    sampling = float(np.sum(nuts["sample_stats"]["perf_counter_diff"].values))
    div, ess = _diversity(nuts)
    for c, tt, k in zip(d["checkpoint_draw"].values, d["checkpoint_time"].values,
                        d["checkpoint_stein_discrepancy"].values):
        rows.append((f"nuts@{int(c)}", float(tt), float(k), np.nan, np.nan))
    rows[-1] = (rows[-1][0], rows[-1][1], rows[-1][2], div, ess)
    print(f"  NUTS: {draws} draws after {tune} tuning, wall {wall:.1f} s "
          f"(post-tuning sampling {sampling:.1f} s; the rest is compilation + tuning)")
    print(f"  {'method':<14}{'time [s]':>10}{'KSD':>14}{'median ||Ai-Aj||':>19}{'1/sum w^2':>11}")
    for name, tt, k, dv, e in rows:
        print(f"  {name:<14}{tt:>10.2f}{k:>14.6g}{dv:>19.4g}{e:>11.2f}")
    q = rows[0]
    n = rows[-1]
    print(f"\n  Q-Transform vs NUTS({draws}): time ratio {q[1] / n[1]:.3g} "
          f"(Q {q[1]:.2f} s vs NUTS {n[1]:.1f} s), KSD ratio {q[2] / n[2]:.3g} "
          f"(Q {q[2]:.6g} vs NUTS {n[2]:.6g})")
    print("  paper (Fig. 4, 31-32): Q-Transform lowest KSD in least time; NUTS/HMC not diverse")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--size", type=int, nargs=2, default=(16, 16))
    p.add_argument("--faces", type=int, default=100)
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--M", type=int, default=50)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=500)
    p.add_argument("--no-full", action="store_true", help="skip the full 4096 x 400 run")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    run(a.size, a.faces, a.rank, a.M, a.draws, a.tune, not a.no_full, a.seed)


if __name__ == "__main__":
    main()
