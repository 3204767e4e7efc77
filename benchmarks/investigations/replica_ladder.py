"""Benchmark: does the default (data-sized, tuned) ladder of replica exchange swap on real data?

Run with ``python -m benchmarks.investigations.replica_ladder [--problems ccle3 gdsc5]
[--chains 2]``.

For each problem: ``ReplicaExchangeGibbs()`` with its defaults (ladder size chosen from the data
and grown while tuning, ``beta_min = 0.05``), then plain ``GibbsNMF`` with the same number of
steps and PyMC's NUTS with a short budget (stated), each chain from PyMC's start, one BLAS thread.
Printed per method: CPU seconds, steps, the final ladder size, the smallest and median mean swap
probability over the neighbour pairs (after tuning), the round trips per chain (``round_trips``
at the last draw), and the largest R-hat over ``tau`` and three ``A @ W`` entries. CPU time is
``time.process_time`` of the whole ``pm.sample`` call (sequential chains, one process).
"""

import argparse
import time
import warnings

import numpy as np

PROBLEMS = {
    # name: (loader, rank, RE/Gibbs (tune, draws), NUTS (tune, draws))
    "ccle3": ("ccle", 3, (1000, 1000), (200, 200)),
    "gdsc5": ("gdsc", 5, (500, 300), (100, 100)),
    # the collapsed Bernoulli step (``ReplicaExchangeCollapsed()``, Beta-Dir), no NUTS row
    "animals4": ("animals", 4, (500, 500), None),
}
ENTRIES = ((0, 0), (100, 10), (400, 20))


def _data(name):
    from bnmfzoo import datasets

    kind = PROBLEMS[name][0]
    if kind == "animals":
        return datasets.load_nbmf("animals")
    return datasets.load_ccle("ic50") if kind == "ccle" else datasets.load_gdsc()


def _rhat(idata):
    import arviz as az

    if "tau" not in idata.posterior:  # collapsed Bernoulli: the log joint
        return float(az.rhat(idata.sample_stats["log_joint"].values))
    A, W = idata.posterior["A"].values, idata.posterior["W"].values
    vals = [az.rhat(idata.posterior["tau"].values.T.T)]
    for i, j in ENTRIES:
        aw = np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j])
        vals.append(az.rhat(aw))
    return float(np.max([float(v) for v in vals]))


def run(name, method, chains, seed, budget=None):
    import pymc as pm
    from threadpoolctl import threadpool_limits

    from bnmfzoo.inference import (
        CollapsedGibbsBetaDir,
        GibbsNMF,
        ReplicaExchangeCollapsed,
        ReplicaExchangeGibbs,
        pymc_default_steps,
    )
    from bnmfzoo.inference.tempering import ladder_stats
    from bnmfzoo.models import beta_dir, exponential_gaussian

    X = _data(name)
    _, R, default, nuts_budget = PROBLEMS[name]
    tune, draws = nuts_budget if method == "nuts" else (budget or default)
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        binary = PROBLEMS[name][0] == "animals"
        with (beta_dir(X, rank=R) if binary else exponential_gaussian(X, R)) as model:
            kw = dict(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                      progressbar=False, compute_convergence_checks=False)
            t0 = time.process_time()
            if method == "re":
                step = ReplicaExchangeCollapsed() if binary else ReplicaExchangeGibbs()
                idata = pm.sample(step=step, **kw)
            elif method == "gibbs":
                idata = pm.sample(step=CollapsedGibbsBetaDir() if binary else GibbsNMF(), **kw)
            else:
                with pymc_default_steps():
                    idata = pm.sample(nuts_sampler="pymc", model=model, **kw)
            cpu = time.process_time() - t0
    row = dict(problem=name, method=method, cpu=cpu, steps=f"{tune}+{draws}", chains=chains,
               rhat=_rhat(idata))
    if method == "re":
        betas, rate = ladder_stats(idata.sample_stats)
        sizes = np.isfinite(betas).sum(axis=1)
        row.update(rungs=sizes.tolist(), beta_min=float(np.nanmin(betas)),
                   min_swap=float(np.nanmin(rate)), median_swap=float(np.nanmedian(rate)),
                   round_trips=idata.sample_stats["round_trips"].values[:, -1].tolist(),
                   warnings=sorted({str(w.message)[:90] for w in caught
                                    if issubclass(w.category, UserWarning)}))
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--methods", nargs="+", default=["re", "gibbs", "nuts"])
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--budget", nargs=2, type=int, metavar=("TUNE", "DRAWS"),
                        help="tune and draws of re and gibbs (default: the problem's)")
    args = parser.parse_args()
    for name in args.problems:
        for method in args.methods:
            chains = 1 if method == "nuts" else args.chains
            print(run(name, method, chains, args.seed, args.budget), flush=True)


if __name__ == "__main__":
    main()
