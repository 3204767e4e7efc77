"""Reproduce Lumbreras et al. (2020): parliament fit NLL (Eq. 66) and the animals dictionary.

Paper values (130 x 130 Catalan parliament, K = 100 truncation, alpha = beta = 1, gamma_k = 1/K,
eta_k = 1; Gibbs 4000 burn-in + 1000 kept sweeps, CVB0 500 iterations):
Beta-Dir VB 4,729 (nine components), Beta-Dir Gibbs 4,863 (nine), Dir-Dir Gibbs 8,930 (two),
logistic PCA-8 1,783 (not run here).
Run: ``python -m benchmarks.reproduce.lumbreras2020.parliament [--quick]`` (``--quick``: 1000 +
500 Gibbs sweeps instead of the paper's 4000 + 1000).
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets import load_nbmf
from bnmfzoo.diagnostics import active_components, heldout_loglik
from bnmfzoo.inference import fit_collapsed_gibbs, fit_cvb0
from bnmfzoo.models import beta_dir, dir_dir

TUNE, DRAWS = 4000, 1000
PAPER = {"Beta-Dir VB": (4729, 9), "Beta-Dir Gibbs": (4863, 9), "Dir-Dir Gibbs": (8930, 2)}


def parliament():
    X = load_nbmf("parliament")
    print(f"== parliament {X.shape}, Gibbs {TUNE} burn-in + {DRAWS} kept sweeps, CVB0 500 it.")
    print(f"{'method':<16}{'NLL ours':>10}{'NLL paper':>11}{'active ours':>13}"
          f"{'active paper':>14}{'seconds':>9}")
    runs = [
        ("Beta-Dir VB", lambda: fit_cvb0(beta_dir(X), max_iter=500, tol=0.0, random_seed=0,
                                         n_draws=10, progressbar=False)),
        ("Beta-Dir Gibbs", lambda: fit_collapsed_gibbs(beta_dir(X), tune=TUNE, draws=DRAWS,
                                                       random_seed=1, progressbar=False)),
        ("Dir-Dir Gibbs", lambda: fit_collapsed_gibbs(dir_dir(X), tune=TUNE, draws=DRAWS,
                                                      random_seed=1, progressbar=False)),
    ]
    for name, run in runs:
        t = time.perf_counter()
        dt = run()
        sec = time.perf_counter() - t
        nll = -heldout_loglik(dt, X.values)
        act = active_components(dt)
        print(f"{name:<16}{nll:>10.0f}{PAPER[name][0]:>11,}{act:>13}{PAPER[name][1]:>14}"
              f"{sec:>9.1f}")


def animals(top=6):
    X = load_nbmf("animals")  # stored orientation: 50 animals x 85 attributes
    print(f"\n== animals {X.shape}: Beta-Dir Gibbs dictionary (components by mass; W[k] = "
          "P(attribute | component))")
    dt = fit_collapsed_gibbs(beta_dir(X), tune=TUNE, draws=DRAWS, random_seed=2,
                             progressbar=False)
    A = dt["rao_blackwell"]["A_mean"].values  # E[A | V] (Eq. 30), one chain
    W = dt["rao_blackwell"]["W_mean"].values
    mass = A.mean(axis=0)
    attrs = np.asarray(X["col"].values)
    names = np.asarray(X["row"].values)
    for k in np.argsort(mass)[::-1]:
        if mass[k] < 0.01:
            break
        top_attr = ", ".join(attrs[np.argsort(W[k])[::-1][:top]])
        top_animals = ", ".join(names[np.argsort(A[:, k])[::-1][:4]])
        print(f"  k={k:3d} mass {mass[k]:.2f} | attributes: {top_attr} | animals: {top_animals}")


def main(argv=None):
    global TUNE, DRAWS
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1000 + 500 Gibbs sweeps")
    args = p.parse_args(argv)
    if args.quick:
        TUNE, DRAWS = 1000, 500
    parliament()
    animals()


if __name__ == "__main__":
    main()
