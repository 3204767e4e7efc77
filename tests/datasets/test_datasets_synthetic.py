"""Synthetic generators: the known exact answers, shapes, reproducibility, errors."""

import itertools

import numpy as np
import pytest

from bnmfzoo.datasets import (
    SyntheticData,
    bernoulli_mean,
    continuum,
    embed,
    exponential_gaussian,
    laurberg,
    swimmer,
)
from bnmfzoo.datasets.synthetic import LAURBERG_Q, continuum_basis


# ---------------------------------------------------------------------------- swimmer
@pytest.fixture(scope="module")
def swim():
    return swimmer()


def test_swimmer_shapes_and_exact_factorization(swim):
    X, A, W = swim.X.values, swim.A.values, swim.W.values
    assert swim.X.dims == ("row", "col") and X.shape == (1024, 256)
    assert A.shape == (1024, 16) and W.shape == (16, 256)
    assert swim.A.dims == ("row", "factor") and swim.W.dims == ("factor", "col")
    assert np.array_equal(X, A @ W)  # exact, not approximate
    assert set(np.unique(X)) == {0.0, 1.0}
    assert (A >= 0).all() and set(np.unique(W)) == {0.0, 1.0}
    # each image: exactly one position per limb
    assert np.array_equal(W.reshape(4, 4, 256).sum(axis=1), np.ones((4, 256)))
    # 256 distinct images
    assert len({X[:, j].tobytes() for j in range(256)}) == 256


def test_swimmer_ranks(swim):
    X, A = swim.X.values, swim.A.values
    # Matrix rank: each limb's 4 position rows of W sum to the all-ones row -> 16 - 3 = 13.
    assert np.linalg.matrix_rank(X) == 13
    assert np.linalg.matrix_rank(A) == 16
    # Non-negative rank 16: the 16-term factorization above is an upper bound; a fooling set of
    # size 16 is a lower bound (X[i_k, j_k] > 0 and X[i_k, j_l] * X[i_l, j_k] == 0 for k != l).
    limb_pixels = swimmer(torso=False).A.values > 0
    assert limb_pixels.sum(axis=1).max() == 1  # the 16 parts are pairwise disjoint
    positions = swim.params["positions"]
    pixel, image = [], []
    for limb, pos in itertools.product(range(4), range(4)):
        pixel.append(np.flatnonzero(limb_pixels[:, 4 * limb + pos])[0])
        # limb at pos, every other limb at pos + 1 (mod 4)
        target = [(pos + 1) % 4] * 4
        target[limb] = pos
        image.append(int(np.flatnonzero((positions == target).all(axis=1))[0]))
    F = X[np.ix_(pixel, image)]
    assert (np.diag(F) > 0).all()
    off = F * F.T
    np.fill_diagonal(off, 0)
    assert (off == 0).all()


def test_swimmer_without_torso_and_noise():
    clean = swimmer(torso=False)
    assert np.array_equal(clean.X.values, clean.A.values @ clean.W.values)
    assert np.linalg.matrix_rank(clean.X.values) == 13
    noisy1 = swimmer(sigma=0.1, random_seed=3)
    noisy2 = swimmer(sigma=0.1, random_seed=3)
    assert np.array_equal(noisy1.X.values, noisy2.X.values)
    resid = noisy1.X.values - noisy1.X_clean.values
    # 262,144 N(0, 0.01) draws: sample std within 1 % of 0.1 (its sd is 0.1/sqrt(2n) ~ 1.4e-4)
    assert abs(resid.std() - 0.1) < 1e-3


# ---------------------------------------------------------------------------- Laurberg
def test_laurberg_unique_case():
    data = laurberg(0.3)
    assert isinstance(data, SyntheticData)
    assert data.X.shape == (6, 6) and data.rank == 3
    assert len(data.solutions) == 1
    A, W = data.solutions[0]
    assert np.array_equal(A @ W, data.X.values)
    assert np.array_equal(A, W.T)
    # the Q-transformed pair is not non-negative for a < 1/2, consistent with uniqueness
    assert (A @ LAURBERG_Q).min() < 0


def test_laurberg_two_solutions_exact():
    data = laurberg(0.5)
    assert len(data.solutions) == 2
    X = data.X.values
    for A, W in data.solutions:
        assert np.array_equal(A @ W, X)
        assert (A >= 0).all() and (W >= 0).all()
    A2, W2 = data.solutions[1]
    expected_A2 = np.array(
        [[0.5, 0, 1], [0, 0.5, 1], [0, 1, 0.5], [0.5, 1, 0], [1, 0.5, 0], [1, 0, 0.5]]
    )
    assert np.array_equal(A2, expected_A2)  # digest 4.2
    assert np.allclose(LAURBERG_Q @ LAURBERG_Q, np.eye(3), atol=1e-15)
    assert X[0, 0] == 1.25 and X[0, 3] == 0.25  # digest 4.2 X
    # the two solutions are genuinely different bases (not a permutation / scaling)
    cos = (A2 / np.linalg.norm(A2, axis=0)).T @ (
        data.A.values / np.linalg.norm(data.A.values, axis=0)
    )
    assert cos.max() < 0.99


def test_laurberg_noise_and_errors():
    a = laurberg(0.5, sigma=1e-3, random_seed=0)
    b = laurberg(0.5, sigma=1e-3, random_seed=0)
    assert np.array_equal(a.X.values, b.X.values)
    assert not np.array_equal(a.X.values, a.X_clean.values)
    assert a.noise == 1e-3
    with pytest.raises(ValueError, match="a must be"):
        laurberg(0.7)
    with pytest.raises(ValueError, match="sigma"):
        laurberg(0.3, sigma=-1)


