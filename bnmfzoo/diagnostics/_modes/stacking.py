"""Stacking of MCMC chains that do not mix (Yao, Vehtari & Gelman 2022).

When the chains of an NMF posterior sit in different modes, pooling their draws weighs each
mode by the number of chains that happened to start near it. Yao, Vehtari & Gelman (2022,
"Stacking for non-mixing Bayesian computations: the curse and blessing of multimodal
posteriors", JMLR 23(79), eq. 4) weigh the chains instead by how well they predict left-out
data: each chain's pointwise PSIS-LOO log predictive densities ``lpd[i, k]``
(:func:`arviz_stats.loo` on that chain's ``log_likelihood`` draws) and the stacking weights

    w = argmax_{w in simplex} sum_i log sum_k w_k exp(lpd[i, k]).

The objective is concave; it is solved here in the log domain (log-sum-exp, so very negative
pointwise densities do not underflow as ``exp(lpd)`` would), by SLSQP on the simplex.
:func:`arviz_stats.compare` with ``method="stacking"`` solves the same problem for a dict of
models (its weights agree with :func:`stacking_weights` when no density underflows; see the
tests). :func:`add_log_likelihood` records the ``log_likelihood`` group of a ``pm.sample`` result
after sampling (PyMC 6 deprecates ``idata_kwargs={"log_likelihood": True}``) and labels the
observed entries with their ``row``/``col``.
"""

import numpy as np
import xarray as xr
from scipy.optimize import minimize

from bnmfzoo.diagnostics.zero_cells import add_zero_cells, implicit_zero_cells


def stacking_weights(lpd):
    """Stacking weights from pointwise log predictive densities (Yao et al. 2018, eq. 4).

    Parameters
    ----------
    lpd : array-like
        ``(n_obs, K)``: log predictive density of each observation under each of K predictive
        distributions (e.g. PSIS-LOO ``elpd_i`` of each chain).

    Returns
    -------
    numpy.ndarray
        ``(K,)`` non-negative weights summing to one that maximise
        ``sum_i log sum_k w_k exp(lpd[i, k])``.

    Examples
    --------
    >>> import numpy as np
    >>> lpd = np.log(np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]]))
    >>> stacking_weights(lpd).round(3).tolist()
    [1.0, 0.0]
    """
    lpd = np.asarray(lpd, dtype=float)
    if lpd.ndim != 2 or lpd.shape[1] < 1 or lpd.shape[0] < 1:
        raise ValueError(f"lpd must be a 2-D (n_obs, K) array, got shape {lpd.shape}")
    if not np.isfinite(lpd).all():
        raise ValueError("lpd has non-finite entries")
    K = lpd.shape[1]
    if K == 1:
        return np.ones(1)
    shift = lpd.max(1, keepdims=True)  # per-observation shift: exp stays in range
    dens = np.exp(lpd - shift)

    def objective(w):
        mix = dens @ w
        return -np.sum(np.log(np.maximum(mix, 1e-300)))

    def gradient(w):
        mix = np.maximum(dens @ w, 1e-300)
        return -(dens / mix[:, None]).sum(0)

    best = None
    # a few starts (uniform and each vertex-leaning point) guard against SLSQP stopping early
    starts = [np.full(K, 1.0 / K)] + [0.5 * np.eye(K)[k] + 0.5 / K for k in range(K)]
    for w0 in starts:
        res = minimize(objective, w0, jac=gradient, method="SLSQP",
                       bounds=[(0.0, 1.0)] * K,
                       constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0,
                                     "jac": lambda w: np.ones_like(w)}],
                       options={"ftol": 1e-12, "maxiter": 500})
        w = np.clip(res.x, 0.0, None)
        w /= w.sum()
        if best is None or objective(w) < objective(best):
            best = w
    return best


def _loglik_var(ll, var_name):
    if var_name is not None:
        if var_name not in ll:
            raise ValueError(f"var_name={var_name!r} not in the log_likelihood group "
                             f"(variables: {sorted(ll.data_vars)})")
        return var_name
    names = list(ll.data_vars)
    if len(names) != 1:
        raise ValueError(f"the log_likelihood group has variables {names}; pass var_name=")
    return names[0]


