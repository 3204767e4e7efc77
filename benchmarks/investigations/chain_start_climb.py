"""Do the default route's chain starts still climb? Plain latent-count sweeps from them.

:func:`bnmfzoo.inference.mode_bridge.chain_starts` starts a count model's plain chains at the
best 8 (by log joint) of 128 prior draws, each moved by 200 KL multiplicative updates. The
large route's restarts were moved on to their mode (``kl_nmf_start(..., tol=mode_tol)``)
because 300 updates from a single prior draw left them up to 7,800 nats below the typical set,
and their chains spent 900 sweeps climbing. Is the same true of the default route's starts?

The script makes the 8 starts as ``chain_starts`` does, and the same 8 moved on to their mode;
from each it runs ``--sweeps`` plain latent-count sweeps (``beta = 1``) and prints the start's
log posterior (what the KL updates climb, :func:`~bnmfzoo.inference.counts._kl_start.
log_posterior`), the mean and standard deviation of the chain's last 200 sweeps, and the first
sweep whose log posterior is inside ``mean - 3 sd`` of them. It counts sweeps, not seconds, so
a loaded machine does not change it.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.chain_start_climb \\
        --data FILE --rank 6 [--seed 0] [--sweeps 1200] [--genomes 214]

(``--genomes``: the first columns only; FILE in SigProfiler's layout, tab-separated.)
Results: ``docs/results/masses_copula_reference_2.md`` section 35.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def _starts(fam, rng, n_chains=8):
    """The starts of ``chain_starts`` and the same moved on to their mode."""
    from bnmfzoo.inference.counts._kl_start import KL_MAX, kl_nmf_start, mode_tol
    from bnmfzoo.inference.mode_bridge import chain_starts

    p = fam.tempered.problem
    best = list(chain_starts(fam, rng, n_chains))
    return best, [kl_nmf_start(p, s, n_iter=KL_MAX, tol=mode_tol(p)) for s in best]


def main(argv=None):
    import pandas as pd

    from bnmfzoo.inference.counts._kl_start import log_posterior, mode_tol
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweeps", type=int, default=1200)
    ap.add_argument("--genomes", type=int, default=None)
    args = ap.parse_args(argv)
    X = pd.read_csv(args.data, sep="\t", index_col=0).to_numpy(float)
    if args.genomes:
        X = X[:, :args.genomes]
    fam = family_of_model(poisson(X, args.rank))
    p = fam.tempered.problem
    t = time.process_time()
    best, moved = _starts(fam, np.random.default_rng(args.seed))
    print(f"X {X.shape}, K = {args.rank}, seed {args.seed}: starts {time.process_time() - t:.1f}"
          f" CPU s; mode_tol {mode_tol(p):.1f}")
    for name, starts in (("200 updates", best), ("to the mode", moved)):
        for c, start in enumerate(starts):
            s = {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
                 for k, v in start.items()}
            rng = np.random.default_rng([args.seed, c])
            lp0 = log_posterior(p, s)
            trace = np.empty(args.sweeps)
            for i in range(args.sweeps):
                fam.tempered.sweep(s, 1.0, rng)
                trace[i] = log_posterior(p, s)
            tail = trace[-200:]
            band = tail.mean() - 3.0 * tail.std()
            print(f"{name:12s} chain {c}: start {lp0:.1f}, last 200 sweeps {tail.mean():.1f} "
                  f"+- {tail.std():.1f}, inside mean - 3 sd from sweep "
                  f"{int(np.argmax(trace >= band)) + 1}", flush=True)


if __name__ == "__main__":
    main()
