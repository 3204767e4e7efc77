"""Sparse and long-format data: the observed entries of a D x N matrix, never the dense matrix.

A :class:`LongMatrix` holds only the observed entries, as ``(row, col, value)`` triples in
row-major order, with the row and column labels. Memory is O(observed + D + N) instead of the
O(D x N) of a dense array with NaN for the missing entries (a 72,000 x 10,000 matrix with 10
million ratings takes 240 MB here against 5.8 GB dense).

Every model of the Gaussian and Bernoulli families accepts one wherever it accepts ``X``, and
also accepts a ``scipy.sparse`` matrix or array directly. In a ``scipy.sparse`` matrix the
**explicitly stored entries are the observed ones, explicit zeros included**; entries not
stored are missing (not zero). Build a :class:`LongMatrix` with :func:`long_format` from a
pandas DataFrame of ``(row, col, value)`` rows, three arrays, or a ``scipy.sparse`` matrix with
labels.

A model built from sparse input keeps the entries in ``ModelSpec.entries``; its ``X`` and
``mask`` are :class:`DenseOnDemand` views that build the dense matrix only when a method that
needs it (one that is not sparse-aware) reads them.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["LongMatrix", "long_format", "is_sparse_input", "as_long", "DenseOnDemand"]


@dataclass(frozen=True, eq=False)
class LongMatrix:
    """Observed entries of a D x N matrix in long format (row-major, no duplicates).

    Attributes
    ----------
    shape : tuple of int
        ``(D, N)``.
    rows, cols : numpy.ndarray of int64
        Integer position of each entry, sorted by ``(row, col)``.
    values : numpy.ndarray of float64
        The observed values.
    row_labels, col_labels : numpy.ndarray
        Labels of the D rows and N columns (the ``row`` / ``col`` coordinates of results).

    Examples
    --------
    >>> import numpy as np
    >>> m = long_format([0, 1, 1], [1, 0, 1], [5.0, 3.0, 4.0])
    >>> m.shape, m.n_observed
    ((2, 2), 3)
    """

    shape: tuple
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    row_labels: np.ndarray
    col_labels: np.ndarray

    @property
    def n_observed(self):
        """Number of observed entries."""
        return int(self.values.size)

    @cached_property
    def flat_index(self):
        """Row-major flat index ``row * N + col`` of each entry (increasing)."""
        return self.rows * np.int64(self.shape[1]) + self.cols

    @property
    def nbytes(self):
        """Bytes held by the entry arrays."""
        return int(self.rows.nbytes + self.cols.nbytes + self.values.nbytes)

    def to_dense(self, fill=np.nan):
        """The dense D x N array (``fill`` where not observed). O(D x N) memory."""
        out = np.full(self.shape, fill, dtype=float)
        out.ravel()[self.flat_index] = self.values
        return out

    def dense_mask(self):
        """The dense D x N boolean mask (True = observed). O(D x N) memory."""
        out = np.zeros(self.shape, dtype=bool)
        out.ravel()[self.flat_index] = True
        return out

    def to_dataarray(self):
        """Dense ``xarray.DataArray`` (row, col) with NaN where missing, labelled."""
        import xarray as xr

        return xr.DataArray(self.to_dense(), dims=("row", "col"),
                            coords={"row": self.row_labels, "col": self.col_labels})

    def to_scipy(self):
        """``scipy.sparse.csr_array`` of the entries (explicit zeros kept)."""
        return sp.csr_array((self.values, (self.rows, self.cols)), shape=self.shape)

    def to_dataframe(self):
        """Pandas DataFrame with columns ``row``, ``col`` (labels) and ``value``."""
        return pd.DataFrame({"row": self.row_labels[self.rows], "col": self.col_labels[self.cols],
                             "value": self.values})

    def __repr__(self):
        D, N = self.shape
        return (f"LongMatrix({D} rows x {N} cols, {self.n_observed} observed "
                f"({self.n_observed / max(D * N, 1):.3%}))")


def is_sparse_input(X):
    """True for input that :func:`as_long` reads without a dense copy."""
    return isinstance(X, LongMatrix) or sp.issparse(X)


def _positions(keys, labels, name):
    """Integer positions of ``keys`` and the labels (sorted distinct keys when none given)."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {keys.shape}")
    if labels is None:
        codes, uniques = pd.factorize(keys, sort=True, use_na_sentinel=True)
        if (codes < 0).any():
            raise ValueError(f"{name} holds missing labels (NaN/None)")
        return codes.astype(np.int64), np.asarray(uniques)
    index = pd.Index(labels)
    if index.has_duplicates:
        dup = index[index.duplicated()][0]
        raise ValueError(f"{name}_labels must be distinct; {dup!r} appears twice")
    codes = index.get_indexer(keys)
    if (codes < 0).any():
        bad = keys[np.flatnonzero(codes < 0)[0]]
        raise ValueError(f"{name} holds {bad!r}, which is not in {name}_labels "
                         f"({int((codes < 0).sum())} entries with unknown labels)")
    return codes.astype(np.int64), np.asarray(labels)


