"""The copula rung's HMC move with a diagonal mass against the copula's correlation as its mass.

The large route (:func:`bnmfzoo.inference.large_route.large_mode_masses`, copula on) is run up to
its reference-path SMC and stopped there; the first mode's copula is fitted to its fit chains'
draws as the route fits it (each chain's start-up transient dropped). Then, in one process and
from the same states:

* for each ``(mass, leapfrog steps)`` and ``b`` in ``{1, 0.5}``: one chain of the rung's move
  (150 adaptation moves, then ``--moves`` kept), its CPU per move, step size, acceptance and the
  integrated autocorrelation times (Sokal's window) of ``l' = log p0 + log L - log q`` (what the
  tempering's swaps and the SMC's weights see) and of the log of the first column sum of ``A``
  (a scale ridge); the product of the two is the CPU per effective draw;
* with ``--tempering``: two reference-path tempering runs per mass along the copula's pilot
  ladder (``--scans`` kept scans after two tuning rounds and 30 burn-in scans, the same seeds
  for either mass): round trips, log Z and CPU per rung-scan.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.copula_mass \\
        --data counts/sbs96_escc/ESCC_SBS96.txt --rank 4 --seed 0 --tempering

Results: ``docs/results/masses_copula_reference_2.md`` section 32.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def iact(x):
    """Integrated autocorrelation time of ``x`` (Sokal's window: the first lag >= 5 tau)."""
    x = np.asarray(x, float) - np.mean(x)
    n = x.size
    f = np.fft.rfft(x, 2 * n)
    ac = np.fft.irfft(f * np.conj(f))[:n]
    ac /= ac[0]
    tau = 1.0
    for lag in range(1, n):
        tau += 2.0 * ac[lag]
        if lag >= 5.0 * tau:
            break
    return tau


def _chains(family, q, start, n_moves, settings):
    import bnmfzoo.inference.reference_path as rp

    for b in (1.0, 0.5):
        for mass, n_leap in settings:
            rng = np.random.default_rng(1)
            ad = rp.reference_adapter(family, "hmc", n_leap)
            ad.moves.copula_mass = mass
            path = rp.ReferencePath(ad, q)
            s = ad._state(start)
            for _ in range(150):
                path.sweep(s, b, rng)
            ad.moves.freeze()
            ll, ridge = [], []
            t = time.process_time()
            for _ in range(n_moves):
                path.sweep(s, b, rng)
                ll.append(path.loglik(s))
                ridge.append(np.log(s["A"][:, 0].sum()))
            ms = 1e3 * (time.process_time() - t) / n_moves
            print(f"b {b}, {'copula' if mass else 'diagonal'} mass, {n_leap} leapfrog steps: "
                  f"{ms:.1f} ms per move, step {ad.moves.eps:.3g}, acceptance "
                  f"{ad.moves.acceptance():.2f}, IACT l' {iact(ll):.1f}, IACT log col sum "
                  f"{iact(ridge):.1f}; ms per effective draw {ms * iact(ll):.0f} (l'), "
                  f"{ms * iact(ridge):.0f} (ridge)", flush=True)


def _tempering(family, q, n_scans):
    import bnmfzoo.inference.reference_path as rp
    import bnmfzoo.inference.reference_tempering as rt

    ad = rp.reference_adapter(family, "hmc", rp.COPULA_LEAPFROG)
    betas, lam = rt.pilot_ladder(rp.ReferencePath(ad, q), np.random.default_rng(7))
    print(f"pilot ladder: barrier {lam:.2f}, {betas.size} rungs", flush=True)
    for mass in (True, False):
        for r in range(2):
            def adapter_of(mass=mass):
                a = rp.reference_adapter(family, "hmc", rp.COPULA_LEAPFROG)
                a.moves.copula_mass = mass
                return a
            t = time.process_time()
            run = rt.reference_pt(adapter_of, q, np.random.default_rng(100 + r), betas,
                                  n_scans=n_scans, n_tune_rounds=2, n_burn=30)
            dt = time.process_time() - t
            scans = run.betas.size * (run.n_scans + run.n_tune_scans)
            print(f"{'copula' if mass else 'diagonal'} mass, run {r}: {dt:.0f} CPU s, "
                  f"{run.betas.size} rungs, {run.round_trips.sum():.0f} round trips, log Z "
                  f"{run.log_z:.2f}, max rejection {run.rejection.max():.2f}, "
                  f"{1e3 * dt / scans:.1f} ms per rung-scan", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="counts/sbs96_escc/ESCC_SBS96.txt",
                   help="a count matrix (a path, or one relative to the shared data folder)")
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--moves", type=int, default=600, help="kept moves per chain")
    p.add_argument("--tempering", action="store_true", help="also the tempering runs")
    p.add_argument("--scans", type=int, default=300, help="kept scans per tempering run")
    a = p.parse_args(argv)
    import bnmfzoo.inference.reference_path as rp
    from benchmarks.investigations._route_stop import run_to_the_smc

    family, fitted, cpu = run_to_the_smc(a.data, a.rank, a.seed)
    fits, _, inside, _ = fitted
    draws = fits[0][0][inside[0]]
    print(f"route stopped at the SMC after {cpu:.0f} CPU s; mode 0's "
          f"copula from {draws.shape[0]} fit draws", flush=True)
    ad = rp.reference_adapter(family, "hmc", rp.COPULA_LEAPFROG)
    q = ad.fit_copula(draws, ad.copula_widen[0])
    _chains(family, q, draws[-1], a.moves,
            ((True, 20), (True, 10), (False, 20)))
    if a.tempering:
        _tempering(family, q, a.scans)


if __name__ == "__main__":
    main()
