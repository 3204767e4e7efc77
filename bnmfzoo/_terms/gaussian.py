"""Gaussian likelihood on the observed entries of a factorized matrix (``likelihoods.gaussian``).

Two ways to form the means of the observed entries, chosen by :func:`mean_path`:

* ``"flat"``: the product ``A @ W`` once, then one flat 1-D index of the observed entries
  (``(A @ W).ravel()[flat_idx]``). Indexing with ``[rows, cols]`` pairs instead makes each
  gradient about 30x slower (measured on GDSC, K = 20: 14-20 ms against 0.55 ms per
  log-density gradient). Costs O(D x N x R) time and O(D x N) memory per evaluation.
* ``"pairs"``: ``sum_k A[rows, k] * W[k, cols]`` by the numba-backed Op of
  :mod:`bnmfzoo._terms._pairs` (gradient included), so time and memory are O(observed x R):
  the only way for large sparse matrices (a 72,000 x 10,000 product takes 5.8 GB).

Unobserved entries never enter the likelihood. Index arrays are turned into PyTensor constants
before indexing: PyTensor's ``__getitem__`` walks a NumPy index array element by element in
Python (about 1 µs per observed entry).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bnmfzoo._base.entries import as_long, is_sparse_input
from bnmfzoo._base.validation import as_dataarray, check_mask, check_positive
from bnmfzoo._terms._pairs import pair_product

__all__ = ["gaussian", "observed_flat_index", "observed_mean", "mean_path"]

#: the pair path is taken below this fraction of observed entries (or above MAX_FLAT_CELLS).
#: Measured CPU time of one log-density + gradient, pairs / flat (likelihood_paths.py, R = 10):
#: 0.13 at 2 %, 0.30 at 5 %, 0.43 at 10 %, 0.99 at 20 %, 1.62 at 30 %, 2.06 at 50 %; GDSC size
#: (705 x 139, R = 20): 0.96 at 30 %, 2.36 at 80 %.
PAIRS_BELOW_DENSITY = 0.15
#: above this many cells the dense product is never formed
MAX_FLAT_CELLS = 20_000_000


def mean_path(n_observed, shape):
    """``"flat"`` or ``"pairs"``: how :func:`observed_mean` forms the observed means.

    Examples
    --------
    >>> mean_path(79_000, (705, 139)), mean_path(10_000_000, (72_000, 10_000))
    ('flat', 'pairs')
    """
    cells = int(shape[0]) * int(shape[1])
    if cells > MAX_FLAT_CELLS or n_observed < PAIRS_BELOW_DENSITY * cells:
        return "pairs"
    return "flat"


def observed_mean(A, W, rows, cols, shape, *, path="auto"):
    """``(A @ W)[rows, cols]`` as a PyTensor vector, by the ``"flat"`` or ``"pairs"`` path.

    Examples
    --------
    >>> import numpy as np
    >>> A, W = np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(2, 4)
    >>> rows, cols = np.array([0, 2, 2]), np.array([3, 0, 1])
    >>> [observed_mean(A, W, rows, cols, (3, 4), path=p).eval().tolist()
    ...  for p in ("flat", "pairs")]
    [[7.0, 20.0, 29.0], [7.0, 20.0, 29.0]]
    """
    if path == "auto":
        path = mean_path(np.size(rows), shape)
    if path == "flat":
        flat = pt.as_tensor_variable(np.asarray(rows, np.int64) * int(shape[1]) + cols)
        return (pt.as_tensor_variable(A) @ pt.as_tensor_variable(W)).ravel()[flat]
    if path != "pairs":
        raise ValueError(f"path must be 'auto', 'flat' or 'pairs', got {path!r}")
    return pair_product(A, W, np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))


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
    observed : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Data; NaN marks a missing entry. In sparse input (``scipy.sparse`` or
        :func:`bnmfzoo.long_format`) the stored entries are the observed ones, explicit zeros
        included; no dense D x N array is then formed.
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
    if is_sparse_input(observed):
        if mask is not None:
            raise TypeError("gaussian: mask= is not used with sparse observed data (its stored "
                            "entries are the observed ones)")
        entries = as_long(observed, name="observed")
        values, rows, cols, flat_idx = (entries.values, entries.rows, entries.cols,
                                        entries.flat_index)
        if not np.isfinite(values).all():
            raise ValueError("observed has non-finite stored entries; observed entries must be "
                             "finite")
        shape = entries.shape
    else:
        values, obs_mask, flat_idx = observed_flat_index(observed, mask)
        shape = obs_mask.shape
        rows, cols = np.divmod(flat_idx, shape[1])
    # nothing is recorded on the model: fitters recognize the likelihood and its entries from
    # the graph (bnmfzoo.models._observed.observed_product)
    model = pm.modelcontext(None)
    dim = f"{name}_obs"
    if dim not in model.coords:
        model.add_coord(dim, flat_idx.tolist())
    mu = observed_mean(A, W, rows, cols, shape)
    if tau is not None:
        return pm.Normal(name, mu=mu, tau=tau, observed=values, dims=dim)
    return pm.Normal(name, mu=mu, sigma=sigma, observed=values, dims=dim)
