"""Predictions, held-out log-likelihood / perplexity and active components for binary NMF.

(Named ``heldout`` rather than ``perplexity`` so the module never shadows the function
``bnmfzoo.diagnostics.perplexity`` in the lazy namespace.)

Follows Lumbreras et al. (2020): the predictive mean is the posterior average of ``A @ W`` per
draw (Eq. 33), never ``E[A] E[W]``; for CVB0 it is ``E_q[A] E_q[W]`` (Eq. 39). Perplexity is the
mean negative log-likelihood per observed test entry (Eq. 67, natural log), with predictions
clipped to ``[1e-12, 1 - 1e-12]``. A component is *active* when it holds at least 1% of the
assignments (Lumbreras et al. 2020 count active components in Sec. 6.3 without a definition;
the truncated prior always leaves small strays in most components, so non-empty is too loose).
"""

import numpy as np
import xarray as xr

__all__ = ["predict_mean", "heldout_loglik", "perplexity", "active_components"]

_CLIP = 1e-12


def predict_mean(result):
    """Predictive mean ``E[A @ W | X]`` (D x N) of a fit.

    Parameters
    ----------
    result : xarray.DataTree or array-like
        A DataTree with a ``variational`` group holding ``X_mean`` (CVB0, Eq. 39), a
        ``rao_blackwell`` group (:func:`~bnmfzoo.inference.fit_collapsed_gibbs`: per-draw
        E[A | Z] E[W | Z, V] averaged), or posterior ``A`` and ``W`` draws (averaged as
        ``A @ W`` per draw, Eq. 33); an array is returned as it is.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bnmfzoo._base.results import build_datatree
    >>> A = np.ones((1, 2, 3, 1)); W = np.full((1, 2, 1, 2), 0.5)
    >>> predict_mean(build_datatree({"A": A, "W": W})).shape
    (3, 2)
    """
    if isinstance(result, xr.DataTree):
        if "variational" in result.children and "X_mean" in result["variational"].data_vars:
            return np.asarray(result["variational"]["X_mean"].values, dtype=float)
        if "rao_blackwell" in result.children:
            return np.asarray(result["rao_blackwell"]["X_mean"].values, dtype=float)
        from bnmfzoo.diagnostics._modes._dims import factor_dims

        post = result["posterior"]
        fd = factor_dims(post)
        A = post["A"].transpose("chain", "draw", *fd.basis).values
        W = post["W"].transpose("chain", "draw", *fd.weights).values
        total = np.zeros((A.shape[2], W.shape[3]))
        for c in range(A.shape[0]):
            for d in range(A.shape[1]):
                total += A[c, d] @ W[c, d]
        return total / (A.shape[0] * A.shape[1])
    return np.asarray(getattr(result, "values", result), dtype=float)


def _entrywise_loglik(result, X, mask):
    mean = predict_mean(result)
    Xv = np.asarray(getattr(X, "values", X), dtype=float)
    if mean.shape != Xv.shape:
        raise ValueError(f"predictions have shape {mean.shape} but X has shape {Xv.shape}")
    observed = ~np.isnan(Xv)
    if mask is not None:
        m = np.asarray(getattr(mask, "values", mask))
        if m.dtype != bool or m.shape != Xv.shape:
            raise ValueError(f"mask must be a boolean array of shape {Xv.shape}")
        observed &= m
    if not observed.any():
        raise ValueError("no entry to evaluate: X is all-missing where mask is True")
    vals = Xv[observed]
    if not np.isin(vals, (0.0, 1.0)).all():
        raise ValueError("X must be binary (0/1, NaN for missing)")
    p = np.clip(mean[observed], _CLIP, 1.0 - _CLIP)
    return np.where(vals == 1.0, np.log(p), np.log1p(-p))


def heldout_loglik(result, X, *, mask=None):
    """Sum of ``log p(x_ij | predictive mean)`` over the entries of ``X`` selected by ``mask``.

    Parameters
    ----------
    result : xarray.DataTree or array-like
        A fit (see :func:`predict_mean`) or a D x N predictive mean.
    X : array-like, shape (D, N)
        Binary data holding the test entries (NaN = not evaluated).
    mask : array-like of bool, optional
        True for the entries to evaluate (e.g. the held-out test set).

    Returns
    -------
    float
        With ``mask`` = the training entries this is minus the paper's fit NLL (Eq. 66).

    Examples
    --------
    >>> import numpy as np
    >>> round(heldout_loglik(np.full((1, 2), 0.5), np.array([[1.0, 0.0]])), 4)
    -1.3863
    """
    return float(_entrywise_loglik(result, X, mask).sum())


def perplexity(result, X, *, mask=None):
    """Perplexity (Eq. 67): mean negative log-likelihood per evaluated entry (nats).

    Parameters
    ----------
    result : xarray.DataTree or array-like
        A fit (see :func:`predict_mean`) or a D x N predictive mean.
    X : array-like, shape (D, N)
        Binary data holding the test entries (NaN = not evaluated).
    mask : array-like of bool, optional
        True for the test entries.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(perplexity(np.full((1, 2), 0.5), np.array([[1.0, 0.0]])), 4)
    0.6931
    """
    return float(-_entrywise_loglik(result, X, mask).mean())


def active_components(result, *, threshold=0.01):
    """Number of components holding at least ``threshold`` of the assignments.

    Parameters
    ----------
    result : xarray.DataTree
        From ``pm.sample`` with a collapsed step (uses the ``n_active`` sample stat, median over
        draws), from :func:`~bnmfzoo.inference.fit_cvb0` (uses ``component_mass``), or any
        posterior with Dirichlet rows ``A`` (mass of component k = mean over rows of ``A[:, k]``
        per draw, median count over draws).
    threshold : float
        Minimum share of assignments (default 1%). With the ``n_active`` stat the threshold is
        the step's ``active_threshold``.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> A = np.array([[0.7, 0.295, 0.005]] * 4)[None, None]
    >>> active_components(build_datatree({"A": A}))
    2
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    if "sample_stats" in result.children and "n_active" in result["sample_stats"].data_vars:
        return int(np.round(np.median(result["sample_stats"]["n_active"].values)))
    if "variational" in result.children and "component_mass" in result["variational"].data_vars:
        return int(np.sum(result["variational"]["component_mass"].values >= threshold))
    from bnmfzoo.diagnostics._modes._dims import factor_dims

    post = result["posterior"]
    A = post["A"].transpose("chain", "draw", *factor_dims(post).basis).values
    mass = A.mean(axis=2)
    return int(np.round(np.median((mass >= threshold).sum(axis=-1))))
