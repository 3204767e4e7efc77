"""CPU seconds per Gibbs sweep of the reference-informed compressive prior against the de novo one.

Run from the project root::

    nice -n 10 .venv/bin/python -m benchmarks.signatures.reference_speed [--sweeps 200]

On synthetic cohorts of the ``correlated`` design (:mod:`bnmfzoo.datasets.signature_cohorts`,
2,000 median mutations per genome) of 100 and 500 genomes, the sweeps of
:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior`'s chains
(:func:`bnmfzoo.signatures._gibbs.sweeps`, compressive step, Poisson and negative-binomial
likelihoods) are timed in one process at ``K_max = 91`` (COSMIC v3.4's 86 SBS signatures with
Zito & Miller's concentrations, plus 5 de novo) and at ``K_max = 20`` (the de novo route's),
from the state reached after 300 sweeps from a prior draw (the informed run; most reference
signatures compressed) or from a KL-NMF start (the de novo run). Prints CPU seconds per sweep
(``time.process_time``, after a warm-up call that compiles the kernels) and their ratio.
"""

import argparse
import time

import numpy as np

from bnmfzoo.datasets import load_cosmic_signatures
from bnmfzoo.datasets.signature_cohorts import signature_cohort
from bnmfzoo.signatures import _gibbs
from bnmfzoo.signatures.compressive import reference_alpha
from bnmfzoo.signatures.screen import _kl_start


def _state(Y, alpha, k_max, rng, informed, a=1.0, eps=1e-3):
    D, N = Y.shape
    if informed:
        T = rng.standard_gamma(alpha)
        T = np.maximum(T / T.sum(axis=0, keepdims=True), 1e-12)
        mu = eps * a * N / rng.gamma(a * N + 1.0, 1.0, size=k_max)
        V = np.maximum(rng.gamma(a, 1.0, (k_max, N)) * (mu / a)[:, None], 1e-12)
    else:
        T, V = _kl_start(Y.astype(float), k_max, rng)
        T, V = np.maximum(T, 1e-12), np.maximum(V, 1e-12)
        mu = V.mean(axis=1)
    T /= T.sum(axis=0, keepdims=True)
    return T, V, np.ascontiguousarray(mu, dtype=float)


def time_sweeps(Y, alpha, k_max, informed, likelihood, n_sweeps, seed=0):
    """CPU seconds per sweep after 300 sweeps of burn-in (not timed)."""
    rng = np.random.default_rng(seed)
    D, N = Y.shape
    rows, cols = np.nonzero(Y)
    data = (rows.astype(np.int64), cols.astype(np.int64), Y[rows, cols].astype(np.int64))
    T, V, mu = _state(Y, alpha, k_max, rng, informed)
    comp = (1.0, N + 1.0, 1e-3 * N, mu)
    nb = _gibbs.nb_state(Y.shape) if likelihood == "nb" else None
    _gibbs.seed(rng)
    pri = (alpha, 1.0, np.zeros(N))
    _gibbs.sweeps(data, T, V, pri, 300, compressive=comp, nb=nb)
    t0 = time.process_time()
    _gibbs.sweeps(data, T, V, pri, n_sweeps, compressive=comp, nb=nb)
    return (time.process_time() - t0) / n_sweeps, int((mu > 1.5e-3).sum())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sweeps", type=int, default=200)
    a = p.parse_args(argv)
    ref = load_cosmic_signatures("v3.4").rename(row="signature", col="channel")
    print("| genomes | likelihood | K_max 91 (informed): CPU s / sweep (active) | K_max 20 "
          "(de novo): CPU s / sweep (active) | ratio |")
    print("|---|---|---|---|---|")
    for N in (100, 500):
        c = signature_cohort("correlated", n_genomes=N, burden_median=2000, random_seed=0)
        Y = c.counts.values.T.astype(np.int64)
        S = ref.sel(channel=c.counts.coords["col"].values).values.T
        informed = reference_alpha(S, 5)
        for lik in ("poisson", "nb"):
            time_sweeps(Y[:, :5], informed, informed.shape[1], True, lik, 2)  # compile
            t_i, k_i = time_sweeps(Y, informed, informed.shape[1], True, lik, a.sweeps)
            t_d, k_d = time_sweeps(Y, 0.5, 20, False, lik, a.sweeps)
            print(f"| {N} | {lik} | {t_i:.4f} ({k_i}) | {t_d:.4f} ({k_d}) | {t_i / t_d:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
