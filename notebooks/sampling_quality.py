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
# # Does the sampler explore? Sampling quality for Bayesian NMF
#
# Masood, Pan & Doshi-Velez (2016) ask whether MCMC on Bayesian NMF explores more than one
# mode. On Laurberg's 6 x 6 matrix with `a = 0.5` there are exactly two exact factorizations,
# 36.87 degrees apart. We compare reference sets (*One Mode*: perturb-and-refactor around one
# solution; *All Modes*: around a randomly chosen one), a Gibbs chain, the paper's HMC, and random
# restarts (raw and filtered by fit), with the paper's metrics: log-likelihood, IAT, maximum
# and mean pairwise distance (max angle, min-matching l1) and covering curves.
#
# Then we run RRT exploration with online nonparametric VI (Masood & Doshi-Velez 2016) on a
# uniform-noise model, which keeps several distinct factorizations with honest weights.
#
# The protocol is written out below with the public API (no helper from `benchmarks/`); the
# full reproduction — ten repetitions on all six data sets of the paper, with its tables — is
# the sampling-quality benchmark in `benchmarks/` (results in `benchmarks/RESULTS.md`).
#
# Set `BNMFZOO_NOTEBOOK_SMALL=1` for a quick run (fewer samples, no HMC).

# %%
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
from sklearn.decomposition import NMF
from sklearn.exceptions import ConvergenceWarning

from bnmfzoo.datasets import laurberg
from bnmfzoo.diagnostics import angle_distance, covering_curve, pairwise_distances
from bnmfzoo.diagnostics.coverage import plot_covering_curves
from bnmfzoo.inference import GibbsNMF, fit_rrt
from bnmfzoo.models import exponential_gaussian, recognize, uniform_noise

SMALL = os.environ.get("BNMFZOO_NOTEBOOK_SMALL", "0") == "1"
N_DRAWS = 800 if SMALL else 5000  # Gibbs and HMC draws (paper: 10,000)
N_BASE = 300 if SMALL else 1000  # One/All-Modes samples
N_RESTARTS = 80 if SMALL else 500
N_COVER = 200 if SMALL else 1000  # samples used for pairwise distances and covering
HMC = not SMALL
SIGMA = 1e-3  # noise sd: not stated in the paper; 1e-3 gives its One-Mode spread (0.185 deg)
LAMBDA = 1.0  # exponential prior rate of A and W (not stated; irrelevant at this noise level)

# %% [markdown]
# ## The data and the sample sets
#
# Laurberg's matrix `laurberg(0.5)` (6 x 6, rank 3) has two exact factorizations 36.87 degrees
# apart. One repetition of the protocol adds noise `X~ = X + sigma N(0, 1)` and builds, on the
# same `X~`:
#
# * **One Mode** / **All Modes**: perturb-and-refactor — each sample refactors `X~ + sigma E`
#   (clipped at zero) by 100 multiplicative updates started at the first exact solution (One
#   Mode) or at one of the two drawn at random (All Modes): references for "one mode" and "all
#   modes" at the noise level;
# * **Gibbs**: the conjugate Gibbs sampler of Schmidt et al. (`GibbsNMF` in `pm.sample`) on
#   the exponential-Gaussian model with the noise fixed at `sigma`, started at the first
#   All-Modes sample, no burn-in;
# * **HMC** (default size only): PyMC's `HamiltonianMC` on the same model with 100 leapfrog
#   steps per iteration and the step size adapted during 200 tuning iterations, as in the paper;
# * **random restarts** (`rr`) from uniform random starts, and the **filtered** restarts (`rrf`)
#   whose error `|X~ - AW|_F` is at most 10 times the largest error of the Gibbs draws. The
#   paper used Lin's projected-gradient NMF stopped at a tolerance; here scikit-learn's
#   multiplicative updates (`NMF(solver="mu", tol=1e-4)`), which also stop before every run has
#   converged.

# %%
data = laurberg(0.5)
(A1, W1), (A2, W2) = data.solutions
R = data.rank
rng = np.random.default_rng(1)
X = data.X.values + SIGMA * rng.standard_normal(data.X.shape)


