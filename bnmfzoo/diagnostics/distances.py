"""Distances between factorizations that ignore the permutation and scale of the factors.

NMF is identified only up to a monomial matrix Q (a permutation times a positive diagonal):
``X = (A Q)(Q^-1 W)``. The distances here compare two basis matrices ``A1, A2`` (D x R) on those
equivalence classes (Masood, Pan & Doshi-Velez 2016; Masood & Doshi-Velez 2016):

* scale is removed by normalising each column (unit l1 or unit l2);
* permutation is removed by an optimal matching of columns (Hungarian algorithm, scipy
  :func:`~scipy.optimize.linear_sum_assignment`, or an exact bottleneck assignment).

The numeric core works on stacks of pairs (``(P, D, R)`` against ``(P, D, R)``) so that
:func:`bnmfzoo.diagnostics.pairwise_distances` computes all pairs of a sample set with the same
code and the same tie-breaking as the scalar functions below.
"""

import itertools

import numba
import numpy as np
import xarray as xr
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from bnmfzoo._base.validation import fmt

#: R up to which the optimal matching is found by enumerating all R! permutations (numba);
#: above it scipy's Hungarian solver (or a bisection for the bottleneck) runs pair by pair.
_MAX_ENUM_RANK = 5

MATCHINGS = ("hungarian", "bottleneck")
REDUCTIONS = ("max", "sum", "mean")
NORMS = ("l1", "l2")


# --------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------


def as_factor_array(value, *, name="A", factor_axis=-1, min_ndim=2, max_ndim=2):
    """Return a factor matrix (or stack) as a float array with the factor axis last.

    A DataArray with a ``factor`` (or ``factor_row``/``factor_col``) dim has that dim moved last;
    other inputs use ``factor_axis``. Entries must be finite and non-negative.
    """
    if isinstance(value, xr.DataArray):
        fdims = [d for d in value.dims if d in ("factor", "factor_row", "factor_col")]
        if fdims:
            value = value.transpose(..., fdims[0])
            factor_axis = -1
        value = value.values
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    if not min_ndim <= arr.ndim <= max_ndim:
        raise ValueError(
            f"{name} must have {min_ndim}" + (f" to {max_ndim}" if max_ndim > min_ndim else "")
            + f" dimensions, got shape {arr.shape}"
        )
    if factor_axis not in (-1, arr.ndim - 1):
        arr = np.moveaxis(arr, factor_axis, -1)
    if arr.shape[-1] < 1 or arr.shape[-2] < 1:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has non-finite entries")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative (min {arr.min():.4g})")
    return arr


def _check_pair(A1, A2, names=("A1", "A2")):
    a1 = as_factor_array(A1, name=names[0])
    a2 = as_factor_array(A2, name=names[1])
    if a1.shape != a2.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same shape (D x R), "
            f"got {a1.shape} and {a2.shape}"
        )
    return a1, a2


def _check_option(value, options, name):
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {fmt(value)}")
    return value


# --------------------------------------------------------------------------------------------
# numeric core (numpy only; stacks of matrices, factor axis last)
# --------------------------------------------------------------------------------------------


def normalize_columns(A, norm="l1"):
    """Scale each column (last-but-one axis summed) to unit ``norm``; zero columns stay zero.

    Parameters
    ----------
    A : numpy.ndarray
        ``(..., D, R)`` non-negative array.
    norm : {"l1", "l2"}
        Column norm to fix at 1.

    Returns
    -------
    numpy.ndarray
        Same shape as ``A``.

    Examples
    --------
    >>> import numpy as np
    >>> normalize_columns(np.array([[1.0, 0.0], [3.0, 0.0]])).tolist()
    [[0.25, 0.0], [0.75, 0.0]]
    """
    _check_option(norm, NORMS, "norm")
    A = np.asarray(A, dtype=float)
    s = np.abs(A).sum(axis=-2, keepdims=True) if norm == "l1" else np.sqrt(
        (A * A).sum(axis=-2, keepdims=True)
    )
    return np.divide(A, s, out=np.zeros_like(A), where=s > 0)


