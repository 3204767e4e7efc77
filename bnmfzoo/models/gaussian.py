"""Exponential-Gaussian BNMF and BNMTF (Schmidt et al. 2009; Brouwer et al. 2017).

``X_ij ~ Normal((A W)_ij, 1/tau)`` on the observed entries, ``A, W ~ Exponential(lambda)``,
``tau ~ Gamma(alpha_tau, beta_tau)`` (or a fixed ``sigma``), optional ARD rates per factor.

Defaults are set from the data's scale (empirical Bayes, issue #34), so that the same data in
other units give the same relative answer (as scikit-learn's NMF does): with ``m`` the mean
absolute observed entry and ``v`` the variance of the observed entries,

* ``lambda_="auto"``: ``lambda = sqrt(R / m)`` for NMF (``(K L / m) ** (1/3)`` for the three
  factors of NMTF), so that the prior mean of every entry of ``A @ W`` (``F S G^T``) is ``m``;
* ``beta_tau="auto"``: ``beta_tau = alpha_tau * v``, so that the prior mean of the noise
  precision ``tau`` is ``1 / v`` (one pseudo-observation: ``alpha_tau = 1``);
* ``beta0="auto"`` (ARD): ``beta0 = alpha0 / lambda``, the prior mean of every ARD rate is the
  automatic ``lambda``.

These are plain numbers in the PyMC graph (``model["A"].owner.inputs``), reported by
:func:`scale_defaults`. Rescaling ``X`` by ``c`` then rescales ``A`` and ``W`` by ``sqrt(c)``
and ``tau`` by ``1 / c**2``: the posterior is the same up to units. Brouwer et al.'s (2017)
fixed values (``lambda = 0.1``, ``alpha_tau = beta_tau = alpha0 = beta0 = 1``), the
library's defaults before issue #34 and the settings of their experiments, are
:data:`BROUWER2017` (``exponential_gaussian(X, R, **BROUWER2017)``).
"""

import warnings

import numpy as np
import pymc as pm

from bnmfzoo._base.outliers import inliers, warn_outliers
from bnmfzoo._base.results import data_coords
from bnmfzoo._base.validation import check_data, check_matrix, check_positive, check_rank, fmt
from bnmfzoo._terms.gaussian import gaussian

__all__ = ["exponential_gaussian", "tri_exponential_gaussian", "reference_sigma", "BROUWER2017",
           "BROUWER2017_NMTF", "scale_defaults"]

#: Brouwer et al.'s (2017) fixed hyperparameters (the defaults before issue #34): pass them
#: explicitly to reproduce the paper, ``exponential_gaussian(X, R, **BROUWER2017)``
BROUWER2017 = {"lambda_": 0.1, "alpha_tau": 1.0, "beta_tau": 1.0, "alpha0": 1.0, "beta0": 1.0}
#: the same for :func:`tri_exponential_gaussian`
BROUWER2017_NMTF = {"lambda_F": 0.1, "lambda_S": 0.1, "lambda_G": 0.1, "alpha_tau": 1.0,
                    "beta_tau": 1.0, "alpha0": 1.0, "beta0": 1.0}


