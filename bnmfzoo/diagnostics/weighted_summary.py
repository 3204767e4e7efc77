"""``az.summary`` that honours particle weights.

Particle fitters (Stein-weighted Q-Transform particles, SVGD, RRT) store the M distinct
particles with their ``weight`` in a ``particles`` group (dim ``particle``); the ``posterior``
group then holds draws resampled by weight, on which every ArviZ function is correct only up to
resampling noise. :func:`summary` computes the weighted statistics exactly from the particles:
mean ``sum w x``, sd ``sqrt(sum w (x - mean)^2)``, and an equal-tailed interval from the
weighted empirical quantiles (inverse of the weighted CDF), with the number of particles and
their effective number ``1 / sum w^2``. Without weighted particles it is ``az.summary``.
"""

import arviz_base as azb
import arviz_stats as azs
import numpy as np
import xarray as xr


def _weighted_quantile(values, weights, q):
    """Inverse of the weighted empirical CDF along axis 0: smallest x with F(x) >= q."""
    order = np.argsort(values, axis=0, kind="stable")
    v = np.take_along_axis(values, order, axis=0)
    cw = np.cumsum(weights[order], axis=0)
    cw /= cw[-1]
    idx = (cw < q - 1e-12).sum(axis=0)  # number of sorted points strictly below level q
    idx = np.minimum(idx, values.shape[0] - 1)
    return np.take_along_axis(v, idx[None], axis=0)[0]


def _check_weights(w):
    w = np.asarray(w, dtype=float)
    if w.ndim != 1:
        raise ValueError(f"particles 'weight' must be 1-D (particle,), got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("particles 'weight' must be finite, non-negative, with a positive sum")
    return w / w.sum()


def weighted_summary_dataset(ds, weights, *, ci_prob=0.89, dim="particle"):
    """Weighted mean, sd, ETI bounds, number and effective number of particles (Dataset).

    Parameters
    ----------
    ds : xarray.Dataset
        Variables with dim ``dim`` (others are skipped).
    weights : array-like
        One non-negative weight per particle (normalised here).
    ci_prob : float
        Probability mass of the equal-tailed interval.
    dim : str
        The particle dim.

    Returns
    -------
    xarray.Dataset
        Variables of ``ds`` with a new leading dim ``summary``.
    """
    w = _check_weights(weights)
    lo, hi = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    pct = int(ci_prob * 100)
    labels = ["mean", "sd", f"eti{pct}_lb", f"eti{pct}_ub", "n_particles", "ess_particles"]
    ess = 1.0 / np.sum(w**2)
    out = {}
    for name, da in ds.data_vars.items():
        if dim not in da.dims:
            continue
        da = da.transpose(dim, ...)
        x = np.asarray(da.values, dtype=float)
        if x.shape[0] != w.size:
            raise ValueError(f"{name!r} has {x.shape[0]} particles but there are {w.size} weights")
        wb = w.reshape((-1,) + (1,) * (x.ndim - 1))
        mean = (wb * x).sum(0)
        sd = np.sqrt((wb * (x - mean) ** 2).sum(0))
        flat = x.reshape(x.shape[0], -1)
        ql = _weighted_quantile(flat, w, lo).reshape(mean.shape)
        qh = _weighted_quantile(flat, w, hi).reshape(mean.shape)
        stats = np.stack(
            [mean, sd, ql, qh, np.full_like(mean, w.size), np.full_like(mean, ess)]
        )
        out[name] = xr.DataArray(
            stats,
            dims=("summary", *da.dims[1:]),
            coords={"summary": labels, **{d: da[d] for d in da.dims[1:] if d in da.coords}},
        )
    return xr.Dataset(out)


def summary(dt, *, var_names=None, group=None, ci_prob=None, round_to=None, **kwargs):
    """Summary table of a result, applying particle weights exactly when there are any.

    If ``dt`` holds a weighted particle set (a ``particles`` group with a ``weight``
    variable) and ``group`` is not given, the statistics are computed from the particles with
    their normalised weights w: ``mean = sum w x``, ``sd = sqrt(sum w (x - mean)^2)``, the
    equal-tailed interval from weighted quantiles (the inverse of the weighted empirical CDF;
    ``ci_prob`` defaults to ArviZ's ``stats.ci_prob``, 0.89), ``n_particles`` and the
    effective number of particles ``ess_particles = 1 / sum w^2``. R-hat and MCMC ESS do not
    apply to a weighted set and are not reported. Otherwise it defers to ``az.summary`` on
    the posterior (or ``group``).

    Parameters
    ----------
    dt : xarray.DataTree
        A result.
    var_names : str or list of str, optional
        Variables to include.
    group : str, optional
        Force a group: ``"posterior"`` for ``az.summary`` of the (resampled) draws, or
        ``"particles"``.
    ci_prob : float, optional
        Interval probability.
    round_to : int, optional
        Decimals for the weighted table (raw floats by default). For ``az.summary`` the
        default is its own (``"auto"``).
    **kwargs
        Passed to :func:`arviz_stats.summary` (e.g. ``kind``, ``ci_kind``, ``fmt``); not
        accepted for a weighted particle summary.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._results import build_datatree
    >>> post = {"tau": np.array([[1.0, 2.0, 3.0, 3.0]])}
    >>> parts = {"tau": (("particle",), [1.0, 2.0, 3.0]), "weight": (("particle",), [.25, .25, .5])}
    >>> dt = build_datatree(post, groups={"particles": parts})
    >>> summary(dt).loc["tau", ["mean", "n_particles", "ess_particles"]].tolist()
    [2.25, 3.0, 2.6666666666666665]
    """
    if not isinstance(dt, xr.DataTree):
        raise TypeError(f"dt must be an xarray.DataTree, got {type(dt).__name__}")
    if isinstance(var_names, str):
        var_names = [var_names]
    weighted = (
        group in (None, "particles")
        and "particles" in dt.children
        and "weight" in dt["particles"].to_dataset()
    )
    if group == "particles" and not weighted:
        raise ValueError("group='particles' needs a 'particles' group with a 'weight' variable")
    if ci_prob is None:
        ci_prob = azb.rcParams["stats.ci_prob"]
    if not 0 < ci_prob < 1:
        raise ValueError(f"ci_prob must be in (0, 1), got {ci_prob!r}")
    if not weighted:
        if round_to is not None:
            kwargs["round_to"] = round_to
        return azs.summary(
            dt, var_names=var_names, group=group or "posterior", ci_prob=ci_prob, **kwargs
        )
    if kwargs:
        raise TypeError(
            f"unexpected arguments for a weighted particle summary: {sorted(kwargs)} "
            "(pass group='posterior' for az.summary of the resampled draws)"
        )
    ds = dt["particles"].to_dataset()
    weights = ds["weight"].values
    ds = ds.drop_vars("weight")
    if var_names is not None:
        missing = [v for v in var_names if v not in ds]
        if missing:
            raise ValueError(f"var_names {missing} not in the particles group "
                             f"(variables: {sorted(ds.data_vars)})")
        ds = ds[var_names]
    stats = weighted_summary_dataset(ds, weights, ci_prob=ci_prob)
    if not stats.data_vars:
        raise ValueError("the particles group has no variable with a 'particle' dim")
    table = azb.dataset_to_dataframe(stats, sample_dims=["summary"]).T
    table.columns = list(table.columns)
    return table.round(round_to) if round_to is not None else table
