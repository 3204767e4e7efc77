"""Input checks shared by every model, fitter and loader.

Every public entry point funnels its data through :func:`check_matrix` and its rank through
:func:`check_rank`, so bad input fails early with a ``ValueError`` / ``TypeError`` that names the
argument and what was expected, never as a silent NaN deep inside a sampler.
"""

import numbers

import numpy as np
import xarray as xr

KINDS = ("real", "nonnegative", "binary")
#: largest accepted magnitude of a data entry: squares and products of factors of this scale
#: stay far from float64 overflow (about 1.8e308) in every sampler and fitter
MAX_ABS_ENTRY = 1e150


def _as_row_col(da, name):
    """Return a 2-D DataArray with dims ``("row", "col")``, matching by dim name.

    Dims named ``row``/``col`` are put in that order (a ``("col", "row")`` array is transposed,
    not misread); any other two dims are taken as (row, col) in their order. Dims without
    coordinate values get integer labels.
    """
    if da.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (row x col), got dims {da.dims}")
    if set(da.dims) == {"row", "col"}:
        da = da.transpose("row", "col")
    elif "row" in da.dims or "col" in da.dims:
        raise ValueError(f"{name} has dims {da.dims}: name both dims row and col, or neither "
                         "(then they are taken as row, col in that order)")
    else:
        da = da.rename(dict(zip(da.dims, ("row", "col"))))
    missing = {d: np.arange(da.sizes[d]) for d in ("row", "col") if d not in da.coords}
    return da.assign_coords(missing) if missing else da


def as_dataarray(X, *, name="X"):
    """Return ``X`` as a float ``xarray.DataArray`` with dims ``("row", "col")``.

    NumPy arrays, nested lists and pandas DataFrames get integer (or index) coordinates; a
    DataArray keeps its coordinates (dims named ``row``/``col`` are matched by name, other
    names are taken in order; dims without coordinate values get integer labels). Duplicate
    row or column labels are refused here, so every model family (Gaussian, count, binary)
    refuses them alike.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(np.zeros((3, 2)), dims=("col", "row"))
    >>> as_dataarray(da).dims, as_dataarray(da).shape
    (('row', 'col'), (2, 3))
    """
    if isinstance(X, xr.DataArray):
        da = _as_row_col(X, name)
        if not np.issubdtype(da.dtype, np.number) and da.dtype != bool:
            raise TypeError(f"{name} must hold numbers, got dtype {da.dtype}")
        _refuse_complex(da.dtype, name)
        _unique_labels(da, name)  # every path (Gaussian, counts, binary) refuses them
        return da.astype(float)
    if hasattr(X, "to_numpy") and hasattr(X, "index") and hasattr(X, "columns"):  # DataFrame
        raw = X.to_numpy()
        _refuse_complex(raw.dtype, name)
        values = np.asarray(raw, dtype=float)
        da = xr.DataArray(
            values, dims=("row", "col"), coords={"row": list(X.index), "col": list(X.columns)}
        )
        _unique_labels(da, name)
        return da
    if np.iscomplexobj(X):
        _refuse_complex(np.asarray(X).dtype, name)
    try:
        values = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric 2-D array, got {type(X).__name__}") from err
    if values.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (row x col), got shape {values.shape}")
    return xr.DataArray(
        values,
        dims=("row", "col"),
        coords={"row": np.arange(values.shape[0]), "col": np.arange(values.shape[1])},
    )


def _refuse_complex(dtype, name):
    """Complex data would lose their imaginary part in silence: refuse them."""
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"{name} has complex entries (dtype {dtype}); NMF needs real numbers: "
                        f"pass {name}.real or abs({name}) explicitly")


def _unique_labels(da, name):
    """Refuse duplicate row or column labels (they make label-based lookups ambiguous)."""
    import pandas as pd

    for dim, what in (("row", "row labels"), ("col", "column labels")):
        index = pd.Index(da[dim].values)
        if not index.is_unique:
            dup = index[index.duplicated()][0]
            dup = dup.item() if isinstance(dup, np.generic) else dup
            raise ValueError(f"{name} has duplicate {what}: {dup!r} appears "
                             f"{int((index == dup).sum())} times (labels must be unique)")


def _first_nonfinite(values, observed, da, name):
    """Refuse an infinite observed entry, naming its row and column."""
    bad = observed & ~np.isfinite(values)
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        r, c = (_plain(da[d].values[k]) for d, k in (("row", i), ("col", j)))
        raise ValueError(f"{name} has {int(bad.sum())} infinite entr"
                         f"{'y' if bad.sum() == 1 else 'ies'} among its observed entries, "
                         f"the first at row {r!r}, column {c!r} "
                         f"(position [{i}, {j}]): {values[i, j]}; observed entries must be "
                         "finite (|x| <= 1.8e308 as float64)")


