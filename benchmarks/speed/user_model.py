"""Benchmark: a user's own PyMC model, sampled by ``pm.sample()`` with no ``step=``.

Run with ``python -m benchmarks.speed.user_model [--gibbs-draws 1000] [--nuts-draws 150]
[--model issue18|gamma|col_tau|student ...] [--only gdsc|ccle] [--cpu]``.

Issue 34's models (``--model``): ``gamma``, ``A, W ~ Gamma(2, 1)`` with ``tau ~ Gamma(1, 1)``;
``col_tau``, the same priors with one precision per column (``tau ~ Gamma(1, 1, dims="col")``
as ``tau[cols]`` on the observed entries); ``student``, the same priors with
``X ~ StudentT(4, A @ W, tau^-1/2)``. For these the ESS of the first column's tau is shown.

The model, written in PyMC syntax as a user would (issue 18)::

    A   ~ HalfNormal(1)                 (row, factor)
    lam ~ Gamma(2, 2)                   one rate per factor (dims "factor")
    W   ~ Exponential(lam[:, None])     (factor, col): row k of W has rate lam[k]
    tau ~ Gamma(1, 1)
    X   ~ likelihoods.gaussian(A, W, tau=tau) on the observed entries

on GDSC IC50 (rank 5) and CCLE IC50 (rank 3), with their missing entries. ``import bnmfzoo``
registers GibbsNMF in PyMC's ``STEP_METHODS``; ``pm.sample()`` then assigns it A, lam, W and tau
by itself (the chosen steps are printed from ``assign_step_methods``, and the run is checked to
have GibbsNMF's ``train_mse`` sample stat). The baseline is PyMC's NUTS (``nuts_sampler="pymc"``)
on the same model, run the way PyMC would without bnmfzoo (our classes taken out of
``STEP_METHODS`` for that run), in the same process.

Printed per data set: the chosen steps; wall times (PyMC's includes its compilation, both
include tuning); effective samples per second of tau and three entries of A @ W and the ratio to
NUTS; posterior means of tau and of A @ W (the three entries plus 200 random observed ones)
against NUTS, as z = difference / sqrt(mcse_ours^2 + mcse_nuts^2) with the count beyond 4; and,
for CCLE, per-chain ESS and R-hat (on CCLE rank 3 chains may settle in different modes, so
multi-chain ESS can be tiny while each chain mixes well).

Measured on 2026-11-23 with the defaults (2 chains; ours 500 tune + 1000 draws, NUTS 150 +
150; shared 2-core machine under load; about 7 minutes in all):

* GDSC, rank 5: ours 7.0 s, NUTS 132.6 s. ESS/s ratios: tau 44x, three A @ W entries 48x, 32x,
  103x. Posterior means: tau 0.0015232 both (z = -0.07); 204 quantities (tau and 203 A @ W
  entries): |z| median 0.75, max 2.72, none beyond 4. R-hat of tau 1.000 for both.
* CCLE, rank 3: ours 2.7 s, NUTS 24.8 s. Ratios: tau 18x, entries 21x, 17x, 42x. |z| median
  0.63, max 2.66, none beyond 4. R-hat of tau: ours 1.001, NUTS 0.999; per-chain ESS of tau:
  ours 494 and 702, NUTS 212 and 326 (with this seed both methods' chains agree on the mode).
"""

import argparse
import time

import numpy as np

from benchmarks._common import DATA

#: the models of issue 34 (item 3), as users write them; "issue18" is the model above
MODELS = ("issue18", "gamma", "col_tau", "student")


