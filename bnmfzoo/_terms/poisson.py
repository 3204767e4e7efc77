"""Poisson and negative-binomial likelihoods on a factorized count matrix.

``likelihoods.poisson``: ``X_dn ~ Poisson(s_d c_n (A @ W)_dn)`` with optional known row offsets
``s`` (size factors, library sizes) and column offsets ``c`` (exposures), on the observed
entries only. ``likelihoods.negative_binomial``: the Gamma-Poisson (overdispersed) variant of
Zhou & Carin (2015), ``X_dn ~ NB(r = alpha mu_dn, p)`` with ``mu_dn = s_d c_n (A @ W)_dn``: mean
``mu_dn`` and variance ``mu_dn (1 + 1 / alpha)`` (in PyMC's ``NegativeBinomial(n, p)``
spelling, ``n = alpha mu`` and ``p = alpha / (1 + alpha)``). The shape, not the mean, is
factorized, so the counts split over the factors as a sum of NB variables with a common ``p``,
which is what makes the latent-count Gibbs sampler conjugate (CRT augmentation).

Which entries are observed
--------------------------
* dense input (array, DataArray): every non-NaN entry (combined with ``mask=``), zeros
  included. The observed variable covers all of them (so the ``log_likelihood`` group is
  complete).
* ``scipy.sparse`` input: **entries that are not stored are observed zeros** (count data are
  given so: a UMI or word-count matrix stores its nonzeros). ``mask=`` (dense boolean, True =
  observed) marks missing cells. The observed variable covers the stored nonzero entries, and
  the zero entries enter through a potential ``f"{name}_zeros"`` equal to
  ``-sum(mu over observed zeros)``, computed from ``(s @ A) . (W @ c)`` minus the nonzero and
  missing entries: O(nonzeros x K + (D + N) K), never D x N. ``pm.compute_log_likelihood``
  then covers the nonzero entries only; the library's ``log_likelihood`` group (recorded by
  :func:`bnmfzoo.inference.sample`, the estimator, the command line and
  :func:`bnmfzoo.diagnostics.add_log_likelihood`) adds each observed zero's pointwise term
  (``-mu_dn``; :mod:`bnmfzoo.diagnostics.zero_cells`), so ``az.loo`` sees every observed cell.
* :func:`bnmfzoo.long_format` input: the listed entries are the observed ones (explicit zeros
  included), as for every family of the library.
"""

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.sparse as sp

from bnmfzoo._base.entries import LongMatrix, as_long
from bnmfzoo._base.validation import as_dataarray, check_mask
from bnmfzoo._terms._pairs import pair_product
from bnmfzoo._terms.gaussian import observed_mean

__all__ = ["poisson", "negative_binomial", "CountEntries", "count_entries", "ZERO_MASS_ATTR"]

#: attribute of a ``pm.Model`` naming the zero-entry potentials written by these terms
ZERO_MASS_ATTR = "_bnmfzoo_count_zero_mass"


@dataclass(frozen=True, eq=False)
class CountEntries:
    """The entries of count data that enter a Poisson / NB likelihood.

    Attributes
    ----------
    shape : tuple of int
    rows, cols, values : numpy.ndarray
        Entries the observed variable covers (row-major): all observed entries, or for sparse
        input the observed nonzeros only.
    zeros_implicit : bool
        True when the observed zeros are not listed (sparse input): they are every observed
        cell not in ``rows, cols``.
    missing_rows, missing_cols : numpy.ndarray of int64
        The unobserved cells when ``zeros_implicit`` (empty when every cell is observed).
    row_labels, col_labels : numpy.ndarray
    """

    shape: tuple
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    zeros_implicit: bool
    missing_rows: np.ndarray
    missing_cols: np.ndarray
    row_labels: np.ndarray
    col_labels: np.ndarray

    @property
    def flat_index(self):
        """Row-major flat index of the listed entries."""
        return self.rows * np.int64(self.shape[1]) + self.cols


