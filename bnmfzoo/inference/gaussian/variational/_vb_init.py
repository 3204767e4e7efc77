"""Starting values for :func:`fit_vb`, :func:`fit_icm` and :func:`fit_multiplicative`.

Draws from the exponential priors, the prior means, or (NMTF) K-means cluster indicators on the
observed entries as in Brouwer et al. (2017)'s code. Pure NumPy.
"""

import numpy as np

from bnmfzoo._base.validation import check_int
from bnmfzoo.inference.gaussian.variational._vb_moments import tn_moments, tn_sample


def kmeans_missing(X, mask, k, rng, *, max_iter=200):
    """K-means on the rows of ``X`` using only observed coordinates (Brouwer's ``kmeans.py``).

    Distances are mean squared differences over observed coordinates; centroids are means of the
    observed values; an empty cluster is reseeded with the point furthest from its centroid.

    Returns
    -------
    numpy.ndarray of int
        Cluster label of each row.
    """
    X = np.where(mask, X, 0.0)
    Mf = mask.astype(float)
    n_obs = np.maximum(Mf.sum(axis=1), 1.0)
    lo = np.where(mask, X, np.inf).min(axis=0)
    hi = np.where(mask, X, -np.inf).max(axis=0)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, 0.0)
    centroids = lo + rng.random((k, X.shape[1])) * (hi - lo)
    labels = np.full(X.shape[0], -1)
    for _ in range(max_iter):
        # ||x - c||^2 over observed coordinates / n_obs
        dist = ((X**2).sum(1)[:, None] - 2.0 * X @ centroids.T + Mf @ (centroids**2).T)
        dist /= n_obs[:, None]
        new = dist.argmin(axis=1)
        for c in range(k):
            if not np.any(new == c):
                far = int(dist[np.arange(X.shape[0]), new].argmax())
                new[far] = c
                dist[far, :] = 0.0
        if np.array_equal(new, labels):
            break
        labels = new
        ind = np.eye(k)[labels]  # n x k
        counts = ind.T @ Mf
        sums = ind.T @ X
        centroids = np.where(counts > 0, sums / np.maximum(counts, 1.0), centroids)
    return labels


def init_means(problem, init, rng, *, kmeans_offset=0.0):
    """Initial factor values (internal layout) for ``init`` in {"random", "exp", "kmeans"}.

    "random" draws from the exponential priors (rate E[lambda] = alpha0 / beta0 under ARD),
    "exp" uses the prior means, "kmeans" (NMTF only) sets F and G to K-means cluster
    indicators plus ``kmeans_offset`` and draws S from its prior. A dict of arrays in the
    public layout (A: row x factor, W: factor x col, F, S, G) is used as given.
    """
    D, N = problem.obs.shape
    rates = {}
    for role, lam in problem.lam.items():
        if problem.ard and role in ("A", "W", "F", "G"):
            rates[role] = np.full(lam.shape, problem.alpha0 / problem.beta0)
        else:
            rates[role] = lam
    if isinstance(init, dict):
        out = {}
        for role in rates:
            if role not in init:
                raise ValueError(f"init is missing {role!r} (needs {sorted(rates)})")
            arr = np.asarray(init[role], dtype=float)
            arr = arr.T if role in ("A", "F", "G") else arr
            if arr.shape != rates[role].shape or not np.all(np.isfinite(arr)) or (arr < 0).any():
                raise ValueError(f"init[{role!r}] must be a finite non-negative array of shape "
                                 f"{arr.T.shape if role in ('A', 'F', 'G') else arr.shape}")
            out[role] = arr.copy()
        return out
    prior = problem.prior or {}
    normal = {role: t for role, t in prior.items() if t["family"] != "exponential"}
    if init == "random":  # (HalfNormal / TruncatedNormal priors: a draw from the prior)
        return {role: (tn_sample(normal[role]["lin"] / normal[role]["q"], normal[role]["q"], rng)
                       if role in normal else rng.exponential(1.0 / r))
                for role, r in rates.items()}
    if init == "exp":  # the prior means
        return {role: (tn_moments(normal[role]["lin"] / normal[role]["q"], normal[role]["q"])[0]
                       if role in normal else 1.0 / r) for role, r in rates.items()}
    if init == "kmeans":
        if not problem.tri:
            raise ValueError("init='kmeans' is for the tri-factorization; use 'random' or 'exp'")
        K, L = problem.rank
        X, mask = problem.obs.observed_dense()
        f_lab = kmeans_missing(X, mask, K, rng)
        g_lab = kmeans_missing(X.T, mask.T, L, rng)
        return {
            "F": np.eye(K)[f_lab].T + kmeans_offset,
            "S": (tn_sample(normal["S"]["lin"] / normal["S"]["q"], normal["S"]["q"], rng)
                  if "S" in normal else rng.exponential(1.0 / rates["S"])),
            "G": np.eye(L)[g_lab].T + kmeans_offset,
        }
    raise ValueError(f"init must be 'random', 'exp', 'kmeans' or a dict of arrays, got {init!r}")


def check_iterations(max_iter, name="max_iter"):
    """Validate an iteration count (an integer >= 1)."""
    return check_int(max_iter, name=name)