def angle_cost(A1, A2):
    """Angles (radians) between the columns of ``A1`` and ``A2``: ``C[..., i, j]``.

    Zero columns have cosine 0 with everything (90 degrees), as in Masood et al. (2016).
    """
    n1 = normalize_columns(A1, "l2")[..., :, :, None]
    n2 = normalize_columns(A2, "l2")[..., :, None, :]
    # 2 atan2(|u - v|, |u + v|): accurate near 0 (arccos of a dot product loses ~1e-8 rad)
    diff = np.sqrt(((n1 - n2) ** 2).sum(axis=-3))
    summ = np.sqrt(((n1 + n2) ** 2).sum(axis=-3))
    return 2.0 * np.arctan2(diff, summ)


def l1_cost(A1, A2):
    """l1 distances between unit-l1 columns of ``A1`` and ``A2``: ``C[..., i, j]`` in [0, 2]."""
    n1 = normalize_columns(A1, "l1")
    n2 = normalize_columns(A2, "l1")
    return np.abs(n1[..., :, :, None] - n2[..., :, None, :]).sum(axis=-3)


def sqeuclidean_cost(A1, A2):
    """Squared Euclidean distances between the columns of ``A1`` and ``A2``."""
    sq1 = (A1 * A1).sum(axis=-2)
    sq2 = (A2 * A2).sum(axis=-2)
    cross = np.einsum("...di,...dj->...ij", A1, A2)
    return np.maximum(sq1[..., :, None] + sq2[..., None, :] - 2.0 * cross, 0.0)


_PERMS = {}


def _permutations(R):
    if R not in _PERMS:
        _PERMS[R] = np.array(list(itertools.permutations(range(R))), dtype=np.intp)
    return _PERMS[R]


def match(cost, matching="hungarian", *, tiebreak=None):
    """Optimal column matching for a stack of cost matrices.

    Parameters
    ----------
    cost : numpy.ndarray
        ``(..., R, R)``; ``cost[..., i, j]`` is the cost of matching column ``i`` of the first
        matrix with column ``j`` of the second.
    matching : {"hungarian", "bottleneck"}
        ``"hungarian"`` minimises the summed cost (Kuhn-Munkres); ``"bottleneck"`` minimises
        the largest matched cost (exact).
    tiebreak : numpy.ndarray, optional
        ``(..., R, R)`` secondary cost whose matched sum decides between permutations that tie
        (within rounding) on the primary objective. Default: the largest matched cost for
        ``"hungarian"`` and the summed cost for ``"bottleneck"``. Deterministic tie-breaking
        keeps distances symmetric and invariant to relabelling on degenerate inputs; it is
        applied for ``R <= 5`` (exhaustive search), above that scipy's choice is kept.

    Returns
    -------
    numpy.ndarray of int
        ``(..., R)`` permutation ``perm`` with column ``i`` matched to column ``perm[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> match(np.array([[5.0, 1.0], [1.0, 5.0]])).tolist()
    [1, 0]
    """
    _check_option(matching, MATCHINGS, "matching")
    cost = np.asarray(cost, dtype=float)
    lead = cost.shape[:-2]
    R = cost.shape[-1]
    flat = cost.reshape(-1, R, R)
    tb = None if tiebreak is None else np.broadcast_to(tiebreak, cost.shape).reshape(-1, R, R)
    out = np.empty((flat.shape[0], R), dtype=np.intp)
    if R <= _MAX_ENUM_RANK:
        use_tb = tb is not None
        _enum_match(
            np.ascontiguousarray(flat),
            np.ascontiguousarray(tb) if use_tb else flat,
            use_tb,
            _permutations(R),
            matching == "bottleneck",
            out,
        )
    else:
        for k, c in enumerate(flat):
            out[k] = _bottleneck(c) if matching == "bottleneck" else linear_sum_assignment(c)[1]
    return out.reshape(*lead, R)