def reference_sigma(X, rank, *, mask=None, n_iter=500, random_seed=0):
    """Residual standard deviation of a scikit-learn NMF fitted to the observed entries.

    Used as the fixed noise level of ``sigma="reference"`` (Masood & Doshi-Velez 2016, 2019).
    Complete data are fitted directly (``sklearn.decomposition.NMF``, ``init="nndsvda"``).
    With missing entries, that NMF is fitted to the data with missing entries filled by their
    row's observed mean, and then refined by ``n_iter`` masked multiplicative updates (Lee &
    Seung's Frobenius updates with the mask as weights), so the fit uses the observed entries
    only. The result is the root-mean-square residual over the **observed** entries.

    Parameters
    ----------
    X : array-like or xarray.DataArray
        D x N non-negative data, NaN for missing.
    rank : int
        NMF rank.
    mask : array-like of bool, optional
        True = observed.
    n_iter : int
        Masked multiplicative updates when entries are missing.
    random_seed : int
        Seed of the NMF solver.

    Returns
    -------
    float
        The residual standard deviation (floored at ``1e-8 * max|X|`` so it stays positive).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).exponential(size=(8, 6))
    >>> reference_sigma(X, 2) > 0
    True
    """
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    Xda, m = check_matrix(X, kind="nonnegative", mask=mask)
    rank = check_rank(rank, Xda.shape)
    observed = np.where(m, np.nan_to_num(Xda.values), 0.0)
    filled = observed
    if not m.all():
        row_mean = observed.sum(axis=1) / m.sum(axis=1)
        filled = np.where(m, observed, row_mean[:, None])
    nmf = NMF(n_components=rank, init="nndsvda", max_iter=1000, random_state=random_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        A = nmf.fit_transform(filled)
    W = nmf.components_
    if not m.all():
        from bnmfzoo._base.nmf_solvers import masked_mu_sweep

        mf = m.astype(float)
        for _ in range(int(n_iter)):
            masked_mu_sweep(observed, mf, A, W, eps=1e-12, additive=True)
    resid = (observed - A @ W)[m]
    scale = float(np.max(np.abs(observed[m]))) or 1.0
    return max(float(np.sqrt(np.mean(resid**2))), 1e-8 * scale)


AUTO = "auto"


def scale_defaults(X, rank, *, mask=None):
    """The data-scaled default hyperparameters of :func:`exponential_gaussian` (issue #34).

    With ``m`` the mean absolute observed entry and ``v`` their variance (outliers, see
    :mod:`bnmfzoo._base.outliers`, left out): the exponential
    rate ``lambda = (n_factors / m) ** (1 / n_blocks)`` (``sqrt(R / m)`` for ``A @ W``, two
    blocks; ``(K L / m) ** (1/3)`` for ``F S G^T``), so the prior mean of each entry of the
    product is ``m``; ``beta_tau = v`` per unit of ``alpha_tau`` (prior mean of ``tau`` is
    ``alpha_tau / beta_tau = 1 / v`` for ``alpha_tau = 1``). Rescaling ``X`` by ``c`` rescales
    ``lambda`` by ``c ** (-1 / n_blocks)`` and ``v`` by ``c**2``: the model is the same up to
    units.

    Parameters
    ----------
    X : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix
        The data (NaN = missing; sparse: stored entries are the observed ones).
    rank : int or tuple of int
        ``R``, or ``(K, L)`` for the tri-factorization.
    mask : array-like of bool, optional
        True = observed.

    Returns
    -------
    dict
        ``{"lambda": float, "variance": float, "mean_abs": float}``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.full((4, 3), 2.0); X[0, 0] = 4.0
    >>> d = scale_defaults(X, 2)
    >>> round(d["lambda"] ** -2 * 2, 4) == round(d["mean_abs"], 4)  # E[(A W)_ij] = R / lambda^2
    True
    >>> d10 = scale_defaults(10 * X, 2)
    >>> round(d10["variance"] / d["variance"], 6), round(d["lambda"] / d10["lambda"], 6)
    (100.0, 3.162278)
    """
    Xda, m, entries = check_data(X, kind="real", mask=mask)
    return _scale_stats(Xda, m, entries, rank)


def _scale_stats(Xda, m, entries, rank):
    values = entries.values if entries is not None else np.asarray(Xda.values)[m]
    values = inliers(values)  # an outlier (warned about) does not set the scale
    mean_abs = float(np.mean(np.abs(values)))
    variance = float(np.var(values))
    if not variance > 0:  # constant data: the squared scale instead
        variance = mean_abs**2
    if not mean_abs > 0:  # all zero: no scale to read; unit scale
        mean_abs, variance = 1.0, 1.0
    if isinstance(rank, (tuple, list)):
        n_factors, n_blocks = int(rank[0]) * int(rank[1]), 3
    else:
        n_factors, n_blocks = int(rank), 2
    lam = float((n_factors / mean_abs) ** (1.0 / n_blocks))
    return {"lambda": lam, "variance": variance, "mean_abs": mean_abs}


def _auto_rate(value, name, stats):
    """``value`` checked as a rate, or the automatic rate for ``"auto"``."""
    if isinstance(value, str) and value == AUTO:
        lam = stats["lambda"]
        low, high = RATE_RANGE
        if not low <= lam <= high:
            raise ValueError(
                f"the automatic {name} = {lam:.4g} (from the data's mean absolute entry "
                f"{stats['mean_abs']:.4g}) lies outside [{low:.0e}, {high:.0e}]: rescale X "
                "(e.g. multiply it by a power of ten) or give the rate explicitly")
        return lam
    return _rate(value, name)


def _auto_beta0(beta0, alpha0, stats, ard):
    """The ARD rate's Gamma rate; ``"auto"`` puts the prior mean of the ARD rates at lambda."""
    if isinstance(beta0, str) and beta0 == AUTO:
        if not ard:  # unused
            return None
        return _auto_rate(AUTO, "beta0", {**stats, "lambda": alpha0 / stats["lambda"]})
    return _rate(beta0, "beta0")


def _tau_prior(alpha_tau, beta_tau, stats):
    """Checked ``(alpha_tau, beta_tau)``; ``beta_tau="auto"`` is ``alpha_tau`` x variance."""
    check_positive(alpha_tau, name="alpha_tau")
    if isinstance(beta_tau, str) and beta_tau == AUTO:
        beta = float(alpha_tau) * stats["variance"]
        if not 1e-300 <= beta <= 1e300:
            raise ValueError(f"the automatic beta_tau = {beta:.4g} (alpha_tau x the data's "
                             f"variance {stats['variance']:.4g}) lies outside [1e-300, 1e300]: "
                             "rescale X or give beta_tau explicitly")
        return float(alpha_tau), beta
    check_positive(beta_tau, name="beta_tau")
    return float(alpha_tau), float(beta_tau)


def _noise(sigma, alpha_tau, beta_tau, Xda, mask, rank):
    """Resolve the noise options: return (sigma or None)."""
    if sigma is None:
        check_positive(alpha_tau, name="alpha_tau")
        if not (isinstance(beta_tau, str) and beta_tau == AUTO):
            check_positive(beta_tau, name="beta_tau")
        return None
    if isinstance(sigma, str):
        if sigma != "reference":
            raise ValueError("sigma must be None, a positive number or 'reference', "
                             f"got {fmt(sigma)}")
        if (Xda.values[mask] < 0).any():
            raise ValueError(
                "sigma='reference' fits a scikit-learn NMF, which needs X >= 0, but X has "
                f"{int((Xda.values[mask] < 0).sum())} negative observed entries; give sigma "
                "as a number or leave it None (a Gamma prior on tau)"
            )
        return reference_sigma(Xda, rank, mask=mask)
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)):
        raise TypeError(f"sigma must be None, a positive number or 'reference', got {fmt(sigma)}")
    check_positive(sigma, name="sigma")
    obs = np.abs(Xda.values[mask])
    scale = float(obs.max()) if obs.size and obs.max() > 0 else 1.0
    low, high = SIGMA_RANGE
    if not (low <= sigma <= high and scale / sigma <= MAX_SCALE_OVER_SIGMA):
        raise ValueError(
            f"sigma={float(sigma):.4g} is outside the range the samplers and fitters compute "
            f"with in float64: need {low:.0e} <= sigma <= {high:.0e} and "
            f"max|X| / sigma <= {MAX_SCALE_OVER_SIGMA:.0e} (here max|X| = {scale:.4g}); "
            "rescale X or choose sigma on the data's scale"
        )
    return float(sigma)


