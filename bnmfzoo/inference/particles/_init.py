"""Particle initializations for the Stein-weighted particle fitters (Masood & Doshi-Velez 2019).

Pure NumPy, nothing of PyMC. The plain NMF starts and solvers a particle uses (random,
NNDSVDar, masked multiplicative updates, HALS, scikit-learn) live in
:mod:`bnmfzoo._base.nmf_solvers`; this module adds what is particular to particles:

* :func:`project_columns_to_simplex`: the Dirichlet-column scale fixing of the SILF model.
* :func:`make_particle`: one initialization plus one solve with timings; a pure function of its
  arguments and seed, so serial and Dask runs agree.
"""

import time

import numpy as np

from bnmfzoo._base.nmf_solvers import (  # noqa: F401  (also re-exported for older imports)
    complete_matrix,
    masked_hals,
    masked_multiplicative,
    nndsvdar_init,
    random_init,
    solve_nmf,
)


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
    ``solve_cpu_time`` (CPU seconds of this process) and ``n_iter``. Negative entries of ``X``
    (allowed by Gaussian likelihoods) are set to 0 for the initialization and the solve.
    """
    rng = np.random.default_rng(seed)
    t0, c0 = time.perf_counter(), time.process_time()
    # The solve only places the particle; multiplicative updates need X >= 0, while Gaussian
    # likelihoods accept negative observations (noise around a non-negative signal). Place
    # particles on max(X, 0); the weights use the model's likelihood on the data as given.
    X = np.maximum(X, 0.0)
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
