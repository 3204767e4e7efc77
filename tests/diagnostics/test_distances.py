"""Distances between factorizations (Masood, Pan & Doshi-Velez 2016; Masood & Doshi-Velez 2016)."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bnmfzoo.diagnostics import (
    angle_distance,
    frobenius_distance,
    l1_distance,
    weighted_angle_distance,
)
from bnmfzoo.diagnostics.distances import match


def laurberg_two_modes():
    """The two exact factorizations of Laurberg's a = 0.5 matrix (digest §4.2)."""
    try:
        from bnmfzoo.datasets import laurberg

        data = laurberg(0.5)
        (A1, W1), (A2, W2) = data.solutions[:2]
        return [np.asarray(getattr(m, "values", m), dtype=float) for m in (A1, W1, A2, W2)]
    except (ImportError, AttributeError):
        pass
    a = 0.5
    W = np.array([[a, 1, 1, a, 0, 0], [1, a, 0, 0, a, 1], [0, 0, a, 1, 1, a]])
    A = W.T
    Q = np.array([[-1, 2, 2], [2, -1, 2], [2, 2, -1]]) / 3.0
    return A, W, A @ Q, Q @ W


def continuum_A(delta):
    """A_delta of the infinite-solution matrix (digest §4.3, corrected row 6)."""
    return np.vstack([np.eye(6), [1 - delta] * 3 + [delta] * 3])


def test_laurberg_known_answers():
    A1, W1, A2, W2 = laurberg_two_modes()
    assert np.allclose(A1 @ W1, A2 @ W2) and A2.min() >= -1e-12
    # exact values (digest §5.3): cos = 0.8 between matched columns -> arccos(0.8) = 36.8699 deg;
    # matched unit-l1 columns differ by 2/3 in l1.
    assert angle_distance(A1, A2) == pytest.approx(np.degrees(np.arccos(0.8)), abs=1e-9)
    assert angle_distance(A1, A2) == pytest.approx(36.87, abs=0.005)
    assert l1_distance(A1, A2) == pytest.approx(2 / 3, abs=1e-12)
    assert l1_distance(A1, A2, matching="bottleneck") == pytest.approx(2 / 3, abs=1e-12)
    # "sum" reduction is the literal eq. 1: three columns each 2/3 apart
    assert l1_distance(A1, A2, reduce="sum") == pytest.approx(2.0, abs=1e-12)
    # every column moved by the same angle, so any weighting gives the same WAD
    assert weighted_angle_distance(A1, A2, W1, W2) == pytest.approx(36.8699, abs=1e-4)


def test_continuum_endpoints():
    # digest §8.6: A_0 vs A_1 are 45 degrees and 1.0 apart
    assert angle_distance(continuum_A(0.0), continuum_A(1.0)) == pytest.approx(45.0, abs=1e-9)
    assert l1_distance(continuum_A(0.0), continuum_A(1.0)) == pytest.approx(1.0, abs=1e-12)


def test_frobenius_is_the_naive_baseline():
    A1, _, A2, _ = laurberg_two_modes()
    assert frobenius_distance(A1, A2) == pytest.approx(np.linalg.norm(A1 - A2), abs=1e-12)
    perm = [2, 0, 1]
    assert frobenius_distance(A1, A1[:, perm]) > 0.5
    assert frobenius_distance(A1, A1[:, perm], align=True) == pytest.approx(0.0, abs=1e-12)
    scaled = A1[:, perm] * np.array([2.0, 0.5, 7.0])
    assert frobenius_distance(A1, scaled, align=True, normalize="l2") == pytest.approx(0, abs=1e-12)
    # weights: factors are rows
    W = np.arange(12.0).reshape(3, 4)
    assert frobenius_distance(W, W[[1, 2, 0]], factor_axis=0, align=True) == 0.0


def test_dataarray_inputs_use_factor_dim():
    A1, W1, A2, W2 = laurberg_two_modes()
    da1 = xr.DataArray(A1.T, dims=("factor", "row"))  # factor-first on purpose
    da2 = xr.DataArray(A2, dims=("row", "factor"))
    assert angle_distance(da1, da2) == pytest.approx(angle_distance(A1, A2))
    w1 = xr.DataArray(W1.T, dims=("col", "factor"))
    assert weighted_angle_distance(A1, A2, w1, W2) == pytest.approx(
        weighted_angle_distance(A1, A2, W1, W2)
    )


def test_wad_weights_by_factor_mass():
    # factor 0 unchanged, factor 1 rotated by 45 degrees; weights = share of reconstructed mass
    A = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    B = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    W = np.array([[9.0, 9.0], [1.0, 1.0]])
    # shares of factor 1: (1*2)/(18+2) = 0.1 in (A, W) and (2*2)/(18+4) = 2/11 in (B, W)
    expected = 45.0 * (0.1 + 2 / 11) / 2
    assert weighted_angle_distance(A, B, W, W) == pytest.approx(expected, rel=1e-12)
    assert angle_distance(A, B) == pytest.approx(45.0)


def test_zero_column_is_90_degrees_and_l1_one():
    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    B = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert angle_distance(A, B) == pytest.approx(90.0)
    assert l1_distance(A, B) == pytest.approx(1.0)


