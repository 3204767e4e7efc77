"""Mean-parameterized Bernoulli NMF models (Lumbreras, Filstroff & Févotte 2020).

``X_ij ~ Bernoulli((A @ W)_ij)`` with no link function; the product stays in [0, 1] because one
factor holds probabilities and the other sums to one:

============  ==============================  ==============================
model         ``A`` (row, factor)             ``W`` (factor, col)
============  ==============================  ==============================
``beta_dir``  rows ~ Dirichlet(gamma)         entries ~ Beta(alpha, beta)
``dir_beta``  entries ~ Beta(alpha, beta)     columns ~ Dirichlet(eta)
``dir_dir``   rows ~ Dirichlet(gamma)         columns ~ Dirichlet(eta)
============  ==============================  ==============================

(The paper's W is our ``A`` and its H our ``W``.) Dirichlet columns of ``W`` are the free variable
``Wt`` (col, factor) with PyMC's simplex transform; ``W`` is its transpose, a Deterministic.

Two different things are called "K" here, and they are different models:

* ``truncation=K`` (or neither ``rank`` nor ``truncation``: K = 100) is the truncated
  nonparametric prior of the paper (§4.4): the Dirichlet concentration is divided by K
  (``gamma_k = gamma / K``; for ``dir_beta`` ``eta_k = eta / K``), so only the components the data
  need take mass. **The paper's parliament, animals, lastfm, paleo and unvotes fits all use this
  prior with K = 100** (Lumbreras et al. 2020, §5: Beta-Dir Gibbs training NLL 4,863 and Dir-Dir
  8,930 on the parliament data).
* ``rank=K`` is the parametric model with ``gamma_k = gamma`` (1 per component by default): all K
  components are a priori equally used. With a large K (e.g. ``rank=100``) it spreads the data
  over all components; that is a different, much flatter posterior, not the paper's K = 100 fit.
  Measured on the parliament data (130 x 130): ``beta_dir(X, rank=100)`` keeps its collapsed
  Gibbs chains at near-constant predictions (training NLL about 10,390 against 4,8xx) for 8,000
  sweeps on seeds 0-2, from the CVB0 start as from the prior's: the prior's 100 pseudo-counts per
  row weigh as much as the 130 votes of a row. The samplers warn about such a fit.

Passing both ``rank`` and ``truncation`` is an error.

The constructors attach nothing to the model: the samplers read the family, the
hyperparameters (typed :class:`~bnmfzoo.models._recognize_binary.BinaryPriors`) and the data
from its graph, as for a user's own model (:func:`bnmfzoo.models.recognize`). Whether the prior
is the truncated nonparametric one is read from the concentration itself
(:attr:`~bnmfzoo.models._recognize_binary.BinaryPriors.nonparametric`: mean below 1/2, as
``truncation=K`` gives for ``gamma < K / 2``).
"""

import numpy as np
import pymc as pm

from bnmfzoo._base.results import data_coords
from bnmfzoo._base.validation import check_data, check_positive, check_rank, fmt
from bnmfzoo._terms.bernoulli import bernoulli_mean

__all__ = ["beta_dir", "dir_beta", "dir_dir", "DEFAULT_TRUNCATION"]

#: truncation level of the nonparametric prior (paper: K = 100)
DEFAULT_TRUNCATION = 100
_MAX_NONPARAMETRIC_RANK = 10_000


def _setup(V, rank, nonparametric, mask, truncation=None):
    X, observed, entries = check_data(V, kind="binary", mask=mask, name="V")
    if truncation is not None:
        if rank is not None:
            raise ValueError(
                f"give either rank={fmt(rank)} (parametric model, gamma_k = gamma per component) "
                f"or truncation={fmt(truncation)} (truncated nonparametric prior, "
                "gamma_k = gamma / K), "
                "not both"
            )
        if nonparametric is False:
            raise ValueError("truncation= is the nonparametric prior; it cannot be combined "
                             "with nonparametric=False (use rank= for a parametric model)")
        if isinstance(truncation, bool) or int(truncation) != truncation or truncation < 1:
            raise ValueError(f"truncation must be an integer >= 1, got {fmt(truncation)}")
        rank, nonparametric = int(truncation), True
    if nonparametric is None:
        nonparametric = rank is None
    if rank is None:
        if not nonparametric:
            raise ValueError("rank=None means the nonparametric prior; give a rank for a "
                             "parametric model")
        rank = DEFAULT_TRUNCATION
    max_rank = _MAX_NONPARAMETRIC_RANK if nonparametric else None
    rank = check_rank(rank, X.shape, max_rank=max_rank)
    return X, observed, entries, rank, bool(nonparametric)


