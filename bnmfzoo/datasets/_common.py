"""Helpers shared by the dataset loaders (building labelled matrices, reading name files)."""

import numpy as np
import xarray as xr

from bnmfzoo.datasets._files import locate_many


def labelled_matrix(values, rows, cols, *, name, attrs, row_coords=None, col_coords=None):
    """Return ``values`` as a float DataArray with dims ``("row", "col")`` and labelled coords.

    Parameters
    ----------
    values : array-like
        2-D data; NaN marks a missing entry.
    rows, cols : sequence
        Labels of the rows and columns.
    name : str
        Name of the DataArray.
    attrs : dict
        Metadata (source, description, ...).
    row_coords, col_coords : dict of str to sequence, optional
        Extra (non-dimension) coordinates along ``row`` / ``col``.

    Returns
    -------
    xarray.DataArray
    """
    values = np.asarray(values, dtype=float)
    coords = {"row": np.asarray(rows), "col": np.asarray(cols)}
    for key, val in (row_coords or {}).items():
        coords[key] = ("row", np.asarray(val))
    for key, val in (col_coords or {}).items():
        coords[key] = ("col", np.asarray(val))
    da = xr.DataArray(values, dims=("row", "col"), coords=coords, name=name)
    observed = np.isfinite(values)
    da.attrs.update(attrs)
    da.attrs["observed_fraction"] = float(observed.mean())
    return da


def read_lines(path, *, encoding="ascii"):
    """Return the non-empty lines of a text file, CR and NUL padding stripped."""
    data = path.read_bytes().rstrip(b"\x00")
    return [ln.rstrip("\r") for ln in data.decode(encoding).split("\n") if ln.strip("\r\x00 ")]


def read_table(path):
    """Return the tab-separated fields of every line of a small text file."""
    return [ln.split("\t") for ln in read_lines(path)]


def fetch(rels, data_home, *, progressbar=False):
    """Locate (downloading if needed) the files ``rels``; return their paths in order."""
    found = locate_many(rels, data_home=data_home, progressbar=progressbar)
    return [found[rel] for rel in rels]
