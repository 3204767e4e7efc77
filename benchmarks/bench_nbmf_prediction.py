"""Held-out perplexity (Lumbreras et al. 2020, §6.4 / Fig. 10) on animals and lastfm.

Protocol: each observed entry goes to training with probability 0.75 (i.i.d., as the authors'
code), perplexity = mean negative log-likelihood per held-out entry (Eq. 67), repeated with
seeds 0..R-1. Methods: Beta-Dir Gibbs, Beta-Dir CVB0, Dir-Dir Gibbs (K = 100 truncation) and a
fixed-rank baseline c-bICA-5 (CVB0 with gamma_k = 1, K = 5). The paper gives box plots only (no
numbers); constant-predictor entropy: animals 0.658, lastfm 0.179 nats.
Reduced budgets (stated in the output): animals uses the paper's 4000 + 1000 sweeps and 500 CVB0
iterations with 10 repetitions; lastfm uses 300 + 200 sweeps, 200 iterations, 3 repetitions.
Writes ``benchmarks/results/nbmf_perplexity.png``.
Run: ``.venv/bin/python benchmarks/bench_nbmf_prediction.py``.
"""

import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

os.environ.setdefault("BNMFZOO_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data"))

from bnmfzoo.datasets import load_nbmf  # noqa: E402
from bnmfzoo.diagnostics import perplexity  # noqa: E402
from bnmfzoo.inference import fit_collapsed_gibbs, fit_cvb0  # noqa: E402
from bnmfzoo.models import beta_dir, dir_dir  # noqa: E402

SETTINGS = {
    "animals": dict(reps=10, tune=4000, draws=1000, iters=500),
    "lastfm": dict(reps=3, tune=300, draws=200, iters=200),
}
OUT = os.path.join(os.path.dirname(__file__), "results", "nbmf_perplexity.png")


def split(X, seed):
    rng = np.random.default_rng(seed)
    observed = ~np.isnan(X)
    train = observed & (rng.random(X.shape) < 0.75)
    # keep every row / column non-empty in training
    for axis in (0, 1):
        empty = ~train.any(axis=axis)
        for idx in np.flatnonzero(empty):
            sel = (slice(None), idx) if axis == 0 else (idx, slice(None))
            cand = np.flatnonzero(observed[sel])
            j = rng.choice(cand)
            if axis == 0:
                train[j, idx] = True
            else:
                train[idx, j] = True
    return train, observed & ~train


def methods(s):
    return {
        "Beta-Dir Gibbs": lambda V, seed: fit_collapsed_gibbs(
            beta_dir(V), tune=s["tune"], draws=s["draws"], thin=50, random_seed=seed,
            progressbar=False),
        "Beta-Dir CVB0": lambda V, seed: fit_cvb0(
            beta_dir(V), max_iter=s["iters"], tol=0.0, random_seed=seed, n_draws=1,
            progressbar=False),
        "Dir-Dir Gibbs": lambda V, seed: fit_collapsed_gibbs(
            dir_dir(V), tune=s["tune"], draws=s["draws"], thin=50, random_seed=seed,
            progressbar=False),
        "c-bICA-5": lambda V, seed: fit_cvb0(
            beta_dir(V, rank=5), max_iter=s["iters"], tol=0.0, random_seed=seed, n_draws=1,
            progressbar=False),
    }


def main():
    fig, axes = plt.subplots(1, len(SETTINGS), figsize=(5 * len(SETTINGS), 4))
    for ax, (name, s) in zip(np.atleast_1d(axes), SETTINGS.items()):
        X = load_nbmf(name).values
        print(f"== {name} {X.shape}: {s['reps']} repetitions, Gibbs {s['tune']}+{s['draws']} "
              f"sweeps, CVB0 {s['iters']} iterations")
        results = {}
        for rep in range(s["reps"]):
            train, test = split(X, rep)
            Vtrain = np.where(train, X, np.nan)
            for mname, fit in methods(s).items():
                t = time.perf_counter()
                dt = fit(Vtrain, rep)
                results.setdefault(mname, []).append(perplexity(dt, X, mask=test))
                results.setdefault(mname + " sec", []).append(time.perf_counter() - t)
            p = np.nanmean(Vtrain)
            results.setdefault("constant", []).append(
                perplexity(np.full(X.shape, p), X, mask=test))
        names = [m for m in results if not m.endswith(" sec")]
        for m in names:
            v = np.array(results[m])
            sec = np.median(results.get(m + " sec", [0.0]))
            print(f"  {m:<16} perplexity median {np.median(v):.4f}  "
                  f"[min {v.min():.4f}, max {v.max():.4f}]  median fit {sec:.1f} s")
        ax.boxplot([results[m] for m in names], tick_labels=names)
        ax.set_title(f"{name} ({s['reps']} splits)")
        ax.set_ylabel("perplexity (nats / test entry)")
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    fig.savefig(OUT, dpi=100)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