@numba.njit(cache=True)
def _enum_match(cost, tb, use_tb, perms, bottleneck, out):  # pragma: no cover - compiled
    """Exhaustive matching: best primary objective, ties (within rounding) by the secondary."""
    n_pairs, R = cost.shape[0], cost.shape[1]
    K = perms.shape[0]
    prim = np.empty(K)
    for p in range(n_pairs):
        lo = np.inf
        for k in range(K):
            total = 0.0
            worst = 0.0
            for i in range(R):
                c = cost[p, i, perms[k, i]]
                total += c
                if c > worst:
                    worst = c
            prim[k] = worst if bottleneck else total
            if prim[k] < lo:
                lo = prim[k]
        tol = 1e-10 * R * max(1.0, abs(lo))
        best_sec = np.inf
        best = 0
        for k in range(K):
            if prim[k] <= lo + tol:
                sec = 0.0
                for i in range(R):
                    c = tb[p, i, perms[k, i]] if use_tb else cost[p, i, perms[k, i]]
                    if use_tb or bottleneck:
                        sec += c
                    elif c > sec:
                        sec = c
                if sec < best_sec:
                    best_sec = sec
                    best = k
        for i in range(R):
            out[p, i] = perms[best, i]


def _bottleneck(cost):
    """Exact bottleneck assignment: smallest threshold admitting a perfect matching."""
    R = cost.shape[0]
    values = np.unique(cost)
    lo, hi = 0, values.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        graph = csr_matrix(cost <= values[mid])
        if (maximum_bipartite_matching(graph, perm_type="column") >= 0).all():
            hi = mid
        else:
            lo = mid + 1
    # among matchings under the threshold, take the one with the smallest sum
    big = cost.max() * R + 1.0
    return linear_sum_assignment(np.where(cost <= values[lo], cost, big))[1]


def matched_costs(cost, matching="hungarian", *, tiebreak=None):
    """Costs of the matched pairs ``(..., R)`` after :func:`match`, and the permutation."""
    perm = match(cost, matching, tiebreak=tiebreak)
    return np.take_along_axis(cost, perm[..., :, None], axis=-1)[..., 0], perm


def _reduce(values, reduce):
    if reduce == "max":
        return values.max(-1)
    if reduce == "sum":
        return values.sum(-1)
    return values.mean(-1)


def l1_batch(A1, A2, *, matching="hungarian", reduce="max"):
    """Minimum-matching l1 distance for stacks of pairs ``(..., D, R)``; see :func:`l1_distance`."""
    values, _ = matched_costs(l1_cost(A1, A2), matching)
    return _reduce(values, reduce)


def angle_batch(A1, A2, *, reduce="max"):
    """Maximum matched angle (degrees) for stacks of pairs; see :func:`angle_distance`."""
    values, _ = matched_costs(angle_cost(A1, A2), "hungarian")
    return np.degrees(_reduce(values, reduce))


def factor_weights(A, W):
    """Share of the total reconstructed mass carried by each factor, ``(..., R)``.

    After rescaling A to be column-stochastic (``W <- diag(colsum A) W``) the row sums of W,
    normalised to 1 (Masood & Doshi-Velez 2016, weighted angular distance):
    ``w_r = |A_r|_1 |W_r|_1 / sum_s |A_s|_1 |W_s|_1``.
    """
    mass = A.sum(axis=-2) * W.sum(axis=-1)
    total = mass.sum(-1, keepdims=True)
    R = mass.shape[-1]
    return np.divide(mass, total, out=np.full_like(mass, 1.0 / R), where=total > 0)


def wad_batch(A1, A2, W1, W2):
    """Weighted angular distance (degrees) for stacks; see :func:`weighted_angle_distance`."""
    cost = angle_cost(A1, A2)
    w1 = factor_weights(A1, W1)
    w2 = factor_weights(A2, W2)
    weighted = cost * 0.5 * (w1[..., :, None] + w2[..., None, :])
    _, perm = matched_costs(cost, "hungarian", tiebreak=weighted)
    return np.degrees(np.take_along_axis(weighted, perm[..., :, None], axis=-1)[..., 0].sum(-1))