#: accepted fixed noise SD: tau = 1 / sigma^2 and its square stay finite in VB/Gibbs (measured:
#: sigma = 1e-100 made VB's means non-finite and 1e160 overflowed sigma^2; 1e-60 ... 1e150 ran)
SIGMA_RANGE = (1e-50, 1e50)
#: largest max|X| / sigma: tau * x^2 = (x / sigma)^2 stays below 1e200
MAX_SCALE_OVER_SIGMA = 1e100


#: accepted range of the prior rates and ARD hyperparameters: the prior scale 1 / lambda sets
#: the default start and the factors' magnitude; beyond this range their squared products and
#: the Gibbs/VB updates overflow (e.g. ARD alpha0 = 1e-100 starts the factors at 1e100)
RATE_RANGE = (1e-10, 1e10)


def _rate(value, name):
    check_positive(value, name=name)
    if np.ndim(value) != 0:
        raise TypeError(f"{name} must be a scalar rate, got shape {np.shape(value)}")
    low, high = RATE_RANGE
    if not low <= float(value) <= high:
        raise ValueError(f"{name} must lie in [{low:.0e}, {high:.0e}] (rescale the data "
                         f"instead), got {fmt(value)}")
    return float(value)


def exponential_gaussian(
    X,
    rank,
    *,
    mask=None,
    ard=False,
    lambda_="auto",
    lambda_A=None,
    lambda_W=None,
    alpha_tau=1.0,
    beta_tau="auto",
    sigma=None,
    alpha0=1.0,
    beta0="auto",
):
    """Bayesian NMF with exponential priors and a Gaussian likelihood (Schmidt et al. 2009).

    ``X ~ Normal(A @ W, 1/tau)`` on the observed entries, ``A_ik ~ Exp(lambda_A)``,
    ``W_kj ~ Exp(lambda_W)``, ``tau ~ Gamma(alpha_tau, beta_tau)``. With ``ard=True`` factor
    ``k`` has its own rate ``lambda_[k] ~ Gamma(alpha0, beta0)`` shared by ``A[:, k]`` and
    ``W[k, :]`` (Brouwer et al. 2017).

    Parameters
    ----------
    X : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix
        D x N data; NaN marks a missing entry. Coordinates are kept. Sparse input
        (``scipy.sparse``, or long-format ``(row, col, value)`` data through
        :func:`bnmfzoo.long_format`) lists the observed entries only: its **stored entries
        are the observed ones, explicit zeros included**. Whatever form the data come in, the
        methods recognize the observed entries from the model's graph in long format; when
        fewer than an eighth of the entries are observed no dense D x N array is formed by
        the model, :class:`~bnmfzoo.inference.GibbsNMF` or :func:`~bnmfzoo.inference.fit_vb`
        (memory O(observed + (D + N) R)). Negative entries are
        allowed: the likelihood is Gaussian, so noisy measurements of a non-negative signal
        may fall below zero; only the factors are non-negative. (``sigma="reference"`` and
        the multiplicative updates fit a classical NMF and need ``X >= 0``.)
    rank : int
        Number of factors R, ``1 <= R <= min(D, N)``.
    mask : array-like of bool, optional
        True = observed (combined with the NaN pattern).
    ard : bool
        Automatic relevance determination on the factors.
    lambda_ : float or "auto"
        Default rate of both exponential priors; every rate must lie in ``RATE_RANGE`` =
        [1e-10, 1e10]. ``"auto"`` (default): ``sqrt(R / m)`` with ``m`` the mean absolute
        observed entry, so the prior mean of each entry of ``A @ W`` is ``m``
        (:func:`scale_defaults`; Brouwer et al. used 0.1, see :data:`BROUWER2017`).
    lambda_A, lambda_W : float, optional
        Separate rates for ``A`` and ``W`` (default ``lambda_``); unused with ``ard=True``.
    alpha_tau, beta_tau : float
        Shape and rate of the Gamma prior on the noise precision ``tau``. ``beta_tau="auto"``
        (default) is ``alpha_tau`` times the variance of the observed entries (prior mean of
        ``tau``: one over that variance); Brouwer et al. used ``alpha_tau = beta_tau = 1``.
    sigma : None, float or "reference"
        Fixed noise standard deviation instead of a ``tau`` prior; ``"reference"`` uses
        :func:`reference_sigma` (the residual sd of a scikit-learn NMF of rank ``rank``).
    alpha0, beta0 : float
        Shape and rate of the ARD Gamma prior (each in ``RATE_RANGE`` = [1e-10, 1e10]).
        ``beta0="auto"`` (default) is ``alpha0`` divided by the automatic ``lambda``, so the
        prior mean of each ARD rate is that ``lambda`` (Brouwer et al.: ``beta0 = 1``).

    Returns
    -------
    pymc.Model
        With free variables ``A`` (row, factor), ``W`` (factor, col), ``tau`` (unless
        ``sigma`` is given), ``lambda_`` (factor; ARD only) and the observed ``X`` over the
        observed entries (dim ``X_obs``). Nothing else is attached: step methods and fitters
        recognize the model from its graph (:func:`bnmfzoo.models.recognize`), as they do a
        user's own ``pm.Model``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> X[0, 1] = np.nan
    >>> model = exponential_gaussian(X, 2)
    >>> sorted(v.name for v in model.free_RVs)
    ['A', 'W', 'tau']
    """
    Xda, m, entries = check_data(X, kind="real", mask=mask)
    obs_data, obs_mask = (Xda, m) if entries is None else (entries, None)
    rank = check_rank(rank, Xda.shape)
    stats = _scale_stats(Xda, m, entries, rank)
    warn_outliers(Xda, m, entries)
    lambda_ = _auto_rate(lambda_, "lambda_", stats)
    lambda_A = lambda_ if lambda_A is None else _rate(lambda_A, "lambda_A")
    lambda_W = lambda_ if lambda_W is None else _rate(lambda_W, "lambda_W")
    alpha0 = _rate(alpha0, "alpha0")
    ard = bool(ard)
    beta0 = _auto_beta0(beta0, alpha0, stats, ard)
    fixed_sigma = _noise(sigma, alpha_tau, beta_tau, Xda, m, rank)
    if fixed_sigma is None:
        alpha_tau, beta_tau = _tau_prior(alpha_tau, beta_tau, stats)
    coords = {**data_coords(Xda), "factor": np.arange(rank)}
    with pm.Model(coords=coords) as model:
        if ard:
            lam = pm.Gamma("lambda_", alpha=alpha0, beta=beta0, dims="factor")
            A = pm.Exponential("A", lam=lam[None, :], dims=("row", "factor"))
            W = pm.Exponential("W", lam=lam[:, None], dims=("factor", "col"))
        else:
            A = pm.Exponential("A", lam=lambda_A, dims=("row", "factor"))
            W = pm.Exponential("W", lam=lambda_W, dims=("factor", "col"))
        if fixed_sigma is None:
            tau = pm.Gamma("tau", alpha=float(alpha_tau), beta=float(beta_tau))
            gaussian("X", A, W, obs_data, tau=tau, mask=obs_mask)
        else:
            gaussian("X", A, W, obs_data, sigma=fixed_sigma, mask=obs_mask)
    return model


