"""``az.summary`` that honours particle weights.

Particle fitters (Stein-weighted Q-Transform particles, SVGD, RRT) store the M distinct
particles with their ``weight`` in a ``particles`` group (dim ``particle``); the ``posterior``
group then holds draws resampled by weight, on which every ArviZ function is correct only up to
resampling noise. :func:`summary` computes the weighted statistics exactly from the particles:
mean ``sum w x``, sd ``sqrt(sum w (x - mean)^2)``, and an equal-tailed interval from the
weighted empirical quantiles (inverse of the weighted CDF), with the number of particles and
their effective number ``1 / sum w^2``. Without weighted particles it is ``az.summary``.
"""

import warnings

import arviz_base as azb
import arviz_stats as azs
import numpy as np
import xarray as xr

from bnmfzoo._base.validation import fmt


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


def _pair_dims(ds, dims, lead, by_mode):
    """The factor dims of ``A`` and ``W`` in ``ds`` (None: no basis, or ``by_mode=False``)."""
    if by_mode is False or "A" not in ds or not all(d in ds["A"].dims for d in lead):
        return None
    from bnmfzoo.diagnostics._modes._dims import factor_dims

    try:
        return factor_dims(ds, dims=dims, member_dims=lead)
    except ValueError as err:
        if by_mode is True or dims is not None:
            raise ValueError(f"{err} (or by_mode=False for the unaligned statistics)") from None
        warnings.warn(f"summary is not split into modes nor aligned: {err}", UserWarning,
                      stacklevel=4)
        return None


def _permute_members(ds, perm, lead, fdim="factor"):
    """Permute every variable with the factor dim ``fdim`` by a per-member permutation.

    ``perm`` has shape ``lead_shape + (R,)`` where ``lead`` are the member dims (``("chain",
    "draw")`` or ``("particle",)``).
    """
    from bnmfzoo.diagnostics._modes.alignment import _permute

    out = {}
    for name, var in ds.data_vars.items():
        if fdim not in var.dims or not all(d in var.dims for d in lead):
            out[name] = var
            continue
        v = var.transpose(*lead, ...)
        vals = v.values
        p = perm
        if len(lead) == 1:  # (P, ...) -> (1, P, ...) for the (chain, draw) helper
            vals, p = vals[None], perm[None]
        res = _permute(vals, p, v.dims.index(fdim) + (1 if len(lead) == 1 else 0))
        out[name] = v.copy(data=res[0] if len(lead) == 1 else res).transpose(*var.dims)
    return xr.Dataset(out, coords=ds.coords, attrs=ds.attrs)


def _with_mode(table, k, m):
    """Prefix the block of mode ``k`` with its weight, its MCSE and its share of members.

    ``mode_weight`` is what :func:`~bnmfzoo.diagnostics.modes` calls weight (a posterior mass
    only when ``m.attrs["weight_is_mass"]``; NaN for chains that never change mode),
    ``mode_weight_mcse`` its Monte-Carlo error, ``mode_weight_low``/``mode_weight_high`` its
    95 % interval, ``mode_share`` the fraction of members.
    """
    import pandas as pd

    table = table.copy()
    table.insert(0, "mode_share", float(m["share"][k]) if "share" in m else np.nan)
    for name in ("weight_high", "weight_low"):  # the mass's 95 % interval (NaN if no mass)
        table.insert(0, f"mode_{name}", float(m[name][k]) if name in m else np.nan)
    table.insert(0, "mode_weight_mcse",
                 float(m["weight_mcse"][k]) if "weight_mcse" in m else np.nan)
    table.insert(0, "mode_weight", float(m["weight"][k]))
    table.index = pd.MultiIndex.from_product([[k], list(table.index)], names=["mode", "name"])
    return table


