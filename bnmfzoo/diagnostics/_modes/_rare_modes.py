"""Rare modes: members far from every mode found by clustering segment means (no PyMC).

:func:`bnmfzoo.diagnostics._modes.mode_clustering.cluster_members` clusters *segment means* of MCMC
chains (the noise of single draws is too large to cluster them directly). A mode that a chain
visits in short excursions — a few per cent of its draws, or less — never dominates a segment,
so its draws are absorbed into the segment's mode, however far they lie from it (replica
exchange on ``laurberg(0.5)`` with sigma 0.05 puts about 0.5 % of the draws on the second exact
factorization, 36.87 degrees from the first). :func:`split_rare` looks at the members
themselves: the members farther than the cut from their mode's representative are grouped into
runs of consecutive members (one excursion each), the run means are clustered by average
linkage at the same cut, and every such cluster whose representative lies farther than the cut
from all existing representatives becomes a mode of its own. A mode is thus kept because it is
*distinct* (by matched angle), whatever its size.
"""

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

__all__ = ["split_rare"]


def _runs(outlier, segment_of):
    """Id of the run of consecutive outlying members (same segment) of each outlier."""
    idx = np.flatnonzero(outlier)
    if idx.size == 0:
        return idx, idx
    new = np.ones(idx.size, dtype=bool)
    new[1:] = (np.diff(idx) > 1) | (segment_of[idx[1:]] != segment_of[idx[:-1]])
    return idx, np.cumsum(new) - 1


def split_rare(U, w, label, refs, dist, segment_of, cut, *, matched_angles, aligned_mean,
               min_members=2):
    """New modes from members farther than ``cut`` degrees from their mode's representative.

    Parameters
    ----------
    U : numpy.ndarray
        ``(n, D, R)`` unit-l2 bases, in member order (chains, then draws).
    w : numpy.ndarray
        ``(n,)`` positive member weights.
    label : numpy.ndarray of int
        ``(n,)`` current mode of each member.
    refs : numpy.ndarray
        ``(K, D, R)`` current representatives.
    dist : numpy.ndarray
        ``(n,)`` max matched angle (degrees) of each member to its representative.
    segment_of : numpy.ndarray of int
        ``(n,)`` segment (chain stretch) of each member; runs never cross segments.
    cut : float
        Degrees: members farther than this from their representative are examined, and a new
        mode must be farther than this from every existing representative.
    matched_angles, aligned_mean : callable
        :func:`~bnmfzoo.diagnostics._modes.mode_clustering.matched_angles` and its aligned mean.
    min_members : int
        Fewest members of a new mode (a single outlying draw is noise, not a mode).

    Returns
    -------
    tuple
        ``(label, refs)`` with the new modes appended (labels ``K, K + 1, ...``); outlying
        members join the nearest representative, old or new.

    Examples
    --------
    >>> from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles, _aligned_mean
    >>> e = np.eye(3)[None]
    >>> U = np.concatenate([np.repeat(e, 8, 0), np.repeat(np.full((1, 3, 3), 3**-0.5), 2, 0)])
    >>> lab, refs = split_rare(U, np.ones(10), np.zeros(10, int), e, np.r_[np.zeros(8), 54.7,
    ...                        54.7], np.zeros(10, int), 15.0, matched_angles=matched_angles,
    ...                        aligned_mean=lambda U, w, r: _aligned_mean(U, w, r, 2))
    >>> lab.tolist(), refs.shape[0]
    ([0, 0, 0, 0, 0, 0, 0, 0, 1, 1], 2)
    """
    label = np.asarray(label).copy()
    idx, run = _runs(np.asarray(dist) > cut, np.asarray(segment_of))
    if idx.size < min_members:
        return label, refs
    n_runs = int(run.max()) + 1
    means = np.stack([aligned_mean(U[idx[run == g]], w[idx[run == g]], U[idx[run == g][0]])
                      for g in range(n_runs)])
    if n_runs > 1:
        d, _ = matched_angles(means, means)
        d = np.maximum(0.5 * (d + d.T), 0.0)
        np.fill_diagonal(d, 0.0)
        lab = fcluster(linkage(squareform(d, checks=False), method="average"), t=cut,
                       criterion="distance") - 1
    else:
        lab = np.zeros(1, dtype=int)
    new_refs = []
    for k in np.unique(lab):
        members = idx[np.isin(run, np.flatnonzero(lab == k))]
        if members.size < min_members:
            continue
        ref = aligned_mean(U[members], w[members], U[members[0]])
        if matched_angles(ref[None], refs)[0].min() > cut:
            new_refs.append(ref)
    if not new_refs:
        return label, refs
    refs = np.concatenate([refs, np.stack(new_refs)])
    d_out, _ = matched_angles(U[idx], refs)
    label[idx] = d_out.argmin(axis=1)
    return label, refs
