"""CPU time of the signature workflow: one Gibbs sweep, and the whole workflow at 1,000 genomes.

Run from the project root::

    nice -n 10 .venv/bin/python -m benchmarks.signatures.workflow_speed [--genomes 1000]
        [--ranks 2-12] [--repeats 5] [--runs 2] [--sweep-only] [--likelihood nb|poisson]

* **sweep**: the signatures' Gibbs sweep (:mod:`bnmfzoo.signatures._gibbs`: the multinomial
  split of every nonzero cell, the Dirichlet draws of the signatures, the Gamma draws of the
  exposures) at 96 channels x 500 genomes of the ``mixed12`` design (COSMIC v3.4, median burden
  4,000, seed 0; 2.7 million mutations), ``K = 20`` (an overfitted rank), started from the
  variational means; the median over ``--repeats`` timings of 10 sweeps each (target: 0.02
  CPU s per sweep); with ``--likelihood nb`` the negative-binomial sweep is timed too, in the
  same run (its ratio to the Poisson sweep);
* **workflow**: :func:`bnmfzoo.signatures.extract` with its defaults (``--rank-method
  compressive``: 4 chains of 2,000 + 1,000 sweeps at ``min(2 x max rank, 20)`` signatures;
  ``chib``: Chib's estimate after the variational screen) on ``mixed12`` with ``--genomes``
  genomes (12 signatures), ranks ``--ranks``, the COSMIC v3.4 reference: total CPU seconds
  (target: 900 at 1,000 genomes, ranks 2-12: rank posterior, extraction and assignment) and
  the probabilities.

CPU time is ``time.process_time`` of this (single-threaded) process.
"""

import argparse
import time

import numpy as np

from benchmarks._common import Clock  # noqa: F401 - sets one BLAS thread first


def sweep_time(repeats, K=20, genomes=500, nb=False):
    from bnmfzoo.datasets.signature_cohorts import signature_cohort
    from bnmfzoo.signatures import _gibbs
    from bnmfzoo.signatures.evidence import _nonzero
    from bnmfzoo.signatures.screen import default_prior, vb_bound

    c = signature_cohort("mixed12", n_genomes=genomes, random_seed=0)
    Y = c.counts.values.T.astype(np.int64)
    _, T, V = vb_bound(Y, K, n_restarts=1, random_seed=0)
    T = np.maximum(T, 1e-12)
    T /= T.sum(axis=0)
    V = np.maximum(V, 1e-12)
    alpha, aV, bV = default_prior(Y, K)
    prior = (alpha, aV, np.asarray(bV, float))
    data = _nonzero(Y)
    state = _gibbs.nb_state(Y.shape) if nb else None
    _gibbs.seed(np.random.default_rng(0))
    _gibbs.sweeps(data, T, V, prior, 20, nb=state)  # compile, leave the start
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        _gibbs.sweeps(data, T, V, prior, 10, nb=state)
        times.append((time.process_time() - t0) / 10)
    return Y, float(np.median(times)), times


def main(argv=None):
    from bnmfzoo.signatures.command import parse_ranks

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--genomes", type=int, default=1000)
    p.add_argument("--ranks", type=parse_ranks, default=list(range(2, 13)))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--runs", type=int, default=2, help="Chib runs per evaluated rank (2)")
    p.add_argument("--rank-method", choices=("compressive", "chib"), default="compressive")
    p.add_argument("--sweep-only", action="store_true")
    p.add_argument("--likelihood", choices=("nb", "poisson"), default="nb")
    a = p.parse_args(argv)
    Y, med, times = sweep_time(a.repeats)
    print(f"sweep, 96 x 500 genomes ({int(Y.sum()):,} mutations), K = 20: median "
          f"{med:.4f} CPU s over {a.repeats} x 10 sweeps (each: "
          + ", ".join(f"{t:.4f}" for t in times) + ")", flush=True)
    if a.likelihood == "nb":
        _, med_nb, times = sweep_time(a.repeats, nb=True)
        print(f"negative-binomial sweep: median {med_nb:.4f} CPU s ({med_nb / med:.2f} x the "
              "Poisson sweep; each: " + ", ".join(f"{t:.4f}" for t in times) + ")", flush=True)
    if a.sweep_only:
        return
    from bnmfzoo.datasets import load_cosmic_signatures
    from bnmfzoo.datasets.signature_cohorts import signature_cohort
    from bnmfzoo.signatures import extract

    c = signature_cohort("mixed12", n_genomes=a.genomes, random_seed=0)
    ref = load_cosmic_signatures("v3.4").rename(row="signature", col="channel")
    t0 = time.process_time()
    dt = extract(c.counts, ranks=a.ranks, reference=ref, random_seed=0, n_runs=a.runs,
                 rank_method=a.rank_method,
                 likelihood=a.likelihood if a.rank_method == "compressive" else "poisson",
                 progress=lambda line: print(f"  [{time.process_time() - t0:7.1f} s] {line}",
                                             flush=True))
    cpu = time.process_time() - t0
    r = dt["ranks"].to_dataset().to_dataframe()
    print(f"\nworkflow, mixed12, {a.genomes} genomes ({int(c.counts.values.sum()):,} "
          f"mutations), ranks {a.ranks[0]}-{a.ranks[-1]}, rank method {a.rank_method}, "
          f"likelihood {dt.attrs['likelihood']}: "
          f"{cpu:.0f} CPU s (target 900)")
    print(r.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"most probable rank {dt.attrs['rank']} (true 12); {dt.attrs['note']}")


if __name__ == "__main__":
    main()
