"""Points for the Stein discrepancy from dicts, Datasets and DataTrees; storing the results."""

from collections.abc import Mapping

import numpy as np
import xarray as xr

from bnmfzoo.diagnostics._stein._stein_kernel import ksd_statistics

__all__ = ["SteinMatrix", "collect_points", "normalize_weights", "store_diagnostics"]

KSD_DEFINITION = "w^T K w (V-statistic incl. diagonal; Masood & Doshi-Velez 2019, eq. 4)"


def _dataset_points(ds, names, model, sample_dims, group):
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(
            f"the {group!r} group lacks the model's free variables {missing}; it has "
            f"{sorted(ds.data_vars)}"
        )
    dims_of = getattr(model, "named_vars_to_dims", {}) or {}
    out = {}
    for name in names:
        da = ds[name]
        absent = [d for d in sample_dims if d not in da.dims]
        if absent:
            raise ValueError(f"variable {name!r} of group {group!r} lacks the dims {absent}")
        model_dims = dims_of.get(name)
        if model_dims and all(d is not None and d in da.dims for d in model_dims):
            da = da.transpose(*sample_dims, *model_dims)
        else:
            da = da.transpose(*sample_dims, ...)
        vals = np.asarray(da.values)
        out[name] = vals.reshape((-1,) + vals.shape[len(sample_dims):])
    return out


def collect_points(points, model, names, *, group, max_points):
    """Return (points dict, stored weights or None, sample dim name, DataTree or None)."""
    dt = None
    if isinstance(points, xr.DataTree):
        dt = points
        if group not in dt.children:
            raise ValueError(
                f"the DataTree has no {group!r} group (groups: {sorted(dt.children)}); pass "
                "group='posterior' or group='particles'"
            )
        ds = dt[group].to_dataset()
    elif isinstance(points, xr.Dataset):
        ds = points
    elif isinstance(points, Mapping):
        return {k: np.asarray(v) for k, v in points.items()}, None, "particle", None
    else:
        raise TypeError(
            "points must be a dict name -> array (M, ...), an xarray.Dataset or an "
            f"xarray.DataTree, got {type(points).__name__}"
        )
    weights = None
    if "particle" in ds.dims and ("chain" not in ds.dims or group == "particles"):
        arrays = _dataset_points(ds, names, model, ("particle",), group)
        if "weight" in ds.data_vars:
            weights = np.asarray(ds["weight"].transpose("particle").values, dtype=float)
        dim = "particle"
    elif "chain" in ds.dims and "draw" in ds.dims:
        arrays = _dataset_points(ds, names, model, ("chain", "draw"), group)
        dim = "stein_sample"
    else:
        raise ValueError(
            f"group {group!r} has neither (chain, draw) nor particle dims: {dict(ds.sizes)}"
        )
    m = len(next(iter(arrays.values())))
    if dim == "stein_sample" and max_points is not None and m > max_points:
        idx = np.unique(np.linspace(0, m - 1, int(max_points)).round().astype(int))
        arrays = {k: v[idx] for k, v in arrays.items()}
        if weights is not None:
            weights = weights[idx]
    return arrays, weights, dim, dt


def normalize_weights(weights, m, name="weights"):
    w = np.asarray(weights, dtype=float)
    if w.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},) (one per point), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    total = w.sum()
    if total <= 0:
        raise ValueError(f"{name} must not all be zero")
    return w / total


def store_diagnostics(dt, values):
    """Add/replace variables in the DataTree's ``diagnostics`` group (in place)."""
    if "diagnostics" in dt.children:
        ds = dt["diagnostics"].to_dataset()
    else:
        ds = xr.Dataset()
    for name, da in values.items():
        drop = [name] if name in ds.data_vars else []
        for dim, size in da.sizes.items():
            if dim in ds.dims and ds.sizes[dim] != size:
                drop += [v for v in ds.data_vars if dim in ds[v].dims]
                ds = ds.drop_vars([c for c in ds.coords if dim in ds[c].dims])
        ds = ds.drop_vars(sorted(set(drop)))
        ds[name] = da
    dt["diagnostics"] = xr.DataTree(ds)
    return dt



class SteinMatrix:
    """The Stein kernel matrix of a set of points and where it came from.

    Built by :func:`bnmfzoo.diagnostics.stein_matrix`; consumed by
    :func:`bnmfzoo.diagnostics.stein_weights` and :func:`bnmfzoo.diagnostics.stein_discrepancy`,
    which share its :meth:`store` so that both write the same ``diagnostics`` variables.

    Attributes
    ----------
    K : numpy.ndarray
        ``(M, M)`` Stein kernel matrix.
    kernel : object
        The base kernel used (fitted, for an adaptive kernel).
    space : str
    var_names : tuple of str
    stored_weights : numpy.ndarray or None
        The particles' ``weight`` variable when read from a ``particles`` group.
    dim : str
        Name of the point dimension (``"particle"`` or ``"stein_sample"``).
    datatree : xarray.DataTree or None
        The input DataTree (results are written into its ``diagnostics`` group).
    group : str
    n_floored : dict of str to int
        Entries raised by the boundary floor, per variable (unconstrained space).
    floor : float
    """

    def __init__(self, K, *, kernel, space, var_names, stored_weights=None, dim="particle",
                 datatree=None, group="posterior", n_floored=None, floor=0.0):
        self.K = K
        self.kernel = kernel
        self.space = space
        self.var_names = tuple(var_names)
        self.stored_weights = stored_weights
        self.dim = dim
        self.datatree = datatree
        self.group = group
        self.n_floored = dict(n_floored or {})
        self.floor = float(floor)

    @property
    def n_points(self):
        """``M``."""
        return int(self.K.shape[0])

    def statistics(self, weights):
        """V- and U-statistics and effective size for ``weights`` (see ``ksd_statistics``)."""
        return ksd_statistics(self.K, weights)

    def attrs(self, kind):
        """Attributes describing how a discrepancy from this matrix was computed."""
        return {
            "definition": KSD_DEFINITION,
            "space": self.space,
            "kernel": repr(self.kernel),
            "weights": kind,
            "group": self.group,
            "n_points": self.n_points,
            "var_names": ",".join(self.var_names),
            "floor": self.floor,
            "n_floored": int(sum(self.n_floored.values())),
        }

    def store(self, weights, kind):
        """Write the discrepancy of ``weights`` into the DataTree's ``diagnostics`` group.

        Variables: ``stein_discrepancy`` (= ``ksd_v``), ``ksd_v``, ``ksd_u``, ``n_eff`` and, for
        optimal weights, ``stein_weights`` over the point dimension. Does nothing without a
        DataTree.
        """
        if self.datatree is None:
            return
        stats = self.statistics(weights)
        attrs = self.attrs(kind)
        values = {
            "stein_discrepancy": xr.DataArray(stats["ksd_v"], attrs=attrs),
            "ksd_v": xr.DataArray(stats["ksd_v"], attrs=attrs),
            "ksd_u": xr.DataArray(stats["ksd_u"], attrs=attrs),
            "n_eff": xr.DataArray(stats["n_eff"], attrs={"weights": kind}),
        }
        if kind == "optimal":
            values["stein_weights"] = xr.DataArray(
                np.asarray(weights), dims=(self.dim,), attrs={"space": self.space}
            )
        store_diagnostics(self.datatree, values)

    def __repr__(self):
        return (
            f"SteinMatrix(M={self.n_points}, space={self.space!r}, kernel={self.kernel!r}, "
            f"var_names={list(self.var_names)})"
        )
