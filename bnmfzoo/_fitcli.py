"""``bnmfzoo fit``: read a matrix file, fit a model, write the DataTree atomically.

Reading delimited text (``.csv``, ``.tsv``, ``.txt``) goes through :func:`pandas.read_csv` with
every cell read as text, then these explicit rules (each can be overridden):

* **separator**: tab for ``.tsv``; otherwise the most frequent of ``,``, tab and ``;`` on the
  first non-blank line, or runs of blanks when that line has none of them (``numpy.savetxt``).
* **header** and **row labels** (``header="auto"``, ``index_col="auto"``): decided from the
  kinds of the cells of line 1 and column 1, never silently: all text is names, all numbers is
  data, a minority of text among numbers is a typo refused with its line and column, and a
  layout that fits two readings is refused naming the option that settles it
  (:mod:`bnmfzoo._cli.delimited` lists the rules). pandas' ``to_csv`` layout (empty corner
  cell, labels in column 1, column names that may be numbers such as years) round-trips.
  A first column of consecutive integers (0, 1, 2, ... or 1, 2, 3, ...) is ambiguous (row IDs
  or data?) and is refused; say ``index_col=0`` (labels) or ``index_col=None`` (data). A first
  line that is exactly ``0..N-1`` or ``1..N`` (pandas' default column names, as
  ``to_csv(index=False)`` writes them) is a header when N >= 5 or the data are not integers
  (:mod:`bnmfzoo._base.labels`: the one rule of every text reader, ``--long`` included).
  ``index_col=k`` uses the k-th column (0-based); ``header=True`` / ``False`` force a header.
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

* **duplicates**: for the count models a cell listed twice (in a ``.npz`` file or ``--long``
  lines) holds the sum of its counts, as in ``scipy.sparse`` and as the count models do with
  sparse input in Python (the reading line says how many were added); for the other models
  two observations of one cell are refused, in a file as in Python.
* **rows without a listed cell**: with ``--long`` the rows and columns are the keys listed, so
  a row of zero counts that is never listed is not in the data (the reading line of a count
  model says so); ``--shape D,N`` makes the keys 0-based positions and keeps every row.
* **sizes**: every format is sized from its headers before it is read
  (:mod:`bnmfzoo._cli.declared`): ``.npy`` and ``.npz`` array headers, netCDF/HDF5 variables,
  the length of a text file.
* **count data**: a matrix without a nonzero count is refused; one whose rows are the 96 SBS
  channels (genomes in columns) gets a warning naming ``--transpose``.
"""

import os
import signal
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import xarray as xr

from bnmfzoo._base.labels import numeric_header
from bnmfzoo._base.validation import as_dataarray
from bnmfzoo._cli.declared import check_cells, check_netcdf, check_npy, check_npz, check_text
from bnmfzoo._cli.delimited import _is_number, _read_delimited, _sniff_sep

NA_STRINGS = frozenset({"", "na", "nan", "n/a", "null", "none", "-nan"})
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
NETCDF_SUFFIXES = (".nc", ".netcdf", ".h5")


class Interrupted(BaseException):
    """The command was interrupted (Ctrl-C or SIGTERM): nothing is written.

    ``Interrupted(signum)``; :attr:`signum` is the signal (SIGINT when not given).
    """

    @property
    def signum(self):
        """The signal number that interrupted the command."""
        return int(self.args[0]) if self.args else int(signal.SIGINT)


#: Set by the command's SIGINT / SIGTERM handler; a fit that returns after it was set is
#: discarded.
INTERRUPT = threading.Event()
#: The signals the handler received, first first.
RECEIVED = []
#: Set while PyMC samples: the handler then leaves raising to :func:`_stop_if_interrupted`.
SAMPLING = threading.Event()
#: Seconds an interrupt that landed outside own code waits for the next own line
#: (:class:`~bnmfzoo._base.interrupts.Deferral`) before the signal is sent again and the
#: handler raises it wherever it lands.
DEFER_S = 1.0


