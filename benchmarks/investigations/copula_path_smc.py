"""One Poisson mode's evidence by SMC along the copula's path or the product's.

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.copula_path_smc --data FILE
--rank K [--path copula|product] [--particles 48] [--moves 2] [--runs 4] [--draws 2000]``.

The best of 8 prior draws refined by KL updates (``kl_nmf_start``) is swept 300 times at
``b = 1``; every second of the next ``2 x draws`` latent-count sweeps is kept, and the reference
is fitted to them: the Gaussian copula over the Gamma marginals at widening ``COPULA_WIDEN[0]``
(moved by HMC with the copula's term alone, ``COPULA_LEAPFROG`` leapfrog steps) or the product of
Gammas at widening 1 (the count route's moves, ``sweep+shear+rescale+hmc``, 20 leapfrog steps).
Then ``--runs`` independent adaptive-tempering SMC runs along
``ReferencePath`` (CESS 0.9, ``--moves`` moves per temperature, the HMC step set per temperature
from the population), each printing its log Z, temperatures and CPU seconds. Compare with the
count route's per-mode tempering on the same matrix (``docs/results/masses_copula_reference.md``
section 25).
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo._cli.masses import _build, _read
from bnmfzoo.inference.counts._kl_start import kl_nmf_start
from bnmfzoo.inference.counts.tempering._reference_poisson import COPULA_LEAPFROG, COPULA_WIDEN
from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
from bnmfzoo.inference.smc_masses import family_of_model
from bnmfzoo.inference.tempering import smc


def fit_draws(fam, rng, n_draws):
    """``(n_draws, d)`` latent-count sweep draws of the best KL-refined prior draw's mode."""
    p = fam.tempered.problem
    starts = [kl_nmf_start(p, fam.draw_prior(rng), 300) for _ in range(8)]
    s = max(starts, key=fam.tempered.loglik)
    for _ in range(300):
        fam.tempered.sweep(s, 1.0, rng)
    rows = []
    for i in range(2 * n_draws):
        fam.tempered.sweep(s, 1.0, rng)
        if i % 2:
            rows.append(np.concatenate([s["A"].ravel(), s["W"].ravel()]))
    return np.array(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--path", choices=("copula", "product"), default="copula")
    ap.add_argument("--particles", type=int, default=48)
    ap.add_argument("--moves", type=int, default=2)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    fam = family_of_model(_build(_read(a.data), a.rank, "poisson"))
    rng = np.random.default_rng(a.seed)
    t0 = time.process_time()
    draws = fit_draws(fam, rng, a.draws)
    print(f"fit draws {draws.shape}, {time.process_time() - t0:.1f} CPU s", flush=True)
    if a.path == "copula":
        ad = reference_adapter(fam, "hmc", COPULA_LEAPFROG)
        q = ad.fit_copula(draws, COPULA_WIDEN[0])
    else:
        ad = reference_adapter(fam, "sweep+shear+rescale+hmc", 20)
        q = ad.fit(draws, 1.0)
    ad.moves.per_temperature()
    path = ReferencePath(ad, q)
    for r in range(a.runs):
        ad.moves.reset()
        t1 = time.process_time()
        run = smc(path, path.draw, a.particles, np.random.default_rng([a.seed, r]), cess=0.9,
                  n_moves=a.moves)
        print(f"{a.path} run {r}: log Z {run.log_z:.2f}, {run.betas.size} temperatures, "
              f"{time.process_time() - t1:.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
