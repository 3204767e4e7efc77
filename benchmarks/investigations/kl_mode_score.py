"""Which of the modes the KL-start screen reached is the heaviest? (reference-path SMC per mode)

Reads the ``--save`` file of :mod:`benchmarks.investigations.kl_mode_search` (every chain's
aligned mean, log joint and end state), groups the chains' means into modes (greedy, max
matched angle within the route's cut), and estimates the ``log Z`` of the ``--top`` modes with
the best chain-end log joint by the route's reference-path SMC
(:func:`bnmfzoo.inference.reference_path.reference_log_z`, the route's moves, small runs).
Then, per variant of the screen, how many seeds reached the heaviest mode (and each of the
next ones).

    python -m benchmarks.investigations.kl_mode_score --data /tmp/s31B/reuters_200x100.npy \
        --rank 3 --saved /tmp/s35A/screen2.npz
"""

import argparse
import time

import numpy as np


def _group(means, cut):
    from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles

    refs, label = [], np.full(len(means), -1)
    for i, u in enumerate(means):
        if refs:
            d, _ = matched_angles(u[None], np.stack(refs))
            if d[0].min() <= cut:
                label[i] = int(d[0].argmin())
                continue
        refs.append(u)
        label[i] = len(refs) - 1
    return np.stack(refs), label


def main(argv=None):
    from benchmarks.investigations.kl_mode_search import _setup
    from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles
    from bnmfzoo.inference.reference_path import reference_log_z

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--saved", required=True, help="comma-separated npz files (same reference)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--particles", type=int, default=24)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--cut", type=float, default=15.0)
    a = ap.parse_args(argv)
    zs = [np.load(f) for f in a.saved.split(",")]
    z = {k: np.concatenate([zi[k] for zi in zs]) for k in ("mean", "lj", "A", "W", "tag")}
    z["ref"] = zs[0]["ref"]
    means, lj, tags = z["mean"], z["lj"], z["tag"]
    fam, _ = _setup(a.data, a.rank)
    refs, label = _group(means, a.cut)
    best = np.array([lj[label == k].max() for k in range(len(refs))])
    order = np.argsort(-best)[:a.top]
    alpha = fam.tempered.problem.alpha
    starts = []
    for k in order:
        i = np.flatnonzero(label == k)[np.argmax(lj[label == k])]
        starts.append([{"A": z["A"][i].copy(), "W": z["W"][i].copy(), "rates": {},
                        "alpha": alpha}])
    t0 = time.process_time()
    out = reference_log_z(fam, refs[order], starts, np.random.default_rng(7), cut=a.cut,
                          n_runs=a.runs, n_particles=a.particles, n_moves=2,
                          local="sweep+shear+rescale+hmc", n_leap=20)
    print(f"{len(refs)} modes among {len(means)} chains; reference-path SMC on the top "
          f"{len(order)} by chain-end log joint ({time.process_time() - t0:.0f} CPU s)")
    variants = list(dict.fromkeys(t.split("/")[0] for t in tags))
    n_seeds = len({t.split("/")[1] for t in tags})
    rank = np.argsort(-out["log_z"])
    print("| mode (by log Z) | log Z (reference-path SMC) | best chain-end log joint | chains | "
          + " | ".join(f"seeds reaching it: {v}" for v in variants) + " |")
    print("|---" * (4 + len(variants)) + "|")
    for r in rank:
        k = order[r]
        hit = [len({t for t in tags[label == k] if t.startswith(v + "/")}) for v in variants]
        print(f"| {k} | {out['log_z'][r]:.2f} +- {out['log_z_se'][r]:.2f} | {best[k]:.1f} | "
              f"{int(np.sum(label == k))} | " + " | ".join(f"{h} of {n_seeds}" for h in hit)
              + " |")
    top = order[rank[0]]
    d, _ = matched_angles(means, refs[top][None])
    d0, _ = matched_angles(z["ref"], refs[top][None])
    print(f"heaviest mode found: {top}; the screen's own reference lies {d0[0, 0]:.1f} degrees "
          f"from it; chains within the cut of it: {int(np.sum(d[:, 0] <= a.cut))}")
    np.save(a.saved.split(",")[0].replace(".npz", "_heaviest.npy"), refs[top])


if __name__ == "__main__":
    main()
