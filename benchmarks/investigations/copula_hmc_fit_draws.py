"""The copula reference fitted to latent-count sweep draws, to HMC draws, or to both.

The large route (:func:`bnmfzoo.inference.large_route.large_mode_masses`, copula on) is run up
to its reference-path SMC and stopped there. Its first mode's fit draws are then two sets: the
latent-count sweep's fit chains (each chain's start-up transient dropped) and the chains of
:func:`~bnmfzoo.inference.large_route.hmc_fit_draws` (HMC at ``b = 1`` under the mass of a
copula fitted to the first set). A copula is fitted to each set and to both, and each path's
barrier is measured by :func:`~bnmfzoo.inference.reference_tempering.pilot_ladder` (40
particles, seeds 7-9): the tempering's rungs and the scans of a round trip both grow with it.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.copula_hmc_fit_draws \\
        --data counts/sbs96_escc/ESCC_SBS96.txt --rank 4 --seed 0

Results: ``docs/results/masses_copula_reference_2.md`` section 33.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="counts/sbs96_escc/ESCC_SBS96.txt",
                   help="a count matrix (a path, or one relative to the shared data folder)")
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--particles", type=int, default=40, help="particles per pilot")
    a = p.parse_args(argv)
    import bnmfzoo.inference.reference_path as rp
    import bnmfzoo.inference.reference_tempering as rt
    from benchmarks.investigations._route_stop import run_to_the_smc

    family, fitted, cpu = run_to_the_smc(a.data, a.rank, a.seed)
    fits, _, inside, _ = fitted
    rows, _, chain, _ = fits[0]
    sweep, hmc = inside[0] & (chain < 4), inside[0] & (chain >= 4)
    print(f"route stopped at the SMC after {cpu:.0f} CPU s; mode 0: {sweep.sum()} sweep and "
          f"{hmc.sum()} HMC fit draws inside its basin", flush=True)
    for name, keep in (("sweep draws", sweep), ("HMC draws", hmc), ("both", sweep | hmc)):
        ad = rp.reference_adapter(family, "hmc", rp.COPULA_LEAPFROG)
        t = time.process_time()
        q = ad.fit_copula(rows[keep], ad.copula_widen[0])
        fit_s = time.process_time() - t
        lams, ruds = [], []
        for s in (7, 8, 9):
            path = rp.ReferencePath(rp.reference_adapter(family, "hmc", rp.COPULA_LEAPFROG), q)
            betas, lam = rt.pilot_ladder(path, np.random.default_rng(s),
                                         n_particles=a.particles)
            lams.append(lam)
            ruds.append(betas.size)
        print(f"{name} ({keep.sum()}): copula fit {fit_s:.1f} CPU s; pilot barrier "
              f"{', '.join(f'{v:.2f}' for v in lams)}; rungs {ruds}", flush=True)


if __name__ == "__main__":
    main()
