"""Why the compressive rank posterior gives ``mixed12`` 11 signatures, not its true 12.

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.mixed12_missing
[--genomes 1000] [--burn 2000] [--keep 1000]``.

The workflow (``benchmarks/signatures/workflow_speed.py --genomes 1000 --rank-method
compressive``, seed 0) gave P(11) = 0.971 and P(12) = 0.029 on ``mixed12`` (12 true
signatures). This script runs two chains of the same compressive-prior Gibbs sampler
(:mod:`bnmfzoo.signatures.compressive`, ``k_max = 20``, the workflow's sweeps and thinning):

* **kl**: the workflow's first chain, number for number (KL-NMF start, the first seed the
  workflow spawns from ``random_seed=0``);
* **truth**: started at the true signatures and exposures (12 active, ``mu_k`` their mean
  exposures) plus 8 unused columns at the prior (``mu_k`` near ``epsilon``).

For each chain it prints the number of active signatures per kept draw (``mu_k > 1.5
epsilon``), the mean Poisson log-likelihood and log joint density (compressive prior
included) of the kept draws, and the cosine of each true signature to its best active
signature (posterior mean of the draws with the chain's most common K, aligned). The true
signature the kl chain misses, its total exposure and its nearest true neighbour are printed
too. If the truth chain keeps 12 active with a log joint far above the kl chain's, the
posterior prefers 12 and the missing signature is the sampler's start; if it drops one to
reach 11, the prior compresses it and P(11) is the posterior's.
"""

import argparse
import time

import numpy as np
from scipy.special import gammaln

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def _log_joint(Y, T, V, mu, alpha, a, a0, b0):
    """``(log-likelihood, log joint)`` of each draw (G, D, K), (G, K, N), (G, K)."""
    ll, lj = [], []
    for t, v, m in zip(T, V, mu):
        rate = t @ v
        lik = float(np.sum(Y * np.log(np.maximum(rate, 1e-300)) - rate - gammaln(Y + 1)))
        D, K = t.shape
        lt = K * (gammaln(D * alpha) - D * gammaln(alpha)) + (alpha - 1) * np.log(t).sum()
        rate_v = (a / m)[:, None]
        lv = np.sum(a * np.log(rate_v) - gammaln(a) + (a - 1) * np.log(v) - rate_v * v)
        lm = np.sum(a0 * np.log(b0) - gammaln(a0) - (a0 + 1) * np.log(m) - b0 / m)
        ll.append(lik)
        lj.append(lik + lt + lv + lm)
    return np.array(ll), np.array(lj)


def _run(data, Y, T, V, mu, prior, n_burn, n_keep, thin, rng, trace=0, names=None):
    """Burn-in then kept sweeps; with ``trace``, the burn-in in chunks of ``trace`` sweeps,
    printing the active count, the log-likelihood and the cosine of each active column to its
    nearest true signature after each chunk (same draws as one call: the state carries)."""
    from bnmfzoo.signatures import _gibbs
    from bnmfzoo.signatures.compressive import ACTIVE_MULTIPLE

    alpha, a, a0, b0 = prior
    N = Y.shape[1]
    T, V = np.maximum(T, 1e-12), np.maximum(V, 1e-12)
    T /= T.sum(axis=0, keepdims=True)
    mu = np.ascontiguousarray(mu, dtype=float)
    comp = (a, a0, b0, mu)
    pri = (alpha, a, np.zeros(N))
    _gibbs.seed(rng)
    if trace:
        for done in range(trace, n_burn + 1, trace):
            _gibbs.sweeps(data, T, V, pri, trace, compressive=comp)
            act = mu > ACTIVE_MULTIPLE * prior[3] / (prior[2] - 1.0)
            ll, _ = _log_joint(Y, T[None], V[None], mu[None], *prior)
            tot = V[act].sum(axis=1)
            print(f"  sweep {done:5d}: {int(act.sum())} active, log-lik {ll[0]:.1f}, "
                  "smallest active totals " + ", ".join(f"{v:,.0f}" for v in np.sort(tot)[:3]),
                  flush=True)
    else:
        _gibbs.sweeps(data, T, V, pri, n_burn, compressive=comp)
    return _gibbs.sweeps(data, T, V, pri, n_keep, keep=("TV",), thin=thin, compressive=comp)


