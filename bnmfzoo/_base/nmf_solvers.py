"""Plain (non-Bayesian) NMF solvers, the numeric floor shared by models, terms and fitters.

Pure NumPy / numba / scikit-learn, nothing of PyMC; imports nothing of ``bnmfzoo`` but
:mod:`bnmfzoo._base.rng`. Conventions: ``X`` is D x N, ``A`` is D x R, ``W`` is R x N, ``mask`` is
True where observed (``None`` = fully observed).

Starts

* :func:`random_init`: scikit-learn's random initialization, ``eta |N(0, 1)|`` with
  ``eta = sqrt(mean(X) / R)`` (Masood & Doshi-Velez 2019, Sec. 7, without the formula's
  missing ``1 / (DN)``).
* :func:`nndsvdar_init`: NNDSVD with zeros replaced by small random values (Boutsidis &
  Gallopoulos 2008), through scikit-learn; its randomized SVD is the only source of diversity.

Solvers

* :func:`masked_mu_sweep` / :func:`masked_multiplicative`: Lee & Seung (2001) Frobenius
  multiplicative updates restricted to the observed entries (Masood & Doshi-Velez 2019,
  Sec. 7.3).
* :func:`masked_hals`: coordinate descent (HALS, numba) on the observed entries with EM
  filling; it does not stall on Q-Transform padding as masked MU does.
* :func:`solve_nmf`: scikit-learn coordinate descent on complete data, else one of the above.
* :func:`complete_matrix`: fill the missing entries with a masked-MU reconstruction.
* :func:`lin_pg_nmf` / :func:`lin_pg_restarts`: Lin's (2007) projected-gradient alternating
  non-negative least squares with Lin's Armijo rule (``beta = 0.1``, sufficient decrease
  ``sigma = 0.01``), stopping when the projected-gradient norm falls below ``tol`` times its
  initial value; missing entries are imputed with the current reconstruction before each outer
  iteration (EM imputation), so only observed entries shape the fit.

Objective

* :func:`max_abs_residual`: the largest ``|X - A W|`` over the observed entries (the
  uniform-noise half-width of Masood & Doshi-Velez 2016, Sec. 6).
"""

import warnings

import numba
import numpy as np

from bnmfzoo._base.rng import as_generator, spawn_seeds

__all__ = [
    "random_init",
    "nndsvdar_init",
    "masked_mu_sweep",
    "masked_multiplicative",
    "masked_hals",
    "solve_nmf",
    "complete_matrix",
    "lin_pg_nmf",
    "lin_pg_restarts",
    "max_abs_residual",
]

_FLOOR = 1e-10


def _mean_observed(X, mask):
    return float(np.mean(X if mask is None else X[mask]))


def random_init(X, rank, rng, *, mask=None):
    """Random non-negative initialization as in scikit-learn (``init="random"``).

    Parameters
    ----------
    X : numpy.ndarray
        D x N data (entries outside ``mask`` are ignored).
    rank : int
        R.
    rng : numpy.random.Generator
        Source of randomness.
    mask : numpy.ndarray of bool, optional
        True = observed.

    Returns
    -------
    A, W : numpy.ndarray
        D x R and R x N non-negative starting factors.

    Examples
    --------
    >>> import numpy as np
    >>> A, W = random_init(np.ones((4, 3)), 2, np.random.default_rng(0))
    >>> A.shape, W.shape
    ((4, 2), (2, 3))
    """
    D, N = X.shape
    eta = np.sqrt(max(_mean_observed(X, mask), _FLOOR) / rank)
    A = eta * np.abs(rng.standard_normal((D, rank)))
    W = eta * np.abs(rng.standard_normal((rank, N)))
    return A, W


def nndsvdar_init(X, rank, rng, *, mask=None):
    """NNDSVDar initialization (scikit-learn ``init="nndsvdar"``), seeded from ``rng``.

    With missing entries it runs on :func:`complete_matrix` of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> A, W = nndsvdar_init(np.ones((4, 3)), 2, np.random.default_rng(0))
    >>> bool((A >= 0).all() and (W >= 0).all())
    True
    """
    from sklearn.decomposition._nmf import _initialize_nmf

    seed = int(rng.integers(0, 2**31 - 1))
    Xc = X if mask is None else complete_matrix(X, mask, rank, random_seed=seed)
    A, W = _initialize_nmf(np.ascontiguousarray(Xc, dtype=float), rank, init="nndsvdar",
                           random_state=seed)
    return A, W


