"""Uniform (box) noise likelihood: ``|X - A W| <= epsilon`` entry-wise (Masood & Doshi-Velez 2016).

The density of every observed entry is ``1 / (2 epsilon)`` inside the box and 0 outside, so the
log density of the whole matrix is ``-|obs| log(2 epsilon)`` for a feasible ``(A, W)`` and
``-inf`` otherwise. The log density is flat inside the feasible region and has no gradient that
points back into it: gradient-based samplers (NUTS, HMC, ADVI) cannot use it. Use
:func:`bnmfzoo.inference.fit_rrt`, which explores the feasible set directly.
"""

import numpy as np
import pymc as pm

from bnmfzoo._base.validation import as_dataarray, check_mask, check_positive


def _flat_observed(observed, mask):
    """Return (flat index of observed entries, their values) of a D x N matrix."""
    da = as_dataarray(observed, name="observed")
    values = da.values
    obs = ~np.isnan(values)
    if mask is not None:
        obs &= check_mask(mask, da, name="mask")
    flat_idx = np.flatnonzero(obs.ravel())
    return flat_idx, values.ravel()[flat_idx]


def uniform(name, A, W, observed, *, epsilon, mask=None):
    """Add a uniform-noise likelihood ``X[d, n] ~ Uniform((AW)[d, n] - eps, (AW)[d, n] + eps)``.

    Only observed entries (not NaN and, if given, ``mask`` True) enter the likelihood. The product
    ``A @ W`` is computed once and indexed with a flat 1-D index of the observed entries.

    Parameters
    ----------
    name : str
        Name of the observed variable.
    A, W : pytensor.tensor.TensorVariable
        Non-negative factors, shapes (D, R) and (R, N), from the enclosing ``pm.Model``.
    observed : array-like or xarray.DataArray
        D x N data; NaN marks missing entries.
    epsilon : float
        Half-width of the noise box (> 0).
    mask : array-like of bool, optional
        True where observed.

    Returns
    -------
    pytensor.tensor.TensorVariable
        The observed random variable (1-D over the observed entries, dim ``{name}_obs``).

    Notes
    -----
    The log density is ``-inf`` outside ``|X - AW| <= epsilon``; NUTS and ADVI cannot use it
    (there is no gradient inside the box and none pointing into it).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.full((3, 2), 2.0)
    >>> with pm.Model() as model:
    ...     A = pm.Exponential("A", 1.0, shape=(3, 1))
    ...     W = pm.Exponential("W", 1.0, shape=(1, 2))
    ...     _ = likelihoods.uniform("X", A, W, observed=X, epsilon=0.5)
    >>> point = {"A_log__": np.zeros((3, 1)), "W_log__": np.log(np.full((1, 2), 2.0))}
    >>> bool(np.isfinite(model.compile_logp()(point)))
    True
    """
    check_positive(epsilon, name="epsilon")
    if np.ndim(epsilon) != 0:
        raise ValueError("epsilon must be a scalar")
    flat_idx, values = _flat_observed(observed, mask)
    mu = (A @ W).ravel()[flat_idx]
    return pm.Uniform(name, lower=mu - epsilon, upper=mu + epsilon, observed=values)
