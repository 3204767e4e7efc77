"""Round trips of the copula tempering on one Poisson mode, by its rung moves.

For one mode (the best of 8 KL-refined prior draws, swept 300 times, then 1,000 latent-count
sweep draws two apart: :func:`benchmarks.investigations.copula_path_smc.fit_draws`) the
Gaussian copula at ``COPULA_WIDEN[0]`` is fitted and a pilot ladder built
(:func:`~bnmfzoo.inference.tempering._ladder.pilot_ladder`, 20 particles), as the count
route does. Then either

* ``--tau B1,B2,...``: at each ``b`` one chain of the rung's move (200 adapting, then
  ``--scans`` kept) and the integrated autocorrelation time of ``l'`` (moves per effective
  draw, ``arviz_stats.ess``) with the CPU per move; or
* ``--seeds S1,S2,...``: one :func:`~bnmfzoo.inference.reference_tempering.reference_pt` run
  per seed (4 tuning rounds from 16 scans, 100 burn-in, ``--scans`` kept) and its round trips
  (summed over replicas, as the route counts them), log Z, rungs, rejections and CPU.

The rung move is HMC with the copula's term (the route's), changed by ``--leap`` (leapfrog
steps, the route's ``COPULA_LEAPFROG``), ``--sweeps`` (moves per scan), ``--top-leap`` /
``--top-moves`` (leapfrog steps and transitions at ``b = 1`` only) and ``--indep N
--indep-below B`` (``N`` independence Metropolis proposals from the copula before the HMC at
rungs ``b <= B``: exact, accepted with ``min(1, exp(b (l'(x*) - l'(x))))``).

``--toy MU,SIGMA,D`` replaces the mode by a Gaussian path with exact draws at every rung
(``q = N(0, I_D)``, ``p0 L = N(MU, SIGMA^2 I_D)``, log Z = 0): the round trips a window of
kept scans shows when the local moves are perfect.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.copula_rung_moves --data FILE \
        --rank 4 --seeds 0,1 [--leap 10] [--sweeps 2] [--scans 1000]

Results: ``docs/results/masses_copula_reference.md`` section 26.
"""

import argparse
import math
import time

import numpy as np
from arviz_stats import ess

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from benchmarks.investigations.copula_path_smc import fit_draws
from bnmfzoo._cli.masses import _build, _read
from bnmfzoo.inference.counts.tempering._reference_poisson import COPULA_LEAPFROG, COPULA_WIDEN
from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
from bnmfzoo.inference.reference_tempering import reference_pt
from bnmfzoo.inference.smc_masses import family_of_model
from bnmfzoo.inference.tempering._ladder import pilot_ladder


class GaussianToy:
    """A reference-path adapter whose every rung is drawn exactly (``q = N(0, I)``)."""

    def __init__(self, mu, sigma, d):
        self.mu, self.sigma, self.dimension = float(mu), float(sigma), int(d)

    def sweep(self, q, s, b, rng):
        prec = (1.0 - b) + b / self.sigma ** 2
        mean = b * self.mu / self.sigma ** 2 / prec
        s["x"] = mean + rng.standard_normal(self.dimension) / math.sqrt(prec)

    def log_p0(self, s):
        return 0.0

    def loglik(self, s):
        d = self.dimension
        return float(-0.5 * np.sum((s["x"] - self.mu) ** 2) / self.sigma ** 2
                     - d * math.log(self.sigma) - 0.5 * d * math.log(2.0 * math.pi))

    def log_q(self, q, s):
        return float(-0.5 * np.sum(s["x"] ** 2) - 0.5 * self.dimension * math.log(2.0 * math.pi))

    def copy(self, s):
        return {"x": s["x"].copy()}

    def draw_q(self, q, rng):
        return {"x": rng.standard_normal(self.dimension)}