def _labels(labels, size, name):
    if labels is None:
        return np.arange(size)
    labels = np.asarray(labels)
    if labels.shape != (size,):
        raise ValueError(f"{name}_labels must have length {size}, got shape {labels.shape}")
    if pd.Index(labels).has_duplicates:
        raise ValueError(f"{name}_labels must be distinct")
    return labels


def _from_scipy(S, row_labels, col_labels, name, duplicates="refuse"):
    D, N = S.shape
    coo = S.tocoo(copy=False)
    if D < 1 or N < 1:
        raise ValueError(f"{name} is empty (shape {(D, N)})")
    return _finish(coo.row, coo.col, coo.data, (D, N), _labels(row_labels, D, "row"),
                   _labels(col_labels, N, "col"), name, duplicates)


def _finish(rows, cols, values, shape, row_labels, col_labels, name, duplicates="refuse"):
    """Sort row-major, refuse (or sum) duplicates and non-numeric values, return a LongMatrix.

    ``duplicates="sum"`` adds the values of a cell listed more than once (counts); the default
    refuses them (a value observed twice is ambiguous).
    """
    D, N = shape
    values = np.asarray(values)
    if values.dtype != bool and not np.issubdtype(values.dtype, np.number):
        raise TypeError(f"{name} values must be numbers, got dtype {values.dtype}")
    if np.iscomplexobj(values):
        raise TypeError(f"{name} values must be real, got dtype {values.dtype}")
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    if not rows.size == cols.size == values.size:
        raise ValueError(f"{name}: rows, cols and values must have the same length, got "
                         f"{rows.size}, {cols.size}, {values.size}")
    flat = rows * np.int64(N) + cols
    if flat.size > 1 and not (flat[1:] > flat[:-1]).all():
        order = np.argsort(flat, kind="stable")
        rows, cols, values, flat = rows[order], cols[order], values[order], flat[order]
        dup = np.flatnonzero(flat[1:] == flat[:-1])
        if dup.size and duplicates == "sum":
            flat, first = np.unique(flat, return_index=True)
            values = np.add.reduceat(values, first)
            rows, cols = rows[first], cols[first]
        elif dup.size:
            i, j = int(rows[dup[0]]), int(cols[dup[0]])
            r, c = (v.item() if isinstance(v, np.generic) else v
                    for v in (row_labels[i], col_labels[j]))
            raise ValueError(
                f"{name} has {dup.size} duplicate entries (first: row {r!r}, col "
                f"{c!r}); each cell may be stored once (scipy's COO format would "
                "sum duplicates: call .sum_duplicates() first if that is what you mean)")
    out = LongMatrix(shape=(int(D), int(N)), rows=rows, cols=cols, values=values,
                     row_labels=row_labels, col_labels=col_labels)
    out.__dict__["flat_index"] = flat  # the cached property, already computed
    return out


