"""Convergence of Gibbs, VB, ICM and multiplicative updates (Brouwer et al. 2017, Fig. 3).

Training MSE against iterations and seconds on
* the toy data (100 x 80, NMF K=10 / NMTF K=L=5, Exp(1) factors + N(0, 1) noise, entries
  clipped at 0 because our models require non-negative data), where the paper gives the final
  average training MSE (NMF: VB 0.804, Gibbs 1.01, ICM 0.813; NMTF: VB 0.910, Gibbs 1.004,
  ICM 0.907, NP 0.933);
* GDSC IC50 at NMF K=20 and NMTF K=L=10 (all observed entries), where the paper gives the time
  per iteration (supplement Table 5).
Gibbs uses the numeric kernel of ``GibbsNMF``/``GibbsNMTF`` (``_gaussian_core``) directly.
Iteration counts are the paper's (digest §4.1) times ``--scale``; ``--seeds`` runs are averaged
(the paper averages 20). Writes ``benchmarks/results/brouwer_convergence_<datasets>.png``.

Usage: python -m benchmarks.reproduce.brouwer2017.convergence [--scale 1.0] [--seeds 1]
       [--datasets toy,gdsc]
"""

import argparse
import os
import time

import numpy as np

from benchmarks._common import DATA, RESULTS
from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.inference.gaussian.variational.icm import fit_icm
from bnmfzoo.inference.gaussian.variational.multiplicative import fit_multiplicative
from bnmfzoo.inference.gaussian.variational.vb import fit_vb
from bnmfzoo.models import exponential_gaussian, tri_exponential_gaussian
from bnmfzoo.models._spec import find_spec
from bnmfzoo.models.gaussian import BROUWER2017, BROUWER2017_NMTF

ITERS = {  # paper's iteration counts: (vb, gibbs, icm, np)
    ("toy", "nmf"): (500, 500, 2000, 2000), ("toy", "nmtf"): (2000, 2000, 5000, 10000),
    ("gdsc", "nmf"): (200, 200, 500, 1000), ("gdsc", "nmtf"): (500, 500, 500, 1000),
}
PAPER_FINAL = {("toy", "nmf"): {"vb": 0.804, "gibbs": 1.01, "icm": 0.813, "np": "unstable"},
               ("toy", "nmtf"): {"vb": 0.910, "gibbs": 1.004, "icm": 0.907, "np": 0.933}}
PAPER_TIME = {("toy", "nmf"): {"vb": 0.015, "gibbs": 0.024, "icm": 0.003, "np": 0.002},
              ("toy", "nmtf"): {"vb": 0.019, "gibbs": 0.014, "icm": 0.005, "np": 0.004},
              ("gdsc", "nmf"): {"vb": 0.125, "gibbs": 0.251, "icm": 0.047, "np": 0.042},
              ("gdsc", "nmtf"): {"vb": 0.298, "gibbs": 0.264, "icm": 0.173, "np": 0.124}}


def toy(kind, seed):
    rng = np.random.default_rng(1000 + seed)
    if kind == "nmf":
        X = rng.exponential(size=(100, 10)) @ rng.exponential(size=(10, 80))
    else:
        X = rng.exponential(size=(100, 5)) @ rng.exponential(size=(5, 5)) \
            @ rng.exponential(size=(5, 80))
    return np.maximum(X + rng.normal(size=X.shape), 0.0)


def run_gibbs(model, n_iter, seed):
    """Gibbs sweeps with the other helper's numeric kernel; returns (mse trace, time trace)."""
    try:
        from bnmfzoo.inference.gaussian.gibbs import _core as gc
    except ImportError as err:  # pragma: no cover
        print("   Gibbs skipped:", err)
        return None
    spec = find_spec(model)
    problem = glue.problem_from_model(model, method="bench")
    rng = np.random.default_rng(seed)
    obs = gc.observed_entries(spec.X, spec.mask)
    if problem.tri:
        v = core.init_means(problem, "kmeans", rng, kmeans_offset=0.2)
        state = gc.nmtf_state(v["F"].T, v["S"], v["G"].T, 1.0, None, None, obs)
        gc.nmtf_sweep(state, obs, spec.hyper, rng, update={"tau"})
        sweep = gc.nmtf_sweep
    else:
        v = core.init_means(problem, "random", rng)
        state = gc.nmf_state(v["A"].T, v["W"], 1.0, None, obs)
        gc.nmf_sweep(state, obs, spec.hyper, rng, update={"tau"})
        sweep = gc.nmf_sweep
    mse, times = [], []
    start = time.perf_counter()
    for _ in range(n_iter):
        sweep(state, obs, spec.hyper, rng)
        mse.append(float(state.resid @ state.resid) / obs.n_observed)
        times.append(time.perf_counter() - start)
    return np.array(mse), np.array(times)


