# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A tour of bnmfzoo
#
# bnmfzoo writes every Bayesian NMF variant as a PyMC model, fits it with PyMC's samplers or
# with its own step methods and fitters (Gibbs, VB, ICM, weighted particles, RRT, collapsed
# samplers), and returns ArviZ-ready `xarray.DataTree`s. Beside ESS and R-hat it reports the
# **Stein discrepancy** (how well a set of draws or particles matches the posterior) and
# **coverage** (how many *distinct* factorizations a result holds) — because NMF is not
# identifiable, and a posterior that shows only one of its good factorizations hides that.
#
# In this tour:
# 1. load a real data set (CCLE drug sensitivity) with missing entries;
# 2. declare a model, and a model with your own prior written in PyMC;
# 3. fit the first with a Gibbs step method in `pm.sample` and with variational Bayes, and your
#    own model with PyMC's NUTS;
# 4. compare with `az.summary`, ArviZ plots, held-out error and Stein discrepancy;
# 5. fit your own model with Stein-weighted particles;
# 6. look at the distinct factorizations (coverage).
#
# The default size takes a few minutes on two cores; `BNMFZOO_NOTEBOOK_SMALL=1` gives a quick
# run (lower rank, fewer draws and particles).

# %%
import os
import time

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

import bnmfzoo
from bnmfzoo import diagnostics, likelihoods
from bnmfzoo.datasets import holdout_mask, load_ccle
from bnmfzoo.inference import GibbsNMF, fit_particles, fit_vb, pymc_default_steps
from bnmfzoo.models import exponential_gaussian, recognize
from bnmfzoo.plots import plot_bases, plot_particles

SMALL = os.environ.get("BNMFZOO_NOTEBOOK_SMALL", "0") == "1"
DATA = os.environ.get("BNMFZOO_DATA")
RANK = 3 if SMALL else 5
DRAWS, TUNE, CHAINS = (200, 200, 2) if SMALL else (1000, 1000, 4)
# NUTS takes tens of gradient evaluations per draw here: two chains at the default size.
NUTS_DRAWS, NUTS_TUNE, NUTS_CHAINS = (100, 100, 1) if SMALL else (1000, 1000, 2)
N_PARTICLES = 8 if SMALL else 30
print("bnmfzoo", bnmfzoo.__version__)

# %% [markdown]
# ## 1. Data
#
# `load_ccle()` reads the CCLE IC50 drug-sensitivity matrix (cell lines x drugs) as an
# `xarray.DataArray` with labelled coordinates; missing measurements are NaN. We hold out 10 %
# of the observed entries to measure prediction error.

# %%
X = load_ccle(data_home=DATA)
train, test = holdout_mask(X, 0.1, random_seed=0)
X_train = X.where(train)
print(f"{X.shape[0]} cell lines x {X.shape[1]} drugs, {float(X.notnull().mean()):.1%} observed, "
      f"{int(test.sum())} held out")
X.isel(row=slice(0, 4), col=slice(0, 5))

# %% [markdown]
# ## 2. Models
#
# `exponential_gaussian` is the Bayesian NMF of Schmidt et al. / Brouwer et al.:
# `A ~ Exp(lambda)`, `W ~ Exp(lambda)`, `X ~ Normal(A W, tau^-1)` on the observed entries only,
# `tau ~ Gamma(1, beta_tau)`, with `lambda` and `beta_tau` set from the data's scale by default
# (`lambda = sqrt(R / mean|X|)`, `beta_tau = var(X)`: the same relative answer in any units).
# It is an ordinary `pm.Model` carrying the data's coordinates.

# %%
model = exponential_gaussian(X_train, RANK)
print(model.free_RVs)
model

# %% [markdown]
# ### Your own prior
#
# Any likelihood term of `bnmfzoo.likelihoods` can be used inside your own `pm.Model`, with
# the priors you choose: here a half-normal prior on `A` and a noise scale fixed at a third of
# the data's standard deviation. `likelihoods.gaussian` skips the missing entries (NaN).

# %%
sigma = float(np.nanstd(X_train.values) / 3)
with pm.Model(coords={"row": X["row"].values, "col": X["col"].values,
                      "factor": np.arange(RANK)}) as my_model:
    A = pm.HalfNormal("A", sigma=1.0, dims=("row", "factor"))
    W = pm.Exponential("W", lam=0.1, dims=("factor", "col"))
    likelihoods.gaussian("X", A, W, observed=X_train.values, sigma=sigma)