def rung_adapter(fam, a):
    """The route's copula rung adapter with the move changes of ``a``."""
    ad = reference_adapter(fam, "hmc", a.leap)
    hmc = ad.sweep
    if a.top_moves is not None:
        ad.moves.top_hmc = a.top_moves

    def sweep(q, s, beta, rng):
        b = float(beta)
        if a.indep and b <= a.indep_below:
            lp = ad.log_p0(s) + ad.loglik(s) - ad.log_q(q, s)
            for _ in range(a.indep):
                new = ad.draw_q(q, rng)
                ln = ad.log_p0(new) + ad.loglik(new) - ad.log_q(q, new)
                if math.log(rng.uniform()) < b * (ln - lp):
                    s.update(A=new["A"], W=new["W"])
                    lp = ln
        ad.moves.n_leap = a.top_leap if (b == 1.0 and a.top_leap) else a.leap
        hmc(q, s, beta, rng)

    ad.sweep = sweep
    return ad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--toy", help="MU,SIGMA,D: the exact-draw Gaussian path instead of --data")
    ap.add_argument("--tau", help="comma-separated b: autocorrelation of l' per rung")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds of tempering runs")
    ap.add_argument("--scans", type=int, default=1000)
    ap.add_argument("--leap", type=int, default=COPULA_LEAPFROG)
    ap.add_argument("--sweeps", type=int, default=1)
    ap.add_argument("--top-leap", type=int, default=0)
    ap.add_argument("--top-moves", type=int, default=None)
    ap.add_argument("--indep", type=int, default=0)
    ap.add_argument("--indep-below", type=float, default=0.2)
    a = ap.parse_args(argv)
    if a.toy:
        mu, sigma, d = (float(v) for v in a.toy.split(","))
        toy = GaussianToy(mu, sigma, int(d))
        q, make = {}, lambda: toy
    else:
        fam = family_of_model(_build(_read(a.data), a.rank, "poisson"))
        draws = fit_draws(fam, np.random.default_rng(0), 1000)
        q = reference_adapter(fam, "hmc", COPULA_LEAPFROG).fit_copula(draws, COPULA_WIDEN[0])
        make = lambda: rung_adapter(fam, a)  # noqa: E731
    betas, lam = pilot_ladder(ReferencePath(make(), q), np.random.default_rng(1),
                              n_particles=20)
    print(f"pilot ladder: {betas.size} rungs, barrier {lam:.2f}", flush=True)
    if a.tau:
        rng = np.random.default_rng(2)
        for b in (float(v) for v in a.tau.split(",")):
            path = ReferencePath(make(), q)
            st = path.draw(rng)
            for _ in range(200):
                path.sweep(st, b, rng)
            if hasattr(path.adapter, "freeze"):
                path.adapter.freeze()
            ll, t0 = [], time.process_time()
            for _ in range(a.scans):
                path.sweep(st, b, rng)
                ll.append(path.loglik(st))
            cpu = (time.process_time() - t0) / a.scans
            tau = a.scans / float(ess(np.array(ll)[None, :]))
            print(f"b {b:.3f}: tau(l') {tau:.1f} moves, {1e3 * cpu:.2f} ms per move, "
                  f"{1e3 * tau * cpu:.1f} ms per effective draw", flush=True)
        return
    for sd in (int(v) for v in a.seeds.split(",")):
        t0 = time.process_time()
        run = reference_pt(make, q, np.random.default_rng(sd), betas, n_scans=a.scans,
                           n_tune_rounds=4, first_round=16, n_burn=100, n_sweeps=a.sweeps)
        cpu = time.process_time() - t0
        r = run.rejection
        ideal = a.scans / (2.0 + 2.0 * float(np.sum(r / (1.0 - r))))
        print(f"seed {sd}: {int(run.round_trips.sum())} round trips in {run.n_scans} kept "
              f"scans (stationary rate under exact rung draws: {ideal:.1f}), log Z "
              f"{run.log_z:.2f}, {run.betas.size} rungs, barrier {run.barrier:.2f}, "
              f"max rejection {r.max():.2f}, {cpu:.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
