"""Held-out perplexity (Lumbreras et al. 2020, §6.4 / Fig. 10) on animals and lastfm.

Protocol: each observed entry goes to training with probability 0.75 (i.i.d., as the authors'
code), perplexity = mean negative log-likelihood per held-out entry (Eq. 67), repeated with
seeds 0..R-1. Methods: Beta-Dir Gibbs, Beta-Dir CVB0, Dir-Dir Gibbs (K = 100 truncation) and a
fixed-rank baseline c-bICA-5 (CVB0 with gamma_k = 1, K = 5). The paper gives box plots only (no
numbers); constant-predictor entropy: animals 0.658, lastfm 0.179 nats.
Budgets: the paper's 4000 + 1000 Gibbs sweeps and 500 CVB0 iterations, 10 repetitions, on both
datasets (``--quick`` cuts lastfm to 300 + 200 sweeps, 200 iterations and 3 repetitions).
Each finished repetition is appended to ``benchmarks/results/nbmf_prediction_<data>.json`` so
long runs can be split over processes (``--reps 0:5`` and ``--reps 5:10``) and resumed;
``--plot`` draws ``benchmarks/results/nbmf_perplexity.png`` from those files.
Run: ``python -m benchmarks.reproduce.lumbreras2020.prediction [--data lastfm] [--reps 0:5]``.
"""

import argparse
import json
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks._common import RESULTS  # noqa: E402
from bnmfzoo.datasets import load_nbmf  # noqa: E402
from bnmfzoo.diagnostics import perplexity  # noqa: E402
from bnmfzoo.inference import fit_collapsed_gibbs, fit_cvb0  # noqa: E402
from bnmfzoo.models import beta_dir, dir_dir  # noqa: E402

PAPER = dict(reps=10, tune=4000, draws=1000, iters=500)
QUICK = dict(reps=3, tune=300, draws=200, iters=200)
OUT = os.path.join(RESULTS, "nbmf_perplexity.png")


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


def _store(name):
    return os.path.join(RESULTS, f"nbmf_prediction_{name}.json")


def run(name, s, reps):
    """Fit every method on splits ``reps`` of ``name``; append each split to its JSON store."""
    X = load_nbmf(name).values
    print(f"== {name} {X.shape}: splits {list(reps)}, Gibbs {s['tune']}+{s['draws']} "
          f"sweeps, CVB0 {s['iters']} iterations", flush=True)
    for rep in reps:
        train, test = split(X, rep)
        Vtrain = np.where(train, X, np.nan)
        row = {"split": rep, "budget": {k: s[k] for k in ("tune", "draws", "iters")}}
        for mname, fit in methods(s).items():
            t = time.perf_counter()
            dt = fit(Vtrain, rep)
            row[mname] = float(perplexity(dt, X, mask=test))
            row[mname + " sec"] = time.perf_counter() - t
        row["constant"] = float(perplexity(np.full(X.shape, np.nanmean(Vtrain)), X, mask=test))
        print("  split", rep, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)},
              flush=True)
        os.makedirs(RESULTS, exist_ok=True)
        rows = _load(name)
        rows = [r for r in rows if r["split"] != rep] + [row]
        with open(_store(name), "w") as f:
            json.dump(sorted(rows, key=lambda r: r["split"]), f, indent=1)


def _load(name):
    if not os.path.exists(_store(name)):
        return []
    with open(_store(name)) as f:
        return json.load(f)


def plot(names):
    """Print the per-method medians and draw the box plots from the JSON stores."""
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4))
    for ax, name in zip(np.atleast_1d(axes), names):
        rows = _load(name)
        if not rows:
            print(f"no results for {name}")
            continue
        methods_ = [m for m in rows[0] if m not in ("split", "budget") and not m.endswith(" sec")]
        print(f"== {name}: {len(rows)} splits, budget {rows[0]['budget']}")
        for m in methods_:
            v = np.array([r[m] for r in rows])
            sec = np.median([r.get(m + " sec", 0.0) for r in rows])
            print(f"  {m:<16} perplexity median {np.median(v):.4f}  "
                  f"[min {v.min():.4f}, max {v.max():.4f}]  median fit {sec:.1f} s")
        ax.boxplot([[r[m] for r in rows] for m in methods_], tick_labels=methods_)
        ax.set_title(f"{name} ({len(rows)} splits)")
        ax.set_ylabel("perplexity (nats / test entry)")
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(OUT, dpi=100)
    print("wrote", OUT)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["animals", "lastfm"], action="append")
    parser.add_argument("--reps", default=None, help="split range a:b (default all)")
    parser.add_argument("--quick", action="store_true", help="reduced lastfm budget")
    parser.add_argument("--plot", action="store_true", help="only plot stored results")
    args = parser.parse_args()
    names = args.data or ["animals", "lastfm"]
    if not args.plot:
        for name in names:
            s = QUICK if (args.quick and name == "lastfm") else PAPER
            a, b = (int(x) for x in args.reps.split(":")) if args.reps else (0, s["reps"])
            run(name, s, range(a, b))
    plot(names)


if __name__ == "__main__":
    main()
