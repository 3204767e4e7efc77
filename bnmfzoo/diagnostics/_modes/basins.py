"""Modes as basins that plain chains connect: which angle clusters are one mode for masses.

A fixed angle cut (:func:`bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`) splits
the members of an NMF posterior into clusters, but a cluster is not yet a mode in the sense a
posterior mass needs. A broad mode (a weakly identified factor that drifts) is cut into pieces
that a chain at ``beta = 1`` walks between, and the mass of one piece then depends on where the
cut fell. This module states the rule used for masses:

**Rule.** Clusters ``i`` and ``j`` are the same mode when plain chains of the exact sweep at
``beta = 1`` are seen to move from ``i`` to ``j`` *and* from ``j`` to ``i`` (directly or through
other clusters): the modes are the strongly connected components of the graph of observed moves
between consecutive draws of one chain. A chain's one-way move (it arrives in a cluster and never
comes back, as after burn-in or across a barrier it crossed once) does not join two clusters.
Two clusters no chain crossed both ways stay apart, and a cluster with no observed exit is its
own mode.

The rule asks only what a Markov chain can be seen to do: a union of clusters that chains cross
both ways is one communicating region of the sampler on the run's time scale, so a per-mode
estimator (a reference fitted to the union, bridge sampling) can treat it as one region, while a
barrier the chains never recrossed keeps two modes apart. It cannot join clusters whose chains
never met, so two modes found only by different chains stay two (their masses then need an
estimator that crosses, such as SMC from the prior). Connected components over chain
transitions are the "metastable sets" of Markov state models (Deuflhard & Weber 2005), with
states given by the angle clusters instead of a grid.

References
----------
Deuflhard, P. & Weber, M. (2005). Robust Perron cluster analysis in conformation dynamics.
Linear Algebra Appl. 398, 161-184.
Masood, M. A., Pan, W. & Doshi-Velez, F. (2016). An empirical comparison of sampling quality
metrics: a case study for Bayesian nonnegative matrix factorization. arXiv:1606.06250.
"""

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["chain_connected_modes", "outside_share", "mode_basins", "fit_basins", "kept_basins",
           "basin_shares", "outside_basin", "duplicate_modes"]


def chain_connected_modes(label, chain_of, n_clusters, *, min_moves=1):
    """Join the clusters that plain chains move between in both directions.

    Parameters
    ----------
    label : array_like of int
        ``(n,)`` cluster of each draw, in the chains' time order (draws of one chain
        consecutive in time; chains may be interleaved).
    chain_of : array_like of int
        ``(n,)`` chain of each draw.
    n_clusters : int
        Number of clusters (labels lie in ``0 .. n_clusters - 1``).
    min_moves : int
        Moves ``i -> j`` needed before the edge counts (default 1).

    Returns
    -------
    dict
        ``moves`` (``(n_clusters, n_clusters)`` counts of consecutive-draw moves ``i -> j``,
        zero diagonal), ``mode_of`` (``(n_clusters,)`` mode of each cluster: the strongly
        connected components of the move graph, numbered by their smallest cluster) and
        ``groups`` (list of the clusters of each mode).

    Examples
    --------
    >>> out = chain_connected_modes([0, 1, 0, 2, 2], [0, 0, 0, 0, 0], 3)
    >>> out["groups"]
    [[0, 1], [2]]
    """
    label = np.asarray(label)
    chain_of = np.asarray(chain_of)
    if label.ndim != 1 or chain_of.shape != label.shape:
        raise ValueError(f"label and chain_of must be 1-d of one length, got shapes "
                         f"{label.shape} and {chain_of.shape}")
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) \
            or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if label.size and (label.min() < 0 or label.max() >= n_clusters):
        raise ValueError(f"label must lie in 0..{n_clusters - 1}")
    moves = np.zeros((n_clusters, n_clusters), dtype=int)
    for c in np.unique(chain_of):
        seq = label[chain_of == c]
        np.add.at(moves, (seq[:-1], seq[1:]), 1)
    np.fill_diagonal(moves, 0)
    _, comp = connected_components(csr_matrix(moves >= int(min_moves)), directed=True,
                                   connection="strong")
    first = {}
    for k, c in enumerate(comp):
        first.setdefault(int(c), k)
    order = {c: i for i, c in enumerate(sorted(first, key=first.get))}
    mode_of = np.array([order[int(c)] for c in comp])
    groups = [np.flatnonzero(mode_of == m).tolist() for m in range(len(order))]
    return {"moves": moves, "mode_of": mode_of, "groups": groups}


