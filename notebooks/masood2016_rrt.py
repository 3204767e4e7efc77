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
# # Exploring the NMF solution set with a rapidly-exploring random tree (Masood & Doshi-Velez 2016)
#
# NMF is not identifiable: `A W = (A Q)(Q^-1 W)` for every `Q` that keeps both factors
# non-negative. MCMC (Gibbs, HMC) and standard nonparametric VI stay near the mode they start
# in. Masood & Doshi-Velez search the change-of-basis matrices `Q` on the *oblique manifold*
# (unit-norm columns) with a **rapidly-exploring random tree** (RRT) started from the truncated
# SVD and a few restarts, and feed every feasible factorization it finds to an **online
# nonparametric VI** (ONVI): a mixture of isotropic Gaussians that accepts a candidate only
# if it raises the ELBO by a threshold.
#
# The paper's claims that we check at a small scale:
# * with a **uniform-noise** likelihood (every factorization within `epsilon` of the data is
#   equally likely), RRT+ONVI keeps several distinct factorizations, while the samplers
#   never leave their starting mode: on Laurberg's two-mode matrix (Fig. 4, persistence plot)
#   the covering number of HMC/NVI falls to 1 below 0.01 degrees, RRT+ONVI's does not;
# * the ELBO only increases as components are accepted (Tables 1-3: RRT+ONVI has the highest
#   ELBO);
# * with a **Gaussian** likelihood the expectation term (the fit) dominates the ELBO, so ONVI
#   keeps only components that fit about as well as the best one; on the paper's real data
#   sets that was a single component.
#
# The full-size ELBO tables (faces, ALL/AML) are in the RRT benchmark of `benchmarks/` (results
# in `benchmarks/RESULTS.md`).

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

from bnmfzoo.datasets import continuum, laurberg
from bnmfzoo.diagnostics import angle_distance, covering_curve, covering_number
from bnmfzoo.diagnostics.coverage import plot_covering_curves
from bnmfzoo.inference import GibbsNMF, fit_rrt
from bnmfzoo.models import exponential_gaussian, recognize, uniform_noise
from bnmfzoo.plots import plot_elbo

SMALL = os.environ.get("BNMFZOO_NOTEBOOK_SMALL", "0") == "1"
ATTEMPTS = 200 if SMALL else 2000  # RRT extension attempts (paper: until 5000 candidates)
N_GIBBS = 300 if SMALL else 3000

# %% [markdown]
# ## Laurberg's matrix with two exact factorizations
#
# `laurberg(0.5)` is 6 x 6 of rank 3 with exactly two non-negative factorizations, 36.87
# degrees apart; we add noise of standard deviation 1e-3 (not stated in the paper; this value
# reproduces the One-Mode spread of 0.185 degrees in Masood, Pan & Doshi-Velez 2016). The
# uniform-noise model takes `epsilon` as the largest residual over 10 restarts of Lin's
# projected-gradient NMF, so that every restart is feasible; the restarts are the tree's base
# nodes (paper §4.3) and land in either mode.
#
# The exponential prior's rate is not given in the paper. Its Table 3 shows that, under the
# uniform likelihood, the quality term `E_q[log p]` hardly differs between feasible
# factorizations: the ELBO gaps between methods are those of the entropy term alone (Reuters:
# RRT − HMC = 1.792 = ln 6 with 6 RRT components). We therefore take a weak prior
# (`lambda_=1e-6`), so that every feasible factorization has (almost) the same quality and the
# entropy term decides, as in the paper. With `lambda_=1` the prior differs by a fraction of a
# nat between restarts and ONVI keeps only the restarts that beat the components it already
# holds (on this matrix: both modes for two of three seeds of the restarts).

# %%
data = laurberg(0.5, sigma=1e-3, random_seed=0)
X = np.maximum(data.X.values, 0.0)
R = 3
(A1, W1), (A2, W2) = data.solutions
print(f"angle between the two exact solutions: {angle_distance(A1, A2):.2f} degrees")

model_u = uniform_noise(X, R, lambda_=1e-6, random_seed=0)
print(f"epsilon = {recognize(model_u).epsilon:.4g}")
t0 = time.perf_counter()
dt_rrt = fit_rrt(model_u, max_attempts=ATTEMPTS, n_draws=500, random_seed=0, progressbar=False)
print(f"RRT+ONVI: {time.perf_counter() - t0:.1f} s, ELBO {dt_rrt.attrs['elbo']:.3f}, "
      f"{dt_rrt.attrs['n_components']} components")