def user_model(X, rank, kind="issue18"):
    """The benchmark's model ``kind`` (see :data:`MODELS` and the module docstring)."""
    import pymc as pm

    from bnmfzoo import likelihoods

    coords = {"row": X.row.values, "col": X.col.values, "factor": np.arange(rank)}
    with pm.Model(coords=coords) as model:
        if kind == "issue18":
            A = pm.HalfNormal("A", 1.0, dims=("row", "factor"))
            lam = pm.Gamma("lam", 2.0, 2.0, dims="factor")
            W = pm.Exponential("W", lam[:, None], dims=("factor", "col"))
            tau = pm.Gamma("tau", 1.0, 1.0)
            likelihoods.gaussian("X", A, W, observed=X, tau=tau)
            return model
        A = pm.Gamma("A", 2.0, 1.0, dims=("row", "factor"))
        W = pm.Gamma("W", 2.0, 1.0, dims=("factor", "col"))
        rows, cols = np.nonzero(~np.isnan(X.values))
        values = X.values[rows, cols]
        if kind == "gamma":
            tau = pm.Gamma("tau", 1.0, 1.0)
            likelihoods.gaussian("X", A, W, observed=X, tau=tau)
        elif kind == "col_tau":
            tau = pm.Gamma("tau", 1.0, 1.0, dims="col")
            pm.Normal("X", mu=(A @ W)[rows, cols], tau=tau[cols], observed=values)
        else:
            tau = pm.Gamma("tau", 1.0, 1.0)
            pm.StudentT("X", nu=4.0, mu=(A @ W)[rows, cols], sigma=tau ** -0.5,
                        observed=values)
    return model


def quantities(dt, entries):
    import xarray as xr

    p = dt.posterior
    tau = p["tau"]
    ds = xr.Dataset({"tau": tau if tau.ndim == 2 else tau.isel({tau.dims[2]: 0})})
    for i, j in entries:
        ds[f"AW[{i},{j}]"] = (p["A"].isel(row=i) * p["W"].isel(col=j)).sum("factor")
    return ds


