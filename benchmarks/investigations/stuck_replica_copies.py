"""Why does a tempering run of the Poisson route make no round trip on a small broad matrix?

Run with::

    nice -n 10 python -m benchmarks.investigations.stuck_replica_copies --seeds 0 12 \
        [--data benchmarks/investigations/logs/real_data_masses_s65_small_counts.csv --rank 2]

Runs ``smc_mode_masses`` with the command's Poisson route (``check="reference_pt"``, local
move ``sweep+shear+rescale+hmc``, 2 SMC runs of 200 particles, a 120 CPU s budget) for each
seed in ``[start, stop)`` and prints the tempering runs' round trips and the verdict. For each
run short of 10 round trips: its ladder, per-pair rejection, per-rung mean ``l'``; and, the
first time a scan's ``b = 1`` replica has ``l'`` 60 nats above the next rung's, the parts of
``l' = log p0 + log L - log q`` for both replicas and whether the top one sits on another label
copy of the next one (cosines of the rows of ``W`` matched in the same and the swapped order).
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread)

DATA = "benchmarks/investigations/logs/real_data_masses_s65_small_counts.csv"


def _cos(u, v):
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def _describe(adapter, q, top, nxt):
    parts = [{"log_p0": adapter.log_p0(s), "log_L": adapter.loglik(s),
              "log_q": adapter.log_q(q, s)} for s in (top, nxt)]
    Wt, Wn = np.asarray(top["W"]), np.asarray(nxt["W"])
    K = Wt.shape[0]
    same = [round(_cos(Wt[i], Wn[i]), 3) for i in range(K)]
    swap = [round(_cos(Wt[i], Wn[K - 1 - i]), 3) for i in range(K)]
    return (f"    top replica {({k: round(v, 1) for k, v in parts[0].items()})}, next rung's "
            f"{({k: round(v, 1) for k, v in parts[1].items()})}; W rows' cosines, same order "
            f"{same}, reversed {swap}")


def main(argv=None):
    import bnmfzoo.inference.reference_tempering as rt
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs=2, default=[0, 12], metavar=("START", "STOP"))
    p.add_argument("--data", default=DATA)
    p.add_argument("--rank", type=int, default=2)
    a = p.parse_args(argv)
    np.set_printoptions(precision=3, linewidth=200, suppress=True)
    X = np.loadtxt(a.data, delimiter=",")
    real_together, real_scan = rt.run_together, rt._scan
    got, seen = [], []

    def together(runs, **k):
        out = real_together(runs, **k)
        got.append(out)
        return out

    def scan(rungs, states, betas, rng, n_sweeps):
        ll = real_scan(rungs, states, betas, rng, n_sweeps)
        if len(ll) > 1 and ll[0] > ll[1] + 60 and id(rungs) not in seen:
            seen.append(id(rungs))
            path = rungs.path(1.0)
            print(_describe(path.adapter, path.q, states[0], states[1]), flush=True)
        return ll

    rt.run_together, rt._scan = together, scan
    for seed in range(*a.seeds):
        got.clear()
        t = time.process_time()
        print(f"seed {seed}:", flush=True)
        out = smc_mode_masses(poisson(X, a.rank), n_runs=2, n_particles=200, n_moves=2,
                              check="reference_pt", pt_local="sweep+shear+rescale+hmc",
                              pt_leap=20, pt_scans=2500, pt_trips=15, bridge_draws=1000,
                              prior_chains=8, prior_sweeps=300, budget_s=120, random_seed=seed)
        trips = [int(r.round_trips.sum()) for o in got for r in o]
        print(f"  established {out['established']}, round trips {trips}, "
              f"{time.process_time() - t:.0f} CPU s", flush=True)
        if not out["established"]:
            print("  ", out["statement"][:300])
        for o in got:
            for r, run in enumerate(o):
                if run.round_trips.sum() < 10:
                    print(f"  run {r} short: {run.n_scans} scans, ladder {run.betas}")
                    print("    rejection", run.rejection)
                    print("    mean l' per rung", run.logliks.mean(0))


if __name__ == "__main__":
    main()
