"""Cemgil (2009)'s model-order selection, over data seeds: VB bound, Chib, held-out, ML.

A. T. Cemgil, "Bayesian Inference for Nonnegative Matrix Factorisation Models", Computational
Intelligence and Neuroscience 2009, Article ID 785152, illustrates model order selection (its
abstract) with the variational bound of its Algorithm 1 (Gamma priors on the templates ``T`` and
excitations ``V``, Poisson observations of ``T V``, Fig. 1). The stored copy of the paper we
could read has the abstract, Fig. 1 and Algorithm 1 but not the experiment's section, so the
data sizes and hyperparameters below are ours, not the paper's (``benchmarks/RESULTS.md``,
"Rank selection on real data").

Per data seed: ``X`` (``D x N``) drawn from the model with ``I0`` templates, ``T, V ~ Gamma(a,
b)`` (shape, rate; Cemgil's shape-and-mean parameters are ``a`` and ``a / b``); then for every
order ``I``

* the VB bound (:func:`bnmfzoo.inference.select_rank_poisson`, best of 3 restarts, the true
  ``a, b``), and the bound plus ``log I!``: mean-field ``q`` sits in one of the ``I!``
  relabellings of the posterior, which by itself puts the bound ``log I!`` below the evidence
  when they are separated (Bishop 2006, PRML Sec. 10.2.4);
* Chib's (1995) estimate of ``log p(X)`` from the Gibbs sampler
  (:mod:`benchmarks.reproduce.counts._chib`; relabelling-averaged, one row of ``T`` per block);
* the held-out Poisson log-likelihood of 10 % of the cells (VB fit on the others, plug-in
  posterior means), a criterion that no bound gap biases;
* the Poisson log-likelihood of the maximum-likelihood KL-NMF (scikit-learn, multiplicative
  updates), which only grows with ``I``.

Printed: each seed's choices and the Chib - bound gap per order with the smallest effective
number of Rao-Blackwell terms (an ESS of a few draws means Chib's value is biased upwards: read
the choice as undecided when it rests on such a value), then how often each criterion picks each
order. Measured values: ``benchmarks/RESULTS.md``.
"""

import math
import time

import numpy as np
from scipy.special import gammaln

from benchmarks.reproduce.counts._chib import chib_log_evidence


def _poisson_loglik(X, lam):
    return float((X * np.log(lam) - lam - gammaln(X + 1.0)).sum())


def _heldout(X, orders, a, b, rng):
    from bnmfzoo.inference import fit_vb_poisson
    from bnmfzoo.models import poisson

    held = rng.random(X.shape) < 0.1
    out = []
    for r in orders:
        best = None
        for _ in range(3):
            dt = fit_vb_poisson(poisson(X, r, a=a, b=b, mask=~held), random_seed=rng,
                                progressbar=False, n_draws=1)
            if best is None or dt.attrs["elbo"] > best.attrs["elbo"]:
                best = dt
        v = best["variational"]
        lam = ((v["A_shape"] / v["A_rate"]).values @ (v["W_shape"] / v["W_rate"]).values)
        out.append(_poisson_loglik(X[held], lam[held]))
    return np.array(out)


def _ml_nmf(X, orders):
    import warnings

    from sklearn.decomposition import NMF

    out = []
    for r in orders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = NMF(r, beta_loss="kullback-leibler", solver="mu", max_iter=2000, tol=1e-8,
                    init="nndsvda", random_state=0)
            W = m.fit_transform(X.astype(float))
        out.append(_poisson_loglik(X, np.maximum(W @ m.components_, 1e-300)))
    return np.array(out)


def cemgil(*, replicates=10, chib_replicates=10, D=40, N=30, I0=3, a=1.0, b=1.0,
           orders=range(1, 6), n_keep=4000, block_rows=1):
    """Run the experiment; print per seed and the summary; return the per-seed records."""
    from bnmfzoo.inference import select_rank_poisson

    orders = list(orders)
    logfact = np.array([math.lgamma(r + 1) for r in orders])
    records = []
    print(f"\n## Cemgil (2009) model-order selection: {D} x {N}, true I = {I0}, "
          f"T, V ~ Gamma({a:g}, {b:g}) (shape, rate), orders {orders[0]}..{orders[-1]}, "
          f"{replicates} data seeds (Chib on the first {chib_replicates})")
    t0 = time.process_time()
    for seed in range(replicates):
        rng = np.random.default_rng(1000 + seed)
        X = rng.poisson(rng.gamma(a, 1.0 / b, (D, I0)) @ rng.gamma(a, 1.0 / b, (I0, N)))
        vb = select_rank_poisson(X, orders, restarts=3, a=a, b=b, random_seed=seed,
                                 progressbar=False)["elbo"]
        rec = {"seed": seed, "total": int(X.sum()), "vb": vb, "vb_perm": vb + logfact,
               "heldout": _heldout(X, orders, a, b, rng), "ml": _ml_nmf(X, orders)}
        if seed < chib_replicates:
            ch = [chib_log_evidence(X, r, a=a, b=b, n_burn=500, n_keep=n_keep,
                                    block_rows=block_rows, random_seed=seed) for r in orders]
            rec["chib"] = np.array([c["log_evidence"] for c in ch])
            rec["chib_ess"] = np.array([c["min_ess"] for c in ch])
        records.append(rec)
        pick = {k: orders[int(np.argmax(rec[k]))] for k in rec if k in _CRITERIA}
        line = ", ".join(f"{_CRITERIA[k]} {pick[k]}" for k in _CRITERIA if k in pick)
        print(f"  seed {seed} (sum X = {rec['total']}): picks {line}", flush=True)
        if "chib" in rec:
            print("    Chib - bound per order: "
                  + ", ".join(f"I={r}: {c - v:.1f}" for r, c, v in
                              zip(orders, rec["chib"], rec["vb"]))
                  + "; min ESS of the Rao-Blackwell terms: "
                  + ", ".join(f"{e:.0f}" for e in rec["chib_ess"]))
    print(f"\n  how often each criterion picks each order (true I = {I0}); CPU "
          f"{time.process_time() - t0:.0f} s")
    print("  criterion                 " + " ".join(f"I={r:<3d}" for r in orders) + " runs")
    for k, label in _CRITERIA.items():
        recs = [r for r in records if k in r]
        counts = [sum(orders[int(np.argmax(r[k]))] == o for r in recs) for o in orders]
        print(f"  {label:25s} " + " ".join(f"{c:<5d}" for c in counts) + f" {len(recs)}")
    chib = [r for r in records if "chib" in r]
    if chib:
        gap = np.mean([r["chib"] - r["vb"] for r in chib], axis=0)
        print("  mean Chib - bound (nats): "
              + ", ".join(f"I={o}: {g:.1f}" for o, g in zip(orders, gap)))
    print("  paper: the stored copy has no values for this experiment (see RESULTS.md)")
    return records


_CRITERIA = {"vb": "VB bound", "vb_perm": "bound + log I!", "chib": "Chib",
             "heldout": "held-out loglik", "ml": "ML-NMF loglik"}
