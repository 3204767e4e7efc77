"""Benchmark: Student-t NMF on CCLE IC50 (rank 3), ours by default against PyMC's NUTS.

Run with ``python -m benchmarks.speed.student_t [--ours-draws 20000] [--nuts-draws 1000]
[--burn 3000] [--seed 2]``.

The model is ``benchmarks.speed.user_model``'s ``student``: ``A, W ~ Gamma(2, 1)``, ``tau ~
Gamma(1, 1)``, ``X ~ StudentT(4, A @ W, tau^-1/2)`` on the 11,670 observed entries. Its
posterior has several modes (which drug columns the rank-3 fit captures and which it leaves to
the heavy tails; tau differs between them by about 0.1), and either sampler stays in the mode
it starts in for thousands of draws. So the comparison is within one mode: our sweep runs
``--burn`` sweeps from a random start, and both samplers then start from that state
(``initvals``), ours through ``pm.sample()`` with no ``step=`` (the default assignment), NUTS
with bnmfzoo's steps taken out of PyMC's list and ``init="adapt_diag"`` (no jitter of the
start), one chain each, in the same process. Printed: CPU seconds; posterior mean and MCSE of
tau for each and their z-score; the same for 200 random observed entries of ``A @ W``; ESS per
CPU second of tau and of the 200 entries (smallest and median) and the ratios ours / NUTS; the
means of the first and second halves of each chain (a drift shows there).
"""

import argparse
import json
import time

import numpy as np

from benchmarks._common import DATA


def _summary(idata, cpu, entries):
    import arviz as az

    p = idata.posterior
    A, W = p["A"].values, p["W"].values
    aw = np.stack([(A[:, :, i, :] * W[:, :, :, j]).sum(-1) for i, j in entries], -1)
    tau = p["tau"].values
    ess_aw = np.array([float(az.ess(aw[..., k])) for k in range(aw.shape[-1])])
    half = tau.shape[1] // 2
    return dict(cpu=cpu, tau_mean=float(tau.mean()), tau_mcse=float(az.mcse(tau)),
                tau_halves=[float(tau[:, :half].mean()), float(tau[:, half:].mean())],
                ess_tau=float(az.ess(tau)), ess_aw_min=float(ess_aw.min()),
                ess_aw_median=float(np.median(ess_aw)), aw_mean=aw.mean((0, 1)),
                aw_mcse=np.array([float(az.mcse(aw[..., k])) for k in range(aw.shape[-1])]))


def run(ours_draws, nuts_draws, burn, seed):
    import pymc as pm

    import bnmfzoo  # noqa: F401 - registers the step methods
    from benchmarks.speed.user_model import user_model
    from bnmfzoo.datasets import load_ccle
    from bnmfzoo.inference._step_glue import pymc_default_steps
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    from bnmfzoo.inference.gaussian.priors._gibbs_prior import plan_from_factorization
    from bnmfzoo.inference.gaussian.priors._weighted_core import weighted_nmf_sweep
    from bnmfzoo.models._recognize import try_recognize

    X = load_ccle("ic50", data_home=DATA)
    model = user_model(X, 3, "student")
    f, _ = try_recognize(model)
    plan, obs = plan_from_factorization(f), observed_entries(f.entries)
    rng = np.random.default_rng(seed)
    D, N = X.shape
    st = nmf_state(rng.gamma(2, 1, (D, 3)) * 0.3, rng.gamma(2, 1, (3, N)) * 0.3, 1.0, None, obs)
    for _ in range(burn):
        weighted_nmf_sweep(st, obs, plan, rng, rates={}, update={"A", "W", "tau"})
    init = {"A": st.A.copy(), "W": st.Wt.T.copy(), "tau": float(st.tau)}
    print(f"CCLE IC50 {D} x {N}, {obs.n_observed} observed, rank 3, Student-t nu = 4; start "
          f"after {burn} sweeps: tau {init['tau']:.4f}, SSE {float((st.resid**2).sum()):.0f}")
    pick = np.random.default_rng(0).choice(obs.n_observed, 200, replace=False)
    entries = [(int(obs.rows[k]), int(obs.cols[k])) for k in pick]
    kw = dict(chains=1, cores=1, progressbar=False, compute_convergence_checks=False,
              initvals=init)
    with model:
        c = time.process_time()
        ours = pm.sample(draws=ours_draws, tune=1000, random_seed=seed + 9, **kw)
        o = _summary(ours, time.process_time() - c, entries)
    assert "train_mse" in ours.sample_stats, "GibbsNMF did not run"
    with pymc_default_steps(), model:
        c = time.process_time()
        # no jitter: PyMC's default jitters the start by up to 1 on the log scale of every
        # factor entry, which leaves the mode the comparison is about
        nuts = pm.sample(draws=nuts_draws, tune=300, random_seed=seed + 10,
                         nuts_sampler="pymc", init="adapt_diag", **kw)
        n = _summary(nuts, time.process_time() - c, entries)
    for label, s, d in (("ours", o, ours_draws + 1000), ("NUTS", n, nuts_draws + 300)):
        print(f"  {label}: {d} iterations in {s['cpu']:.1f} CPU s; tau {s['tau_mean']:.4f} +- "
              f"{s['tau_mcse']:.4f} (halves {s['tau_halves'][0]:.4f}, {s['tau_halves'][1]:.4f})"
              f"; ESS tau {s['ess_tau']:.0f}, A @ W min {s['ess_aw_min']:.0f}, median "
              f"{s['ess_aw_median']:.0f}")
    z = (o["tau_mean"] - n["tau_mean"]) / np.hypot(o["tau_mcse"], n["tau_mcse"])
    za = (o["aw_mean"] - n["aw_mean"]) / np.hypot(o["aw_mcse"], n["aw_mcse"])
    print(f"  tau: z = {z:+.2f} (|z| <= 2: within 2 combined MCSE)")
    print(f"  200 entries of A @ W: |z| median {np.median(np.abs(za)):.2f}, max "
          f"{np.abs(za).max():.2f}, beyond 4: {int((np.abs(za) > 4).sum())}")
    ratio = {k: (o[k] / o["cpu"]) / (n[k] / n["cpu"])
             for k in ("ess_tau", "ess_aw_min", "ess_aw_median")}
    print("  ESS per CPU second, ours / NUTS: tau {ess_tau:.1f}x, A @ W smallest "
          "{ess_aw_min:.1f}x, median {ess_aw_median:.1f}x".format(**ratio))
    return dict(z_tau=float(z), ratio=ratio, ours={k: v for k, v in o.items()
                                                    if not k.startswith("aw_")},
                nuts={k: v for k, v in n.items() if not k.startswith("aw_")})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours-draws", type=int, default=20000)
    parser.add_argument("--nuts-draws", type=int, default=1000)
    parser.add_argument("--burn", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    out = run(args.ours_draws, args.nuts_draws, args.burn, args.seed)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