def outside_share(label, chain_of, n_clusters, home, *, weights=None):
    """Share of draws outside the mode (connected component) that holds cluster ``home``.

    Parameters
    ----------
    label, chain_of, n_clusters
        As :func:`chain_connected_modes`.
    home : int
        The cluster the chains started in (the mode's representative lies in it).
    weights : array_like, optional
        Draw weights (default equal).

    Returns
    -------
    tuple
        ``(share, inside)``: the weighted share of draws whose cluster is not in ``home``'s
        mode, and the boolean ``(n,)`` mask of draws inside it.
    """
    out = chain_connected_modes(label, chain_of, n_clusters)
    inside = out["mode_of"][np.asarray(label)] == out["mode_of"][int(home)]
    w = np.ones(inside.size) if weights is None else np.asarray(weights, float)
    return float(w[~inside].sum() / w.sum()) if w.sum() > 0 else 0.0, inside


#: draws of one chain per stretch (segment) when the chain draws are clustered
STRETCH = 20
#: a cluster's radius is this quantile of its chain draws' angles to its representative
#: (:func:`outside_basin`): an exact draw of the mode then lies beyond it about 1 % of the time
RADIUS_QUANTILE = 0.99
#: fewer member draws than this and a cluster's radius is the cut (a quantile of few is noise)
MIN_RADIUS_DRAWS = 50


