"""Count data in :class:`bnmfzoo.BayesianNMF`: ``beta_loss="kullback-leibler"`` fits Poisson NMF.

scikit-learn's ``NMF(beta_loss="kullback-leibler")`` minimizes the generalized KL divergence,
which is the negative Poisson log-likelihood up to a constant; the Bayesian counterpart is
:func:`bnmfzoo.models.poisson` (Gamma priors, Cemgil 2009) sampled by the latent-count Gibbs
step :class:`bnmfzoo.inference.GibbsPoisson`. This module holds what the estimator does
differently for count models (``"poisson"``, ``"negative_binomial"``):

* input: non-negative integer counts; NaN = missing in dense input; in ``scipy.sparse`` input
  **entries not stored are zero counts** (as in scikit-learn), so cost and memory stay
  O(nonzeros); in a :func:`bnmfzoo.long_format` matrix the listed entries are the observed ones;
* the chains start from scikit-learn's KL multiplicative updates (``init="nndsvda"``, up to
  1000 iterations, ``tol=1e-6``; 200 when nonzeros x K exceeds 10 million), floored away from
  zero (``method_kwargs={"initvals": ...}`` overrides it). The latent-count Gibbs chain climbs
  slowly from a poor start: on the 552 ESCC catalogues (K = 8) from a 200-iteration start its
  log-likelihood still rose for ~1500 sweeps;
* :meth:`~bnmfzoo.BayesianNMF.transform` solves the KL (Poisson) problem for the loadings with
  ``components_`` fixed (multiplicative updates), and
  :meth:`~bnmfzoo.BayesianNMF.score` is the Poisson log-likelihood per observed entry.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from bnmfzoo._base.validation import fmt

#: models of counts (the KL / Poisson family)
COUNT_MODELS = ("poisson", "negative_binomial")
_KL = ("kullback-leibler", 1)
_FROBENIUS = ("frobenius", 2)
_INIT_ITER = 1000
_INIT_ITER_LARGE = 200
_LARGE = 10_000_000  # nonzeros x K above which the start runs _INIT_ITER_LARGE iterations
_TRANSFORM_ITER = 300


def _loss_kind(beta_loss):
    if isinstance(beta_loss, str):
        key = beta_loss
    elif isinstance(beta_loss, numbers.Real) and not isinstance(beta_loss, bool):
        key = float(beta_loss)
    else:
        key = None
    if key in _KL:
        return "kl"
    if key in _FROBENIUS:
        return "frobenius"
    raise ValueError(f"beta_loss must be 'frobenius' (2) or 'kullback-leibler' (1), got "
                     f"{fmt(beta_loss)}; other beta-divergences have no Bayesian model here")


def model_name(model, beta_loss):
    """The model the estimator fits for ``model`` and ``beta_loss``.

    ``beta_loss="kullback-leibler"`` turns the default Gaussian model into ``"poisson"`` and
    keeps a count model; a count model named explicitly implies the KL loss.

    Examples
    --------
    >>> model_name("exponential_gaussian", "kullback-leibler")
    'poisson'
    >>> model_name("negative_binomial", "frobenius")
    'negative_binomial'
    """
    kind = _loss_kind(beta_loss)
    if kind == "kl":
        if model == "exponential_gaussian":
            return "poisson"
        if model not in COUNT_MODELS:
            raise ValueError(f"beta_loss='kullback-leibler' fits a count model; model={model!r} "
                             f"is not one of {COUNT_MODELS}")
    return model


def validate_counts(est, X, labels, *, reset):
    """Check count input; return ``(data for the model, dense X or None, mask or None)``.

    Dense input comes back as a labelled DataArray (NaN = missing) plus the float array and
    its mask; ``scipy.sparse`` as a CSR array (unstored = zero); a LongMatrix unchanged.
    """
    from sklearn.utils.validation import validate_data

    from bnmfzoo._base.entries import LongMatrix

    if isinstance(X, LongMatrix):
        if reset:
            est.n_features_in_ = X.shape[1]
        elif X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input.")
        _check_count_values(X.values, fitting=reset)
        return X, None, None
    if sp.issparse(X):
        X = validate_data(est, X, reset=reset, accept_sparse="csr", dtype=np.float64,
                          ensure_min_samples=2 if reset else 1)
        X = sp.csr_array(X)
        X.sum_duplicates()
        _check_count_values(X.data, fitting=reset)
        return X, None, None
    X = validate_data(est, X, reset=reset, ensure_all_finite="allow-nan", dtype=np.float64,
                      ensure_min_samples=2 if reset else 1, ensure_min_features=1)
    mask = np.isfinite(X)
    _check_count_values(X[mask], fitting=reset)
    import xarray as xr

    rows, cols = labels if labels is not None else (np.arange(X.shape[0]),
                                                    np.arange(X.shape[1]))
    da = xr.DataArray(X, dims=("row", "col"), coords={"row": rows, "col": cols})
    return da, X, mask


def _check_count_values(values, fitting=False):
    """Raise unless ``values`` are non-negative integers (and, when fitting, not all zero)."""
    values = np.asarray(values, dtype=float)
    if values.size and (not np.isfinite(values).all() or (values < 0).any()
                        or (values != np.rint(values)).any()):
        raise ValueError("X must hold non-negative integer counts for a count model "
                         "(beta_loss='kullback-leibler'); NaN marks a missing entry in dense X")
    if fitting and not (values > 0).any():
        raise ValueError("X holds no nonzero count among its observed entries: a count model "
                         "has nothing to factorize")


def _nmf_start(data, K, seed):
    """A KL multiplicative-update start ``(A, W)``, floored away from zero."""
    import warnings

    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    from bnmfzoo._base.entries import LongMatrix

    if isinstance(data, LongMatrix):  # missing cells read as 0 at the start
        M = sp.csr_array((data.values, (data.rows, data.cols)), shape=data.shape)
    elif sp.issparse(data):
        M = sp.csr_array(data, copy=True)
    else:
        M = np.nan_to_num(np.asarray(data, dtype=float))
    if sp.issparse(M):
        M.eliminate_zeros()  # scikit-learn's KL solver expects no stored zeros
    nnz = M.nnz if sp.issparse(M) else np.count_nonzero(M)
    max_iter = _INIT_ITER if nnz * K <= _LARGE else _INIT_ITER_LARGE
    nmf = NMF(K, beta_loss="kullback-leibler", solver="mu", init="nndsvda", max_iter=max_iter,
              tol=1e-6, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        A = nmf.fit_transform(M)
    W = nmf.components_
    floor = 1e-3 * max(float(M.sum()) / (np.prod(M.shape) * K), 1e-12) ** 0.5
    return np.maximum(A, floor), np.maximum(W, floor)


def start_values(data, K, method, kwargs, seed):
    """``kwargs`` with ``initvals`` from :func:`_nmf_start` for the Gibbs step (unless given)."""
    if method != "gibbs_poisson" or "initvals" in kwargs:
        return kwargs
    A0, W0 = _nmf_start(data, K, seed if isinstance(seed, int) else 0)
    return {**kwargs, "initvals": {"A": A0, "W": W0}}


def _cells(data):
    """Nonzero observed cells ``(rows, cols, counts)``, a rate-sum function, observed count.

    ``total(A, W)`` sums ``A @ W`` over the observed cells.
    """
    from bnmfzoo._base.entries import LongMatrix

    if isinstance(data, LongMatrix):
        keep = data.values != 0
        rows, cols = data.rows, data.cols

        def total(A, W):
            return float(np.einsum("ek,ke->", A[rows], W[:, cols]))

        return rows[keep], cols[keep], data.values[keep], total, data.n_observed
    if sp.issparse(data):
        C = sp.coo_array(data)
        keep = C.data != 0

        def total(A, W):
            return float(A.sum(0) @ W.sum(1))

        return C.row[keep], C.col[keep], C.data[keep], total, int(np.prod(data.shape))
    X = np.asarray(data, dtype=float)
    mask = np.isfinite(X)
    rows, cols = np.nonzero(mask & (np.nan_to_num(X) != 0))

    def total(A, W):
        return float(((A @ W) * mask).sum())

    return rows, cols, X[rows, cols], total, int(mask.sum())


def poisson_loglik(data, A, W):
    """Poisson log-likelihood of the observed counts under ``A @ W``, and their number.

    O(nonzeros K) for sparse input.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import poisson
    >>> X = np.array([[0.0, 2.0], [1.0, np.nan]])
    >>> A, W = np.array([[1.0], [2.0]]), np.array([[0.5, 1.5]])
    >>> ll, n = poisson_loglik(X, A, W)
    >>> n, bool(np.isclose(ll, poisson.logpmf([0, 2, 1], [0.5, 1.5, 1.0]).sum()))
    (3, True)
    """
    rows, cols, x, total, n = _cells(data)
    mu = np.einsum("ek,ke->e", A[rows], W[:, cols])
    with np.errstate(divide="ignore"):
        ll = float(np.sum(x * np.log(mu) - gammaln(x + 1.0)) - total(A, W))
    return ll, n


def kl_error(data, A, W):
    """``sqrt(2 D_KL(X || A W))`` over the observed cells.

    scikit-learn's ``reconstruction_err_`` for ``beta_loss="kullback-leibler"``.
    """
    rows, cols, x, total, _ = _cells(data)
    mu = np.einsum("ek,ke->e", A[rows], W[:, cols])
    div = float(np.sum(x * np.log(x / mu)) - x.sum() + total(A, W))
    return float(np.sqrt(2.0 * max(div, 0.0)))


def loadings(data, H, *, n_iter=_TRANSFORM_ITER):
    """Non-negative ``A`` with ``X ~ Poisson(A @ H)``: KL multiplicative updates, ``H`` fixed.

    Missing cells (NaN in dense input; unlisted in a LongMatrix) do not count.
    """
    from bnmfzoo._base.entries import LongMatrix

    D = data.shape[0]
    K = H.shape[0]
    if isinstance(data, LongMatrix):
        M = sp.csr_array((data.values, (data.rows, data.cols)), shape=data.shape)
        obs = sp.csr_array((np.ones(data.n_observed), (data.rows, data.cols)),
                           shape=data.shape)
        denom = obs @ H.T
    elif sp.issparse(data):
        M = sp.csr_array(data)
        denom = np.broadcast_to(H.sum(1), (D, K))
    else:
        X = np.asarray(data, dtype=float)
        mask = np.isfinite(X)
        M = sp.csr_array(np.where(mask, X, 0.0))
        denom = mask.astype(float) @ H.T
    C = sp.coo_array(M)
    A = np.full((D, K), max(float(M.sum()) / max(float(denom.sum()), 1e-300), 1e-12))
    denom = np.maximum(denom, 1e-300)
    for _ in range(n_iter):
        mu = np.maximum(np.einsum("ek,ke->e", A[C.row], H[:, C.col]), 1e-300)
        ratio = sp.csr_array((C.data / mu, (C.row, C.col)), shape=M.shape)
        A *= (ratio @ H.T) / denom
    return A


def long_counts(e):
    """Sparse counts read as a LongMatrix: ``(csr_array, row labels, col labels)``.

    For a ``.npz`` file or ``--long`` triplets of a count model, cells not listed are zero
    counts, so only the nonzeros cost anything.
    """
    return e.to_scipy(), np.asarray(e.row_labels), np.asarray(e.col_labels)


def single_cell_input(X):
    """``(sparse X, row labels, col labels)`` of an AnnData or ``SparseCounts``, else None.

    Non-integer values are left to the count models' own check (a Gaussian model takes them).
    """
    from bnmfzoo.datasets.singlecell import as_sparse_counts

    return as_sparse_counts(X, integral=False)


def relabel(dt, rows, cols):
    """Put the data's ``row`` / ``col`` labels on every group of ``dt`` that has those dims.

    A model built from ``scipy.sparse`` counts is labelled ``0..D-1`` / ``0..N-1``; flat
    observed-entry coordinates ``row`` / ``col`` (integer positions) are mapped too.
    """
    for node in dt.subtree:
        ds = node.to_dataset()
        new = {}
        for name, labels in (("row", rows), ("col", cols)):
            if name not in ds.coords:
                continue
            coord = ds.coords[name]
            if coord.dims == (name,) and coord.size == labels.size:
                new[name] = labels
            elif coord.dims != (name,) and coord.dtype.kind in "iu":
                new[name] = (coord.dims, labels[coord.values])
        if new:
            node.dataset = ds.assign_coords(new)
    return dt