def chain_elpd(result, *, var_name=None):
    """Pointwise PSIS-LOO log predictive densities of each chain on its own.

    Parameters
    ----------
    result : xarray.DataTree
        An MCMC result with a ``log_likelihood`` group (dims ``chain``, ``draw``, ...).
    var_name : str, optional
        The observed variable (needed when the group holds several).

    Returns
    -------
    xarray.Dataset
        ``elpd_i`` (obs..., chain): pointwise elpd of each chain; ``elpd`` and ``se``
        (chain); ``pareto_k_max`` (chain) and ``n_bad_k`` (chain; k > 0.7, where PSIS is
        unreliable). Observation dims keep their coordinates (and ``row``/``col`` labels).
    """
    import arviz_stats as azs

    if not isinstance(result, xr.DataTree):
        raise TypeError(f"result must be an xarray.DataTree, got {type(result).__name__}")
    if "log_likelihood" not in result.children:
        raise ValueError(
            "result has no log_likelihood group: record it with "
            "bnmfzoo.diagnostics._modes.stacking.add_log_likelihood(result, model) (or "
            "pm.compute_log_likelihood) after pm.sample"
        )
    ll = result["log_likelihood"].to_dataset()
    name = _loglik_var(ll, var_name)
    if "posterior" not in result.children:
        raise ValueError("result has no posterior group")
    post = result["posterior"].to_dataset()
    chains = ll["chain"].values
    per_chain, elpd, se, kmax, nbad = [], [], [], [], []
    for c in chains:
        sub = xr.DataTree.from_dict({
            "posterior": post.sel(chain=[c]),
            "log_likelihood": ll[[name]].sel(chain=[c]),
        })
        res = azs.loo(sub, pointwise=True, var_name=name)
        per_chain.append(res.elpd_i)
        elpd.append(res.elpd)
        se.append(res.se)
        k = np.asarray(res.pareto_k)
        kmax.append(float(np.nanmax(k)))
        nbad.append(int(np.sum(k > 0.7)))
    elpd_i = xr.concat(per_chain, dim=xr.DataArray(chains, dims="chain", name="chain"))
    obs_dims = [d for d in ll[name].dims if d not in ("chain", "draw")]
    elpd_i = elpd_i.transpose(*obs_dims, "chain")
    for coord in ("row", "col"):
        if coord in ll.coords and coord not in elpd_i.coords:
            elpd_i = elpd_i.assign_coords({coord: ll[coord]})
    return xr.Dataset({
        "elpd_i": elpd_i,
        "elpd": ("chain", np.asarray(elpd)),
        "se": ("chain", np.asarray(se)),
        "pareto_k_max": ("chain", np.asarray(kmax)),
        "n_bad_k": ("chain", np.asarray(nbad)),
    }, coords={"chain": chains})


def chain_weights(result, *, var_name=None):
    """Stacking weights over the chains of an MCMC result (Yao, Vehtari & Gelman 2022).

    An alternative to Stein weights for any multi-chain result with a ``log_likelihood``
    group: chains stuck in a mode that predicts left-out entries badly get little weight,
    however many of them there are.

    Parameters
    ----------
    result : xarray.DataTree
        An MCMC result with ``posterior`` and ``log_likelihood`` groups.
    var_name : str, optional
        The observed variable.

    Returns
    -------
    xarray.DataArray
        Weights (dim ``chain``) on the simplex; attrs ``method = "stacking"`` and the per-chain
        ``elpd`` (list).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=30)
    >>> mu = np.stack([rng.normal(0.0, 0.05, 200), rng.normal(2.0, 0.05, 200)])  # 2 chains
    >>> ll = -0.5 * (y - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    >>> dt = build_datatree({"mu": mu}, groups={})
    >>> dt["log_likelihood"] = xr.DataTree(xr.Dataset({"y": (("chain", "draw", "obs"), ll)}))
    >>> w = chain_weights(dt)
    >>> bool(w.values[0] > 0.9)
    True
    """
    el = chain_elpd(result, var_name=var_name)
    lpd = el["elpd_i"].values.reshape(-1, el.sizes["chain"])
    w = stacking_weights(lpd)
    return xr.DataArray(w, dims="chain", coords={"chain": el["chain"].values}, name="weight",
                        attrs={"method": "stacking",
                               "elpd": [float(v) for v in el["elpd"].values]})


def _row_col(post):
    """The posterior's row and column dims (ours, ``row`` / ``col``, when it does not tell)."""
    from bnmfzoo.diagnostics._modes._dims import factor_dims

    try:
        fd = factor_dims(post)
    except (ValueError, TypeError):
        return "row", "col"
    return fd.row, fd.col or "col"