def mode_basins(A, chain_of, start_mode, refs, cut):
    """Which chain draws stay in their mode, under the basin rule; modes chains join.

    Plain chains started in each mode (``start_mode``) give draws ``A``. Each mode's
    representative is re-centred on its chains' draws (the aligned mean of the draws,
    :func:`~bnmfzoo.diagnostics._modes.mode_clustering._aligned_mean`, started from
    ``refs[k]``): a single member (a particle, a chain's end state) is one noisy draw, and the
    max matched angle between two draws of one mode is about ``sqrt(2)`` times a draw's angle
    to the mode's mean, so a single-draw representative makes a broad mode look as if its draws
    left it. All draws are then clustered at ``cut``
    (:func:`~bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`, stretches of
    ``STRETCH`` draws of one chain as segments, the cut not raised by the within-chain spread:
    a chain that crosses between basins would raise it) and the clusters are joined by the rule of
    :func:`chain_connected_modes`. A draw is **inside** mode ``k`` when its cluster lies in the
    component of the cluster nearest to ``k``'s re-centred representative.

    Parameters
    ----------
    A : numpy.ndarray
        ``(n, D, K)`` bases of the chain draws, each chain's draws in time order.
    chain_of : array_like of int
        ``(n,)`` chain of each draw (distinct across modes).
    start_mode : array_like of int
        ``(n,)`` mode whose members the draw's chain started from (``0 .. M - 1``).
    refs : numpy.ndarray
        ``(M, D, K)`` the modes' representatives.
    cut : float
        Max matched angle (degrees) of the clustering.

    Returns
    -------
    dict
        ``inside`` (``(n,)`` bool: the draw lies in the basin of the mode its chain started
        from), ``left`` (``(M,)`` share of each mode's draws outside it), ``reference``
        (``(M, D, K)`` re-centred representatives), ``basin_refs`` (per mode, the
        representatives ``(m, D, K)`` of the clusters in its basin), ``joined`` (pairs ``(k,
        j)`` of modes whose basins are one: chains crossed between them both ways), ``groups``
        and ``moves`` of :func:`chain_connected_modes` over the draws' clusters.
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import (
        _aligned_mean,
        _unit_l2,
        cluster_members,
        matched_angles,
    )

    A = np.asarray(A, float)
    chain_of = np.asarray(chain_of)
    start_mode = np.asarray(start_mode)
    refs = np.asarray(refs, float)
    M = refs.shape[0]
    if A.ndim != 3 or chain_of.shape != (A.shape[0],) or start_mode.shape != chain_of.shape:
        raise ValueError("A must be (n, D, K) and chain_of, start_mode (n,)")
    U = _unit_l2(A)
    centred = np.stack([
        _aligned_mean(U[start_mode == k], np.ones(int(np.sum(start_mode == k))),
                      _unit_l2(refs[k]), 2) if np.any(start_mode == k) else _unit_l2(refs[k])
        for k in range(M)])
    chains, ci = np.unique(chain_of, return_inverse=True)
    pos = np.zeros(A.shape[0], dtype=int)
    for c in range(chains.size):
        m = ci == c
        pos[m] = np.arange(int(m.sum()))
    cl = cluster_members(A, segment_of=ci * (A.shape[0] + 1) + pos // STRETCH, chain_of=ci,
                         threshold=cut, noise_factor=0.0, keep_rare=False)
    n_cl = cl["reference"].shape[0]
    sc = chain_connected_modes(cl["label"], ci, n_cl)
    home = matched_angles(centred, cl["reference"])[0].argmin(1)
    comp = sc["mode_of"][home]
    inside = sc["mode_of"][cl["label"]] == comp[start_mode]
    left = np.array([float(np.mean(~inside[start_mode == k])) if np.any(start_mode == k)
                     else 1.0 for k in range(M)])
    joined = [(k, j) for k in range(M) for j in range(k + 1, M) if comp[k] == comp[j]]
    basin_refs = [cl["reference"][sc["mode_of"] == comp[k]] for k in range(M)]
    radius = np.full(n_cl, float(cut))
    for c in range(n_cl):  # how far the chains' own draws reach from their representative
        m = cl["label"] == c
        if m.sum() >= MIN_RADIUS_DRAWS:
            d = matched_angles(U[m], cl["reference"][c][None])[0][:, 0]
            radius[c] = max(float(cut), float(np.quantile(d, RADIUS_QUANTILE)))
    return {"inside": inside, "left": left, "reference": centred, "basin_refs": basin_refs,
            "joined": joined, "groups": sc["groups"], "moves": sc["moves"],
            "cluster_refs": cl["reference"], "cluster_radius": radius,
            "cluster_mode": sc["mode_of"], "home": comp}


def fit_basins(fits, refs, cut, n_chains):
    """:func:`mode_basins` over every mode's fit chains.

    ``fits``: per mode, ``(draws, bases (n, D, K), chain, log joint)``, the chains numbered
    from 0 within each mode (made distinct here); ``refs``: ``(M, D, K)``.
    """
    stride = 1 + max([n_chains] + [int(f[2].max()) for f in fits if f[2].size])  # chain ids
    return mode_basins(np.concatenate([f[1] for f in fits]),
                       np.concatenate([f[2] + k * stride for k, f in enumerate(fits)]),
                       np.concatenate([np.full(f[2].size, k) for k, f in enumerate(fits)]),
                       refs, cut)


def kept_basins(fits, refs, cut, n_chains, earlier, keep):
    """:func:`fit_basins` over the fit chains of the modes ``keep`` left after copies were dropped.

    ``fits`` and ``refs`` are the kept modes'; ``earlier`` is the rule's result over every mode.
    The continuation of leaking fit chains it records (``extended``: those modes;
    ``left_before``: every mode's share of draws outside its basin before) is carried over to
    the kept modes, renumbered, so a report still says that it happened.

    Examples
    --------
    >>> earlier = {"extended": [2], "left_before": np.array([0.0, 0.01, 0.25])}
    >>> rng = np.random.default_rng(0)
    >>> bases = np.abs(rng.normal(size=(40, 6, 2)))
    >>> fits = [(bases[:20, :, 0], bases[:20], np.zeros(20, int), np.zeros(20)),
    ...         (bases[20:, :, 0], bases[20:], np.zeros(20, int), np.zeros(20))]
    >>> out = kept_basins(fits, bases[[0, 20]], 0.3, 1, earlier, [0, 2])
    >>> out["extended"], out["left_before"].tolist()
    ([1], [0.0, 0.25])
    """
    basins = fit_basins(fits, refs, cut, n_chains)
    if earlier.get("extended"):
        basins.update(extended=[keep.index(k) for k in earlier["extended"] if k in keep],
                      left_before=np.asarray(earlier["left_before"])[list(keep)])
    return basins


def outside_basin(U, basins, k, cut):
    """Which of the draws ``U`` lie outside mode ``k``'s basin: ``(n,)`` bool.

    The test applied to a per-mode estimator's draws (final path particles, tempering draws at
    ``b = 1``). A draw is **inside** when it lies within ``cut`` of a cluster of the basin, or
    when the representative nearest to it over **every** mode's clusters is one of the basin's
    and it lies within that cluster's radius (``cluster_radius`` of :func:`mode_basins`: the
    :data:`RADIUS_QUANTILE` quantile of the chain draws' own angles to the representative,
    never below ``cut``).

    Why the radius: the chain draws are clustered by stretches of :data:`STRETCH` draws and
    each draw joins its nearest representative at any distance, so a broad mode's own draws lie
    beyond the cut of every representative a share of the time. On a 12 x 10 Poisson matrix at
    rank 2 (one mode, cut 32 degrees) 5-10 % of the fit chains' draws did, and the final path
    particles and tempering draws had the same angle quantiles (none beyond the fit draws'
    farthest): a cut-only test called 8-20 % of exact draws "left" and refused every seed.
    Why the nearest representative: a draw near another mode's cluster stays outside, so a
    radius wider than the cut does not hide a leak into a known mode; a draw beyond every
    radius (a region no chain of the mode reached) stays outside too.

    Parameters
    ----------
    U : numpy.ndarray
        ``(n, D, K)`` draws' bases with unit-l2 columns.
    basins : dict
        :func:`mode_basins`' result.
    k : int
        The mode.
    cut : float
        Max matched angle (degrees) of the clustering.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> B = np.abs(rng.normal(size=(30, 2))) + 0.2
    >>> A = B[None] * np.exp(0.4 * rng.normal(size=(400, 30, 2)))  # one broad mode
    >>> out = mode_basins(A, np.repeat(np.arange(4), 100), np.zeros(400, int), B[None], 15.0)
    >>> new = B[None] * np.exp(0.4 * rng.normal(size=(400, 30, 2)))  # more of its draws
    >>> from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    >>> bool(outside_basin(_unit_l2(new), out, 0, 15.0).mean() < 0.05)
    True
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles

    U = np.asarray(U, float)
    refs = np.asarray(basins["cluster_refs"], float)
    own = np.asarray(basins["cluster_mode"]) == basins["home"][k]
    inside = np.zeros(U.shape[0], bool)
    if own.any():  # the old test first: within the cut of one of the basin's clusters
        inside = matched_angles(U, refs[own])[0].min(1) <= cut
    rest = np.flatnonzero(~inside)  # the few beyond it: against every mode's clusters
    if rest.size:
        ang = matched_angles(U[rest], refs)[0]
        nearest = ang.argmin(1)
        inside[rest] = own[nearest] & (ang[np.arange(rest.size), nearest]
                                       <= np.asarray(basins["cluster_radius"])[nearest])
    return ~inside


