"""Lin's (2007) projected-gradient NMF: the restarts that seed RRT and set epsilon / sigma.

Alternating non-negative least squares; each subproblem is solved by projected gradient with
Lin's Armijo rule (``beta = 0.1``, sufficient-decrease ``sigma = 0.01``), stopping when the
projected gradient norm falls below ``tol`` times its initial value. Missing entries (``mask``
False) are imputed with the current reconstruction before each outer iteration (EM imputation),
which leaves observed entries as the only data that shape the fit.

Pure NumPy; knows nothing of PyMC.
"""

import numba
import numpy as np

from bnmfzoo._rng import as_generator, spawn_seeds


@numba.njit(cache=True)
def _projgrad_norm(grad, H):
    total = 0.0
    for i in range(H.shape[0]):
        for j in range(H.shape[1]):
            if grad[i, j] < 0 or H[i, j] > 0:
                total += grad[i, j] * grad[i, j]
    return np.sqrt(total)


@numba.njit(cache=True)
def _nls_subproblem(WtV, WtW, H, tol, max_iter):
    """Solve ``min_{H >= 0} ||V - W H||^2`` by projected gradient (Lin 2007, ``nlssubprob``)."""
    alpha, beta = 1.0, 0.1
    H = H.copy()
    grad = WtW @ H - WtV
    it = 0
    for it in range(1, max_iter + 1):
        grad = WtW @ H - WtV
        if _projgrad_norm(grad, H) < tol:
            break
        H_prev = H
        decrease = False
        for inner in range(20):
            H_new = np.maximum(H - alpha * grad, 0.0)
            d = H_new - H
            gradd = np.sum(grad * d)
            dQd = np.sum((WtW @ d) * d)
            suff = 0.99 * gradd + 0.5 * dQd < 0
            if inner == 0:
                decrease = not suff
                H_prev = H
            if decrease:
                if suff:
                    H = H_new
                    break
                alpha *= beta
            else:
                if not suff or np.array_equal(H_prev, H_new):
                    H = H_prev
                    break
                alpha /= beta
                H_prev = H_new
        else:
            if not decrease:
                H = H_prev
    return H, grad, it


def lin_pg_nmf(X, rank, *, mask=None, tol=1e-4, max_iter=1000, init=None, random_seed=None):
    """Factorize ``X ~ A W`` (A, W >= 0) with Lin's projected-gradient ALS.

    Parameters
    ----------
    X : numpy.ndarray
        D x N non-negative data (entries where ``mask`` is False are ignored).
    rank : int
        R.
    mask : numpy.ndarray of bool, optional
        True where observed.
    tol : float
        Relative projected-gradient tolerance (Lin's ``tol``).
    max_iter : int
        Maximum outer iterations.
    init : tuple of numpy.ndarray, optional
        Starting ``(A, W)``; default entries iid U(0, 1) scaled to the data mean.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    A : numpy.ndarray
        D x R.
    W : numpy.ndarray
        R x N.
    """
    X = np.asarray(X, dtype=float)
    D, N = X.shape
    rng = as_generator(random_seed)
    if mask is None or mask.all():
        mask = None
        V = X
    else:
        V = np.where(mask, np.nan_to_num(X), 0.0)
    if init is None:
        scale = np.sqrt(max(np.mean(V), 1e-12) / rank)
        A = rng.uniform(0.0, 1.0, size=(D, rank)) * scale * 2.0
        W = rng.uniform(0.0, 1.0, size=(rank, N)) * scale * 2.0
    else:
        A, W = (np.array(m, dtype=float) for m in init)
    if mask is not None:
        V = np.where(mask, V, A @ W)
    grad_A = A @ (W @ W.T) - V @ W.T
    grad_W = (A.T @ A) @ W - A.T @ V
    init_grad = np.sqrt(np.sum(grad_A**2) + np.sum(grad_W**2))
    tol_A = tol_W = max(0.001, tol) * init_grad
    for _ in range(max_iter):
        proj = np.hypot(_projgrad_norm(grad_A, A), _projgrad_norm(grad_W, W))
        if proj < tol * init_grad:
            break
        At, gAt, it_A = _nls_subproblem(W @ V.T, W @ W.T, np.ascontiguousarray(A.T), tol_A, 1000)
        A, grad_A = At.T, gAt.T
        if it_A == 1:
            tol_A *= 0.1
        W, grad_W, it_W = _nls_subproblem(A.T @ V, A.T @ A, W, tol_W, 1000)
        if it_W == 1:
            tol_W *= 0.1
        if mask is not None:
            V = np.where(mask, np.nan_to_num(X), A @ W)
    return A, W


def lin_pg_restarts(X, rank, n_restarts, *, mask=None, tol=1e-4, max_iter=1000, random_seed=None):
    """Run :func:`lin_pg_nmf` from ``n_restarts`` random starts (one spawned seed each).

    Returns
    -------
    list of tuple of numpy.ndarray
        ``[(A_1, W_1), ...]``.
    """
    seeds = spawn_seeds(random_seed, n_restarts)
    return [
        lin_pg_nmf(X, rank, mask=mask, tol=tol, max_iter=max_iter, random_seed=s) for s in seeds
    ]


def max_abs_residual(X, A, W, mask=None):
    """Largest ``|X - A W|`` over observed entries."""
    res = np.abs(np.asarray(X, dtype=float) - A @ W)
    if mask is not None:
        res = res[mask]
    return float(np.max(res))
