"""Build the ArviZ-ready ``xarray.DataTree`` every fitter returns.

Groups follow the package's result convention: ``posterior`` (chain, draw, ...), ``sample_stats``,
``observed_data`` and, where they apply, ``particles`` (dim ``particle``), ``variational`` and
``diagnostics``. Custom groups are plain datasets without sample dims, so they survive a netCDF
round trip (``dt.to_netcdf`` / ``xarray.open_datatree``).
"""

import arviz_base as azb
import numpy as np
import xarray as xr

#: dims of the standard NMF variables, used unless a caller overrides them
DEFAULT_DIMS = {
    "A": ["row", "factor"],
    "W": ["factor", "col"],
    "F": ["row", "factor_row"],
    "S": ["factor_row", "factor_col"],
    "G": ["col", "factor_col"],
    "lambda_": ["factor"],
    "lambda_F": ["factor_row"],
    "lambda_G": ["factor_col"],
    "X": ["row", "col"],
    "X_mean": ["row", "col"],
    "mask": ["row", "col"],
}


def data_coords(X):
    """Return the ``row``/``col`` coordinates of a DataArray as a plain dict."""
    return {dim: np.asarray(X[dim].values) for dim in ("row", "col") if dim in X.coords}


def observed_long(entries, name="X"):
    """Observed data in long format: a Dataset over ``{name}_obs`` (never D x N).

    The dim's coordinate is the row-major flat index of each entry (as in ``pm.sample``
    results); non-dimension coordinates ``row`` / ``col`` give the data's labels and
    ``row_index`` / ``col_index`` the integer positions, as
    :func:`bnmfzoo.diagnostics.label_observations` adds them to ``pm.sample`` results.

    Examples
    --------
    >>> from bnmfzoo._base.entries import long_format
    >>> ds = observed_long(long_format(["a", "b"], ["x", "x"], [1.0, 2.0]))
    >>> ds["X"].dims, ds["row"].values.tolist()
    (('X_obs',), ['a', 'b'])
    """
    dim = f"{name}_obs"
    return xr.Dataset(
        {name: (dim, entries.values)},
        coords={dim: entries.flat_index, "row": (dim, entries.row_labels[entries.rows]),
                "col": (dim, entries.col_labels[entries.cols]),
                "row_index": (dim, entries.rows), "col_index": (dim, entries.cols)},
        attrs={"shape": np.asarray(entries.shape), "format": "long"},
    )


def build_datatree(
    posterior,
    *,
    sample_stats=None,
    observed_data=None,
    coords=None,
    dims=None,
    groups=None,
    attrs=None,
):
    """Assemble a DataTree from dicts of arrays.

    Parameters
    ----------
    posterior : dict of str to numpy.ndarray
        Arrays shaped ``(chain, draw, ...)``.
    sample_stats : dict, optional
        Arrays shaped ``(chain, draw, ...)``.
    observed_data : dict or xarray.Dataset, optional
        Arrays without sample dims (e.g. ``{"X": X}``), or a ready Dataset (e.g.
        :func:`observed_long` for sparse data).
    coords, dims : dict, optional
        Passed to :func:`arviz_base.from_dict`; ``dims`` extends :data:`DEFAULT_DIMS`.
    groups : dict of str to (xarray.Dataset or dict), optional
        Extra groups without sample dims (``particles``, ``variational``, ``diagnostics``).
        A dict value is turned into a Dataset of ``(dims, values)`` tuples or plain arrays.
    attrs : dict, optional
        Attributes stored on the root (e.g. ``{"method": "vb", "model": "exponential_gaussian"}``).

    Returns
    -------
    xarray.DataTree
    """
    all_dims = {**DEFAULT_DIMS, **(dims or {})}
    data = {"posterior": posterior}
    if sample_stats:
        data["sample_stats"] = sample_stats
    observed_ds = observed_data if isinstance(observed_data, xr.Dataset) else None
    if observed_ds is None and observed_data:
        data["observed_data"] = observed_data
    used = set(posterior) | set(sample_stats or {}) | set(observed_data or {})
    dt = azb.from_dict(
        data,
        coords=coords,
        dims={k: v for k, v in all_dims.items() if k in used},
    )
    if observed_ds is not None:
        dt["observed_data"] = xr.DataTree(observed_ds)
    for name, group in (groups or {}).items():
        ds = group if isinstance(group, xr.Dataset) else xr.Dataset(group)
        if coords:
            ds = ds.assign_coords({k: v for k, v in coords.items() if k in ds.dims})
        dt[name] = xr.DataTree(ds)
    if attrs:
        dt.attrs.update({k: _netcdf_attr(v) for k, v in attrs.items()})
    return dt


def _netcdf_attr(value):
    """Make ``value`` storable as a netCDF attribute (str, number or array)."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (str, int, float, np.integer, np.floating, np.ndarray)):
        return value
    return str(value)
