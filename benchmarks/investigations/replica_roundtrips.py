"""Benchmark: why does the default replica-exchange ladder make no round trips on real data?

Run with ``python -m benchmarks.investigations.replica_roundtrips --problem ccle3 [--designs ...]``.

Drives the numeric core of replica exchange (:func:`bnmfzoo.inference.tempering.exchange_step`
over ``ReplicaExchangeGibbs``'s tempered family, the same ladder tuning and annealed start as the
PyMC step) without PyMC, so that the index process can be recorded. A design is
``SIZE:BETA_MIN:SWEEPS`` -- ``SIZE`` ``auto`` (the default's data-sized, growing ladder) or a
number of rungs (fixed size, spacing tuned), ``BETA_MIN`` the hottest rung, ``SWEEPS`` Gibbs sweeps
of every rung between two swap passes (the default is 1). Printed per design: CPU seconds
(``time.process_time``, one BLAS thread), rungs, swap probability per pair (min / median over the
draws), round trips (cold -> hottest -> cold of any replica, counted as the PyMC step counts
them), the number of distinct replicas the cold rung received, how far replicas travelled along
the ladder (the median over replicas of max - min rung visited during the draws), and the
integrated autocorrelation time (IAT, in steps) of the log-likelihood at rungs 0, the middle and
the hottest under the sweeps alone (``--iat-sweeps`` sweeps at a fixed ``beta``, no swaps).
``--iat-profile BETA ...`` prints only that IAT at the given ``beta`` (each from a state annealed
from 0.05 down to it).
"""

import argparse
import time

import numpy as np

PROBLEMS = {"ccle3": ("ccle", 3), "gdsc5": ("gdsc", 5)}


def _family(name, seed):
    import pymc as pm

    from bnmfzoo import datasets
    from bnmfzoo.inference import ReplicaExchangeGibbs
    from bnmfzoo.models import exponential_gaussian

    kind, rank = PROBLEMS[name]
    X = datasets.load_ccle("ic50") if kind == "ccle" else datasets.load_gdsc()
    with exponential_gaussian(X, rank) as model:
        step = ReplicaExchangeGibbs()
        point = model.initial_point(random_seed=seed)
        state = step._first_state(point)
    del pm
    return step.tempered, state


def _iat(x):
    """Integrated autocorrelation time of a series (Geyer's initial positive sequence)."""
    import arviz as az

    x = np.asarray(x, dtype=float)
    ess = float(az.ess(x[None, :], method="bulk"))
    return x.size / max(ess, 1e-12)


class _KSweeps:
    def __init__(self, fam, k):
        self.fam, self.k = fam, k
        self.dimension = fam.dimension

    def sweep(self, state, beta, rng):
        for _ in range(self.k):
            self.fam.sweep(state, beta, rng)

    def loglik(self, state):
        return self.fam.loglik(state)

    def copy(self, state):
        return self.fam.copy(state)


