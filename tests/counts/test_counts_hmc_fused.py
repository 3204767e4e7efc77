"""The fused dense gradient of ``HmcPoisson`` (``counts/_hmc_fused.py``) against the reference
forms, its non-finite guards, and the exactness of the kernel built on it.

The transition's invariance with the fused gradient is also checked by the dense cases of
``test_counts_hmc_moves.py`` (the moved prior draws, the leapfrog's second order and SBC run
through it), on matrices too small (4 columns) to reach the vectorized loop bodies; the cases
here use up to 96 columns (the SBS96 catalogues) so that both the SIMD bodies and their
remainders run.
"""

import math

import numpy as np
import pytest

from bnmfzoo.inference.counts._hmc_fused import fused_buffers, grad_fused
from bnmfzoo.inference.counts._hmc_kernels import grad_cells, grad_dense
from bnmfzoo.inference.counts.gibbs._hmc_moves import hmc_transition


def _case(seed, D, N, K, missing=True, offsets=True):
    """Dense counts (about 20 per cell) with missing cells (offset 0, count 0) and offsets in
    [0.5, 2], Gamma priors with random shapes and rates, a random state."""
    rng = np.random.default_rng(seed)
    Of = rng.uniform(0.5, 2.0, (D, N)) if offsets else np.ones((D, N))
    if missing:
        Of[rng.uniform(size=(D, N)) < 0.1] = 0.0
    X = np.where(Of > 0, rng.poisson(20.0, (D, N)), 0).astype(float)
    prior = tuple(rng.uniform(0.5, 2.0, s) for s in ((D, K), (D, K), (N, K), (N, K)))
    tA, tWt = rng.normal(0.5, 0.7, (D, K)), rng.normal(0.5, 0.7, (N, K))
    return X, Of, prior, tA, tWt


def _fused(tA, tWt, X, Of, prior, want_lp=True):
    D, K = tA.shape
    N = tWt.shape[0]
    gA, gWt = np.empty((D, K)), np.empty((N, K))
    lp = grad_fused(tA, tWt, X, Of, *prior, *fused_buffers(D, N, K), gA, gWt, want_lp)
    return lp, gA, gWt


