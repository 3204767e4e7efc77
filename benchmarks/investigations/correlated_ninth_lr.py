"""Is the ``correlated`` design's ninth signature detectable at all? A prior-free check.

The rank posterior puts ``K = 8`` first on the ``correlated`` design (truth 9) under every
proper prior measured (``docs/results/signatures_calibration_2.md``). This script asks the
question without a prior: a parametric-bootstrap likelihood-ratio test of 8 against 9
signatures (Poisson NMF, maximum likelihood by scikit-learn's KL-NMF with restarts).

For one cohort (``signature_cohort("correlated", ...)``, Poisson counts):

* ``gain`` = ``D(8) - D(9)``: the fall in the generalized KL divergence (= the rise in the
  Poisson log-likelihood, in nats) from the best of ``--restarts`` fits at rank 8 to the best
  at rank 9 (``--restarts`` more fits at rank 9 start from the rank-8 fit plus one component);
* ``oracle`` = ``D(8) - D_true``: the same against the generating mean ``E @ S`` itself (the
  truth's fit, which no estimator reaches: an upper bound on what the ninth can add, minus
  the over-fit of the rank-8 estimate);
* ``gain, rank 9 from the truth``: ``D(8)`` minus the rank-9 fit started at the true
  signatures and exposures (an oracle start: what the ninth can add when it is found; not a
  test statistic, the null's fits have no such start);
* the null: ``--boot`` matrices drawn as ``Poisson(mu_8)`` from the rank-8 fit, each fitted at
  8 and 9 by the same procedure; ``p`` = the share of their gains at least the cohort's
  (with the usual ``+1``).

A small ``p`` says the data do carry a ninth signature (a prior that still says 8 is then
over-charging it); a ``p`` that is not small says no test at this size tells 9 from 8, so a
rank posterior that puts 8 first reports what the data hold.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.correlated_ninth_lr \
        --seeds 0 1 2 --genomes 100 --boot 19

Results: ``docs/results/signatures_calibration_2.md`` (section "A prior-free check").
"""

import argparse
import json
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets.signature_cohorts import signature_cohort


def divergence(X, mu):
    """Generalized KL divergence ``sum x log(x / mu) - x + mu`` (0 log 0 = 0)."""
    mu = np.maximum(mu, 1e-300)
    pos = X > 0
    return float(np.sum(X[pos] * np.log(X[pos] / mu[pos])) - X.sum() + mu.sum())


def best_fit(X, rank, restarts, seed, max_iter, nested=None):
    """The best of ``restarts`` KL-NMF fits (NNDSVDa first, then random starts).

    ``nested``: a rank ``rank - 1`` fit ``(A, W)``; ``restarts`` more fits then start from it
    with one new component (a random profile at a tenth of the mean exposure), so the rank
    ``rank`` fit is never worse than a local optimum the smaller rank reached.
    Returns ``(D, mean, (A, W))``.
    """
    from sklearn.decomposition import NMF

    rng = np.random.default_rng(seed)
    best = (np.inf, None, None)
    starts = [("nndsvda", None)] + [("random", None)] * (restarts - 1)
    if nested is not None:
        A0, W0 = nested
        for _ in range(restarts):
            w = rng.dirichlet(np.ones(X.shape[1])) * W0.sum(1).mean()
            a = np.full((X.shape[0], 1), 0.1 * A0.mean())
            starts.append(("custom", (np.hstack([A0, a]), np.vstack([W0, w]))))
    for r, (init, custom) in enumerate(starts):
        model = NMF(rank, beta_loss="kullback-leibler", solver="mu", init=init,
                    max_iter=max_iter, tol=1e-8, random_state=seed + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if custom is None:
                A = model.fit_transform(X)
            else:
                A = model.fit_transform(X, W=custom[0].copy(), H=custom[1].copy())
        mu = A @ model.components_
        d = divergence(X, mu)
        if d < best[0]:
            best = (d, mu, (A, model.components_))
    return best


def gain(X, restarts, seed, max_iter):
    """``D(8) - D(9)`` and the rank-8 fit's mean (rank 9 also from the rank-8 fit, nested)."""
    d8, mu8, fit8 = best_fit(X, 8, restarts, seed, max_iter)
    d9, _, _ = best_fit(X, 9, restarts, seed + 1000, max_iter, nested=fit8)
    return d8 - d9, d8, mu8


def truth_start_gain(X, cohort, d8, max_iter):
    """``D(8) - D(9)`` with the rank-9 fit started at the truth (an oracle start, no test)."""
    from sklearn.decomposition import NMF

    model = NMF(9, beta_loss="kullback-leibler", solver="mu", init="custom",
                max_iter=max_iter, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        A = model.fit_transform(X, W=np.maximum(cohort.exposures.values, 1e-3),
                                H=cohort.signatures.values.copy())
    return d8 - divergence(X, A @ model.components_)


def one_cohort(seed, genomes, burden, boot, restarts, max_iter):
    t0 = time.process_time()
    c = signature_cohort("correlated", n_genomes=genomes, burden_median=burden,
                         random_seed=seed)
    X = c.counts.values.astype(float)
    g, d8, mu8 = gain(X, restarts, seed, max_iter)
    oracle = d8 - divergence(X, c.expected.values)
    from_truth = truth_start_gain(X, c, d8, max_iter)
    rng = np.random.default_rng(10_000 + seed)
    null = []
    for b in range(boot):
        Xb = rng.poisson(mu8).astype(float)
        null.append(gain(Xb, restarts, 100 * (b + 1) + seed, max_iter)[0])
    null = np.array(null)
    p = (1 + np.sum(null >= g)) / (1 + boot)
    return {"seed": seed, "genomes": genomes, "burden": burden, "gain": g, "oracle": oracle,
            "gain_from_truth": from_truth,
            "null": null.tolist(), "p": p, "cpu_s": time.process_time() - t0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--genomes", type=int, default=100)
    ap.add_argument("--burden", type=float, default=2000.0)
    ap.add_argument("--boot", type=int, default=19)
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--out", default=None, help="append one JSON line per cohort here")
    a = ap.parse_args(argv)
    print("seed genomes burden | gain D(8)-D(9) | oracle D(8)-D(true) | gain, rank 9 from the "
          "truth | null gains: median [min, max] | p | CPU s", flush=True)
    for s in a.seeds:
        r = one_cohort(s, a.genomes, a.burden, a.boot, a.restarts, a.max_iter)
        nl = np.array(r["null"])
        print(f"{s} {a.genomes} {a.burden:.0f} | {r['gain']:.1f} | {r['oracle']:.1f} | "
              f"{r['gain_from_truth']:.1f} | "
              f"{np.median(nl):.1f} [{nl.min():.1f}, {nl.max():.1f}] | {r['p']:.3f} | "
              f"{r['cpu_s']:.0f}", flush=True)
        if a.out:
            with open(a.out, "a") as fh:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
