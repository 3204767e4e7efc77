"""Exponential-prior NMF with uniform (box) noise (Masood & Doshi-Velez 2016, §4.1).

``A[d, k] ~ Exp(lambda_A)``, ``W[k, n] ~ Exp(lambda_W)`` (rates), and every observed entry
``X[d, n] ~ Uniform((AW)[d, n] - epsilon, (AW)[d, n] + epsilon)``. The posterior is the prior
restricted to the feasible set ``{A, W >= 0 : |X - AW| <= epsilon}``: a flat likelihood with no
gradient, so NUTS cannot sample it; :func:`bnmfzoo.inference.fit_rrt` explores it.
"""

import numpy as np
import pymc as pm

from bnmfzoo._base.outliers import warn_outliers
from bnmfzoo._base.results import data_coords
from bnmfzoo._base.validation import check_matrix, check_positive, check_rank, fmt

#: Lin restarts that defined a default epsilon, by (data, mask, rank): a memo of
#: :func:`default_epsilon` (a pure function of its inputs), so that ``fit_rrt`` starts from the
#: restarts whose worst residual is the model's epsilon (the paper's base nodes) without
#: rerunning them. Nothing is attached to the model; a miss only costs fresh restarts.
_RESTARTS = {}
_RESTARTS_MAX = 8


def default_epsilon(X, rank, *, mask=None, n_restarts=10, random_seed=None):
    """Largest absolute residual over ``n_restarts`` restarts of Lin's projected-gradient NMF.

    This is the paper's choice (§6: "the largest absolute deviation between the data and NMF
    approximation based on ten random restarts of Lin's algorithm"); every restart is feasible.

    Returns
    -------
    epsilon : float
    restarts : list of tuple of numpy.ndarray
        The ``(A, W)`` restarts (reused by :func:`~bnmfzoo.inference.fit_rrt` as base nodes).
    """
    from bnmfzoo._base.nmf_solvers import lin_pg_restarts, max_abs_residual

    X = np.asarray(X, dtype=float)
    restarts = lin_pg_restarts(X, rank, n_restarts, mask=mask, random_seed=random_seed)
    eps = max(max_abs_residual(X, A, W, mask) for A, W in restarts)
    # strict feasibility |X - AW| < eps for every restart (the box is open in the paper)
    return float(eps) * (1.0 + 1e-9) + 1e-300, restarts


def uniform_noise(
    X,
    rank,
    *,
    epsilon=None,
    lambda_=1.0,
    lambda_A=None,
    lambda_W=None,
    mask=None,
    n_restarts=10,
    random_seed=0,
):
    """Build the uniform-noise NMF model ``|X - A W| <= epsilon`` with exponential priors.

    Parameters
    ----------
    X : array-like or xarray.DataArray
        D x N non-negative data; NaN marks missing entries (they never enter the likelihood).
    rank : int
        Number of factors R.
    epsilon : float, optional
        Half-width of the noise box. Default: the largest absolute residual over
        ``n_restarts`` restarts of Lin's projected-gradient NMF (the paper's choice).
    lambda_ : float
        Rate of the exponential priors on A and W (the paper gives none; 1.0).
    lambda_A, lambda_W : float, optional
        Separate rates (override ``lambda_``).
    mask : array-like of bool, optional
        True where observed.
    n_restarts : int
        Restarts used for the default ``epsilon``.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the restarts (only used when ``epsilon`` is None). Fixed by default, as in
        :func:`bnmfzoo.models.silf`, so that the same call builds the same model (with
        ``None`` the default ``epsilon`` and the restarts that ``fit_rrt`` starts from change
        from call to call).

    Returns
    -------
    pymc.Model
        With variables ``A`` (row, factor), ``W`` (factor, col) and observed ``X``. Nothing is
        attached: :func:`bnmfzoo.models.recognize` reads the uniform term from the graph
        (family ``"uniform_noise"``, typed :class:`~bnmfzoo.models._spec.UniformHyper`). When
        epsilon is computed, its restarts are remembered by data (:func:`epsilon_restarts`).

    Notes
    -----
    The log density is ``-inf`` outside the box and constant (in the likelihood) inside: NUTS,
    HMC and ADVI cannot use it. Use :func:`bnmfzoo.inference.fit_rrt`.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import uniform_noise
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((8, 2)) @ rng.random((2, 6))
    >>> model = uniform_noise(X, 2, epsilon=0.1)
    >>> sorted(model.named_vars)[:2]
    ['A', 'W']
    """
    X, observed = check_matrix(X, kind="nonnegative", mask=mask)
    D, N = X.shape
    rank = check_rank(rank, (D, N))
    warn_outliers(X, observed)
    lam_A = float(check_positive(lambda_A if lambda_A is not None else lambda_, name="lambda_A"))
    lam_W = float(check_positive(lambda_W if lambda_W is not None else lambda_, name="lambda_W"))
    if epsilon is None:
        epsilon, restarts = default_epsilon(
            X.values, rank, mask=observed, n_restarts=n_restarts, random_seed=random_seed
        )
        _remember_restarts(X.values, observed, rank, epsilon, restarts)
    else:
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.number)):
            raise TypeError(f"epsilon must be a positive number or None, got {fmt(epsilon)}")
        epsilon = float(check_positive(epsilon, name="epsilon"))
    from bnmfzoo._terms.uniform import uniform

    coords = {**data_coords(X), "factor": np.arange(rank)}
    with pm.Model(coords=coords) as model:
        A = pm.Exponential("A", lam=lam_A, dims=("row", "factor"))
        W = pm.Exponential("W", lam=lam_W, dims=("factor", "col"))
        uniform("X", A, W, observed=X.values, epsilon=float(epsilon), mask=observed)
    return model


def _key(X, mask, rank):
    import hashlib

    mask = np.asarray(mask, dtype=bool)
    X = np.where(mask, np.nan_to_num(np.asarray(X, dtype=float)), 0.0)
    h = hashlib.sha256(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(mask).tobytes())
    return (h.hexdigest(), tuple(np.shape(X)), int(rank))


def _remember_restarts(X, mask, rank, epsilon, restarts):
    if len(_RESTARTS) >= _RESTARTS_MAX:
        _RESTARTS.pop(next(iter(_RESTARTS)))
    _RESTARTS[_key(X, mask, rank) + (float(epsilon),)] = list(restarts)


def epsilon_restarts(X, mask, rank, epsilon):
    """The Lin restarts whose largest residual made ``epsilon`` (:func:`default_epsilon`).

    Known when :func:`uniform_noise` computed this epsilon for these data in this process;
    else None.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((6, 5))
    >>> m = uniform_noise(X, 2, n_restarts=2)
    >>> from bnmfzoo.models._spec import find_spec
    >>> spec = find_spec(m)
    >>> len(epsilon_restarts(X, ~np.isnan(X), 2, spec.hyper.epsilon))
    2
    """
    found = _RESTARTS.get(_key(X, mask, rank) + (float(epsilon),))
    return None if found is None else list(found)
