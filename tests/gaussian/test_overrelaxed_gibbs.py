"""Exactness of GibbsNMF's mixing moves: overrelaxed updates and the rescaling move.

Three levels: the overrelaxed update of one entry keeps its truncated-normal conditional
(exact conditional), the rescaling move keeps the Exponential prior (invariance: the
likelihood is constant along its orbit), and the whole sweep with both moves, on both
computation paths, keeps the posterior (Geweke's successive-conditional check: a prior draw,
data simulated from it, then sweeps given the data: the result is again a prior draw).
"""

import numba
import numpy as np
import pytest
from scipy import stats

from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep, observed_entries
from bnmfzoo.inference.gaussian.gibbs._mixing import (
    check_overrelax,
    overrelaxed_scaled,
    rescale_factors,
)
from bnmfzoo.inference.kernels.truncnorm import sample_truncnorm
from bnmfzoo.models._spec import GaussianHyper


@numba.njit(cache=True)
def _overrelax_many(x, lin, inv_sd, lam, alpha, n_updates, rng):
    out = x.copy()
    for e in range(out.size):
        for _ in range(n_updates):
            out[e] = overrelaxed_scaled(out[e], lin, inv_sd, lam, alpha, rng)
    return out


#: conditional mean / sd: overrelaxed (3), overrelaxed with frequent rejections (1.05), a fresh
#: exact draw (the truncation matters: -0.5)
CASES = [3.0, 1.05, -0.5]


def _overrelax_pvalues(seed, alpha=-0.9, n=20_000):
    rng = np.random.default_rng(seed)
    p = []
    for z in CASES:
        sd = 0.7
        m = z * sd
        inv_sd = sd  # the kernels' name: prec**-0.5
        lin = m / sd**2  # the conditional's linear term (the prior rate already in it)
        x0 = sample_truncnorm(np.full(n, m), sd, rng)
        law = stats.truncnorm(-m / sd, np.inf, loc=m, scale=sd)
        for k in (1, 4):
            x = _overrelax_many(x0, lin, inv_sd, 2.0, alpha, k, rng)
            p.append(stats.kstest(x, law.cdf).pvalue)
    return np.array(p)


def test_overrelaxed_update_keeps_its_truncated_normal():
    """20,000 exact draws of ``TN(m, 0.7^2)`` on [0, inf), each updated 1 and 4 times by the
    overrelaxed move (alpha = -0.9), for the three branches in ``CASES``: KS against the
    exact law, Bonferroni over the 6 at family-wise 1e-3 (so a false failure has probability
    <= 1e-3; over seeds 0-49 the smallest adjusted p-value was 0.011, no failure). Power: the
    mutations of ``benchmarks/mutation/catalog_gaussian.py`` (no rejection, wrong noise
    scale, ``alpha`` applied around 0 instead of the mean) fail it."""
    p = _overrelax_pvalues(0)
    assert p.min() * p.size > 1e-3, np.sort(p)[:3] * p.size


def test_overrelaxed_update_guards_non_finite_input():
    rng = np.random.default_rng(0)
    x = np.array([np.nan, np.inf, 1.0])
    out = _overrelax_many(x, 3.0, 1.0, 1.0, -0.9, 1, rng)
    assert np.isnan(out[0]) and np.isnan(out[1]) and np.isfinite(out[2])
    assert np.isnan(_overrelax_many(np.ones(1), np.nan, 1.0, 1.0, -0.9, 1, rng)[0])
    assert np.isnan(_overrelax_many(np.ones(1), 1.0, np.nan, 1.0, -0.9, 1, rng)[0])


@pytest.mark.parametrize("bad", [-1.0, 0.5, 2.0, float("nan")])
def test_overrelax_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="overrelax"):
        check_overrelax(bad)
    with pytest.raises(TypeError, match="overrelax"):
        check_overrelax("a lot")


def _rescale_pvalues(seed, n=4000, D=6, N=2):
    rng = np.random.default_rng(seed)
    lam_A, lam_W = np.array([0.5, 2.0]), np.array([1.5, 0.7])
    A = rng.exponential(1.0 / lam_A, size=(n, D, 2))
    Wt = rng.exponential(1.0 / lam_W, size=(n, N, 2))
    for r in range(n):
        a, w = A[r].copy(), Wt[r].copy()
        P = a @ w.T
        rescale_factors(a, w, lam_A, lam_W, rng)
        assert np.allclose(a @ w.T, P, rtol=1e-12)
        A[r], Wt[r] = a, w
    p = []
    for k in range(2):
        for i in range(D):
            p.append(stats.kstest(A[:, i, k], stats.expon(scale=1 / lam_A[k]).cdf).pvalue)
        for j in range(N):
            p.append(stats.kstest(Wt[:, j, k], stats.expon(scale=1 / lam_W[k]).cdf).pvalue)
        p.append(stats.kstest(A[:, :, k].sum(1), stats.gamma(D, scale=1 / lam_A[k]).cdf).pvalue)
        p.append(stats.kstest(Wt[:, :, k].sum(1), stats.gamma(N, scale=1 / lam_W[k]).cdf).pvalue)
    return np.array(p)


