"""Variational Bayes for Poisson NMF: monotone bound, bound <= evidence, rank selection, ARD."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import logsumexp

import bnmfzoo as bz


def _rank2(seed=0, D=30, N=25):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.gamma(2, 2, (D, 2)) @ rng.gamma(2, 1, (2, N)))


@pytest.mark.parametrize("kw", [{}, {"ard": True}, {"hierarchical": True},
                                {"row_offset": np.linspace(0.5, 2, 30), "sparse": True}])
def test_elbo_never_decreases(kw):
    """Coordinate ascent: every iteration's bound >= the previous one (to 1e-9 relative)."""
    kw = dict(kw)
    X = _rank2()
    if kw.pop("sparse", False):
        mask = np.random.default_rng(1).uniform(size=X.shape) < 0.9
        X = sp.csr_array(X)
        kw["mask"] = mask
    dt = bz.inference.fit_vb_poisson(bz.models.poisson(X, 4, **kw), max_iter=300, tol=0.0,
                                     random_seed=0, progressbar=False)
    elbo = dt["variational"]["elbo"].values
    assert elbo.size == 300
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo).min()


def test_bound_below_evidence():
    """On a 2 x 2, K = 1 model the bound lies below log p(X) and within 1 nat of it.

    log p(X) by simple Monte Carlo over 400,000 prior draws (its standard error, about 0.01,
    is far below the 1-nat margin; a bound above log p(X) + 5 se would be a wrong formula).
    """
    X = np.array([[3, 1], [0, 2]])
    dt = bz.inference.fit_vb_poisson(bz.models.poisson(X, 1, a=2.0, b=1.0), tol=1e-12,
                                     max_iter=5000, random_seed=0, progressbar=False)
    elbo = float(dt["variational"]["elbo"].values[-1])
    rng = np.random.default_rng(0)
    S = 400_000
    A = rng.gamma(2.0, 1.0, (S, 2, 1))
    W = rng.gamma(2.0, 1.0, (S, 1, 2))
    ll = stats.poisson.logpmf(X[None], A @ W).sum(axis=(1, 2))
    logz = logsumexp(ll) - np.log(S)
    w = np.exp(ll - ll.max())
    se = np.std(w) / np.sqrt(S) / np.mean(w)
    assert elbo <= logz + 5 * se, (elbo, logz)
    assert elbo >= logz - 1.0, (elbo, logz)


def test_evidence_picks_known_rank():
    """The VB bound is largest at the true rank 2 among 1-4 (3 restarts each)."""
    res = bz.inference.select_rank_poisson(_rank2(3), [1, 2, 3, 4], restarts=3, random_seed=1,
                                           progressbar=False)
    assert res["rank"] == 2, res["elbo"]


def test_ard_switches_off_unused_factors():
    """ARD (Tan & Févotte 2013) at K = 6 on rank-2 data keeps exactly 2 active factors."""
    dt = bz.inference.fit_vb_poisson(
        bz.models.poisson(_rank2(4, D=40, N=40), 6, ard=True, alpha0=1.0, beta0=1.0),
        max_iter=2000, random_seed=0, progressbar=False)
    assert int(dt["variational"]["active"].sum()) == 2, dt["variational"]["share"].values
