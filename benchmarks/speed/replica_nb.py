"""Replica exchange of the count models on real counts: ladder, swaps, cost.

Data (``--data``): the 21 breast-cancer SBS96 catalogues (:func:`bnmfzoo.datasets.load_sbs96`,
21 x 96, 183,916 mutations; default), the Reuters word counts or a sparse synthetic matrix.
Model: :func:`bnmfzoo.models.negative_binomial` at rank ``--rank`` with a learned dispersion,
or with ``--model poisson`` :func:`bnmfzoo.models.poisson`. Runs
``ReplicaExchangePoisson`` (the tempered path of both families) through ``pm.sample`` with the
default adaptive ladder (grown while tuning until neighbours swap), and the plain Gibbs sweep
in a numeric loop for the cost per sweep. Prints the final ladder, the mean swap probability
of each neighbour pair, the round trips, the CPU per step and the ratio to one plain sweep,
and (NB) the cold chain's alpha beside plain Gibbs's.

With ``--chains 2`` (or more) the cold chains' modes and masses are printed
(:func:`bnmfzoo.diagnostics.modes`).

Run: ``nice -n 15 python -m benchmarks.speed.replica_nb [--model poisson] [--chains 2]``
"""

import argparse
import time
import warnings

import numpy as np
import pymc as pm

import bnmfzoo as bz
from benchmarks._common import Clock  # noqa: F401 - one BLAS thread
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--draws", type=int, default=700)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", choices=("negative_binomial", "poisson"),
                    default="negative_binomial")
    ap.add_argument("--beta-min", type=float, default=0.3)
    ap.add_argument("--inner-sweeps", type=int, default=5)
    ap.add_argument("--path", choices=("power", "rounding"), default=None,
                    help="the tempered path (default: power for Poisson, rounding for NB)")
    ap.add_argument("--data", choices=("breast", "reuters", "sparse"), default="breast",
                    help="breast SBS96 catalogues; the Reuters word counts (395 x 4,258, 79 %% "
                         "of the nonzeros are 1s); or a synthetic 150 x 200 Poisson draw of "
                         "rank 3 (A, W ~ Gamma(0.3, 0.7), seed 0)")
    ap.add_argument("--chains", type=int, default=1,
                    help="chains (run one after the other); with 2 or more the modes of the "
                         "cold chains are printed (bnmfzoo.diagnostics.modes)")
    a = ap.parse_args(argv)
    if a.data == "breast":
        X = np.asarray(bz.datasets.load_sbs96("breast").values)
    elif a.data == "reuters":
        X = np.asarray(bz.datasets.load_reuters().values)
    else:
        g = np.random.default_rng(0)
        X = g.poisson(g.gamma(0.3, 0.7, (150, 3)) @ g.gamma(0.3, 0.7, (3, 200))).astype(float)
    print(f"{a.data}: {(X > 0).sum()} nonzeros, {(X == 1).sum()} of them 1s, max {X.max():.0f}")
    model = getattr(bz.models, a.model)(X, a.rank)
    nb = a.model == "negative_binomial"
    prob = problem_from_factorization(bz.models.recognize(model))
    rng = np.random.default_rng(a.seed)
    s = initial_state(prob, rng)
    plain_alpha = []
    t0 = time.process_time()
    n_plain = a.tune + a.draws
    for t in range(n_plain):
        s = gibbs_sweep(prob, s, rng)
        if t >= a.tune:
            plain_alpha.append(s["alpha"] if nb else np.nan)
    per_sweep = (time.process_time() - t0) / n_plain
    print(f"data {X.shape}, total {X.sum()}, K = {a.rank}; plain NB Gibbs "
          f"{1e3 * per_sweep:.2f} ms CPU per sweep"
          + (f"; alpha mean {np.mean(plain_alpha):.2f}" if nb else ""))
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = bz.inference.ReplicaExchangePoisson(beta_min=a.beta_min,
                                                   inner_sweeps=a.inner_sweeps,
                                                   path=a.path)
        t0 = time.process_time()
        idata = pm.sample(tune=a.tune, draws=a.draws, chains=a.chains, cores=1, step=step,
                          progressbar=False, random_seed=a.seed,
                          compute_convergence_checks=False)
        cpu = (time.process_time() - t0) / a.chains
    st = idata.sample_stats
    betas = [float(st[f"beta_{i}"].values[0, -1]) for i in range(step.max_replicas)
             if np.isfinite(st[f"beta_{i}"].values[0, -1])]
    probs = [float(np.nanmean(st[f"swap_prob_{i}"].values[0])) for i in range(len(betas) - 1)]
    per_step = cpu / (a.tune + a.draws)
    print(f"ladder after tuning: {len(betas)} rungs, betas {np.round(betas, 3).tolist()}")
    print(f"mean swap probability per pair (draws): {np.round(probs, 2).tolist()}")
    trips = st["round_trips"].values[:, -1].astype(int).tolist()
    print(f"round trips in the {a.draws} draws of each chain: {trips} "
          f"(beta_min {a.beta_min}, inner_sweeps {a.inner_sweeps})")
    alpha = (f"; cold alpha mean {float(idata.posterior['alpha'].mean()):.2f}" if nb else "")
    print(f"replica exchange: {1e3 * per_step:.1f} ms CPU per step (pm.sample, compile "
          f"included) = {per_step / per_sweep:.1f} plain sweeps{alpha}")
    if a.chains > 1:
        m = bz.diagnostics.modes(idata)["modes"]
        print(f"modes of the cold chains (estimator {m.attrs.get('estimator')}): "
              f"{m.attrs.get('note')}")
        for i in range(m.sizes["mode"]):
            print(f"  mode {i}: weight {float(m['weight'][i]):.4f} "
                  f"(MCSE {float(m['weight_mcse'][i]):.4f}, 95 % "
                  f"{float(m['weight_low'][i]):.4f}-{float(m['weight_high'][i]):.4f}), "
                  f"visits {int(m['n_visits'][i])}")


if __name__ == "__main__":
    main()