def perturb_and_refactor(A0, W0, rng, mu_iters=100):
    """Refactor ``max(X~ + sigma E_i, 0)`` by multiplicative updates from ``(A0[i], W0[i])``."""
    A, W = A0.copy(), W0.copy()
    Y = np.maximum(X[None] + SIGMA * rng.standard_normal((len(A),) + X.shape), 0.0)
    for _ in range(mu_iters):  # Lee & Seung updates for the Frobenius loss, batched
        W *= (A.transpose(0, 2, 1) @ Y) / (A.transpose(0, 2, 1) @ A @ W + 1e-12)
        A *= (Y @ W.transpose(0, 2, 1)) / (A @ (W @ W.transpose(0, 2, 1)) + 1e-12)
    return A, W


sets, seconds = {}, {}
t0 = time.perf_counter()
sets["one_mode"] = perturb_and_refactor(np.repeat(A1[None], N_BASE, 0),
                                        np.repeat(W1[None], N_BASE, 0), rng)
pick = rng.integers(2, size=N_BASE)
sets["all_modes"] = perturb_and_refactor(np.stack([data.solutions[i][0] for i in pick]),
                                         np.stack([data.solutions[i][1] for i in pick]), rng)
seconds["one_mode"] = seconds["all_modes"] = (time.perf_counter() - t0) / 2

model = exponential_gaussian(np.maximum(X, 0.0), R, sigma=SIGMA, lambda_=LAMBDA)
start = {"A": np.maximum(sets["all_modes"][0][0], 1e-6),
         "W": np.maximum(sets["all_modes"][1][0], 1e-6)}
t0 = time.perf_counter()
with model:
    idata = pm.sample(step=GibbsNMF(), draws=N_DRAWS, tune=0, chains=1, initvals=start,
                      random_seed=2, progressbar=False, compute_convergence_checks=False)
sets["gibbs"] = (idata["posterior"]["A"].values[0], idata["posterior"]["W"].values[0])
seconds["gibbs"] = time.perf_counter() - t0

if HMC:
    t0 = time.perf_counter()
    with model:
        # HamiltonianMC takes min(max_steps, path_length / step_size) leapfrog steps: an
        # unbounded path length makes that exactly 100 whatever the adapted step size.
        step = pm.HamiltonianMC(path_length=1e300, max_steps=100, target_accept=0.65)
        idata_hmc = pm.sample(step=step, draws=N_DRAWS, tune=200, chains=1, initvals=start,
                              random_seed=3, progressbar=False, compute_convergence_checks=False)
    sets["hmc"] = (idata_hmc["posterior"]["A"].values[0], idata_hmc["posterior"]["W"].values[0])
    seconds["hmc"] = time.perf_counter() - t0

t0 = time.perf_counter()
restarts = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # stopping early is the point
    for seed in range(N_RESTARTS):
        nmf = NMF(R, init="random", solver="mu", tol=1e-4, max_iter=1000, random_state=seed)
        restarts.append((nmf.fit_transform(np.maximum(X, 0.0)), nmf.components_))
sets["rr"] = (np.stack([a for a, _ in restarts]), np.stack([w for _, w in restarts]))
seconds["rr"] = time.perf_counter() - t0


def frob_error(A, W):
    """``|X~ - A W|_F`` of every sample."""
    return np.sqrt(((X[None] - A @ W) ** 2).sum(axis=(1, 2)))


limit = 10 * frob_error(*sets["gibbs"]).max()
keep = frob_error(*sets["rr"]) <= limit
sets["rrf"] = (sets["rr"][0][keep], sets["rr"][1][keep])
seconds["rrf"] = seconds["rr"]
print(f"restarts kept by the filter: {keep.sum()} of {keep.size}")

# %% [markdown]
# ## The paper's metrics
#
# * mean log-likelihood `-|X~ - AW|_F^2 / (2 sigma^2)` (no constant, no prior);
# * integrated autocorrelation time (IAT, Sokal's automatic window with `c = 5`), averaged over
#   the entries of `A` and `W` — it measures how correlated successive samples are;
# * the largest and the mean pairwise distance between the first `N_COVER` samples: the
#   maximum angle between matched basis columns (degrees) and the min-matching l1 distance.


