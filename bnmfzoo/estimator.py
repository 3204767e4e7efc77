"""A scikit-learn-style front: :class:`BayesianNMF`.

Mapping to scikit-learn's ``NMF`` (samples x features ``X ~ W H``): our data are ``D x N`` with
``X ~ A W``; the estimator treats rows of ``X`` as samples, so scikit-learn's ``W`` is our ``A``
(``A_``; :meth:`BayesianNMF.transform` solves for it on new data) and ``components_`` is our
``W`` (posterior mean, ``n_components x n_features``). Switching from
``sklearn.decomposition.NMF(n_components=5, random_state=0)`` means changing the class name.
"""

import logging
import numbers
import warnings
from contextlib import contextmanager

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from bnmfzoo._base.validation import check_int, check_matrix, check_rank, fmt

#: models whose likelihood is Gaussian (negative observations are valid data)
GAUSSIAN_MODELS = ("exponential_gaussian", "tri_exponential_gaussian")
#: methods that work on any real data for a Gaussian model (the others fit a classical NMF)
REAL_DATA_METHODS = ("gibbs", "gibbs_nmtf", "vb", "icm", "nuts")
BINARY_MODELS = ("beta_dir", "dir_beta", "dir_dir")


@contextmanager
def _pymc_logs(show):
    """Silence PyMC's INFO log lines ("Sequential sampling ...") unless ``show``."""
    logger = logging.getLogger("pymc")
    old = logger.level
    if not show:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(old)


@contextmanager
def _connect(client):
    """Yield a Dask client for ``client`` (None, an address, or a client), closing one we open."""
    if client is None or not isinstance(client, str):
        yield client
        return
    from distributed import Client

    own = Client(client, timeout="30s")
    try:
        yield own
    finally:
        own.close()