def _vector(value, K, name):
    check_positive(value, name=name)
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return np.full(K, float(arr))
    if arr.shape != (K,):
        raise ValueError(f"{name} must be a scalar or a length-{K} vector, got shape {arr.shape}")
    return arr.copy()


def _coords(X, K):
    coords = data_coords(X)
    coords["factor"] = np.arange(K)
    return coords


def _build(data, K, *, A_prior, W_prior):
    X, observed, entries = data
    D, N = X.shape
    with pm.Model(coords=_coords(X, K)) as model:
        if A_prior[0] == "dirichlet":
            A = pm.Dirichlet("A", a=np.broadcast_to(A_prior[1], (D, K)).copy(),
                             dims=("row", "factor"))
        else:
            A = pm.Beta("A", alpha=np.broadcast_to(A_prior[1], (D, K)).copy(),
                        beta=np.broadcast_to(A_prior[2], (D, K)).copy(), dims=("row", "factor"))
        if W_prior[0] == "dirichlet":
            Wt = pm.Dirichlet("Wt", a=np.broadcast_to(W_prior[1], (N, K)).copy(),
                              dims=("col", "factor"))
            W = pm.Deterministic("W", Wt.T, dims=("factor", "col"))
        else:
            W = pm.Beta("W", alpha=np.broadcast_to(W_prior[1][:, None], (K, N)).copy(),
                        beta=np.broadcast_to(W_prior[2][:, None], (K, N)).copy(),
                        dims=("factor", "col"))
        if entries is None:
            bernoulli_mean("X", A, W, observed=X, mask=observed)
        else:  # sparse data: the entries only (pair product, no D x N array)
            bernoulli_mean("X", A, W, observed=entries)
    return model


def beta_dir(V, rank=None, *, truncation=None, alpha=1.0, beta=1.0, gamma=1.0, nonparametric=None,
             mask=None):
    """Beta-Dir model: ``A`` rows ~ Dirichlet(gamma), ``W`` entries ~ Beta(alpha, beta).

    ``X_ij ~ Bernoulli((A @ W)_ij)`` on the observed entries (paper model (c1), also binary ICA).

    Parameters
    ----------
    V : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Binary data, NaN for missing entries. Sparse input (``scipy.sparse`` or
        :func:`bnmfzoo.long_format`) lists the observed entries only: its **stored entries are
        the observed ones, explicit zeros included** (entries not stored are missing, not 0),
        and no D x N array is formed (memory O(observed + (D + N) K)).
    rank : int, optional
        Number of components of the **parametric** model (``gamma_k = gamma`` per component).
        Not the paper's "K = 100": for that use ``truncation``.
    truncation : int, optional
        Truncation level K of the **nonparametric** prior (``gamma_k = gamma / K``). The paper
        used K = 100 for all its experiments (parliament training NLL 4,863 with Gibbs). When
        neither ``rank`` nor ``truncation`` is given, ``truncation=100``. Giving both is an error.
    alpha, beta : float or array of shape (K,)
        Beta prior of ``W`` (paper default 1).
    gamma : float or array of shape (K,)
        Dirichlet concentration of the rows of ``A`` (paper default 1). With the nonparametric
        prior the per-component concentration is ``gamma / K``.
    nonparametric : bool, optional
        Older spelling: ``rank=K, nonparametric=True`` equals ``truncation=K``. Defaults to True
        exactly when ``rank`` is None; the truncation may exceed ``min(D, N)``.
    mask : array-like of bool, optional
        True = observed, combined with the NaN pattern of ``V``.

    Returns
    -------
    pymc.Model
        Variables ``A`` (row, factor), ``W`` (factor, col) and the observed ``X``. Nothing is
        attached: the samplers read the family (``"beta_dir"``) and the hyperparameters from
        the graph (:func:`bnmfzoo.models.recognize`).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import beta_dir
    >>> V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, np.nan]])
    >>> model = beta_dir(V, rank=2)
    >>> sorted(model.named_vars)
    ['A', 'W', 'X']
    >>> paper = beta_dir(V, truncation=100)  # the paper's K = 100 nonparametric prior
    >>> from bnmfzoo.models import recognize
    >>> recognize(paper).gamma[0]
    np.float64(0.01)
    """
    X, observed, entries, K, nonparametric = _setup(V, rank, nonparametric, mask, truncation)
    a = _vector(alpha, K, "alpha")
    b = _vector(beta, K, "beta")
    g = _vector(gamma, K, "gamma") / (K if nonparametric else 1)
    return _build((X, observed, entries), K, A_prior=("dirichlet", g), W_prior=("beta", a, b))