# %% [markdown]
# The mixture components, their weights, and their angle to each exact solution:

# %%
var = dt_rrt["variational"]
print(f"{'component':>9}{'weight':>8}{'angle to sol. 1':>17}{'angle to sol. 2':>17}")
for m, (w, A) in enumerate(zip(var["weight"].values, var["A_mean"].values)):
    print(f"{m:>9d}{w:>8.3f}{angle_distance(A, A1):>17.2f}{angle_distance(A, A2):>17.2f}")

# %%
near = [[angle_distance(A, S) < 1.0 for A in var["A_mean"].values] for S in (A1, A2)]
n_nodes = int(dt_rrt["diagnostics"]["n_nodes_added"])
print(f"components within 1 degree of solution 1: {sum(near[0])}, of solution 2: {sum(near[1])}")
print(f"tree nodes added beyond the {int(dt_rrt['diagnostics']['n_restarts'])} restarts: "
      f"{n_nodes}")

# %% [markdown]
# As in the paper's Fig. 3, the mixture holds several distinct factorizations and, since the
# base nodes fall in both modes, components at both exact solutions, sharing the weight almost
# equally (they are equally good under a uniform likelihood, so the entropy term of the ELBO
# decides: k separated equal components add ln k). The tree itself adds few nodes or none
# (line above): with `epsilon` at the noise level the feasible region around each solution is
# thin, and steps from 0.01 on the oblique manifold do not cross the 36.87 degrees between the
# modes.
#
# ### The paper's harder start: one exact solution, the tree alone
#
# The paper's Fig. 3 run starts the tree at a single analytical solution. With a wider box
# (`epsilon=0.05`) the tree walks away from it, and ONVI accepts the nodes that are separated
# from the components it holds (by about `sigma` per coordinate, the reference criterion):
# components distinct from the initialisation, within a few degrees of it.

# %%
model_1 = uniform_noise(X, R, epsilon=0.05, lambda_=1e-6)
dt_1 = fit_rrt(model_1, restarts=[(A1, W1)], max_attempts=300, n_draws=100, random_seed=0,
               progressbar=False)
A_1 = dt_1["variational"]["A_mean"].values
print(f"{int(dt_1['diagnostics']['n_nodes_added'])} tree nodes, {len(A_1)} components; "
      "angle of each component to the start (degrees):",
      np.round([angle_distance(A, A1) for A in A_1], 2))
print("covering number of the components at 0.1, 1, 3 degrees:",
      covering_number(list(A_1), [0.1, 1.0, 3.0]))

# %% [markdown]
# The ELBO trace as ONVI processes candidates: it never decreases, because a candidate is
# accepted only when it raises the ELBO by at least the threshold.

# %%
fig = plot_elbo(var["elbo_trace"].values, label="RRT+ONVI (uniform)")
fig.axes[0].set_xlabel("candidate accepted or rejected")
trace = var["elbo_trace"].values
print("ELBO non-decreasing:", bool(np.all(np.diff(trace) >= -1e-9)))

# %% [markdown]
# ## Baseline: a Gibbs chain
#
# The sampler the paper compares with (HMC there; the conjugate Gibbs sampler of Schmidt et
# al. here) on the Gaussian model with the noise fixed at the data's noise level, started at
# the first exact solution. `GibbsNMF` is a PyMC step method, so this is plain `pm.sample`.

# %%
model_g = exponential_gaussian(X, R, sigma=1e-3, lambda_=1.0)
with model_g:
    idata_gibbs = pm.sample(
        step=GibbsNMF(), draws=N_GIBBS, tune=100, chains=1, nuts_sampler="pymc",
        initvals={"A": np.maximum(A1, 1e-6), "W": np.maximum(W1, 1e-6)},
        random_seed=1, progressbar=False, compute_convergence_checks=False,
    )
A_gibbs = idata_gibbs["posterior"]["A"].values[0]
A_rrt = dt_rrt["posterior"]["A"].values[0]
print(f"Gibbs draws: largest angle to solution 1 {max(angle_distance(A, A1) for A in A_gibbs):.3f}"
      f", smallest angle to solution 2 {min(angle_distance(A, A2) for A in A_gibbs):.2f} degrees")

