"""HMC on sparse counts with the gradient over the nonzero cells only
(:func:`bnmfzoo.inference.counts._hmc_kernels.grad_sparse`): the log density and gradient equal
the loop over every observed cell (missing cells, non-unit offsets), a finite-difference check,
NaN on non-finite input, the form ``hmc_cells`` chooses and the work ``leap_cap`` counts, and
the HMC chain with it agreeing with the all-cells chain draw for draw."""

import math

import numpy as np
import pytest

from bnmfzoo.inference.counts._data import CountMatrix, Exposure
from bnmfzoo.inference.counts._hmc_kernels import grad_sparse
from bnmfzoo.inference.counts._problem import poisson_problem
from bnmfzoo.inference.counts.gibbs._hmc_moves import (
    HmcAdapter,
    _grad,
    hmc_cells,
    hmc_transition,
    leap_cap,
)

K = 3


def _problem(seed, D=12, N=17, missing=True, offsets=True, density=0.2):
    """A random sparse Poisson problem: about ``density`` of the cells nonzero (counts 1-4),
    optionally 10 missing cells and row and column offsets in [0.5, 2]; Gamma priors with
    random shapes and rates."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.uniform(size=(D, N)) < density, rng.integers(1, 5, (D, N)), 0)
    mr = mc = np.zeros(0, np.int64)
    if missing:
        flat = rng.choice(D * N, 10, replace=False)
        mr, mc = (a.astype(np.int64) for a in np.divmod(flat, N))
        X[mr, mc] = 0
    r = rng.uniform(0.5, 2.0, D) if offsets else np.ones(D)
    c = rng.uniform(0.5, 2.0, N) if offsets else np.ones(N)
    nz = np.nonzero(X)
    data = CountMatrix.from_entries(nz[0], nz[1], X[nz], (D, N))
    prior = tuple(rng.uniform(0.5, 2.0, s) for s in ((D, K), (D, K), (N, K), (N, K)))
    prob = poisson_problem(data, Exposure("separable", r, c, mr, mc), prior[0], prior[1],
                           prior[2].T, prior[3].T)
    return prob, prior


def _lp_grad(tA, tWt, cells, prior, want_lp=True):
    D, N = tA.shape[0], tWt.shape[0]
    gA, gWt = np.empty((D, K)), np.empty((N, K))
    lp = _grad(tA, tWt, *cells, *prior, np.empty((D, K)), np.empty((N, K)), gA, gWt, want_lp)
    return lp, gA, gWt


def _state(seed, D, N, spread=1.0):
    rng = np.random.default_rng(100 + seed)
    return rng.normal(0.0, spread, (D, K)), rng.normal(0.0, spread, (N, K))


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("offsets", [False, True])
def test_sparse_gradient_equals_all_cells(missing, offsets):
    """Same state, same data: the log density and both gradients of the nonzero-cell form equal
    those of the loop over every observed cell (and of the dense form) to 1e-10 relative, on
    random sparse matrices with and without missing cells and offsets; ``hmc_cells`` chooses
    the sparse form there. Deterministic (the sums differ only in their order)."""
    for seed in range(4):
        prob, prior = _problem(seed, missing=missing, offsets=offsets)
        D, N = prob.shape
        sparse = hmc_cells(prob)
        assert sparse[4].size == 0 and sparse[5].shape == (1, D + N)  # the sparse form chosen
        assert sparse[0].size == prob.data.nnz + 10 * missing  # nonzero and missing cells
        tA, tWt = _state(seed, D, N)
        lp, gA, gWt = _lp_grad(tA, tWt, sparse, prior)
        for form in (hmc_cells(prob, sparse=False), hmc_cells(prob, dense=True)):
            lp_r, gA_r, gWt_r = _lp_grad(tA, tWt, form, prior)
            assert lp == pytest.approx(lp_r, rel=1e-10, abs=0)
            np.testing.assert_allclose(gA, gA_r, rtol=1e-10, atol=1e-10 * np.abs(gA_r).max())
            np.testing.assert_allclose(gWt, gWt_r, rtol=1e-10,
                                       atol=1e-10 * np.abs(gWt_r).max())
        # without the log density the gradient is the same and 0 is returned
        lp0, gA0, gWt0 = _lp_grad(tA, tWt, sparse, prior, want_lp=False)
        assert lp0 == 0.0 and np.array_equal(gA0, gA) and np.array_equal(gWt0, gWt)


def test_sparse_gradient_matches_finite_differences():
    """Central differences (step 1e-5) of the sparse form's log density along every entry of
    ``log A`` and ``log W.T``: within 1e-6 relative of its gradient (the truncation error is
    O(h^2) ~ 1e-10 of the curvature, rounding ~ 1e-16 |lp| / h ~ 1e-9). Missing cells and
    offsets. Deterministic."""
    prob, prior = _problem(5)
    D, N = prob.shape
    cells = hmc_cells(prob)
    tA, tWt = _state(5, D, N, 0.5)
    _, gA, gWt = _lp_grad(tA, tWt, cells, prior)
    h = 1e-5
    for theta, g in ((tA, gA), (tWt, gWt)):
        fd = np.empty_like(theta)
        for i in np.ndindex(theta.shape):
            keep = theta[i]
            theta[i] = keep + h
            up = _lp_grad(tA, tWt, cells, prior)[0]
            theta[i] = keep - h
            down = _lp_grad(tA, tWt, cells, prior)[0]
            theta[i] = keep
            fd[i] = (up - down) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * np.abs(g).max())


def test_sparse_gradient_nan_on_non_finite_input():
    """NaN (never a number) when ``theta`` is NaN, when ``exp(theta)`` overflows, when a
    nonzero cell's mean is 0 (its factors underflow) or its offset is 0; the HMC transition
    then returns code 2 (non-finite start) and leaves the state unchanged."""
    prob, prior = _problem(6)
    D, N = prob.shape
    cells = hmc_cells(prob)
    rows = cells[0][cells[3] > 0]
    tA, tWt = _state(6, D, N)
    bad = []
    for where, val in (("A", np.nan), ("W", np.nan), ("A", 800.0), ("W", 800.0)):
        a, w = tA.copy(), tWt.copy()
        (a if where == "A" else w)[0, 0] = val
        bad.append((a, w, cells))
    a = tA.copy()
    a[rows[0]] = -800.0  # every factor of a row with a nonzero count underflows to 0
    bad.append((a, tWt, cells))
    offs = cells[2].copy()
    offs[0] = 0.0  # a nonzero cell with offset 0: its mean is 0
    bad.append((tA, tWt, (cells[0], cells[1], offs, *cells[3:])))
    for a, w, c in bad:
        assert math.isnan(_lp_grad(a, w, c, prior)[0])
        a0, w0 = a.copy(), w.copy()
        code, _ = hmc_transition(a, w, np.zeros((D, K)), np.zeros((N, K)), *c, *prior,
                                 np.ones((D, K)), np.ones((N, K)), 0.1, 3, -1.0,
                                 np.empty((D, K)), np.empty((N, K)))
        assert code == 2
        np.testing.assert_array_equal(a, a0)
        np.testing.assert_array_equal(w, w0)
    # the kernel itself, called directly
    gA, gWt = np.empty((D, K)), np.empty((N, K))
    nan_a = tA.copy()
    nan_a[1, 1] = np.nan
    assert math.isnan(grad_sparse(nan_a, tWt, *cells[:4], cells[5][0], *prior,
                                  np.empty((D, K)), np.empty((N, K)), gA, gWt, False))


def test_cell_forms_chosen_and_leap_cap_counts_the_nonzeros():
    """``hmc_cells``: dense counts stay dense, sparse ones take the sparse form, entry-wise
    (not separable) offsets the loop over the observed cells, and both ``True`` is refused;
    ``leap_cap`` counts ``(nonzero + missing + D + N) K`` work units in the sparse form (so
    on sparse counts the cap no longer counts the zeros)."""
    prob, _ = _problem(7, D=40, N=300, density=0.05)
    D, N = prob.shape
    cells = hmc_cells(prob)
    n = prob.data.nnz + 10
    assert cells[0].size == n
    assert leap_cap(cells, K, max_work=1e6) == int(1e6 // ((n + D + N) * K))
    full = hmc_cells(prob, sparse=False)
    assert full[0].size == D * N - 10 and full[5].size == 0
    assert leap_cap(full, K, max_work=1e6) == int(1e6 // ((D * N - 10) * K))
    dense_prob, _ = _problem(7, density=0.9, missing=False)
    assert hmc_cells(dense_prob)[4].shape == dense_prob.shape
    rows, cols = (a.ravel() for a in np.indices((D, N)))
    entries = Exposure("entries", np.ones(D), np.ones(N), rows, cols, np.ones(D * N))
    not_separable = poisson_problem(prob.data, entries, prob.aA, prob.bA, prob.aW, prob.bW)
    assert hmc_cells(not_separable)[5].size == 0 and hmc_cells(not_separable)[4].size == 0
    with pytest.raises(ValueError, match="separable"):
        hmc_cells(not_separable, sparse=True)
    with pytest.raises(ValueError, match="both"):
        hmc_cells(prob, dense=True, sparse=True)


def _paired_chain(prob, prior, A, Wt, seed, n_tune=100, n_draws=200):
    """An HMC chain (learned lengths, ``max_leap`` 64) run with the loop over every observed
    cell; at each transition the same transition (same state, tuning state and generator
    state) is also run with the sparse gradient. Returns both results of every transition
    (``log`` states, transitions x entries) and the adapter."""
    import copy

    full, sparse = hmc_cells(prob, sparse=False), hmc_cells(prob)
    hmc = HmcAdapter(full, prior, None, max_leap=64)
    hmc.start(A, Wt)
    rng = np.random.default_rng(seed)
    out = {"full": [], "sparse": []}
    for i in range(n_tune + n_draws):
        tuning, generator = copy.deepcopy(hmc.state), copy.deepcopy(rng.bit_generator.state)
        hmc.cells = sparse
        As, Wts = hmc.transition(A, Wt, rng, tune=i < n_tune)
        hmc.state, rng.bit_generator.state = tuning, generator
        hmc.cells = full
        A, Wt = hmc.transition(A, Wt, rng, tune=i < n_tune)
        if i == n_tune - 1:
            hmc.freeze()
        out["sparse"].append(np.concatenate([np.log(As).ravel(), np.log(Wts).ravel()]))
        out["full"].append(np.concatenate([np.log(A).ravel(), np.log(Wt).ravel()]))
    return np.array(out["sparse"]), np.array(out["full"]), hmc


@pytest.mark.parametrize("seed", [0, 1])
def test_hmc_transitions_with_the_sparse_gradient_agree_draw_for_draw(seed):
    """Along an HMC chain (learned lengths: 100 tuning transitions, then 200 kept ones), each
    transition run with the sparse gradient from the same state, tuning state and generator
    state as with the loop over every observed cell ends at the same state to 1e-8 (the two
    gradients differ by rounding only, so the same lengths and accept decisions follow;
    compared transition by transition because over many transitions the leapfrog's chaotic
    dynamics amplify rounding ~10x per transition). The chain moves: acceptance above 0.5
    and the states vary. Missing cells and offsets. Deterministic."""
    prob, prior = _problem(10 + seed, D=15, N=25)
    D, N = prob.shape
    rng = np.random.default_rng(seed)
    A, Wt = rng.gamma(2.0, 0.5, (D, K)), rng.gamma(2.0, 0.5, (N, K))
    sparse, full, hmc = _paired_chain(prob, prior, A, Wt, seed)
    np.testing.assert_allclose(sparse, full, rtol=0, atol=1e-8)
    assert hmc.acceptance() > 0.5
    assert np.unique(full[:, 0]).size > 50  # it moves
