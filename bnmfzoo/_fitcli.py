"""``bnmfzoo fit``: read a matrix file, fit a model, write the DataTree atomically.

Reading delimited text (``.csv``, ``.tsv``, ``.txt``) goes through :func:`pandas.read_csv` with
every cell read as text, then these explicit rules (each can be overridden):

* **separator**: tab for ``.tsv``; otherwise the most frequent of ``,``, tab and ``;`` on the
  first non-blank line.
* **header** (``header="auto"``): the first row is a header row when one of its cells (after a
  possible label column) is not a number or a missing-value marker; a first row of numbers is
  always data, never dropped into a header. ``header=True`` / ``False`` force it.
* **row labels** (``index_col="auto"``): the first column holds row labels when one of its data
  cells is not a number, or when the header's first cell is empty (pandas' ``to_csv`` layout).
  A first column of consecutive integers (0, 1, 2, ... or 1, 2, 3, ...) is ambiguous (row IDs
  or data?) and is refused; say ``index_col=0`` (labels) or ``index_col=None`` (data).
  ``index_col=k`` uses the k-th column (0-based).
* **missing values**: empty cells and ``NA``, ``NaN``, ``nan``, ``N/A``, ``null`` (any case).
  Blank lines are skipped (in a one-column file write ``NA`` for a missing cell).
* every row must have the same number of fields; a short or long row is refused with its line
  number, and a cell that is not a number is refused with its line and column.

Sparse data (:func:`read_long`) never become a dense D x N array: a ``.npz`` file written by
:func:`scipy.sparse.save_npz` (stored entries = observed ones, explicit zeros included; labels
0..D-1, 0..N-1), or with ``long=True`` (``--long``) a delimited file of observed entries, one per
line, ``row,col,value`` (an optional header row, detected as for a matrix; row and column keys
may be text; labels are the sorted distinct keys). Sparse-aware methods then run on the entries;
others get the dense matrix with a warning, up to a size (``_registry.sparse_input_for``).
"""

import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from bnmfzoo._base.validation import as_dataarray, fmt

NA_STRINGS = frozenset({"", "na", "nan", "n/a", "null", "none", "-nan"})
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
NETCDF_SUFFIXES = (".nc", ".netcdf", ".h5")


class Interrupted(BaseException):
    """The command was interrupted (Ctrl-C): nothing is written."""


#: Set by the command's SIGINT handler; a fit that returns after it was set is discarded.
INTERRUPT = threading.Event()
#: Set while PyMC samples: the handler then leaves raising to :func:`_stop_if_interrupted`.
SAMPLING = threading.Event()


def _stop_if_interrupted(*args, **kwargs):
    """``pm.sample`` callback: raise :class:`Interrupted` after the draw once Ctrl-C came."""
    if INTERRUPT.is_set():
        raise Interrupted()


@dataclass
class ReadInfo:
    """What :func:`read_matrix` read: shape, missing count and the layout decisions."""

    path: str
    shape: tuple
    n_missing: int
    header: bool = False
    index_col: object = None
    index_name: str = ""
    observed: object = None  # number of observed entries of sparse (long-format) data

    def describe(self):
        """One line such as ``read x.csv: 30 rows x 20 columns, 60 missing (header row; ...)``."""
        D, N = self.shape
        notes = []
        if self.header:
            notes.append("header row")
        if self.index_col is not None:
            label = f" {self.index_name!r}" if self.index_name else ""
            notes.append(f"row labels from column {self.index_col + 1}{label}")
        extra = f" ({'; '.join(notes)})" if notes else ""
        if self.observed is not None:
            return (f"read {self.path}: {D} rows \u00d7 {N} columns, {self.observed} observed "
                    f"entries (sparse{extra.replace(' (', '; ').rstrip(')')})")
        return (f"read {self.path}: {D} row{'s' * (D != 1)} \u00d7 {N} column{'s' * (N != 1)}, "
                f"{self.n_missing} missing{extra}")


