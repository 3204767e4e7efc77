"""Does the basin rule keep laurberg's two modes apart? The reference-path check on laurberg.

Run with ``nice -n 10 python -m benchmarks.investigations.laurberg_reference_basins
[--problems laurberg0 laurberg4] [--seeds 3] [--particles 500]``.

``benchmarks/speed/masses_calibration.py`` runs the SMC from the prior without a check
(``check_runs=0``), so it does not exercise the separation rule of the reference path. This
script runs :func:`bnmfzoo.inference.smc_mode_masses` with ``check="reference"`` on the
calibration's laurberg problems (same model, same seeds) and prints, per seed, the SMC and
reference-path masses of the compared factorization (truth 0.0042 on noise seed 0, 0.249 on
noise seed 4), the share of each mode's fit-chain draws and path particles that left it under
the basin rule (:func:`bnmfzoo.diagnostics._modes.basins.mode_basins`), the modes the rule
joined, and whether the result is established. Results in
``docs/results/masses_smc_bridge.md`` section 3.15.
"""

import argparse
import json
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def main(argv=None):
    from benchmarks.speed.masses_calibration import _mass_of, _model, _problem
    from bnmfzoo.diagnostics import angle_distance
    from bnmfzoo.inference.smc_masses import smc_mode_masses

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--problems", nargs="+", default=["laurberg0", "laurberg4"])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--seed-start", type=int, default=0)
    p.add_argument("--particles", type=int, default=500)
    a = p.parse_args(argv)
    rows = []
    for name in a.problems:
        X, sols = _problem(name, 0)
        j = 0  # the compared factorization, as masses_calibration --compare 0
        for seed in range(a.seed_start, a.seed_start + a.seeds):
            t0 = time.process_time()
            out = smc_mode_masses(_model(X), n_particles=a.particles, check="reference",
                                  random_seed=seed)
            m, lo, hi = _mass_of(out, sols, j)
            ref = out["reference"] or {}
            chk = None
            for md in out["modes"]:
                if md["n_members"] and md["mass"] == m:
                    chk = (md["mass_check"], md["check_se"])
            near = [int(np.argmin([angle_distance(np.average(md["A"], axis=0,
                                                             weights=md["member_weight"]
                                                             + 1e-300), s) for s in sols]))
                    if md["n_members"] else -1 for md in out["modes"]]
            row = {"problem": name, "seed": seed, "smc_mass": round(m, 4),
                   "interval": [round(lo, 4), round(hi, 4)],
                   "reference_mass": None if chk is None else [round(chk[0], 4),
                                                               round(chk[1], 4)],
                   "modes_nearest_solution": near,
                   "left": np.round(ref.get("left", []), 3).tolist(),
                   "path_left": np.round(ref.get("path_left", []), 3).tolist(),
                   "joined": ref.get("joined"), "established": out["established"],
                   "cpu_s": round(time.process_time() - t0, 1)}
            rows.append(row)
            print(row, flush=True)
            if not out["established"]:
                print("  " + out["statement"][:400], flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