# --------------------------------------------------------------------------------------------
# public distances
# --------------------------------------------------------------------------------------------


def l1_distance(A1, A2, *, matching="hungarian", reduce="max"):
    """Minimum-matching l1 distance between two bases (Masood, Pan & Doshi-Velez 2016, eq. 2).

    Columns are scaled to unit l1 norm, matched one-to-one, and the distance is the *induced*
    matrix 1-norm of the difference, i.e. the largest l1 distance between matched columns:
    ``d(A1, A2) = min_P max_r |A1_r - (A2 P)_r|_1``. This is the reading that reproduces the
    paper's tables (0.667 between the two exact Laurberg factorizations, 1.0 between the ends
    of the continuum); it lies in [0, 2] and is invariant to permuting and rescaling columns.

    Parameters
    ----------
    A1, A2 : array-like or xarray.DataArray
        Non-negative D x R bases (a DataArray's ``factor`` dim is taken as the columns).
    matching : {"hungarian", "bottleneck"}
        ``"hungarian"`` (default, as in the paper) matches columns by minimising the summed l1
        cost; ``"bottleneck"`` minimises the largest matched cost, which is the exact minimiser
        of the induced norm (it never exceeds the Hungarian value; both agree on the paper's
        data).
    reduce : {"max", "sum", "mean"}
        How matched column distances are combined: ``"max"`` (induced norm, default),
        ``"sum"`` (literal eq. 1 with an l1 ground metric; a metric on the equivalence
        classes) or ``"mean"``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    >>> l1_distance(A, 3.0 * A[:, ::-1])
    0.0
    >>> round(l1_distance(A, np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])), 3)
    1.0
    """
    _check_option(matching, MATCHINGS, "matching")
    _check_option(reduce, REDUCTIONS, "reduce")
    a1, a2 = _check_pair(A1, A2)
    return float(l1_batch(a1, a2, matching=matching, reduce=reduce))


def angle_distance(A1, A2, *, reduce="max"):
    """Maximum angle (degrees) between matched columns of two bases (Masood et al. 2016).

    Columns are matched by the Hungarian algorithm on the angle matrix (minimising the mean
    angle, eq. 3); the distance is the largest matched angle. Zero columns count as 90 degrees
    away from everything. The value lies in [0, 90] and is invariant to permuting and rescaling
    columns.

    Parameters
    ----------
    A1, A2 : array-like or xarray.DataArray
        Non-negative D x R bases.
    reduce : {"max", "sum", "mean"}
        Combination of the matched angles; ``"max"`` is the paper's distance.

    Returns
    -------
    float
        Degrees.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(angle_distance(A, np.array([[1.0, 0.0], [1.0, 1.0]])), 6)
    45.0
    """
    _check_option(reduce, REDUCTIONS, "reduce")
    a1, a2 = _check_pair(A1, A2)
    return float(angle_batch(a1, a2, reduce=reduce))