def long_format(data, cols=None, values=None, *, row_labels=None, col_labels=None, shape=None,
                duplicates="refuse"):
    """Build a :class:`LongMatrix` from long-format ``(row, col, value)`` data.

    Parameters
    ----------
    data : pandas.DataFrame, scipy.sparse matrix or array-like
        A DataFrame with three columns (named ``row``, ``col``, ``value``, else taken in that
        order); a ``scipy.sparse`` matrix or array (its stored entries are the observed ones,
        explicit zeros included); or the array of row keys, with ``cols`` and ``values``.
    cols, values : array-like, optional
        Column keys and values, when ``data`` holds the row keys.
    row_labels, col_labels : array-like, optional
        The labels of all rows / columns, in order. With them, the row and column keys are
        looked up among the labels (pass ``row_labels=range(D)`` for integer positions). Without
        them, the labels are the sorted distinct keys (for a ``scipy.sparse`` matrix, the
        positions 0..D-1).
    shape : tuple of int, optional
        ``(D, N)``, only with integer positions and no labels: the labels are then
        ``0..D-1`` and ``0..N-1`` (rows or columns without entries are allowed here and
        rejected later by the models, which need an entry in every row and column).
    duplicates : {"refuse", "sum"}
        A ``(row, col)`` pair listed more than once: refused (the default: two observations
        of one cell are ambiguous for a Gaussian or Bernoulli model), or summed
        (``"sum"``: counts, where a cell's count is the sum of its listed counts, as in
        ``scipy.sparse``; the command line reads count data so).

    Returns
    -------
    LongMatrix

    Raises
    ------
    ValueError
        Duplicate ``(row, col)`` pairs, keys missing from the labels, lengths that differ,
        negative or out-of-range positions with ``shape``.
    TypeError
        Non-numeric values.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"row": ["u1", "u2", "u1"], "col": ["m9", "m9", "m3"],
    ...                    "value": [4.0, 5.0, 1.0]})
    >>> m = long_format(df)
    >>> m.row_labels.tolist(), m.col_labels.tolist(), m.values.tolist()
    (['u1', 'u2'], ['m3', 'm9'], [1.0, 4.0, 5.0])
    """
    name = "X"
    if duplicates not in ("refuse", "sum"):
        raise ValueError(f"duplicates must be 'refuse' or 'sum', got {duplicates!r}")
    if sp.issparse(data):
        if cols is not None or values is not None or shape is not None:
            raise TypeError("long_format: give a scipy.sparse matrix alone (with optional "
                            "row_labels / col_labels)")
        return _from_scipy(data, row_labels, col_labels, name, duplicates)
    if isinstance(data, pd.DataFrame):
        if cols is not None or values is not None:
            raise TypeError("long_format: give a DataFrame alone, or three arrays")
        if data.shape[1] != 3:
            raise ValueError(f"long_format: the DataFrame must have 3 columns (row, col, value), "
                             f"got {data.shape[1]}: {list(data.columns)}")
        named = {"row", "col", "value"} <= set(data.columns)
        keys = ("row", "col", "value") if named else tuple(data.columns)
        data, cols, values = (data[k].to_numpy() for k in keys)
    if cols is None or values is None:
        raise TypeError("long_format needs a DataFrame, a scipy.sparse matrix, or three arrays "
                        "(rows, cols, values)")
    rows, cols, values = np.asarray(data), np.asarray(cols), np.asarray(values)
    for arg, arr in (("rows", rows), ("cols", cols), ("values", values)):
        if arr.ndim != 1:
            raise ValueError(f"long_format: {arg} must be 1-dimensional, got shape {arr.shape}")
    if shape is not None:
        if row_labels is not None or col_labels is not None:
            raise TypeError("long_format: give shape= or row_labels/col_labels, not both")
        D, N = (int(s) for s in shape)
        if D < 1 or N < 1:
            raise ValueError(f"long_format: shape must be positive, got {tuple(shape)}")
        for arg, arr, size in (("rows", rows, D), ("cols", cols, N)):
            if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0
                             or arr.max() >= size):
                raise ValueError(f"long_format: with shape={tuple(shape)}, {arg} must be integer "
                                 f"positions in [0, {size})")
        return _finish(rows, cols, values, (D, N), np.arange(D), np.arange(N), name,
                       duplicates)
    if rows.size == 0:
        raise ValueError("long_format: no entries")
    r, rl = _positions(rows, row_labels, "row")
    c, cl = _positions(cols, col_labels, "col")
    return _finish(r, c, values, (rl.size, cl.size), rl, cl, name, duplicates)


def as_long(X, *, name="X"):
    """Return sparse input ``X`` (``LongMatrix`` or ``scipy.sparse``) as a :class:`LongMatrix`."""
    if isinstance(X, LongMatrix):
        return X
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional, got shape {X.shape}")
        return _from_scipy(X, None, None, name)
    raise TypeError(f"{name}: expected a LongMatrix or a scipy.sparse matrix, "
                    f"got {type(X).__name__}")


class DenseOnDemand(np.lib.mixins.NDArrayOperatorsMixin):
    """A D x N array that exists only as a :class:`LongMatrix` until something reads it densely.

    ``what="X"`` is the data with NaN where missing, ``what="mask"`` the observed mask. Shape,
    dtype and repr need no dense copy; ``numpy.asarray``, NumPy functions, operators, indexing
    and any other ndarray attribute build the dense array (O(D x N), not cached), so code that is
    not sparse-aware still works on small data. ``xarray.DataArray`` wraps it without copying.
    """

    def __init__(self, entries, what):
        self.entries = entries
        self.what = what

    shape = property(lambda self: self.entries.shape)
    ndim = 2
    size = property(lambda self: self.shape[0] * self.shape[1])
    dtype = property(lambda self: np.dtype(bool if self.what == "mask" else float))

    def dense(self):
        """The dense array."""
        e = self.entries
        return e.dense_mask() if self.what == "mask" else e.to_dense()

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    @staticmethod
    def _densify(obj):
        if isinstance(obj, DenseOnDemand):
            return obj.dense()
        if isinstance(obj, (list, tuple)):
            return type(obj)(DenseOnDemand._densify(o) for o in obj)
        return obj

    def __array_function__(self, func, types, args, kwargs):
        return func(*self._densify(args), **{k: self._densify(v) for k, v in kwargs.items()})

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*self._densify(inputs),
                                      **{k: self._densify(v) for k, v in kwargs.items()})

    def __getitem__(self, key):
        return self.dense()[self._densify(key)]

    def __len__(self):
        return self.shape[0]

    def __getattr__(self, attr):
        # only ndarray attributes densify (xarray probes e.g. ``name``, which must not)
        if attr.startswith("__") or attr in ("entries", "what") or not hasattr(np.ndarray, attr):
            raise AttributeError(attr)
        return getattr(self.dense(), attr)

    def __repr__(self):
        return f"DenseOnDemand({self.what} of {self.entries!r})"

    def _repr_inline_(self, max_width):
        return repr(self)[:max_width]