my_model

# %% [markdown]
# ## 3a. Gibbs sampling through `pm.sample`
#
# `GibbsNMF` is a PyMC step method (one sweep of truncated-normal and Gamma conditionals per
# step, O(|observed| x rank)); no gradient graph is compiled. The result is PyMC's usual
# DataTree with labelled dims, plus the training MSE as a sampler statistic.

# %%
with model:
    idata = pm.sample(step=GibbsNMF(), draws=DRAWS, tune=TUNE, chains=CHAINS, cores=1,
                      nuts_sampler="pymc", random_seed=1, progressbar=False)
print("dims of A:", idata["posterior"]["A"].dims)
print("sampler statistics:", sorted(idata["sample_stats"].data_vars))
mse_last = float(idata["sample_stats"]["train_mse"][:, -1].mean())
print(f"training MSE at the last draw (mean over chains): {mse_last:.3f}")

# %% [markdown]
# ## 3b. Variational Bayes
#
# `fit_vb` runs the mean-field updates of Brouwer et al. (truncated-normal factors) and
# returns the same kind of DataTree: draws from the fitted approximation in `posterior`, the
# variational parameters and the ELBO trace in `variational`.

# %%
dt_vb = fit_vb(model, max_iter=200 if SMALL else 1000, random_seed=1, progressbar=False)
fig, ax = plt.subplots(figsize=(5, 2.5))
ax.plot(dt_vb["variational"]["elbo"].values)
ax.set_xlabel("iteration")
ax.set_ylabel("ELBO")
ax.set_yscale("symlog")
fig.tight_layout()

# %% [markdown]
# ## 3c. Your own model: our Gibbs step, chosen by PyMC
#
# `bnmfzoo.models.recognize` reads a model's graph: which observed variable is the likelihood,
# which free variables are `A` and `W`, and the prior family of each with its parameters. A
# half-normal prior is conjugate as well (each entry's conditional is again a normal
# truncated at 0), and `import bnmfzoo` registered `GibbsNMF` with PyMC, so `pm.sample()`
# without `step=` assigns it `A` and `W` by itself. For comparison, the same model with PyMC's
# own choice of sampler (NUTS), inside `pymc_default_steps()`.

# %%
found = recognize(my_model)
print({role: f.family for role, f in found.factors.items()}, "noise:", found.noise.kind)

t0 = time.perf_counter()
with my_model:
    idata_mine = pm.sample(draws=DRAWS, tune=TUNE, chains=CHAINS, cores=1, random_seed=3,
                           progressbar=False, compute_convergence_checks=False)
t_mine = time.perf_counter() - t0
print(f"pm.sample() chose GibbsNMF ({'train_mse' in idata_mine['sample_stats']}): "
      f"{t_mine:.0f} s for {CHAINS} x {DRAWS + TUNE} sweeps")

t0 = time.perf_counter()
with my_model, pymc_default_steps():
    idata_nuts = pm.sample(draws=NUTS_DRAWS, tune=NUTS_TUNE, chains=NUTS_CHAINS, cores=1,
                           nuts_sampler="pymc", random_seed=3, progressbar=False,
                           compute_convergence_checks=False)
t_nuts = time.perf_counter() - t0
stats = idata_nuts["sample_stats"]
print(f"NUTS: {t_nuts:.0f} s, mean tree depth {float(stats['tree_depth'].mean()):.1f}, "
      f"{int(stats['diverging'].sum())} divergences")

# %% [markdown]
# ## 4. Comparing the fits
#
# `az.summary` works on both results as they stand. The noise precision is identified, so the
# two methods should agree on it (VB is typically overconfident: a smaller sd).

# %%
print("Gibbs")
print(az.summary(idata, var_names=["tau"]))
print("VB")
print(az.summary(dt_vb, var_names=["tau"]))

# %% [markdown]
# The factors are a different story. R-hat compares the chains: if two Gibbs chains settle in
# different factorizations (or with the factors in a different order — label switching), the
# R-hat of `A` is far above 1 even though each chain fits the data equally well.

# %%
summ_A = az.summary(idata, var_names=["A"])
print(f"R-hat of A: median {summ_A['r_hat'].median():.2f}, max {summ_A['r_hat'].max():.2f}")
summ_A.head()

# %% [markdown]
# ArviZ 1.x plots return a `PlotCollection`: the trace and the marginal of `tau` for each
# chain, and the posterior of `tau` under both methods.