def dir_beta(V, rank=None, *, truncation=None, alpha=1.0, beta=1.0, eta=1.0, nonparametric=None,
             mask=None):
    """Dir-Beta model: ``A`` entries ~ Beta(alpha, beta), ``W`` columns ~ Dirichlet(eta).

    The transpose of Beta-Dir (Bayesian Aspect Bernoulli, paper model (c2)); the columns of ``W``
    are the free variable ``Wt`` (col, factor) and ``W = Wt.T``.

    Parameters
    ----------
    V : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Binary data, NaN for missing entries. Sparse input (``scipy.sparse`` or
        :func:`bnmfzoo.long_format`) lists the observed entries only: its **stored entries are
        the observed ones, explicit zeros included** (entries not stored are missing, not 0),
        and no D x N array is formed (memory O(observed + (D + N) K)).
    rank : int, optional
        Number of components of the parametric model (``eta_k = eta``).
    truncation : int, optional
        Truncation level K of the nonparametric prior (``eta_k = eta / K``); the paper's
        experiments use K = 100, the default when neither ``rank`` nor ``truncation`` is given.
    alpha, beta : float or array of shape (K,)
        Beta prior of ``A``.
    eta : float or array of shape (K,)
        Dirichlet concentration of the columns of ``W`` (``eta / K`` when nonparametric).
    nonparametric : bool, optional
        Older spelling: ``rank=K, nonparametric=True`` equals ``truncation=K``.
    mask : array-like of bool, optional
        True = observed.

    Returns
    -------
    pymc.Model
        Family ``"dir_beta"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import dir_beta
    >>> model = dir_beta(np.array([[1, 0, 1], [0, 0, 1]]), rank=2)
    >>> sorted(model.named_vars)
    ['A', 'W', 'Wt', 'X']
    """
    X, observed, entries, K, nonparametric = _setup(V, rank, nonparametric, mask, truncation)
    a = _vector(alpha, K, "alpha")
    b = _vector(beta, K, "beta")
    e = _vector(eta, K, "eta") / (K if nonparametric else 1)
    return _build((X, observed, entries), K, A_prior=("beta", a, b), W_prior=("dirichlet", e))


def dir_dir(V, rank=None, *, truncation=None, gamma=1.0, eta=1.0, nonparametric=None, mask=None):
    """Dir-Dir model: ``A`` rows ~ Dirichlet(gamma), ``W`` columns ~ Dirichlet(eta).

    Paper model (c3). With the nonparametric prior ``gamma_k = gamma / K`` while ``eta`` is kept
    as given (paper: ``eta_k = 1``). Needs ``rank >= 2``.

    Parameters
    ----------
    V : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix, shape (D, N)
        Binary data, NaN for missing entries. Sparse input (``scipy.sparse`` or
        :func:`bnmfzoo.long_format`) lists the observed entries only: its **stored entries are
        the observed ones, explicit zeros included** (entries not stored are missing, not 0),
        and no D x N array is formed (memory O(observed + (D + N) K)).
    rank : int, optional
        Number of components (>= 2) of the parametric model (``gamma_k = gamma``).
    truncation : int, optional
        Truncation level K of the nonparametric prior (``gamma_k = gamma / K``); the paper's
        Dir-Dir parliament fit (training NLL 8,930) uses K = 100, the default when neither
        ``rank`` nor ``truncation`` is given.
    gamma : float or array of shape (K,)
        Dirichlet concentration of the rows of ``A``.
    eta : float or array of shape (K,)
        Dirichlet concentration of the columns of ``W``.
    nonparametric : bool, optional
        Older spelling: ``rank=K, nonparametric=True`` equals ``truncation=K``.
    mask : array-like of bool, optional
        True = observed.

    Returns
    -------
    pymc.Model
        Family ``"dir_dir"``; free variables ``A`` and ``Wt`` (``W = Wt.T``).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import dir_dir
    >>> from bnmfzoo.models import recognize
    >>> model = dir_dir(np.array([[1, 0, 1], [0, 0, 1]]), rank=2)
    >>> recognize(model).family
    'dir_dir'
    """
    X, observed, entries, K, nonparametric = _setup(V, rank, nonparametric, mask, truncation)
    if K < 2:
        raise ValueError("rank must be >= 2 for the Dir-Dir model (with one component a 0 "
                         "entry is impossible)")
    g = _vector(gamma, K, "gamma") / (K if nonparametric else 1)
    e = _vector(eta, K, "eta")
    return _build((X, observed, entries), K, A_prior=("dirichlet", g), W_prior=("dirichlet", e))