class BayesianNMF(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Bayesian NMF with the scikit-learn estimator interface.

    A drop-in for :class:`sklearn.decomposition.NMF`: ``BayesianNMF(n_components=5,
    random_state=0).fit_transform(X)``. Beyond the point estimate it keeps the whole posterior
    (``posterior_``), its spread (``components_sd_``) and draws (:meth:`sample_components`).
    Missing entries are NaN; a pandas DataFrame (or an ``xarray.DataArray``) keeps its row and
    column labels in ``posterior_`` (dims ``row``, ``col``), a DataArray also its dim names: dims
    ``("cell_line", "drug")`` give a ``posterior_`` with dims ``cell_line`` and ``drug``;
    ``set_output(transform="pandas")`` labels the output of :meth:`transform`.

    Parameters
    ----------
    n_components : int or tuple of int, default 2
        Number of factors (for ``model="tri_exponential_gaussian"`` a pair ``(K, L)``; the
        estimator's components are then the ``L`` column factors).
    model : str, default "exponential_gaussian"
        A model of :mod:`bnmfzoo.models` (``"exponential_gaussian"``, ``"silf"``,
        ``"beta_dir"``, ...). The Gaussian models accept negative observations (noisy
        measurements of a non-negative signal); the others need ``X >= 0`` (Bernoulli models:
        0/1).
    method : str, optional
        ``"gibbs"``, ``"vb"``, ``"icm"``, ``"multiplicative"``, ``"particles"``, ``"nuts"``,
        ...; default: the model's usual method (``"gibbs"`` for ``exponential_gaussian``).
    draws : int, default 200
        Posterior draws kept per chain (MCMC), or draws from the fitted approximation
        (fitters that take ``n_draws``: VB, particles, CVB0, ...).
    tune : int, default 100
        Warm-up sweeps per chain (MCMC methods).
    chains : int, default 2
        Chains (MCMC methods).
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None
        Seed; the same int gives the same fit.
    progressbar : bool, default False
        Show progress bars and PyMC's log lines (``False`` silences both).
    client : str or distributed.Client, optional
        Run each MCMC chain (or the particles) as a task on a Dask cluster: a scheduler address
        such as ``"tcp://10.0.0.5:8786"`` (connected for the fit; safe for
        :func:`sklearn.base.clone`) or a connected client. Same result as a serial fit
        (:func:`bnmfzoo.inference.sample`).
    beta_loss : {"frobenius", "kullback-leibler"}, default "frobenius"
        scikit-learn's argument: ``"kullback-leibler"`` (or ``1``) fits Poisson NMF of counts
        (:func:`bnmfzoo.models.poisson`, Gibbs with latent counts: ``GibbsPoisson``), with
        ``score`` the Poisson log-likelihood per observed entry and sparse input read as in
        scikit-learn (entries not stored are zero counts); see :mod:`bnmfzoo._estimator_counts`.
        A count model named in ``model`` (``"poisson"``, ``"negative_binomial"``) implies it.
    model_kwargs, method_kwargs : dict, optional
        Passed to the model function and to the inference method. The Gaussian models' priors
        default to the data's scale (:func:`bnmfzoo.models.gaussian.scale_defaults`: the same
        relative fit in any units, as scikit-learn's NMF); ``model_kwargs=BROUWER2017`` (from
        :mod:`bnmfzoo.models.gaussian`) gives Brouwer et al.'s fixed priors. MCMC methods take
        ``method_kwargs={"log_likelihood": "float32"}`` or ``{"log_likelihood_thin": 10}``
        for a compact ``log_likelihood`` group on large data (:func:`bnmfzoo.inference.sample`).
        Other examples: ``method_kwargs={"max_iter": 500}`` for VB,
        ``{"compute_convergence_checks": True}`` for NUTS, whose convergence checks are
        skipped by default because on thousands of parameters they take longer than the
        sampling.

    Attributes
    ----------
    A_ : numpy.ndarray, shape (n_samples, n_components)
        Posterior mean of ``A`` for the training data (scikit-learn's ``W``) in the heaviest
        mode, factors aligned (:func:`bnmfzoo.diagnostics.point_estimate`): never an
        average across chains, particles or modes with unmatched factors.
    components_ : numpy.ndarray, shape (n_components, n_features)
        Posterior mean of ``W`` in the same mode (``A_ @ components_`` reconstructs the data
        about as well as the per-draw mean of ``A @ W``).
    components_sd_ : numpy.ndarray, shape (n_components, n_features)
        Posterior standard deviation of ``W`` within that mode, factors aligned.
    posterior_ : xarray.DataTree
        The full result (posterior draws, diagnostics, ...), labelled with the data's
        coordinates and dim names.
    reconstruction_err_ : float
        Frobenius norm of the residual on observed entries, with ``A @ W`` averaged per draw.
    n_iter_ : int
        Iterations run: sweeps per chain (``tune + draws``) for MCMC, iterations for
        optimizers and VB, the largest solver iteration count for particles.
    n_components_ : int
    n_features_in_ : int
    feature_names_in_ : numpy.ndarray of str
        Column names, when ``X`` was a DataFrame with string column names.

    Notes
    -----
    ``fit`` also takes ``scipy.sparse`` and :func:`bnmfzoo.long_format` input, whose stored
    entries are the observed ones (entries not stored are missing, not zero as in
    scikit-learn's own estimators); see :meth:`fit`.

    Posterior means over several chains or particles average over whichever factorizations
    (modes) they visited; see :func:`bnmfzoo.diagnostics.modes` and ``posterior_`` for the
    separate solutions.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo import BayesianNMF
    >>> X = np.random.default_rng(0).random((20, 8))
    >>> est = BayesianNMF(n_components=2, method="vb", random_state=0).fit(X)
    >>> est.components_.shape, est.components_sd_.shape
    ((2, 8), (2, 8))
    >>> est.sample_components(5, random_state=0).shape
    (5, 2, 8)
    """

    def __init__(self, n_components=2, *, model="exponential_gaussian", method=None, draws=200,
                 tune=100, chains=2, random_state=None, progressbar=False, client=None,
                 beta_loss="frobenius", model_kwargs=None, method_kwargs=None):
        self.n_components = n_components
        self.beta_loss = beta_loss
        self.model = model
        self.method = method
        self.draws = draws
        self.tune = tune
        self.chains = chains
        self.random_state = random_state
        self.progressbar = progressbar
        self.client = client
        self.model_kwargs = model_kwargs
        self.method_kwargs = method_kwargs

    # -- input -------------------------------------------------------------------------------
    def _model_name(self):
        """The model fitted: ``model``, or ``"poisson"`` for ``beta_loss="kullback-leibler"``."""
        from bnmfzoo._estimator_counts import model_name

        return model_name(self.model, self.beta_loss)

    def _counts(self):
        from bnmfzoo._estimator_counts import COUNT_MODELS

        return self._model_name() in COUNT_MODELS

    def _method(self):
        from bnmfzoo._registry import DEFAULT_METHOD, MODELS

        model = self._model_name()
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose one of {sorted(MODELS)}")
        return self.method or DEFAULT_METHOD[model]

    def _data_kind(self):
        if self.model in BINARY_MODELS:
            return "binary"
        if self.model in GAUSSIAN_MODELS and self._method() in REAL_DATA_METHODS:
            return "real"
        return "nonnegative"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        # scipy.sparse input is accepted, but with unstored entries *missing* (not zero, as
        # scikit-learn's estimators read them), so the tag stays False; data with a row or
        # column without stored entries is refused with an error saying so
        tags.input_tags.sparse = False
        try:
            tags.input_tags.positive_only = self._data_kind() != "real"
        except ValueError:  # unknown model: fit will say so
            tags.input_tags.positive_only = True
        tags.requires_fit = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def _validate_sparse(self, X, reset):
        """Sparse input: the validated :class:`~bnmfzoo._base.entries.LongMatrix` (never dense)."""
        from bnmfzoo._base.validation import check_entries

        if not reset and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        e = check_entries(X, kind=self._data_kind())
        D, N = e.shape
        if reset:
            if D < 2:
                raise ValueError(f"Found array with {D} sample(s) (shape={e.shape}) while a "
                                 "minimum of 2 is required by BayesianNMF.")
            self.n_features_in_ = N
            names = np.asarray(e.col_labels)
            if names.dtype.kind in "UO" and all(isinstance(c, str) for c in names):
                self.feature_names_in_ = names.astype(object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        return e

    def _validate(self, X, reset):
        labels = _labels(X)
        X = validate_data(self, X, reset=reset, ensure_all_finite="allow-nan",
                          dtype=np.float64, ensure_min_samples=2 if reset else 1,
                          ensure_min_features=1)
        if labels is not None:
            import xarray as xr

            X_in = xr.DataArray(X, dims=("row", "col"),
                                coords={"row": labels[0], "col": labels[1]})
        else:
            X_in = X
        da, mask = check_matrix(X_in, kind=self._data_kind())
        return X, da, mask

    def _ranks(self, shape):
        n = self.n_components
        if self.model == "tri_exponential_gaussian" and isinstance(n, tuple):
            for k, name in zip(n, ("n_components[0]", "n_components[1]"), strict=True):
                self._check_rank(k, shape, name)
            return n
        self._check_rank(n, shape, "n_components")
        return n

    @staticmethod
    def _check_rank(k, shape, name):
        if isinstance(k, numbers.Integral) and not isinstance(k, bool) and k > min(shape):
            raise ValueError(
                f"{name}={k} is larger than min(n_samples, n_features) for data with "
                f"n_samples = {shape[0]}, n_features = {shape[1]}"
            )
        check_rank(k, shape, name=name)

    def _seed(self):
        rs = self.random_state
        if rs is None or isinstance(rs, np.random.Generator):
            return rs
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            return int(rs)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(np.iinfo(np.int32).max))
        raise TypeError(f"random_state must be None, an int, a numpy Generator or RandomState, "
                        f"got {fmt(rs)}")

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the model to ``X`` (NaN = missing) and return ``self``.

        Parameters
        ----------
        X : array-like, pandas.DataFrame, xarray.DataArray, scipy.sparse matrix or LongMatrix
            Data, shape (n_samples, n_features); NaN marks a missing entry. Labels of a
            DataFrame / DataArray / LongMatrix are kept. In sparse input (``scipy.sparse`` or
            :func:`bnmfzoo.long_format`) the **stored entries are the observed ones, explicit
            zeros included**; the sparse-aware methods (``gibbs``, ``gibbs_nmtf``, ``vb``,
            ``icm``, ``multiplicative``, ``collapsed_gibbs``, ``collapsed_gibbs_dirdir``,
            ``cvb0``) then never form a D x N array, and ``reconstruction_err_`` and the
            results' observed data are on the observed entries. Any other method gets the
            dense matrix with a warning stating its size, up to 50 million cells (refused
            above: :func:`bnmfzoo._registry.sparse_input_for`). An ``anndata.AnnData`` (or
            :class:`~bnmfzoo.datasets.SparseCounts`) is read as its sparse ``X``, its
            ``obs_names`` / ``var_names`` labelling the results.
        y : None
            Ignored.

        Returns
        -------
        BayesianNMF

        Raises
        ------
        KeyboardInterrupt
            On Ctrl-C or SIGTERM while sampling (:func:`bnmfzoo.inference.sample`): the fit
            stops after the current draw, the estimator is left unfitted, and no truncated
            chains are kept.

        Warns
        -----
        UserWarning
            MCMC methods: when the heaviest mode's aligned chains have not converged (an entry
            of ``A`` or ``W`` with R-hat above 1.01 or bulk ESS below 400; Vehtari et al.
            2021), naming the slowest entries, the budget asked and what to run next
            (:func:`unconverged_message`).
        """
        from bnmfzoo._base.entries import is_sparse_input
        from bnmfzoo._estimator_counts import relabel, single_cell_input
        from bnmfzoo._registry import build_model, method_kwargs, run_method, sparse_input_for

        method = self._method()
        cells = single_cell_input(X)  # AnnData / SparseCounts: sparse X, labels kept
        X = X if cells is None else cells[0]
        own_dims = _dim_names(X)
        entries = None
        counts = self._counts()
        if counts:  # unstored sparse entries are zero counts: bnmfzoo._estimator_counts
            from bnmfzoo._estimator_counts import start_values, validate_counts

            da, X, mask = validate_counts(self, X, _labels(X), reset=True)
            ranks = self._ranks(da.shape)
        elif is_sparse_input(X):  # kept sparse for the sparse-aware methods
            entries = self._validate_sparse(X, reset=True)
            ranks = self._ranks(entries.shape)
            da = sparse_input_for(method, entries)
        else:
            X, da, mask = self._validate(X, reset=True)
            ranks = self._ranks(X.shape)
        for name in ("draws", "tune", "chains"):
            check_int(getattr(self, name), name=name, minimum=0 if name == "tune" else 1)
        pm_model = build_model(self._model_name(), da, ranks, **(self.model_kwargs or {}))
        kwargs = method_kwargs(method, draws=self.draws, tune=self.tune, chains=self.chains,
                               user=self.method_kwargs)
        if counts:
            kwargs = start_values(da, ranks, method, kwargs, self._seed())
        try:  # Ctrl-C / SIGTERM: KeyboardInterrupt, and no fitted state left behind
            with _pymc_logs(self.progressbar), _connect(self.client) as client:
                if client is not None:
                    kwargs["client"] = client
                dt = run_method(method, pm_model, random_seed=self._seed(),
                                progressbar=self.progressbar, **kwargs)
        except KeyboardInterrupt:
            for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("_")]:
                delattr(self, name)
            raise
        self.posterior_ = dt = _rename_dims(dt, own_dims)
        if cells is not None:
            self.posterior_ = dt = relabel(dt, *cells[1:])
        A, W, info = self._point_estimate(dt)
        A_draws, W_draws = self._factor_draws(dt)
        self.A_ = A
        self.components_ = W
        mode_W, mode_w = info["W_draws"], info["draw_weights"]
        self.components_sd_ = np.sqrt(np.tensordot(mode_w, (mode_W - W) ** 2, axes=1))
        self._mode_draws = (mode_W, mode_w)
        self.n_components_ = W.shape[0]
        self.n_iter_ = _n_iter(dt, method, self.tune, self.draws)
        msg = unconverged_message(dt, method, info)
        if msg:
            warnings.warn(msg, UserWarning, stacklevel=2)
        if counts:
            from bnmfzoo._estimator_counts import kl_error

            self.reconstruction_err_ = kl_error(da, A, W)
            return self
        if entries is None:
            mean_AW = np.einsum("sik,skj->ij", A_draws, W_draws) / A_draws.shape[0]
            resid = np.where(mask, np.nan_to_num(X) - mean_AW, 0.0)
        else:  # on the observed entries only
            r, c = entries.rows, entries.cols
            mean_AW = sum(np.einsum("ek,ke->e", Ad[r], Wd[:, c])
                          for Ad, Wd in zip(A_draws, W_draws)) / A_draws.shape[0]
            resid = entries.values - mean_AW
        self.reconstruction_err_ = float(np.sqrt(np.sum(resid**2)))
        return self

    def _factor_draws(self, result):
        """Posterior draws ``(A, W)`` stacked over chains and draws: ``(S, D, R)``, ``(S, R, N)``.

        The posterior group of a particle result already holds draws resampled by weight, so
        every draw counts once. A tri-factorization ``F S G^T`` gives ``A = F S``, ``W = G^T``.
        """
        from bnmfzoo.diagnostics._modes._dims import factor_dims

        post = result["posterior"]
        if "A" in post:
            fd = factor_dims(post)
            A = post["A"].stack(sample=("chain", "draw")).transpose("sample", *fd.basis).values
            W = post["W"].stack(sample=("chain", "draw")).transpose("sample", *fd.weights).values
        else:
            row = next(d for d in post["F"].dims[2:] if d != "factor_row")
            col = next(d for d in post["G"].dims[2:] if d != "factor_col")
            F = post["F"].stack(sample=("chain", "draw")).transpose("sample", row, ...).values
            S = post["S"].stack(sample=("chain", "draw")).transpose("sample", ...).values
            G = post["G"].stack(sample=("chain", "draw")).transpose("sample", col, ...).values
            A = F @ S
            W = np.swapaxes(G, 1, 2)
        return A, W

    def _point_estimate(self, result):
        """``(A, W, info)`` of the heaviest mode, factors aligned before averaging.

        :func:`bnmfzoo.diagnostics.point_estimate`: never an average across chains,
        particles or modes with unmatched factors. ``info`` holds that mode's aligned draws
        (``A_draws``, ``W_draws``, ``draw_weights``), which give ``components_sd_`` and
        :meth:`sample_components`. A tri-factorization is summarized through ``A = F S``,
        ``W = G^T``.
        """
        from bnmfzoo._base.results import build_datatree
        from bnmfzoo.diagnostics._modes.point_estimate import point_estimate

        if "A" not in result["posterior"]:
            A, W = self._factor_draws(result)
            result = build_datatree({"A": A[None], "W": W[None]})
        return point_estimate(result)

    # -- after fitting -----------------------------------------------------------------------
    def fit_transform(self, X, y=None):
        """Fit, then return :meth:`transform` of ``X`` (as scikit-learn requires).

        The posterior mean of ``A`` itself is ``A_``; the two agree closely once the fit has
        converged.

        Parameters
        ----------
        X : array-like, pandas.DataFrame or xarray.DataArray, shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        numpy.ndarray, shape (n_samples, n_components)
        """
        return self.fit(X).transform(X)

    def transform(self, X):
        """Return non-negative ``A`` with ``X ~ A @ components_`` (masked NNLS per row).

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or LongMatrix, shape (n_samples, n_features)
            NaN = missing; a row's missing entries are ignored (in sparse input, the entries
            not stored).

        Returns
        -------
        numpy.ndarray, shape (n_samples, n_components)
            (a DataFrame indexed like ``X`` under ``set_output(transform="pandas")``).
        """
        check_is_fitted(self, "components_")
        from bnmfzoo._base.entries import is_sparse_input

        if self._counts():
            from bnmfzoo._estimator_counts import loadings, validate_counts

            return loadings(validate_counts(self, X, _labels(X), reset=False)[0],
                            self.components_)
        if is_sparse_input(X):
            return self._sparse_loadings(self._validate_sparse(X, reset=False))
        X, _, mask = self._validate(X, reset=False)
        return self._loadings(X, mask)

    def _loadings(self, X, mask):
        """Masked non-negative least squares of each row of ``X`` on ``components_``."""
        from scipy.optimize import nnls

        H = self.components_
        out = np.zeros((X.shape[0], H.shape[0]))
        for i in range(X.shape[0]):
            obs = mask[i]
            out[i] = nnls(H[:, obs].T, X[i, obs])[0]
        return out

    def _sparse_loadings(self, e):
        """:meth:`_loadings` from the observed entries of each row (rows are sorted)."""
        from scipy.optimize import nnls

        H = self.components_
        ptr = np.searchsorted(e.rows, np.arange(e.shape[0] + 1))
        out = np.zeros((e.shape[0], H.shape[0]))
        for i in range(e.shape[0]):
            sl = slice(ptr[i], ptr[i + 1])
            out[i] = nnls(H[:, e.cols[sl]].T, e.values[sl])[0]
        return out

    def inverse_transform(self, X):
        """Return ``X @ components_`` (data space from factor loadings).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_components)

        Returns
        -------
        numpy.ndarray, shape (n_samples, n_features)
        """
        check_is_fitted(self, "components_")
        return np.asarray(X) @ self.components_

    def score(self, X, y=None):
        """Negative mean squared reconstruction error on the observed entries of ``X``.

        For a count model (``beta_loss="kullback-leibler"``): the Poisson log-likelihood per
        observed entry under ``transform(X) @ components_`` (zeros of sparse input included).

        ``-mean((X - transform(X) @ components_)**2)`` over non-NaN entries: higher is better,
        as scikit-learn's model selection expects; 0 is a perfect reconstruction. On held-out
        rows it measures how well the learnt components span new data.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        check_is_fitted(self, "components_")
        from bnmfzoo._base.entries import is_sparse_input

        if self._counts():
            from bnmfzoo._estimator_counts import loadings, poisson_loglik, validate_counts

            data = validate_counts(self, X, _labels(X), reset=False)[0]
            ll, n = poisson_loglik(data, loadings(data, self.components_), self.components_)
            return ll / n
        if is_sparse_input(X):
            e = self._validate_sparse(X, reset=False)
            A = self._sparse_loadings(e)
            resid = e.values - np.einsum("ek,ke->e", A[e.rows], self.components_[:, e.cols])
            return -float(np.mean(resid**2))
        X, _, mask = self._validate(X, reset=False)
        resid = (X - self._loadings(X, mask) @ self.components_)[mask]
        return -float(np.mean(resid**2))

    def sample_components(self, n_samples=1, *, random_state=None):
        """Draw ``components_`` matrices from the posterior.

        Parameters
        ----------
        n_samples : int
            Number of draws, taken by weight from the stored posterior draws of the heaviest
            mode, factors aligned to ``components_`` (without replacement when there are
            enough, with replacement otherwise).
        random_state : int or numpy.random.Generator, optional

        Returns
        -------
        numpy.ndarray, shape (n_samples, n_components, n_features)
        """
        check_is_fitted(self, "components_")
        if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or (
                n_samples < 1):
            raise ValueError(f"n_samples must be a positive integer, got {fmt(n_samples)}")
        W, weights = self._mode_draws
        rng = np.random.default_rng(random_state)
        idx = rng.choice(W.shape[0], size=n_samples,
                         replace=n_samples > np.count_nonzero(weights), p=weights)
        return W[idx]

    @property
    def _n_features_out(self):
        """Number of output features (used by ``get_feature_names_out``)."""
        return self.components_.shape[0]


#: dims of our results that a user's dim name must not take
_RESERVED = {"chain", "draw", "factor", "factor_row", "factor_col", "mode", "particle",
             "component", "iteration", "sample"}


def _dim_names(X):
    """``{"row": <name>, "col": <name>}`` of a DataArray with its own dim names, else None.

    None also for our names (``row``, ``col``) and names that clash with our results' dims. A
    DataFrame keeps its labels under ``row`` / ``col`` (an index name is often incidental).
    """
    if hasattr(X, "dims") and hasattr(X, "coords") and getattr(X, "ndim", 0) == 2:
        names = tuple(X.dims)
    else:
        return None
    if not all(isinstance(n, str) and n for n in names) or names[0] == names[1] \
            or names == ("row", "col") or _RESERVED & set(names) \
            or {"row", "col"} & set(names):
        return None
    return {"row": names[0], "col": names[1]}


def _rename_dims(dt, names):
    """``dt`` with our ``row`` / ``col`` dims and coordinates renamed to the data's own."""
    if not names:
        return dt
    import xarray as xr

    nodes = {}
    for node in dt.subtree:
        ds = node.to_dataset(inherit=False)
        nodes[node.path] = ds.rename({k: v for k, v in names.items()
                                      if k in ds.dims or k in ds.variables})
    out = xr.DataTree.from_dict(nodes)
    out.attrs.update(dt.attrs)
    return out


def _labels(X):
    """Row and column labels of a DataFrame / DataArray, else None."""
    if hasattr(X, "index") and hasattr(X, "columns"):
        return np.asarray(X.index), np.asarray(X.columns)
    if hasattr(X, "dims") and hasattr(X, "coords") and getattr(X, "ndim", 0) == 2:
        dims = X.dims
        return tuple(np.asarray(X[d].values) if d in X.coords else np.arange(X.shape[i])
                     for i, d in enumerate(dims))
    return None


def unconverged_message(dt, method, info):
    """The warning of MCMC chains not converged on the factors the estimator reports, or None.

    The check runs on the heaviest mode's draws as :meth:`BayesianNMF._point_estimate`
    already aligned and balanced them (the draws behind ``components_``), restricted to the
    chains that stay in that mode: R-hat above 1.01 or bulk ESS below 400 on an entry of ``A``
    or ``W`` (:func:`align`'s thresholds; R-hat only with two or more chains). The warning is
    :func:`align`'s: the slowest entries with R-hat and bulk ESS, the budget asked and what to
    run next. None for methods that are not MCMC. ``info`` is
    :func:`~bnmfzoo.diagnostics._modes.point_estimate.point_estimate`'s of ``dt``.
    """
    import xarray as xr

    from bnmfzoo._registry import METHODS
    from bnmfzoo.diagnostics._modes.alignment import TARGET_ESS, convergence_message

    if METHODS[method][1] not in ("step", "nuts") or "posterior" not in dt.children:
        return None
    post = dt["posterior"]
    C, S = int(post.sizes.get("chain", 1)), int(post.sizes.get("draw", 1))
    label = np.asarray(info["modes"]["member_mode"].values).ravel()
    if label.size != C * S:
        return None
    in_mode = (label == info["mode"]).reshape(C, S)
    keep = in_mode.all(1)  # chains wholly in the heaviest mode (the others: another mode)
    if not keep.any():
        return None
    rows = np.flatnonzero(in_mode.ravel())  # the mode's members, chain-major as A_draws
    pos = {int(k): i for i, k in enumerate(rows)}
    take = [pos[c * S + d] for c in np.flatnonzero(keep) for d in range(S)]
    A = info["A_draws"][take].reshape(int(keep.sum()), S, *info["A_draws"].shape[1:])
    W = info["W_draws"][take].reshape(int(keep.sum()), S, *info["W_draws"].shape[1:])
    aligned = xr.Dataset({"A": (("chain", "draw", "row", "factor"), A),
                          "W": (("chain", "draw", "factor", "col"), W)},
                         attrs={"chains_asked": C})
    return convergence_message(aligned, ("factor",), rhat_threshold=1.01, min_ess=TARGET_ESS)


def _n_iter(dt, method, tune, draws):
    """Iterations the method ran (see ``BayesianNMF.n_iter_``)."""
    from bnmfzoo._registry import METHODS

    if METHODS[method][1] in ("step", "nuts"):
        return int(tune + draws)
    if "n_iter" in dt.attrs:
        return int(np.max(dt.attrs["n_iter"]))
    if "particles" in dt.children and "n_iter" in dt["particles"]:
        return int(dt["particles"]["n_iter"].max())
    sizes = [node.sizes["iteration"] for node in dt.subtree if "iteration" in node.sizes]
    if sizes:
        return int(max(sizes))
    return int(dt["posterior"].sizes.get("draw", 1))
