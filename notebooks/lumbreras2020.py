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
# # Bayesian mean-parameterized binary NMF on the animals data (Lumbreras et al. 2020)
#
# Lumbreras, Filstroff & Févotte (2020) factorize a binary matrix `V` (F x N) through its
# *mean*: `V[f, n] ~ Bernoulli((A W)[f, n])` with `A W` in [0, 1]. In the **Beta-Dir** model
# each row of `A` lies on the simplex (Dirichlet prior: every animal is a mixture of
# components) and every entry of `W` is in [0, 1] (Beta prior: `W[k, n]` is the probability
# that a member of component `k` has attribute `n`). Augmenting with one assignment per
# observed entry makes the factors conjugate, so they can be integrated out: a **collapsed
# Gibbs** sampler and a **collapsed VB (CVB0)** algorithm. With a large truncation `K` and
# a Dirichlet concentration `gamma / K` the prior is (truncated) nonparametric and the data
# choose how many components are used.
#
# What the paper shows on small data sets (§6):
# * the dictionaries are interpretable (sparse mixtures of components with clear meaning);
# * with the nonparametric prior only a handful of the `K = 100` components are active;
# * held-out perplexity (mean negative log-likelihood per test entry, 25 % of the entries held
#   out) of the Bayesian models is competitive, and far below that of a constant predictor
#   (0.658 nats per entry on animals, the entropy at the data's density).
#
# Here: animals (50 animals x 85 binary attributes, Kemp et al. 2006), 25 % of the entries held
# out, Beta-Dir fitted by CVB0 and by collapsed Gibbs (plus the Dir-Dir model by collapsed
# Gibbs), the active components, the held-out perplexity, and the dictionary.

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np

from bnmfzoo.datasets import holdout_mask, load_nbmf
from bnmfzoo.diagnostics import active_components, perplexity
from bnmfzoo.inference import fit_collapsed_gibbs, fit_cvb0
from bnmfzoo.models import beta_dir, dir_dir

SMALL = os.environ.get("BNMFZOO_NOTEBOOK_SMALL", "0") == "1"
K = 40 if SMALL else 100  # truncation level (paper: 100)
TUNE, DRAWS = (400, 200) if SMALL else (4000, 1000)  # paper: 4000 burn-in sweeps, 1000 kept
CVB0_ITER = 200 if SMALL else 500  # paper: 500
DATA = os.environ.get("BNMFZOO_DATA")

# %% [markdown]
# ## Data and a held-out split
#
# `load_nbmf` returns the matrix as the authors stored it: rows are animals, columns are
# attributes. `holdout_mask` draws a test set of 25 % of the entries, keeping every row and
# column observed in the training part.

# %%
V = load_nbmf("animals", data_home=DATA)
train, test = holdout_mask(V, 0.25, random_seed=0)
V_train = V.where(train)
density = float(V.mean())
constant = -(density * np.log(density) + (1 - density) * np.log(1 - density))
print(f"V: {V.shape}, density {density:.3f}, test entries {int(test.sum())}")
print(f"perplexity of the constant predictor: {constant:.3f} nats (digest: 0.658)")

# %% [markdown]
# ## Beta-Dir, nonparametric prior, two algorithms
#
# `beta_dir(..., nonparametric=True)` divides the Dirichlet concentration by `K`. The model is
# an ordinary `pm.Model` (it could be sampled by `pm.sample(step=CollapsedGibbsBetaDir())`);
# `fit_collapsed_gibbs` runs the same chain without PyMC's per-step overhead and keeps the
# Rao-Blackwellized predictive mean.

# %%
model = beta_dir(V_train, K, nonparametric=True)
t0 = time.perf_counter()
dt_vb = fit_cvb0(model, max_iter=CVB0_ITER, random_seed=0, progressbar=False)
t_vb = time.perf_counter() - t0
t0 = time.perf_counter()
dt_gs = fit_collapsed_gibbs(model, tune=TUNE, draws=DRAWS, thin=2, random_seed=0,
                            progressbar=False)
t_gs = time.perf_counter() - t0
t0 = time.perf_counter()
dt_dd = fit_collapsed_gibbs(dir_dir(V_train, K, nonparametric=True), tune=TUNE, draws=DRAWS,
                            thin=2, random_seed=0, progressbar=False)
t_dd = time.perf_counter() - t0