def label_observations(result, *, shape=None, row=None, col=None):
    """Give the flat observed-entry dim of a ``pm.sample`` result ``row``/``col`` coordinates.

    The library's likelihood terms store observed entries on a 1-D dim ``X_obs`` whose
    coordinate is the row-major flat index of each entry; this adds non-dimension coordinates
    ``row`` and ``col`` (the data's labels, e.g. a cell line and a drug; named after the
    posterior's own row and column dims when they are not ours, e.g. ``cell_line`` and
    ``drug``) and ``row_index`` /
    ``col_index`` (integer positions) on that dim in ``observed_data``, ``log_likelihood``,
    ``posterior_predictive`` and ``prior_predictive``, so LOO values map back to cells.

    Parameters
    ----------
    result : xarray.DataTree
    shape : tuple of int, optional
        ``(D, N)``; default from the posterior's ``A`` (row) and ``W`` (col) sizes.
    row, col : array-like, optional
        Labels; default the posterior's ``row``/``col`` coordinates.

    Returns
    -------
    xarray.DataTree
        A copy with the coordinates added (dims ending in ``_obs`` whose coordinate is an
        integer flat index).
    """
    post = result["posterior"] if "posterior" in result.children else None
    rname, cname = _row_col(post)
    if row is None and post is not None and rname in post.coords:
        row = post[rname].values
    if col is None and post is not None and cname in post.coords:
        col = post[cname].values
    if shape is None:
        if row is None or col is None:
            raise ValueError("label_observations needs shape= or a posterior with row/col coords")
        shape = (len(row), len(col))
    D, N = (int(s) for s in shape)
    row = np.arange(D) if row is None else np.asarray(row)
    col = np.arange(N) if col is None else np.asarray(col)
    out = result.copy()
    for group in ("observed_data", "log_likelihood", "posterior_predictive", "prior_predictive"):
        if group not in out.children:
            continue
        ds = out[group].to_dataset()
        new = {}
        for dim in ds.dims:
            if not str(dim).endswith("_obs") or dim not in ds.coords:
                continue
            idx = np.asarray(ds[dim].values)
            if not np.issubdtype(idx.dtype, np.integer) or (idx.size and (
                    idx.min() < 0 or idx.max() >= D * N)):
                continue
            i, j = np.divmod(idx, N)
            new.update({rname: (dim, row[i]), cname: (dim, col[j]),
                        "row_index": (dim, i), "col_index": (dim, j)})
        if new:
            out[group] = xr.DataTree(ds.assign_coords(new))
    return out


def add_log_likelihood(result, model=None, *, progressbar=False):
    """Record the ``log_likelihood`` group of a result (and label its observed entries).

    Calls :func:`pymc.compute_log_likelihood` on the posterior (cheap next to sampling: one
    vectorized log-density evaluation per draw), then :func:`label_observations`.

    Parameters
    ----------
    result : xarray.DataTree
        A ``pm.sample`` (or fitter) result with a ``posterior`` group of the model's free
        variables.
    model : pymc.Model, optional
        The model (default: the model on the context stack).
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        ``result`` with a ``log_likelihood`` group (modified in place and returned).
    """
    import pymc as pm

    if not isinstance(result, xr.DataTree):
        raise TypeError(f"result must be an xarray.DataTree, got {type(result).__name__}")
    model = pm.modelcontext(model)
    if "log_likelihood" not in result.children:
        post = result["posterior"].to_dataset()
        names = [v.name for v in model.free_RVs]
        missing = [n for n in names if n not in post]
        if missing:
            raise ValueError(f"the posterior lacks the model's free variables {missing}")
        pm.compute_log_likelihood(result, model=model, progressbar=progressbar,
                                  extend_inferencedata=True)
        add_zero_cells(result, model)  # sparse counts: the zeros are observed cells too
    labelled = label_observations(result)
    for group in labelled.children:
        result[group] = labelled[group]
    return result


#: largest chains x draws x observed entries for which a log_likelihood group is recorded by
#: default (80 MB of float64)
MAX_DEFAULT_LOGLIK_VALUES = 10_000_000


def maybe_add_log_likelihood(result, model, *, max_values=MAX_DEFAULT_LOGLIK_VALUES):
    """:func:`add_log_likelihood` when the group stays small (else label observations only).

    Used after MCMC runs of the library's methods, so ``az.loo`` and :func:`chain_weights`
    work out of the box on moderate data; larger results get the group on request
    (:func:`add_log_likelihood`).

    Parameters
    ----------
    result : xarray.DataTree
    model : pymc.Model
    max_values : int
        Size limit (chains x draws x observed entries).

    Returns
    -------
    xarray.DataTree
        ``result`` (modified in place).
    """
    if not isinstance(result, xr.DataTree) or "posterior" not in result.children:
        return result
    post = result["posterior"]
    observed = result["observed_data"].to_dataset() if "observed_data" in result.children \
        else xr.Dataset()
    names = [rv.name for rv in model.observed_RVs]
    n_obs = sum(int(observed[n].size) for n in names if n in observed)
    n_obs += implicit_zero_cells(model)
    n = post.sizes.get("chain", 1) * post.sizes.get("draw", 1) * n_obs
    if 0 < n <= max_values and "log_likelihood" not in result.children:
        try:
            return add_log_likelihood(result, model)
        except (ValueError, NotImplementedError, TypeError):
            pass  # e.g. a model without an observed variable PyMC can evaluate
    labelled = label_observations(result) if _row_col(post)[0] in post.coords else result
    for group in labelled.children:
        result[group] = labelled[group]
    return result