def _align_mask(mask, like, name):
    """Put a mask DataArray in the row/col order of the data DataArray ``like``.

    Dims with coordinate values are matched by label (every data label must be in the mask);
    dims without them by position.
    """
    if set(mask.dims) == {"row", "col"}:
        original = {"row": "row", "col": "col"}
    else:
        original = dict(zip(("row", "col"), mask.dims))
    labelled = {dim: old in mask.coords for dim, old in original.items()}
    m = _as_row_col(mask, name)
    for dim in ("row", "col"):
        if not labelled[dim]:
            if m.sizes[dim] != like.sizes[dim]:
                raise ValueError(f"{name} has {m.sizes[dim]} {dim}s but the data have "
                                 f"{like.sizes[dim]}")
            m = m.assign_coords({dim: like[dim].values})
            continue
        absent = [v for v in like[dim].values.tolist() if v not in set(m[dim].values.tolist())]
        if absent:
            raise ValueError(f"{name} has no {dim} labelled {absent[0]!r} (a label of the data); "
                             f"{len(absent)} data {dim} label(s) are missing from {name}")
    return m.sel(row=like["row"].values, col=like["col"].values)


def check_mask(mask, shape, *, name="mask"):
    """Return ``mask`` as a boolean array of ``shape`` (True = observed).

    ``shape`` may be the data DataArray itself: a labelled mask DataArray is then matched to it
    by row/col label (not by position), and a mask without labels by position.
    """
    if isinstance(shape, xr.DataArray):
        like, shape = shape, shape.shape
        if isinstance(mask, xr.DataArray):
            mask = _align_mask(mask, like, name)
    m = np.asarray(getattr(mask, "values", mask))
    if m.dtype != bool:
        if not np.isin(m, (0, 1)).all():
            raise TypeError(f"{name} must be boolean (True = observed), got dtype {m.dtype}")
        m = m.astype(bool)
    if m.shape != tuple(shape):
        raise ValueError(f"{name} has shape {m.shape} but the data have shape {tuple(shape)}")
    return m


