"""Names of models and inference methods, shared by the command line and :class:`BayesianNMF`.

A *runner* takes a ``pm.Model`` and returns a DataTree, whatever the method (PyMC step methods
go through ``pm.sample``).
"""

from importlib import import_module

MODELS = {
    "exponential_gaussian": "bnmfzoo.models:exponential_gaussian",
    "tri_exponential_gaussian": "bnmfzoo.models:tri_exponential_gaussian",
    "silf": "bnmfzoo.models:silf",
    "uniform_noise": "bnmfzoo.models:uniform_noise",
    "beta_dir": "bnmfzoo.models:beta_dir",
    "dir_beta": "bnmfzoo.models:dir_beta",
    "dir_dir": "bnmfzoo.models:dir_dir",
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
}

#: method used when the user names only a model
DEFAULT_METHOD = {
    "exponential_gaussian": "gibbs",
    "tri_exponential_gaussian": "gibbs_nmtf",
    "silf": "particles",
    "uniform_noise": "rrt",
    "beta_dir": "collapsed_gibbs",
    "dir_beta": "nuts",
    "dir_dir": "collapsed_gibbs_dirdir",
}


def resolve(path):
    """Import ``"module:name"``."""
    module, name = path.split(":")
    return getattr(import_module(module), name)


def build_model(name, X, rank, **kwargs):
    """Build the model called ``name`` on data ``X`` with ``rank``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    if name == "tri_exponential_gaussian":
        ranks = rank if isinstance(rank, tuple) else (rank, rank)
        return resolve(MODELS[name])(X, ranks=ranks, **kwargs)
    return resolve(MODELS[name])(X, rank, **kwargs)


def run_method(method, model, *, draws=500, tune=200, chains=2, random_seed=None,
               progressbar=True, **kwargs):
    """Fit ``model`` with ``method`` and return an ``xarray.DataTree``."""
    import pymc as pm

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    path, kind = METHODS[method]
    sample_kwargs = dict(draws=draws, tune=tune, chains=chains, cores=1,
                         random_seed=random_seed, progressbar=progressbar)
    if kind == "nuts":
        with model:
            dt = pm.sample(nuts_sampler="pymc", **sample_kwargs, **kwargs)
    elif kind == "step":
        with model:
            dt = pm.sample(step=resolve(path)(), compute_convergence_checks=False,
                           **sample_kwargs, **kwargs)
    else:
        dt = resolve(path)(model, random_seed=random_seed, progressbar=progressbar, **kwargs)
    if kind in ("nuts", "step"):  # log_likelihood (when small) and labelled observed entries
        from bnmfzoo.diagnostics.stacking import maybe_add_log_likelihood

        maybe_add_log_likelihood(dt, model)
    dt.attrs.setdefault("method", method)
    spec = getattr(model, "bnmfzoo_spec", None)
    if spec is not None:
        dt.attrs.setdefault("model", spec.family)
    return dt
