"""How fast each rung of a count model's reference path forgets its tempered statistic.

Fits the route's reference to one mode (a KL-started chain, 300 sweeps, then 400 draws two
sweeps apart), then at several temperatures ``b`` runs one chain of the reference path's exact
moves from that mode (200 discarded, the step sizes frozen) and prints the integrated
autocorrelation time of ``l' = log p0 + log L - log q`` (sweeps per effective draw, from
``arviz_stats.ess``), its spread and the CPU per sweep (30 Nov 2026; used in
``docs/results/masses_nb_route_2.md`` section 15).

    python -m benchmarks.investigations.nb_rung_tau --data FILE --rank K \
        [--model negative_binomial] [--sweeps 1200]
"""

import argparse
import time

import numpy as np
from arviz_stats import ess

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo._cli.masses import _build, _read
from bnmfzoo.inference.mode_bridge import chain_starts
from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
from bnmfzoo.inference.smc_masses import family_of_model

BETAS = (0.1, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--model", default="negative_binomial")
    ap.add_argument("--sweeps", type=int, default=1200)
    a = ap.parse_args(argv)
    fam = family_of_model(_build(_read(a.data), a.rank, a.model))
    rng = np.random.default_rng(0)
    s = next(iter(chain_starts(fam, rng, 1)))
    for _ in range(300):
        fam.tempered.sweep(s, 1.0, rng)
    local = "sweep" if a.model == "negative_binomial" else "sweep+shear+rescale+hmc"
    ad = reference_adapter(fam, local, 20)
    draws = []
    for t in range(800):
        fam.tempered.sweep(s, 1.0, rng)
        if t % 2 == 0:
            draws.append(ad.draws(s, np.arange(a.rank)))
    q = ad.fit(np.array(draws), 2.0)
    for b in BETAS:
        path = ReferencePath(reference_adapter(fam, local, 20), q)
        st = fam.tempered.copy(s)
        ll, t0 = [], time.process_time()
        for t in range(a.sweeps):
            if t == 200 and hasattr(path.adapter, "freeze"):
                path.adapter.freeze()
            path.sweep(st, b, rng)
            if t >= 200:
                ll.append(path.loglik(st))
        ll = np.array(ll)
        tau = ll.size / float(ess(ll[None, :]))
        print(f"b={b}: tau {tau:.1f} sweeps, sd(l') {ll.std():.1f}, "
              f"{1e3 * (time.process_time() - t0) / a.sweeps:.2f} ms/sweep", flush=True)


if __name__ == "__main__":
    main()