def masked_mu_sweep(MX, Mf, A, W, *, eps=_FLOOR, additive=False):
    """One Lee & Seung (2001) Frobenius sweep on the observed entries, in place.

    ``A <- A (M X) W^T / ((M AW) W^T)`` then ``W <- W A^T (M X) / (A^T (M AW))``, each
    denominator floored at ``eps`` (``max(den, eps)``), or shifted by it (``den + eps``) when
    ``additive``.

    Parameters
    ----------
    MX : numpy.ndarray
        D x N data with unobserved entries set to 0.
    Mf : numpy.ndarray
        D x N mask as floats (1 = observed).
    A, W : numpy.ndarray
        D x R and R x N float factors, updated in place.
    eps : float
        Denominator floor (or shift).
    additive : bool
        Add ``eps`` to the denominators instead of flooring them.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [2.0, 4.0]]); A = np.ones((2, 1)); W = np.ones((1, 2))
    >>> masked_mu_sweep(X, np.ones((2, 2)), A, W)
    >>> bool(np.sum((X - A @ W) ** 2) < np.sum((X - 1.0) ** 2))
    True
    """
    if additive:
        A *= (MX @ W.T) / ((Mf * (A @ W)) @ W.T + eps)
        W *= (A.T @ MX) / (A.T @ (Mf * (A @ W)) + eps)
    else:
        MAW = Mf * (A @ W)
        A *= (MX @ W.T) / np.maximum(MAW @ W.T, eps)
        MAW = Mf * (A @ W)
        W *= (A.T @ MX) / np.maximum(A.T @ MAW, eps)


def masked_multiplicative(X, A, W, mask, *, max_iter=500, tol=1e-4, check_every=10):
    """Lee & Seung (2001) multiplicative updates on the observed entries only (Frobenius).

    Starts from ``max(A, 1e-10)``, ``max(W, 1e-10)`` and repeats :func:`masked_mu_sweep`; stops
    when the relative decrease of the masked squared error over ``check_every`` iterations is
    below ``tol``.

    Returns
    -------
    A, W : numpy.ndarray
    n_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((6, 2)) @ rng.random((2, 5)); mask = rng.random(X.shape) > 0.2
    >>> A, W, _ = masked_multiplicative(X, *random_init(X, 2, rng), mask)
    >>> bool(np.linalg.norm(mask * (X - A @ W)) < 0.1 * np.linalg.norm(mask * X))
    True
    """
    Mf = mask.astype(float)
    MX = np.where(mask, np.nan_to_num(X), 0.0)
    A = np.maximum(np.array(A, dtype=float), _FLOOR)
    W = np.maximum(np.array(W, dtype=float), _FLOOR)
    prev = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        masked_mu_sweep(MX, Mf, A, W)
        if it % check_every == 0 or it == max_iter:
            err = float(np.sum((MX - Mf * (A @ W)) ** 2))
            if np.isfinite(prev) and prev - err <= tol * max(prev, _FLOOR):
                break
            prev = err
    return A, W, it


@numba.njit(cache=True)
def _hals_update(F, G, XG, floor):  # pragma: no cover - compiled
    """One HALS pass over the columns of ``F`` (D x R) for ``X ~ F G^T`` given ``G^T G``, ``X G``.

    ``F[:, k] <- max(F[:, k] + (XG[:, k] - F GG[:, k]) / GG[k, k], floor)`` in place (the exact
    coordinate minimizer), as scikit-learn's ``cd`` solver.
    """
    D, R = F.shape
    for k in range(R):
        gkk = G[k, k]
        if gkk <= 0.0:
            continue
        for d in range(D):
            grad = -XG[d, k]
            for j in range(R):
                grad += F[d, j] * G[j, k]
            F[d, k] = max(F[d, k] - grad / gkk, floor)


