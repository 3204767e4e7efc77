"""Soft-insensitive likelihood (SILF) of Masood & Doshi-Velez (2019), eq. 5.

The likelihood is ``exp(-C * SILF_{eps, beta}(f_X(A, W)))`` where ``f_X`` is a scalar NMF
objective (squared Frobenius error by default; KL and Itakura-Saito divergences are offered) and

* ``SILF(y) = 0`` for ``0 <= y <= (1 - beta) eps`` (flat: every good factorization is equally
  likely),
* ``SILF(y) = (y - (1 - beta) eps)^2 / (4 beta eps)`` in the transition band of width
  ``2 beta eps`` (the paper's "length 2 beta" is in units of eps),
* ``SILF(y) = y - eps`` above ``(1 + beta) eps``.

The loss is continuous with a continuous first derivative at both knots. The numeric core
(:func:`silf_loss`, :func:`silf_derivative`, :func:`objective_value`) is plain NumPy; the PyMC
glue (:func:`silf`) builds the same function in PyTensor as a ``pm.Potential``. Missing entries
(NaN in ``observed``) never enter the objective: the product ``A @ W`` is computed once and a flat
1-D index of the observed entries is taken.
"""

import numpy as np

from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.validation import check_matrix, check_positive, check_rank, fmt

OBJECTIVES = ("frobenius", "kl", "itakura_saito")
_TINY = 1e-12


def _check_silf_params(epsilon, beta, C):
    check_positive(epsilon, name="epsilon")
    check_positive(C, name="C")
    beta = float(beta)
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must satisfy 0 < beta <= 1, got {fmt(beta)}")
    return float(epsilon), beta, float(C)


def _check_objective(objective):
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return objective


def silf_loss(y, epsilon, beta=0.1):
    """Soft insensitive loss ``SILF_{epsilon, beta}(y)`` for ``y >= 0`` (vectorized).

    Parameters
    ----------
    y : array-like
        Objective values.
    epsilon : float
        Insensitivity threshold (> 0).
    beta : float
        Smoothness in (0, 1]: width of the quadratic band is ``2 beta epsilon``.

    Returns
    -------
    numpy.ndarray
        The loss, same shape as ``y``.

    Examples
    --------
    >>> float(silf_loss(0.5, 1.0)), float(silf_loss(2.0, 1.0))
    (0.0, 1.0)
    """
    y = np.asarray(y, dtype=float)
    lo, hi = (1.0 - beta) * epsilon, (1.0 + beta) * epsilon
    quad = (y - lo) ** 2 / (4.0 * beta * epsilon)
    return np.where(y <= lo, 0.0, np.where(y <= hi, quad, y - epsilon))


def silf_derivative(y, epsilon, beta=0.1):
    """Derivative ``d SILF / dy`` (continuous; 0 below the band, 1 above it).

    Examples
    --------
    >>> round(float(silf_derivative(1.0, 1.0, 0.1)), 12)
    0.5
    """
    y = np.asarray(y, dtype=float)
    lo, hi = (1.0 - beta) * epsilon, (1.0 + beta) * epsilon
    return np.where(y <= lo, 0.0, np.where(y <= hi, (y - lo) / (2.0 * beta * epsilon), 1.0))


def objective_value(X, AW, mask=None, objective="frobenius"):
    """NMF objective ``f_X`` over the observed entries (NumPy).

    Parameters
    ----------
    X, AW : numpy.ndarray
        Data and reconstruction, same shape (``X`` may hold NaN where unobserved).
    mask : numpy.ndarray of bool, optional
        True = observed; default: the non-NaN entries of ``X``.
    objective : {"frobenius", "kl", "itakura_saito"}
        Squared Frobenius error, generalized KL divergence ``sum x log(x / m) - x + m`` or
        Itakura-Saito divergence ``sum x / m - log(x / m) - 1``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> objective_value(np.ones((2, 2)), np.zeros((2, 2)))
    4.0
    """
    _check_objective(objective)
    X = np.asarray(X, dtype=float)
    if mask is None:
        mask = ~np.isnan(X)
    x, m = X[mask], np.asarray(AW, dtype=float)[mask]
    if objective == "frobenius":
        return float(np.sum((x - m) ** 2))
    m = np.maximum(m, _TINY)
    if objective == "kl":
        xlogx = np.where(x > 0, x * np.log(np.maximum(x, _TINY) / m), 0.0)
        return float(np.sum(xlogx - x + m))
    xs = np.maximum(x, _TINY)
    return float(np.sum(xs / m - np.log(xs / m) - 1.0))


