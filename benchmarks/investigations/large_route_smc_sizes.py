"""The large route's path-SMC log Z as its particles and moves per temperature change.

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.large_route_smc_sizes
--data FILE --rank K --particles P --moves M [--seed 0]``.

Calls :func:`bnmfzoo.inference.large_route.large_mode_masses` on a Poisson model of the matrix
with the copula reference, ``P`` particles and ``M`` moves per temperature for the per-mode SMC
(4 runs), and a token tempering (2 runs x 50 scans: its log Z is not the one to compare with);
the restarts and fit chains depend on ``--seed`` only, so rows with one seed share them. Prints
the CPU seconds of the whole call and, per mode, the SMC's mean log Z, its runs and their
temperatures. Compare with the full tempering's log Z of the same mode (the ``bnmfzoo masses``
command at its default budget): ``docs/results/masses_copula_reference_2.md`` section 29.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def main(argv=None):
    from bnmfzoo._fitcli import read_matrix
    from bnmfzoo.inference.large_route import large_mode_masses
    from bnmfzoo.models import poisson

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--particles", type=int, required=True)
    p.add_argument("--moves", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    X = np.asarray(read_matrix(a.data), float)
    t = time.process_time()
    out = large_mode_masses(poisson(X, a.rank), random_seed=a.seed, copula=True,
                            n_particles=a.particles, n_moves=a.moves, pt_runs=2, pt_scans=50)
    s = out["smc"]
    print(f"particles {a.particles} x moves {a.moves}, seed {a.seed}: "
          f"{time.process_time() - t:.1f} CPU s")
    for k, lz in enumerate(np.atleast_1d(s["log_z"])):
        runs = np.round(np.asarray(s["run_log_z"][k], float), 2).tolist()
        print(f"mode {k}: SMC log Z {float(lz):.2f}; runs {runs}; temperatures "
              f"{s['n_temperatures'][k]}")


if __name__ == "__main__":
    main()