def run(name, X, rank, gibbs_draws, nuts_draws, chains, seed, kind="issue18", cpu=False):
    import arviz as az
    import pymc as pm
    from pymc.sampling.mcmc import assign_step_methods

    model = user_model(X, rank, kind)
    mask = ~np.isnan(X.values)
    rng = np.random.default_rng(0)
    obs_rows, obs_cols = np.nonzero(mask)
    pick = rng.choice(obs_rows.size, size=203, replace=False)
    entries = [(int(obs_rows[k]), int(obs_cols[k])) for k in pick]
    shown = entries[:3]
    print(f"\n=== {name}: {X.shape[0]} x {X.shape[1]}, {int(mask.sum())} observed "
          f"({mask.mean():.3f}), rank {rank}, model {kind!r}")
    with model:
        _, selected = assign_step_methods(model)
    print("  pm.sample() assigns: " + "; ".join(
        f"{cls.__name__}: [{', '.join(model.values_to_rvs[v].name for v in vs)}]"
        for cls, vs in selected.items()))
    kw = dict(chains=chains, cores=1, random_seed=seed, progressbar=False,
              compute_convergence_checks=False)
    with model:
        t, c = time.perf_counter(), time.process_time()
        ours = pm.sample(draws=gibbs_draws, tune=gibbs_draws // 2, **kw)
        t_ours, c_ours = time.perf_counter() - t, time.process_time() - c
    assert "train_mse" in ours.sample_stats, "GibbsNMF did not run"
    from bnmfzoo.inference._step_glue import pymc_default_steps

    with pymc_default_steps(), model:
        _, selected = assign_step_methods(model)
        print("  baseline assigns:    " + "; ".join(
            f"{cls.__name__}: [{', '.join(model.values_to_rvs[v].name for v in vs)}]"
            for cls, vs in selected.items()) + " (nuts_sampler='pymc')")
        t, c = time.perf_counter(), time.process_time()
        nuts = pm.sample(draws=nuts_draws, tune=nuts_draws, nuts_sampler="pymc", **kw)
        t_nuts, c_nuts = time.perf_counter() - t, time.process_time() - c
    assert "train_mse" not in nuts.sample_stats
    print(f"  ours: {chains} x ({gibbs_draws // 2} tune + {gibbs_draws}) sweeps in "
          f"{t_ours:.1f} s ({c_ours:.1f} CPU s);  NUTS: {chains} x ({nuts_draws} + "
          f"{nuts_draws}) in {t_nuts:.1f} s ({c_nuts:.1f} CPU s)")
    if cpu:  # ESS per CPU second (a shared machine's wall time depends on the others' load)
        t_ours, t_nuts = c_ours, c_nuts

    q_ours, q_nuts = quantities(ours, entries), quantities(nuts, entries)
    ess_o, ess_n = az.ess(q_ours), az.ess(q_nuts)
    print(f"  {'quantity':16s} {'ESS/s ours':>11s} {'ESS/s NUTS':>11s} {'ratio':>8s}")
    ratios = {}
    for k in ["tau"] + [f"AW[{i},{j}]" for i, j in shown]:
        a, b = float(ess_o[k]) / t_ours, float(ess_n[k]) / t_nuts
        ratios[k] = a / b if b > 0 else float("inf")
        print(f"  {k:16s} {a:11.2f} {b:11.3f} {ratios[k]:7.1f}x")
    print(f"  smallest ratio: {min(ratios.values()):.1f}x (target >= 10x on GDSC)")

    m_o, m_n = q_ours.mean(("chain", "draw")), q_nuts.mean(("chain", "draw"))
    s_o, s_n = az.mcse(q_ours), az.mcse(q_nuts)
    z = {k: float((m_o[k] - m_n[k]) / np.sqrt(s_o[k] ** 2 + s_n[k] ** 2))
         for k in q_ours.data_vars}
    zs = np.array(list(z.values()))
    print(f"  posterior mean of tau: ours {float(m_o['tau']):.5g} +- {float(s_o['tau']):.2g}, "
          f"NUTS {float(m_n['tau']):.5g} +- {float(s_n['tau']):.2g} (z = {z['tau']:+.2f})")
    for k in list(z)[1:4]:
        print(f"  posterior mean of {k}: ours {float(m_o[k]):.4g} +- {float(s_o[k]):.2g}, "
              f"NUTS {float(m_n[k]):.4g} +- {float(s_n[k]):.2g} (z = {z[k]:+.2f})")
    print(f"  {len(zs) - 1} entries of A @ W + tau: |z| median {np.median(np.abs(zs)):.2f}, "
          f"max {np.abs(zs).max():.2f}, {int((np.abs(zs) > 4).sum())} beyond 4")
    if chains > 1:
        rhat_o, rhat_n = az.rhat(q_ours), az.rhat(q_nuts)
        print(f"  R-hat tau: ours {float(rhat_o['tau']):.3f}, NUTS {float(rhat_n['tau']):.3f}")
        for label, q in (("ours", q_ours), ("NUTS", q_nuts)):
            per = [float(az.ess(q.isel(chain=[c]))["tau"]) for c in range(chains)]
            means = [float(q["tau"].isel(chain=c).mean()) for c in range(chains)]
            print(f"  per-chain ESS of tau ({label}): {[round(e, 1) for e in per]}, chain "
                  f"means {[round(m, 5) for m in means]}")
    return ratios, z


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gibbs-draws", type=int, default=1000)
    parser.add_argument("--nuts-draws", type=int, default=150)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=["gdsc", "ccle"], default=None)
    parser.add_argument("--model", choices=MODELS, action="append", default=None,
                        help="model(s) to run (default: issue18)")
    parser.add_argument("--cpu", action="store_true",
                        help="ESS per CPU second instead of per wall-clock second")
    args = parser.parse_args()
    import bnmfzoo  # noqa: F401 - registers the step methods
    from bnmfzoo.datasets import load_ccle, load_gdsc

    for kind in args.model or ["issue18"]:
        if args.only in (None, "gdsc"):
            run("GDSC IC50", load_gdsc(data_home=DATA), 5, args.gibbs_draws, args.nuts_draws,
                args.chains, args.seed, kind, args.cpu)
        if args.only in (None, "ccle"):
            run("CCLE IC50", load_ccle("ic50", data_home=DATA), 3, args.gibbs_draws,
                args.nuts_draws, args.chains, args.seed, kind, args.cpu)


if __name__ == "__main__":
    main()
