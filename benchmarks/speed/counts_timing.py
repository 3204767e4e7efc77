"""Time per iteration on count data: our latent-count Gibbs sweep, scikit-learn's KL-NMF (MU)
and hpfrec's HPF (CAVI), all in one run, one thread each.

Run with ``nice -n 15 python -m benchmarks.speed.counts_timing`` (about 5-10 CPU minutes;
``--quick``: the first 2,000 documents of 20 Newsgroups).

On 20 Newsgroups (18,774 x 55,911, 2.4 M nonzeros, scipy.sparse) and the Last.fm play counts
(1,892 x 17,632, 92,834 nonzeros, 69 M plays), at K = 6 and K = 10, it prints the median CPU
seconds of

* one Gibbs sweep of the count core (:func:`bnmfzoo.inference.counts.sweep.sweep`: split of
  the nonzero counts plus both Gamma draws), median of 10 after 2 warm-up sweeps; and, once
  :class:`bnmfzoo.inference.GibbsPoisson` exists, one sweep through PyMC's step interface
  (``step.step(point)``);
* one scikit-learn MU iteration: (CPU of a 25-iteration fit - CPU of a 5-iteration fit) / 20,
  ``tol=0``, ``init="nndsvda"`` (so the initialisation cancels);
* one hpfrec CAVI iteration: the same difference of 25- and 5-iteration fits (``ncores=1``),

and the ratios sweep / MU iteration and sweep / HPF iteration (issue 33 asks for a sweep at
most 1/5 of an MU iteration on a UMI-sized matrix).
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp

import benchmarks  # noqa: F401
from benchmarks.reproduce.counts._shared import hpf, time_core_sweeps


def sklearn_per_iter(X, K):
    import warnings

    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    cpu = {}
    for it in (5, 25):
        est = NMF(K, beta_loss="kullback-leibler", solver="mu", init="nndsvda", max_iter=it,
                  tol=0.0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.process_time()
            est.fit_transform(X)
            cpu[it] = time.process_time() - t0
    return (cpu[25] - cpu[5]) / 20


def hpf_per_iter(X, K):
    cpu = {it: hpf(X, K, maxiter=it)[3] for it in (5, 25)}
    return (cpu[25] - cpu[5]) / 20


def step_per_sweep(X, K, n=5):
    """Median CPU seconds of ``GibbsPoisson.step`` on ``models.poisson`` (None if absent)."""
    try:
        from bnmfzoo.inference import GibbsPoisson
        from bnmfzoo.models import poisson
    except (ImportError, AttributeError):
        return None
    model = poisson(X, K)
    with model:
        step = GibbsPoisson(model=model) if _takes_model(GibbsPoisson) else GibbsPoisson()
    point = model.initial_point(random_seed=0)
    times = []
    for i in range(n + 1):
        t0 = time.process_time()
        point, _ = step.step(point)
        if i:
            times.append(time.process_time() - t0)
    return float(np.median(times))


def _takes_model(cls):
    import inspect

    return "model" in inspect.signature(cls).parameters


def run(name, X, Ks):
    X = sp.csr_array(X, dtype=float)
    print(f"\n## {name}: {X.shape[0]:,} x {X.shape[1]:,}, {X.nnz:,} nonzeros, "
          f"{int(X.sum()):,} counts")
    print(f"{'K':>3s} {'Gibbs sweep':>12s} {'step sweep':>11s} {'sklearn MU it':>14s} "
          f"{'HPF it':>9s} {'sweep/MU':>9s} {'sweep/HPF':>10s}")
    for K in Ks:
        g = time_core_sweeps(X, K)
        s = step_per_sweep(X, K)
        m = sklearn_per_iter(X, K)
        h = hpf_per_iter(X, K)
        s_txt = "n/a" if s is None else f"{s:.4f}"
        print(f"{K:3d} {g:12.4f} {s_txt:>11s} {m:14.4f} {h:9.4f} {g / m:9.3f} {g / h:10.3f}")


def main(argv=None):
    from bnmfzoo.datasets import load_lastfm_plays, load_newsgroups

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        run("20 Newsgroups, first 2000 documents", load_newsgroups().X[:2000], [6])
        return
    run("20 Newsgroups", load_newsgroups().X, [6, 10])
    run("Last.fm plays", load_lastfm_plays().X, [6, 10])


if __name__ == "__main__":
    main()
