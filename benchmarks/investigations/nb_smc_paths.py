"""The NB's SMC from the prior along two paths: the rounding path and the Gamma-mixed power.

Runs ``--runs`` independent adaptive SMC runs from the prior of a negative-binomial model
(``--particles`` particles, ``--moves`` sweeps per step) along the rounding path
(:class:`~bnmfzoo.inference.counts.tempering._rounding.TemperedCounts`) and along the
Gamma-mixed power path (:class:`~bnmfzoo.inference.counts.tempering._power_nb.PowerNB`), one
after the other in one process with the same seeds, and prints each run's log Z, steps and
final ESS, then per path a JSON line with the runs' spread (sd) and CPU seconds (30 Nov 2026;
``docs/results/masses_nb_route_2.md`` section 15).

    python -m benchmarks.investigations.nb_smc_paths --data FILE --rank K [--runs 4]
        [--particles 16] [--moves 5] [--paths rounding,power]
"""

import argparse
import json
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo._cli.masses import _build, _read
from bnmfzoo.inference.counts.tempering._power_nb import PowerNB
from bnmfzoo.inference.counts.tempering._rounding import TemperedCounts
from bnmfzoo.inference.smc_masses import family_of_model
from bnmfzoo.inference.tempering import smc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--paths", default="rounding,power")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--particles", type=int, default=16)
    ap.add_argument("--moves", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    fam = family_of_model(_build(_read(a.data), a.rank, "negative_binomial"))
    prob = fam.tempered.problem
    for name in a.paths.split(","):
        path = TemperedCounts(prob) if name == "rounding" else PowerNB(prob)
        lz, steps = [], []
        t0 = time.process_time()
        for r in range(a.runs):
            run = smc(path, fam.draw_prior, a.particles, np.random.default_rng([a.seed, r]),
                      cess=0.9, n_moves=a.moves)
            lz.append(float(run.log_z))
            steps.append(int(run.betas.size))
            print(name, r, round(lz[-1], 2), steps[-1], round(float(run.final_ess), 3),
                  f"{time.process_time() - t0:.1f}s", flush=True)
        print(json.dumps({"path": name, "log_z": lz, "sd": float(np.std(lz, ddof=1)),
                          "steps": steps, "cpu_s": time.process_time() - t0}), flush=True)


if __name__ == "__main__":
    main()
