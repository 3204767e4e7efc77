"""Where do the draws that "leave" GDSC's rank-5 mode go: another basin, or a broad mode?

Run with ``nice -n 10 python -m benchmarks.investigations.gdsc_mode_leaving [--chains 6]
[--sweeps 4000] [--burn 1000] [--thin 5] [--seed 0] [--data FILE --rank K]``.

The reference-path check of :func:`bnmfzoo.inference.smc_mode_masses` counts a plain-chain
draw as having left its mode when its max matched angle (Masood, Pan & Doshi-Velez 2016) to the
mode's representative exceeds the cut (30 degrees on GDSC rank 5), and refuses the mode when
more than 5 % of draws do. This script runs ``--chains`` plain chains (``beta = 1``) of the
exponential-Gaussian model from exact prior draws and measures, after ``--burn`` sweeps:

* the modes the draws form (:func:`~bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`
  at the same 30-degree threshold, every ``--thin``-th draw, 100-draw stretches as segments);
* per draw, the matched angle of each of the K factors to the heaviest mode's representative
  (which factor moves), and the max (the distance the check uses);
* the distribution of that max: quantiles and the largest gap between sorted values (a
  barrier between basins shows up as an empty band of angles);
* per chain, how often it crosses the cut (out and back again: one basin) and the mean log
  joint density of its draws inside and outside the cut;
* the crossing graph of the clusters (a chain whose consecutive draws lie in clusters i and j
  joins them: :func:`bnmfzoo.diagnostics._modes.basins.chain_connected_modes`).

Prints a human summary and, last, one JSON line. Results in
``docs/results/masses_smc_bridge.md`` section 3.15.
"""

