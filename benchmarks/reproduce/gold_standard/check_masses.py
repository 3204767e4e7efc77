"""A second estimate of the reference mode masses, by the library's replica-exchange step.

The reference's masses (:func:`.reference.tempered_masses`) come from a hand-written parallel
tempering loop started at the discovered modes. This script estimates them again with
:class:`bnmfzoo.inference.ReplicaExchangeGibbs` run through ``pm.sample``: its own geometric
ladder (adapted during tuning towards equal swap rates), PyMC's chain seeding, chains started at
the model's initial point rather than at the known modes, and only the beta = 1 replica kept.
Each kept draw is labelled by its nearest reference mode (max matched basis angle, as in the
reference). The masses are the mean over chains, their standard error the spread between
chains over sqrt(chains); a chi-square statistic compares them with the reference's masses
(both errors combined). The Gibbs kernel is shared with the reference (it is SBC-tested on its
own); the tempering, swaps, ladder, starts and seeds are not.

Usage::

    python -m benchmarks.reproduce.gold_standard.check_masses [--problems ccle laurberg]
        [--chains 4] [--draws 20000] [--tune 2000] [--replicas 16] [--seed 0]
"""

import argparse
import time

import numpy as np


def replica_masses(prob, refs, *, chains, draws, tune, replicas, beta_min, seed, thin=5):
    import pymc as pm

    import bnmfzoo  # noqa: F401 - registers the Gibbs steps
    from benchmarks.reproduce.gold_standard.reference import label_by_mode
    from bnmfzoo.inference import ReplicaExchangeGibbs

    model = prob.model()
    with model:
        step = ReplicaExchangeGibbs(n_replicas=replicas, beta_min=beta_min)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step,
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)
    A = idata["posterior"]["A"].values[:, ::thin]  # (chain, draw, D, R)
    K = refs.shape[0]
    per_chain, switches = [], []
    for c in range(A.shape[0]):
        lab = label_by_mode(A[c], refs)[0]
        per_chain.append(np.bincount(lab, minlength=K) / lab.size)
        switches.append(int(np.sum(lab[1:] != lab[:-1])))
    per_chain = np.array(per_chain)
    stats = idata["sample_stats"]
    probs = [stats[v].values for v in stats.data_vars if str(v).startswith("swap_prob_")]
    rate = float(np.mean([np.nanmean(p) for p in probs])) if probs else float("nan")
    return {"mass": per_chain.mean(0), "se": per_chain.std(0, ddof=1) / np.sqrt(chains),
            "per_chain": per_chain, "switches": switches, "swap_rate": rate}


def main(argv=None):
    from benchmarks.reproduce.gold_standard.problems import make_problem
    from benchmarks.reproduce.gold_standard.reference import load_reference

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=["ccle", "laurberg"])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--tune", type=int, default=2000)
    ap.add_argument("--replicas", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in args.problems:
        prob = make_problem(name)
        ref = load_reference(prob)
        meta = ref["meta"]
        beta_min = min(0.5, (prob.sigma / np.nanstd(prob.X_train)) ** 2)
        c0 = time.process_time()
        out = replica_masses(prob, ref["refs"], chains=args.chains, draws=args.draws,
                             tune=args.tune, replicas=args.replicas, beta_min=beta_min,
                             seed=args.seed)
        cpu = time.process_time() - c0
        m_ref, se_ref = np.array(meta["mass"]), np.array(meta["mass_se"])
        keep = (m_ref > 0) | (out["mass"] > 0)
        var = se_ref**2 + out["se"] ** 2
        ok = keep & (var > 0)
        chi2 = float(np.sum((out["mass"][ok] - m_ref[ok]) ** 2 / var[ok]))
        print(f"\n== {name}: ReplicaExchangeGibbs, {args.chains} chains x ({args.tune} + "
              f"{args.draws}), {args.replicas} replicas, beta_min {beta_min:.3g}, seed "
              f"{args.seed}; {cpu:.0f} CPU s; swap rate {out['swap_rate']:.2f}; mode switches "
              f"per chain {out['switches']}")
        print(f"{'mode':>4} {'reference PT':>16} {'replica exchange':>18}  per chain")
        for k in range(len(m_ref)):
            print(f"{k:>4} {m_ref[k]:>8.3f} ± {se_ref[k]:.3f} {out['mass'][k]:>10.3f} ± "
                  f"{out['se'][k]:.3f}  " + " ".join(f"{x:.3f}" for x in out["per_chain"][:, k]))
        print(f"chi-square {chi2:.2f} on {int(ok.sum()) - 1} dof (masses sum to 1)")


if __name__ == "__main__":
    main()
