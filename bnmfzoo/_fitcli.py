"""``bnmfzoo fit``: read a matrix file, fit a model, write the DataTree atomically."""

import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from bnmfzoo._validation import as_dataarray


def read_matrix(path):
    """Read a D x N matrix from CSV/TSV (header row and index column optional), .npy or netCDF.

    Empty cells and ``NaN``/``nan``/``NA`` are missing. Returns a DataArray (row, col).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return as_dataarray(np.load(path, allow_pickle=False), name=str(path))
        if suffix in (".nc", ".netcdf", ".h5"):
            ds = xr.open_dataset(path)
            if len(ds.data_vars) != 1:
                raise ValueError(
                    f"{path} must hold exactly one variable, found {list(ds.data_vars)}"
                )
            return as_dataarray(ds[next(iter(ds.data_vars))].load(), name=str(path))
        if suffix in (".csv", ".tsv", ".txt"):
            return _read_delimited(path, "\t" if suffix == ".tsv" else None)
    except (UnicodeDecodeError, OSError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    raise ValueError(f"unsupported data file type {suffix!r}: use .csv, .tsv, .npy or .nc")


def _read_delimited(path, sep):
    import pandas as pd

    text = path.read_text()
    if sep is None:
        sep = "\t" if text.count("\t") > text.count(",") else ","
    raw = pd.read_csv(path, sep=sep, header=None, dtype=str, keep_default_na=False)
    first_row_numeric = _numeric(raw.iloc[0, 1:]).all()
    first_col_numeric = _numeric(raw.iloc[1:, 0]).all()
    header = None if first_row_numeric and _numeric(raw.iloc[0, :1]).all() else 0
    df = pd.read_csv(path, sep=sep, header=header, na_values=["", "NA", "NaN", "nan"])
    if not first_col_numeric or df.iloc[:, 0].dtype == object:
        df = df.set_index(df.columns[0])
    try:
        values = df.to_numpy(dtype=float)
    except ValueError as err:
        raise ValueError(f"{path} has non-numeric cells: {err}") from err
    return xr.DataArray(values, dims=("row", "col"),
                        coords={"row": [str(i) for i in df.index],
                                "col": [str(c) for c in df.columns]})


def _numeric(cells):
    import pandas as pd

    cleaned = pd.Series(cells).replace({"": "nan", "NA": "nan"})
    return pd.to_numeric(cleaned, errors="coerce").notna() | cleaned.str.lower().eq("nan")


def atomic_write(dt, out):
    """Write ``dt`` to ``out`` through a temporary file and a rename (no half-written result)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".nc.part", dir=out.parent)
    os.close(fd)
    try:
        dt.to_netcdf(tmp, engine="h5netcdf")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return out


def fit_file(data, *, model, rank, method=None, out, random_seed=None, progressbar=True,
             **sample_kwargs):
    """Fit ``model`` of ``rank`` to the matrix in ``data`` and write the result to ``out``."""
    from bnmfzoo._registry import DEFAULT_METHOD, build_model, run_method

    X = read_matrix(data)
    pm_model = build_model(model, X, rank)
    method = method or DEFAULT_METHOD[model]
    dt = run_method(method, pm_model, random_seed=random_seed, progressbar=progressbar,
                    **sample_kwargs)
    dt.attrs["data_file"] = str(data)
    path = atomic_write(dt, out)
    print(f"wrote {path}")
    return path