@pytest.mark.parametrize("shape", [(3, 4, 2), (11, 37, 3), (21, 96, 4), (9, 96, 8)])
@pytest.mark.parametrize("missing", [False, True])
def test_fused_gradient_equals_the_reference_forms(shape, missing):
    """Same state, same data: the log density and both gradients of the fused pass equal the
    three-product form (``grad_dense``, ``beta = 1``) and the loop over the observed cells
    (``grad_cells``) to 1e-10 relative, with offsets and with and without missing cells, at
    sizes whose column loops run their SIMD bodies and remainders; without ``want_lp`` the
    gradient is the same and the value 0. Deterministic (the sums differ only in order)."""
    D, N, K = shape
    for seed in range(3):
        X, Of, prior, tA, tWt = _case(seed, D, N, K, missing=missing)
        lp, gA, gWt = _fused(tA, tWt, X, Of, prior)
        gA_d, gWt_d = np.empty((D, K)), np.empty((N, K))
        lp_d = grad_dense(tA, tWt, X, Of, *prior, 1.0, np.empty((D, K)), np.empty((N, K)),
                          gA_d, gWt_d, True)[0]
        rows, cols = (a.astype(np.int64) for a in np.nonzero(Of > 0))
        gA_c, gWt_c = np.empty((D, K)), np.empty((N, K))
        lp_c = grad_cells(tA, tWt, rows, cols, Of[rows, cols].copy(), X[rows, cols].copy(),
                          *prior, 1.0, np.empty((D, K)), np.empty((N, K)), gA_c, gWt_c, True)
        assert lp == pytest.approx(lp_d, rel=1e-10, abs=1e-8)
        assert lp == pytest.approx(lp_c, rel=1e-10, abs=1e-8)
        for g, ref in ((gA, gA_d), (gWt, gWt_d), (gA, gA_c), (gWt, gWt_c)):
            assert np.allclose(g, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
        lp0, gA0, gWt0 = _fused(tA, tWt, X, Of, prior, want_lp=False)
        assert lp0 == 0.0 and np.array_equal(gA0, gA) and np.array_equal(gWt0, gWt)


def test_fused_gradient_guards():
    """An overflowed mean (finite factors whose product is ``inf``) returns NaN; a mean that
    underflows to 0 at a positive count leaves a non-finite gradient, and the transition then
    reports code 2 (a non-finite start) without moving. A huge but finite state is not
    flagged."""
    D, N, K = 5, 19, 2
    X, Of, prior, tA, tWt = _case(0, D, N, K, missing=False)
    big = tA.copy()
    big[1, :] = 400.0
    bigW = tWt.copy()
    bigW[3, :] = 400.0  # exp(400)^2 = inf in the mean of cell (1, 3)
    lp, gA, gWt = _fused(big, bigW, X, Of, prior, want_lp=False)
    assert math.isnan(lp)
    small, smallW = tA.copy(), tWt.copy()
    small[2, :], smallW[4, :] = -400.0, -400.0  # the mean of cell (2, 4) is 0, its count > 0
    lp, gA, gWt = _fused(small, smallW, X, Of, prior, want_lp=False)
    assert not (np.all(np.isfinite(gA)) and np.all(np.isfinite(gWt)))
    im = (np.full((D, K), 0.3), np.full((N, K), 0.3))
    rows, cols = (a.astype(np.int64) for a in np.nonzero(Of > 0))
    cells = (rows, cols, Of[rows, cols].copy(), X[rows, cols].copy(), X, Of)
    before = small.copy()
    code, _ = hmc_transition(small, smallW, np.ones((D, K)), np.ones((N, K)), *cells, *prior,
                             *im, 0.01, 3, 0.0, np.empty((D, K)), np.empty((N, K)))
    assert code == 2 and np.array_equal(small, before)
    fine = tA + 3.0
    lp, gA, gWt = _fused(fine, tWt, X, Of, prior)
    assert math.isfinite(lp) and np.all(np.isfinite(gA)) and np.all(np.isfinite(gWt))


def test_fused_leapfrog_on_a_catalogue_sized_matrix_is_second_order():
    """On a 21 x 96, K = 4 matrix (the breast catalogue's shape, every SIMD body running): the
    same trajectory time with half the step divides the energy error by about 4, the
    leapfrog's second order, which holds only when the gradient is the log density's (a
    missing term leaves a first-order error, ratio about 2). Deterministic."""
    D, N, K = 21, 96, 4
    X, Of, prior, tA, tWt = _case(5, D, N, K)
    rows, cols = (a.astype(np.int64) for a in np.nonzero(Of > 0))
    cells = (rows, cols, Of[rows, cols].copy(), X[rows, cols].copy(), X, Of)
    # start near the mode: a few hundred small fixed-step transitions from the random state
    rng = np.random.default_rng(0)
    im = (np.full((D, K), 0.02), np.full((N, K), 0.02))
    for _ in range(300):
        hmc_transition(tA, tWt, rng.standard_normal((D, K)), rng.standard_normal((N, K)),
                       *cells, *prior, *im, 0.05, 10, math.log(rng.uniform()),
                       np.empty((D, K)), np.empty((N, K)))
    ratios = []
    for seed in range(6):
        z = np.random.default_rng(100 + seed)
        zA, zW = z.standard_normal((D, K)), z.standard_normal((N, K))
        errs = []
        for eps in (0.02, 0.01):
            _, la = hmc_transition(tA.copy(), tWt.copy(), zA.copy(), zW.copy(), *cells, *prior,
                                   *im, eps, int(round(0.4 / eps)), 0.0, np.empty((D, K)),
                                   np.empty((N, K)))
            errs.append(-la)
        if errs[0] > 0 and errs[1] > 0:
            ratios.append(errs[0] / errs[1])
    assert len(ratios) >= 2, ratios
    assert all(3.0 < r < 5.5 for r in ratios), ratios