# %% [markdown]
# ## Persistence plot (the paper's Fig. 4)
#
# The covering number `C_eps` is the number of balls of radius `eps` (maximum angle between
# matched basis columns, in degrees) needed to cover a set of samples. A set that stays in one
# mode falls to 1 at a small `eps`; one that holds both modes stays at 2 until `eps` reaches
# the distance between them.

# %%
eps = np.logspace(-3, 2, 60)
curves = covering_curve({"RRT+ONVI draws": A_rrt, "Gibbs draws": A_gibbs}, eps=eps,
                        distance="angle")
fig = plot_covering_curves(curves, logx=True, title="Laurberg a = 0.5")
for name in ("RRT+ONVI draws", "Gibbs draws"):
    print(f"{name:<16} C_eps at 1, 10, 30 degrees:",
          covering_number(A_rrt if name.startswith("RRT") else A_gibbs, [1.0, 10.0, 30.0]))

# %%
both = all(any(row) for row in near)
c_rrt = int(covering_number(A_rrt, [30.0])[0])
c_gibbs = int(covering_number(A_gibbs, [1.0])[0])
print(f"RRT+ONVI mixture holds both modes: {both}; C_eps of its draws at 30 degrees: {c_rrt}; "
      f"of the Gibbs draws at 1 degree: {c_gibbs}")
# the paper's claim, checked (the notebook test fails if it does not hold)
assert both and c_rrt >= 2 and c_gibbs == 1

# %% [markdown]
# The Gibbs chain's covering number is 1 beyond a fraction of a degree: it never leaves the
# mode it started in (it spreads over a few tenths of a degree at this noise level), as the
# paper reports for HMC. The RRT+ONVI curve stays at 2 or more
# until `eps` reaches the 36.87 degrees between the exact solutions (Fig. 4: only RRT+ONVI
# stays above 1).
#
# ## A continuum of solutions, Gaussian likelihood
#
# `continuum()` is a 7 x 9 matrix of rank 6 whose exact factorizations form a one-parameter
# family `A_delta`, `delta` in [0, 1]. Under a Gaussian likelihood with a small fixed noise
# the tree walks away from its restarts across this family; ONVI keeps a candidate only if
# it raises the ELBO by the threshold. Here every member of the family fits the data equally
# well, so — unlike on the paper's real data, where solutions differ in fit and one component
# wins — several components survive with near-equal weights.

# %%
cont = continuum(sigma=1e-3, random_seed=0)
Xc = np.maximum(cont.X.values, 0.0)
model_c = exponential_gaussian(Xc, cont.A.shape[1], sigma=0.01, lambda_=1.0)
t0 = time.perf_counter()
dt_c = fit_rrt(model_c, max_attempts=ATTEMPTS, n_restarts=10, n_draws=200, random_seed=0,
               progressbar=False)
print(f"RRT+ONVI (Gaussian): {time.perf_counter() - t0:.1f} s, "
      f"{int(dt_c['diagnostics']['n_nodes_added'])} tree nodes added, "
      f"{dt_c.attrs['n_components']} components")
means = dt_c["variational"]["A_mean"].values
family = [A for A, _ in cont.solutions]
nearest = [min(angle_distance(A, S) for A in means) for S in family]
print("angle from A_delta (delta = 0, 0.1, ..., 1) to the nearest component:")
print(np.round(nearest, 2))
print("weights:", np.round(dt_c["variational"]["weight"].values, 3))
covered = np.linspace(0, 1, len(family))[np.asarray(nearest) < 5.0]
print(f"members within 5 degrees of a component: delta = {np.round(covered, 1)}")

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(np.linspace(0, 1, len(family)), nearest, "o-")
ax.set_xlabel("delta")
ax.set_ylabel("angle to nearest component (deg)")
ax.set_title("continuum: which members of the family RRT+ONVI kept")
fig.tight_layout()

# %% [markdown]
# The kept components share the weight almost equally, and each member of the family that they
# cover is within a few degrees of one of them (the `delta`s printed above); within this budget
# of tree extensions they cover only part of the family, and the members beyond it are tens
# of degrees from every component: the mixture shows a range of equally good
# factorizations, not the whole continuum.
