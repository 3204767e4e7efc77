"""Is a design's true K identifiable at a cohort size, and what does the compressive prior charge?

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.compressive_identifiability
--design correlated --genomes 100 [--burden 2000] [--seeds 0 1 2] [--restarts 8]``.

For each cohort of :func:`bnmfzoo.datasets.signature_cohorts.signature_cohort` (the
calibration's generator and seeds) it prints, all in nats of the Poisson log-likelihood:

* ``truth``: the log-likelihood at the true signatures with exposures re-fitted by maximum
  likelihood (KL multiplicative updates on the exposures only, from the true ones);
* ``ML(K)``: the best of ``--restarts`` KL-NMF fits (Lee & Seung 2001; 1,500 updates each) at
  ``K_true - 2``, ``K_true - 1`` and ``K_true``, with the number of true signatures each fit
  recovers at cosine >= 0.9 (one-to-one, Hungarian on cosine);
* ``gain``: ``ML(K_true) - ML(K_true - 1)``, what one more signature buys at best, beside the
  BIC charge of one signature, ``(D - 1 + N) log(D N) / 2`` (``D - 1`` free signature entries
  and ``N`` exposures): a gain below it means a usual model-selection rule would not keep the
  signature either;
* the compressive prior's charge (Zito & Miller 2024, ``a = 1``, ``epsilon = 0.001``, the
  library's defaults) for the true signature of smallest total exposure: the log density of
  ``mu_k ~ InvGamma(a N + 1, epsilon a N)`` and its ``N`` exposures ``Gamma(a, a / mu_k)`` at the
  compressed state (``mu_k = epsilon``, exposures ``epsilon``) minus at the active one (``mu_k``
  its mean true exposure, the true exposures): about ``2 N log(mu_k / epsilon)``, the quantity
  of the ``mixed12`` investigation. It is a difference of densities (no volume terms), a scale
  to set beside the gain, not a Bayes factor.

Poisson log-likelihoods on ``_nb`` designs are a misspecified yardstick (said in the output).
"""

import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def _loglik(Y, R):
    return float(np.sum(Y * np.log(np.maximum(R, 1e-300)) - R - gammaln(Y + 1)))


def _kl_nmf(Y, K, rng, n_iter=1500, T=None, V=None, fix_T=False):
    D, N = Y.shape
    scale = np.sqrt(max(Y.mean(), 1e-3) / K)
    T = rng.gamma(1.0, scale, (D, K)) + 1e-3 if T is None else T.copy()
    V = rng.gamma(1.0, scale, (K, N)) + 1e-3 if V is None else np.maximum(V, 1e-6)
    for _ in range(n_iter):
        if not fix_T:
            R = Y / np.maximum(T @ V, 1e-12)
            T *= (R @ V.T) / np.maximum(V.sum(axis=1), 1e-12)[None, :]
        R = Y / np.maximum(T @ V, 1e-12)
        V *= (T.T @ R) / np.maximum(T.sum(axis=0), 1e-12)[:, None]
    s = T.sum(axis=0)
    return T / s, V * s[:, None]


def _recovered(T, truth, cut=0.9):
    a = T.T / np.linalg.norm(T.T, axis=1, keepdims=True)
    b = truth / np.linalg.norm(truth, axis=1, keepdims=True)
    cos = a @ b.T
    r, c = linear_sum_assignment(-cos)
    return int((cos[r, c] >= cut).sum()), {int(j): float(cos[i, j]) for i, j in zip(r, c)}


def compressive_charge(v, a=1.0, eps=1e-3):
    """Log density of (mu = eps, exposures eps) minus (mu = mean(v), exposures v), a = 1 form."""
    N = v.size
    a0, b0 = a * N + 1.0, eps * a * N

    def logp(mu, x):
        lm = a0 * np.log(b0) - gammaln(a0) - (a0 + 1) * np.log(mu) - b0 / mu
        rate = a / mu
        lv = np.sum(a * np.log(rate) - gammaln(a) + (a - 1) * np.log(np.maximum(x, 1e-300))
                    - rate * x)
        return lm + lv

    return float(logp(eps, np.full(N, eps)) - logp(max(v.mean(), eps), v))


def main(argv=None):
    from bnmfzoo.datasets.signature_cohorts import signature_cohort

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--design", default="correlated")
    p.add_argument("--genomes", type=int, default=100)
    p.add_argument("--burden", type=float, default=2000.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--restarts", type=int, default=8)
    a = p.parse_args(argv)
    base, nb = (a.design[:-3], 20.0) if a.design.endswith("_nb") else (a.design, None)
    for seed in a.seeds:
        t0 = time.process_time()
        c = signature_cohort(base, n_genomes=a.genomes, burden_median=a.burden,
                             overdispersion=nb, random_seed=seed)
        Y = c.counts.values.T.astype(float)
        D, N = Y.shape
        truth = c.signatures.values
        names = [str(s) for s in c.signatures.signature.values]
        E = c.exposures.values  # (N, K)
        K = truth.shape[0]
        Tt, Vt = _kl_nmf(Y, K, None, n_iter=500, T=truth.T.copy(), V=E.T.copy(), fix_T=True)
        ll_truth = _loglik(Y, Tt @ Vt)
        rng = np.random.default_rng(10_000 + seed)
        ml = {}
        for k in (K - 2, K - 1, K):
            best = None
            for _ in range(a.restarts):
                T, V = _kl_nmf(Y, k, rng)
                ll = _loglik(Y, T @ V)
                if best is None or ll > best[0]:
                    best = (ll, T)
            n_rec, cos = _recovered(best[1], truth)
            ml[k] = (best[0], n_rec, cos)
        gain = ml[K][0] - ml[K - 1][0]
        bic = 0.5 * (D - 1 + N) * np.log(D * N)
        weakest = int(np.argmin(E.sum(axis=0)))
        charge = compressive_charge(E[:, weakest])
        missed = [names[j] for j in range(K) if ml[K][2].get(j, 0.0) < 0.9]
        print(f"{a.design} seed {seed} ({N} genomes, {int(Y.sum()):,} mutations"
              f"{'; NB counts, Poisson yardstick' if nb else ''}): truth {ll_truth:.1f}; "
              + "; ".join(f"ML({k}) {ml[k][0]:.1f} ({ml[k][1]} of {K} true at cos >= 0.9)"
                          for k in ml)
              + f"; gain K-1 -> K {gain:.1f} (truth - ML(K-1) {ll_truth - ml[K - 1][0]:.1f}); "
              f"BIC charge {bic:.1f}; compressive charge of {names[weakest]} "
              f"({E[:, weakest].sum():,.0f} mutations in {int((E[:, weakest] > 0).sum())} "
              f"genomes) {charge:.1f}; ML(K) misses {missed or '-'}; "
              f"CPU {time.process_time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
