"""Names of models and inference methods, shared by the command line and :class:`BayesianNMF`.

A *runner* takes a ``pm.Model`` and returns a DataTree, whatever the method (PyMC step methods
go through ``pm.sample``).
"""

from importlib import import_module

from bnmfzoo._base.interrupts import own_code_interrupts

MODELS = {
    "exponential_gaussian": "bnmfzoo.models:exponential_gaussian",
    "tri_exponential_gaussian": "bnmfzoo.models:tri_exponential_gaussian",
    "silf": "bnmfzoo.models:silf",
    "uniform_noise": "bnmfzoo.models:uniform_noise",
    "beta_dir": "bnmfzoo.models:beta_dir",
    "dir_beta": "bnmfzoo.models:dir_beta",
    "dir_dir": "bnmfzoo.models:dir_dir",
    "poisson": "bnmfzoo.models:poisson",
    "negative_binomial": "bnmfzoo.models:negative_binomial",
}

#: method name -> (object path, kind) ; kind "step" goes through pm.sample, "fit" is a fitter
METHODS = {
    "gibbs": ("bnmfzoo.inference:GibbsNMF", "step"),
    "gibbs_nmtf": ("bnmfzoo.inference:GibbsNMTF", "step"),
    "collapsed_gibbs": ("bnmfzoo.inference:CollapsedGibbsBetaDir", "step"),
    "collapsed_gibbs_dirdir": ("bnmfzoo.inference:CollapsedGibbsDirDir", "step"),
    "nuts": (None, "nuts"),
    "advi": ("bnmfzoo.inference:fit_advi", "fit"),
    "vb": ("bnmfzoo.inference:fit_vb", "fit"),
    "icm": ("bnmfzoo.inference:fit_icm", "fit"),
    "multiplicative": ("bnmfzoo.inference:fit_multiplicative", "fit"),
    "particles": ("bnmfzoo.inference:fit_particles", "fit"),
    "svgd": ("bnmfzoo.inference:fit_svgd", "fit"),
    "dsgd": ("bnmfzoo.inference:fit_dsgd", "fit"),
    "cvb0": ("bnmfzoo.inference:fit_cvb0", "fit"),
    "rrt": ("bnmfzoo.inference:fit_rrt", "fit"),
    "gibbs_poisson": ("bnmfzoo.inference:GibbsPoisson", "step"),
    "vb_poisson": ("bnmfzoo.inference:fit_vb_poisson", "fit"),
}

#: method used when the user names only a model
DEFAULT_METHOD = {
    "exponential_gaussian": "gibbs",
    "tri_exponential_gaussian": "gibbs_nmtf",
    "silf": "particles",
    "uniform_noise": "rrt",
    "beta_dir": "collapsed_gibbs",
    "dir_beta": "collapsed_gibbs",
    "dir_dir": "collapsed_gibbs_dirdir",
    "poisson": "gibbs_poisson",
    "negative_binomial": "gibbs_poisson",
}

#: methods that apply to each model (the first is the default)
MODEL_METHODS = {
    "exponential_gaussian": ("gibbs", "vb", "icm", "multiplicative", "nuts", "advi",
                             "particles", "svgd", "dsgd", "rrt"),
    "tri_exponential_gaussian": ("gibbs_nmtf", "vb", "icm", "nuts", "advi"),
    "silf": ("particles", "svgd", "dsgd", "nuts", "advi"),
    "uniform_noise": ("rrt",),
    "beta_dir": ("collapsed_gibbs", "cvb0", "nuts"),
    "dir_beta": ("collapsed_gibbs", "cvb0", "nuts"),
    "dir_dir": ("collapsed_gibbs_dirdir", "nuts"),
    "poisson": ("gibbs_poisson", "vb_poisson", "nuts"),
    "negative_binomial": ("gibbs_poisson", "nuts"),
}

#: methods that run on the observed entries of sparse input (``scipy.sparse``, ``LongMatrix``)
#: with no D x N array: memory O(observed + (D + N) R)
SPARSE_METHODS = ("gibbs", "gibbs_nmtf", "vb", "icm", "multiplicative", "collapsed_gibbs",
                  "collapsed_gibbs_dirdir", "cvb0", "gibbs_poisson", "vb_poisson")
#: sparse input to any other method is made dense (with a warning) up to this many cells
#: (400 MB as float64), and refused above
MAX_DENSIFY_CELLS = 50_000_000

#: models whose rank may be omitted (they default to the truncated nonparametric prior)
BINARY_MODELS = ("beta_dir", "dir_beta", "dir_dir")