def run(name, design, tune, draws, seed, iat_sweeps, anneal=2000):
    from threadpoolctl import threadpool_limits

    from bnmfzoo.inference.tempering import ReplicaSet, exchange_step
    from bnmfzoo.inference.tempering._ladder import (
        LadderTuner,
        annealed_start,
        geometric_ladder,
        initial_size,
        nearest_rungs,
    )

    size, beta_min, k = design.split(":")
    beta_min, k = float(beta_min), int(k)
    fam, state0 = _family(name, seed)
    kfam = _KSweeps(fam, k)
    rng = np.random.default_rng(seed)
    grow = size == "auto"
    n0 = initial_size(fam.dimension, beta_min) if grow else int(size)
    betas = geometric_ladder(n0, beta_min)
    tuner = LadderTuner(grow=grow, max_replicas=max(16, 2 * n0) if grow else n0)
    with threadpool_limits(1):
        t0 = time.process_time()
        rs = ReplicaSet.new(annealed_start(state0, betas, anneal,
                                           lambda s, b: fam.sweep(s, b, rng), fam.copy))
        for _ in range(tune):
            prob, _, _, _ = exchange_step(kfam, rs, betas, rng)
            new = tuner.update(prob, betas, tune=True, adapt=True, where="bench")
            if new.size != betas.size:
                rs.resize(nearest_rungs(betas, new), fam.copy)
            betas = new
        rs.reset_trips()
        n = betas.size
        index = {lab: j for j, lab in enumerate(sorted(rs.labels))}  # labels -> 0..n-1
        pos = np.empty((draws, n), dtype=np.int32)  # pos[t, j] = rung of the j-th label
        probs = np.full((draws, n - 1), np.nan)
        cold_lab = np.empty(draws, dtype=np.int32)
        trips = np.empty(draws, dtype=np.int64)
        cold_ll = np.empty(draws)
        for t in range(draws):
            prob, _, lls, _ = exchange_step(kfam, rs, betas, rng)
            probs[t] = prob
            for rung, lab in enumerate(rs.labels):
                pos[t, index[lab]] = rung
            cold_lab[t] = rs.labels[0]
            trips[t] = rs.round_trips
            cold_ll[t] = lls[0]
        cpu = time.process_time() - t0
        # IAT of the log-likelihood under the sweeps alone, at fixed beta
        iats = {}
        for i in sorted({0, n // 2, n - 1}):
            s = fam.copy(rs.states[i])
            ll = np.empty(iat_sweeps)
            for j in range(iat_sweeps):
                kfam.sweep(s, betas[i], rng)
                ll[j] = fam.loglik(s)
            iats[f"{betas[i]:.3g}"] = round(_iat(ll), 1)
    rate = np.nanmean(probs, axis=0)
    travel = pos.max(axis=0) - pos.min(axis=0)
    return dict(problem=name, design=design, steps=f"{tune}+{draws}", cpu=round(cpu, 1),
                rungs=n, beta_min=round(float(betas[-1]), 4),
                min_swap=round(float(rate.min()), 3), median_swap=round(float(np.median(rate)), 3),
                round_trips=int(trips[-1]), cold_labels=int(np.unique(cold_lab).size),
                travel_median=int(np.median(travel)), travel_max=int(travel.max()),
                cold_ll_iat=round(_iat(cold_ll), 1), iat_fixed_beta=iats)


def iat_profile(name, betas, sweeps, seed, anneal=1000, burn=200):
    """IAT (in sweeps) of the log-likelihood under the tempered Gibbs sweep at fixed ``beta``.

    Each ``beta`` starts from a state annealed from 0.05 down to it (``anneal`` sweeps), then
    ``burn`` sweeps, then ``sweeps`` recorded ones.
    """
    from threadpoolctl import threadpool_limits

    fam, state0 = _family(name, seed)
    rng = np.random.default_rng(seed)
    out = {}
    with threadpool_limits(1):
        for b in betas:
            s = fam.copy(state0)
            for g in np.geomspace(0.05, b, anneal):
                fam.sweep(s, g, rng)
            for _ in range(burn):
                fam.sweep(s, b, rng)
            ll = np.empty(sweeps)
            for j in range(sweeps):
                fam.sweep(s, b, rng)
                ll[j] = fam.loglik(s)
            out[b] = round(_iat(ll), 1)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", default="ccle3", choices=list(PROBLEMS))
    parser.add_argument("--designs", nargs="+", default=["auto:0.05:1"],
                        help="SIZE:BETA_MIN:SWEEPS, SIZE 'auto' or a number of rungs")
    parser.add_argument("--budget", nargs=2, type=int, default=(1000, 2000),
                        metavar=("TUNE", "DRAWS"))
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--iat-sweeps", type=int, default=2000)
    parser.add_argument("--iat-profile", nargs="+", type=float, metavar="BETA",
                        help="only print the log-likelihood IAT at these fixed betas")
    args = parser.parse_args()
    if args.iat_profile:
        print({"problem": args.problem, "iat_sweeps": args.iat_sweeps,
               "iat": iat_profile(args.problem, args.iat_profile, args.iat_sweeps, args.seed)})
        return
    for design in args.designs:
        print(run(args.problem, design, *args.budget, args.seed, args.iat_sweeps), flush=True)


if __name__ == "__main__":
    main()
