"""Poisson and Gamma-Poisson NMF of counts (Cemgil 2009; Gopalan et al. 2015; Zhou & Carin 2015).

``X_dn ~ Poisson(s_d c_n (A @ W)_dn)`` (or the negative binomial of
:func:`bnmfzoo.likelihoods.negative_binomial`) with Gamma priors on the factors:

* default: ``A_dk ~ Gamma(a, b)``, ``W_kn ~ Gamma(a, b)`` (shape, rate);
* ``ard=True``: one rate per factor, ``lambda_k ~ Gamma(alpha0, beta0)``, shared by column ``k``
  of ``A`` and row ``k`` of ``W`` (automatic relevance determination, Tan & Févotte 2013):
  unused factors are shrunk to zero;
* ``hierarchical=True``: hierarchical Poisson factorization (Gopalan et al. 2015), one rate per
  row ``xi_d ~ Gamma(alpha0, beta0)`` for ``A``'s row ``d`` and one per column
  ``eta_n ~ Gamma(alpha0, beta0)`` for ``W``'s column ``n`` (activity and popularity).

Data: dense (NaN = missing), ``scipy.sparse`` (**unstored cells are observed zeros**; cost and
memory O(nonzeros), see :mod:`bnmfzoo._terms.poisson`) or :func:`bnmfzoo.long_format` (listed
entries observed). ``pm.sample()`` samples these models with
:class:`bnmfzoo.inference.GibbsPoisson` by itself (as any user model it recognizes).
"""

import numpy as np
import pymc as pm

from bnmfzoo._base.validation import check_positive, check_rank
from bnmfzoo._terms.poisson import count_entries
from bnmfzoo._terms.poisson import negative_binomial as nb_term
from bnmfzoo._terms.poisson import poisson as term

__all__ = ["poisson", "negative_binomial"]


def _priors(D, N, K, a, b, ard, hierarchical, alpha0, beta0):
    for name, v in (("a", a), ("b", b), ("alpha0", alpha0), ("beta0", beta0)):
        check_positive(v, name=name)
    if ard and hierarchical:
        raise ValueError("give ard=True or hierarchical=True, not both")
    if ard:
        lam = pm.Gamma("lambda_", alpha=alpha0, beta=beta0, dims="factor")
        A = pm.Gamma("A", alpha=a, beta=lam[None, :], dims=("row", "factor"))
        W = pm.Gamma("W", alpha=a, beta=lam[:, None], dims=("factor", "col"))
    elif hierarchical:
        xi = pm.Gamma("xi", alpha=alpha0, beta=beta0, dims="row")
        eta = pm.Gamma("eta", alpha=alpha0, beta=beta0, dims="col")
        A = pm.Gamma("A", alpha=a, beta=xi[:, None], dims=("row", "factor"))
        W = pm.Gamma("W", alpha=a, beta=eta[None, :], dims=("factor", "col"))
    else:
        A = pm.Gamma("A", alpha=a, beta=b, dims=("row", "factor"))
        W = pm.Gamma("W", alpha=a, beta=b, dims=("factor", "col"))
    return A, W


def _coords(entries, K):
    return {"row": entries.row_labels, "col": entries.col_labels, "factor": np.arange(K)}


def poisson(X, rank, *, a=1.0, b=1.0, ard=False, hierarchical=False, alpha0=1.0, beta0=1.0,
            row_offset=None, col_offset=None, mask=None):
    """Poisson NMF ``X ~ Poisson(s c (A @ W))`` with Gamma priors, as a ``pm.Model``.

    Parameters
    ----------
    X : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Counts (see the module docstring for which cells are observed).
    rank : int
        Number of factors K.
    a, b : float
        Gamma shape and rate of the factor entries (``b`` unused with ``ard`` or
        ``hierarchical``, where the rates are variables).
    ard, hierarchical : bool
        Per-factor (ARD) or per-row / per-column (HPF) Gamma rates.
    alpha0, beta0 : float
        Gamma prior (shape, rate) of those rates.
    row_offset, col_offset : array-like, optional
        Known positive offsets (size factors per row, exposures per column).
    mask : array-like of bool, optional
        True = observed (dense or ``scipy.sparse`` X).

    Returns
    -------
    pymc.Model
        Coords ``row``, ``col``, ``factor``; variables ``A`` (row, factor), ``W`` (factor,
        col), the observed ``X`` (and ``X_zeros`` for sparse X, ``lambda_`` / ``xi``, ``eta``).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> sorted(poisson(X, 2, ard=True).named_vars)
    ['A', 'W', 'X', 'lambda_']
    """
    entries = count_entries(X, mask=mask, name="X")
    K = check_rank(rank, entries.shape)
    D, N = entries.shape
    with pm.Model(coords=_coords(entries, K)) as model:
        A, W = _priors(D, N, K, a, b, ard, hierarchical, alpha0, beta0)
        term("X", A, W, observed=X, row_offset=row_offset, col_offset=col_offset, mask=mask)
    return model


def negative_binomial(X, rank, *, alpha=None, alpha_prior=(2.0, 0.2), a=1.0, b=1.0, ard=False,
                      hierarchical=False, alpha0=1.0, beta0=1.0, row_offset=None,
                      col_offset=None, mask=None):
    """Gamma-Poisson NMF ``X ~ NB(n = alpha mu, p = alpha / (1 + alpha))``, ``mu = s c (A @ W)``.

    Mean ``mu``, variance ``mu (1 + 1 / alpha)`` (:func:`bnmfzoo.likelihoods.negative_binomial`).

    Parameters
    ----------
    X, rank, a, b, ard, hierarchical, alpha0, beta0, row_offset, col_offset, mask
        As in :func:`poisson`.
    alpha : float, optional
        A fixed dispersion; when None, ``alpha ~ Gamma(*alpha_prior)`` (shape, rate) is learned.
    alpha_prior : tuple of float
        Gamma (shape, rate) prior of ``alpha`` (default mean 10).

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import negative_binomial
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> sorted(negative_binomial(X, 2).named_vars)
    ['A', 'W', 'X', 'alpha']
    """
    entries = count_entries(X, mask=mask, name="X")
    K = check_rank(rank, entries.shape)
    D, N = entries.shape
    with pm.Model(coords=_coords(entries, K)) as model:
        A, W = _priors(D, N, K, a, b, ard, hierarchical, alpha0, beta0)
        if alpha is None:
            shape, rate = alpha_prior
            check_positive(shape, name="alpha_prior[0]")
            check_positive(rate, name="alpha_prior[1]")
            alpha = pm.Gamma("alpha", alpha=shape, beta=rate)
        else:
            check_positive(alpha, name="alpha")
        nb_term("X", A, W, observed=X, alpha=alpha, row_offset=row_offset,
                col_offset=col_offset, mask=mask)
    return model
