"""Particle initializations and the non-Bayesian NMF solver that converges each one.

Pure NumPy / scikit-learn, nothing of PyMC. Conventions: ``X`` is D x N, ``A`` is D x R, ``W`` is
R x N, ``mask`` is True where observed (``None`` = fully observed).

* :func:`random_init`: scikit-learn's random initialization, ``eta |N(0, 1)|`` with
  ``eta = sqrt(mean(X) / R)`` (the paper's formula without its missing ``1 / (DN)``).
* :func:`nndsvdar_init`: NNDSVD with zeros replaced by small random values (Boutsidis &
  Gallopoulos 2008), through scikit-learn; its randomized SVD is the only source of diversity.
* :func:`solve_nmf`: scikit-learn coordinate descent (``init="custom"``, Frobenius) on complete
  data, or Lee-Seung multiplicative updates restricted to the observed entries (Sec. 7.3) when a
  mask is given.
* :func:`masked_hals`: coordinate descent (HALS, numba) on the observed entries with EM
  filling; the ``solver="hals"`` option, which does not stall on Q-Transform padding as
  masked MU does.
* :func:`complete_matrix`: fill the missing entries with a masked-MU reconstruction (the data the
  Q-Transform's SVD and NNDSVDar see when ``X`` has missing entries).
* :func:`make_particle`: one initialization plus one solve with timings; a pure function of its
  arguments and seed, so serial and Dask runs agree.
"""

import time
import warnings

import numba
import numpy as np

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


def masked_multiplicative(X, A, W, mask, *, max_iter=500, tol=1e-4, check_every=10):
    """Lee-Seung multiplicative updates on the observed entries only (Frobenius).

    ``A <- A (M X) W^T / ((M AW) W^T)``, ``W <- W A^T (M X) / (A^T (M AW))``; stops when the
    relative decrease of the masked squared error over ``check_every`` iterations is below
    ``tol``.

    Returns
    -------
    A, W : numpy.ndarray
    n_iter : int
    """
    Mf = mask.astype(float)
    MX = np.where(mask, np.nan_to_num(X), 0.0)
    A = np.maximum(np.array(A, dtype=float), _FLOOR)
    W = np.maximum(np.array(W, dtype=float), _FLOOR)
    prev = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        MAW = Mf * (A @ W)
        A *= (MX @ W.T) / np.maximum(MAW @ W.T, _FLOOR)
        MAW = Mf * (A @ W)
        W *= (A.T @ MX) / np.maximum(A.T @ MAW, _FLOOR)
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


def project_columns_to_simplex(A, W):
    """Rescale so that the columns of ``A`` sum to 1, moving the scale into ``W`` (AW unchanged).

    An all-zero column is replaced by the uniform column (its row of ``W`` is zero, so ``A @ W``
    is still unchanged). Works on single matrices or stacks (..., D, R) / (..., R, N).

    Examples
    --------
    >>> import numpy as np
    >>> A, W = project_columns_to_simplex(np.array([[1.0, 0.0], [3.0, 0.0]]), np.ones((2, 2)))
    >>> A.sum(axis=0).tolist(), W[:, 0].tolist()
    ([1.0, 1.0], [4.0, 0.0])
    """
    A = np.array(A, dtype=float)
    W = np.array(W, dtype=float)
    s = A.sum(axis=-2)  # (..., R)
    zero = s <= 0
    D = A.shape[-2]
    A = np.where(zero[..., None, :], 1.0 / D, A / np.where(zero, 1.0, s)[..., None, :])
    W = np.where(zero[..., :, None], 0.0, W * s[..., :, None])
    return A, W


def _accepts_mask(func):
    import inspect

    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "mask" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def make_particle(X, rank, init, seed, *, mask=None, solver_kwargs=None):
    """Generate one particle: initialization from ``init(X, rank, rng)`` then one NMF solve.

    ``init`` may also accept ``mask=`` (our built-in initializations do). Returns a dict with
    ``A``, ``W``, ``init_time``, ``solve_time`` (wall seconds), ``init_cpu_time``,
    ``solve_cpu_time`` (CPU seconds of this process) and ``n_iter``.
    """
    rng = np.random.default_rng(seed)
    t0, c0 = time.perf_counter(), time.process_time()
    if _accepts_mask(init):
        A0, W0 = init(X, rank, rng, mask=mask)
    else:
        A0, W0 = init(np.where(mask, X, 0.0) if mask is not None else X, rank, rng)
    A0 = np.asarray(A0, dtype=float)
    W0 = np.asarray(W0, dtype=float)
    D, N = X.shape
    if A0.shape != (D, rank) or W0.shape != (rank, N):
        raise ValueError(
            f"init must return A of shape {(D, rank)} and W of shape {(rank, N)}, "
            f"got {A0.shape} and {W0.shape}"
        )
    if not (np.isfinite(A0).all() and np.isfinite(W0).all()):
        raise ValueError("init returned non-finite factors")
    A0 = np.maximum(A0, 0.0)
    W0 = np.maximum(W0, 0.0)
    t1, c1 = time.perf_counter(), time.process_time()
    A, W, n_iter = solve_nmf(np.nan_to_num(X), A0, W0, mask=mask, **(solver_kwargs or {}))
    t2, c2 = time.perf_counter(), time.process_time()
    return {"A": A, "W": W, "init_time": t1 - t0, "solve_time": t2 - t1,
            "init_cpu_time": c1 - c0, "solve_cpu_time": c2 - c1, "n_iter": n_iter}
