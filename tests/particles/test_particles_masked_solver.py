"""EM coordinate descent on the observed entries (``solve_nmf(solver="hals")``, issue #5 Sec. 7.3).

Masked multiplicative updates stall on the tiny padding entries of Q-Transform initializations;
the HALS solver must (a) ignore unobserved entries, (b) never increase the masked error (it is a
majorize-minimize scheme), (c) equal scikit-learn's ``cd`` on complete data, and (d) not stall.
"""

import numpy as np
from sklearn.decomposition import non_negative_factorization

from bnmfzoo._base.nmf_solvers import masked_hals, masked_multiplicative, random_init, solve_nmf
from bnmfzoo.inference.particles._init import make_particle


def _low_rank(rng, D=40, N=30, R=5, noise=0.01):
    X = rng.random((D, R)) @ rng.random((R, N))
    return np.abs(X + noise * rng.standard_normal(X.shape))


def _masked_err(X, mask, A, W):
    return float(np.sum((np.where(mask, X - A @ W, 0.0)) ** 2))


def test_hals_ignores_unobserved_entries(rng):
    X = _low_rank(rng)
    mask = rng.random(X.shape) > 0.3
    A0, W0 = random_init(X, 5, np.random.default_rng(1), mask=mask)
    A, W, _ = masked_hals(np.where(mask, X, 1e6), A0, W0, mask, max_iter=50, tol=0.0)
    A_ref, W_ref, _ = masked_hals(np.where(mask, X, np.nan), A0, W0, mask, max_iter=50, tol=0.0)
    # garbage (1e6 or NaN) where unobserved: identical arithmetic on the observed entries
    np.testing.assert_array_equal(A, A_ref)
    np.testing.assert_array_equal(W, W_ref)


def test_hals_masked_error_never_increases(rng):
    X = _low_rank(rng)
    mask = rng.random(X.shape) > 0.5
    A, W = random_init(X, 5, np.random.default_rng(2), mask=mask)
    errs = [_masked_err(X, mask, A, W)]
    for _ in range(30):
        A, W, _ = masked_hals(X, A, W, mask, max_iter=1, tol=0.0)
        errs.append(_masked_err(X, mask, A, W))
    # EM filling + exact coordinate minimization of the filled objective is a majorize-minimize
    # step for the masked objective: monotone up to float rounding (relative 1e-12)
    assert all(b <= a * (1 + 1e-12) for a, b in zip(errs, errs[1:]))
    assert errs[-1] < 0.5 * errs[0]


def test_hals_equals_sklearn_cd_on_complete_data(rng):
    X = _low_rank(rng)
    A0, W0 = random_init(X, 5, np.random.default_rng(3))
    A, W, n_iter = solve_nmf(X, A0, W0, solver="hals", max_iter=40, tol=0.0)
    As, Ws, _ = non_negative_factorization(X, W=A0.copy(), H=W0.copy(), n_components=5,
                                           init="custom", solver="cd", max_iter=40, tol=0.0,
                                           shuffle=False)
    assert n_iter == 40
    # the same coordinate updates in the same order (sklearn clips at 0, we floor at 1e-10),
    # so the reconstructions agree to float/floor precision
    np.testing.assert_allclose(A @ W, As @ Ws, rtol=1e-6, atol=1e-8)


def test_hals_does_not_stall_on_tiny_padding(rng):
    # a Q-Transform-like init: 3 good components (true factors) + 3 padded ones at 1e-3 scale
    D, N, R = 60, 50, 6
    A_true, W_true = rng.random((D, R)), rng.random((R, N))
    X = A_true @ W_true
    mask = rng.random(X.shape) > 0.3
    pad = 1e-3 * np.sqrt(X.mean() / R)
    A0 = np.hstack([A_true[:, :3], pad * rng.random((D, 3))])
    W0 = np.vstack([W_true[:3], pad * rng.random((3, N))])
    err0 = _masked_err(X, mask, A0, W0)
    A_mu, W_mu, _ = masked_multiplicative(X, A0, W0, mask, max_iter=100, tol=0.0)
    A_h, W_h, _ = masked_hals(X, A0, W0, mask, max_iter=100, tol=0.0)
    e_mu, e_h = _masked_err(X, mask, A_mu, W_mu), _masked_err(X, mask, A_h, W_h)
    # exact rank-6 data: coordinate descent grows the padded components at once and fits to
    # a small fraction of the start; MU multiplies tiny entries by O(1) factors and stays far
    # behind (the pathology seen on the faces: 12626 vs 10389 after 200 iterations)
    assert e_h < 0.05 * err0
    assert e_h < 0.2 * e_mu


def test_make_particle_passes_hals_solver(rng):
    X = _low_rank(rng)
    mask = rng.random(X.shape) > 0.2
    out = make_particle(np.where(mask, X, np.nan), 5, random_init, 7, mask=mask,
                        solver_kwargs={"solver": "hals", "max_iter": 30, "tol": 0.0})
    A_ref, W_ref, _ = masked_hals(X, *random_init(np.where(mask, X, 0.0), 5,
                                                  np.random.default_rng(7), mask=mask),
                                  mask, max_iter=30, tol=0.0)
    assert out["n_iter"] == 30
    np.testing.assert_allclose(out["A"] @ out["W"], A_ref @ W_ref)


def test_masked_mu_sweep_additive_is_lee_seung_with_shifted_denominators():
    """``additive=True`` is the update ``reference_sigma`` uses: denominators ``den + eps``."""
    from bnmfzoo._base.nmf_solvers import masked_mu_sweep

    rng = np.random.default_rng(4)
    X = _low_rank(rng, D=8, N=6, R=2)
    mask = rng.random(X.shape) > 0.3
    Mf, MX = mask.astype(float), np.where(mask, X, 0.0)
    A0, W0 = rng.random((8, 2)), rng.random((2, 6))
    A, W = A0.copy(), W0.copy()
    masked_mu_sweep(MX, Mf, A, W, eps=1e-12, additive=True)
    A_ref = A0 * (MX @ W0.T) / ((Mf * (A0 @ W0)) @ W0.T + 1e-12)
    W_ref = W0 * (A_ref.T @ MX) / (A_ref.T @ (Mf * (A_ref @ W0)) + 1e-12)
    np.testing.assert_allclose(A, A_ref, rtol=1e-14)
    np.testing.assert_allclose(W, W_ref, rtol=1e-14)
    err = lambda A, W: np.sum((MX - Mf * (A @ W)) ** 2)  # noqa: E731
    assert err(A, W) <= err(A0, W0)  # a majorize-minimize step (Lee & Seung 2001, Thm. 1)
