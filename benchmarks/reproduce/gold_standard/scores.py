"""Scores of weighted points against a reference posterior (all label-invariant).

* ``ed_AW``: energy distance (Szekely & Rizzo 2013) between the weighted points and the
  reference on ``A @ W / sigma`` (all entries); ``ed_A``: the same on the basis aligned to its
  nearest reference mode with unit-l1 columns (the scale of a column is not identified).
  Weighted: ``2 E|X - Y| - E|X - X'| - E|Y - Y'|`` with the points' weights.
* ``mean_err``, ``sd_err``: root-mean-square over the entries of ``A @ W`` of
  ``(mean - mean_ref) / sd_ref`` and ``(sd - sd_ref) / sd_ref`` (1 for a method with no spread).
* ``coverage``: fraction of reference modes of mass >= 1 % that hold a point of weight
  >= min(1e-3, half the uniform weight) within the reference's clustering cut (max matched
  angle) of the mode's representative.
* ``lpd``: held-out log predictive density per held-out entry,
  ``mean_ij log sum_s w_s N(x_ij; (A_s W_s)_ij, sigma^2)``.
* ``n_eff``: ``1 / sum w^2``.
"""

import numpy as np
from scipy.spatial.distance import cdist
from scipy.special import logsumexp

from benchmarks.reproduce.gold_standard.reference import aligned, label_by_mode, unit_l1

N_MAX = 1000


def _subsample(X, w, n, rng):
    """At most ``n`` points: systematic resampling by weight when there are more."""
    if X.shape[0] <= n:
        return X, w / w.sum()
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    idx = np.searchsorted(cdf, (rng.random() + np.arange(n)) / n, side="right")
    return X[idx], np.full(n, 1.0 / n)


def energy_distance(X, wx, Y, wy):
    """Weighted energy distance between point sets ``X`` (n, d) and ``Y`` (m, d)."""
    return float(2 * wx @ cdist(X, Y) @ wy - wx @ cdist(X, X) @ wx - wy @ cdist(Y, Y) @ wy)


def features(A, W, refs, sigma):
    AW = np.einsum("sdr,srn->sdn", A, W).reshape(A.shape[0], -1) / sigma
    lab, perm, dist = label_by_mode(A, refs)
    Aa, _ = aligned(A, W, perm)
    return AW, unit_l1(Aa).reshape(A.shape[0], -1), lab, dist


def score(prob, ref, A, W, w, *, random_seed=0):
    rng = np.random.default_rng(random_seed)
    w = np.asarray(w, dtype=float)
    w = np.maximum(w, 0.0) / np.maximum(w, 0.0).sum()
    AW, Af, lab, dist = features(A, W, ref["refs"], prob.sigma)
    if "features" not in ref:
        rAW, rAf, _, _ = features(ref["A"], ref["W"], ref["refs"], prob.sigma)
        ref["features"] = (rAW, rAf)
    rAW, rAf = ref["features"]
    rw = ref["weight"]
    idx_m = np.arange(A.shape[0])
    if A.shape[0] > N_MAX:
        sel, wm = _subsample(idx_m[:, None], w, N_MAX, rng)
        idx_m = sel[:, 0]
    else:
        wm = w
    idx_r = _subsample(np.arange(rAW.shape[0])[:, None], rw, N_MAX, rng)[0][:, 0]
    wr = np.full(idx_r.size, 1.0 / idx_r.size)
    out = {
        "ed_AW": energy_distance(AW[idx_m], wm, rAW[idx_r], wr),
        "ed_A": energy_distance(Af[idx_m], wm, rAf[idx_r], wr),
    }
    r_mean = rw @ rAW
    r_sd = np.sqrt(np.maximum(rw @ (rAW - r_mean) ** 2, 1e-300))
    m_mean = w @ AW
    m_sd = np.sqrt(np.maximum(w @ (AW - m_mean) ** 2, 0.0))
    out["mean_err"] = float(np.sqrt(np.mean(((m_mean - r_mean) / r_sd) ** 2)))
    out["sd_err"] = float(np.sqrt(np.mean(((m_sd - r_sd) / r_sd) ** 2)))
    mass = np.asarray(ref["meta"]["mass"])
    cut = float(ref["meta"]["cut"])
    big = np.flatnonzero(mass >= 0.01)
    heavy = w >= min(1e-3, 0.5 / w.size)
    covered = [np.any((lab == k) & (dist <= cut) & heavy) for k in big]
    out["coverage"] = float(np.mean(covered)) if big.size else float("nan")
    out["lpd"] = heldout_lpd(prob, A, W, w)
    out["n_eff"] = float(1.0 / np.sum(w**2))
    out["n_points"] = int(A.shape[0])
    return out


def heldout_lpd(prob, A, W, w):
    rows, cols = np.nonzero(prob.test)
    mu = np.einsum("sdr,srn->sdn", A, W)[:, rows, cols]  # (S, n_test)
    x = prob.X[rows, cols]
    logn = -0.5 * ((x - mu) / prob.sigma) ** 2 - np.log(prob.sigma * np.sqrt(2 * np.pi))
    lw = np.log(np.maximum(w, 1e-300))[:, None]
    return float(np.mean(logsumexp(logn + lw, axis=0)))


def reference_floor(prob, ref, *, random_seed=1):
    """Scores of a second, independent resample of the reference (the Monte-Carlo floor)."""
    rng = np.random.default_rng(random_seed)
    idx = _subsample(np.arange(ref["A"].shape[0])[:, None], ref["weight"], N_MAX, rng)[0][:, 0]
    return score(prob, ref, ref["A"][idx], ref["W"][idx], np.full(idx.size, 1.0 / idx.size),
                 random_seed=random_seed + 1)
