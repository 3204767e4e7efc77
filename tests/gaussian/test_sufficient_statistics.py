"""Sufficient statistics kept up to date by the sweeps equal the ones recomputed from scratch.

The Gibbs kernels keep running statistics instead of recomputing them (the residual ``x - A W``
on the observed entries, its squared error, the collapsed samplers' count tables). A statistic
left stale after an update is a classic sampler bug that a statistical test sees only slowly (a
stale residual makes the SBC chains drift until they hit their sweep cap; issue #36's mutation
check). Here: a few sweeps on small data with missing entries, then the kept statistic against
the one recomputed from the current parameters. Deterministic, well under a second.
"""

import numpy as np
import pytest

from bnmfzoo.inference.binary._core import (
    BetaDirChain,
    DirDirChain,
    betadir_counts,
    dirdir_counts,
    observed_entries,
)
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.models._spec import GaussianHyper


def _gauss_data(rng, D=7, N=6):
    X = rng.exponential(size=(D, 2)) @ rng.exponential(size=(2, N)) + rng.normal(size=(D, N))
    X[rng.random((D, N)) < 0.3] = np.nan
    X[0, 0] = 1.0  # (keeps every row and column observed at this seed)
    return X


@pytest.mark.parametrize("kernel", ["residual", "gram"])
def test_nmf_sweep_keeps_the_residual_current(kernel):
    rng = np.random.default_rng(0)
    obs = gc.observed_entries(_gauss_data(rng))
    hyper = GaussianHyper(lambda_A=1.0, lambda_W=1.0, alpha_tau=2.0, beta_tau=2.0, ard=True,
                          alpha0=2.0, beta0=2.0)
    st = gc.nmf_state(rng.exponential(size=(7, 3)), rng.exponential(size=(3, 6)), 1.0,
                      np.ones(3), obs)
    for _ in range(5):
        gc.nmf_sweep(st, obs, hyper, rng, kernel=kernel)
        fresh = gc.nmf_residual(st.A, st.W, obs)
        np.testing.assert_allclose(st.resid, fresh, rtol=1e-9, atol=1e-9)
        assert st.sse == pytest.approx(float(fresh @ fresh), rel=1e-9)


def test_nmtf_sweep_keeps_the_residual_current():
    rng = np.random.default_rng(1)
    obs = gc.observed_entries(_gauss_data(rng))
    hyper = GaussianHyper(lambda_F=1.0, lambda_S=1.0, lambda_G=1.0, alpha_tau=2.0,
                          beta_tau=2.0)
    st = gc.nmtf_state(rng.exponential(size=(7, 2)), rng.exponential(size=(2, 3)),
                       rng.exponential(size=(6, 3)), 1.0, None, None, obs)
    for _ in range(5):
        gc.nmtf_sweep(st, obs, hyper, rng)
        np.testing.assert_allclose(st.resid, gc.nmtf_residual(st.F, st.S, st.G, obs),
                                   rtol=1e-9, atol=1e-9)


def test_collapsed_sweeps_keep_the_counts_current():
    rng = np.random.default_rng(2)
    V = (rng.random((6, 5)) < 0.4).astype(float)
    V[rng.random(V.shape) < 0.2] = np.nan
    mask = ~np.isnan(V)
    rows, cols, v = observed_entries(np.nan_to_num(V), mask)
    K = 3
    bd = BetaDirChain(rows, cols, v, 6, 5, np.full(K, 0.7), np.full(K, 1.3), np.full(K, 0.8), rng)
    # Dir-Dir with the paper's sequential zero update and with the blocked one
    dds = [DirDirChain(rows, cols, v, 6, 5, np.full(K, 0.7), np.full(K, 1.2), rng,
                       blocked_zeros=blocked) for blocked in (False, True)]
    for beta in (1.0, 0.5, 1.0):  # the tempered sweeps too
        for _ in range(3):
            bd.sweep(rng, beta)
            for dd in dds:
                dd.sweep(rng, beta)
        for kept, fresh in zip((bd.L, bd.C1, bd.C0), betadir_counts(rows, cols, v, bd.z, 6, 5,
                                                                    K)):
            np.testing.assert_array_equal(kept, fresh)
        for dd in dds:
            for kept, fresh in zip((dd.L, dd.Q), dirdir_counts(rows, cols, dd.z, dd.c, 6, 5,
                                                               K)):
                np.testing.assert_array_equal(kept, fresh)
            assert np.all((dd.z == dd.c) == (v == 1))