def test_bottleneck_never_exceeds_hungarian():
    rng = np.random.default_rng(1)
    for R in (3, 7):  # enumeration path and the threshold/bipartite path
        for _ in range(20):
            A1, A2 = rng.gamma(0.3, size=(2, 8, R))
            hung = l1_distance(A1, A2)
            bott = l1_distance(A1, A2, matching="bottleneck")
            assert bott <= hung + 1e-12
    # brute force check of the bottleneck for R = 6 (above the enumeration limit uses bisection)
    import itertools

    C = rng.random((6, 6))
    best = min(max(C[i, p[i]] for i in range(6)) for p in itertools.permutations(range(6)))
    perm = match(C[None], "bottleneck")[0]
    assert C[np.arange(6), perm].max() == pytest.approx(best)


def test_hungarian_matches_scipy_above_enumeration_limit():
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(2)
    C = rng.random((4, 7, 7))
    perm = match(C)
    for c, p in zip(C, perm):
        rows, cols = linear_sum_assignment(c)
        assert c[rows, cols].sum() == pytest.approx(c[np.arange(7), p].sum())
    # enumeration path agrees with scipy on the optimal sum
    C = rng.random((50, 4, 4))
    perm = match(C)
    for c, p in zip(C, perm):
        rows, cols = linear_sum_assignment(c)
        assert c[rows, cols].sum() == pytest.approx(c[np.arange(4), p].sum())


def test_errors_name_the_argument():
    A = np.eye(3)
    with pytest.raises(ValueError, match="A1 and A2"):
        l1_distance(A, np.eye(4))
    with pytest.raises(ValueError, match="non-negative"):
        angle_distance(-A, A)
    with pytest.raises(ValueError, match="matching"):
        l1_distance(A, A, matching="greedy")
    with pytest.raises(ValueError, match="W2"):
        weighted_angle_distance(A, A, np.ones((3, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match="A1"):
        angle_distance("abc", A)


# ---------------------------------------------------------------------------------------------
# properties (hypothesis): invariance to permutation and positive rescaling, symmetry, zero on
# identical inputs, triangle inequality for the sum-reduced l1 (a metric on the classes).
# ---------------------------------------------------------------------------------------------

DR = st.tuples(st.integers(2, 6), st.integers(1, 4))


@st.composite
def pairs(draw):
    D, R = draw(DR)
    N = draw(st.integers(1, 5))
    elem = st.floats(0.05, 10.0, allow_nan=False)
    mats = [draw(arrays(float, (D, R), elements=elem)) for _ in range(3)]
    Ws = [draw(arrays(float, (R, N), elements=elem)) for _ in range(2)]
    perm = draw(st.permutations(range(R)))
    scale = draw(arrays(float, (R,), elements=st.floats(0.1, 10.0)))
    return mats, Ws, np.array(perm), scale


@settings(max_examples=60, deadline=None)
@given(pairs())
def test_invariance_and_symmetry(case):
    (A1, A2, A3), (W1, W2), perm, scale = case
    A2p = A2[:, perm] * scale
    W2p = W2[perm] / scale[:, None]  # same factorization, relabelled and rescaled
    tol = 1e-7
    for f in (angle_distance, l1_distance):
        d = f(A1, A2)
        assert f(A1, A2p) == pytest.approx(d, abs=tol)
        assert f(A2, A1) == pytest.approx(d, abs=tol)
        assert f(A1, A1) == pytest.approx(0.0, abs=tol)
        assert f(A1, A1[:, perm] * scale) == pytest.approx(0.0, abs=tol)
    assert 0 <= angle_distance(A1, A2) <= 90 + tol
    assert 0 <= l1_distance(A1, A2) <= 2 + tol
    wad = weighted_angle_distance(A1, A2, W1, W2)
    assert weighted_angle_distance(A1, A2p, W1, W2p) == pytest.approx(wad, abs=tol)
    assert weighted_angle_distance(A2, A1, W2, W1) == pytest.approx(wad, abs=tol)
    assert weighted_angle_distance(A1, A1[:, perm] * scale, W1, W1[perm]) == pytest.approx(
        0.0, abs=tol
    )
    # WAD is a weighted mean of the matched angles: never above the maximum angle
    assert wad <= angle_distance(A1, A2) + tol
    fro = frobenius_distance(A1, A2, align=True, normalize="l1")
    assert frobenius_distance(A1, A2p, align=True, normalize="l1") == pytest.approx(fro, abs=tol)
    # triangle inequality for the sum-reduced minimum-matching l1 (digest §8.6)
    d12 = l1_distance(A1, A2, reduce="sum")
    d23 = l1_distance(A2, A3, reduce="sum")
    d13 = l1_distance(A1, A3, reduce="sum")
    assert d13 <= d12 + d23 + tol


def test_batch_kernels_broadcast_one_against_many():
    # bnmfzoo.inference.exploration.rrt calls wad_batch(A[None], stack, W[None], stack)
    from bnmfzoo.diagnostics.distances import angle_batch, l1_batch, wad_batch

    rng = np.random.default_rng(4)
    for R in (3, 7):  # exhaustive-matching path and scipy path
        A, W = rng.random((5, R)), rng.random((R, 4))
        TA, TW = rng.random((6, 5, R)), rng.random((6, R, 4))
        wad = wad_batch(A[None], TA, W[None], TW)
        assert wad.shape == (6,)
        assert np.allclose(wad, [weighted_angle_distance(A, a, W, w) for a, w in zip(TA, TW)])
        assert np.allclose(angle_batch(A[None], TA), [angle_distance(A, a) for a in TA])
        assert np.allclose(l1_batch(A[None], TA), [l1_distance(A, a) for a in TA])