def _particle_summary(dt, var_names, ci_prob, round_to, by_mode, kwargs, dims=None):
    import pandas as pd

    if kwargs:
        raise TypeError(
            f"unexpected arguments for a weighted particle summary: {sorted(kwargs)} "
            "(pass group='posterior' for az.summary of the resampled draws)"
        )
    ds = dt["particles"].to_dataset()
    weights = _check_weights(ds["weight"].values)
    ds = ds.drop_vars("weight")
    if var_names is not None:
        missing = [v for v in var_names if v not in ds]
        if missing:
            raise ValueError(f"var_names {missing} not in the particles group "
                             f"(variables: {sorted(ds.data_vars)})")
    groups = [(None, ds, weights, None)]
    fd = _pair_dims(ds, dims, ("particle",), by_mode)
    if fd is not None:
        from bnmfzoo.diagnostics._modes.mode_clustering import modes

        m = modes(dt, source="particles", warn=False, dims=fd)["modes"]
        label = m["member_mode"].values
        aligned = _permute_members(ds, m["member_perm"].values, ("particle",), fd.factor)
        K = m.sizes["mode"]
        if K == 1:
            groups = [(None, aligned, weights, None)]
        else:
            groups = []
            for k in range(K):
                sel = np.flatnonzero(label == k)
                wk = weights[sel]
                if wk.sum() <= 0:  # a mode of zero-weight particles: equal weights inside it
                    wk = np.ones(sel.size)
                groups.append((k, aligned.isel(particle=sel), wk, m))
    tables = []
    for k, sub, w, mode_w in groups:
        if var_names is not None:
            sub = sub[var_names]
        stats = weighted_summary_dataset(sub, w, ci_prob=ci_prob)
        if not stats.data_vars:
            raise ValueError("the particles group has no variable with a 'particle' dim")
        table = azb.dataset_to_dataframe(stats, sample_dims=["summary"]).T
        table.columns = list(table.columns)
        tables.append(table if k is None else _with_mode(table, k, mode_w))
    if len(tables) > 1:
        warnings.warn(f"mode_weight: {m.attrs['note']}", UserWarning, stacklevel=3)
    table = tables[0] if len(tables) == 1 else pd.concat(tables)
    return table.round(round_to) if round_to is not None else table


def _mcmc_by_mode(dt, group, var_names, ci_prob, kwargs, resampled, fd):
    """az.summary per mode of an MCMC result (labels aligned within each mode)."""
    import pandas as pd

    from bnmfzoo.diagnostics._modes.mode_clustering import chains_by_mode, describe_modes, modes

    m = modes(dt, warn=False, dims=fd)["modes"]
    post = dt[group].to_dataset()
    aligned = _permute_members(post, m["member_perm"].values, ("chain", "draw"), fd.factor)
    label = m["member_mode"].values
    K = m.sizes["mode"]

    def az_table(ds, kw):
        tree = xr.DataTree.from_dict({"posterior": ds})
        return azs.summary(tree, var_names=var_names, group="posterior", ci_prob=ci_prob, **kw)

    if K == 1:
        return az_table(aligned, kwargs)
    msg = describe_modes(m) if not resampled else (
        f"the draws sit in {K} modes (shares "
        + ", ".join(f"{float(v):.2f}" for v in m["share"].values) + ")")
    warnings.warn((msg + " " if msg else "") + "Summarized per mode; mode_weight: "
                  + m.attrs["note"], UserWarning, stacklevel=3)
    owned = chains_by_mode(m)
    tables = []
    for k in range(K):
        chains = owned.get(k, [])
        in_owned = np.isin(post["chain"].values, chains)
        members_in_owned = (label == k)[in_owned].sum() == (label == k).sum()
        if chains and members_in_owned and not resampled:
            # the mode is made of whole chains: within-mode ESS and R-hat are meaningful
            table = az_table(aligned.sel(chain=chains), kwargs)
        else:
            # draws of several chains that visit more than one mode: statistics only
            c, d = np.nonzero(label == k)
            flat = aligned.stack(sample=("chain", "draw")).isel(
                sample=np.ravel_multi_index((c, d), label.shape)
            ).drop_vars(["sample", "chain", "draw"]).rename({"sample": "draw"}).expand_dims(
                chain=[0]).transpose("chain", "draw", ...)
            kw = {k2: v for k2, v in kwargs.items() if k2 != "kind"}
            table = az_table(flat.assign_coords(draw=np.arange(flat.sizes["draw"])),
                             {**kw, "kind": "stats"})
        tables.append(_with_mode(table, k, m))
    return pd.concat(tables)


