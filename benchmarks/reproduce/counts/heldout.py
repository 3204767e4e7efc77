"""Held-out Poisson log-likelihood per entry: ours against scikit-learn's KL-NMF and hpfrec.

Run with ``nice -n 15 python -m benchmarks.reproduce.counts.heldout`` (about 10-20 CPU minutes;
``--quick`` uses the first 2,000 documents of 20 Newsgroups and the Reuters set).

**Protocol (binomial data thinning).** Each count is split ``X = X_train + X_test`` with
``X_test ~ Binomial(X, 0.1)`` (seed 0). If ``X ~ Poisson(mu)`` then ``X_train ~ Poisson(0.9
mu)`` and ``X_test ~ Poisson(0.1 mu)`` independently, so every method fits the *whole*
``X_train`` (neither scikit-learn's NMF nor hpfrec takes a mask) and is scored on *every* cell of
``X_test`` with the rate ``(0.1 / 0.9) A @ W`` of its fitted factors (plug-in: posterior or
variational means). Printed: the mean Poisson log-likelihood over all D x N cells (zeros
included), over the test nonzeros, and over as many random zero cells; the fit's CPU seconds.

Methods (same K, one thread each): scikit-learn ``NMF(beta_loss="kullback-leibler",
solver="mu", init="nndsvda", max_iter=200, tol=1e-4)``; hpfrec ``HPF(k=K, ncores=1,
maxiter=100)`` (its defaults otherwise: a = c = 0.3); ours ``BayesianNMF(n_components=K,
beta_loss="kullback-leibler", draws=100, tune=100, chains=1)`` (fewer draws than the default to
bound the memory of the stored draws), or the core's Gibbs sweep directly before the estimator
takes ``beta_loss``.
"""

import argparse

import numpy as np
import scipy.sparse as sp

import benchmarks  # noqa: F401
from benchmarks.reproduce.counts._shared import (
    core_gibbs,
    estimator_has_kl,
    heldout_loglik,
    hpf,
    sklearn_kl,
    thin,
)
from bnmfzoo.datasets import load_lastfm_plays, load_newsgroups, load_reuters

FRAC = 0.1


def _ours(train, K, seed):
    import time

    if estimator_has_kl():
        from bnmfzoo import BayesianNMF

        t0 = time.process_time()
        est = BayesianNMF(n_components=K, beta_loss="kullback-leibler", random_state=seed,
                          draws=100, tune=100, chains=1).fit(train)
        return est.A_, est.components_, time.process_time() - t0, "BayesianNMF (KL), Gibbs"
    t0 = time.process_time()
    A_d, W_d = core_gibbs(train, K, seed=seed, draws=100, tune=100)
    return A_d.mean(0), W_d.mean(0), time.process_time() - t0, "core Gibbs (direct)"


def run(name, X, K, seed=0):
    X = sp.csr_array(X)
    X.sum_duplicates()
    # drop empty rows / columns (they carry no information for any method)
    rows = np.flatnonzero(X.sum(axis=1) > 0)
    X = X[rows]
    cols = np.flatnonzero(X.sum(axis=0) > 0)
    X = sp.csr_array(X[:, cols])
    train, test = thin(X, FRAC, seed=seed)
    print(f"\n## {name}: {X.shape[0]} x {X.shape[1]}, {X.nnz:,} nonzeros; train {train.nnz:,}"
          f" / test {test.nnz:,} nonzero cells ({int(test.sum()):,} counts), K = {K}")
    print(f"{'method':34s} {'ll/cell (all)':>14s} {'ll/test nz':>11s} {'ll/zero':>9s} "
          f"{'cpu s':>7s}")
    out = {}
    W, H, n_iter, cpu = sklearn_kl(train.astype(float), K, seed=seed, max_iter=200, tol=1e-4)
    out["sklearn"] = (heldout_loglik(test, W, H, FRAC, 1 - FRAC), cpu, f"{n_iter} it")
    T, B, it, cpu = hpf(train, K, seed=seed, maxiter=100)
    out["hpfrec"] = (heldout_loglik(test, T, B, FRAC, 1 - FRAC), cpu, f"{it} it")
    A, Wm, cpu, how = _ours(train, K, seed)
    out[how] = (heldout_loglik(test, A, Wm, FRAC, 1 - FRAC), cpu, "200 sweeps")
    for how, (ll, cpu, note) in out.items():
        print(f"{how:34s} {ll['all']:14.5f} {ll['nonzero']:11.4f} {ll['zero']:9.4f} "
              f"{cpu:7.1f} {note}")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-K", type=int, default=10)
    parser.add_argument("--only", choices=["newsgroups", "lastfm", "reuters"])
    args = parser.parse_args(argv)
    if args.quick:
        run("Reuters (lda)", load_reuters(sparse=True).X, args.K)
        run("20 Newsgroups, first 2000 documents", load_newsgroups().X[:2000], args.K)
        return
    if args.only in (None, "newsgroups"):
        run("20 Newsgroups", load_newsgroups().X, args.K)
    if args.only in (None, "lastfm"):
        run("Last.fm plays", load_lastfm_plays().X, args.K)
    if args.only == "reuters":
        run("Reuters (lda)", load_reuters(sparse=True).X, args.K)


if __name__ == "__main__":
    main()