def _summary(name, out, Y, truth, names, E_true, prior, eps):
    from bnmfzoo.signatures.assignment import align_draws, normalize_draws
    from bnmfzoo.signatures.compressive import ACTIVE_MULTIPLE, active_counts
    from bnmfzoo.signatures.matching import cosine_matrix

    k = active_counts(out["mu"], eps)
    vals, cnt = np.unique(k, return_counts=True)
    ll, lj = _log_joint(Y, out["T"], out["V"], out["mu"], *prior)
    print(f"\n[{name}] active signatures per draw: "
          + ", ".join(f"{v}: {c / k.size:.3f}" for v, c in zip(vals, cnt))
          + f"; mean log-lik {ll.mean():.1f} (sd {ll.std():.1f}), "
          f"mean log joint {lj.mean():.1f} (sd {lj.std():.1f})", flush=True)
    best = int(vals[np.argmax(cnt)])
    sel = np.flatnonzero(k == best)
    T_d = np.stack([out["T"][g][:, out["mu"][g] > ACTIVE_MULTIPLE * eps] for g in sel])
    V_d = np.stack([out["V"][g][out["mu"][g] > ACTIVE_MULTIPLE * eps] for g in sel])
    sig, expo = normalize_draws(T_d, V_d)
    sig, expo, _ = align_draws(sig, expo)
    found = sig.mean(axis=0)
    tot = expo.mean(axis=0).sum(axis=0)
    cos = cosine_matrix(found, truth)  # (found, true)
    print(f"[{name}] K = {best}: each true signature's best found signature")
    for j, s in enumerate(names):
        i = int(cos[:, j].argmax())
        others = [names[jj] for jj in range(len(names)) if jj != j and cos[i, jj] > 0.5]
        print(f"  {s:7s} true exposure {E_true[:, j].sum():11,.0f}  best found #{i:2d} "
              f"cos {cos[i, j]:.3f} (found total {tot[i]:11,.0f}; also cos > 0.5 to "
              f"{', '.join(f'{o} {cos[i, names.index(o)]:.2f}' for o in others) or '-'})")
    return cos, best, lj.mean()


def main(argv=None):
    from bnmfzoo.datasets.signature_cohorts import signature_cohort
    from bnmfzoo.signatures.matching import cosine_matrix
    from bnmfzoo.signatures.screen import _kl_start

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--genomes", type=int, default=1000)
    p.add_argument("--burn", type=int, default=2000)
    p.add_argument("--keep", type=int, default=1000)
    p.add_argument("--thin", type=int, default=5)
    p.add_argument("--k-max", type=int, default=20)
    p.add_argument("--trace", type=int, default=100,
                   help="truth chain: report the burn-in every this many sweeps (0: off)")
    a = p.parse_args(argv)
    c = signature_cohort("mixed12", n_genomes=a.genomes, random_seed=0)
    truth = c.signatures.values
    names = [str(s) for s in c.signatures["signature"].values]
    E = c.exposures.values  # (genomes, 12)
    X = c.counts.values
    Y = X.T.astype(np.int64)
    D, N = Y.shape
    rows, cols = np.nonzero(Y)
    data = (rows.astype(np.int64), cols.astype(np.int64), Y[rows, cols].astype(np.int64))
    alpha, aa, eps = 0.5, 1.0, 1e-3
    prior = (alpha, aa, aa * N + 1.0, eps * aa * N)
    tc = cosine_matrix(truth, truth)
    np.fill_diagonal(tc, 0)
    print(f"mixed12, {N} genomes, {int(Y.sum()):,} mutations; true signatures' nearest "
          "neighbours: " + ", ".join(f"{s}->{names[int(tc[j].argmax())]} {tc[j].max():.2f}"
                                     for j, s in enumerate(names)), flush=True)
    # chain 1 of the workflow, number for number (compressive_rank_posterior's seeding)
    ss = np.random.SeedSequence(0).spawn(4)[0]
    rng = np.random.default_rng(ss)
    t0 = time.process_time()
    T, V = _kl_start(Y.astype(float), a.k_max, rng)
    kl = _run(data, Y, T, V, V.mean(axis=1), prior, a.burn, a.keep, a.thin, rng)
    print(f"kl chain: {time.process_time() - t0:.0f} CPU s", flush=True)
    cos_kl, k_kl, lj_kl = _summary("kl", kl, Y, truth, names, E, prior, eps)
    # truth start: the 12 true signatures and exposures, 8 unused columns from the prior
    rng = np.random.default_rng(1)
    extra = a.k_max - truth.shape[0]
    T = np.concatenate([truth.T, rng.dirichlet(np.full(D, alpha), size=extra).T], axis=1)
    mu = np.concatenate([np.maximum(E.mean(axis=0), 10 * eps),
                         prior[3] / rng.gamma(prior[2], 1.0, size=extra)])
    V = np.concatenate([np.maximum(E.T, 1e-6),
                        rng.gamma(aa, 1.0, (extra, N)) * (mu[-extra:] / aa)[:, None]])
    t0 = time.process_time()
    tr = _run(data, Y, T, V, mu, prior, a.burn, a.keep, a.thin, rng, trace=a.trace)
    print(f"truth chain: {time.process_time() - t0:.0f} CPU s", flush=True)
    cos_tr, k_tr, lj_tr = _summary("truth", tr, Y, truth, names, E, prior, eps)
    best_kl = cos_kl.max(axis=0)
    miss = int(best_kl.argmin())
    print(f"\nkl chain's worst-recovered true signature: {names[miss]} (best cosine "
          f"{best_kl[miss]:.3f}; its true exposure {E[:, miss].sum():,.0f} mutations, "
          f"{100 * E[:, miss].sum() / E.sum():.2f} % of all; in "
          f"{int((E[:, miss] > 0).sum())} genomes; nearest true neighbour "
          f"{names[int(tc[miss].argmax())]} at cosine {tc[miss].max():.3f})")
    print(f"mean log joint: truth chain (K = {k_tr}) {lj_tr:.1f}, kl chain (K = {k_kl}) "
          f"{lj_kl:.1f}; difference {lj_tr - lj_kl:.1f} nats")


if __name__ == "__main__":
    main()
