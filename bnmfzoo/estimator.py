"""A scikit-learn-style front: :class:`BayesianNMF`.

Mapping to scikit-learn's ``NMF`` (samples x features ``X ~ W H``): our data are ``D x N`` with
``X ~ A W``; the estimator treats rows of ``X`` as samples, so scikit-learn's ``W`` is our ``A``
(``A_``; :meth:`BayesianNMF.transform` solves for it on new data) and ``components_`` is our
``W`` (posterior mean, ``rank x n_features``).
"""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from bnmfzoo._validation import check_matrix, check_rank


class BayesianNMF(TransformerMixin, BaseEstimator):
    """Bayesian NMF with the scikit-learn estimator interface.

    Parameters
    ----------
    rank : int
        Number of factors (scikit-learn's ``n_components``).
    model : str
        A model of :mod:`bnmfzoo.models` (``"exponential_gaussian"``, ``"silf"``, ...).
    method : str, optional
        ``"vb"``, ``"gibbs"``, ``"icm"``, ``"multiplicative"``, ``"particles"``, ``"nuts"``, ...;
        default: the model's usual method.
    draws, tune, chains : int
        For MCMC methods.
    random_seed : int, optional
    progressbar : bool
    model_kwargs, method_kwargs : dict, optional
        Passed to the model function and to the inference method.

    Attributes
    ----------
    A_ : numpy.ndarray, shape (n_samples, rank)
        Posterior mean of ``A`` for the training data (scikit-learn's ``W``) in the heaviest
        mode, factors aligned (:func:`bnmfzoo.diagnostics.modes.point_estimate`): never an
        average across chains, particles or modes with unmatched factors.
    posterior_ : xarray.DataTree
        The full result (posterior draws, diagnostics, ...).
    components_ : numpy.ndarray, shape (rank, n_features)
        Posterior mean of ``W`` in the same mode (``A_ @ components_`` reconstructs the data
        about as well as the per-draw mean of ``A @ W``).
    reconstruction_err_ : float
        Frobenius norm of the residual on observed entries, with ``A @ W`` averaged per draw.
    n_components_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo import BayesianNMF
    >>> X = np.random.default_rng(0).random((20, 8))
    >>> est = BayesianNMF(rank=2, method="vb", random_seed=0, progressbar=False).fit(X)
    >>> est.components_.shape
    (2, 8)
    """

    def __init__(self, rank=2, *, model="exponential_gaussian", method=None, draws=500, tune=200,
                 chains=2, random_seed=None, progressbar=False, model_kwargs=None,
                 method_kwargs=None):
        self.rank = rank
        self.model = model
        self.method = method
        self.draws = draws
        self.tune = tune
        self.chains = chains
        self.random_seed = random_seed
        self.progressbar = progressbar
        self.model_kwargs = model_kwargs
        self.method_kwargs = method_kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.positive_only = True
        tags.requires_fit = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def _validate(self, X, reset):
        X = validate_data(self, X, reset=reset, ensure_all_finite="allow-nan",
                          dtype=np.float64, ensure_min_samples=2 if reset else 1,
                          ensure_min_features=1)
        kind = "binary" if self.model in ("beta_dir", "dir_beta", "dir_dir") else "nonnegative"
        da, mask = check_matrix(X, kind=kind)
        return X, da, mask

    def fit_transform(self, X, y=None):
        """Fit, then return :meth:`transform` of ``X`` (as scikit-learn requires).

        The posterior mean of ``A`` itself is ``A_``; the two agree closely once the fit has
        converged.
        """
        return self.fit(X).transform(X)

    def fit(self, X, y=None):
        """Fit the model to ``X`` (NaN = missing) and return ``self``."""
        from bnmfzoo._registry import DEFAULT_METHOD, build_model, run_method

        X, da, mask = self._validate(X, reset=True)
        if isinstance(self.rank, int) and self.rank > min(X.shape):
            raise ValueError(
                f"rank={self.rank} is larger than min(n_samples, n_features) for data with "
                f"n_samples = {X.shape[0]}, n_features = {X.shape[1]}"
            )
        check_rank(self.rank, X.shape)
        pm_model = build_model(self.model, da, self.rank, **(self.model_kwargs or {}))
        method = self.method or DEFAULT_METHOD[self.model]
        dt = run_method(method, pm_model, draws=self.draws, tune=self.tune, chains=self.chains,
                        random_seed=self.random_seed, progressbar=self.progressbar,
                        **(self.method_kwargs or {}))
        post = dt["posterior"]
        A = post["A"].transpose("chain", "draw", "row", "factor").values
        W = post["W"].transpose("chain", "draw", "factor", "col").values
        mean_AW = np.einsum("cdik,cdkj->ij", A, W) / (A.shape[0] * A.shape[1])
        self.posterior_ = dt
        resid = np.where(mask, np.nan_to_num(X) - mean_AW, 0.0)
        self.reconstruction_err_ = float(np.sqrt(np.sum(resid**2)))
        self.A_, self.components_ = self._point_estimate(dt)
        self.n_components_ = self.components_.shape[0]
        return self

    def _point_estimate(self, result):
        """``(A, W)`` of the heaviest mode, aligned (never averaged across chains or modes)."""
        from bnmfzoo.diagnostics.modes import point_estimate

        A, W, _ = point_estimate(result)
        return A, W

    def transform(self, X):
        """Return non-negative ``A`` with ``X ~ A @ components_`` (masked NNLS per row)."""
        from scipy.optimize import nnls

        check_is_fitted(self, "components_")
        X, _, mask = self._validate(X, reset=False)
        H = self.components_
        out = np.zeros((X.shape[0], H.shape[0]))
        for i in range(X.shape[0]):
            obs = mask[i]
            out[i] = nnls(H[:, obs].T, X[i, obs])[0]
        return out

    def inverse_transform(self, A):
        """Return ``A @ components_``."""
        check_is_fitted(self, "components_")
        return np.asarray(A) @ self.components_