def _objective_pt(x_obs, m_obs, objective):
    import pytensor.tensor as pt

    if objective == "frobenius":
        return pt.sum(pt.sqr(x_obs - m_obs))
    m = pt.maximum(m_obs, _TINY)
    if objective == "kl":
        xlogx = np.where(x_obs > 0, x_obs * np.log(np.maximum(x_obs, _TINY)), 0.0)
        return pt.sum(xlogx - x_obs * pt.log(m) - x_obs + m)
    xs = np.maximum(x_obs, _TINY)
    return pt.sum(xs / m - np.log(xs) + pt.log(m) - 1.0)


def silf_loss_pt(y, epsilon, beta):
    """PyTensor version of :func:`silf_loss` (used inside model graphs)."""
    import pytensor.tensor as pt

    lo, hi = (1.0 - beta) * epsilon, (1.0 + beta) * epsilon
    return pt.switch(
        y <= lo, 0.0, pt.switch(y <= hi, pt.sqr(y - lo) / (4.0 * beta * epsilon), y - epsilon)
    )


def silf(name, A, W, observed, *, epsilon, beta=0.1, C=2.0, objective="frobenius", mask=None):
    """Add the SILF likelihood ``exp(-C SILF(f_X(A, W)))`` to the current ``pm.Model``.

    Usable inside any user-written model with any priors on ``A`` (D x R) and ``W`` (R x N).
    It is a ``pm.Potential`` (the normalizing constant does not depend on ``A @ W``), so it gives
    no ``log_likelihood`` group. Nothing is attached to the model: the data and parameters
    are read back from the graph (:func:`bnmfzoo.models.recognize`), e.g. by
    :func:`bnmfzoo.inference.fit_particles`.

    Parameters
    ----------
    name : str
        Name of the potential.
    A, W : pytensor.tensor.TensorVariable
        Basis (D x R) and weights (R x N).
    observed : array-like or xarray.DataArray
        Non-negative D x N data; NaN entries are missing and never touch the likelihood.
    epsilon : float
        Insensitivity threshold (see :func:`epsilon_from_reference`).
    beta : float, default 0.1
        Smoothness of the knots (0 < beta <= 1).
    C : float, default 2.0
        Inverse temperature.
    objective : {"frobenius", "kl", "itakura_saito"}, default "frobenius"
        The objective ``f_X``; Frobenius is the squared error (not divided by the size).
    mask : array-like of bool, optional
        True = observed, combined with the NaN pattern.

    Returns
    -------
    pytensor.tensor.TensorVariable
        The potential (log-likelihood term).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.likelihoods import silf
    >>> X = np.abs(np.random.default_rng(0).normal(size=(6, 5)))
    >>> with pm.Model() as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(6, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 5))
    ...     _ = silf("X", A, W, observed=X, epsilon=1.0)
    """
    import pymc as pm
    import pytensor.tensor as pt

    epsilon, beta, C = _check_silf_params(epsilon, beta, C)
    _check_objective(objective)
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    da, obs_mask = check_matrix(observed, kind="nonnegative", mask=mask, name="observed")
    values = da.values
    A = pt.as_tensor_variable(A)
    W = pt.as_tensor_variable(W)
    for label, var, ndim in (("A", A, 2), ("W", W, 2)):
        if var.ndim != ndim:
            raise ValueError(f"{label} must be a matrix, got a {var.ndim}-D tensor")
    flat_idx = np.flatnonzero(obs_mask.ravel())
    x_obs = values.ravel()[flat_idx]
    AW = pt.dot(A, W)
    if obs_mask.all():
        m_obs = AW.ravel()
    else:
        m_obs = AW.ravel()[flat_idx]
    f = _objective_pt(x_obs, m_obs, objective)
    pm.modelcontext(None)  # inside a model
    return pm.Potential(name, -C * silf_loss_pt(f, epsilon, beta))