def test_rescaling_move_keeps_every_entry_of_the_prior():
    """4000 exact draws of the Exponential prior (D = 6, N = 2, R = 2, distinct rates), one
    rescaling move each (``A W`` unchanged, checked), KS of the 16 entries and 4 sums against
    their exact laws, Bonferroni at family-wise 1e-3. Over seeds 0-49: no failure (smallest
    adjusted p 0.016). A move without the Jacobian (GIG order 0) is caught (mutation)."""
    p = _rescale_pvalues(0)
    assert p.min() * p.size > 1e-3, np.sort(p)[:3] * p.size


def _sweep_pvalues(seed, kernel, n_rep=3000, n_sweeps=4, overrelax=-0.9, rescale=True):
    rng = np.random.default_rng(seed)
    D, N, R = 5, 4, 2
    hyper = GaussianHyper(lambda_A=1.0, lambda_W=1.0, alpha_tau=20.0, beta_tau=1.0)
    mask = np.ones((D, N), dtype=bool)
    mask[0, 1] = mask[3, 2] = False  # missing entries: two patterns on each side
    out = {"A": np.empty((n_rep, D, R)), "W": np.empty((n_rep, R, N)), "tau": np.empty(n_rep)}
    for r in range(n_rep):
        A = rng.exponential(size=(D, R))
        W = rng.exponential(size=(R, N))
        tau = rng.gamma(20.0, 1.0)
        X = A @ W + rng.standard_normal((D, N)) / np.sqrt(tau)
        obs = observed_entries(X, mask)
        st = nmf_state(A, W, tau, None, obs)
        for _ in range(n_sweeps):
            nmf_sweep(st, obs, hyper, rng, kernel=kernel, overrelax=overrelax, rescale=rescale)
        out["A"][r], out["W"][r], out["tau"][r] = st.A, st.W, st.tau
    expon = stats.expon().cdf
    p = [stats.kstest(v, expon).pvalue for v in out["A"].reshape(n_rep, -1).T]
    p += [stats.kstest(v, expon).pvalue for v in out["W"].reshape(n_rep, -1).T]
    p.append(stats.kstest(out["tau"], stats.gamma(20.0).cdf).pvalue)
    return np.array(p)


@pytest.mark.parametrize("kernel", ["residual", pytest.param("gram", marks=pytest.mark.slow)])
def test_overrelaxed_sweep_keeps_the_posterior(kernel):
    """Geweke's successive-conditional check of the whole default sweep (overrelaxed updates,
    rescaling, tau) on both paths: 3000 draws (A, W, tau) from the prior (D = 5, N = 4,
    R = 2, two missing entries, tau ~ Gamma(20, 1): informative data, so most updates take
    the overrelaxed branch), X simulated from each, 4 sweeps given X; the results must follow
    the prior again. KS of the 18 entries and tau against their prior laws, Bonferroni at
    family-wise 1e-3 (false failures <= 1e-3; residual path over seeds 0-19: no failure,
    smallest adjusted p 0.059; the Gram path's rate not measured). About 3 CPU s (residual
    path); the Gram path builds its pattern structures for every data set (about 15 CPU s:
    slow), and the fast test below shows it gives the same chain as the residual path."""
    p = _sweep_pvalues(0, kernel)
    assert p.min() * p.size > 1e-3, np.sort(p)[:3] * p.size


def test_default_sweep_changes_only_by_the_moves():
    """With ``overrelax=0, rescale=False`` the sweep is Brouwer et al.'s (same draws as the
    default call of ``nmf_sweep``); with the moves the draws differ but ``A W`` on the
    observed entries still matches the kept residual."""
    X = np.random.default_rng(0).exponential(size=(7, 5))
    obs = observed_entries(X)
    hyper = GaussianHyper(lambda_A=1.0, lambda_W=1.0)
    runs = []
    for kw in ({}, {"overrelax": 0.0, "rescale": False}, {"overrelax": -0.9, "rescale": True}):
        st = nmf_state(np.ones((7, 2)), np.ones((2, 5)), 1.0, None, obs)
        rng = np.random.default_rng(3)
        for _ in range(5):
            nmf_sweep(st, obs, hyper, rng, **kw)
        np.testing.assert_allclose(st.resid, X.ravel() - (st.A @ st.W).ravel(), atol=1e-10)
        runs.append(st.A.copy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])


def test_gram_and_residual_paths_give_the_same_overrelaxed_chain():
    """The overrelaxed updates and the rescaling move draw the same values on both paths
    (block-missing data: several row and column patterns), to rounding."""
    rng = np.random.default_rng(2)
    X = rng.exponential(size=(30, 12)) + 1.0
    X[:10, :4] = np.nan
    X[20:, 8:] = np.nan
    obs = observed_entries(X)
    hyper = GaussianHyper(lambda_A=0.5, lambda_W=0.5)
    A0, W0 = rng.exponential(size=(30, 3)), rng.exponential(size=(3, 12))
    chains = {}
    for kernel in ("gram", "residual"):
        st = nmf_state(A0, W0, 1.0, None, obs)
        gen = np.random.default_rng(3)
        trace = []
        for _ in range(10):
            nmf_sweep(st, obs, hyper, gen, kernel=kernel, overrelax=-0.9, rescale=True)
            trace.append(np.concatenate([st.A.ravel(), st.W.ravel(), [st.tau, st.sse]]))
        chains[kernel] = np.array(trace)
        chains[kernel + " next"] = gen.random()
    np.testing.assert_allclose(chains["gram"], chains["residual"], rtol=1e-8)
    assert chains["gram next"] == chains["residual next"]
