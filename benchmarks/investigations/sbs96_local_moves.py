"""Where l' is slow on the reference path of breast SBS96 (Poisson, K = 4): tau(l') per rung.

For one mode (a plain chain from a prior draw; its fit chains and product-Gamma reference ``q``
as :mod:`bnmfzoo.inference.reference_path` builds them), the ladder of
:func:`bnmfzoo.inference.reference_tempering.pilot_ladder`, states equilibrated by a short
parallel-tempering run, then at each rung a fixed-``b`` chain of each local move: the
integrated autocorrelation time of ``l' = log p0 + log L - log q`` (Sokal's window, c = 5),
and CPU seconds per step. Moves (``--moves``, comma-separated; ``:L`` sets the leapfrog steps):
any ``+``-join of ``sweep`` (the power-posterior latent-count sweep), ``shear`` and ``rescale``
(the exact group moves with the rung's Gamma shapes and rates) and ``hmc`` (HMC on log A, log W,
:mod:`bnmfzoo.inference.counts.tempering._local`). Results: ``docs/results/masses_smc_bridge.md``
§3.17.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.sbs96_local_moves --steps 1500 \
        --top 6 --moves sweep,sweep+shear+rescale+hmc:20
"""

import argparse
import json
import math
import time

import numpy as np

DATA = "/work/shared/data/counts/sbs96_21brca_cosmic/Samples_SBS.txt"


def iat(x, c=5.0):
    """Integrated autocorrelation time by Sokal's adaptive window."""
    x = np.asarray(x, float) - np.mean(x)
    n = x.size
    f = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n]
    if acf[0] <= 0:
        return math.nan
    acf /= acf[0]
    tau = 1.0
    for m in range(1, n):
        tau = 1.0 + 2.0 * acf[1:m + 1].sum()
        if m >= c * tau:
            return float(tau)
    return float(tau)


def matched_row(ad, s, ref):
    """The reference adapter's draws of state ``s``, its components matched to ``ref``."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    _, perm = matched_angles(_unit_l2(np.asarray(s["A"], float)[None]), ref[None])
    return ad.draws(s, perm[0, 0])


def fixed_b_chain(fam, q, move, leap, s0, b, burn, steps, rng):
    """A fixed-``b`` chain of the local moves ``move`` on the reference path ``q``.

    From a copy of ``s0``: ``burn`` steps (the HMC step size adapts), then frozen, ``steps``
    steps recording ``l'``. Returns ``(tau of l', CPU s per step, acceptance, adapter)``.
    """
    from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter

    ad = reference_adapter(fam, move, n_leap=leap)
    path = ReferencePath(ad, q)
    s = path.copy(s0)
    for _ in range(burn):
        path.sweep(s, b, rng)
    ad.freeze()
    ll = np.empty(steps)
    c0 = time.process_time()
    for t in range(steps):
        path.sweep(s, b, rng)
        ll[t] = path.loglik(s)
    return iat(ll), (time.process_time() - c0) / steps, ad.moves.acceptance(), ad


def setup(seed=0, rank=4):
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference.reference_path import WIDEN, ReferencePath, reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model

    X = _read(DATA)
    fam = family_of_model(_build(X, rank, "poisson"))
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(300):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(s["A"], float)[None])[0]
    ad = reference_adapter(fam)
    rows = []
    for c in range(4):
        t = fam.tempered.copy(s)
        for _ in range(50):
            fam.tempered.sweep(t, 1.0, rng)
        for _ in range(200):
            for _ in range(2):
                fam.tempered.sweep(t, 1.0, rng)
            rows.append(matched_row(ad, t, ref))
    q = ad.fit(np.array(rows), WIDEN)
    return fam, q, lambda: ReferencePath(reference_adapter(fam), q), rng


def main(argv=None):
    from bnmfzoo.inference.reference_path import reference_adapter
    from bnmfzoo.inference.reference_tempering import _Rungs, _scan, pilot_ladder
    from bnmfzoo.inference.tempering import swap_pass

    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--moves", default="sweep,sweep+rescale,hmc,sweep+hmc")
    p.add_argument("--equil", type=int, default=200)
    p.add_argument("--leap", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=10**6, help="only the first TOP rungs (b = 1 first)")
    a = p.parse_args(argv)
    t0 = time.process_time()
    fam, q, mk, rng = setup(a.seed)
    print(f"setup {time.process_time() - t0:.1f} s", flush=True)
    betas, lam = pilot_ladder(mk(), rng)
    print(f"ladder {betas.size} rungs, Lambda {lam:.1f}", flush=True)
    rungs = _Rungs(lambda: reference_adapter(fam), q)
    states = [rungs.path(0.0).draw(rng) for _ in betas]
    parity = 0
    for _ in range(a.equil):
        ll = _scan(rungs, states, betas, rng, 1)
        swap_pass(states, betas, ll, rng, parity)
        parity ^= 1
    print(f"equilibrated {time.process_time() - t0:.1f} s", flush=True)
    out = {"betas": betas.tolist(), "moves": {}}
    for move in a.moves.split(","):
        taus, cpus, accs = [], [], []
        for i, b in enumerate(betas):
            b = float(b)
            if b == 0.0:
                taus.append(1.0)
                cpus.append(0.0)
                accs.append(1.0)
                continue
            if i >= a.top:
                taus.append(math.nan)
                cpus.append(math.nan)
                accs.append(math.nan)
                continue
            name, _, leap = move.partition(":")
            # 60 steps adapt the HMC step size (frozen afterwards)
            tau, cpu, acc, _ = fixed_b_chain(fam, q, name, int(leap or a.leap), states[i], b,
                                             60, a.steps, rng)
            cpus.append(cpu)
            taus.append(tau)
            accs.append(acc)
        out["moves"][move] = {"tau": taus, "cpu_ms": [1e3 * c for c in cpus], "acc": accs}
        tm = np.array(taus[:-1])
        ok = np.isfinite(tm)
        tm, cm = tm[ok], np.array(cpus[:-1])[ok]
        print(f"{move:14s} tau median {np.median(tm):6.1f} max {tm.max():6.1f} at b = "
              f"{betas[int(np.argmax(tm))]:.3f}; ms/step {1e3 * np.mean(cm):.3f}; "
              f"tau*ms max {np.max(tm * 1e3 * cm):.1f}", flush=True)
        for i in range(min(betas.size - 1, a.top)):
            print(f"   b={betas[i]:.4f} tau={taus[i]:7.1f} ms={1e3 * cpus[i]:.3f} "
                  f"acc={accs[i]:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
