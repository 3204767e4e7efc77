r"""Stein-optimal weights: the point on the simplex that minimizes the KSD ``w^T K w``.

Masood & Doshi-Velez (2019), Section 4.2 / Algorithm 5 (after Liu & Lee 2017, black-box
importance sampling): given the Stein kernel matrix ``K`` of M points,

.. math:: w^* = \arg\min_{w \in \Delta^{M-1}} w^\top K w,

a convex quadratic program solved with cvxpy (Clarabel by default; the paper used SCS). ``K`` is
symmetrized, rescaled by its largest diagonal entry (with the paper's kernel the diagonal
reaches ``5000 DR``), given a tiny jitter relative to its diagonal and wrapped in
``cp.psd_wrap``; when a solver fails or returns a point worse than the trivial candidates, the
next solver is tried, and finally an accelerated
projected-gradient method on the simplex (pure NumPy). Tiny negatives are clipped and the weights
renormalized.
"""

import warnings

import numpy as np

from bnmfzoo.diagnostics._stein._stein_points import SteinMatrix

__all__ = ["solve_stein_qp", "stein_weights"]

DEFAULT_FALLBACK = ("SCS", "OSQP")


def _project_simplex(v):
    """Euclidean projection of ``v`` onto the probability simplex (Duchi et al. 2008)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def _projected_gradient(K, *, max_iter=10000, tol=1e-13):
    """FISTA with restarts for ``min w^T K w`` on the simplex (K symmetric PSD, scaled)."""
    m = K.shape[0]
    lipschitz = 2.0 * max(float(np.linalg.eigvalsh(K)[-1]), 1e-300)
    w = np.full(m, 1.0 / m)
    y = w.copy()
    t = 1.0
    obj = w @ K @ w
    for _ in range(max_iter):
        w_new = _project_simplex(y - (2.0 * (K @ y)) / lipschitz)
        obj_new = w_new @ K @ w_new
        if obj_new > obj:  # adaptive restart (O'Donoghue & Candes 2015)
            y, t = w.copy(), 1.0
            continue
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = w_new + ((t - 1.0) / t_new) * (w_new - w)
        step = np.abs(w_new - w).max()
        w, obj, t = w_new, obj_new, t_new
        if step < tol:
            break
    return w


def _cvxpy_solve(K, solver, options):
    import cvxpy as cp

    m = K.shape[0]
    w = cp.Variable(m)
    problem = cp.Problem(
        cp.Minimize(cp.quad_form(w, cp.psd_wrap(K))), [w >= 0, cp.sum(w) == 1]
    )
    problem.solve(solver=solver, **options)
    if problem.status not in ("optimal", "optimal_inaccurate") or w.value is None:
        raise RuntimeError(f"{solver} returned status {problem.status!r}")
    return np.asarray(w.value, dtype=float)


def _clean(w):
    w = np.where(np.isfinite(w), w, 0.0)
    w = np.clip(w, 0.0, None)
    total = w.sum()
    if total <= 0:
        raise RuntimeError("solver returned all-zero weights")
    return w / total


def _solver_defaults(solver):
    return {
        "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12},
        "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
        "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 200_000, "polish": True},
    }.get(solver, {})


def solve_stein_qp(
    K, *, solver="CLARABEL", fallback=DEFAULT_FALLBACK, jitter=1e-10, solver_options=None,
    return_info=False,
):
    """Minimize ``w^T K w`` over the probability simplex.

    Parameters
    ----------
    K : array-like, shape (M, M)
        A (nearly) positive semi-definite matrix, e.g. a Stein kernel matrix.
    solver : str
        First cvxpy solver to try: ``"CLARABEL"`` (default), ``"SCS"`` (the paper's) or
        ``"OSQP"``; ``"NUMPY"`` skips cvxpy and uses projected gradient directly.
    fallback : sequence of str
        Solvers tried, in order, when ``solver`` fails; projected gradient comes last.
    jitter : float
        Added to the diagonal, relative to the mean diagonal of the rescaled matrix.
    solver_options : dict, optional
        Extra keyword arguments for the first solver's ``solve`` call.
    return_info : bool
        Also return a dict with the solver used and any failures.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        Non-negative weights summing to one.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein.weights import solve_stein_qp
    >>> solve_stein_qp(np.diag([1.0, 3.0])).round(3)
    array([0.75, 0.25])
    """
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"K must be a non-empty square matrix, got shape {K.shape}")
    if not np.isfinite(K).all():
        raise ValueError("K contains NaN or infinite entries")
    jitter = float(jitter)
    if not jitter >= 0:
        raise ValueError(f"jitter must be non-negative, got {jitter}")
    m = K.shape[0]
    info = {"solver": None, "failures": []}
    if m == 1:
        info["solver"] = "trivial"
        w = np.ones(1)
        return (w, info) if return_info else w
    K = 0.5 * (K + K.T)
    scale = float(np.max(np.abs(np.diag(K))))
    if scale <= 0:
        scale = float(np.max(np.abs(K))) or 1.0
    Ks = K / scale
    Ks = Ks + jitter * max(float(np.mean(np.diag(Ks))), 1e-300) * np.eye(m)
    # the solution must beat the trivial candidates: uniform weights and the best single point
    reference = min(float(np.full(m, 1.0 / m) @ Ks @ np.full(m, 1.0 / m)), float(np.diag(Ks).min()))
    slack = 1e-7 * abs(reference) + 1e-12
    order = [solver, *[s for s in fallback if s != solver]]
    for i, name in enumerate(order):
        name = str(name).upper()
        if name == "NUMPY":
            break
        options = {**_solver_defaults(name), **((solver_options or {}) if i == 0 else {})}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                w = _clean(_cvxpy_solve(Ks, name, options))
        except Exception as err:  # noqa: BLE001 - any solver failure means: try the next one
            info["failures"].append(f"{name}: {err}")
            continue
        if w @ Ks @ w > reference + slack:
            info["failures"].append(f"{name}: objective worse than uniform/best-vertex")
            continue
        info["solver"] = name
        return (w, info) if return_info else w
    w = _clean(_projected_gradient(Ks))
    info["solver"] = "projected_gradient"
    return (w, info) if return_info else w


def stein_weights(
    K,
    *,
    solver="CLARABEL",
    fallback=DEFAULT_FALLBACK,
    jitter=1e-10,
    solver_options=None,
    return_discrepancy=False,
    store=True,
):
    """Stein-optimal weights of a set of points: ``argmin_{w in simplex} w^T K w``.

    Masood & Doshi-Velez (2019), Algorithm 5 (after Liu & Lee 2017): every method's points
    (particles, MCMC draws) get these weights before their KSD is compared. The matrix comes
    from :func:`bnmfzoo.diagnostics.stein_matrix` (model and points, with its defaults: the
    unconstrained space and the median-heuristic IMQ kernel) or
    :func:`bnmfzoo.diagnostics.stein_kernel_matrix` (positions and scores).

    Parameters
    ----------
    K : SteinMatrix or array-like (M, M)
        A :class:`~bnmfzoo.diagnostics._stein._stein_points.SteinMatrix` or a Stein kernel matrix.
    solver : {"CLARABEL", "SCS", "OSQP", "NUMPY"}
        First solver tried (cvxpy); see :func:`solve_stein_qp`.
    fallback : sequence of str
        Solvers tried next; a NumPy projected-gradient solver always comes last.
    jitter : float
        Diagonal jitter relative to the rescaled matrix's mean diagonal.
    solver_options : dict, optional
        Extra options for the first solver.
    return_discrepancy : bool
        Also return the minimized KSD ``w^T K w`` (on the unscaled, unjittered ``K``).
    store : bool
        For a ``SteinMatrix`` built from a DataTree, write ``stein_weights``,
        ``stein_discrepancy``, ``ksd_v``, ``ksd_u`` and ``n_eff`` into its ``diagnostics``
        group (in place).

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, float)
        Weights ``(M,)``, non-negative and summing to one (and the KSD).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics import stein_kernel_matrix, stein_weights
    >>> x = np.random.default_rng(1).normal(size=(6, 2))
    >>> w = stein_weights(stein_kernel_matrix(x, -x))
    >>> bool(np.isclose(w.sum(), 1.0) and (w >= 0).all())
    True
    """
    qp = {"solver": solver, "fallback": fallback, "jitter": jitter,
          "solver_options": solver_options}
    if isinstance(K, SteinMatrix):
        w = solve_stein_qp(K.K, **qp)
        if store:
            K.store(w, "optimal")
        Kmat = K.K
    elif hasattr(K, "free_RVs"):
        raise TypeError(
            "stein_weights takes a Stein kernel matrix; for a model and points pass "
            "stein_matrix(model, points, ...) (bnmfzoo.diagnostics.stein_matrix)"
        )
    else:
        Kmat = np.asarray(K, dtype=float)
        w = solve_stein_qp(Kmat, **qp)
    if return_discrepancy:
        return w, float(w @ (0.5 * (Kmat + Kmat.T)) @ w)
    return w
