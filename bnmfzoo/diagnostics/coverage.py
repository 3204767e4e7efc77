"""Coverage of a set of factorizations: pairwise spreads and (persistent) covering numbers.

Masood, Pan & Doshi-Velez (2016) measure how much of the NMF solution set a sampler explores
with any permutation- and scale-invariant distance d (see :mod:`.distances`):

* maximum pairwise distance (diameter, eq. 4) and mean pairwise distance over all ordered
  pairs including i = j (eq. 5, ``sum d / S^2``);
* the minimum covering number C_eps, the number of closed eps-balls centred on samples needed
  to cover the set, approximated by Chvatal's greedy set cover (each step adds the sample whose
  ball covers most uncovered samples); C_0 = S for distinct samples and C_eps = 1 from the
  diameter on. It is non-increasing in eps (up to the greedy approximation);
* the *persistent* covering number: C_eps over a grid of eps (100 values from 0 to the largest
  diameter by default); values that persist over a long eps interval reveal separate modes.
  The paper (Sec. 3.2) does not formalise "persistent"; we call a run of constant
  C > 1 persistent when it spans at least ``min_fraction`` (5 %) of the eps range.

A sample set can be a list of D x R arrays, a ``(S, D, R)`` array, a DataArray with sample dims
(``chain``/``draw`` or ``particle``) or a DataTree (``posterior`` by default, or the
``particles`` group).
"""

import numba
import numpy as np
import pandas as pd
import xarray as xr

from bnmfzoo._base.validation import fmt
from bnmfzoo.diagnostics import distances as _d

DISTANCES = ("angle", "l1", "wad", "frobenius")
SAMPLE_DIMS = ("chain", "draw", "particle", "sample")


# --------------------------------------------------------------------------------------------
# sample extraction
# --------------------------------------------------------------------------------------------


def _group_dataset(data, group):
    if group is None:
        group = "posterior"
    if group not in data.children:
        raise ValueError(
            f"group={group!r} is not in the DataTree (groups: {sorted(data.children)})"
        )
    return data[group].to_dataset()


