"""Benchmark: replica exchange of the collapsed Bernoulli NMF samplers against collapsed Gibbs.

Run with ``python -m benchmarks.speed.replica_collapsed [--problems animals4 parliament4]
[--methods gibbs re] [--seed 11]``.

For each problem, each method runs 4 chains through ``pm.sample`` (one process, one core, one
BLAS thread) from the prior's random labels (``init="prior"``, the paper's Algorithm 1: each
chain starts in a different place) and the script prints: CPU seconds, the largest R-hat over
the collapsed log joint and three ``A @ W`` entries (label-invariant), the bulk ESS per CPU
second of each, and the mode weights of :func:`bnmfzoo.diagnostics.modes`.

Methods:

* ``gibbs``: ``CollapsedGibbsBetaDir`` / ``CollapsedGibbsDirDir`` (one sweep a step);
* ``re``: ``ReplicaExchangeCollapsed`` with the problem's ladder (``n_replicas`` sweeps a
  step), the ladder tuned during PyMC's tuning steps;
* ``gibbs-long``: collapsed Gibbs with ``n_replicas`` times the steps of ``re`` (the same
  number of sweeps), to compare at equal work.

Measured (24 Nov 2026, seed 11, CPU seconds; output in
``benchmarks/investigations/logs/collapsed_re_seed11.txt``; ``benchmarks/RESULTS.md`` §3.6):

* animals4 (85 x 50, Beta-Dir, rank 4): gibbs max R-hat 1.0319 (7.2 s); re, 16 rungs to
  0.85, 1.0046 (101 s; swap rates 0.43-0.50); gibbs-long (16 x the steps) 1.0006 (104 s), with
  about twice re's ESS per second: replica exchange does not pay here.
* parliament4 (130 x 130, Dir-Dir, rank 4): gibbs 1.4892 (15.5 s; one chain in another mode);
  re, 24 rungs to 0.85, 1.2078 (646 s; swap rates 0.13-0.20, 603 changes of the cold
  replica's label); gibbs-long (24 x) 1.5008 (380 s). With 8 rungs to 0.1 the swaps next to
  ``beta = 1`` were never accepted (R-hat 1.24 in 213 s).
"""

import argparse
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)

ENTRIES = ((0, 0), (10, 20), (30, 40))


def _problem(name):
    from bnmfzoo.datasets import load_nbmf

    if name == "animals4":  # attributes x animals, the paper's orientation for its figures
        X = np.asarray(load_nbmf("animals").T)
        return dict(X=X, R=4, family="beta_dir", ladder=(16, 0.85), budget=(1000, 2000))
    if name == "parliament4":
        X = np.asarray(load_nbmf("parliament"))
        return dict(X=X, R=4, family="dir_dir", ladder=(24, 0.85), budget=(1000, 2000))
    raise ValueError(f"unknown problem {name!r}")


def _metrics(idata, cpu):
    import arviz as az

    post = idata.posterior
    A, W = post["A"].values, post["W"].values
    if A.shape[-1] != W.shape[-2]:  # Dir-Dir stores W as (K, N) too; keep the factor axis
        W = np.swapaxes(W, -1, -2)
    qs = {"log_joint": idata.sample_stats["log_joint"].values}
    for i, j in ENTRIES:
        qs[f"AW[{i},{j}]"] = np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j])
    rhat = {k: float(az.rhat(v)) for k, v in qs.items()}
    ess = {k: float(az.ess(v)) for k, v in qs.items()}
    out = dict(cpu=cpu, rhat=rhat, ess_per_s={k: e / cpu for k, e in ess.items()})
    try:
        from bnmfzoo.diagnostics import modes

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = modes(idata, warn=False)["modes"]
        out["modes"] = np.round(m["weight"].values, 3).tolist()
    except Exception as err:  # report, do not hide
        out["modes"] = f"modes() failed: {err}"
    return out


def run_method(method, prob, seed):
    import pymc as pm

    from bnmfzoo import models
    from bnmfzoo.inference import (
        CollapsedGibbsBetaDir,
        CollapsedGibbsDirDir,
        ReplicaExchangeCollapsed,
    )

    model = getattr(models, prob["family"])(prob["X"], rank=prob["R"])
    tune, draws = prob["budget"]
    n, beta_min = prob["ladder"]
    Gibbs = CollapsedGibbsDirDir if prob["family"] == "dir_dir" else CollapsedGibbsBetaDir
    with model:
        if method == "re":
            step = ReplicaExchangeCollapsed(n_replicas=n, beta_min=beta_min, init="prior")
        else:
            step = Gibbs(init="prior")
            if method == "gibbs-long":
                tune, draws = tune * n, draws * n
        t = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            idata = pm.sample(draws=draws, tune=tune, chains=4, cores=1, step=step,
                              random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
        cpu = time.process_time() - t
    if method == "gibbs-long":  # thin to the draws of the other methods (equal storage)
        idata = idata.isel(draw=slice(None, None, n))
    out = _metrics(idata, cpu)
    if method == "re":
        from bnmfzoo.inference.tempering._ladder import ladder_stats

        betas, rate = ladder_stats(idata.sample_stats)
        out["swap_rate"] = np.round(rate.mean(axis=0), 2).tolist()
        out["round_trips"] = int((np.diff(idata.sample_stats["cold_label"].values, axis=1)
                                  != 0).sum())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", nargs="+", default=["animals4", "parliament4"])
    ap.add_argument("--methods", nargs="+", default=["gibbs", "re", "gibbs-long"])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--budget", nargs=2, type=int, default=None, metavar=("TUNE", "DRAWS"),
                    help="steps per chain (default: the problem's)")
    ap.add_argument("--ladder", nargs=2, type=float, default=None,
                    metavar=("N_REPLICAS", "BETA_MIN"), help="default: the problem's")
    a = ap.parse_args()
    for name in a.problems:
        prob = _problem(name)
        if a.budget:
            prob["budget"] = tuple(a.budget)
        if a.ladder:
            prob["ladder"] = (int(a.ladder[0]), a.ladder[1])
        print(f"== {name}: {prob['family']}, X {prob['X'].shape}, rank {prob['R']}, ladder "
              f"{prob['ladder']}, 4 chains x {prob['budget']} steps, seed {a.seed}", flush=True)
        for method in a.methods:
            r = run_method(method, prob, a.seed)
            rh = max(r["rhat"].values())
            ess = ", ".join(f"{k} {v:.1f}" for k, v in r["ess_per_s"].items())
            extra = "" if method != "re" else \
                f"; swap rates {r['swap_rate']}, cold-label changes {r['round_trips']}"
            print(f"{method:11s} CPU {r['cpu']:7.1f} s  max R-hat {rh:.4f} "
                  f"({', '.join(f'{k} {v:.3f}' for k, v in r['rhat'].items())})\n"
                  f"            ESS/s: {ess}; modes {r['modes']}{extra}", flush=True)


if __name__ == "__main__":
    main()
