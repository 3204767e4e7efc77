"""Train/test masks over the observed entries: hold-out, k-fold cross-validation, held-out columns.

All masks are boolean numpy arrays of the data's shape with True = in that set. Only observed
entries (non-NaN, or True in a given mask) are ever placed in a test set.
"""

import numpy as np

from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import fmt


def _observed(X_or_mask, name="X_or_mask"):
    """Return the boolean observed pattern of a data matrix or a mask."""
    values = np.asarray(getattr(X_or_mask, "values", X_or_mask))
    if values.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {values.shape}")
    if values.dtype == bool:
        observed = values.copy()
    elif np.issubdtype(values.dtype, np.number):
        observed = ~np.isnan(values.astype(float))
    else:
        raise TypeError(f"{name} must be a numeric matrix (NaN = missing) or a boolean mask")
    if not observed.any():
        raise ValueError(f"{name} has no observed entries")
    return observed


def _protected(observed, rng):
    """One random observed entry per non-empty row and column, kept out of every test set.

    Returns a boolean mask covering every row and column that has an observed entry (at most
    D + N entries; a column already covered by a row's choice is not given a second one).
    """
    D, N = observed.shape
    keep = np.zeros_like(observed)
    for i in range(D):
        cols = np.flatnonzero(observed[i])
        if cols.size:
            keep[i, rng.choice(cols)] = True
    for j in np.flatnonzero(observed.any(axis=0) & ~keep.any(axis=0)):
        keep[rng.choice(np.flatnonzero(observed[:, j])), j] = True
    return keep


def _check_fraction(fraction):
    if not np.isfinite(fraction) or not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fmt(fraction)}")
    return float(fraction)


def holdout_mask(X_or_mask, fraction=0.1, *, ensure_nonempty=True, random_seed=None):
    """Split the observed entries into a training and a test set.

    ``round(fraction * n_observed)`` observed entries are drawn uniformly without replacement
    as the test set. With ``ensure_nonempty`` (default) no row or column of the training set
    is left empty, by construction rather than by retrying: one random observed entry of every
    row and of every column not yet covered is reserved for training first, and the test
    entries are drawn from the rest (so rows/columns with a single observation never enter
    the test set).

    Parameters
    ----------
    X_or_mask : array-like or xarray.DataArray
        Data with NaN for missing entries, or a boolean mask (True = observed).
    fraction : float, default 0.1
        Fraction of the observed entries to hold out, in (0, 1).
    ensure_nonempty : bool, default True
        Keep at least one training entry in every row and column that has an observation.
    random_seed : int or numpy.random.Generator, optional
        Seed.

    Returns
    -------
    train, test : numpy.ndarray of bool
        Disjoint masks whose union is the observed pattern.

    Raises
    ------
    ValueError
        ``fraction`` outside (0, 1), no observed entries, or more test entries requested than
        can be held out while keeping every row and column non-empty.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.datasets import holdout_mask
    >>> train, test = holdout_mask(np.ones((10, 8)), 0.25, random_seed=0)
    >>> int(test.sum()), bool((train & test).any())
    (20, False)
    """
    observed = _observed(X_or_mask)
    fraction = _check_fraction(fraction)
    rng = as_generator(random_seed)
    n_test = int(round(fraction * observed.sum()))
    if n_test < 1:
        raise ValueError(
            f"fraction={fraction} of {int(observed.sum())} observed entries holds out nothing"
        )
    candidates = observed & ~_protected(observed, rng) if ensure_nonempty else observed
    flat = np.flatnonzero(candidates)
    if n_test > flat.size:
        raise ValueError(
            f"cannot hold out {n_test} entries while keeping every row and column non-empty "
            f"(only {flat.size} can be held out); lower fraction or pass ensure_nonempty=False"
        )
    test = np.zeros(observed.shape, dtype=bool)
    test.flat[rng.choice(flat, size=n_test, replace=False)] = True
    return observed & ~test, test


def _stratified_folds(observed, candidates, k, rng):
    """Assign each candidate entry a fold, dealing each stratum's entries round-robin."""
    D, N = observed.shape
    by_row = D < N  # Brouwer: stratify by row index if I < J, otherwise by column index
    rows, cols = np.nonzero(candidates)
    strata = rows if by_row else cols
    order = rng.permutation(rows.size)
    order = order[np.argsort(strata[order], kind="stable")]  # shuffled within each stratum
    sorted_strata = strata[order]
    starts = np.searchsorted(sorted_strata, sorted_strata, side="left")
    rank_in_stratum = np.arange(order.size) - starts
    offsets = rng.integers(0, k, size=(D if by_row else N))
    folds = np.empty(rows.size, dtype=np.int64)
    folds[order] = (rank_in_stratum + offsets[sorted_strata]) % k
    return rows, cols, folds


