"""How fast does the compressive prior compress the extra signatures of its start?

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.compression_trace DESIGN
SEED [GENOMES] [BURDEN] [SWEEPS] [STRENGTH]`` (defaults 100 genomes, burden median 2,000,
12,000 sweeps, ``unit``; ``none`` is ``c = a``), e.g. ``flat_nb 100``.

The calibration's cohort of :func:`bnmfzoo.datasets.signature_cohorts.signature_cohort`
(``_nb``: negative binomial, ``phi = 20``) is given to
:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior` (NB likelihood, KL start,
two chains, no burn-in, every 50th sweep kept) and the number of active signatures is printed
per block of 1,000 sweeps: the median and, where it varies, the range. A chain has forgotten its
start where the blocks stop falling; the workflow's burn-in is 2,000 sweeps.
"""

import sys
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets.signature_cohorts import signature_cohort
from bnmfzoo.signatures.compressive import compressive_rank_posterior


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    design, seed = args[0], int(args[1])
    genomes = int(args[2]) if len(args) > 2 else 100
    burden = float(args[3]) if len(args) > 3 else 2000.0
    sweeps = int(args[4]) if len(args) > 4 else 12000
    strength = args[5] if len(args) > 5 else "unit"
    strength = None if strength == "none" else strength if strength == "unit" else float(
        strength)
    base, nb = (design[:-3], 20.0) if design.endswith("_nb") else (design, None)
    c = signature_cohort(base, n_genomes=genomes, burden_median=burden, overdispersion=nb,
                         random_seed=seed)
    K = c.rank
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = compressive_rank_posterior(c.counts.values, range(max(1, K - 2), K + 3),
                                       random_seed=seed, n_burn=1, n_keep=sweeps, thin=50,
                                       likelihood="nb", strength=strength, n_chains=2)
    print(f"{design} seed {seed}, {genomes} genomes, true K {K}, strength {strength}, "
          f"CPU {time.process_time() - t0:.0f} s; active signatures per 1,000 sweeps:")
    for chain in t.attrs["counts"]:
        blocks = chain[: len(chain) // 20 * 20].reshape(-1, 20)
        print("  ", " ".join(f"{int(np.median(b))}" + (f"({b.min()}-{b.max()})"
                                                       if b.min() != b.max() else "")
                             for b in blocks), flush=True)


if __name__ == "__main__":
    main()