def read_matrix(path, *, header="auto", index_col="auto", return_info=False):
    r"""Read a D x N matrix from CSV/TSV, ``.npy`` or netCDF into a DataArray (row, col).

    Parameters
    ----------
    path : str or pathlib.Path
        The data file; the suffix picks the reader.
    header : {"auto", True, False}
        Delimited text only: whether the first row holds column names (module docstring).
    index_col : {"auto", None} or int
        Delimited text only: which column holds row labels (0-based), ``None`` for none.
    return_info : bool
        Also return a :class:`ReadInfo` describing what was read.

    Returns
    -------
    xarray.DataArray or (xarray.DataArray, ReadInfo)

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Unsupported suffix, empty file, ragged rows, a non-numeric cell (named by line and
        column), an ambiguous ID column, or a netCDF file with more than one variable.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = p.write_text("gene,s1,s2\ng1,1,NA\ng2,0.5,3\n")
    >>> X, info = read_matrix(p, return_info=True)
    >>> X.shape, X["row"].values.tolist(), info.n_missing
    ((2, 2), ['g1', 'g2'], 1)
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"data file {str(path)!r} is a folder")
    suffix = path.suffix.lower()
    info = None
    try:
        if suffix == ".npy":
            X = as_dataarray(np.load(path, allow_pickle=False), name=str(path))
        elif suffix in NETCDF_SUFFIXES:
            with xr.open_dataset(path) as ds:
                if len(ds.data_vars) != 1:
                    raise ValueError(
                        f"{path} must hold exactly one variable, found {list(ds.data_vars)}"
                    )
                X = as_dataarray(ds[next(iter(ds.data_vars))].load(), name=str(path))
        elif suffix in TEXT_SUFFIXES:
            X, info = _read_delimited(path, header=header, index_col=index_col)
        else:
            raise ValueError(
                f"unsupported data file type {suffix!r} ({path}): use .csv, .tsv, .txt, .npy or .nc"
            )
    except (UnicodeDecodeError, OSError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    if X.ndim != 2:
        raise ValueError(f"{path} must hold a 2-D matrix, got shape {X.shape}")
    if info is None:
        info = ReadInfo(str(path), X.shape, int(np.isnan(X.values).sum()))
    return (X, info) if return_info else X


def read_long(path, *, header="auto"):
    r"""Read sparse data as a :class:`~bnmfzoo._base.entries.LongMatrix` and a :class:`ReadInfo`.

    ``.npz``: a ``scipy.sparse`` matrix saved by :func:`scipy.sparse.save_npz`. Delimited text:
    three columns ``row, col, value``, one observed entry per line (module docstring).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = p.write_text("user,item,rating\nu2,m1,1\nu1,m3,0\nu1,m1,1\n")
    >>> e, info = read_long(p)
    >>> e.shape, e.row_labels.tolist(), e.values.tolist()
    ((2, 2), ['u1', 'u2'], [1.0, 0.0, 1.0])
    """
    import pandas as pd

    from bnmfzoo._base.entries import long_format

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        import scipy.sparse as sp

        try:
            e = long_format(sp.load_npz(path))
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read {path} as a scipy.sparse .npz file: {err}") from err
        return e, ReadInfo(str(path), e.shape, e.shape[0] * e.shape[1] - e.n_observed,
                           observed=e.n_observed)
    if suffix not in TEXT_SUFFIXES:
        raise ValueError(f"long-format data must be .csv, .tsv, .txt (row,col,value) or a "
                         f"scipy.sparse .npz file, got {suffix!r} ({path})")
    df = pd.read_csv(path, sep=_sniff_sep(path, suffix), header=None, dtype=str,
                     keep_default_na=False, skip_blank_lines=True, encoding="utf-8-sig")
    if df.shape[1] != 3:
        raise ValueError(f"{path}: long-format data need 3 columns (row, col, value), found "
                         f"{df.shape[1]}")
    has_header = (not _is_number(df.iat[0, 2])) if header == "auto" else bool(header)
    first = 2 if has_header else 1  # line number of the first entry
    if has_header:
        df = df.iloc[1:]
    if df.empty:
        raise ValueError(f"{path} lists no entry")
    values = pd.to_numeric(df[2].str.strip(), errors="coerce").to_numpy()
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        raise ValueError(f"{path}, line {first + int(bad[0])}: value {df.iat[int(bad[0]), 2]!r} "
                         "is not a number (long format lists observed entries only: leave "
                         "missing ones out)")
    keys = []
    for col in (0, 1):
        k = df[col].str.strip().to_numpy()
        as_int = pd.to_numeric(pd.Series(k), errors="coerce")
        integral = as_int.notna().all() and (as_int % 1 == 0).all()
        keys.append(as_int.to_numpy(dtype=np.int64) if integral else k.astype(str))
    e = long_format(keys[0], keys[1], values)
    return e, ReadInfo(str(path), e.shape, e.shape[0] * e.shape[1] - e.n_observed,
                       header=has_header, observed=e.n_observed)


def _sniff_sep(path, suffix):
    if suffix == ".tsv":
        return "\t"
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            if line.strip():
                counts = {sep: line.count(sep) for sep in (",", "\t", ";")}
                best = max(counts, key=counts.get)
                return best if counts[best] else ","
    return ","


def _is_na(cell):
    return cell.strip().lower() in NA_STRINGS


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _numeric_or_na(cells):
    return [_is_na(c) or _is_number(c) for c in cells]


def _read_delimited(path, *, header="auto", index_col="auto"):
    import pandas as pd

    if header not in ("auto", True, False):
        raise ValueError(f"header must be 'auto', True or False, got {header!r}")
    sep = _sniff_sep(path, path.suffix.lower())
    lines = _record_lines(path, sep)
    try:
        raw = pd.read_csv(path, sep=sep, header=None, dtype=str, keep_default_na=False,
                          na_filter=False, skip_blank_lines=True, encoding="utf-8-sig",
                          skipinitialspace=True)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{path} is empty") from err
    except pd.errors.ParserError as err:  # e.g. "Expected 3 fields in line 5, saw 4"
        raise ValueError(f"{path}: rows of different lengths: {err}".strip()) from err
    if raw.shape[0] == 0:
        raise ValueError(f"{path} is empty (no data rows)")
    if len(lines) != raw.shape[0]:  # pragma: no cover - csv and pandas disagree on the layout
        raise ValueError(f"cannot read {path}: inconsistent line structure")
    cells = raw.to_numpy(dtype=object)
    cells = np.vectorize(lambda c: c.strip(), otypes=[object])(cells)

    # -- header row ------------------------------------------------------------------------
    if header == "auto":
        first = list(cells[0])
        rest = first[1:] if len(first) > 1 else first
        has_header = not all(_numeric_or_na(rest))
        if not has_header and len(first) > 1 and first[0] == "" and cells.shape[0] > 1:
            # pandas' to_csv layout: empty corner cell, numeric column names, an index column
            col0 = list(cells[1:, 0])
            has_header = all(c != "" and _is_number(c) for c in col0) and _consecutive(col0)
        if not has_header and len(first) > 1 and not _numeric_or_na([first[0]])[0] \
                and cells.shape[0] > 1 and all(_numeric_or_na(list(cells[1:, 0]))):
            # a text corner cell above a numeric first column names that column: header row
            has_header = True
    else:
        has_header = bool(header)
    names = list(cells[0]) if has_header else None
    body = cells[1:] if has_header else cells
    body_lines = lines[1:] if has_header else lines
    if body.shape[0] == 0:
        raise ValueError(f"{path} has a header row but no data rows")

    # -- row-label column ------------------------------------------------------------------
    if index_col == "auto":
        col0 = list(body[:, 0])
        if body.shape[1] == 1:
            idx = None
        elif not all(_numeric_or_na(col0)) or (has_header and names[0] == ""):
            idx = 0
        elif body.shape[0] >= 3 and all(c != "" and _is_number(c) for c in col0) \
                and _consecutive(col0):
            head = f" {names[0]!r}" if has_header else ""
            raise ValueError(
                f"the first column{head} of {path} holds consecutive integers "
                f"({col0[0]}, {col0[1]}, {col0[2]}, ...): row IDs or data? Pass "
                "--index-col 0 to use it as row labels or --index-col none to read it as data"
            )
        else:
            idx = None
    elif index_col is None:
        idx = None
    else:
        if isinstance(index_col, bool) or int(index_col) != index_col \
                or not 0 <= index_col < body.shape[1]:
            raise ValueError(f"index_col must be a column number from 0 to {body.shape[1] - 1} "
                             f"for {path}, got {fmt(index_col)}")
        idx = int(index_col)
    if idx is not None:
        if body.shape[1] == 1:
            raise ValueError(f"{path} has only one column; it cannot be both labels and data")
        row_labels = [str(c) for c in body[:, idx]]
        keep = [j for j in range(body.shape[1]) if j != idx]
    else:
        row_labels = None
        keep = list(range(body.shape[1]))
    data = body[:, keep]
    col_names = [names[j] for j in keep] if has_header else None

    # -- numbers -----------------------------------------------------------------------------
    values = np.empty(data.shape)
    for (i, j), cell in np.ndenumerate(data):
        if _is_na(cell):
            values[i, j] = np.nan
            continue
        try:
            values[i, j] = float(cell)
        except ValueError:
            col = f"column {keep[j] + 1}" + (f" ({col_names[j]!r})" if col_names else "")
            raise ValueError(f"{path} line {body_lines[i]}, {col}: {cell!r} is not a number "
                             "(missing values: empty, NA or NaN)") from None
    D, N = values.shape
    row = row_labels if row_labels is not None else np.arange(D)
    col = col_names if col_names is not None else np.arange(N)
    if row_labels is not None and len(set(row)) != D:
        raise ValueError(f"{path}: the row labels in column {idx + 1} are not unique")
    if col_names is not None and len(set(col)) != N:
        raise ValueError(f"{path}: the column names in the header row are not unique")
    X = xr.DataArray(values, dims=("row", "col"), coords={"row": row, "col": col})
    info = ReadInfo(str(path), (D, N), int(np.isnan(values).sum()), header=has_header,
                    index_col=idx, index_name=(names[idx] if has_header and idx is not None
                                               else ""))
    return X, info


def _record_lines(path, sep):
    """File line of each non-blank record; refuse rows whose number of fields differs."""
    import csv

    lines, width, first = [], None, None
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
        start = 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record:
                continue
            if width is None:
                width, first = len(record), line
            elif len(record) != width:
                raise ValueError(
                    f"{path} line {line} has {len(record)} field{'s' * (len(record) != 1)}, "
                    f"expected {width} like line {first} (every row needs the same number of "
                    "cells; write NA for a missing value)"
                )
            lines.append(line)
    return np.asarray(lines, dtype=int)


def _consecutive(cells):
    try:
        ints = [float(c) for c in cells]
    except ValueError:
        return False
    if not all(np.isfinite(v) and v == int(v) for v in ints):  # "nan" is a number, not an ID
        return False
    return ints == [ints[0] + i for i in range(len(ints))] and ints[0] in (0.0, 1.0)


def check_output_path(out):
    """Validate a result path before any work: ``.nc`` suffix, existing writable folder.

    Raises
    ------
    ValueError
        ``out`` is a folder, does not end in ``.nc``, its folder does not exist or cannot be
        written, or it names something other than a regular file.
    """
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a folder; give a file name ending in .nc")
    if out.suffix.lower() != ".nc":
        raise ValueError(f"--out {str(out)!r} must end in .nc (results are netCDF files)")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"--out {str(out)!r}: folder {str(parent)!r} does not exist "
                         "(create it first)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--out {str(out)!r}: cannot write in folder {str(parent)!r}")
    if out.exists() and not out.is_file():
        raise ValueError(f"--out {str(out)!r} exists and is not a regular file")
    return out


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(dt, out, *, encoding=None):
    """Write ``dt`` to ``out`` through a temporary file and a rename (no half-written result).

    The temporary file ``<name>.<random>.part`` sits next to ``out`` and is removed on any
    exception or interrupt, so ``out`` is either the complete new result or left untouched. The
    result gets the usual permissions of a new file (``0o666`` minus the user's umask), not
    ``mkstemp``'s ``0o600``. The folder of ``out`` must exist. ``encoding`` goes to
    ``to_netcdf`` (e.g. zlib compression per variable).
    """
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"folder {str(parent)!r} of {str(out)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f"{out.name}.", suffix=".part", dir=parent)
    os.close(fd)
    try:
        dt.to_netcdf(tmp, engine="h5netcdf", encoding=encoding)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return out


def fit_file(data, *, model, rank=None, method=None, out, random_seed=None, progressbar=True,
             header="auto", index_col="auto", model_kwargs=None, verbose=True, scheduler=None,
             long=False, **sample_kwargs):
    """Fit ``model`` to the matrix in ``data`` and write the result to ``out`` (a ``.nc`` file).

    The output path is checked before the data are read and the model is fitted; the result is
    written atomically (:func:`atomic_write`). ``scheduler`` (a Dask scheduler address such as
    ``tcp://10.0.0.5:8786``) runs each MCMC chain (or the particles) as a task on that
    cluster, with the same result as a serial run (:func:`bnmfzoo.inference.sample`).
    ``long=True`` (or a ``.npz`` file) reads sparse data with :func:`read_long`.
    """
    from bnmfzoo._registry import METHODS, build_model, check_method, method_kwargs, run_method

    out = check_output_path(out)
    method = check_method(model, method)
    if scheduler is not None and METHODS[method][1] not in ("step", "nuts") \
            and method != "particles":
        raise ValueError(f"--scheduler runs MCMC chains or particles; method {method!r} runs "
                         "in this process only")
    if long or Path(data).suffix.lower() == ".npz":
        from bnmfzoo._registry import sparse_input_for

        X, info = read_long(data, header=header)
        X = sparse_input_for(method, X)
    else:
        X, info = read_matrix(data, header=header, index_col=index_col, return_info=True)
    if verbose:
        print(info.describe(), flush=True)
    pm_model = build_model(model, X, rank, **(model_kwargs or {}))
    client = None
    if scheduler is not None:
        from distributed import Client

        client = Client(scheduler, timeout="30s")
        sample_kwargs["client"] = client
    elif METHODS[method][1] in ("step", "nuts"):
        sample_kwargs.setdefault("callback", _stop_if_interrupted)
        SAMPLING.set()
    # --draws / --tune / --chains as the estimator passes them: pm.sample's for MCMC methods,
    # n_draws (or draws / tune) for a fitter that takes them
    counts = {k: sample_kwargs.pop(k) for k in ("draws", "tune", "chains") if k in sample_kwargs}
    if counts:
        defaults = dict(draws=500, tune=200, chains=2)
        sample_kwargs = {**method_kwargs(method, **{**defaults, **counts}), **sample_kwargs}
    try:
        dt = run_method(method, pm_model, random_seed=random_seed, progressbar=progressbar,
                        **sample_kwargs)
    finally:
        SAMPLING.clear()
        if client is not None:
            client.close()
    if INTERRUPT.is_set():  # PyMC returned the draws it had when Ctrl-C came: discard them
        raise Interrupted()
    dt.attrs["data_file"] = str(data)
    path = atomic_write(dt, out)
    if verbose:
        print(f"wrote {path}")
    return path