def _check_counts(values, name):
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        raise ValueError(f"{name} has non-finite observed entries; counts must be finite")
    if (values < 0).any():
        raise ValueError(f"{name} has negative entries; counts must be >= 0")
    if (values != np.round(values)).any():
        raise ValueError(f"{name} must hold integer counts (a Poisson / negative-binomial "
                         "likelihood), got non-integer entries")
    if values.size and values.max() > 2**31 - 1:
        raise ValueError(f"{name} has a count above 2^31 - 1")
    return values


def _labelled_sparse(observed):
    """Sparse ``X`` and labels of an AnnData or ``SparseCounts``; anything else unchanged.

    AnnData: ``X``, ``obs_names``, ``var_names``; ``SparseCounts``: ``X``, ``row_labels``,
    ``col_labels``.
    """
    if type(observed).__name__ == "AnnData":
        X = observed.X.to_memory() if hasattr(observed.X, "to_memory") else observed.X
        X = X if sp.issparse(X) else sp.csr_array(np.asarray(X, dtype=np.float64))
        return X, (np.asarray(observed.obs_names), np.asarray(observed.var_names))
    if hasattr(observed, "row_labels") and sp.issparse(getattr(observed, "X", None)):
        return observed.X, (np.asarray(observed.row_labels), np.asarray(observed.col_labels))
    return observed, None


def count_entries(observed, *, mask=None, name="observed"):
    """:class:`CountEntries` of dense, ``scipy.sparse`` or long-format count data.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> e = count_entries(sp.csr_array(np.array([[0, 2], [1, 0]])))
    >>> e.values.tolist(), e.zeros_implicit, e.missing_rows.size
    ([2.0, 1.0], True, 0)
    """
    observed, labels = _labelled_sparse(observed)
    if isinstance(observed, LongMatrix):
        if mask is not None:
            raise TypeError(f"mask= is not used with long-format {name}: its listed entries "
                            "are the observed ones")
        e = as_long(observed, name=name)
        _check_counts(e.values, name)
        empty = np.array([], dtype=np.int64)
        return CountEntries(e.shape, e.rows, e.cols, e.values.copy(), False, empty, empty,
                            e.row_labels, e.col_labels)
    if sp.issparse(observed):
        S = sp.coo_array(observed)
        D, N = S.shape
        S.sum_duplicates()
        rows, cols = S.row.astype(np.int64), S.col.astype(np.int64)
        values = _check_counts(S.data, name)
        keep = values != 0
        rows, cols, values = rows[keep], cols[keep], values[keep]
        miss_r = miss_c = np.array([], dtype=np.int64)
        if mask is not None:
            m = np.asarray(mask)
            if m.shape != (D, N) or m.dtype != bool:
                raise ValueError(f"mask must be a boolean array of shape {(D, N)} (True = "
                                 "observed)")
            obs = m[rows, cols]
            rows, cols, values = rows[obs], cols[obs], values[obs]
            miss_r, miss_c = (a.astype(np.int64) for a in np.nonzero(~m))
        order = np.argsort(rows * np.int64(N) + cols, kind="stable")
        rl, cl = labels or (np.arange(D), np.arange(N))
        return CountEntries((D, N), rows[order], cols[order], values[order], True, miss_r,
                            miss_c, rl, cl)
    da = as_dataarray(observed, name=name)
    X = da.values
    m = ~np.isnan(X)
    if mask is not None:
        m &= check_mask(mask, da, name="mask")
    if not m.any():
        raise ValueError(f"{name} has no observed entry")
    flat = np.flatnonzero(m)
    rows, cols = np.divmod(flat, X.shape[1])
    values = _check_counts(X.ravel()[flat], name)
    empty = np.array([], dtype=np.int64)
    return CountEntries(X.shape, rows.astype(np.int64), cols.astype(np.int64), values, False,
                        empty, empty, np.asarray(da["row"].values), np.asarray(da["col"].values))


