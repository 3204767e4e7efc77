"""Mode masses with Monte-Carlo errors: known answers by quadrature and by a Markov chain.

``bnmfzoo.diagnostics.modes`` calls a mode's ``weight`` a posterior mass only when the chains
cross between the modes; its error ``weight_mcse`` comes from batch means of the mode
indicator (:mod:`bnmfzoo.diagnostics._modes.masses`). These tests compare both with exact
answers: a two-state Markov chain (stationary probability and asymptotic variance in closed
form) and a tiny exponential-Gaussian NMF (2 x 2 data, rank 1, fixed noise) whose posterior
mass of any set of basis directions is a 2-D integral, computed here by quadrature, sampled by
the library's ``GibbsNMF``.
"""

import math
import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

from bnmfzoo.diagnostics._modes.masses import (
    batch_means_mcse,
    indicator_rhat,
    mode_masses,
    visits,
)

# ------------------------------------------------------------------------------------------
# a two-state Markov chain: p = a / (a + b), asymptotic variance p (1 - p) (1 + l) / (1 - l)
# ------------------------------------------------------------------------------------------


def _two_state(rng, a, b, C, S, reps):
    """``reps`` runs of C stationary two-state chains of length S: (reps, C, S) of 0/1."""
    p = a / (a + b)
    x = np.empty((reps, C, S), dtype=np.int8)
    x[..., 0] = rng.random((reps, C)) < p
    u = rng.random((reps, C, S))
    for s in range(1, S):
        prev = x[..., s - 1]
        x[..., s] = np.where(prev == 1, u[..., s] >= b, u[..., s] < a)
    return x


def test_batch_means_mcse_matches_the_exact_error_of_a_markov_chain():
    """A two-state chain with P(0 -> 1) = 0.01, P(1 -> 0) = 0.04 (stationary mass 0.2 of
    state 1, visits ~40 draws long, integrated autocorrelation time 1.95 / 0.05 = 39): over
    400 replicate runs of 4 chains x 4000 draws, the batch-means MCSE averages the exact
    asymptotic error within 15 % (its own sampling spread over 400 runs is ~1 %; batch means
    are biased low by about (tau / L) ~ 5 % at batches of L = 800 draws), and
    ``|mean - p| <= 2 MCSE`` holds in 95 % +- 5 % of the runs (binomial sd over 400 runs 1.1 %;
    t with 19 dof gives 94 %). Seeds 0-19 of this generator: 0/20 failures."""
    rng = np.random.default_rng(0)
    a, b, C, S, reps = 0.01, 0.04, 4, 4000, 400
    p = a / (a + b)
    lam = 1.0 - a - b
    exact = math.sqrt(p * (1 - p) * (1 + lam) / (1 - lam) / (C * S))
    x = _two_state(rng, a, b, C, S, reps)
    est = x.mean(axis=(1, 2))
    se = np.array([batch_means_mcse(x[r]) for r in range(reps)])
    assert abs(se.mean() / exact - 1) < 0.15
    assert abs(est.std() / exact - 1) < 0.15  # the exact error is the true spread
    cover = np.mean(np.abs(est - p) <= 2 * se)
    assert 0.90 <= cover <= 1.0


def test_mode_masses_calls_crossing_chains_a_mass_and_others_not():
    """Crossing chains: a mass with MCSE. No chain changes mode: NaN weight and the share of
    chains. Chains that cross but disagree (one chain twice as often in mode 1): indicator
    R-hat above 1.05, flagged unreliable. Deterministic inputs except the chain draws (seed
    fixed; the R-hat of the disagreeing chains is ~1.4, far from 1.05)."""
    rng = np.random.default_rng(1)
    x = _two_state(rng, 0.02, 0.08, 4, 2000, 1)[0]
    out = mode_masses(x, 2)
    assert out["estimator"] == "draws" and out["is_mass"]
    assert np.allclose(out["weight"], [1 - x.mean(), x.mean()])
    assert np.all(out["weight_mcse"] > 0) and out["weight"].sum() == pytest.approx(1.0)
    assert out["n_visits"].min() >= 10 and (out["n_changes"] > 0).all()
    stuck = np.repeat(np.array([0, 0, 1, 1])[:, None], 500, axis=1)
    out = mode_masses(stuck, 2)
    assert out["estimator"] == "share_of_chains" and not out["is_mass"]
    assert np.isnan(out["weight"]).all() and np.allclose(out["share"], 0.5)
    assert "NOT posterior masses" in out["message"] and "ReplicaExchangeGibbs" in out["message"]
    assert indicator_rhat(stuck) == math.inf
    lo = _two_state(rng, 0.02, 0.08, 3, 4000, 1)[0]
    hi = _two_state(rng, 0.08, 0.08, 1, 4000, 1)[0]
    out = mode_masses(np.concatenate([lo, hi]), 2)
    assert out["rhat"].max() > 1.05 and out["estimator"] == "draws_unreliable"
    assert "disagree" in out["message"]
    v, c = visits(np.array([[0, 1, 1, 0, 0, 2]]), 3)
    assert v.tolist() == [2, 1, 1] and c.tolist() == [3]