def masked_hals(X, A, W, mask, *, max_iter=200, tol=1e-4, check_every=10):
    """HALS coordinate descent on the observed entries only (Frobenius), EM style.

    Each iteration fills the unobserved entries with the current ``A W`` and does one HALS pass
    over the columns of ``A`` and one over the rows of ``W`` on the filled matrix (the
    expectation-maximization / majorize-minimize scheme, so ``||mask * (X - AW)||`` never
    increases); the cost is three ``D x N x R`` products per iteration, like scikit-learn's
    ``cd`` solver. Unlike multiplicative updates, coordinate updates do not stall on the tiny
    padding entries of Q-Transform initializations. Stops when the relative decrease of the
    masked squared error over ``check_every`` iterations is below ``tol``.

    Parameters
    ----------
    X : numpy.ndarray
        D x N data (entries outside ``mask`` are ignored).
    A, W : numpy.ndarray
        Starting factors (D x R, R x N).
    mask : numpy.ndarray of bool
        True = observed.
    max_iter, tol, check_every
        Iteration limit and stopping rule.

    Returns
    -------
    A, W : numpy.ndarray
    n_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((8, 2)) @ rng.random((2, 6)); mask = rng.random(X.shape) > 0.2
    >>> A0, W0 = random_init(X, 2, rng)
    >>> A, W, _ = masked_hals(X, A0, W0, mask)
    >>> bool(np.linalg.norm(mask * (X - A @ W)) < 0.2 * np.linalg.norm(mask * (X - A0 @ W0)))
    True
    """
    mask = np.asarray(mask, dtype=bool)
    MX = np.where(mask, np.nan_to_num(np.asarray(X, dtype=float)), 0.0)
    A = np.ascontiguousarray(np.maximum(np.array(A, dtype=float), _FLOOR))
    Wt = np.ascontiguousarray(np.maximum(np.array(W, dtype=float), _FLOOR).T)  # N x R
    missing = ~mask
    full = not missing.any()
    prev = float(np.sum((MX - np.where(mask, A @ Wt.T, 0.0)) ** 2))
    it = 0
    for it in range(1, max_iter + 1):
        if full:
            Xc = MX
        else:
            Xc = A @ Wt.T
            np.copyto(Xc, MX, where=mask)
        _hals_update(A, Wt.T @ Wt, Xc @ Wt, _FLOOR)
        _hals_update(Wt, A.T @ A, Xc.T @ A, _FLOOR)
        if it % check_every == 0 or it == max_iter:
            err = float(np.sum((MX - np.where(mask, A @ Wt.T, 0.0)) ** 2))
            if prev - err <= tol * max(prev, _FLOOR):
                break
            prev = err
    return A, np.ascontiguousarray(Wt.T), it


def solve_nmf(X, A0, W0, *, mask=None, max_iter=200, tol=1e-4, solver="cd"):
    """Converge an initialization with a non-Bayesian Frobenius NMF solver.

    Parameters
    ----------
    X : numpy.ndarray
        D x N data.
    A0, W0 : numpy.ndarray
        Starting factors (D x R, R x N).
    mask : numpy.ndarray of bool, optional
        True = observed; when given (and not all True) masked multiplicative updates are used.
    max_iter, tol : int, float
        Solver limits (scikit-learn's defaults).
    solver : {"cd", "mu", "hals"}
        scikit-learn solver on complete data; ``"hals"``: :func:`masked_hals` (coordinate
        descent on the observed entries, with or without missing entries). With missing
        entries ``"cd"`` and ``"mu"`` use masked multiplicative updates (the paper's Sec. 7.3).

    Returns
    -------
    A, W : numpy.ndarray
    n_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((6, 2)) @ rng.random((2, 5))
    >>> A, W, n_iter = solve_nmf(X, *random_init(X, 2, rng))
    >>> bool(np.linalg.norm(X - A @ W) < 0.1 * np.linalg.norm(X))
    True
    """
    if solver == "hals":
        full = np.ones(np.shape(X), dtype=bool) if mask is None else mask
        return masked_hals(X, A0, W0, full, max_iter=max_iter, tol=tol)
    if mask is not None and not mask.all():
        return masked_multiplicative(X, A0, W0, mask, max_iter=max_iter, tol=tol)
    from sklearn.decomposition import non_negative_factorization
    from sklearn.exceptions import ConvergenceWarning

    R = A0.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        A, W, n_iter = non_negative_factorization(
            np.ascontiguousarray(X, dtype=float),
            W=np.ascontiguousarray(A0, dtype=float),
            H=np.ascontiguousarray(W0, dtype=float),
            n_components=R, init="custom", solver=solver, beta_loss="frobenius",
            max_iter=max_iter, tol=tol,
        )
    return A, W, int(n_iter)


def complete_matrix(X, mask, rank, *, random_seed=0, max_iter=500, tol=1e-5):
    """Fill unobserved entries of ``X`` with a rank-``rank`` masked-MU reconstruction.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((4, 4)); mask = np.ones((4, 4), bool); mask[0, 0] = False
    >>> bool(abs(complete_matrix(X, mask, 1)[0, 0] - 1) < 0.05)
    True
    """
    if mask is None or mask.all():
        return np.asarray(X, dtype=float)
    rng = np.random.default_rng(random_seed)
    A, W = random_init(np.nan_to_num(X), rank, rng, mask=mask)
    A, W, _ = masked_multiplicative(X, A, W, mask, max_iter=max_iter, tol=tol)
    return np.where(mask, np.nan_to_num(X), A @ W)


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

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((5, 2)) @ np.random.default_rng(1).random((2, 4))
    >>> fits = lin_pg_restarts(X, 2, 3, random_seed=0)
    >>> len(fits), max_abs_residual(X, *fits[0]) < 0.05
    (3, True)
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
