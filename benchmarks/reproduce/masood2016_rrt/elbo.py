"""ELBO of RRT+ONVI vs NVI-4, NVI-10, Gibbs+ONVI (optionally NUTS+ONVI); Masood & Doshi-Velez 2016.

Data: Olivetti faces 4096 x 400 (rank 4) and ALL/AML 5000 x 38 (rank 3), both likelihoods
(Gaussian with sigma^2 = the empirical MSE of one Lin fit, x1 and x10; uniform with epsilon =
the largest residual over the Lin restarts). Prints per setting: ours (mean over reps) beside the
paper's Table 1 / 2 / 3 values, the number of RRT components, coverage (covering number of the
final mixture means under the weighted angular distance at a few angles) and wall times.

Reduced sizes (defaults; the paper: 10 reps, 50 Lin restarts (Gaussian RRT), 5000 ONVI
candidates or 10,000 failed extensions, 10,000 Gibbs/HMC draws): --reps 1, --restarts 10,
--attempts 150 RRT extensions (--attempts 0: the paper's stopping rules only), --draws 300
Gibbs draws, NVI 5 sweeps. HMC+ONVI only with --hmc (PyMC HamiltonianMC, --leapfrog 20 steps
per iteration, the digest's default) or --nuts (PyMC NUTS instead, which runs at maximum tree
depth on 4096 x 400 at the empirical noise: hours on 2 cores). --lam sets the exponential prior
rate(s) (the paper gives none; several values give one uniform/Gaussian setting each). Times
are CPU seconds of this process (time.process_time; single-threaded BLAS) with wall seconds
beside them. Rows are appended to --json as they finish.

Usage: python -m benchmarks.reproduce.masood2016_rrt.elbo [--datasets faces aml] [--reps 1] ...
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo._base.nmf_solvers import lin_pg_restarts, max_abs_residual
from bnmfzoo._base.rng import spawn_seeds
from bnmfzoo.diagnostics import covering_number
from bnmfzoo.inference.exploration.npvi import LogJoint, fit_nvi, onvi_from_draws
from bnmfzoo.inference.exploration.rrt import fit_rrt
from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep, observed_entries
from bnmfzoo.models import exponential_gaussian, uniform_noise
from bnmfzoo.models._spec import GaussianHyper, find_spec

# Paper Tables 1-3 (means). Table 3 is the ELBO *deviation from the dataset mean*.
PAPER = {
    ("aml", "gauss1"): {"NVI-4": -1.536e6, "NVI-10": -1.536e6, "Gibbs": -1.571e6,
                        "HMC": -1.564e6, "RRT": -1.510e6},
    ("faces", "gauss1"): {"NVI-4": 1.292e6, "NVI-10": 1.293e6, "Gibbs": 1.284e6,
                          "HMC": 1.288e6, "RRT": 1.314e6},
    ("aml", "gauss10"): {"NVI-4": -1.842e6, "NVI-10": -1.842e6, "Gibbs": -1.858e6,
                         "HMC": -1.873e6, "RRT": -1.818e6},
    ("faces", "gauss10"): {"NVI-4": -1.644e6, "NVI-10": -1.643e6, "Gibbs": -1.647e6,
                           "HMC": -1.643e6, "RRT": -1.631e6},
    ("aml", "uniform"): {"NVI-4": 0.661, "NVI-10": -2.216e6, "HMC": -2.749, "RRT": 1.430,
                         "components": 2},
    ("faces", "uniform"): {"NVI-4": -0.458, "NVI-10": -8.713e5, "HMC": -0.458, "RRT": 1.370,
                           "components": 5},
}


def load(name, data_home):
    """The data set as a float array and its rank."""
    from bnmfzoo import datasets

    if name == "faces":
        X = datasets.load_faces(size=(64, 64), data_home=data_home)
        return np.asarray(X.values, dtype=float), 4
    X = datasets.load_all_aml(data_home=data_home)
    return np.asarray(X.values, dtype=float), 3


def gibbs_draws(X, init, sigma, n_draws, seed):
    """Schmidt Gibbs chain (GibbsNMF numeric kernel, sigma fixed) from a Lin solution."""
    obs = observed_entries(X)
    hyper = GaussianHyper(lambda_A=1.0, lambda_W=1.0, alpha_tau=1.0, beta_tau=1.0, sigma=sigma,
                 ard=False, alpha0=1.0, beta0=1.0)
    st = nmf_state(init[0], init[1], 1.0 / sigma**2, None, obs)
    rng = np.random.default_rng(seed)
    As, Ws = [], []
    for _ in range(n_draws):
        nmf_sweep(st, obs, hyper, rng, update={"A", "W"})
        As.append(st.A.copy())
        Ws.append(st.W.copy())
    return np.stack(As), np.stack(Ws)


def mcmc_draws(model, init, n_draws, seed, leapfrog=None):
    """PyMC HMC (``leapfrog`` steps per iteration) or NUTS (``None``) from a Lin solution.

    HMC as digest item 20 allows: PyMC's log-transformed ``HamiltonianMC`` with dual-averaging
    step-size adaptation over the 200 tuning iterations and a fixed number of leapfrog steps
    (a path length of 1e300 makes ``min(max_steps, path_length / step)`` exactly
    ``leapfrog``; the digest's default L = 20). No jitter of the start (``init="adapt_diag"``):
    under the uniform model a jittered start leaves the feasible set ``|X - AW| <= epsilon``,
    where the log density is -inf.
    """
    import pymc as pm

    with model:
        step = (None if leapfrog is None else
                pm.HamiltonianMC(path_length=1e300, max_steps=leapfrog, target_accept=0.65))
        dt = pm.sample(draws=n_draws, tune=200, chains=1, step=step, nuts_sampler="pymc",
                       init="adapt_diag",
                       initvals={"A": np.maximum(init[0], 1e-6), "W": np.maximum(init[1], 1e-6)},
                       random_seed=seed, progressbar=False, compute_convergence_checks=False)
    return dt["posterior"]["A"].values[0], dt["posterior"]["W"].values[0]


COVER_EPS = [1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 90.0]  # degrees
SHOWN = [2, 4, 6, 8]  # 0.01, 0.1, 1 and 10 degrees in the printed table


def coverage(As, Ws):
    """Covering numbers of the mixture means under WAD on the COVER_EPS grid (degrees)."""
    if len(As) < 2:
        return [1] * len(COVER_EPS)
    return [int(c) for c in covering_number(list(As), COVER_EPS, distance="wad", Ws=list(Ws))]


def persistence_plot(path, reps, methods, title):
    """Covering number of the final mixture means against the WAD radius (paper Figs. 5-10)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for m in methods:
        curves = np.array([r[m][3] for r in reps], dtype=float)
        line = ax.step(COVER_EPS, np.median(curves, axis=0), where="post", label=m)[0]
        if len(reps) > 1:
            ax.fill_between(COVER_EPS, curves.min(axis=0), curves.max(axis=0), step="post",
                            color=line.get_color(), alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("WAD radius (degrees)")
    ax.set_ylabel("covering number")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_setting(X, R, setting, seed, args, lam=1.0):
    """All methods on one (data, likelihood) setting.

    Returns {method: (elbo, M, cpu seconds, cov, wall seconds)}.
    """
    s_restart, s_gibbs, s_rrt, s_jit = spawn_seeds(seed, 4)
    t = time.process_time()
    restarts = lin_pg_restarts(X, R, args.restarts, random_seed=s_restart)
    t_restart = time.process_time() - t
    A0, W0 = restarts[0]
    out = {}
    if setting.startswith("gauss"):
        mult = 10.0 if setting == "gauss10" else 1.0
        sigma = float(np.sqrt(mult * np.mean((X - A0 @ W0) ** 2)))
        model = exponential_gaussian(X, R, sigma=sigma, lambda_=lam)
        target = LogJoint.from_model(model)
        inits4, inits10 = restarts[:4], (restarts * 10)[:10]
    else:
        eps = max(max_abs_residual(X, A, W) for A, W in restarts) * (1 + 1e-9)
        model = uniform_noise(X, R, epsilon=eps, lambda_=lam)
        target = LogJoint.from_model(model)
        rng = np.random.default_rng(s_jit)
        Ar, Wr = target.rescale(A0, W0)  # prior-optimal scale, as every other method gets
        jit = [(Ar * (1 + 1e-9 * rng.standard_normal(Ar.shape)), Wr) for _ in range(10)]
        inits4, inits10 = jit[:4], jit

    def record(name, onvi, t_cpu, t_wall):
        D, N = X.shape
        As = onvi.means[:, : D * R].reshape(-1, D, R)
        Ws = onvi.means[:, D * R :].reshape(-1, R, N)
        out[name] = (onvi.elbo(), onvi.n_components, time.process_time() - t_cpu,
                     coverage(As, Ws), time.perf_counter() - t_wall)

    for name, inits in (("NVI-4", inits4), ("NVI-10", inits10)):
        t, tw = time.process_time(), time.perf_counter()
        record(name, fit_nvi(target, inits, max_iter=args.nvi_sweeps), t, tw)
    if setting.startswith("gauss"):
        t, tw = time.process_time(), time.perf_counter()
        As, Ws = gibbs_draws(X, (A0, W0), float(find_spec(model).hyper.sigma), args.draws,
                             s_gibbs)
        record("Gibbs", onvi_from_draws(target, As, Ws), t, tw)
    if args.hmc or args.nuts:
        t, tw = time.process_time(), time.perf_counter()
        start = (A0, W0) if setting.startswith("gauss") else jit[0]  # feasible under uniform
        As, Ws = mcmc_draws(model, start, args.draws, s_gibbs,
                            leapfrog=None if args.nuts else args.leapfrog)
        record("NUTS" if args.nuts else "HMC", onvi_from_draws(target, As, Ws), t, tw)
    t, tw = time.process_time(), time.perf_counter()
    dt = fit_rrt(model, restarts=restarts, max_attempts=args.attempts or None,
                 random_seed=s_rrt, n_draws=10, progressbar=args.progressbar)
    var = dt["variational"]
    diag = dt["diagnostics"]
    out["RRT"] = (float(dt.attrs["elbo"]), int(dt.attrs["n_components"]),
                  time.process_time() - t + t_restart,
                  coverage(var["A_mean"].values, var["W_mean"].values),
                  time.perf_counter() - tw)
    out["_rrt_diag"] = {k: diag[k].item() for k in (
        "n_attempts", "n_nodes_added", "n_processed", "n_accepted", "n_pruned",
        "n_tree_restarts", "consecutive_failures")}
    out["_rrt_diag"]["weights"] = [round(float(x), 4) for x in var["weight"].values]
    return out


def main(argv=None):
    """Run the benchmark and print the tables."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["aml", "faces"], choices=["aml", "faces"])
    p.add_argument("--settings", nargs="+", default=["gauss1", "gauss10", "uniform"],
                   choices=["gauss1", "gauss10", "uniform"])
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--restarts", type=int, default=10)
    p.add_argument("--attempts", type=int, default=150)
    p.add_argument("--draws", type=int, default=300)
    p.add_argument("--nvi-sweeps", type=int, default=5)
    p.add_argument("--hmc", action="store_true",
                   help="HMC+ONVI row (PyMC HamiltonianMC, --leapfrog steps per iteration)")
    p.add_argument("--leapfrog", type=int, default=20, help="HMC leapfrog steps (digest: 20)")
    p.add_argument("--nuts", action="store_true", help="the MCMC row from PyMC NUTS instead")
    p.add_argument("--progressbar", action="store_true")
    p.add_argument("--lam", type=float, nargs="+", default=[1.0])
    p.add_argument("--json", default=None, help="append one JSON line per setting here")
    p.add_argument("--data-home", default=os.environ.get("BNMFZOO_DATA"))
    args = p.parse_args(argv)
    print(f"reduced run: reps={args.reps} restarts={args.restarts} rrt_attempts={args.attempts} "
          f"gibbs_draws={args.draws} nvi_sweeps={args.nvi_sweeps} (paper: 10 reps, 50 restarts, "
          "5000 candidates, 10,000 draws)")
    for name in args.datasets:
        try:
            X, R = load(name, args.data_home)
        except Exception as err:  # noqa: BLE001 - report and skip a missing data set
            print(f"{name}: skipped ({err})")
            continue
        for setting, lam in [(s, lam) for s in args.settings for lam in args.lam]:
            reps = [run_setting(X, R, setting, 1000 * r + 7, args, lam)
                    for r in range(args.reps)]
            methods = [m for m in reps[0] if not m.startswith("_")]
            elbos = {m: np.mean([r[m][0] for r in reps]) for m in methods}
            paper = PAPER.get((name, setting), {})
            ref = 0.0
            if setting == "uniform":  # Table 3 reports deviations from a per-dataset mean
                ref = np.mean([elbos[m] for m in ("NVI-4", "RRT") if m in elbos])
            print(f"\n## {name} {X.shape} rank {R}, {setting}, lambda={lam:g}"
                  + (" (ELBO minus mean of NVI-4 and RRT, as Table 3)" if ref else ""))
            print("| method | ELBO ours | ELBO paper | absolute ELBO | components "
                  "| WAD cover @0.01/0.1/1/10 deg | CPU s | wall s |")
            print("|---|---|---|---|---|---|---|---|")
            for m in methods:
                comps = np.mean([r[m][1] for r in reps])
                secs = np.mean([r[m][2] for r in reps])
                wall = np.mean([r[m][4] for r in reps])
                cov = [reps[0][m][3][i] for i in SHOWN]
                pv = paper.get(m, np.nan)
                print(f"| {m} | {elbos[m] - ref:.4g} | {pv:.4g} | {elbos[m]:.7g} | {comps:.1f} "
                      f"| {cov} | {secs:.1f} | {wall:.1f} |")
            print("RRT diagnostics:", [r["_rrt_diag"] for r in reps])
            if args.json:
                png = os.path.join(os.path.dirname(os.path.abspath(args.json)),
                                   f"rrt_persistence_{name}_{setting}_lam{lam:g}.png")
                persistence_plot(png, reps, methods, f"{name} {setting} lambda={lam:g} "
                                 f"({args.reps} reps; band: min-max)")
            if args.json:
                row = {"dataset": name, "setting": setting, "lambda": lam, "reps": args.reps,
                       "attempts": args.attempts, "restarts": args.restarts,
                       "methods": {m: {"elbo": [r[m][0] for r in reps],
                                       "components": [r[m][1] for r in reps],
                                       "cpu_s": [r[m][2] for r in reps],
                                       "wall_s": [r[m][4] for r in reps],
                                       "cover": [r[m][3] for r in reps]} for m in methods},
                       "rrt_diag": [r["_rrt_diag"] for r in reps], "paper": paper,
                       "cover_eps_deg": COVER_EPS}
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
            best = max(elbos, key=elbos.get)
            n_rrt = np.mean([r["RRT"][1] for r in reps])
            print(f"best ELBO: {best} (paper: RRT); RRT components {n_rrt:.1f}"
                  + (f" (paper {paper['components']})" if "components" in paper else ""))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