def _stop_if_interrupted(*args, **kwargs):
    """``pm.sample`` callback: raise :class:`Interrupted` after the draw once Ctrl-C came."""
    if INTERRUPT.is_set():
        raise Interrupted(*RECEIVED[:1])


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
    unlisted_zero: bool = False  # sparse counts: the cells not listed are zero counts
    summed: int = 0  # sparse counts: duplicate listings of a cell, added to its count
    keys_only: bool = False  # --long counts without --shape: rows / columns are the keys listed

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
        if self.observed is not None and self.unlisted_zero:
            summed = (f", {self.summed} duplicate listing{'s' * (self.summed != 1)} added to "
                      "their cell's count" if self.summed else "")
            keys = ("; rows and columns are the keys listed (a row with no listed cell is not "
                    "in the data: list one of its cells with 0, or give --shape D,N)"
                    if self.keys_only else "")
            return (f"read {self.path}: {D} rows \u00d7 {N} columns, {self.observed} listed "
                    f"counts{summed}; the other {D * N - self.observed} cells are zero counts "
                    f"(count model; sparse{extra.replace(' (', '; ').rstrip(')')}{keys})")
        if self.observed is not None:
            return (f"read {self.path}: {D} rows \u00d7 {N} columns, {self.observed} observed "
                    f"entries (sparse{extra.replace(' (', '; ').rstrip(')')})")
        return (f"read {self.path}: {D} row{'s' * (D != 1)} \u00d7 {N} column{'s' * (N != 1)}, "
                f"{self.n_missing} missing{extra}")


def long_format_hint(X):
    """A note when a dense matrix read from text looks like ``row,col,value`` lines, else "".

    Examples
    --------
    >>> import xarray as xr
    >>> lines = xr.DataArray(np.array([[d, n, d + n] for d in range(5) for n in range(3)], float))
    >>> long_format_hint(lines)[:38]
    'note: the data have 3 columns of which'
    >>> long_format_hint(xr.DataArray(np.ones((15, 3))))
    ''
    """
    values = np.asarray(X.values, dtype=float)
    if values.ndim != 2 or values.shape[1] != 3 or values.shape[0] < 10:
        return ""
    ids = values[:, :2]
    if not (np.all(np.isfinite(ids)) and np.all(ids >= 0) and np.all(ids == np.round(ids))):
        return ""
    if np.unique(ids, axis=0).shape[0] != values.shape[0] or np.unique(ids[:, 0]).size < 2:
        return ""
    return ("note: the data have 3 columns of which the first two hold distinct pairs of "
            "non-negative integers: if each line is one entry (row,col,value), add --long")


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
            check_npy(path)
            X = as_dataarray(np.load(path, allow_pickle=False), name=str(path))
        elif suffix in NETCDF_SUFFIXES:
            check_netcdf(path, what="the data file")
            with xr.open_dataset(path) as ds:
                if len(ds.data_vars) != 1:
                    raise ValueError(
                        f"{path} must hold exactly one variable, found {list(ds.data_vars)}"
                    )
                var = ds[next(iter(ds.data_vars))]
                check_cells(path, var.shape)
                X = as_dataarray(var.load(), name=str(path))
        elif suffix in TEXT_SUFFIXES:
            check_text(path)
            X, meta = _read_delimited(path, header=header, index_col=index_col)
            info = ReadInfo(str(path), **meta)
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