def summary(dt, *, var_names=None, group=None, ci_prob=None, round_to=None, by_mode="auto",
            dims=None, **kwargs):
    """Summary table of a result: per mode, with labels aligned, and particle weights exact.

    Averages are never taken across modes or across unaligned factor labels:

    * **Weighted particles** (a ``particles`` group with ``weight``, ``group`` not given): the
      particles are split into modes (:func:`bnmfzoo.diagnostics.modes`), their factors
      aligned within each mode, and the statistics are computed with the normalised weights
      w of the mode's particles: ``mean = sum w x``, ``sd = sqrt(sum w (x - mean)^2)``, the
      equal-tailed interval from weighted quantiles (the inverse of the weighted empirical
      CDF; ``ci_prob`` defaults to ArviZ's ``stats.ci_prob``, 0.89), ``n_particles`` and the
      effective number of particles ``ess_particles = 1 / sum w^2``. R-hat and MCMC ESS do
      not apply to a weighted set and are not reported.
    * **MCMC draws** with a basis ``A``: the draws are split into modes and aligned within
      each; with one mode the result is ``az.summary`` of the aligned draws. With several, a
      warning names the modes and their chains (instead of an unexplained R-hat of ~3), and
      the table has one block per mode (index ``(mode, name)``, columns ``mode_weight``,
      ``mode_weight_mcse``, ``mode_weight_low``, ``mode_weight_high``, ``mode_share``: what
      :func:`~bnmfzoo.diagnostics.modes` reports,
      a posterior mass with its Monte-Carlo error only for chains that cross between the
      modes, NaN for chains that never change mode, and the warning says which):
      ``az.summary`` (with within-mode ESS and R-hat) over the chains that make up the mode,
      or statistics only when the mode's draws come from chains that move between modes.
    * **Resampled particle draws** (``group="posterior"`` on a particle fit): ESS and R-hat of
      draws resampled from a weighted set measure the resampling, not the posterior; they are
      omitted (``kind="stats"``) with a warning.

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
    by_mode : {"auto", True, False}
        Split into modes and align within them (``"auto"``: when there is a basis ``A``).
        ``False`` gives the unaligned statistics.
    dims : tuple or dict, optional
        The result's ``(row, factor, col)`` dims, e.g. ``("cell_line", "k", "drug")``;
        default: read from the result (the dim ``A`` and ``W`` share is the factor dim;
        :func:`~bnmfzoo.diagnostics._modes._dims.factor_dims`). The table's row names keep
        the result's coordinates (``A[ACH-000001, k0]``).
    **kwargs
        Passed to :func:`arviz_stats.summary` (e.g. ``kind``, ``ci_kind``, ``fmt``); not
        accepted for a weighted particle summary.

    Returns
    -------
    pandas.DataFrame
        Index ``name`` (one mode) or ``(mode, name)`` (several modes, with ``mode_weight``).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> post = {"tau": np.array([[1.0, 2.0, 3.0, 3.0]])}
    >>> parts = {"tau": (("particle",), [1.0, 2.0, 3.0]), "weight": (("particle",), [.25, .25, .5])}
    >>> dt = build_datatree(post, groups={"particles": parts})
    >>> summary(dt).loc["tau", ["mean", "n_particles", "ess_particles"]].tolist()
    [2.25, 3.0, 2.6666666666666665]
    """
    if not isinstance(dt, xr.DataTree):
        raise TypeError(f"dt must be an xarray.DataTree, got {type(dt).__name__}")
    if by_mode not in ("auto", True, False):
        raise ValueError(f"by_mode must be 'auto', True or False, got {by_mode!r}")
    if isinstance(var_names, str):
        var_names = [var_names]
    has_particles = "particles" in dt.children and "weight" in dt["particles"].to_dataset()
    weighted = group in (None, "particles") and has_particles
    if group == "particles" and not weighted:
        raise ValueError("group='particles' needs a 'particles' group with a 'weight' variable")
    if ci_prob is None:
        ci_prob = azb.rcParams["stats.ci_prob"]
    if not 0 < ci_prob < 1:
        raise ValueError(f"ci_prob must be in (0, 1), got {fmt(ci_prob)}")
    if weighted:
        return _particle_summary(dt, var_names, ci_prob, round_to, by_mode, kwargs, dims)
    group = group or "posterior"
    if group not in dt.children:
        raise ValueError(f"group={group!r} not in the DataTree (groups: {sorted(dt.children)})")
    if round_to is not None:
        kwargs["round_to"] = round_to
    resampled = has_particles and group == "posterior"
    if resampled:
        warnings.warn(
            "the posterior of a particle fit holds draws resampled from the weighted particles: "
            "ESS and R-hat of those draws measure the resampling, not the posterior, and are "
            "omitted (use summary(dt) for the exact weighted statistics)",
            UserWarning, stacklevel=2,
        )
        kwargs["kind"] = "stats"
    post = dt[group].to_dataset()
    fd = _pair_dims(post, dims, ("chain", "draw"), by_mode)
    if fd is not None:
        return _mcmc_by_mode(dt, group, var_names, ci_prob, kwargs, resampled, fd)
    return azs.summary(dt, var_names=var_names, group=group, ci_prob=ci_prob, **kwargs)