def check_matrix(X, *, kind="nonnegative", mask=None, name="X", allow_missing=True):
    """Validate a data matrix for a model of the given ``kind``.

    Parameters
    ----------
    X : array-like, xarray.DataArray, scipy.sparse matrix or LongMatrix
        D x N data; NaN marks a missing entry. Sparse input (stored entries = observed) is
        checked by :func:`check_entries` and returned dense.
    kind : {"nonnegative", "binary", "real"}
        What the model needs of the observed entries.
    mask : array-like of bool, optional
        True = observed. Combined with the NaN pattern of ``X`` (an entry is observed only if
        it is not NaN and the mask says so).
    name : str
        The argument's name, used in error messages.
    allow_missing : bool
        If False, any missing entry is an error.

    Returns
    -------
    X : xarray.DataArray
        Float data with dims ``("row", "col")``; unobserved entries are NaN.
    mask : numpy.ndarray of bool
        True where observed.

    Raises
    ------
    TypeError
        Complex data (the imaginary part would be lost).
    ValueError
        Duplicate row or column labels, infinite values (named by row and column), entries
        above ``MAX_ABS_ENTRY`` = 1e150 in magnitude (or whose sum
        of squares overflows), negative values (``kind="nonnegative"``), values other than
        0/1 (``kind="binary"``), an empty matrix, or a row or column with no observed entry.

    Examples
    --------
    >>> import numpy as np
    >>> X, mask = check_matrix(np.array([[1.0, np.nan], [0.5, 2.0]]))
    >>> mask.tolist()
    [[True, False], [True, True]]
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    from bnmfzoo._base.entries import is_sparse_input

    if is_sparse_input(X):  # validated as entries, then made dense (this caller needs it so)
        e = check_entries(X, kind=kind, mask=mask, name=name)
        if not allow_missing and e.n_observed < e.shape[0] * e.shape[1]:
            raise ValueError(f"{name} has {e.shape[0] * e.shape[1] - e.n_observed} missing "
                             "entries; none allowed here")
        return e.to_dataarray(), e.dense_mask()
    da = as_dataarray(X, name=name)
    values = da.values
    if values.size == 0:
        raise ValueError(f"{name} is empty (shape {values.shape})")
    observed = ~np.isnan(values)
    if mask is not None:
        observed &= check_mask(mask, da, name="mask")
    if not allow_missing and not observed.all():
        raise ValueError(f"{name} has {int((~observed).sum())} missing entries; none allowed here")
    _unique_labels(da, name)
    if np.isinf(values).any():
        _first_nonfinite(values, observed, da, name)
    def where(k):  # the k-th observed entry, by label (only computed for an error message)
        rows, cols = np.nonzero(observed)
        return (f"{name}[row={fmt(da['row'].values[rows[k]])}, "
                f"col={fmt(da['col'].values[cols[k]])}]")

    _check_values(values[observed], kind, name, where)
    _check_nonempty(observed.sum(axis=1), da["row"].values, name, "row")
    _check_nonempty(observed.sum(axis=0), da["col"].values, name, "column")
    if mask is not None and not observed.all():
        da = da.where(observed)
    return da, observed


def _check_values(obs_values, kind, name, where=None):
    """Finite, bounded, and of ``kind``: the checks on the observed values of every input.

    ``where(k)``, when given, names the position of the ``k``-th value (for the messages).
    """
    if not np.isfinite(obs_values).all():
        what = "NaN" if np.isnan(obs_values).any() else "infinite"
        raise ValueError(f"{name} has {what} entries among its observed (stored) entries; "
                         "observed entries must be finite (a sparse or long-format X lists "
                         "the observed entries only: drop the missing ones)")
    largest = float(np.abs(obs_values).max()) if obs_values.size else 0.0
    if largest > MAX_ABS_ENTRY or not np.isfinite(obs_values @ obs_values):
        from bnmfzoo._base.outliers import outlier_advice

        median = float(np.median(np.abs(obs_values)))
        n_big = int((np.abs(obs_values) > MAX_ABS_ENTRY).sum())
        at = f" at {where(int(np.argmax(np.abs(obs_values))))}" if where is not None else ""
        raise ValueError(
            f"{name} has an entry of magnitude {largest:.4g}{at} ({n_big} above "
            f"{MAX_ABS_ENTRY:.0e}; median magnitude {median:.4g}); entries must satisfy "
            f"|x| <= {MAX_ABS_ENTRY:.0e} and sum(x^2) must be finite in float64 (else the "
            f"samplers' squared residuals overflow). If they are errors, "
            f"{outlier_advice(name)}; if the whole matrix is on a huge scale, rescale {name}: "
            "multiply it by a power of ten that brings its median near 1"
        )
    if kind == "nonnegative" and (obs_values < 0).any():
        bad = int((obs_values < 0).sum())
        raise ValueError(
            f"Negative values in data passed to {name}: {bad} negative entries "
            f"(min {obs_values.min():.4g}); non-negative matrix factorization needs {name} >= 0"
        )
    if kind == "binary" and not np.isin(obs_values, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be binary (0/1, NaN for missing) for a Bernoulli model")


def _check_nonempty(counts, labels, name, what, note=""):
    """Refuse rows / columns with no observed entry (``counts`` per row or column)."""
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        first = labels[empty[0]]
        first = first.item() if isinstance(first, np.generic) else first
        raise ValueError(
            f"{name} has {empty.size} {what}(s) with no observed entry "
            f"(first: {first!r}); drop them first{note}"
        )


def check_entries(X, *, kind="nonnegative", mask=None, name="X"):
    """Validate data and return its observed entries as a ``LongMatrix``.

    The sparse sibling of :func:`check_matrix`, with the same checks on the observed values
    and the same refusal of empty rows and columns, in O(observed + D + N) memory for sparse
    input: a ``LongMatrix`` (see :func:`bnmfzoo.long_format`) or a ``scipy.sparse`` matrix,
    whose **stored entries are the observed ones, explicit zeros included** (a stored NaN is
    an error). Beware that ``scipy.sparse.csr_array(dense)`` stores no zeros: they become
    missing entries (for binary data with only ones stored, a warning says so). Dense input
    goes through :func:`check_matrix` first (NaN and ``mask`` mark the missing entries).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> e = check_entries(sp.csr_array(([0.0, 2.0], ([0, 1], [1, 0])), shape=(2, 2)))
    >>> e.rows.tolist(), e.cols.tolist(), e.values.tolist()
    ([0, 1], [1, 0], [0.0, 2.0])
    """
    from bnmfzoo._base.entries import _finish, as_long, is_sparse_input

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not is_sparse_input(X):
        da, observed = check_matrix(X, kind=kind, mask=mask, name=name)
        rows, cols = np.nonzero(observed)
        return _finish(rows, cols, da.values[rows, cols], da.shape, da["row"].values,
                       da["col"].values, name)
    if mask is not None:
        raise TypeError(f"mask= is not used with a sparse {name}: its stored entries are the "
                        "observed ones (drop the others from it instead)")
    e = as_long(X, name=name)
    if e.n_observed == 0:
        raise ValueError(f"{name} has no observed (stored) entry")
    _check_values(e.values, kind, name)
    if kind == "binary" and e.n_observed and e.values.min() == 1.0:
        import warnings

        warnings.warn(f"every stored entry of the sparse {name} is 1: entries that are not "
                      "stored are missing, not 0 (scipy.sparse drops zeros when built from a "
                      "dense array); store the observed zeros explicitly, or use "
                      "bnmfzoo.long_format", UserWarning, stacklevel=3)
    D, N = e.shape
    note = (" (in sparse input the entries that are not stored are missing, not zero: store "
            "the observed zeros explicitly)")
    _check_nonempty(np.bincount(e.rows, minlength=D), e.row_labels, name, "row", note)
    _check_nonempty(np.bincount(e.cols, minlength=N), e.col_labels, name, "column", note)
    return e


def check_data(X, *, kind="nonnegative", mask=None, name="X"):
    """:func:`check_matrix` for dense input, :func:`check_entries` for sparse input.

    Returns ``(X, mask, entries)``: for dense input the outputs of :func:`check_matrix` and
    ``None``; for sparse input a labelled DataArray and a mask that are
    :class:`~bnmfzoo._base.entries.DenseOnDemand` views (no dense copy until read) and the
    validated :class:`~bnmfzoo._base.entries.LongMatrix`.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> X, mask, entries = check_data(sp.eye(3, format="csr"))
    >>> X.shape, entries.n_observed
    ((3, 3), 3)
    """
    from bnmfzoo._base.entries import DenseOnDemand, is_sparse_input

    if not is_sparse_input(X):
        da, observed = check_matrix(X, kind=kind, mask=mask, name=name)
        return da, observed, None
    e = check_entries(X, kind=kind, mask=mask, name=name)
    da = xr.DataArray(DenseOnDemand(e, "X"), dims=("row", "col"),
                      coords={"row": e.row_labels, "col": e.col_labels})
    return da, DenseOnDemand(e, "mask"), e


def check_rank(rank, shape, *, name="rank", max_rank=None):
    """Check ``1 <= rank <= min(shape)`` (or ``max_rank``) and return it as an int.

    Examples
    --------
    >>> check_rank(3, (10, 5))
    3
    """
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {rank!r}")
    upper = min(shape) if max_rank is None else max_rank
    if not 1 <= rank <= upper:
        raise ValueError(f"{name} must satisfy 1 <= {name} <= {upper} for data of shape "
                         f"{tuple(shape)}, got {rank}")
    return int(rank)


def check_positive(value, *, name):
    """Check that a hyperparameter is a finite positive number (scalar or array)."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return value