def _repair(observed, rows, cols, folds, k, rng, max_passes=20):
    """Move entries between folds (in place) until no training set has an empty row/column.

    A training set ``f`` loses row ``i`` when every observed entry of the row is in fold ``f``.
    Such a fold gets one of those entries moved to another fold chosen so that the move empties
    nothing there. Returns True on success.
    """
    D, N = observed.shape
    row_total, col_total = observed.sum(axis=1), observed.sum(axis=0)
    row_count = np.zeros((D, k), dtype=np.int64)
    col_count = np.zeros((N, k), dtype=np.int64)
    np.add.at(row_count, (rows, folds), 1)
    np.add.at(col_count, (cols, folds), 1)
    for _ in range(max_passes):
        bad_rows = np.argwhere((row_count == row_total[:, None]) & (row_total[:, None] > 0))
        bad_cols = np.argwhere((col_count == col_total[:, None]) & (col_total[:, None] > 0))
        if not len(bad_rows) and not len(bad_cols):
            return True
        for axis, bad in ((0, bad_rows), (1, bad_cols)):
            for line, f in bad:
                in_fold = (rows == line) if axis == 0 else (cols == line)
                entries = np.flatnonzero(in_fold & (folds == f))
                if entries.size == 0:  # already repaired in this pass
                    continue
                e = rng.choice(entries)
                i, j = rows[e], cols[e]
                ok = (row_count[i] + 1 < row_total[i]) & (col_count[j] + 1 < col_total[j])
                ok[f] = False
                targets = np.flatnonzero(ok)
                if targets.size == 0:
                    continue
                g = rng.choice(targets)
                folds[e] = g
                row_count[i, f] -= 1
                col_count[j, f] -= 1
                row_count[i, g] += 1
                col_count[j, g] += 1
    return False


def kfold_masks(X_or_mask, k=10, *, ensure_nonempty=True, max_tries=1000, random_seed=None):
    """Split the observed entries into ``k`` folds for cross-validation (Brouwer et al. 2017).

    Following Brouwer's code, folds are stratified by row when D < N and by column otherwise
    (each row/column's entries are shuffled and dealt round-robin over the folds, from a random
    starting fold). Where a training mask would lose a whole row or column, one of its entries
    is moved to another fold that can spare it; if that fails the split is redrawn (up to
    ``max_tries`` times, as Brouwer's code retries). Entries that are the only observation of
    their row or column can never be held out without emptying it; with ``ensure_nonempty``
    they are kept in every training set and belong to no test fold (the folds then partition
    the other observed entries). Without ``ensure_nonempty`` the folds partition all observed
    entries.

    Parameters
    ----------
    X_or_mask : array-like or xarray.DataArray
        Data with NaN for missing entries, or a boolean mask (True = observed).
    k : int, default 10
        Number of folds (>= 2).
    ensure_nonempty : bool, default True
        Make every training set keep an entry in each row and column that has one.
    max_tries : int, default 1000
        Maximum number of redraws.
    random_seed : int or numpy.random.Generator, optional
        Seed.

    Returns
    -------
    list of (train, test)
        ``k`` pairs of boolean masks; the test masks are pairwise disjoint.

    Raises
    ------
    ValueError
        Bad ``k``, no observed entries, or no valid split found in ``max_tries`` draws.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.datasets import kfold_masks
    >>> folds = kfold_masks(np.ones((20, 10)), k=5, random_seed=0)
    >>> sum(int(test.sum()) for _, test in folds)
    200
    """
    observed = _observed(X_or_mask)
    if int(k) != k or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {fmt(k)}")
    k = int(k)
    if int(max_tries) != max_tries or max_tries < 1:
        raise ValueError(f"max_tries must be a positive integer, got {fmt(max_tries)}")
    rng = as_generator(random_seed)
    candidates = observed.copy()
    if ensure_nonempty:
        single_row = observed.sum(axis=1) == 1
        single_col = observed.sum(axis=0) == 1
        candidates &= ~(single_row[:, None] | single_col[None, :])
    if candidates.sum() < k:
        raise ValueError(f"only {int(candidates.sum())} entries can be split into k={k} folds")
    for _ in range(int(max_tries)):
        rows, cols, folds = _stratified_folds(observed, candidates, k, rng)
        if not ensure_nonempty or _repair(observed, rows, cols, folds, k, rng):
            break
    else:
        raise ValueError(
            f"no {k}-fold split keeps every row and column non-empty after {max_tries} tries; "
            "lower k or pass ensure_nonempty=False"
        )
    tests = np.zeros((k,) + observed.shape, dtype=bool)
    tests[folds, rows, cols] = True
    return [(observed & ~tests[f], tests[f].copy()) for f in range(k)]


def holdout_columns(X, fraction=0.1, *, random_seed=None):
    """Hold out whole columns (observations), as Masood & Doshi-Velez (2019) hold out 10 %.

    Parameters
    ----------
    X : array-like or xarray.DataArray
        D x N data (or anything with a 2-D shape).
    fraction : float, default 0.1
        Fraction of the N columns to hold out, in (0, 1); at least one column goes to each side.
    random_seed : int or numpy.random.Generator, optional
        Seed.

    Returns
    -------
    train_cols, test_cols : numpy.ndarray of int
        Sorted, disjoint column indices covering ``range(N)``; use ``X[:, train_cols]`` or
        ``X.isel(col=train_cols)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.datasets import holdout_columns
    >>> train, test = holdout_columns(np.ones((5, 20)), 0.1, random_seed=0)
    >>> len(train), len(test)
    (18, 2)
    """
    shape = np.shape(getattr(X, "values", X))
    if len(shape) != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {shape}")
    fraction = _check_fraction(fraction)
    n = shape[1]
    if n < 2:
        raise ValueError(f"X needs at least 2 columns to hold some out, got {n}")
    n_test = min(max(int(round(fraction * n)), 1), n - 1)
    perm = as_generator(random_seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])
