"""Mutations carried by each active signature when the compression shape ``a`` is learned.

Run from the project root::

    nice -n 10 .venv/bin/python -m benchmarks.signatures.learned_shape_mass [--seed 0]
        [--design flat] [--genomes 100]

One cohort of :func:`bnmfzoo.datasets.signature_cohorts.signature_cohort` (negative-binomial
counts, ``overdispersion=20``, the calibration's ``flat_nb``), the workflow's compressive run
with ``a="random"``; at the most probable K, the median over draws of the mutations each active
signature explains (``sum_n V_kn``, largest first) and of the number of genomes where it
explains at least one. Signatures that carry thousands of mutations are not artefacts of the
activity cutoff.
"""

import argparse

import numpy as np

from bnmfzoo.datasets.signature_cohorts import signature_cohort
from bnmfzoo.signatures.compressive import compressive_rank_posterior


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--design", default="flat")
    p.add_argument("--genomes", type=int, default=100)
    a = p.parse_args(argv)
    c = signature_cohort(a.design, n_genomes=a.genomes, burden_median=2000,
                         overdispersion=20.0, random_seed=a.seed)
    X = c.counts.values
    t = compressive_rank_posterior(X, range(max(1, c.rank - 2), c.rank + 3),
                                   random_seed=a.seed, n_burn=2000, n_keep=1000, thin=5,
                                   likelihood="nb", a="random", n_draws=2000)
    T, V = t.attrs["draws"]
    mass = np.sort(V.sum(axis=2), axis=1)[:, ::-1]
    print(f"true K {c.rank}; most probable K {T.shape[2]}; {X.sum():.0f} mutations; "
          f"a median {np.median(t.attrs['a']):.3g}")
    print("median mutations per active signature, largest first:",
          np.median(mass, axis=0).round(0))
    print("median genomes where it explains >= 1 mutation:",
          np.median((V >= 1).sum(axis=2), axis=0))


if __name__ == "__main__":
    main()