def run_all(X, kind, iters, seed):
    make = (lambda: exponential_gaussian(X, 10 if X.shape == (100, 80) else 20,
                                               **BROUWER2017)) \
        if kind == "nmf" else \
        (lambda: tri_exponential_gaussian(X, (5, 5) if X.shape == (100, 80) else (10, 10),
                                          **BROUWER2017_NMTF))
    model = make()
    n_vb, n_gibbs, n_icm, n_np = iters
    # warm-up: load / compile the numba kernels so the time traces measure sweeps only
    fit_vb(model, max_iter=2, random_seed=seed, n_draws=1, progressbar=False)
    run_gibbs(model, 2, seed)
    fit_icm(model, max_iter=2, random_seed=seed, progressbar=False)
    fit_multiplicative(model, max_iter=2, random_seed=seed, progressbar=False)
    out = {}
    dt = fit_vb(model, max_iter=n_vb, random_seed=seed, n_draws=1, progressbar=False)
    out["vb"] = dt["variational"]["mse"].values, dt["variational"]["time"].values
    g = run_gibbs(model, n_gibbs, seed)
    if g is not None:
        out["gibbs"] = g
    dt = fit_icm(model, max_iter=n_icm, random_seed=seed, progressbar=False)
    out["icm"] = dt["diagnostics"]["mse"].values, dt["diagnostics"]["time"].values
    dt = fit_multiplicative(model, max_iter=n_np, random_seed=seed, progressbar=False)
    out["np"] = dt["diagnostics"]["mse"].values, dt["diagnostics"]["time"].values
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--datasets", default="toy,gdsc")
    args = parser.parse_args()
    import matplotlib.pyplot as plt

    panels = []
    for dataset in args.datasets.split(","):
        if dataset == "gdsc":
            from bnmfzoo.datasets import load_gdsc

            X_gdsc = load_gdsc(data_home=DATA)
        for kind in ("nmf", "nmtf"):
            iters = tuple(max(2, int(round(n * args.scale))) for n in ITERS[(dataset, kind)])
            runs = []
            for seed in range(args.seeds):
                X = toy(kind, seed) if dataset == "toy" else X_gdsc
                runs.append(run_all(X, kind, iters, seed))
            print(f"\n== {dataset} {kind.upper()} (iterations vb/gibbs/icm/np = {iters}, "
                  f"{args.seeds} seed(s), load {os.getloadavg()[0]:.1f})")
            print(f"   {'method':<7}{'final MSE':>11}{'paper':>10}{'s/iter':>9}{'paper':>8}")
            avg = {}
            for method in runs[0]:
                mse = np.mean([r[method][0] for r in runs], axis=0)
                t = np.mean([r[method][1] for r in runs], axis=0)
                avg[method] = (mse, t)
                per_it = t[-1] / t.size
                paper = PAPER_FINAL.get((dataset, kind), {}).get(method, "-")
                print(f"   {method:<7}{mse[-1]:>11.4g}{paper!s:>10}{per_it:>9.4f}"
                      f"{PAPER_TIME[(dataset, kind)][method]:>8.3f}", flush=True)
            panels.append((f"{dataset} {kind.upper()}", avg))
    fig, axes = plt.subplots(2, len(panels), figsize=(4 * len(panels), 7), squeeze=False)
    for c, (title, avg) in enumerate(panels):
        for method, (mse, t) in avg.items():
            axes[0, c].plot(np.arange(1, mse.size + 1), mse, label=method)
            axes[1, c].plot(t, mse, label=method)
        for r, xlabel in enumerate(("iteration", "seconds")):
            ax = axes[r, c]
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("training MSE")
            lo = min(v[0].min() for v in avg.values())
            ax.set_ylim(lo * 0.9, lo * 4)
        axes[0, c].set_title(title)
        axes[0, c].legend()
    fig.tight_layout()
    os.makedirs(RESULTS, exist_ok=True)
    name = "_".join(args.datasets.split(","))
    path = os.path.join(RESULTS, f"brouwer_convergence_{name}.png")
    fig.savefig(path, dpi=90)
    print("\nplot:", path)


if __name__ == "__main__":
    main()
