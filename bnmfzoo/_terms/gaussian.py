"""Gaussian likelihood on the observed entries of a factorized matrix (``likelihoods.gaussian``).

The product ``A @ W`` is computed once and the observed entries are taken with one flat 1-D
index (``(A @ W).ravel()[flat_idx]``); indexing with ``[rows, cols]`` pairs makes each gradient
about 30x slower (measured on GDSC, K = 20: 14-20 ms against 0.55 ms per log-density
gradient). Unobserved entries never enter the likelihood.
"""

import numpy as np
import pymc as pm

from bnmfzoo._terms import register_term_data
from bnmfzoo._validation import as_dataarray, check_mask, check_positive

__all__ = ["gaussian", "observed_flat_index"]


def observed_flat_index(observed, mask=None):
    """Return ``(values, mask, flat_idx)`` for a 2-D array with NaN (or ``mask``) for missing.

    Parameters
    ----------
    observed : array-like or xarray.DataArray
        D x N data; NaN marks a missing entry.
    mask : array-like of bool, optional
        True = observed; combined with the NaN pattern.

    Returns
    -------
    values : numpy.ndarray
        The observed values in row-major (C) order, shape ``(n_observed,)``.
    mask : numpy.ndarray of bool
        D x N, True where observed.
    flat_idx : numpy.ndarray of int
        Row-major flat indices of the observed entries.
    """
    da = as_dataarray(observed, name="observed")
    X = da.values
    m = ~np.isnan(X)
    if mask is not None:
        m &= check_mask(mask, da, name="mask")
    if not m.any():
        raise ValueError("observed has no observed entry")
    flat_idx = np.flatnonzero(m)
    values = X.ravel()[flat_idx]
    if not np.isfinite(values).all():
        raise ValueError("observed has infinite entries; observed entries must be finite")
    return values, m, flat_idx


def gaussian(name, A, W, observed, *, tau=None, sigma=None, mask=None):
    """Gaussian likelihood ``X_ij ~ Normal((A @ W)_ij, 1/tau)`` on the observed entries only.

    Use it inside a ``pm.Model`` with your own priors on ``A`` and ``W`` (for a
    tri-factorization pass ``A = F @ S`` and ``W = G.T``).

    Parameters
    ----------
    name : str
        Name of the observed variable (e.g. ``"X"``).
    A : pytensor tensor or array, shape (D, R)
    W : pytensor tensor or array, shape (R, N)
    observed : array-like or xarray.DataArray, shape (D, N)
        Data; NaN marks a missing entry.
    tau : pytensor tensor or float, optional
        Noise precision. Exactly one of ``tau`` and ``sigma`` must be given.
    sigma : pytensor tensor or float, optional
        Noise standard deviation.
    mask : array-like of bool, optional
        True = observed (combined with the NaN pattern of ``observed``).

    Returns
    -------
    pytensor.tensor.TensorVariable
        The observed ``pm.Normal`` (1-D over the observed entries, dim ``f"{name}_obs"``, whose
        coordinate is the row-major flat index of each entry), so ``pm.sample`` can record a
        ``log_likelihood`` group. :func:`bnmfzoo.diagnostics.add_log_likelihood` records it
        after sampling and :func:`bnmfzoo.diagnostics.label_observations` adds ``row`` /
        ``col`` coordinates (the data's labels) on that dim, so LOO values map to cells.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.abs(np.random.default_rng(0).normal(size=(6, 5)))
    >>> X[0, 0] = np.nan
    >>> with pm.Model(coords={"factor": range(2)}) as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(6, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 5))
    ...     obs = likelihoods.gaussian("X", A, W, observed=X, sigma=0.5)
    >>> obs.eval({A: np.ones((6, 2)), W: np.ones((2, 5))}).shape
    (29,)
    """
    if (tau is None) == (sigma is None):
        raise ValueError("gaussian: give exactly one of tau= and sigma=")
    for arg, value in (("tau", tau), ("sigma", sigma)):
        if isinstance(value, (int, float, np.integer, np.floating)):
            check_positive(value, name=arg)
    values, obs_mask, flat_idx = observed_flat_index(observed, mask)
    model = pm.modelcontext(None)
    X = as_dataarray(observed, name="observed").where(obs_mask)
    register_term_data(model, name, X, obs_mask, term="gaussian")
    dim = f"{name}_obs"
    if dim not in model.coords:
        model.add_coord(dim, flat_idx)
    mu = (A @ W).ravel()[flat_idx]
    if tau is not None:
        return pm.Normal(name, mu=mu, tau=tau, observed=values, dims=dim)
    return pm.Normal(name, mu=mu, sigma=sigma, observed=values, dims=dim)