# %%
pc = az.plot_trace_dist(idata, var_names=["tau"])

# %%
# plot_dist compares several results when they share their sample dims: pool the Gibbs
# chains, and thin both to the same number of draws.
tau = {
    "Gibbs": idata["posterior"]["tau"].values.ravel(),
    "VB": dt_vb["posterior"]["tau"].values.ravel(),
}
n_draws = min(v.size for v in tau.values())
tau = {k: v[np.linspace(0, v.size - 1, n_draws).round().astype(int)][None]
       for k, v in tau.items()}
pc = az.plot_dist({k: xr.Dataset({"tau": (("chain", "draw"), v)}) for k, v in tau.items()})
pc.add_legend("model")

# %% [markdown]
# ### Prediction of the held-out entries
#
# `reconstruction_error` averages `A W` over the draws (never the product of the posterior
# means) and reports the error on the training and the held-out entries. It works on any
# result with `A` and `W`, so your own model's NUTS draws are compared on the same footing.

# %%
for name, res in (("Gibbs", idata), ("VB", dt_vb), ("NUTS (own prior)", idata_nuts)):
    err = diagnostics.reconstruction_error(X, res, mask=train, test_mask=test, kind="rmse")
    print(f"{name:<17} RMSE train {err['train']:.3f}, test {err['test']:.3f}")

# %% [markdown]
# ### Stein discrepancy
#
# The kernelized Stein discrepancy `w^T K w` measures how well a set of points matches the
# posterior using only the score `grad log p` (no normalizing constant). Lower is better; the
# values are comparable only within one model and data set. Here: 100 draws from each fit
# (the score function is compiled once and cached on the model).

# %%
ksd = {}
for name, res in (("Gibbs", idata), ("VB", dt_vb)):
    ksd[name] = diagnostics.stein_discrepancy(model, res, max_points=100, store=False,
                                              progressbar=False)
    print(f"{name:<6} KSD {float(ksd[name]):.4g}")

# %% [markdown]
# ## 5. Weighted particles for your own model
#
# `fit_particles` builds a Stein-weighted particle approximation (Masood & Doshi-Velez
# 2019): `M` factorizations from Q-Transform initializations, weighted by minimizing the KSD.
# It only needs the model's score, so it works with any prior you write — here `my_model`.
# Its KSD is comparable with that of the NUTS draws on the same model (same kernel, 100
# evenly thinned NUTS draws with equal weights).

# %%
D, N = X.shape
t0 = time.perf_counter()
dt_p = fit_particles(my_model, X=X_train, n_particles=N_PARTICLES, random_seed=2,
                     progressbar=False)
print(f"{N_PARTICLES} particles: {time.perf_counter() - t0:.0f} s")
print(f"particles: KSD {float(dt_p['diagnostics']['stein_discrepancy']):.4g} with Stein "
      f"weights, {float(dt_p['diagnostics']['stein_discrepancy_uniform']):.4g} with uniform "
      "weights")
ksd_nuts = diagnostics.stein_discrepancy(my_model, idata_nuts, max_points=100, store=False,
                                         progressbar=False)
print(f"NUTS ({NUTS_CHAINS} x {NUTS_DRAWS} draws, {t_nuts:.0f} s): KSD {float(ksd_nuts):.4g}")
print("weights:", np.round(dt_p["particles"]["weight"].values, 3))

# %% [markdown]
# Read these numbers for what they are. At the default size the Stein weights are close to
# uniform (the particles are about equally good fits) and the NUTS draws have the lower KSD:
# each particle is a converged NMF fit of the training entries — a point near a mode, with no
# posterior spread around it — while NUTS draws spread over the posterior. The particles'
# strength is elsewhere: they are many *different* factorizations (section 6), where a
# sampler stays near one.

# %% [markdown]
# `bnmfzoo.diagnostics.summary` applies the particle weights exactly (weighted mean, sd and
# quantiles, and the effective number of particles); `az.summary` on the same DataTree uses
# the `posterior` group, which holds draws resampled by weight.

# %%
diagnostics.summary(dt_p, var_names=["W"]).head()

# %%
az.summary(dt_p, var_names=["W"], kind="stats").head()