def tri_exponential_gaussian(
    X,
    ranks,
    *,
    mask=None,
    ard=False,
    lambda_F="auto",
    lambda_S="auto",
    lambda_G="auto",
    alpha_tau=1.0,
    beta_tau="auto",
    sigma=None,
    alpha0=1.0,
    beta0="auto",
):
    """Bayesian non-negative matrix tri-factorization ``X ~ F S G^T`` (Brouwer & Lio 2017).

    ``F_ik ~ Exp(lambda_F)``, ``S_kl ~ Exp(lambda_S)``, ``G_jl ~ Exp(lambda_G)``, Gaussian
    likelihood on the observed entries with precision ``tau ~ Gamma(alpha_tau, beta_tau)`` (or a
    fixed ``sigma``). With ``ard=True``, column ``k`` of ``F`` has rate
    ``lambda_F[k] ~ Gamma(alpha0, beta0)`` and column ``l`` of ``G`` rate ``lambda_G[l]``;
    ``S`` keeps its fixed rate.

    Parameters
    ----------
    X : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix
        D x N data; NaN marks a missing entry. Sparse input: stored entries = observed
        (explicit zeros included), as for :func:`exponential_gaussian`. Negative entries are
        allowed (Gaussian
        likelihood; non-negative factors), except with ``sigma="reference"``.
    ranks : tuple of int
        ``(K, L)``: row and column factors, each between 1 and ``min(D, N)``.
    mask : array-like of bool, optional
        True = observed.
    ard : bool
        ARD on the columns of ``F`` and ``G``.
    lambda_F, lambda_S, lambda_G : float or "auto"
        Exponential rates. ``"auto"`` (default): ``(K L / m) ** (1/3)`` with ``m`` the mean
        absolute observed entry, so the prior mean of each entry of ``F S G^T`` is ``m``
        (:func:`scale_defaults`; Brouwer & Lio used 0.1, see ``BROUWER2017_NMTF``).
    alpha_tau, beta_tau : float
        Gamma prior on ``tau``; ``beta_tau="auto"`` (default) is ``alpha_tau`` times the
        variance of the observed entries, as in :func:`exponential_gaussian`.
    sigma : None, float or "reference"
        Fixed noise sd; ``"reference"`` is the residual sd of a scikit-learn NMF of rank
        ``min(K, L)`` (the rank of ``F S G^T``).
    alpha0, beta0 : float
        ARD Gamma prior (each in ``RATE_RANGE`` = [1e-10, 1e10]); ``beta0="auto"`` (default)
        is ``alpha0`` over the automatic rate.

    Returns
    -------
    pymc.Model
        Free variables ``F`` (row, factor_row), ``S`` (factor_row, factor_col), ``G``
        (col, factor_col), ``tau``, and with ARD ``lambda_F`` / ``lambda_G``; recognized from
        its graph as family ``"tri_exponential_gaussian"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> model = tri_exponential_gaussian(X, (2, 3))
    >>> model.named_vars_to_dims["S"]
    ('factor_row', 'factor_col')
    """
    Xda, m, entries = check_data(X, kind="real", mask=mask)
    obs_data, obs_mask = (Xda, m) if entries is None else (entries, None)
    if not isinstance(ranks, (tuple, list)) or len(ranks) != 2:
        raise TypeError(f"ranks must be a pair (K, L), got {fmt(ranks)}")
    K = check_rank(ranks[0], Xda.shape, name="ranks[0]")
    L = check_rank(ranks[1], Xda.shape, name="ranks[1]")
    stats = _scale_stats(Xda, m, entries, (K, L))
    warn_outliers(Xda, m, entries)
    lambda_F = _auto_rate(lambda_F, "lambda_F", stats)
    lambda_S = _auto_rate(lambda_S, "lambda_S", stats)
    lambda_G = _auto_rate(lambda_G, "lambda_G", stats)
    alpha0 = _rate(alpha0, "alpha0")
    ard = bool(ard)
    beta0 = _auto_beta0(beta0, alpha0, stats, ard)
    fixed_sigma = _noise(sigma, alpha_tau, beta_tau, Xda, m, min(K, L))
    if fixed_sigma is None:
        alpha_tau, beta_tau = _tau_prior(alpha_tau, beta_tau, stats)
    coords = {**data_coords(Xda), "factor_row": np.arange(K), "factor_col": np.arange(L)}
    with pm.Model(coords=coords) as model:
        if ard:
            lam_F = pm.Gamma("lambda_F", alpha=alpha0, beta=beta0, dims="factor_row")
            lam_G = pm.Gamma("lambda_G", alpha=alpha0, beta=beta0, dims="factor_col")
            F = pm.Exponential("F", lam=lam_F[None, :], dims=("row", "factor_row"))
            S = pm.Exponential("S", lam=lambda_S, dims=("factor_row", "factor_col"))
            G = pm.Exponential("G", lam=lam_G[None, :], dims=("col", "factor_col"))
        else:
            F = pm.Exponential("F", lam=lambda_F, dims=("row", "factor_row"))
            S = pm.Exponential("S", lam=lambda_S, dims=("factor_row", "factor_col"))
            G = pm.Exponential("G", lam=lambda_G, dims=("col", "factor_col"))
        if fixed_sigma is None:
            tau = pm.Gamma("tau", alpha=float(alpha_tau), beta=float(beta_tau))
            gaussian("X", F @ S, G.T, obs_data, tau=tau, mask=obs_mask)
        else:
            gaussian("X", F @ S, G.T, obs_data, sigma=fixed_sigma, mask=obs_mask)
    return model