def read_long(path, *, header="auto", counts=False, shape=None, rank=None):
    r"""Read sparse data as a :class:`~bnmfzoo._base.entries.LongMatrix` and a :class:`ReadInfo`.

    ``.npz``: a ``scipy.sparse`` matrix saved by :func:`scipy.sparse.save_npz`, sized from its
    headers before it is loaded (:func:`bnmfzoo._cli.declared.check_npz`; ``rank`` sizes the
    factors). Delimited text: three columns ``row, col, value``, one observed entry per line
    (module docstring; a numeric first line follows :mod:`bnmfzoo._base.labels`).

    ``counts=True`` (a count model): a cell listed more than once holds the **sum** of its
    listed counts, as in ``scipy.sparse`` (and in Python, where the count models sum
    duplicates of sparse input); otherwise a duplicate is refused (two observations of one
    cell). ``shape=(D, N)``: the keys are integer positions ``0..D-1`` / ``0..N-1`` and every
    row and column exists even when none of its cells is listed (without it, the rows and
    columns are the keys listed: a row of zero counts that is not listed is not in the data).

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
    duplicates = "sum" if counts else "refuse"
    if suffix == ".h5ad" or path.is_dir() or _matrix_file(path):  # AnnData, 10x, Zarr, HDF5
        from bnmfzoo.datasets.matrixfiles import open_matrix

        m = open_matrix(path)
        X = m.read(counts=counts)
        rows = np.arange(X.shape[0]) if m.row_labels is None else m.row_labels
        cols = np.arange(X.shape[1]) if m.col_labels is None else m.col_labels
        e = long_format(X, row_labels=rows, col_labels=cols)
        return e, ReadInfo(str(path), e.shape, e.shape[0] * e.shape[1] - e.n_observed,
                           observed=e.n_observed, unlisted_zero=counts)
    if suffix == ".npz":
        import scipy.sparse as sp

        if shape is not None:
            raise ValueError("--shape applies to --long text files; a .npz file stores its "
                             "shape")
        _, listed = check_npz(path, rank=rank)
        try:
            e = long_format(sp.load_npz(path), duplicates=duplicates)
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read {path} as a scipy.sparse .npz file: "
                             f"{str(err).splitlines()[0]}") from err
        return e, ReadInfo(str(path), e.shape, e.shape[0] * e.shape[1] - e.n_observed,
                           observed=e.n_observed, summed=listed - e.n_observed,
                           unlisted_zero=counts)
    if suffix not in TEXT_SUFFIXES:
        raise ValueError(f"long-format data must be .csv, .tsv, .txt (row,col,value) or a "
                         f"scipy.sparse .npz file, got {suffix!r} ({path})")
    check_text(path)
    df = pd.read_csv(path, sep=_sniff_sep(path, suffix), header=None, dtype=str,
                     keep_default_na=False, skip_blank_lines=True, encoding="utf-8-sig")
    if df.shape[1] != 3:
        raise ValueError(f"{path}: long-format data need 3 columns (row, col, value), found "
                         f"{df.shape[1]}")
    has_header = (not _is_number(df.iat[0, 2])) if header == "auto" else bool(header)
    if header == "auto" and not has_header and df.shape[0] > 1:  # the shared numeric rule
        line1 = [str(c).strip() for c in df.iloc[0]]
        below = pd.to_numeric(df[2].iloc[1:].str.strip(), errors="coerce").to_numpy()
        decision, reason = numeric_header(
            line1, [str(c).strip() for c in df.iloc[1]],
            integral=bool(np.all(np.isnan(below) | (below == np.round(below)))))
        if decision is None:
            raise ValueError(f"{path} line 1: {reason}; pass --header or --no-header")
        has_header = decision
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
    if shape is not None:
        D, N = shape
        for which, k, size in (("row", keys[0], D), ("column", keys[1], N)):
            outside = (np.flatnonzero((k < 0) | (k >= size)) if k.dtype.kind == "i"
                       else np.arange(k.size))
            if outside.size:
                raise ValueError(f"{path}, line {first + int(outside[0])}: {which} key "
                                 f"{k[outside[0]].item()!r} is not an integer position in "
                                 f"0..{size - 1}"
                                 f" (--shape {D},{N}: keys are 0-based positions)")
        e = long_format(keys[0], keys[1], values, shape=(D, N), duplicates=duplicates)
    else:
        e = long_format(keys[0], keys[1], values, duplicates=duplicates)
    return e, ReadInfo(str(path), e.shape, e.shape[0] * e.shape[1] - e.n_observed,
                       header=has_header, observed=e.n_observed,
                       summed=len(values) - e.n_observed, unlisted_zero=counts,
                       keys_only=shape is None and counts)


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


def atomic_write(dt, out, *, encoding=None):
    """Write ``dt`` to ``out`` through a temporary file and a rename (no half-written result).

    See :func:`bnmfzoo._cli.safeio.write_netcdf`: the temporary file ``<name>.<random>.part``
    sits next to ``out`` and is removed on any exception or interrupt, so ``out`` is either the
    complete new result or left untouched; a symlink at ``out`` is replaced, never written
    through; a full disk is one :class:`~bnmfzoo._cli.safeio.DiskFull` error. A new result gets
    the usual permissions of a new file (``0o666`` minus the user's umask), an existing one
    keeps its mode. The folder of ``out`` must exist. ``encoding`` goes to ``to_netcdf``.
    """
    from bnmfzoo._cli.safeio import write_netcdf

    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"folder {str(parent)!r} of {str(out)!r} does not exist")
    return write_netcdf(dt, out, encoding=encoding)


def fit_file(data, *, model, rank=None, method=None, out, random_seed=None, progressbar=True,
             header="auto", index_col="auto", model_kwargs=None, verbose=True, scheduler=None,
             long=False, thin="auto", keep_all=False, log_likelihood="auto", shape=None,
             transpose=False, **sample_kwargs):
    """Fit ``model`` to the matrix in ``data`` and write the result to ``out`` (a ``.nc`` file).

    The output path is checked before the data are read and the model is fitted; the result is
    written atomically (:func:`atomic_write`). ``scheduler`` (a Dask scheduler address such as
    ``tcp://10.0.0.5:8786``) runs each MCMC chain (or the particles) as a task on that
    cluster, with the same result as a serial run (:func:`bnmfzoo.inference.sample`).
    ``long=True`` (or a ``.npz`` file) reads sparse data with :func:`read_long` (``shape``:
    its ``--shape``). ``transpose=True`` fits the transposed matrix (rows become columns).
    A count model refuses data without a nonzero count, and warns when the rows are the 96
    SBS channels (genomes in columns: :func:`check_count_layout`).

    The stored result is sized for use (:mod:`bnmfzoo._cli.sizing`): MCMC draws thinned to at
    most 100 per chain (``thin="auto"``, or every ``thin``-th), only the active components of a
    truncated binary model, float32 posterior draws when they are large, zlib compression.
    ``keep_all=True`` stores every draw (unless ``thin`` is an integer) and component as
    float64. When PyMC's trace would hold more than :data:`TRACE_BYTES` of draws, the collapsed
    Gibbs samplers run without PyMC's loop (:func:`~bnmfzoo.inference.fit_collapsed_gibbs`,
    which thins while sampling and adds Rao-Blackwellized means) unless ``scheduler`` is
    given. The memory the stored draws need is checked before the fit starts.
    """
    from bnmfzoo._cli.sizing import auto_thin, compact
    from bnmfzoo._registry import (
        BINARY_MODELS,
        METHODS,
        build_model,
        check_method,
        method_kwargs,
        run_method,
    )

    out = check_output_path(out)
    if method == "blocked_gibbs":  # files read block by block (bnmfzoo._cli.blocked)
        from bnmfzoo._cli.blocked import fit_blocked_file

        if long or shape is not None:
            raise ValueError("--method blocked_gibbs reads matrix files (.h5ad, Zarr, HDF5, "
                             "10x folders, .npz, .npy, text matrices), not --long / --shape")
        return fit_blocked_file(
            data, model=model, rank=rank, out=out, draws=sample_kwargs.get("draws", 500),
            tune=sample_kwargs.get("tune", 200), random_seed=random_seed, scheduler=scheduler,
            block_rows=sample_kwargs.get("block_rows"), transpose=transpose, thin=thin,
            keep_all=keep_all, verbose=verbose, model_kwargs=model_kwargs,
            read_other=lambda p: read_matrix(p, header=header, index_col=index_col))
    if "block_rows" in sample_kwargs:
        raise ValueError("--block-rows applies to --method blocked_gibbs")
    method = check_method(model, method)
    if scheduler is not None and METHODS[method][1] not in ("step", "nuts") \
            and method != "particles":
        raise ValueError(f"--scheduler runs MCMC chains or particles; method {method!r} runs "
                         "in this process only")
    mcmc = METHODS[method][1] in ("step", "nuts")
    modes = {"auto": "auto", "yes": True, "float32": "float32", "no": False}
    if log_likelihood not in modes:
        raise ValueError(f"--log-likelihood must be one of {sorted(modes)}, got "
                         f"{log_likelihood!r}")
    if log_likelihood != "auto":
        if not mcmc:
            raise ValueError(f"--log-likelihood {log_likelihood} applies to the MCMC methods "
                             f"run through PyMC, not to {method!r}")
        sample_kwargs["log_likelihood"] = modes[log_likelihood]
    if thin == "auto":
        thin = 1 if keep_all or not mcmc else auto_thin(sample_kwargs.get("draws", 500))
    elif isinstance(thin, bool) or not isinstance(thin, int) or thin < 1:
        raise ValueError(f"--thin must be 'auto' or an integer >= 1, got {thin!r}")
    labels = None
    from bnmfzoo._estimator_counts import COUNT_MODELS

    counts = model in COUNT_MODELS
    if long or Path(data).suffix.lower() in (".npz", ".h5ad") or Path(data).is_dir() \
            or _matrix_file(data):
        from bnmfzoo._estimator_counts import long_counts, relabel
        from bnmfzoo._registry import sparse_input_for

        X, info = read_long(data, header=header, counts=counts, shape=shape,
                            rank=rank or (model_kwargs or {}).get("truncation"))
        if transpose:
            X = _transposed_entries(X)
            info = replace(info, shape=X.shape)
        if counts:  # unlisted cells are zero counts (bnmfzoo._estimator_counts)
            X, *labels = long_counts(X)
            info = replace(info, unlisted_zero=True)
        else:
            X = sparse_input_for(method, X)
    else:
        if shape is not None:
            raise ValueError("--shape applies to sparse data (--long): a matrix file has its "
                             "own shape")
        X, info = read_matrix(data, header=header, index_col=index_col, return_info=True)
        if transpose:
            X = X.T.rename({"row": "col", "col": "row"}).transpose("row", "col")
            info = replace(info, shape=X.shape)
        hint = long_format_hint(X)
        if hint:
            print(hint, file=sys.stderr, flush=True)
    if counts:
        check_count_layout(X, data, labels, transposed=transpose)
    if verbose:
        print(info.describe(), flush=True)
    pm_model = build_model(model, X, rank, **(model_kwargs or {}))
    trace = _check_draw_memory(pm_model, method, mcmc, sample_kwargs, 1)
    direct = method in ("collapsed_gibbs", "collapsed_gibbs_dirdir") and scheduler is None \
        and trace > TRACE_BYTES
    if not direct:
        _check_draw_memory(pm_model, method, mcmc, sample_kwargs, 1, check=True)
    client = None
    if scheduler is not None:
        from distributed import Client

        client = Client(scheduler, timeout="30s")
        sample_kwargs["client"] = client
    elif mcmc and not direct:
        sample_kwargs.setdefault("callback", _stop_if_interrupted)
        SAMPLING.set()
    # --draws / --tune / --chains as the estimator passes them: pm.sample's for MCMC methods,
    # n_draws (or draws / tune) for a fitter that takes them
    counts = {k: sample_kwargs.pop(k) for k in ("draws", "tune", "chains") if k in sample_kwargs}
    if counts:
        defaults = dict(draws=500, tune=200, chains=2)
        sample_kwargs = {**method_kwargs(method, **{**defaults, **counts}), **sample_kwargs}
    try:
        if direct:
            from bnmfzoo.inference import fit_collapsed_gibbs

            _check_draw_memory(pm_model, method, mcmc, {**sample_kwargs}, thin, check=True)

            counts = {k: sample_kwargs.pop(k) for k in ("draws", "tune", "chains")
                      if k in sample_kwargs}
            if sample_kwargs.pop("log_likelihood", False) is not False:
                raise ValueError(
                    f"--log-likelihood {log_likelihood}: this fit's draws exceed "
                    f"{TRACE_BYTES // 2**20} MiB and run outside PyMC's loop "
                    "(fit_collapsed_gibbs), which records no log_likelihood group; use fewer "
                    "draws, or add it to the result later with "
                    "bnmfzoo.diagnostics.add_log_likelihood")
            dt = fit_collapsed_gibbs(pm_model, thin=thin, random_seed=random_seed,
                                     progressbar=progressbar, **counts, **sample_kwargs)
            dt.attrs["method"] = method
        else:
            dt = run_method(method, pm_model, random_seed=random_seed, progressbar=progressbar,
                            **sample_kwargs)
    finally:
        SAMPLING.clear()
        if client is not None:
            client.close()
    if INTERRUPT.is_set():  # PyMC returned the draws it had when Ctrl-C came: discard them
        raise Interrupted(*RECEIVED[:1])
    if labels is not None:
        dt = relabel(dt, *labels)
    if mcmc and not direct:
        _print_unconverged(dt, method)
    dt.attrs["data_file"] = str(data)
    truncated = model in BINARY_MODELS and (rank is None or bool(
        (model_kwargs or {}).get("nonparametric")))
    dt, encoding = compact(dt, thin=1 if direct else thin, truncated=truncated and not keep_all,
                           float32=not keep_all)
    path = atomic_write(dt, out, encoding=encoding)
    if verbose:
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB"
              + (f"; {dt.attrs['active_components']}" if "active_components" in dt.attrs
                 else "") + ")")
    return path


def _print_unconverged(dt, method):
    """One line on stderr when the chains have not converged (the estimator's check).

    :func:`bnmfzoo.estimator.unconverged_message` on the heaviest mode's aligned draws
    (:func:`~bnmfzoo.diagnostics._modes.point_estimate.point_estimate`); results without
    draws of ``A`` and ``W`` (a tri-factorization) are not checked.
    """
    from bnmfzoo.diagnostics._modes.point_estimate import point_estimate
    from bnmfzoo.estimator import unconverged_message

    post = dt["posterior"] if "posterior" in dt.children else {}
    if "A" not in post or "W" not in post:
        return
    msg = unconverged_message(dt, method, point_estimate(dt)[2])
    if msg:
        print(f"warning: {msg}", file=sys.stderr, flush=True)


def _matrix_file(path):
    """An HDF5 / Zarr matrix file (not netCDF) that :mod:`bnmfzoo.datasets.matrixfiles` reads."""
    from bnmfzoo.datasets.matrixfiles import is_matrix_file

    return Path(path).suffix.lower() in (".zarr", ".hdf5", ".h5") and is_matrix_file(path)


def _transposed_entries(e):
    """The :class:`~bnmfzoo._base.entries.LongMatrix` of the transposed matrix."""
    from bnmfzoo._base.entries import long_format

    return long_format(e.col_labels[e.cols], e.row_labels[e.rows], e.values,
                       row_labels=e.col_labels, col_labels=e.row_labels)


def check_count_layout(X, data, labels=None, *, transposed=False):
    """Refuse count data without a nonzero count; warn when genomes are the columns.

    The estimator and the models refuse a matrix of zeros (nothing to factorize); the command
    says so in one line instead of fitting it. The library's catalogues are **samples x
    channels** (:func:`bnmfzoo.datasets.load_sbs96`: the signatures come out in ``W``): a
    matrix whose row labels are the 96 SBS channels (``A[C>A]A`` ...) holds its genomes in
    columns (SigProfiler's file layout), and a warning (one line on stderr) says to pass
    ``--transpose``; the fit goes on, since either orientation is a valid factorization.
    """
    import scipy.sparse as sp

    from bnmfzoo.datasets.counts import sbs96_channels

    if sp.issparse(X):
        values, (rows, cols) = X.data, labels
    else:
        values, rows, cols = X.values, X["row"].values, X["col"].values
    if not (np.nan_to_num(values) > 0).any():
        raise ValueError(f"{data} holds no nonzero count: a count model has nothing to "
                         "factorize (the estimator refuses it too)")
    if not transposed and sbs96_channels(rows) and not sbs96_channels(cols):
        print(f"warning: the {len(rows)} rows of {data} are SBS96 channels ({rows[0]}, ...): "
              "the genomes are in its columns, so the signatures would come out in A; the "
              "count models take genomes as rows and channels as columns (as "
              "bnmfzoo.datasets.load_sbs96 returns them): pass --transpose", file=sys.stderr,
              flush=True)


#: above this many bytes of draws in PyMC's trace, the collapsed Gibbs samplers run without
#: PyMC's loop (thinning while sampling; 256 MiB)
TRACE_BYTES = 256 * 2**20


def _check_draw_memory(pm_model, method, mcmc, sample_kwargs, thin, check=None):
    """Bytes of the draws held in memory; refuse (one line) what would not fit, before sampling.

    ``check`` None checks only the per-sweep statistics (the thinned draws of the direct
    collapsed Gibbs loop are checked with ``thin``), True checks everything.
    """
    from bnmfzoo._cli.safeio import check_allocation

    draws = int(sample_kwargs.get("draws", 500))
    chains = int(sample_kwargs.get("chains", 2)) if mcmc else 1
    per_draw = sum(int(np.prod(v.shape)) for v in pm_model.initial_point().values())
    stored = -(-draws // thin)
    # + the per-sweep statistics PyMC or the collapsed Gibbs loop record for every draw
    need = 8 * (per_draw * stored + 8 * draws) * chains
    what = f"--draws {draws} x --chains {chains} x {per_draw:,} parameters (method {method})"
    if check:
        check_allocation(need, what)
    else:
        check_allocation(8 * 8 * draws * chains, what)
    return need
