"""Round trips per CPU second of the NB reference-path tempering against sweeps per scan.

Fits the route's reference to one mode as :mod:`benchmarks.investigations.nb_rung_tau` does
(a KL-started chain, 300 sweeps, then 400 draws two sweeps apart, ``widen`` 2), builds the
pilot ladder once, then runs :func:`bnmfzoo.inference.reference_tempering.reference_pt` with
``n_sweeps`` exact sweeps of every replica per scan for the same CPU allowance each, and prints
the round trips, kept scans, rungs, barrier and log Z of each run (30 Nov 2026). ``--labels``
saves the kept scans' labels (rung -> replica); ``--flux FILE.npy`` prints their profile
(:func:`flux`).

    python -m benchmarks.investigations.nb_pt_sweeps --data FILE --rank K \
        [--sweeps 1 3] [--cpu 300] [--seed 0]
"""

import argparse

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
import bnmfzoo.inference.reference_tempering as rt
from bnmfzoo._cli.masses import _build, _read
from bnmfzoo.inference.mode_bridge import chain_starts
from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
from bnmfzoo.inference.reference_tempering import pilot_ladder, reference_pt
from bnmfzoo.inference.smc_masses import family_of_model


def flux(labels):
    """Per rung, the share of its replicas whose last end visited was ``b = 0`` (rung -1).

    Under efficient local exploration this rises linearly from 0 at ``b = 1`` (rung 0) to 1
    at ``b = 0`` (Syed et al. 2021); a step marks a bottleneck. Also returns the mean number
    of scans between a replica's direction reversals.
    """
    lab = np.asarray(labels)
    n_scans, n = lab.shape
    last = np.full(n, -1)  # replica -> 0 (top seen last), 1 (bottom seen last)
    up, seen = np.zeros(n), np.zeros(n)
    pos = np.empty(n, dtype=np.int64)
    prev, moves, reversals, direction = None, 0, 0, np.zeros(n)
    for t in range(n_scans):
        pos[lab[t]] = np.arange(n)
        last[lab[t, 0]], last[lab[t, -1]] = 0, 1
        rung_last = last[lab[t]]
        ok = rung_last >= 0
        up[ok] += rung_last[ok]
        seen[ok] += 1
        if prev is not None:
            step = np.sign(pos - prev)
            turned = (step != 0) & (direction != 0) & (step != direction)
            reversals += int(turned.sum())
            moves += int((step != 0).sum())
            direction = np.where(step != 0, step, direction)
        prev = pos.copy()
    return up / np.maximum(seen, 1), moves / max(reversals, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flux", help="print the flux profile of a saved labels .npy and exit")
    ap.add_argument("--data")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--model", default="negative_binomial")
    ap.add_argument("--sweeps", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--cpu", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--widen", type=float, default=2.0)
    ap.add_argument("--labels", help="save each run's kept labels to LABELS_<sweeps>.npy")
    a = ap.parse_args(argv)
    if a.flux:
        f, per = flux(np.load(a.flux))
        print("share of replicas last at b = 0, rung 0 (b = 1) to the last:",
              np.round(f, 2).tolist(), f"; moves per reversal {per:.2f}")
        return
    fam = family_of_model(_build(_read(a.data), a.rank, a.model))
    rng = np.random.default_rng(a.seed)
    s = next(iter(chain_starts(fam, rng, 1)))
    for _ in range(300):
        fam.tempered.sweep(s, 1.0, rng)
    ad = reference_adapter(fam, "sweep", 10)
    draws = []
    for t in range(800):
        fam.tempered.sweep(s, 1.0, rng)
        if t % 2 == 0:
            draws.append(ad.draws(s, np.arange(a.rank)))
    q = ad.fit(np.array(draws), a.widen)
    betas, lam = pilot_ladder(ReferencePath(reference_adapter(fam, "sweep", 10), q),
                              np.random.default_rng(a.seed + 1), n_particles=20)
    print(f"pilot: {betas.size} rungs, barrier {lam:.2f}", flush=True)
    count = rt.count_round_trips
    for k in a.sweeps:
        if a.labels:  # keep the labels the run counts its round trips from
            def keep(lab, k=k):
                np.save(f"{a.labels}_{k}.npy", np.asarray(lab))
                return count(lab)
            rt.count_round_trips = keep
        run = reference_pt(lambda: reference_adapter(fam, "sweep", 10), q,
                           np.random.default_rng(a.seed + 10 + k), betas, n_scans=100000,
                           n_sweeps=k, n_burn=100, max_cpu_s=a.cpu)
        rt.count_round_trips = count
        trips = run.round_trips
        print(f"sweeps {k}: {run.cpu_seconds:.0f} CPU s, {run.n_scans} kept scans "
              f"(+{run.n_tune_scans} tuning), {run.betas.size} rungs, barrier {run.barrier:.2f}, "
              f"max rejection {run.rejection.max():.2f}, round trips {int(trips.sum())} "
              f"({trips.tolist()}), log Z {run.log_z:.2f}", flush=True)


if __name__ == "__main__":
    main()