def _offset(value, size, name):
    if value is None:
        return None
    v = np.asarray(value, dtype=float)
    if v.shape != (size,):
        raise ValueError(f"{name} must be a vector of length {size}, got shape {v.shape}")
    if not (np.isfinite(v).all() and (v > 0).all()):
        raise ValueError(f"{name} must be finite and > 0")
    return v


def _mean_and_zeros(name, A, W, entries, row_offset, col_offset):
    """Observed means (with offsets) of the listed entries, and the zero-mass potential."""
    D, N = entries.shape
    s = _offset(row_offset, D, "row_offset")
    c = _offset(col_offset, N, "col_offset")
    rows, cols = entries.rows, entries.cols
    path = "pairs" if entries.zeros_implicit else "auto"
    mu = observed_mean(A, W, rows, cols, (D, N), path=path)
    o = np.ones(rows.size)
    if s is not None:
        o = o * s[rows]
    if c is not None:
        o = o * c[cols]
    if s is not None or c is not None:
        mu = pt.as_tensor_variable(o) * mu
    zeros = None
    if entries.zeros_implicit:
        sv = np.ones(D) if s is None else s
        cv = np.ones(N) if c is None else c
        A_, W_ = pt.as_tensor_variable(A), pt.as_tensor_variable(W)
        total = pt.dot(pt.dot(pt.as_tensor_variable(sv), A_), pt.dot(W_, pt.as_tensor_variable(cv)))
        lost = mu.sum()
        if entries.missing_rows.size:
            mr, mc = entries.missing_rows, entries.missing_cols
            lost = lost + (pt.as_tensor_variable(sv[mr] * cv[mc])
                           * pair_product(A_, W_, mr, mc)).sum()
        zeros = (f"{name}_zeros", -(total - lost),
                 {"likelihood": name, "row_offset": sv, "col_offset": cv,
                  "missing_rows": entries.missing_rows, "missing_cols": entries.missing_cols,
                  "shape": (D, N), "listed": entries.flat_index, "A": A_, "W": W_,
                  "alpha": None})
    return mu, zeros


def _finish(name, entries, dist):
    model = pm.modelcontext(None)
    dim = f"{name}_obs"
    if dim not in model.coords:
        model.add_coord(dim, entries.flat_index.tolist())
    return model, dim


def _add_zero_mass(model, zeros):
    if zeros is None:
        return
    pot_name, graph, info = zeros
    pm.Potential(pot_name, graph)
    registry = dict(getattr(model, ZERO_MASS_ATTR, {}))
    registry[pot_name] = info
    setattr(model, ZERO_MASS_ATTR, registry)


