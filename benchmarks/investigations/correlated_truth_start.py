"""Does the compressive posterior keep the ``correlated`` design's ninth signature from the truth?

Chains of :func:`bnmfzoo.signatures.compressive.compressive_rank_posterior` start from a KL-NMF
fit at ``k_max`` (every signature active) and compress to 8 active signatures on this design
(truth 9; ``docs/results/signatures_calibration_2.md``). Here the same sampler starts from the
truth instead: the cohort's 9 true signatures and exposures, plus ``k_max - 9`` signatures at
a draw of the prior with exposures near zero. If the chains stay at 9 while the default start
ends at 8, the sampler has two metastable states and the reported ``P(K)`` is a mode-finding
result; if they fall to 8, the posterior itself says 8.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.correlated_truth_start \
        --seed 100 --genomes 500 --strength unit --burn 6000 --keep 2000 [--likelihood poisson]
        [--start kl | kl:K] [--a 0.3]

Prints each chain's active signatures over its kept draws and the rank table.
Results: ``docs/results/signatures_calibration_2.md`` (section "A prior-free check").
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
import bnmfzoo.signatures.compressive as compressive
from bnmfzoo.datasets.signature_cohorts import signature_cohort


def truth_start(cohort, k_max):
    """``_kl_start``'s replacement: the true ``T``, ``V`` plus near-empty extra signatures."""
    S = cohort.signatures.values  # (9, 96)
    E = cohort.exposures.values  # (genomes, 9)

    def start(Y, k, rng):
        assert k == k_max
        D, N = Y.shape
        extra = rng.dirichlet(np.full(D, 0.5), size=k - S.shape[0]).T
        T = np.hstack([S.T, extra])
        V = np.vstack([np.maximum(E.T, 1e-3), np.full((k - S.shape[0], N), 1e-3)])
        return T, V
    return start


def rank_start(k_start, k_max):
    """``_kl_start``'s replacement: a KL-NMF fit at ``k_start`` plus near-empty signatures.

    The library's start fits all ``k_max`` (every signature active) and must compress; this
    one starts at a candidate rank, so chains from several ranks show whether the posterior
    moves between them (a start at each candidate rank, ``signatures_calibration_2.md``).
    """
    from bnmfzoo.signatures.screen import _kl_start

    def start(Y, k, rng):
        assert k == k_max and k_start <= k_max
        D, N = Y.shape
        T, V = _kl_start(Y, k_start, rng)
        extra = rng.dirichlet(np.full(D, 0.5), size=k - k_start).T
        return (np.hstack([T, extra]),
                np.vstack([np.maximum(V, 1e-3), np.full((k - k_start, N), 1e-3)]))
    return start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--genomes", type=int, default=500)
    ap.add_argument("--burden", type=float, default=2000.0)
    ap.add_argument("--strength", default=None, help="'unit' or a number; default: c = a")
    ap.add_argument("--burn", type=int, default=6000)
    ap.add_argument("--keep", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--start", default="truth",
                    help="'truth', 'kl' (the library's: KL-NMF at k_max) or 'kl:K' (KL-NMF "
                         "at rank K plus near-empty signatures)")
    ap.add_argument("--a", default="1", help="the exposures' Gamma shape, or 'random'")
    ap.add_argument("--likelihood", choices=("nb", "poisson"), default="nb",
                    help="the counts' likelihood (default nb, the workflow's)")
    a = ap.parse_args(argv)
    c = signature_cohort("correlated", n_genomes=a.genomes, burden_median=a.burden,
                         random_seed=a.seed)
    ranks = list(range(6, 13))
    k_max = max(min(2 * ranks[-1], 20), ranks[-1] + 1)
    if a.start == "truth":
        compressive._kl_start = truth_start(c, k_max)
    elif a.start.startswith("kl:"):
        compressive._kl_start = rank_start(int(a.start[3:]), k_max)
    elif a.start != "kl":
        ap.error(f"--start must be truth, kl or kl:K, got {a.start!r}")
    strength = a.strength
    if strength not in (None, "unit"):
        strength = float(strength)
    t0 = time.process_time()
    table = compressive.compressive_rank_posterior(
        c.counts.values, ranks, k_max=k_max, n_chains=a.chains, n_burn=a.burn, n_keep=a.keep,
        thin=5, strength=strength, likelihood=a.likelihood,
        a=a.a if a.a == "random" else float(a.a), random_seed=a.seed, progress=print)
    print(table[["rank", "probability", "low", "high", "draws"]].to_string(index=False))
    print(f"start {a.start}, strength {a.strength}, a {a.a}, {a.likelihood}, "
          f"R-hat {table.attrs['rhat']:.3f}; {time.process_time() - t0:.0f} CPU s")
    print(table.attrs["note"])


if __name__ == "__main__":
    main()