def check_method(model, method=None):
    """Return ``method`` (or the model's default), refusing one that does not fit ``model``."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {sorted(MODELS)}")
    if method is None:
        return DEFAULT_METHOD[model]
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    if method not in MODEL_METHODS[model]:
        raise ValueError(f"method {method!r} does not apply to model {model!r}; choose one of "
                         f"{list(MODEL_METHODS[model])}")
    return method


def sparse_input_for(method, X):
    """Sparse ``X`` as ``method`` can take it: as is, or dense with a warning, or an error.

    Methods in :data:`SPARSE_METHODS` get the sparse input unchanged. For any other method
    (particles, SVGD, DSGD, RRT, NUTS, ADVI: they read the D x N matrix) the data are made
    dense, NaN where not stored, with a ``UserWarning`` stating the dense size, when the matrix
    has at most :data:`MAX_DENSIFY_CELLS` cells; above that a ``ValueError`` names the
    sparse-aware methods. Dense ``X`` is returned unchanged.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> S = sp.csr_array([[1.0, 0.0], [0.0, 2.0]])
    >>> sparse_input_for("vb", S) is S
    True
    """
    from bnmfzoo._base.entries import as_long, is_sparse_input

    if not is_sparse_input(X) or method in SPARSE_METHODS:
        return X
    e = as_long(X)
    D, N = e.shape
    mib = D * N * 8 / 2**20
    if D * N > MAX_DENSIFY_CELLS:
        raise ValueError(
            f"method {method!r} needs the dense D x N matrix, and this sparse input is {D} x {N} "
            f"({mib:,.0f} MiB as float64, more than the {MAX_DENSIFY_CELLS:,} cells allowed); "
            f"the methods that work from the observed entries are {', '.join(SPARSE_METHODS)}")
    import warnings

    warnings.warn(
        f"method {method!r} is not sparse-aware: the {D} x {N} sparse input ({e.n_observed} "
        f"observed entries) is made dense ({mib:,.1f} MiB as float64, NaN where not stored); "
        f"sparse-aware methods: {', '.join(SPARSE_METHODS)}", UserWarning, stacklevel=3)
    return e.to_dataarray()


def model_options(name):
    """Keyword options (name -> default) of the model function called ``name``."""
    import inspect

    sig = inspect.signature(resolve(MODELS[name]))
    return {p.name: p.default for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "mask"}


def resolve(path):
    """Import ``"module:name"``."""
    module, name = path.split(":")
    return getattr(import_module(module), name)


def build_model(name, X, rank, **kwargs):
    """Build the model called ``name`` on data ``X`` with ``rank``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    options = model_options(name)
    unknown = sorted(set(kwargs) - set(options))
    if unknown:
        raise ValueError(f"model {name!r} has no option {', '.join(map(repr, unknown))}; its "
                         f"options are {sorted(options)}")
    if rank is None and name not in BINARY_MODELS:
        raise ValueError(f"model {name!r} needs a rank (--rank)")
    if name == "tri_exponential_gaussian":
        ranks = rank if isinstance(rank, tuple) else (rank, rank)
        return resolve(MODELS[name])(X, ranks=ranks, **kwargs)
    return resolve(MODELS[name])(X, rank, **kwargs)


def method_kwargs(method, *, draws, tune, chains, user=None):
    """Keyword arguments of :func:`run_method` for ``draws`` / ``tune`` / ``chains``.

    MCMC methods take them as they are (NUTS also skips PyMC's convergence checks, which on
    thousands of parameters take longer than the sampling); a fitter gets ``n_draws=draws``
    (or ``draws``/``tune`` for ``fit_nuts``) when its signature has that parameter. ``user``
    (the estimator's ``method_kwargs``) overrides all of these.
    """
    import inspect

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    path, kind = METHODS[method]
    if kind in ("step", "nuts"):
        out = dict(draws=draws, tune=tune, chains=chains)
        if kind == "nuts":
            out["compute_convergence_checks"] = False
    else:
        params = inspect.signature(resolve(path)).parameters
        out = {}
        if "n_draws" in params:
            out["n_draws"] = draws
        elif "draws" in params:
            out["draws"] = draws
            if "tune" in params:
                out["tune"] = tune
    out.update(user or {})
    return out


def run_method(method, model, *, draws=500, tune=200, chains=2, random_seed=None,
               progressbar=True, client=None, **kwargs):
    """Fit ``model`` with ``method`` and return an ``xarray.DataTree``.

    ``draws``, ``tune`` and ``chains`` go to ``pm.sample`` (MCMC methods); other keyword
    arguments go to ``pm.sample`` or to the fitter. ``client`` (a ``distributed.Client``)
    runs each chain of an MCMC method as a Dask task (:func:`bnmfzoo.inference.sample`: the
    same bits as the serial run), or goes to a fitter that takes it (``fit_particles``). MCMC
    results carry a ``log_likelihood`` group when it is small and ``row`` / ``col`` labels on
    the observed entries (:func:`bnmfzoo.inference.sample`).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    path, kind = METHODS[method]
    if kind in ("nuts", "step"):
        from bnmfzoo.inference.chains import sample

        kwargs.setdefault("compute_convergence_checks", False)
        dt = sample(model, step=resolve(path) if kind == "step" else None, draws=draws,
                    tune=tune, chains=chains, random_seed=random_seed, client=client,
                    progressbar=progressbar, pymc_default_steps=kind == "nuts", **kwargs)
    elif client is not None:
        import inspect

        fitter = resolve(path)
        if "client" not in inspect.signature(fitter).parameters:
            raise ValueError(f"method {method!r} does not run on a Dask client; methods that "
                             f"do: the MCMC methods and 'particles'")
        with own_code_interrupts():
            dt = fitter(model, random_seed=random_seed, progressbar=progressbar, client=client,
                        **kwargs)
    else:
        with own_code_interrupts():  # Ctrl-C never raised inside numba's unboxing of a call
            dt = resolve(path)(model, random_seed=random_seed, progressbar=progressbar,
                               **kwargs)
    dt.attrs.setdefault("method", method)
    from bnmfzoo.models._spec import find_spec

    spec = find_spec(model)
    if spec is not None:
        dt.attrs.setdefault("model", spec.family)
    return dt