def poisson(name, A, W, *, observed, row_offset=None, col_offset=None, mask=None):
    """Poisson likelihood ``X_dn ~ Poisson(s_d c_n (A @ W)_dn)`` on the observed counts.

    Parameters
    ----------
    name : str
        Name of the observed variable.
    A : pytensor tensor or array, shape (D, K)
    W : pytensor tensor or array, shape (K, N)
    observed : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Counts. Dense: NaN = missing. ``scipy.sparse``: **unstored cells are observed zeros**
        (``mask=`` marks missing cells). Long format: the listed entries are the observed ones.
        See the module docstring.
    row_offset, col_offset : array-like, optional
        Known positive offsets ``s`` (length D) and ``c`` (length N).
    mask : array-like of bool, optional
        True = observed (dense or scipy.sparse input).

    Returns
    -------
    pytensor.tensor.TensorVariable
        The observed ``pm.Poisson`` over the listed entries (dim ``f"{name}_obs"``, its
        coordinate the row-major flat index), so ``pm.sample`` records a ``log_likelihood``
        group. For sparse input a potential ``f"{name}_zeros"`` adds the observed zeros.

    Examples
    --------
    >>> import numpy as np, pymc as pm, scipy.sparse as sp
    >>> from bnmfzoo import likelihoods
    >>> X = sp.csr_array(np.array([[0, 3, 0], [1, 0, 0]]))
    >>> with pm.Model() as model:
    ...     A = pm.Gamma("A", 1.0, 1.0, shape=(2, 2))
    ...     W = pm.Gamma("W", 1.0, 1.0, shape=(2, 3))
    ...     obs = likelihoods.poisson("X", A, W, observed=X)
    >>> full = model.compile_logp(jacobian=False)  # priors + likelihood + zeros potential
    >>> prior = model.compile_logp(vars=[model["A"], model["W"]], jacobian=False)
    >>> point = {"A_log__": np.zeros((2, 2)), "W_log__": np.zeros((2, 3))}
    >>> from scipy.stats import poisson as P
    >>> bool(np.isclose(full(point) - prior(point), P.logpmf(X.toarray(), 2.0).sum()))
    True
    """
    entries = count_entries(observed, mask=mask, name="observed")
    mu, zeros = _mean_and_zeros(name, A, W, entries, row_offset, col_offset)
    model, dim = _finish(name, entries, None)
    out = pm.Poisson(name, mu=mu, observed=entries.values.astype(np.int64), dims=dim)
    _add_zero_mass(model, zeros)
    return out


def negative_binomial(name, A, W, *, observed, alpha, row_offset=None, col_offset=None,
                      mask=None):
    """Gamma-Poisson likelihood ``X_dn ~ NB(n = alpha mu_dn, p = alpha / (1 + alpha))``.

    ``mu_dn = s_d c_n (A @ W)_dn`` is the mean and ``mu_dn (1 + 1 / alpha)`` the variance
    (Zhou & Carin 2015: the NB shape is factorized, with one probability for all entries).

    Parameters
    ----------
    name, A, W, observed, row_offset, col_offset, mask
        As in :func:`poisson`.
    alpha : float or pytensor tensor
        Dispersion (> 0); a scalar random variable (e.g. ``pm.Gamma``) to learn it.

    Returns
    -------
    pytensor.tensor.TensorVariable
        The observed ``pm.NegativeBinomial`` over the listed entries. For sparse input the
        observed zeros enter through a potential ``f"{name}_zeros"`` equal to
        ``alpha log(alpha / (1 + alpha)) sum(mu over observed zeros)``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> with pm.Model() as model:
    ...     A = pm.Gamma("A", 1.0, 1.0, shape=(2, 2))
    ...     W = pm.Gamma("W", 1.0, 1.0, shape=(2, 3))
    ...     obs = likelihoods.negative_binomial("X", A, W, observed=np.ones((2, 3)), alpha=2.0)
    >>> type(model["X"].owner.op).__name__
    'NegBinomialRV'
    """
    if isinstance(alpha, (int, float, np.integer, np.floating)) and not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    entries = count_entries(observed, mask=mask, name="observed")
    mu, zeros = _mean_and_zeros(name, A, W, entries, row_offset, col_offset)
    model, dim = _finish(name, entries, None)
    if isinstance(alpha, (int, float, np.integer, np.floating)):
        alpha = np.float64(alpha)  # PyTensor makes an exact Python float a float32 constant
    alpha_t = pt.as_tensor_variable(alpha)
    out = pm.NegativeBinomial(name, n=alpha_t * mu, p=alpha_t / (1.0 + alpha_t),
                              observed=entries.values.astype(np.int64), dims=dim)
    if zeros is not None:  # log NB(0) = n log p = alpha mu log(alpha / (1 + alpha))
        pot_name, graph, info = zeros
        zeros = (pot_name, -graph * alpha_t * pt.log(alpha_t / (1.0 + alpha_t)),
                 {**info, "alpha": alpha_t})
    _add_zero_mass(model, zeros)
    return out