# %%
def iat_1d(x, c=5.0):
    """Integrated autocorrelation time of one sequence, Sokal's automatic window."""
    x = np.asarray(x, dtype=float) - np.mean(x)
    n = x.size
    if n < 2 or not np.any(x):
        return 1.0
    f = np.fft.irfft(np.abs(np.fft.rfft(x, 2 * n)) ** 2)[:n]
    taus = 2.0 * np.cumsum(f / f[0]) - 1.0
    ok = np.arange(n) >= c * taus
    return float(taus[int(np.argmax(ok)) if ok.any() else n - 1])


dms, metrics = {}, {}
for m, (A, W) in sets.items():
    if len(A) < 2:
        print(f"{m}: fewer than two samples, skipped")
        continue
    flat = np.concatenate([A.reshape(len(A), -1), W.reshape(len(W), -1)], axis=1)
    dms[m] = {d: pairwise_distances(A[:N_COVER], distance=d) for d in ("angle", "l1")}
    metrics[m] = {
        "n": len(A),
        "loglik": float(np.mean(-(frob_error(A, W) ** 2) / (2 * SIGMA**2))),
        "iat": float(np.mean([iat_1d(flat[:, j]) for j in range(flat.shape[1])])),
        "max_angle": float(dms[m]["angle"].max()),
        "mean_angle": float(dms[m]["angle"].mean()),
        "max_l1": float(dms[m]["l1"].max()),
    }
print(f"{'method':10s} {'n':>6s} {'loglik':>10s} {'IAT':>8s} {'max angle':>10s} "
      f"{'mean angle':>10s} {'max l1':>8s} {'seconds':>8s}")
for m, v in metrics.items():
    print(f"{m:10s} {v['n']:6d} {v['loglik']:10.3g} {v['iat']:8.1f} {v['max_angle']:10.2f} "
          f"{v['mean_angle']:10.2f} {v['max_l1']:8.3f} {seconds[m]:8.1f}")

# %% [markdown]
# The chains (Gibbs and, at the default size, HMC) fit about as well as the reference sets,
# but their spread is a fraction of a degree: they never leave the mode they started in.
# Filtered restarts span both modes. The chains' IAT is in the hundreds at the default size,
# but so would be the IAT of a chain that slowly swept between the modes: IAT measures
# autocorrelation, not coverage.
#
# The covering number `C_eps` (the number of balls of radius `eps` needed to cover a set) as a
# function of `eps`, on one grid for every set (the paper's persistence plots):

# %%
grid = np.linspace(0.0, max(d["angle"].max() for d in dms.values()), 60)
fig, ax = plt.subplots(figsize=(6, 3.5))
for m, d in dms.items():
    c = covering_curve(d["angle"], eps=grid, distance="precomputed").values
    ax.step(grid, c, where="post", label=m)
ax.set_xlabel("eps (max angle, degrees)")
ax.set_ylabel("covering number")
ax.set_yscale("log")
ax.legend()
fig.tight_layout()

# %% [markdown]
# ## RRT + online NVI on a uniform-noise model

# %% [markdown]
# Here the noise is uniform in `[-0.02, 0.02]`; `uniform_noise` sets `epsilon` to the largest
# residual over 10 restarts of Lin's projected-gradient NMF, so every restart is feasible.

# %%
rng = np.random.default_rng(0)
X_u = np.maximum(data.X_clean.values + rng.uniform(-0.02, 0.02, size=(6, 6)), 0.0)
model_u = uniform_noise(X_u, 3, random_seed=0)
dt = fit_rrt(model_u, max_attempts=200 if SMALL else 2000, random_seed=1, progressbar=False)
var = dt["variational"]
print("epsilon", recognize(model_u).epsilon)
print("components", dt.attrs["n_components"], "weights", np.round(var["weight"].values, 3))
for k, A in enumerate(var["A_mean"].values):
    print(f"component {k}: {angle_distance(A, A1):6.2f} deg from solution 1, "
          f"{angle_distance(A, A2):6.2f} deg from solution 2")

# %%
if var.sizes["component"] > 1:
    curve = covering_curve(list(var["A_mean"].values), distance="wad",
                           Ws=list(var["W_mean"].values), n_eps=40)
    fig = plot_covering_curves({"RRT components": curve})
else:
    print("one component kept: the restarts all landed in the same mode")
