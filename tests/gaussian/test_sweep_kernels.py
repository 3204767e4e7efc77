"""The fused, prefetching residual-path kernel gives bit for bit the plain two-pass loops."""

import numba
import numpy as np
import pytest

from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.gibbs._gram import _conditional
from bnmfzoo.inference.gaussian.gibbs._sweep_kernels import factor_half_sweep, reorder


@numba.njit
def _two_pass_half_sweep(U, V, ptr, idx, resid, tau, lam, rng):
    """The kernel as it was written before (reference): gather, then per k a sum pass and an
    update pass (``_core._dot_sq`` and ``_core._axpy``)."""
    R = U.shape[1]
    max_n = 0
    for i in range(U.shape[0]):
        max_n = max(max_n, ptr[i + 1] - ptr[i])
    buf = np.empty((R, max_n))
    for i in range(U.shape[0]):
        start = ptr[i]
        n = ptr[i + 1] - start
        for e in range(n):
            j = idx[start + e]
            for k in range(R):
                buf[k, e] = V[j, k]
        res = resid[start:start + n]
        for k in range(R):
            b = buf[k]
            s1, s2 = gc._dot_sq(b, res, n)
            old = U[i, k]
            prec = tau * s2
            lin = tau * (s1 + old * s2) - lam[k]
            new = _conditional(lin, prec, lam[k], rng)
            d = new - old
            if d != 0.0:
                gc._axpy(res, d, b, n)
                U[i, k] = new


def _problem(seed, n_u, n_v, R, lengths):
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    idx = np.concatenate([np.sort(rng.choice(n_v, size=m, replace=False))
                          for m in lengths]).astype(np.int64)
    U = rng.exponential(size=(n_u, R))
    V = rng.exponential(size=(n_v, R))
    resid = rng.normal(size=idx.size) * 3.0
    return U, V, ptr, idx, resid


# row lengths cover empty rows, each remainder mod 4, and rows longer than the prefetch distance
LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 65, 150, 0, 9]


@pytest.mark.parametrize("R", [1, 3, 10])
def test_fused_kernel_is_the_two_pass_kernel_bit_for_bit(R):
    U, V, ptr, idx, resid = _problem(R, len(LENGTHS), 160, R, LENGTHS)
    lam = np.linspace(0.05, 0.5, R)
    U1, r1 = U.copy(), resid.copy()
    U2, r2 = U.copy(), resid.copy()
    for tau in (0.3, 2.0, 40.0):  # several sweeps, from diffuse to sharp conditionals
        factor_half_sweep(U1, V, ptr, idx, r1, tau, lam, np.random.default_rng(7))
        _two_pass_half_sweep(U2, V, ptr, idx, r2, tau, lam, np.random.default_rng(7))
        np.testing.assert_array_equal(U1, U2)
        np.testing.assert_array_equal(r1, r2)
    assert not np.array_equal(U1, U)  # the sweeps did move the factor


def test_fused_kernel_propagates_non_finite_values_as_before():
    U, V, ptr, idx, resid = _problem(3, len(LENGTHS), 160, 4, LENGTHS)
    V[idx[40]] = np.nan
    lam = np.full(4, 0.1)
    U1, r1 = U.copy(), resid.copy()
    U2, r2 = U.copy(), resid.copy()
    factor_half_sweep(U1, V, ptr, idx, r1, 1.0, lam, np.random.default_rng(1))
    _two_pass_half_sweep(U2, V, ptr, idx, r2, 1.0, lam, np.random.default_rng(1))
    assert np.isnan(U1).any()
    np.testing.assert_array_equal(U1, U2)  # NaN in the same places, the rest equal
    np.testing.assert_array_equal(r1, r2)


def test_reorder_moves_the_residual_to_column_order_and_back():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 30))
    X[rng.random(X.shape) < 0.7] = np.nan
    obs = gc.observed_entries(X)
    r = rng.normal(size=obs.n_observed)
    csc = np.empty_like(r)
    reorder(r, obs.csr_perm, csc, True)
    np.testing.assert_array_equal(csc, r[obs.csc_perm])
    back = np.empty_like(r)
    reorder(csc, obs.csr_perm, back, False)
    np.testing.assert_array_equal(back, r)
