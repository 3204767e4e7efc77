"""Mean-parameterized Bernoulli likelihood ``X_ij ~ Bernoulli((A @ W)_ij)`` (no link function).

Used by :func:`bnmfzoo.models.beta_dir`, :func:`~bnmfzoo.models.dir_beta` and
:func:`~bnmfzoo.models.dir_dir` (Lumbreras et al. 2020), and usable in any ``pm.Model`` whose
factors keep ``A @ W`` inside [0, 1]. Only observed entries enter, through one flat 1-D index of
the product or, for sparsely observed data, the pair product
(:func:`bnmfzoo._terms.gaussian.observed_mean`). Sparse input (``scipy.sparse`` or
:func:`bnmfzoo.long_format`; stored entries = observed ones, explicit zeros included) never forms
a D x N array.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bnmfzoo._base.entries import as_long, is_sparse_input
from bnmfzoo._terms.gaussian import observed_flat_index, observed_mean

__all__ = ["bernoulli_mean"]


def bernoulli_mean(name, A, W, observed, *, mask=None):
    """Bernoulli likelihood with mean ``A @ W`` on the observed entries of a binary matrix.

    Parameters
    ----------
    name : str
        Name of the observed variable (e.g. ``"X"``).
    A : pytensor tensor or array, shape (D, R)
    W : pytensor tensor or array, shape (R, N)
        Factors whose product lies in [0, 1] (e.g. Dirichlet rows of ``A`` and Beta entries of
        ``W``); the product is clipped to [0, 1] against round-off.
    observed : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        0/1 data; NaN marks a missing entry. In sparse input the stored entries are the
        observed ones (explicit zeros included); no dense D x N array is then formed.
    mask : array-like of bool, optional
        True = observed (combined with the NaN pattern of ``observed``; dense input only).

    Returns
    -------
    pytensor.tensor.TensorVariable
        The observed ``pm.Bernoulli`` over the observed entries (dim ``f"{name}_obs"``, whose
        coordinate is the row-major flat index of each entry;
        :func:`bnmfzoo.diagnostics.label_observations` adds ``row`` / ``col`` labels on that
        dim to a result).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.array([[1.0, 0.0, np.nan], [0.0, 1.0, 1.0]])
    >>> with pm.Model() as model:
    ...     A = pm.Dirichlet("A", a=np.ones((2, 2)))
    ...     W = pm.Beta("W", 1.0, 1.0, shape=(2, 3))
    ...     obs = likelihoods.bernoulli_mean("X", A, W, observed=X)
    >>> model.rvs_to_values[model["X"]].data.shape
    (5,)
    """
    if is_sparse_input(observed):
        if mask is not None:
            raise TypeError("bernoulli_mean: mask= is not used with sparse observed data (its "
                            "stored entries are the observed ones)")
        entries = as_long(observed, name="observed")
        values, flat_idx, shape = entries.values, entries.flat_index, entries.shape
        rows, cols = entries.rows, entries.cols
    else:
        values, obs_mask, flat_idx = observed_flat_index(observed, mask)
        shape = obs_mask.shape  # (row, col) layout of the data, as the flat index
        rows, cols = np.divmod(flat_idx, shape[1])
    if not np.isin(values, (0.0, 1.0)).all():
        raise ValueError("observed must be binary (0/1, NaN for missing) for a Bernoulli model")
    model = pm.modelcontext(None)
    dim = f"{name}_obs"
    if dim not in model.coords:
        model.add_coord(dim, flat_idx.tolist())
    p = pt.clip(observed_mean(A, W, rows, cols, shape), 0.0, 1.0)
    return pm.Bernoulli(name, p=p, observed=values.astype(np.int8), dims=dim)
