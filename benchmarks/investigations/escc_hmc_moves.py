"""Moves on a large count matrix: latent-count sweep vs HMC only, per CPU second (ESCC SBS96).

On the reference path of one mode of a Poisson NMF (the mode a KL-NMF start reaches; its
product-Gamma reference ``q`` fitted from plain chains as
:mod:`bnmfzoo.inference.reference_path` does, the chains run with HMC at ``b = 1``), at each
``b`` of ``--betas`` a fixed-``b`` chain of each move set: CPU milliseconds per step, the
integrated autocorrelation time ``tau`` of ``l' = log p0 + log L - log q`` (Sokal's window,
c = 5) and ``tau x ms`` (CPU milliseconds per effectively independent ``l'``). Move sets:
``sweep+shear+rescale+hmc`` (the breast SBS96 default: HMC at ``b >= 0.7`` only) and
``shear+rescale+hmc`` (no latent-count sweep: HMC at every ``b``). Also the cost of each move
alone. Results: ``docs/results/masses_large.md`` §2.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.escc_hmc_moves --steps 600
"""

import argparse
import json
import time

import numpy as np

from benchmarks.investigations.sbs96_local_moves import fixed_b_chain, matched_row

DATA = "/work/shared/data/counts/sbs96_escc/ESCC_SBS96.txt"


def setup(data=DATA, rank=4, seed=0, n_draws=200):
    """``(family, q, rng, start state, setup CPU s)``: a KL-NMF start, HMC chains, reference."""
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference.large_route import kl_nmf_start
    from bnmfzoo.inference.reference_path import WIDEN, ReferencePath, reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model

    X = _read(data)
    fam = family_of_model(_build(X, rank, "poisson"))
    rng = np.random.default_rng(seed)
    s = kl_nmf_start(fam.tempered.problem, fam.draw_prior(rng))
    ad = reference_adapter(fam, "shear+rescale+hmc", 20)
    prior_q = {"aA": ad.aA, "bA": ad.bA, "aW": ad.aW, "bW": ad.bW}
    path = ReferencePath(ad, prior_q)
    for _ in range(100):  # adapt HMC at b = 1
        path.sweep(s, 1.0, rng)
    ad.freeze()
    ref = _unit_l2(np.asarray(s["A"], float)[None])[0]
    rows = []
    for _ in range(n_draws):
        path.sweep(s, 1.0, rng)
        rows.append(matched_row(ad, s, ref))
    q = ad.fit(np.array(rows), WIDEN)
    return fam, q, rng, s


def main(argv=None):
    from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter

    p = argparse.ArgumentParser()
    p.add_argument("--data", default=DATA)
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--burn", type=int, default=100)
    p.add_argument("--betas", default="0.3,0.7,1.0")
    p.add_argument("--moves", default="sweep+shear+rescale+hmc,shear+rescale+hmc")
    p.add_argument("--leap", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    t0 = time.process_time()
    fam, q, rng, s0 = setup(a.data, a.rank, a.seed)
    print(f"setup (KL-NMF start, 300 HMC transitions at b = 1, reference fit) "
          f"{time.process_time() - t0:.1f} CPU s", flush=True)
    out = {"unit_ms": {}, "moves": {}}
    # the cost of each move alone (median over repeats), at b = 0.7
    for name in ("sweep", "shear", "rescale", "hmc", "shear+rescale"):
        ad = reference_adapter(fam, name, a.leap)
        ad.moves.hmc_from = 0.0
        path = ReferencePath(ad, q)
        s = path.copy(s0)
        ts = []
        for _ in range(15):
            c = time.process_time()
            path.sweep(s, 0.7, rng)
            ts.append(time.process_time() - c)
        c = time.process_time()
        for _ in range(15):
            path.loglik(s)
        out["unit_ms"]["loglik"] = 1e3 * (time.process_time() - c) / 15
        out["unit_ms"][name] = 1e3 * float(np.median(ts))
        print(f"{name:16s} {out['unit_ms'][name]:8.3f} ms per step (b = 0.7)", flush=True)
    print(f"loglik l'         {out['unit_ms']['loglik']:8.3f} ms", flush=True)
    for move in a.moves.split(","):
        res = []
        for b in (float(x) for x in a.betas.split(",")):
            # HMC's step size adapts during the burn-in, frozen afterwards
            tau, cpu, acc, ad = fixed_b_chain(fam, q, move, a.leap, s0, b, a.burn, a.steps, rng)
            ms = 1e3 * cpu
            res.append({"b": b, "tau": tau, "ms": ms, "tau_ms": tau * ms, "acc": acc,
                        "hmc_step": ad.moves.eps})
            print(f"{move:24s} b={b:.2f} tau={tau:7.1f} ms/step={ms:7.2f} tau*ms={tau * ms:8.1f}"
                  f" acc={acc:.2f} eps={ad.moves.eps:.4f}", flush=True)
        out["moves"][move] = res
    out["cpu_s"] = time.process_time() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