# ---------------------------------------------------------------------------- continuum
def test_continuum_solutions_reproduce_x():
    data = continuum()
    assert data.X.shape == (7, 9) and data.rank == 6
    assert len(data.solutions) == 11
    np.testing.assert_allclose(data.params["deltas"], np.linspace(0, 1, 11))
    X = data.X.values
    assert set(np.unique(X)) == {0.0, 1.0} and (X[6] == 1).all()
    for A, W in data.solutions:
        assert (A >= 0).all() and (W >= 0).all()
        # row 7 = (1 - d) * 1 + d * 1: at most one rounding error of 1 ulp
        np.testing.assert_allclose(A @ W, X, rtol=0, atol=2.3e-16)
    # the corrected identity block (the paper's printed row 6 would break A W = X)
    assert np.array_equal(continuum_basis(0.3)[:6], np.eye(6))
    wrong = continuum_basis(0.3)
    wrong[5] = [0, 1, 0, 0, 0, 1]
    assert not np.allclose(wrong @ data.W.values, X)
    with pytest.raises(ValueError, match="delta"):
        continuum(delta=1.5)


def test_embed_transforms_every_solution():
    small = laurberg(0.5)
    big = embed(small, random_seed=1)
    assert big.X.shape == (500, 50) and big.A.shape == (500, 3) and big.W.shape == (3, 50)
    B1, B2 = big.params["B1"], big.params["B2"]
    assert B1.shape == (500, 6) and B2.shape == (6, 50)
    assert 0 <= B1.min() and B1.max() < 1  # U(0, 1)
    assert len(big.solutions) == 2
    scale = np.abs(big.X.values).max()
    for (A, W), (a, w) in zip(big.solutions, small.solutions):
        np.testing.assert_allclose(A, B1 @ a, rtol=1e-14)
        np.testing.assert_allclose(W, w @ B2, rtol=1e-14)
        np.testing.assert_allclose(A @ W, big.X.values, rtol=0, atol=1e-13 * scale)
    again = embed(small, random_seed=1)
    assert np.array_equal(again.X.values, big.X.values)
    cont = embed(continuum(), shape=(40, 30), random_seed=2)
    assert cont.X.shape == (40, 30) and len(cont.solutions) == 11
    with pytest.raises(TypeError, match="data"):
        embed(np.ones((3, 3)))


# ---------------------------------------------------------------------------- exponential
def test_exponential_gaussian_defaults():
    data = exponential_gaussian(random_seed=0)
    assert data.X.shape == (100, 80) and data.A.shape == (100, 10) and data.W.shape == (10, 80)
    assert data.noise == 1.0
    assert (data.A.values > 0).all() and (data.W.values > 0).all()
    resid = (data.X - data.X_clean).values
    # 8000 N(0, 1) draws: the sample variance has sd sqrt(2/8000) ~ 0.016; allow 5 sd
    assert abs(resid.var() - 1.0) < 0.08
    # E[X_clean] = R / lambda^2 = 10. mean(X_clean) = sum_r mean_d(A_dr) mean_n(W_rn); each
    # term has sd ~ sqrt(1/100 + 1/80) = 0.15, the sum of 10 has sd ~ 0.47: allow ~3.2 sd
    assert abs(data.X_clean.values.mean() - 10.0) < 1.5
    same = exponential_gaussian(random_seed=0)
    assert np.array_equal(same.X.values, data.X.values)
    other = exponential_gaussian(20, 10, 3, lambda_=2.0, tau=100.0, random_seed=1)
    assert other.X.shape == (20, 10) and other.noise == pytest.approx(0.1)
    with pytest.raises(ValueError, match="tau"):
        exponential_gaussian(tau=0)
    with pytest.raises(ValueError, match="R"):
        exponential_gaussian(R=0)


# ---------------------------------------------------------------------------- Bernoulli
@pytest.mark.parametrize("model", ["beta_dir", "dir_beta", "dir_dir"])
def test_bernoulli_mean_constraints_and_mean(model):
    data = bernoulli_mean(200, 150, 4, model=model, random_seed=5)
    A, W, X, P = data.A.values, data.W.values, data.X.values, data.X_clean.values
    assert X.shape == (200, 150) and set(np.unique(X)) <= {0.0, 1.0}
    np.testing.assert_allclose(P, A @ W, rtol=0, atol=1e-15)
    assert (A >= 0).all() and (W >= 0).all()
    if model in ("beta_dir", "dir_dir"):
        np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-12)
    else:
        assert A.max() <= 1
    if model in ("dir_beta", "dir_dir"):
        np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    else:
        assert W.max() <= 1
    # E[X] = A W: the standardized total residual is ~ N(0, 1) given P; |z| < 4 (p ~ 6e-5)
    z = (X - P).sum() / np.sqrt((P * (1 - P)).sum())
    assert abs(z) < 4


def test_bernoulli_mean_options_and_errors():
    a = bernoulli_mean(30, 20, 3, model="dir_dir", gamma=[0.1, 0.2, 0.3], random_seed=0)
    b = bernoulli_mean(30, 20, 3, model="dir_dir", gamma=[0.1, 0.2, 0.3], random_seed=0)
    assert np.array_equal(a.X.values, b.X.values)
    assert a.noise is None and a.params["model"] == "dir_dir"
    with pytest.raises(ValueError, match="model"):
        bernoulli_mean(model="logistic")
    with pytest.raises(ValueError, match="gamma"):
        bernoulli_mean(10, 10, 3, gamma=[1.0, 2.0])
    with pytest.raises(ValueError, match="alpha"):
        bernoulli_mean(alpha=-1.0)