def basin_shares(A, basin_refs, cut, weights=None):
    """Weighted share of the members ``A`` that lie within ``cut`` of each mode's basin.

    Parameters
    ----------
    A : numpy.ndarray
        ``(n, D, K)`` bases (a mode's final path particles or its fit-chain draws).
    basin_refs : list of numpy.ndarray
        Per mode, the representatives ``(m, D, K)`` of the clusters in its basin
        (``basin_refs`` of :func:`mode_basins`).
    cut : float
        Max matched angle (degrees): a member is in a basin when it is within ``cut`` of one
        of the basin's clusters.
    weights : array_like, optional
        ``(n,)`` member weights (default equal).

    Returns
    -------
    numpy.ndarray
        ``(M,)`` share of the members inside each mode's basin (NaN when ``A`` is empty).
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    A = np.asarray(A, float)
    if A.ndim != 3:
        raise ValueError(f"A must be (n, D, K), got shape {A.shape}")
    w = np.ones(A.shape[0]) if weights is None else np.asarray(weights, float)
    if w.shape != (A.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be (n,) finite and non-negative")
    if A.shape[0] == 0 or w.sum() <= 0:
        return np.full(len(basin_refs), np.nan)
    U = _unit_l2(A)
    out = np.zeros(len(basin_refs))
    for i, br in enumerate(basin_refs):
        br = np.asarray(br, float)
        if br.shape[0]:
            out[i] = float(w[matched_angles(U, br)[0].min(1) <= cut].sum() / w.sum())
    return out


def duplicate_modes(*shares, max_share):
    """Pairs of modes that are one mode: each holds members inside the other's basin.

    Modes ``i < j`` are one mode when, for one of the ``shares`` matrices (``shares[j, i]``:
    the share of mode ``j``'s members inside mode ``i``'s basin, :func:`basin_shares`; e.g. one
    for the final path particles and one for the fit-chain draws), both ``shares[j, i]`` and
    ``shares[i, j]`` exceed ``max_share``. Two distinct modes keep their members inside their
    own basins (a member counted in another's basin has left its mode, which the per-mode
    checks already bound by ``max_share``), so both shares above it mean the two basins cover
    the same members: two copies of one mode, whose evidence a per-mode estimator would
    otherwise count twice.

    Returns
    -------
    list of tuple
        ``(i, j)`` with ``i < j``, in order.

    Examples
    --------
    >>> s = np.array([[1.0, 0.9, 0.0], [0.8, 1.0, 0.0], [0.0, 0.01, 1.0]])
    >>> duplicate_modes(s, max_share=0.05)
    [(0, 1)]
    """
    pairs = set()
    for s in shares:
        s = np.nan_to_num(np.asarray(s, float), nan=0.0)
        M = s.shape[0]
        pairs |= {(i, j) for i in range(M) for j in range(i + 1, M)
                  if s[i, j] > max_share and s[j, i] > max_share}
    return sorted(pairs)