def extract_samples(samples, *, var_name="A", group=None, factor_axis=-1):
    """Return ``(S, ..., R)`` float samples (factor axis last) and the chain of each sample.

    Parameters
    ----------
    samples : list of array-like, numpy.ndarray, xarray.DataArray, xarray.Dataset or DataTree
        A list of matrices, a ``(S, D, R)`` stack (``(chain, draw, D, R)`` is flattened), a
        DataArray with sample dims, or a Dataset/DataTree holding ``var_name``.
    var_name : str
        Variable read from a Dataset / DataTree.
    group : str, optional
        DataTree group; ``"posterior"`` by default (use ``"particles"`` for a particle set).
    factor_axis : {-1, 0}
        For plain arrays: position of the factor axis in each matrix (0 for W, R x N).

    Returns
    -------
    values : numpy.ndarray
        ``(S, D, R)``.
    chain : numpy.ndarray of int
        ``(S,)`` chain index of each sample (all 0 without a ``chain`` dim).
    """
    if isinstance(samples, xr.DataTree):
        samples = _group_dataset(samples, group)
    if isinstance(samples, xr.Dataset):
        if var_name not in samples:
            raise ValueError(
                f"var_name={var_name!r} not found (variables: {sorted(samples.data_vars)})"
            )
        samples = samples[var_name]
    if isinstance(samples, xr.DataArray):
        sdims = [d for d in samples.dims if d in SAMPLE_DIMS]
        if not sdims:
            raise ValueError(
                f"samples has no sample dims {SAMPLE_DIMS} (dims {samples.dims}); "
                "pass a (S, D, R) array for a plain stack"
            )
        fdims = [d for d in samples.dims if d in ("factor", "factor_row", "factor_col")]
        other = [d for d in samples.dims if d not in sdims and d not in fdims]
        da = samples.transpose(*sdims, *other, *fdims)
        n_chain = da.sizes.get("chain", 1)
        values = np.asarray(da.values, dtype=float).reshape(-1, *da.shape[len(sdims):])
        chain = np.repeat(np.arange(n_chain), values.shape[0] // n_chain)
        if not fdims and factor_axis == 0:
            values = np.swapaxes(values, -1, -2)
    else:
        if isinstance(samples, (list, tuple)):
            if len(samples) == 0:
                raise ValueError("samples is empty")
            samples = [getattr(s, "values", s) for s in samples]
        try:
            values = np.asarray(samples, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(
                "samples must be a list of matrices, an array, a DataArray or a DataTree, "
                f"got {type(samples).__name__}"
            ) from err
        if values.ndim == 4:
            chain = np.repeat(np.arange(values.shape[0]), values.shape[1])
            values = values.reshape(-1, *values.shape[2:])
        elif values.ndim == 3:
            chain = np.zeros(values.shape[0], dtype=int)
        else:
            raise ValueError(
                f"samples must be (S, D, R) or (chain, draw, D, R), got {values.shape}"
            )
        if factor_axis == 0:
            values = np.swapaxes(values, -1, -2)
    if values.shape[0] < 1:
        raise ValueError("samples is empty")
    if not np.isfinite(values).all():
        raise ValueError(f"samples of {var_name} have non-finite entries")
    return values, chain


def _weights_stack(weights, samples, var_name_w, group, n):
    """The W samples for the weighted angular distance, as (S, R, N)."""
    if weights is None:
        if isinstance(samples, (xr.DataTree, xr.Dataset)):
            weights = samples
        else:
            raise ValueError('distance="wad" needs the weights: pass Ws=(S, R, N) samples')
    w, _ = extract_samples(weights, var_name=var_name_w, group=group, factor_axis=0)
    w = np.swapaxes(w, -1, -2)  # (S, R, N)
    if w.shape[0] != n:
        raise ValueError(f"Ws has {w.shape[0]} samples but the bases have {n}")
    return w


# --------------------------------------------------------------------------------------------
# pairwise distances
# --------------------------------------------------------------------------------------------


def _pair_kernel(distance, matching):
    if callable(distance):
        return None
    _d._check_option(distance, DISTANCES, "distance")
    if distance == "angle":
        return lambda a, b, wa, wb: _d.angle_batch(a, b)
    if distance == "l1":
        return lambda a, b, wa, wb: _d.l1_batch(a, b, matching=matching)
    if distance == "frobenius":
        return lambda a, b, wa, wb: _d.frobenius_batch(a, b, align=True, normalize="l1")
    return lambda a, b, wa, wb: _d.wad_batch(a, b, wa, wb)


def pairwise_distances(
    samples,
    *,
    distance="angle",
    Ws=None,
    var_name="A",
    var_name_w="W",
    group=None,
    n_first=None,
    thin=1,
    matching="hungarian",
):
    """Symmetric matrix of distances between all pairs of a set of factorizations.

    Parameters
    ----------
    samples : list, numpy.ndarray, xarray.DataArray or xarray.DataTree
        The bases (see :func:`extract_samples`); chains are pooled.
    distance : {"angle", "l1", "wad", "frobenius"} or callable
        ``"angle"``: :func:`~bnmfzoo.diagnostics.angle_distance` (degrees);
        ``"l1"``: :func:`~bnmfzoo.diagnostics.l1_distance`; ``"wad"``:
        :func:`~bnmfzoo.diagnostics.weighted_angle_distance` (needs W); ``"frobenius"``:
        aligned Frobenius distance of unit-l1 columns. A callable ``f(A1, A2) -> float`` is
        evaluated pair by pair (slow).
    Ws : optional
        W samples for ``distance="wad"`` when ``samples`` is not a DataTree.
    var_name, var_name_w : str
        Variables read from a DataTree.
    group : str, optional
        DataTree group (``"posterior"`` by default; ``"particles"`` for a particle set).
    n_first : int, optional
        Use only the first ``n_first`` samples (after thinning) of each chain; Masood et al.
        (2016) use the first 1000.
    thin : int
        Keep every ``thin``-th sample of each chain.
    matching : {"hungarian", "bottleneck"}
        Matching for ``distance="l1"``.

    Returns
    -------
    numpy.ndarray
        ``(S, S)`` with zero diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> As = [np.eye(2), np.array([[1.0, 0.0], [1.0, 1.0]]), np.eye(2)[:, ::-1]]
    >>> pairwise_distances(As, distance="angle").round(1).tolist()
    [[0.0, 45.0, 0.0], [45.0, 0.0, 45.0], [0.0, 45.0, 0.0]]
    """
    values, chain, wvals = _select(samples, Ws, var_name, var_name_w, group, n_first, thin,
                                   distance)
    return _pairwise_matrix(values, wvals, distance, matching)


def _select(samples, Ws, var_name, var_name_w, group, n_first, thin, distance):
    values, chain = extract_samples(samples, var_name=var_name, group=group)
    wvals = None
    if distance == "wad":
        wvals = _weights_stack(Ws, samples, var_name_w, group, values.shape[0])
    if not isinstance(thin, (int, np.integer)) or thin < 1:
        raise ValueError(f"thin must be a positive integer, got {fmt(thin)}")
    if n_first is not None and (not isinstance(n_first, (int, np.integer)) or n_first < 1):
        raise ValueError(f"n_first must be a positive integer or None, got {fmt(n_first)}")
    keep = np.zeros(values.shape[0], dtype=bool)
    for c in np.unique(chain):
        idx = np.flatnonzero(chain == c)[::thin]
        keep[idx[:n_first]] = True
    wvals = None if wvals is None else wvals[keep]
    return values[keep], chain[keep], wvals


def _pairwise_matrix(values, wvals, distance, matching):
    S = values.shape[0]
    out = np.zeros((S, S))
    if S < 2:
        return out
    iu, ju = np.triu_indices(S, k=1)
    kernel = _pair_kernel(distance, matching)
    if kernel is None:
        d = np.array([float(distance(values[i], values[j])) for i, j in zip(iu, ju)])
    else:
        D, R = values.shape[-2:]
        chunk = max(1, int(4e6 // max(1, D * R * R)))
        d = np.empty(iu.size)
        for s in range(0, iu.size, chunk):
            i, j = iu[s : s + chunk], ju[s : s + chunk]
            wa = None if wvals is None else wvals[i]
            wb = None if wvals is None else wvals[j]
            d[s : s + chunk] = kernel(values[i], values[j], wa, wb)
    out[iu, ju] = d
    out[ju, iu] = d
    return out


def _as_distance_matrix(samples, distance, kwargs):
    if distance == "precomputed":
        dm = np.asarray(samples, dtype=float)
        if dm.ndim != 2 or dm.shape[0] != dm.shape[1]:
            raise ValueError(f'distance="precomputed" needs a square matrix, got {dm.shape}')
        if not np.isfinite(dm).all() or (dm < 0).any():
            raise ValueError("the distance matrix must be finite and non-negative")
        return dm
    return pairwise_distances(samples, distance=distance, **kwargs)


# --------------------------------------------------------------------------------------------
# covering numbers
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _greedy_cover(dm, eps):  # pragma: no cover - compiled
    """Chvatal greedy cover with closed eps-balls centred on samples; returns the count."""
    S = dm.shape[0]
    counts = np.zeros(S, dtype=np.int64)
    for i in range(S):
        for j in range(S):
            if dm[i, j] <= eps:
                counts[i] += 1
    uncovered = np.ones(S, dtype=np.bool_)
    left = S
    k = 0
    while left > 0:
        best = 0
        for i in range(1, S):
            if counts[i] > counts[best]:
                best = i
        k += 1
        for j in range(S):
            if uncovered[j] and dm[best, j] <= eps:
                uncovered[j] = False
                left -= 1
                for i in range(S):  # j no longer counts for any ball containing it
                    if dm[i, j] <= eps:
                        counts[i] -= 1
    return k


def covering_number(samples, eps, *, distance="angle", **kwargs):
    """Greedy minimum covering number C_eps of a set of factorizations.

    Parameters
    ----------
    samples : list, numpy.ndarray, xarray.DataArray or xarray.DataTree
        The bases (see :func:`pairwise_distances`), or a square distance matrix with
        ``distance="precomputed"``.
    eps : float or array-like of float
        Ball radius (degrees for angle-type distances); closed balls, ``d <= eps``.
    distance : {"angle", "l1", "wad", "frobenius", "precomputed"} or callable
        Distance between two factorizations.
    **kwargs
        Passed to :func:`pairwise_distances` (``Ws``, ``var_name``, ``group``, ``n_first``,
        ``thin``, ``matching``).

    Returns
    -------
    int or numpy.ndarray of int
        C_eps for each ``eps``.

    Examples
    --------
    >>> import numpy as np
    >>> As = [np.eye(2), np.array([[1.0, 0.0], [0.1, 1.0]]), np.array([[1.0, 0.0], [1.0, 1.0]])]
    >>> covering_number(As, 10.0), covering_number(As, 50.0)
    (2, 1)
    """
    dm = _as_distance_matrix(samples, distance, kwargs)
    eps_arr = np.asarray(eps, dtype=float)
    if not np.isfinite(eps_arr).all() or (eps_arr < 0).any():
        raise ValueError(f"eps must be finite and >= 0, got {fmt(eps)}")
    counts = np.array([_greedy_cover(dm, float(e)) for e in eps_arr.ravel()], dtype=int)
    return int(counts[0]) if eps_arr.ndim == 0 else counts.reshape(eps_arr.shape)


def _as_sets(samples):
    if isinstance(samples, dict):
        if not samples:
            raise ValueError("samples is an empty dict")
        return dict(samples), True
    return {"samples": samples}, False


def covering_curve(samples, *, eps=None, n_eps=100, eps_max=None, distance="angle", **kwargs):
    """Covering number C_eps over a grid of eps (the persistence curve of Masood et al. 2016).

    Parameters
    ----------
    samples : sample set or dict of str to sample set
        One set (see :func:`pairwise_distances`) or several labelled sets sharing one eps grid
        (e.g. ``{"gibbs": dt1, "restarts": As}``).
    eps : array-like, optional
        The grid. Default ``linspace(0, eps_max, n_eps)``.
    n_eps : int
        Grid size (the paper uses 100).
    eps_max : float, optional
        Grid end; default the largest diameter among the sets, so every curve reaches 1.
    distance : {"angle", "l1", "wad", "frobenius", "precomputed"} or callable
    **kwargs
        Passed to :func:`pairwise_distances`.

    Returns
    -------
    xarray.DataArray
        ``covering_number`` with dim ``eps`` (and ``set`` first when a dict was given);
        attrs ``distance``.

    Examples
    --------
    >>> import numpy as np
    >>> As = [np.eye(2), np.array([[1.0, 0.0], [0.1, 1.0]]), np.array([[1.0, 0.0], [1.0, 1.0]])]
    >>> covering_curve(As, n_eps=4).values.tolist()
    [3, 2, 2, 1]
    """
    sets, many = _as_sets(samples)
    dms = {k: _as_distance_matrix(v, distance, kwargs) for k, v in sets.items()}
    grid = _eps_grid(dms, eps, n_eps, eps_max)
    curves = np.array([covering_number(dm, grid, distance="precomputed") for dm in dms.values()])
    name = distance if isinstance(distance, str) else getattr(distance, "__name__", "custom")
    da = xr.DataArray(
        curves,
        dims=("set", "eps"),
        coords={"set": list(dms), "eps": grid},
        name="covering_number",
        attrs={"distance": name},
    )
    return da if many else da.isel(set=0, drop=True)


def _eps_grid(dms, eps, n_eps, eps_max):
    if eps is not None:
        grid = np.asarray(eps, dtype=float).ravel()
        if grid.size == 0 or not np.isfinite(grid).all() or (grid < 0).any():
            raise ValueError("eps must be a non-empty grid of finite values >= 0")
        return grid
    if not isinstance(n_eps, (int, np.integer)) or n_eps < 2:
        raise ValueError(f"n_eps must be an integer >= 2, got {fmt(n_eps)}")
    if eps_max is None:
        eps_max = max(float(dm.max()) if dm.size else 0.0 for dm in dms.values())
    if not np.isfinite(eps_max) or eps_max < 0:
        raise ValueError(f"eps_max must be finite and >= 0, got {fmt(eps_max)}")
    return np.linspace(0.0, eps_max, n_eps)


def persistent_covering_number(curve, *, min_fraction=0.05):
    """Largest-support covering value above 1 that persists over a long eps interval.

    Runs of constant C_eps are found on the grid; a run with C > 1 is *persistent* when its
    length (``eps_end - eps_start``, where a run ends at the next grid value) is at least
    ``min_fraction`` of the grid range. Returns the C of the longest persistent run, or 1 if
    there is none (a single mode at that resolution).

    Parameters
    ----------
    curve : xarray.DataArray
        Output of :func:`covering_curve` for one set.
    min_fraction : float
        Minimum run length as a fraction of the eps range.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> c = xr.DataArray([5, 2, 2, 2, 2, 1], dims="eps", coords={"eps": np.arange(6.0)})
    >>> persistent_covering_number(c)
    2
    """
    grid = np.asarray(curve["eps"].values, dtype=float)
    vals = np.asarray(curve.values)
    if vals.ndim != 1:
        raise ValueError("curve must be one covering curve (dim eps only)")
    span = grid[-1] - grid[0]
    best, best_len = 1, -1.0
    start = 0
    for k in range(1, len(vals) + 1):
        if k == len(vals) or vals[k] != vals[start]:
            end = grid[k] if k < len(vals) else grid[-1]
            length = end - grid[start]
            if vals[start] > 1 and span > 0 and length >= min_fraction * span and (
                length > best_len
            ):
                best, best_len = int(vals[start]), length
            start = k
    return best


# --------------------------------------------------------------------------------------------
# table and plot
# --------------------------------------------------------------------------------------------


def coverage_table(
    samples,
    *,
    distances=("angle", "l1"),
    eps=None,
    n_eps=100,
    per_chain=False,
    min_fraction=0.05,
    **kwargs,
):
    """Coverage summary of one or several sample sets as a table.

    For each set (and each chain with ``per_chain=True``) and each distance: the number of
    samples, maximum and mean pairwise distance (mean over all S^2 ordered pairs including
    i = j, eq. 5), the persistent covering number (see :func:`persistent_covering_number`)
    on a grid of ``n_eps`` values from 0 to the largest diameter across all rows of that
    distance, and C_eps at any requested ``eps``.

    Parameters
    ----------
    samples : sample set or dict of str to sample set
        See :func:`pairwise_distances`.
    distances : sequence of str
        Distances to report (``"angle"``, ``"l1"``, ``"wad"``, ``"frobenius"``). ``"wad"``
        needs W: every set must then be a DataTree / Dataset holding it (or pass ``Ws=`` for a
        single array set).
    eps : dict of str to sequence of float, optional
        Extra columns ``C(eps)``: e.g. ``{"angle": [1.0, 10.0], "l1": [0.05]}``.
    n_eps : int
        Grid size for the persistent covering number.
    per_chain : bool
        Also report each chain of a DataTree / chain-stacked input separately.
    min_fraction : float
        Persistence threshold (fraction of the eps range).
    **kwargs
        Passed to :func:`pairwise_distances` (``n_first``, ``thin``, ``group``, ...).

    Returns
    -------
    pandas.DataFrame
        Index ``(set, distance)``; columns ``n``, ``max``, ``mean``, ``persistent_C`` and
        ``C(eps)`` for requested values.

    Examples
    --------
    >>> import numpy as np
    >>> As = [np.eye(2), np.array([[1.0, 0.0], [1.0, 1.0]])]
    >>> coverage_table(As, distances=["angle"])["max"].round(6).tolist()
    [45.0]
    """
    sets, _ = _as_sets(samples)
    if isinstance(distances, str):
        distances = [distances]
    eps = eps or {}
    rows = []
    for dist in distances:
        dms = {}
        for label, s in sets.items():
            values, chain, wvals = _select(
                s,
                kwargs.get("Ws"),
                kwargs.get("var_name", "A"),
                kwargs.get("var_name_w", "W"),
                kwargs.get("group"),
                kwargs.get("n_first"),
                kwargs.get("thin", 1),
                dist,
            )
            dm = _pairwise_matrix(values, wvals, dist, kwargs.get("matching", "hungarian"))
            dms[label] = dm
            if per_chain and np.unique(chain).size > 1:
                for c in np.unique(chain):
                    sel = chain == c
                    dms[f"{label}/chain {c}"] = dm[np.ix_(sel, sel)]
        grid = _eps_grid(dms, None, n_eps, None)
        for label, dm in dms.items():
            S = dm.shape[0]
            curve = xr.DataArray(
                covering_number(dm, grid, distance="precomputed"),
                dims="eps",
                coords={"eps": grid},
            )
            row = {
                "set": label,
                "distance": dist,
                "n": S,
                "max": float(dm.max()),
                "mean": float(dm.sum() / S**2),
                "persistent_C": persistent_covering_number(curve, min_fraction=min_fraction),
            }
            for e in eps.get(dist, ()):
                row[f"C({e:g})"] = covering_number(dm, e, distance="precomputed")
            rows.append(row)
    return pd.DataFrame(rows).set_index(["set", "distance"])


def plot_covering_curves(curves, *, ax=None, logx=False, title=None):
    """Plot covering-number curves C_eps against eps; return the matplotlib Figure.

    Parameters
    ----------
    curves : xarray.DataArray or dict of str to xarray.DataArray
        Output(s) of :func:`covering_curve` (a ``set`` dim gives one line per set).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is made otherwise.
    logx : bool
        Log-scale eps axis (the RRT paper's persistence plots); eps = 0 is dropped.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> As = [np.eye(2), np.array([[1.0, 0.0], [1.0, 1.0]])]
    >>> fig = plot_covering_curves(covering_curve(As, n_eps=5))
    >>> fig.axes[0].get_xlabel()
    'eps (angle distance) (degrees)'
    """
    import matplotlib.pyplot as plt

    if isinstance(curves, xr.DataArray):
        if "set" in curves.dims:
            curves = {str(s): curves.sel(set=s) for s in curves["set"].values}
        else:
            curves = {curves.name or "samples": curves}
    if not isinstance(curves, dict) or not curves:
        raise TypeError("curves must be a DataArray from covering_curve or a dict of them")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 3.5))
    else:
        fig = ax.figure
    dist = None
    for label, c in curves.items():
        eps = np.asarray(c["eps"].values)
        vals = np.asarray(c.values)
        if logx:
            keep = eps > 0
            eps, vals = eps[keep], vals[keep]
        ax.step(eps, vals, where="post", label=str(label))
        dist = c.attrs.get("distance", dist)
    if logx:
        ax.set_xscale("log")
    ax.set_yscale("log")
    unit = " (degrees)" if dist in ("angle", "wad") else ""
    ax.set_xlabel(f"eps ({dist} distance){unit}" if dist else "eps")
    ax.set_ylabel(r"covering number $C_\varepsilon$")
    if title:
        ax.set_title(title)
    if len(curves) > 1:
        ax.legend()
    return fig