# %%
err = diagnostics.reconstruction_error(X, dt_p, mask=train, test_mask=test, kind="rmse")
print(f"particles RMSE train {err['train']:.3f}, test {err['test']:.3f}")
P = dt_p["particles"]
per_particle = [
    float(np.sqrt(np.mean((P["A"].values[i] @ P["W"].values[i] - X.values)[test] ** 2)))
    for i in range(P.sizes["particle"])
]
print(f"held-out RMSE of the single particles: {min(per_particle):.2f} to {max(per_particle):.2f}")

# %% [markdown]
# The particles fit the training entries as well as the samplers, but predict the held-out
# entries worse when some of them extrapolate poorly (the range above): an unregularized NMF
# fit of the observed entries can put large values where the data say little. At the default
# size the samplers of section 3, which average over many draws, have the lower held-out error.

# %% [markdown]
# ## 6. How many different factorizations?
#
# Distances between bases are taken after matching the columns (Hungarian algorithm):
# `angle_distance` is the largest angle between matched columns, in degrees. The covering
# number `C_eps` counts the balls of radius `eps` needed to cover a set; `coverage_table`
# summarizes several sets at once.

# %%
A_chain_means = [idata["posterior"]["A"].isel(chain=c).mean("draw").values
                 for c in range(CHAINS)]
A_vb = dt_vb["posterior"]["A"].mean(("chain", "draw")).values
print("angle between Gibbs chain 0 and VB:", round(diagnostics.angle_distance(
    A_chain_means[0], A_vb), 1), "degrees")
print("angle between Gibbs chains 0 and 1:", round(diagnostics.angle_distance(
    A_chain_means[0], A_chain_means[1]), 1), "degrees")

A_particles = dt_p["particles"]["A"].values
print("covering numbers of the particles at 1, 5, 20 degrees:",
      diagnostics.covering_number(A_particles, [1.0, 5.0, 20.0]))

# %%
A_gibbs = idata["posterior"]["A"].values.reshape(-1, D, RANK)
A_vb_draws = dt_vb["posterior"]["A"].values.reshape(-1, D, RANK)
diagnostics.coverage_table(
    {"Gibbs draws": A_gibbs[::10], "VB draws": A_vb_draws[::25], "particles": A_particles},
    distances=("angle",), eps={"angle": [5.0, 20.0]},
)

# %% [markdown]
# Read the table with the pairwise angles above: on this data, with this rank, the posterior
# is wide in angle even among the draws of one fit (a poorly determined column of `A` swings
# by tens of degrees), the Gibbs chains and the VB fit sit in different places, and the
# particles are distinct factorizations from different starting points. A single point
# estimate — or a single VB fit — would hide all of this.
#
# ### Looking at them
#
# `plot_bases` shows each basis column as a bar chart of its largest entries, labelled with
# the data's coordinates (here: cell lines); `plot_particles` shows the heaviest particles side
# by side.

# %%
heaviest = int(np.argmax(dt_p["particles"]["weight"].values))
fig = plot_bases(dt_p["particles"]["A"].isel(particle=heaviest), title="heaviest particle")

# %% [markdown]
# The same for the drugs, as a table: for the three heaviest particles, the three drugs that
# load most on each factor (rows of `W`). Different particles group the drugs differently.

# %%
W_parts = dt_p["particles"]["W"]
drugs = np.asarray(X["col"].values)
rows = {}
for p in np.argsort(dt_p["particles"]["weight"].values)[::-1][:3]:
    Wp = W_parts.isel(particle=p).values
    rows[f"particle {p}"] = {f"factor {k}": ", ".join(drugs[np.argsort(Wp[k])[::-1][:3]])
                             for k in range(RANK)}
pd.DataFrame(rows).T

# %% [markdown]
# `plot_particles` draws the heaviest particles' bases side by side (as images when the rows
# are pixels; see the `masood2019` notebook for faces).

# %%
fig = plot_particles(dt_p, top=2)

# %% [markdown]
# ## Saving results
#
# Every result is a plain DataTree and round-trips through netCDF, custom groups included.

# %%
dt_p.to_netcdf("particles.nc")
back = xr.open_datatree("particles.nc")
print(sorted(back.children))
np.testing.assert_allclose(back["particles"]["weight"].values,
                           dt_p["particles"]["weight"].values)

# %% [markdown]
# Where next: `brouwer2017` (Gibbs / VB / ICM / multiplicative updates), `masood2019`
# (particles and Stein discrepancy), `masood2016_rrt` (exploring the solution set with an
# RRT), `masood2016` sampling quality (`sampling_quality`), and `lumbreras2020` (binary data).
