"""The blocked sweep samples the same posterior as the library's own Gibbs samplers.

Bitwise equality with the serial chain (``test_blocked_dask.py``) says nothing about whether
that chain is right; here the serial blocked chain is compared with :class:`GibbsPoisson` and
:class:`GibbsNMF` run through ``pm.sample`` on the same model and data. The compared quantities
are the posterior means of every entry of ``A @ W`` (invariant to the factors' order and
scale). For each entry the difference of the two chains' means is divided by its Monte-Carlo
standard error (batch means, 40 batches per chain, both chains' errors added in quadrature);
the largest |z| over the entries must stay below 4.0. Under the null each |z| exceeds 4.0 with
probability about 6e-5, so with at most 120 entries the false-failure rate is below 1% by
Bonferroni (the entries are correlated, which only lowers it).
"""

import numpy as np
import pymc as pm
import pytest

import bnmfzoo as bz
from bnmfzoo.inference.blocked import fit_blocked_gibbs

DRAWS, TUNE = 4000, 500


def _batch_se(x, n_batches=40):
    """Monte-Carlo standard error of the mean of each column of ``x`` by batch means."""
    n = x.shape[0] // n_batches * n_batches
    means = x[:n].reshape(n_batches, -1, *x.shape[1:]).mean(axis=1)
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


def _products(A, W):
    return np.einsum("sik,skj->sij", A, W).reshape(A.shape[0], -1)


def _max_z(ours, ref):
    diff = ours.mean(0) - ref.mean(0)
    se = np.sqrt(_batch_se(ours) ** 2 + _batch_se(ref) ** 2)
    return float(np.max(np.abs(diff) / se))


def _reference(model, seed):
    with model:
        idata = pm.sample(draws=DRAWS, tune=TUNE, chains=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    post = idata.posterior
    return post["A"].values[0], post["W"].values[0]


@pytest.mark.slow
def test_poisson_blocked_matches_gibbs_poisson():
    rng = np.random.default_rng(21)
    X = rng.poisson(rng.gamma(1.0, 1.0, (12, 2)) @ rng.gamma(1.0, 1.0, (2, 6)))
    dt = fit_blocked_gibbs(X, 2, draws=DRAWS, tune=TUNE, random_seed=1, block_rows=5,
                           keep_rows=True, a=1.0, b=1.0)
    ours = _products(dt.posterior["A"].values[0], dt.posterior["W"].values[0])
    model = bz.models.poisson(X, 2, a=1.0, b=1.0)
    with model:
        step = bz.inference.GibbsPoisson()
    with model:
        idata = pm.sample(draws=DRAWS, tune=TUNE, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False, step=step)
    ref = _products(idata.posterior["A"].values[0], idata.posterior["W"].values[0])
    assert _max_z(ours, ref) < 4.0


@pytest.mark.slow
def test_gaussian_blocked_matches_gibbs_nmf_with_missing_entries():
    rng = np.random.default_rng(22)
    X = rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 8))
    X += rng.normal(scale=0.5, size=X.shape)
    X[rng.random(X.shape) < 0.2] = np.nan
    dt = fit_blocked_gibbs(X, 2, model="exponential_gaussian", draws=DRAWS, tune=TUNE,
                           random_seed=1, block_rows=5, keep_rows=True, lambda_A=1.0,
                           lambda_W=1.0, alpha_tau=1.0, beta_tau=1.0)
    ours = _products(dt.posterior["A"].values[0], dt.posterior["W"].values[0])
    model = bz.models.exponential_gaussian(X, 2, lambda_A=1.0, lambda_W=1.0, alpha_tau=1.0,
                                           beta_tau=1.0)
    A, W = _reference(model, 2)
    ref = _products(A, W)
    assert _max_z(ours, ref) < 4.0
