"""Q-Transform (Algorithms 2-4), particle initializations and the NMF solvers."""

import numpy as np
import pytest

from bnmfzoo.inference.particles._init import (
    complete_matrix,
    make_particle,
    masked_multiplicative,
    nndsvdar_init,
    project_columns_to_simplex,
    random_init,
    solve_nmf,
)
from bnmfzoo.inference.particles.qtransform import (
    QTransformInit,
    apply_q_transform,
    generate_q_bank,
    q_matrices,
    svd_symmetric,
)


@pytest.mark.parametrize("sign", ["bro", "max_abs"])
def test_svd_symmetric_reconstructs_and_sign_is_fixed(rng, sign):
    X = rng.random((9, 6))
    A, W = svd_symmetric(X, 6, sign=sign)
    np.testing.assert_allclose(A @ W, X, atol=1e-12)
    # symmetric split: column norms of A equal row norms of W (both sqrt(s))
    np.testing.assert_allclose(np.linalg.norm(A, axis=0), np.linalg.norm(W, axis=1))
    # the sign rule is a function of X only: flipping the input SVD signs cannot change it
    A2, W2 = svd_symmetric(X.copy(), 3, sign=sign)
    np.testing.assert_allclose(A2, A[:, :3], atol=1e-12)
    # Perron-Frobenius: first pair of a positive matrix comes out non-negative
    assert (A[:, 0] >= 0).all() and (W[0] >= 0).all()
    # Bro's rule: of the left/right sign statistics, the dominant one is positive
    if sign == "bro":
        s_left = np.sum(np.sign(W) * W**2, axis=1) / np.sum(W**2, axis=1)
        s_right = np.sum(np.sign(A) * A**2, axis=0) / np.sum(A**2, axis=0)
        dominant = np.where(np.abs(s_left) >= np.abs(s_right), s_left, s_right)
        assert np.all(dominant >= 0)


def test_q_recovery_exact_on_low_rank_data(rng):
    A = rng.random((12, 3))
    W = rng.random((3, 10))
    X = A @ W  # exactly rank 3
    A_svd, W_svd = svd_symmetric(X, 3)
    QA, QW = q_matrices(A_svd, W_svd, A, W)
    np.testing.assert_allclose(A_svd @ QA, A, atol=1e-10)
    np.testing.assert_allclose(QW @ W_svd, W, atol=1e-10)
    A0, W0 = apply_q_transform(X, QA, QW, 3)  # abs is a no-op on the non-negative truth
    np.testing.assert_allclose(A0, A, atol=1e-10)
    np.testing.assert_allclose(W0, W, atol=1e-10)
    # padding to a higher rank barely changes the product (pads are 1e-3 of the data scale)
    A5, W5 = apply_q_transform(X, QA, QW, 5, rng=rng)
    assert A5.shape == (12, 5) and W5.shape == (5, 10)
    assert (A5 >= 0).all() and (W5 >= 0).all()
    assert np.linalg.norm(A5 @ W5 - X) < 1e-4 * np.linalg.norm(X)
    # truncation to a lower rank keeps the first columns
    A2, W2 = apply_q_transform(X, QA, QW, 2)
    np.testing.assert_allclose(A2, A[:, :2], atol=1e-10)


def test_q_transform_init_beats_random_init_on_low_noise_data():
    """Sec. 8.2: at low noise the transferred init has lower error than a random init."""
    rng = np.random.default_rng(7)
    X = np.abs(rng.standard_normal((60, 6))) @ np.abs(rng.standard_normal((6, 50)))
    X += 1e-3 * np.linalg.norm(X) / np.sqrt(X.size) * rng.random(X.shape)
    bank = generate_q_bank(n_datasets=4, n_restarts=5, cache=False)
    svd = svd_symmetric(X, 3)
    err_q = [np.linalg.norm(X - np.matmul(*apply_q_transform(X, qa, qw, 6, rng=rng, svd=svd)))
             for qa, qw in zip(bank.QA, bank.QW)]
    err_r = [np.linalg.norm(X - np.matmul(*random_init(X, 6, rng))) for _ in range(20)]
    # a strict, deterministic comparison of medians over 20 inits each
    assert np.median(err_q) < np.median(err_r)