import argparse
import json
import math
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def _per_factor(U, ref):
    """Matched angles (degrees) of every column of ``U[p]`` to ``ref``'s columns, sorted by
    ``ref``'s column: ``(P, K)``."""
    from bnmfzoo.diagnostics._modes.mode_clustering import angle_costs, matched_angles

    _, perm = matched_angles(U, ref[None])
    cost = angle_costs(U, ref[None])[:, 0]  # (P, K_u, K_ref)
    p = perm[:, 0]  # column of U matched to ref's column i
    K = ref.shape[1]
    return np.degrees(cost[np.arange(U.shape[0])[:, None], p, np.arange(K)[None, :]])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--rank", type=int, default=5)
    ap.add_argument("--chains", type=int, default=6)
    ap.add_argument("--sweeps", type=int, default=4000)
    ap.add_argument("--burn", type=int, default=1000)
    ap.add_argument("--thin", type=int, default=5)
    ap.add_argument("--cut", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    import os

    from bnmfzoo._cli.masses import _read
    from bnmfzoo.diagnostics._modes.basins import chain_connected_modes
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, cluster_members
    from bnmfzoo.inference.reference_path import reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import exponential_gaussian

    path = a.data or os.path.join(os.environ["BNMFZOO_DATA"], "drug_sensitivity/gdsc/ic50.txt")
    X = _read(path)
    fam = family_of_model(exponential_gaussian(X, a.rank))
    adapter = reference_adapter(fam)
    rng = np.random.default_rng(a.seed)
    t0 = time.process_time()
    A, lj, chain = [], [], []
    for c in range(a.chains):
        s = fam.draw_prior(rng)
        for i in range(a.sweeps):
            fam.tempered.sweep(s, 1.0, rng)
            if i >= a.burn and (i - a.burn) % a.thin == 0:
                A.append(np.asarray(fam.factors(s)[0], float).copy())
                lj.append(adapter.loglik(s) + adapter.log_p0(s))
                chain.append(c)
    cpu = time.process_time() - t0
    A, lj, chain = np.stack(A), np.array(lj), np.array(chain)
    n = A.shape[0]
    per = n // a.chains
    seg = chain * 1000 + (np.arange(n) % per) // 20  # 100-sweep stretches at thin 5
    cl = cluster_members(A, segment_of=seg, chain_of=chain, threshold=a.cut)
    lab, K = cl["label"], cl["reference"].shape[0]
    print(f"{path}: {X.shape}, rank {a.rank}; {a.chains} chains x {a.sweeps} sweeps "
          f"({cpu:.1f} CPU s); {n} draws kept; cluster_members cut {cl['cut']:.1f} deg: "
          f"{K} cluster(s), weights {np.round(cl['weight'], 3).tolist()}")
    U = _unit_l2(A)
    ref = cl["reference"][0]
    pf = _per_factor(U, ref)
    mx = pf.max(1)
    out = {"cpu_s": round(cpu, 1), "n_draws": int(n), "clusters": int(K),
           "cluster_weight": np.round(cl["weight"], 4).tolist(), "cut": cl["cut"]}
    q = np.percentile(mx, [5, 25, 50, 75, 95, 99])
    srt = np.sort(mx)
    gaps = np.diff(srt)
    g = int(np.argmax(gaps))
    print(f"max matched angle to mode 0's representative: quantiles 5/25/50/75/95/99 % "
          f"{np.round(q, 1).tolist()}; share beyond {a.cut:g}: {np.mean(mx > a.cut):.3f}; "
          f"largest gap between sorted angles {gaps[g]:.2f} deg at {srt[g]:.1f}")
    hist, edges = np.histogram(mx, bins=np.arange(0, max(60, mx.max() + 5), 5))
    print("histogram (5-degree bins from 0): " + " ".join(str(int(h)) for h in hist))
    out.update(quantiles=np.round(q, 2).tolist(), share_beyond=float(np.mean(mx > a.cut)),
               largest_gap=[round(float(gaps[g]), 2), round(float(srt[g]), 2)],
               histogram=hist.tolist())
    qf = np.percentile(pf, [50, 95], axis=0)
    arg = np.argmax(pf, axis=1)
    print("per factor (mode 0's column order): median angle "
          f"{np.round(qf[0], 1).tolist()}, 95 % {np.round(qf[1], 1).tolist()}; "
          f"the factor holding the max angle: {np.bincount(arg, minlength=a.rank).tolist()}; "
          f"among draws beyond the cut: "
          f"{np.bincount(arg[mx > a.cut], minlength=a.rank).tolist()}")
    out.update(per_factor_median=np.round(qf[0], 2).tolist(),
               per_factor_95=np.round(qf[1], 2).tolist(),
               argmax_factor_beyond=np.bincount(arg[mx > a.cut], minlength=a.rank).tolist())
    # a single draw as the representative (what plain chains from the prior hand the check)
    from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles

    one = U[np.flatnonzero(chain == 0)[-1]]
    d1 = matched_angles(U[chain != 0], one[None])[0][:, 0]
    q1 = np.percentile(d1, [5, 50, 95])
    print(f"max matched angle to ONE draw (chain 0's last) instead of the mean: 5/50/95 % "
          f"{np.round(q1, 1).tolist()}; share beyond {a.cut:g}: {np.mean(d1 > a.cut):.3f}")
    out.update(single_draw_quantiles=np.round(q1, 2).tolist(),
               single_draw_share_beyond=float(np.mean(d1 > a.cut)))
    # lagged distances within a chain: noise (flat in the lag) or drift (growing)
    lags = [lag for lag in (1, 4, 20, 100, 400) if lag < per]
    lagged = {}
    for lag in lags:
        d = []
        for c in range(a.chains):
            idx = np.flatnonzero(chain == c)
            i0 = idx[:-lag:max(1, (per - lag) // 40)]
            d.append(np.array([matched_angles(U[i:i + 1], U[i + lag][None])[0][0, 0]
                               for i in i0]))
        lagged[lag * a.thin] = float(np.median(np.concatenate(d)))
    print("median max matched angle between draws of one chain, by lag in sweeps: "
          + ", ".join(f"{k}: {v:.1f}" for k, v in lagged.items()))
    out["lagged_median"] = {str(k): round(v, 2) for k, v in lagged.items()}
    # are the K! label copies disjoint? the smallest angle between two columns of one draw
    from bnmfzoo.diagnostics._modes.mode_clustering import angle_costs

    cc = np.degrees(angle_costs(U[::10], U[::10])[np.arange(U[::10].shape[0]),
                                                   np.arange(U[::10].shape[0])])
    cc[:, np.arange(a.rank), np.arange(a.rank)] = np.inf
    mins = cc.min(axis=(1, 2))
    print(f"smallest angle between two columns of one draw: min {mins.min():.1f}, median "
          f"{np.median(mins):.1f} deg (label copies overlap only when this nears 0)")
    out["min_column_angle"] = [round(float(mins.min()), 2), round(float(np.median(mins)), 2)]
    # label switches: the matching of a draw to the representative changes within a chain
    _, perm = matched_angles(U, ref[None])
    sw = [int(np.sum(np.any(perm[chain == c, 0][1:] != perm[chain == c, 0][:-1], axis=1)))
          for c in range(a.chains)]
    print(f"changes of the matching to the representative within each chain: {sw}")
    out["matching_changes"] = sw
    rows = []
    for c in range(a.chains):
        m = chain == c
        far = mx[m] > a.cut
        crossings = int(np.sum(far[1:] != far[:-1]))
        lin = float(lj[m][~far].mean()) if (~far).any() else math.nan
        lout = float(lj[m][far].mean()) if far.any() else math.nan
        clus = np.bincount(lab[m], minlength=K).tolist()
        rows.append({"chain": c, "share_beyond": round(float(far.mean()), 3),
                     "crossings": crossings, "log_joint_in": round(lin, 1),
                     "log_joint_out": round(lout, 1), "clusters": clus})
        print(f"chain {c}: beyond cut {far.mean():.3f}, crossings of the cut {crossings}, "
              f"mean log joint inside {lin:.1f} / outside {lout:.1f}; draws per cluster {clus}")
    out["chains"] = rows
    merged = chain_connected_modes(lab, chain, K)
    print(f"clusters joined by chain moves (consecutive draws of one chain): groups "
          f"{merged['groups']}; moves between clusters {merged['moves'].tolist()}")
    out["groups"] = merged["groups"]
    out["moves"] = merged["moves"].tolist()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