def masked_objective_fits(X, rank, *, n, mask=None, objective="frobenius", random_seed=0,
                          max_iter=200, tol=1e-4):
    """Objective values of ``n`` randomly initialized non-Bayesian NMF fits (helper)."""
    from bnmfzoo._base.nmf_solvers import random_init, solve_nmf

    values = np.asarray(X, dtype=float)
    seeds = spawn_seeds(random_seed, n)
    out = np.empty(n)
    for i, seed in enumerate(seeds):
        rng = as_generator(seed)
        A0, W0 = random_init(values, rank, rng, mask=mask)
        A, W, _ = solve_nmf(values, A0, W0, mask=mask, max_iter=max_iter, tol=tol)
        out[i] = objective_value(values, A @ W, mask, objective)
    return out


def svd_energy_rank(X, fraction=0.7, *, mask=None):
    """Smallest rank whose singular values hold ``fraction`` of the energy (paper Sec. 5.2).

    ``sum_{i <= R} s_i^2 >= fraction * sum_i s_i^2`` on the uncentered data; missing entries
    (NaN or ``mask`` False) are filled with the mean of the observed entries first.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.outer(np.arange(1, 6), np.arange(1, 4)).astype(float)
    >>> svd_energy_rank(X)
    1
    """
    da, obs_mask = check_matrix(X, kind="nonnegative", mask=mask)
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"fraction must satisfy 0 < fraction <= 1, got {fmt(fraction)}")
    values = np.where(obs_mask, da.values, da.values[obs_mask].mean())
    s2 = np.linalg.svd(values, compute_uv=False) ** 2
    if s2.sum() == 0:
        return 1
    share = np.cumsum(s2) / s2.sum()
    # the relative slack keeps fraction=1 at the numerical rank despite rounding in the cumsum
    return int(min(np.searchsorted(share, float(fraction) * (1 - 1e-12)) + 1, len(s2)))


def epsilon_from_reference(X, rank=None, *, n=50, factor=1.2, mask=None, objective="frobenius",
                           random_seed=0, max_iter=200, tol=1e-4):
    """SILF threshold ``epsilon = factor * max_i f_i`` over ``n`` reference NMF fits (Sec. 6.1).

    The reference fits are scikit-learn coordinate-descent NMFs (Frobenius, ``max_iter=200``,
    ``tol=1e-4``) from ``n`` random initializations (seeds spawned from ``random_seed``); with
    missing entries, masked multiplicative updates on the observed entries are used and
    ``f_i`` is computed on the observed entries only.

    Parameters
    ----------
    X : array-like or xarray.DataArray
        Non-negative D x N data (NaN = missing).
    rank : int, optional
        NMF rank R; by default the paper's choice (Sec. 5.2), the smallest rank explaining 70%
        of the SVD energy (:func:`svd_energy_rank`).
    n : int, default 50
        Number of reference factorizations.
    factor : float, default 1.2
        Multiplier on the worst reference objective.
    mask : array-like of bool, optional
        True = observed.
    objective : {"frobenius", "kl", "itakura_saito"}
        Objective the threshold applies to.
    random_seed : int or numpy.random.Generator, default 0
        Seed for the reference initializations.
    max_iter, tol
        Solver settings of the reference fits.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((8, 3)) @ np.random.default_rng(1).random((3, 7))
    >>> eps = epsilon_from_reference(X, 3, n=3)
    >>> eps > 0
    True
    """
    da, obs_mask = check_matrix(X, kind="nonnegative", mask=mask)
    if rank is None:
        rank = svd_energy_rank(da, mask=obs_mask)
    rank = check_rank(rank, da.shape)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {fmt(n)}")
    check_positive(factor, name="factor")
    _check_objective(objective)
    fits = masked_objective_fits(
        da.values, rank, n=int(n), mask=None if obs_mask.all() else obs_mask,
        objective=objective, random_seed=random_seed, max_iter=max_iter, tol=tol,
    )
    eps = float(factor) * float(fits.max())
    if eps <= 0:
        # an exact factorization: any positive threshold keeps every exact fit in the flat region
        eps = float(factor) * _TINY * max(1.0, float(np.nansum(da.values**2)))
    return eps