def test_bank_deterministic_and_cached(tmp_path):
    b1 = generate_q_bank(n_datasets=3, n_restarts=2, random_seed=5, cache_dir=tmp_path)
    assert len(b1) == 6 and b1.QA.shape == (6, 3, 3) and b1.QW.shape == (6, 3, 3)
    files = list(tmp_path.glob("qbank-*.npz"))
    assert len(files) == 1
    b2 = generate_q_bank(n_datasets=3, n_restarts=2, random_seed=5, cache_dir=tmp_path)
    np.testing.assert_array_equal(b1.QA, b2.QA)
    assert b2.generation_time == b1.generation_time  # read back from the cache
    b3 = generate_q_bank(n_datasets=3, n_restarts=2, random_seed=5, cache=False)
    np.testing.assert_array_equal(b1.QA, b3.QA)  # regenerated without cache: identical
    b4 = generate_q_bank(n_datasets=3, n_restarts=2, random_seed=6, cache_dir=tmp_path)
    assert not np.allclose(b1.QA, b4.QA)
    assert len(list(tmp_path.glob("qbank-*.npz"))) == 2
    # Q pairs transform each source's SVD factors into a good NMF: QW QA is not degenerate
    assert np.all(np.abs(np.linalg.det(b1.QA)) > 1e-6)
    with pytest.raises(TypeError, match="random_seed"):
        generate_q_bank(random_seed=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rank"):
        generate_q_bank(rank=20, size=12, cache=False)


def test_paper_bank_generation_time(tmp_path):
    """App. E: 100 pairs in under 0.5 s on the authors' machine; allow 10x on a shared box."""
    bank = generate_q_bank(cache_dir=tmp_path)
    assert len(bank) == 100
    assert bank.generation_time < 5.0


def test_apply_q_transform_errors(rng):
    X = rng.random((5, 4))
    with pytest.raises(ValueError, match="mode"):
        apply_q_transform(X, np.eye(3), np.eye(3), 3, mode="relu")
    with pytest.raises(ValueError, match="QW"):
        apply_q_transform(X, np.eye(3), np.eye(2), 3)
    A, W = apply_q_transform(X, -np.eye(3), np.eye(3), 3, mode="clip")
    assert (A >= 0).all()


def test_solvers_and_inits(rng):
    X = rng.random((15, 3)) @ rng.random((3, 12))
    for init in (random_init, nndsvdar_init):
        A0, W0 = init(X, 3, np.random.default_rng(1))
        assert A0.shape == (15, 3) and W0.shape == (3, 12)
        assert (A0 >= 0).all() and (W0 >= 0).all()
        A, W, n_iter = solve_nmf(X, A0, W0, max_iter=500)
        assert n_iter >= 1
        # exact rank-3 data: a converged NMF reconstructs to within 2% (local optima allowed)
        assert np.linalg.norm(X - A @ W) < 0.02 * np.linalg.norm(X)
    # nndsvdar diversity comes only from its seed
    a1, _ = nndsvdar_init(X, 3, np.random.default_rng(1))
    a2, _ = nndsvdar_init(X, 3, np.random.default_rng(1))
    np.testing.assert_array_equal(a1, a2)


def test_masked_updates_ignore_missing(rng):
    X = rng.random((15, 3)) @ rng.random((3, 12))
    mask = rng.random(X.shape) > 0.2
    Xn = np.where(mask, X, 1e6)  # garbage in unobserved entries must not matter
    A0, W0 = random_init(X, 3, np.random.default_rng(2), mask=mask)
    A, W, _ = masked_multiplicative(Xn, A0, W0, mask, max_iter=3000, tol=1e-9)
    A_ref, W_ref, _ = masked_multiplicative(np.where(mask, X, 0.0), A0, W0, mask,
                                            max_iter=3000, tol=1e-9)
    np.testing.assert_allclose(A @ W, A_ref @ W_ref)
    # and the completion recovers held-out entries of exactly low-rank data reasonably
    Xc = complete_matrix(np.where(mask, X, np.nan), mask, 3, max_iter=3000, tol=1e-9)
    np.testing.assert_array_equal(Xc[mask], X[mask])
    rel = np.linalg.norm((Xc - X)[~mask]) / np.linalg.norm(X[~mask])
    assert rel < 0.1


def test_projection_keeps_product(rng):
    A, W = rng.random((6, 3)), rng.random((3, 4))
    A[:, 1] = 0.0
    Ap, Wp = project_columns_to_simplex(A, W)
    np.testing.assert_allclose(Ap.sum(axis=0), 1.0)
    np.testing.assert_allclose(Ap @ Wp, A @ W)
    # stacked
    As, Ws = project_columns_to_simplex(np.stack([A, 2 * A]), np.stack([W, W]))
    np.testing.assert_allclose(As[1] @ Ws[1], 2 * A @ W)


def test_make_particle_with_callable_and_qtransform(rng):
    X = rng.random((15, 3)) @ rng.random((3, 12))

    def my_init(X, rank, rng):
        return np.full((X.shape[0], rank), 0.5), np.full((rank, X.shape[1]), 0.5) + \
            rng.random((rank, X.shape[1]))

    p = make_particle(X, 4, my_init, 3)
    assert p["A"].shape == (15, 4) and p["solve_time"] >= 0 and p["init_time"] >= 0
    bank = generate_q_bank(n_datasets=1, n_restarts=2, cache=False)
    init = QTransformInit(bank.QA[0], bank.QW[0], svd=svd_symmetric(X, 3))
    p1 = make_particle(X, 4, init, 11)
    p2 = make_particle(X, 4, init, 11)
    np.testing.assert_array_equal(p1["A"], p2["A"])  # same seed, same particle
    with pytest.raises(ValueError, match="init must return"):
        make_particle(X, 4, lambda X, r, g: (np.ones((2, 2)), np.ones((2, 2))), 0)