# ------------------------------------------------------------------------------------------
# a tiny NMF posterior whose masses are 2-D integrals
# ------------------------------------------------------------------------------------------

X_TINY = np.array([[1.0, 0.0], [0.0, 0.9]])
SIGMA, LAM = 0.2, 1.0


def _log_marginal_a(a1, a2):
    """``log p(a | X)`` up to a constant: W integrated out exactly (truncated Gaussians).

    ``x_ij ~ N(a_i w_j, SIGMA^2)``, ``a_i, w_j ~ Exp(LAM)``; for fixed ``a`` the ``w_j`` are
    independent with ``int_0^inf exp(l w - q w^2 / 2) dw = exp(l^2 / 2q) sqrt(2 pi / q)
    Phi(l / sqrt(q))``, ``q = |a|^2 / SIGMA^2``, ``l = a . x_j / SIGMA^2 - LAM``.
    """
    out = -LAM * (a1 + a2)
    q = (a1**2 + a2**2) / SIGMA**2
    for j in range(2):
        l = (a1 * X_TINY[0, j] + a2 * X_TINY[1, j]) / SIGMA**2 - LAM
        out = out + 0.5 * l**2 / q - 0.5 * np.log(q) + log_ndtr(l / np.sqrt(q))
    return out


def _exact_masses(refs):
    """Posterior mass of each reference's cell (basis direction nearest by angle)."""
    n, top = 1600, 4.0  # the mass beyond a_i = 4 is below 1e-4 (checked at top = 6)
    g = (np.arange(n) + 0.5) * top / n
    A1, A2 = np.meshgrid(g, g, indexing="ij")
    lp = _log_marginal_a(A1, A2)
    p = np.exp(lp - lp.max())
    ang = np.arctan2(A2, A1)
    ref_ang = np.array([math.atan2(r[1, 0], r[0, 0]) for r in refs])
    cell = np.abs(ang[..., None] - ref_ang).argmin(-1)
    return np.array([p[cell == k].sum() for k in range(len(refs))]) / p.sum()


@pytest.fixture(scope="module")
def tiny_gibbs():
    import pymc as pm

    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian

    with exponential_gaussian(X_TINY, 1, sigma=SIGMA, lambda_=LAM), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(step=GibbsNMF(), draws=1000, tune=500, chains=4, cores=1,
                         random_seed=7, progressbar=False, compute_convergence_checks=False)


def test_mode_masses_match_quadrature_on_a_tiny_nmf(tiny_gibbs):
    """2 x 2 data, rank 1, noise sd 0.2: the basis direction ``a`` sits near e1 (explaining
    the entry 1.0) or near e2 (0.9), and Gibbs crosses between them through small ``a``
    hundreds of times. ``modes`` cuts the directions into cells around its representatives;
    the exact mass of every cell is a 2-D integral (W integrated out in closed form). Every
    reported weight lies within 4 of its MCSE of the exact mass (batch means with 19 dof:
    P(|t| > 4) < 0.1 % per mode), and the estimator says the weights are masses. Sampler seeds
    1-100 (4 chains x 1000 draws): max |z| over modes above 4 in 1 of 100 runs (z 4.4 there,
    its MCSE low); the test uses seed 7."""
    from bnmfzoo.diagnostics import modes

    m = modes(tiny_gibbs, warn=False)["modes"]
    assert m.attrs["estimator"] == "draws" and m.attrs["weight_is_mass"] == 1
    exact = _exact_masses(m["reference"].values)
    z = (m["weight"].values - exact) / m["weight_mcse"].values
    assert np.all(np.abs(z) < 4.0), (m["weight"].values, exact, z)
    # the fixed partition a1 > a2 (mass 0.8127 by quadrature) through the NumPy core
    A = tiny_gibbs.posterior["A"].values[..., 0]
    out = mode_masses((A[..., 0] > A[..., 1]).astype(int), 2)
    exact1 = 0.8127
    assert abs(out["weight"][1] - exact1) < 4.0 * out["weight_mcse"][1]