def check_factor(value, shape, *, name):
    """Check a factor matrix (A, W, ...) is finite, non-negative and of ``shape``."""
    arr = np.asarray(getattr(value, "values", value), dtype=float)
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    return arr


def _plain(value):
    """``value`` with NumPy scalars (also inside lists, tuples and dicts) as Python scalars."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def fmt(value):
    """``repr`` of ``value`` for an error message, NumPy scalars shown as plain numbers.

    ``np.int64(3)`` prints as ``3`` (not ``np.int64(3)``), also inside lists, tuples and dicts;
    anything else as its ``repr``.

    Examples
    --------
    >>> fmt(np.int64(3)), fmt(np.float64(0.5)), fmt("abc"), fmt((np.int64(2), 1))
    ('3', '0.5', "'abc'", '(2, 1)')
    """
    try:
        return repr(_plain(value))
    except TypeError:  # a list subclass that cannot be rebuilt from an iterable
        return repr(value)


def check_int(value, *, name, minimum=1, allow_none=False):
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

    ``bool``, floats (even ``3.0``), strings and ``None`` (unless ``allow_none``) are a
    ``TypeError``; an integer below ``minimum`` a ``ValueError``; both name the argument.

    Examples
    --------
    >>> check_int(np.int64(3), name="draws")
    3
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}"
                        f"{' or None' if allow_none else ''}, got {fmt(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {fmt(value)}")
    return int(value)


def check_number(value, *, name, minimum=None, strict=True, maximum=None):
    """Return ``value`` as a finite ``float`` (optionally ``> minimum``, ``<= maximum``).

    ``strict=False`` makes the lower bound ``>= minimum``.

    Examples
    --------
    >>> check_number(np.float32(0.5), name="tol", minimum=0.0)
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {fmt(value)}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {fmt(value)}")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {fmt(value)}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {fmt(value)}")
    return v


def check_seed(random_seed, *, name="random_seed"):
    """Check a seed: ``None``, an integer >= 0, a ``numpy.random.Generator`` or ``SeedSequence``.

    Returns it unchanged (NumPy integers as ``int``).

    Examples
    --------
    >>> check_seed(np.int64(7))
    7
    """
    if random_seed is None or isinstance(random_seed,
                                         (np.random.Generator, np.random.SeedSequence)):
        return random_seed
    if isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral):
        raise TypeError(f"{name} must be None, a non-negative integer or a numpy Generator, "
                        f"got {fmt(random_seed)}")
    if random_seed < 0:
        raise ValueError(f"{name} must be a non-negative integer (or None, or a numpy "
                         f"Generator), got {fmt(random_seed)}")
    return int(random_seed)