def weighted_angle_distance(A1, A2, W1, W2):
    """Weighted angular distance (WAD, degrees) of Masood & Doshi-Velez (2016, RRT paper).

    Columns of ``A1`` and ``A2`` are matched by the Hungarian algorithm on their angles (as in
    :func:`angle_distance`); the matched angles ``alpha`` are then averaged with weights equal
    to each factor's share of the reconstructed mass: after rescaling A to be column-stochastic
    (``W <- diag(colsum A) W``), the row sums of W normalised to one, ``w`` and (permuted)
    ``w'``. ``WAD = alpha . (w + w') / 2``. A factor that explains little of the data counts
    little. The value lies in [0, 90] and is invariant to permutation and scaling.

    Parameters
    ----------
    A1, A2 : array-like or xarray.DataArray
        Non-negative D x R bases.
    W1, W2 : array-like or xarray.DataArray
        Their non-negative R x N weights (a DataArray's ``factor`` dim is taken as the rows).

    Returns
    -------
    float
        Degrees.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> B = np.array([[1.0, 1.0], [0.0, 1.0]])  # factor 2 moved by 45 degrees
    >>> W = np.array([[3.0, 3.0], [1.0, 1.0]])
    >>> # factor-2 mass shares: 1/4 in (A, W), 4/10 in (B, W): 45 * (0.25 + 0.4) / 2
    >>> round(weighted_angle_distance(A, B, W, W), 6)
    14.625
    """
    a1, a2 = _check_pair(A1, A2)
    w1 = _weights_like(W1, a1, "W1")
    w2 = _weights_like(W2, a2, "W2")
    if w1.shape != w2.shape:
        raise ValueError(f"W1 and W2 must have the same shape, got {w1.shape} and {w2.shape}")
    return float(wad_batch(a1, a2, w1, w2))


def _weights_like(W, A, name):
    """W as an (R, N) array matching the rank of ``A`` (factor axis first)."""
    if isinstance(W, xr.DataArray) and "factor" in W.dims:
        W = W.transpose("factor", ...)
    w = as_factor_array(W, name=name, factor_axis=0)  # -> (N, R)
    w = np.swapaxes(w, -1, -2)
    if w.shape[0] != A.shape[-1]:
        raise ValueError(f"{name} must have {A.shape[-1]} rows (one per factor), got {w.shape[0]}")
    return w


def frobenius_distance(M1, M2, *, align=False, normalize=None, factor_axis=-1):
    """Frobenius distance ``|M1 - M2|_F`` between two bases or two weight matrices.

    Without options this is the naive baseline of Masood et al. (2016), which depends on the
    labelling and scale of the factors. ``normalize`` removes scale (factor vectors scaled to
    unit norm) and ``align=True`` removes labelling (factors matched by the Hungarian algorithm
    on squared Euclidean distances, which minimises the Frobenius distance exactly); with both
    the distance is invariant to permuting and rescaling factors.

    Parameters
    ----------
    M1, M2 : array-like or xarray.DataArray
        Non-negative matrices of equal shape. For a basis A (D x R) the factors are columns;
        for weights W (R x N) pass ``factor_axis=0``. A DataArray's ``factor`` dim overrides
        ``factor_axis``.
    align : bool
        Match factors optimally before taking the difference.
    normalize : {None, "l1", "l2"}
        Scale each factor vector to unit norm first.
    factor_axis : {-1, 0}
        Axis indexing the factors.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> round(frobenius_distance(A, A[:, ::-1]), 4)
    3.1623
    >>> frobenius_distance(A, A[:, ::-1], align=True)
    0.0
    """
    if factor_axis not in (-1, 1, 0):
        raise ValueError(f"factor_axis must be 0 or -1, got {fmt(factor_axis)}")
    if normalize is not None:
        _check_option(normalize, NORMS, "normalize")
    fa = -1 if factor_axis in (-1, 1) else 0
    m1 = as_factor_array(M1, name="M1", factor_axis=fa)
    m2 = as_factor_array(M2, name="M2", factor_axis=fa)
    if m1.shape != m2.shape:
        raise ValueError(f"M1 and M2 must have the same shape, got {m1.shape} and {m2.shape}")
    return float(frobenius_batch(m1, m2, align=align, normalize=normalize))


def frobenius_batch(M1, M2, *, align=False, normalize=None):
    """Frobenius distance for stacks ``(..., D, R)`` (factor axis last)."""
    if normalize is not None:
        M1 = normalize_columns(M1, normalize)
        M2 = normalize_columns(M2, normalize)
    if align:
        values, _ = matched_costs(sqeuclidean_cost(M1, M2), "hungarian")
        return np.sqrt(values.sum(-1))
    return np.sqrt(((M1 - M2) ** 2).sum(axis=(-2, -1)))
