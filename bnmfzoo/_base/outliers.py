"""Entries far outside the rest of the data: found, named by position, reported with choices.

One wrong entry can decide a Gaussian fit: an entry of 1.37e131 among values with median 3.3
made ``fit_vb`` return a noise precision of 1e-258 and ``A @ W`` of about 300 in every cell
(issue #34). The rule here is deliberately blunt, so that it never fires on real data with
heavy but honest tails:

    an observed entry ``x`` is an **outlier** when ``|x| > OUTLIER_FACTOR * q``, where ``q`` is
    the 90th percentile of the non-zero ``|x|`` of the observed entries and
    ``OUTLIER_FACTOR = 1e6``.

The percentile ignores the top 10 % of the entries, so up to that share of wild values cannot
hide each other; a factor of a million is far beyond the spread of measured quantities
(drug-screen IC50s, counts, intensities span a few decades, and their largest entry is within
1e4 of their 90th percentile on every dataset in ``shared/data``).

Example
-------
>>> import numpy as np
>>> X = np.full((3, 4), 3.3); X[1, 2] = 1.37e131
>>> find_outliers(X)[0]
[(1, 2)]
"""

import warnings

import numpy as np

__all__ = ["OUTLIER_FACTOR", "OutlierWarning", "find_outliers", "warn_outliers",
           "outlier_advice", "inliers"]

#: an entry is an outlier when its magnitude exceeds this many times the 90th percentile of
#: the non-zero magnitudes of the observed entries
OUTLIER_FACTOR = 1e6
#: the percentile the rule compares with
OUTLIER_PERCENTILE = 90.0
#: entries named in a warning (the count is always given)
MAX_NAMED = 5


class OutlierWarning(UserWarning):
    """Some observed entries are far outside the rest (see :mod:`bnmfzoo._base.outliers`)."""


def _reference(values):
    """The 90th percentile of the non-zero magnitudes (0.0 when there is none)."""
    mags = np.abs(values)
    mags = mags[mags > 0]
    if mags.size == 0:
        return 0.0
    return float(np.percentile(mags, OUTLIER_PERCENTILE))


def find_outliers(X, mask=None, *, factor=OUTLIER_FACTOR):
    """Positions of the entries with ``|x| > factor * q90`` (q90: 90th percentile of |x| > 0).

    Parameters
    ----------
    X : array-like
        D x N data (NaN = missing).
    mask : array-like of bool, optional
        True = observed.
    factor : float
        Threshold multiple of the reference (default ``OUTLIER_FACTOR`` = 1e6).

    Returns
    -------
    positions : list of tuple of int
        ``(row index, column index)`` of each outlier, largest magnitude first.
    reference : float
        The 90th percentile of the non-zero observed magnitudes.
    """
    X = np.asarray(X, dtype=float)
    observed = ~np.isnan(X) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(X)
    rows, cols = np.nonzero(observed)
    return _find(X[rows, cols], rows, cols, factor)


def _find(values, rows, cols, factor=OUTLIER_FACTOR):
    ref = _reference(values)
    if ref == 0.0:
        return [], ref
    hit = np.flatnonzero(np.abs(values) > factor * ref)
    hit = hit[np.argsort(-np.abs(values[hit]), kind="stable")]
    return [(int(rows[k]), int(cols[k])) for k in hit], ref


def inliers(values, *, factor=OUTLIER_FACTOR):
    """``values`` without the outliers (a 1-D array; the input itself when there is none).

    Example
    -------
    >>> x = np.append(np.arange(1.0, 21.0), 1e30)   # 90th percentile 19.0: 1e30 is out
    >>> inliers(x).size, inliers(x).max()
    (20, np.float64(20.0))
    """
    values = np.asarray(values, dtype=float)
    ref = _reference(values)
    if ref == 0.0:
        return values
    keep = np.abs(values) <= factor * ref
    return values if keep.all() else values[keep]


def _label(labels, i):
    v = labels[i]
    return v.item() if isinstance(v, np.generic) else v


def outlier_advice(name="X"):
    """The choices offered for outliers (and for entries too large to compute with)."""
    return (f"choices: mark such entries missing (set them to NaN in {name}, or pass mask= "
            f"with False there), cap them (e.g. {name} = np.minimum({name}, cap) with cap a "
            "plausible largest value), or use a likelihood robust to outliers (Student-t noise) "
            f"in your own model; dividing {name} by its largest entry does not help (it pushes "
            "every other entry toward zero)")


def warn_outliers(Xda, mask=None, entries=None, *, name="X", stacklevel=3):
    """Warn (:class:`OutlierWarning`) naming the outliers of ``Xda`` by row and column label.

    ``entries`` (a :class:`~bnmfzoo._base.entries.LongMatrix`) is used instead of the dense
    array when given (sparse input). Returns the positions found (empty: no warning).
    """
    if entries is not None:
        values, rows, cols = entries.values, entries.rows, entries.cols
        row_labels, col_labels = entries.row_labels, entries.col_labels
    else:
        X = np.asarray(Xda.values, dtype=float)
        observed = ~np.isnan(X) if mask is None else np.asarray(mask, dtype=bool)
        rows, cols = np.nonzero(observed)
        values = X[rows, cols]
        row_labels, col_labels = Xda["row"].values, Xda["col"].values
    found, ref = _find(values, rows, cols)
    if not found:
        return found
    shown = ", ".join(
        f"{name}[row={_label(row_labels, i)!r}, col={_label(col_labels, j)!r}] = "
        f"{_value_at(values, rows, cols, i, j):.4g}"
        for i, j in found[:MAX_NAMED])
    more = f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
    warnings.warn(
        f"{name} has {len(found)} entr{'y' if len(found) == 1 else 'ies'} more than "
        f"{OUTLIER_FACTOR:.0e} times the 90th percentile of its non-zero magnitudes "
        f"({ref:.4g}): {shown}{more}. Such an entry decides a Gaussian fit by itself (the "
        f"noise precision collapses and the product A @ W is pulled toward it); "
        f"{outlier_advice(name)}.",
        OutlierWarning, stacklevel=stacklevel)
    return found


def _value_at(values, rows, cols, i, j):
    k = np.flatnonzero((rows == i) & (cols == j))[0]
    return float(values[k])