rows = [("Beta-Dir CVB0", dt_vb, t_vb), ("Beta-Dir Gibbs", dt_gs, t_gs),
        ("Dir-Dir Gibbs", dt_dd, t_dd)]
print(f"{'method':<16}{'perplexity':>11}{'active K':>10}{'seconds':>9}")
for name, dt, sec in rows:
    print(f"{name:<16}{perplexity(dt, V, mask=test):>11.3f}{active_components(dt):>10d}"
          f"{sec:>9.1f}")

# %% [markdown]
# Both Beta-Dir fits predict the held-out entries far better than the constant predictor, and
# each uses only a handful of the `K` components (a component is active when it holds at least
# 1 % of the assignments). Dir-Dir collapses to one or two components and predicts no better
# than the constant: the paper saw the same on parliament (Dir-Dir Gibbs: two active
# components and a training NLL of 8,930 against 4,863 for Beta-Dir Gibbs; only one party was
# separated from the rest). The paper's held-out comparisons (Fig. 10) are boxplots over 10
# splits; the full runs are in `benchmarks/reproduce/lumbreras2020/prediction.py` and
# `parliament.py`.
#
# ## Convergence of CVB0 and of the sampler

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3))
nll = dt_vb["variational"]["nll"].values
axes[0].plot(np.arange(1, nll.size + 1), nll)
axes[0].set_xlabel("CVB0 iteration")
axes[0].set_ylabel("training NLL")
axes[0].set_xscale("log")
axes[1].plot(dt_gs["sample_stats"]["n_active"].values[0], label="Beta-Dir")
axes[1].plot(dt_dd["sample_stats"]["n_active"].values[0], label="Dir-Dir")
axes[1].set_xlabel("kept draw")
axes[1].set_ylabel("active components")
axes[1].legend()
fig.tight_layout()

# %% [markdown]
# ## The dictionary
#
# The posterior means `E[A | V]` and `E[W | V]` of the Gibbs run (the paper's Eqs. 30-31).
# Each active component is a group of animals (rows of `A`) with a profile of attributes
# (rows of `W`); we list the heaviest animals and the most probable attributes.

# %%
A = dt_gs["rao_blackwell"]["A_mean"].values
W = dt_gs["rao_blackwell"]["W_mean"].values
mass = A.mean(axis=0)
order = [k for k in np.argsort(mass)[::-1] if mass[k] >= 0.01]
animals = np.asarray(V["row"].values)
attributes = np.asarray(V["col"].values)
for k in order:
    top_animals = ", ".join(animals[np.argsort(A[:, k])[::-1][:5]])
    top_attr = ", ".join(attributes[np.argsort(W[k])[::-1][:6]])
    print(f"component {k:3d} (mass {mass[k]:.2f})\n  animals:    {top_animals}\n"
          f"  attributes: {top_attr}")

# %%
by_comp = np.argsort(np.argmax(A[:, order], axis=1), kind="stable")
fig, axes = plt.subplots(1, 2, figsize=(10, 6), gridspec_kw={"width_ratios": [1, 3]})
axes[0].imshow(A[by_comp][:, order], aspect="auto", cmap="gray_r", vmin=0, vmax=1)
axes[0].set_yticks(range(len(animals)))
axes[0].set_yticklabels(animals[by_comp], fontsize=6)
axes[0].set_xticks(range(len(order)))
axes[0].set_xticklabels(order, fontsize=7)
axes[0].set_xlabel("component")
axes[0].set_title("A: animals x components")
axes[1].imshow(W[order], aspect="auto", cmap="gray_r", vmin=0, vmax=1)
axes[1].set_yticks(range(len(order)))
axes[1].set_yticklabels(order, fontsize=7)
axes[1].set_xticks(range(len(attributes)))
axes[1].set_xticklabels(attributes, rotation=90, fontsize=5)
axes[1].set_title("W: P(attribute | component)")
fig.tight_layout()

# %% [markdown]
# The components are readable groups (e.g. land predators, hoofed herbivores, sea mammals,
# small nocturnal animals), and each profile lists the attributes that define the group —
# the kind of interpretable dictionary the paper shows for its data sets. CVB0 reaches a
# similar held-out perplexity and number of active components; it is a deterministic point
# estimate of the collapsed posterior, so unlike Gibbs it says nothing about the uncertainty
# in the assignments.
