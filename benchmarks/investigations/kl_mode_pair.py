"""Are the KL-start screen's two top modes (groups 22 and 49) one mode? (30 Nov 2026)

Runs the route's reference-path SMC (4 runs x 48 particles) on both, from their 4 best chain
ends, and prints their ``log Z``, the basin shares of each one's fit chains and whether the
basin rule joins them. Needs the ``--save`` files of
:mod:`benchmarks.investigations.kl_mode_search` at ``/tmp/s35A/screen{2,3}.npz``.

    python -m benchmarks.investigations.kl_mode_pair
"""

import time

import numpy as np

from benchmarks.investigations.kl_mode_score import _group
from benchmarks.investigations.kl_mode_search import _setup
from bnmfzoo.inference.reference_path import reference_log_z

FILES = ["/tmp/s35A/screen2.npz", "/tmp/s35A/screen3.npz"]
PAIR = (22, 49)


def main():
    zs = [np.load(f) for f in FILES]
    z = {k: np.concatenate([zi[k] for zi in zs]) for k in ("mean", "lj", "A", "W")}
    refs, label = _group(z["mean"], 15.0)
    fam, _ = _setup("/tmp/s31B/reuters_200x100.npy", 3)
    starts = []
    for k in PAIR:
        idx = np.flatnonzero(label == k)
        idx = idx[np.argsort(-z["lj"][idx])][:4]
        starts.append([{"A": z["A"][i].copy(), "W": z["W"][i].copy(), "rates": {},
                        "alpha": None} for i in idx])
    t0 = time.process_time()
    out = reference_log_z(fam, refs[list(PAIR)], starts, np.random.default_rng(11), cut=15.0,
                          n_runs=4, n_particles=48, n_moves=2, local="sweep+shear+rescale+hmc",
                          n_leap=20)
    print(f"groups {PAIR}: log Z {out['log_z']} +- {out['log_z_se']}; runs "
          f"{out['run_log_z'].round(2).tolist()}; left {out['left']}; path left "
          f"{out['path_left']}; fit chains in each basin {np.round(out['cross_fit'], 3).tolist()}; "
          f"joined {out['joined']}; duplicates {out['duplicates']}; "
          f"{time.process_time() - t0:.0f} CPU s", flush=True)


if __name__ == "__main__":
    main()
