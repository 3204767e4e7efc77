"""Mode masses on real data: the default path, AIS beside it, plain Gibbs and NUTS (issue 32).

Run with ``nice -n 15 python -m benchmarks.speed.replica_masses_real [--problems ccle3 gdsc5]
[--methods re gibbs nuts] [--chains 4] [--re-budget TUNE DRAWS] [--seed 11]``.

Problems: CCLE IC50 (``datasets.load_ccle("ic50")``, rank 3) and GDSC (``datasets.load_gdsc()``,
rank 5), model ``exponential_gaussian(X, R)`` with its defaults (CCLE EC50 is not in the shared
data folder). Methods, each timed in CPU seconds (``time.process_time``, one BLAS thread,
sequential chains in one process):

* ``re``: the documented default path, ``pm.sample(step=ReplicaExchangeGibbs(), ...)`` then
  ``bz.diagnostics.modes(idata)`` (defaults): the modes, each ``weight`` +- ``weight_mcse``,
  ``n_visits``, the ``estimator`` label, round trips per chain, the ladder (rungs, swap
  probability per pair min / median), and every warning the sampler and ``modes`` gave; then
  ``bz.inference.mode_evidence`` (AIS per mode, defaults) on the same modes, with its errors;
* ``gibbs``: 4 plain ``GibbsNMF`` chains from PyMC's start, ``modes`` (its label, share of
  chains and warning), and ``mode_evidence`` on those modes (plain chains from different starts
  may find modes the tempered chains do not);
* ``nuts``: PyMC's NUTS, one chain, short budget, for the CPU reference only.

Prints one markdown table row per method and the warnings below it. Measured 26 Nov 2026
(``benchmarks/RESULTS.md`` §3.9): 0 round trips on both datasets, so the default path's one
mode of weight 1.0 is not a mass; on CCLE plain Gibbs finds a second mode that AIS gives
0.0074 +- 0.0061.
"""

import argparse
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)

PROBLEMS = {
    # name: (loader, rank, label)
    "ccle3": ("ccle", 3, "CCLE IC50, rank 3"),
    "gdsc5": ("gdsc", 5, "GDSC, rank 5"),
}
BUDGETS = {  # default (tune, draws) per problem: replica exchange / Gibbs, NUTS
    "ccle3": ((1000, 1000), (200, 200)),
    "gdsc5": ((500, 500), (100, 100)),
}


def _model(name):
    from bnmfzoo import datasets
    from bnmfzoo.models import exponential_gaussian

    kind, rank, _ = PROBLEMS[name]
    X = datasets.load_ccle("ic50") if kind == "ccle" else datasets.load_gdsc()
    return exponential_gaussian(X, rank)


def _fmt_warnings(caught):
    out = []
    for w in caught:
        if issubclass(w.category, UserWarning):
            msg = " ".join(str(w.message).split())
            if msg not in out:
                out.append(msg)
    return out


def _modes_cells(idata):
    from bnmfzoo.diagnostics import modes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = modes(idata)
    m = tree["modes"]
    w, se = m["weight"].values, m["weight_mcse"].values
    share, visits = m["share"].values, m["n_visits"].values
    cells = "; ".join(f"{a:.4f} ± {b:.4f} (share {s:.3f}, {int(v)} visits)"
                      for a, b, s, v in zip(w, se, share, visits, strict=True))
    return tree, dict(n_modes=int(w.size), weights=cells, estimator=m.attrs["estimator"],
                      modes_warnings=_fmt_warnings(caught))


def _ais_cells(idata, model, tree, seed):
    from bnmfzoo.inference import mode_evidence

    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = mode_evidence(idata, model, modes_tree=tree, random_seed=seed, progressbar=False)
    cpu = time.process_time() - c0
    cells = "; ".join(f"{a:.4f} ± {b:.4f} (stay {s:.2f})" for a, b, s in
                      zip(ev["weight"].values, ev["weight_se"].values, ev["stay"].values,
                          strict=True))
    return dict(ais=cells, ais_cpu=round(cpu, 1), ais_warnings=_fmt_warnings(caught))


def run(name, method, chains, seed, budget):
    import pymc as pm
    from threadpoolctl import threadpool_limits

    from bnmfzoo.inference import GibbsNMF, ReplicaExchangeGibbs, pymc_default_steps
    from bnmfzoo.inference.tempering import ladder_stats

    model = _model(name)
    tune, draws = budget
    row = dict(problem=PROBLEMS[name][2], method=method, chains=chains,
               steps=f"{tune}+{draws}")
    with threadpool_limits(1), model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kw = dict(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                  progressbar=False, compute_convergence_checks=False)
        t0 = time.process_time()
        if method == "re":
            idata = pm.sample(step=ReplicaExchangeGibbs(), **kw)
        elif method == "gibbs":
            idata = pm.sample(step=GibbsNMF(), **kw)
        else:
            with pymc_default_steps():
                idata = pm.sample(nuts_sampler="pymc", **kw)
        row["cpu"] = round(time.process_time() - t0, 1)
    row["sampler_warnings"] = _fmt_warnings(caught)
    if method == "nuts":
        return row
    if method == "re":
        betas, rate = ladder_stats(idata.sample_stats)
        row.update(rungs=np.isfinite(betas).sum(axis=1).tolist(),
                   min_swap=round(float(np.nanmin(rate)), 3),
                   median_swap=round(float(np.nanmedian(rate)), 3),
                   round_trips=idata.sample_stats["round_trips"].values[:, -1].tolist())
    with threadpool_limits(1):
        tree, cells = _modes_cells(idata)
        row.update(cells)
        row.update(_ais_cells(idata, model, tree, seed))
    return row


def table_row(r):
    """One markdown row of the RESULTS table."""
    if r["method"] == "nuts":
        return (f"| {r['problem']} | NUTS ({r['chains']} x {r['steps']}) | CPU {r['cpu']} s | "
                "| | | |")
    ladder = (f"{r['rungs']} rungs, swap {r['min_swap']} / {r['median_swap']}, round trips "
              f"{r['round_trips']}") if r["method"] == "re" else "–"
    name = "`ReplicaExchangeGibbs()`" if r["method"] == "re" else "`GibbsNMF`"
    return (f"| {r['problem']} | {name} ({r['chains']} x {r['steps']}) | CPU {r['cpu']} s | "
            f"{r['n_modes']} modes: {r['weights']} | `{r['estimator']}` | {ladder} | "
            f"{r['ais']} (CPU {r['ais_cpu']} s) |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    ap.add_argument("--methods", nargs="+", default=["re", "gibbs", "nuts"],
                    choices=["re", "gibbs", "nuts"])
    ap.add_argument("--chains", type=int, default=4, help="chains of re and gibbs")
    ap.add_argument("--re-budget", nargs=2, type=int, metavar=("TUNE", "DRAWS"),
                    help="tune and draws of re and gibbs (default: the problem's)")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    print("| problem | method | CPU | modes: weight ± weight_mcse | estimator | ladder | "
          "AIS `mode_evidence` ± se |")
    print("|---|---|---|---|---|---|---|")
    for name in args.problems:
        for method in args.methods:
            if method == "nuts":
                chains, budget = 1, BUDGETS[name][1]
            else:
                chains, budget = args.chains, tuple(args.re_budget or BUDGETS[name][0])
            r = run(name, method, chains, args.seed, budget)
            print(table_row(r), flush=True)
            for key in ("sampler_warnings", "modes_warnings", "ais_warnings"):
                for msg in r.get(key, []):
                    print(f"    {key}: {msg}", flush=True)


if __name__ == "__main__":
    main()
