"""One ``(A, W)`` pair from a multimodal result, and a label saying what a mode's weight is.

:func:`point_estimate` turns the heaviest mode of :func:`~.mode_clustering.modes` into one
aligned, balanced ``(A, W)`` pair (refined by HALS so it reconstructs like the mode's mean
product); :func:`weight_label` writes a mode's weight as what it is (a posterior mass with its
Monte-Carlo error, or a share of chains, a Stein weight, ... that is not a mass).
"""

import math

import numpy as np

from bnmfzoo.diagnostics._modes.mode_clustering import (
    MAX_PRODUCT_CELLS,
    _mean_product,
    _members,
    modes,
)

__all__ = ["point_estimate", "weight_label"]

def _balance(A, W):
    """Rescale each factor so that ``|A_r|_2 = |W_r|_2`` (A @ W unchanged); stacks allowed."""
    a = np.sqrt((A * A).sum(-2))
    b = np.sqrt((W * W).sum(-1))
    s = np.where((a > 0) & (b > 0), np.sqrt(np.divide(b, a, out=np.ones_like(a), where=a > 0)),
                 1.0)
    return A * s[..., None, :], W / s[..., :, None]


def _hals(M, A, W, n_iter):
    """HALS sweeps fitting ``A @ W`` to a full non-negative matrix ``M`` (Cichocki 2009)."""
    A, W = A.copy(), W.copy()
    eps = 1e-300
    for _ in range(n_iter):
        WWt, MWt = W @ W.T, M @ W.T
        for r in range(A.shape[1]):
            A[:, r] = np.maximum(A[:, r] + (MWt[:, r] - A @ WWt[:, r]) / max(WWt[r, r], eps), 0)
        AtA, AtM = A.T @ A, A.T @ M
        for r in range(W.shape[0]):
            W[r] = np.maximum(W[r] + (AtM[r] - AtA[r] @ W) / max(AtA[r, r], eps), 0)
    return A, W


def _labelled(m, A, W):
    """``dims``, ``A_labelled`` and ``W_labelled``: the pair with the result's dims and coords."""
    import xarray as xr

    names = {"row": m.attrs["row_dim"], "factor": m.attrs["factor_dim"],
             "col": m.attrs["col_dim"]}

    def da(values, dims):
        return xr.DataArray(values, dims=dims,
                            coords={d: m[d].values for d in dims if d in m.coords})

    return {"dims": names, "A_labelled": da(A, (names["row"], names["factor"])),
            "W_labelled": da(W, (names["factor"], names["col"]))}


def _weight_info(m, k):
    """``estimator``, ``weight_is_mass``, ``weight_mcse`` and ``weight_label`` of mode ``k``."""
    return {"estimator": m.attrs["estimator"], "weight_is_mass": bool(m.attrs["weight_is_mass"]),
            "weight_mcse": float(m["weight_mcse"][k]), "weight_label": weight_label(m, k)}


def weight_label(m, k, digits=2):
    """A short label of mode ``k``'s weight that says what it is.

    ``"mass 0.74 ± 0.03 (95 % interval 0.68-0.80)"`` for a posterior-mass estimate (MCSE and
    interval of :func:`modes`; more decimals for a rare mode), ``"share of chains 0.50 (not a
    mass)"``, ``"Stein weight 0.52 (not a mass)"``, ... otherwise.

    Examples
    --------
    >>> import xarray as xr
    >>> m = xr.Dataset({"weight": ("mode", [0.7]), "weight_mcse": ("mode", [0.02]),
    ...                 "share": ("mode", [0.7])}, attrs={"estimator": "draws"})
    >>> weight_label(m, 0)
    'mass 0.70 ± 0.02'
    >>> rare = xr.Dataset({"weight": ("mode", [0.0049]), "weight_mcse": ("mode", [0.0006]),
    ...                    "weight_low": ("mode", [0.0037]), "weight_high": ("mode", [0.0063])},
    ...                   attrs={"estimator": "draws"})
    >>> weight_label(rare, 0)
    'mass 0.0049 ± 0.0006 (95 % interval 0.0037-0.0063)'
    """
    est = m.attrs.get("estimator", "")
    w, share = float(m["weight"][k]), float(m["share"][k]) if "share" in m else float("nan")
    if est == "draws":
        se = float(m["weight_mcse"][k])
        if 0 < se < 10.0**-digits:  # a rare mode: enough decimals for its error to show
            digits = min(6, int(math.floor(-math.log10(se))) + 1)
        label = f"mass {w:.{digits}f} ± {se:.{digits}f}"
        if "weight_low" in m and np.isfinite(float(m["weight_low"][k])):
            label += (f" (95 % interval {float(m['weight_low'][k]):.{digits}f}-"
                      f"{float(m['weight_high'][k]):.{digits}f})")
        return label
    names = {"share_of_chains": ("share of chains", share), "stein_weight": ("Stein weight", w),
             "stacking": ("stacking weight", w), "component_weight": ("component weight", w),
             "draws_unreliable": ("share of draws", w), "one_mode": ("share of draws", w)}
    name, value = names.get(est, ("weight", w))
    return f"{name} {value:.{digits}f} (not a mass)"


def point_estimate(result, *, threshold=15.0, n_refine=50, rtol=0.01, dims=None):
    """One ``(A, W)`` pair from a result: the heaviest mode's aligned posterior mean.

    The members of the heaviest mode (ties: the one whose mean ``A @ W`` fits the observed
    data best) are aligned to it (:func:`modes`), each rescaled so that every factor has
    ``|A_r|_2 = |W_r|_2`` (which leaves ``A @ W`` unchanged), and averaged with their weights.
    A product of means is not the mean of products: if ``Abar @ Wbar`` is further than
    ``rtol`` (relative Frobenius) from the mode's mean of ``A @ W`` than an NMF of that mean
    would be, up to ``n_refine`` HALS sweeps (Cichocki & Phan 2009) started at ``(Abar,
    Wbar)`` fit ``A @ W`` to the mode's per-draw mean product, so the returned pair
    reconstructs the data as well as the per-draw mean does. Never averages across modes or
    unaligned labels.

    Parameters
    ----------
    result : xarray.DataTree
        Any result :func:`modes` accepts (with ``W``).
    threshold : float
        Passed to :func:`modes`.
    n_refine : int
        Largest number of HALS sweeps (0: return the aligned means as they are).
    rtol : float
        Relative gap to the mode's mean product that triggers the refinement.
    dims : tuple or dict, optional
        The result's ``(row, factor, col)`` dims; default: read from the result
        (:func:`~bnmfzoo.diagnostics._modes._dims.factor_dims`).

    Returns
    -------
    A : numpy.ndarray
        ``(D, R)``.
    W : numpy.ndarray
        ``(R, N)``.
    info : dict
        ``mode`` (index), ``weight``, ``n_modes``, ``rel_gap_means`` (relative distance of
        ``Abar @ Wbar`` to the mode's mean product), ``rel_gap`` (same after refinement),
        ``estimator``, ``weight_is_mass``, ``weight_mcse`` and ``weight_label`` (what the
        weight is, from :func:`modes`; ``weight`` is the share of draws when the mode weights
        are NaN), ``refined`` (bool; the gaps are NaN and nothing is refined when D x N exceeds
        :data:`MAX_PRODUCT_CELLS`), the :func:`modes` DataTree under ``modes``, and the heaviest
        mode's members aligned and balanced as they were averaged: ``A_draws`` ``(S, D, R)``,
        ``W_draws`` ``(S, R, N)`` with their normalized weights ``draw_weights`` ``(S,)``;
        ``dims`` (``{"row", "factor", "col"}`` -> the result's dim names) and ``A_labelled`` /
        ``W_labelled``: the returned pair as DataArrays with those dims and the result's
        coordinates (the factors in the mode's order).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> rng = np.random.default_rng(0)
    >>> A0, W0 = rng.random((6, 2)), rng.random((2, 5))
    >>> A = np.stack([A0, A0[:, ::-1]])[None]          # one chain, labels switched
    >>> W = np.stack([W0, W0[::-1]])[None]
    >>> Ahat, What, info = point_estimate(build_datatree({"A": A, "W": W}))
    >>> bool(np.allclose(Ahat @ What, A0 @ W0))
    True
    """
    m = modes(result, threshold=threshold, warn=False, dims=dims)["modes"]
    if "W_mean" not in m:
        raise ValueError("point_estimate needs draws or particles of both A and W")
    A, W, w, _, _, _ = _members(result, m.attrs["source"], dims=dims)
    label = m["member_mode"].values.ravel()
    perm = m["member_perm"].values.reshape(label.size, -1)
    # NaN weights (chains that never change mode: no mass) fall back to the share of draws
    weight = np.where(np.isfinite(m["weight"].values), m["weight"].values, m["share"].values)
    rel = np.nan_to_num(m["rel_error"].values, nan=np.inf)
    best = max(range(weight.size), key=lambda k: (round(float(weight[k]), 9), -rel[k]))
    sel = np.flatnonzero(label == best)
    wk = w[sel] / w[sel].sum()
    Ak = np.take_along_axis(A[sel], perm[sel][:, None, :], axis=-1)
    Wk = np.take_along_axis(W[sel], perm[sel][:, :, None], axis=-2)
    Ab, Wb = _balance(Ak, Wk)
    Abar, Wbar = np.tensordot(wk, Ab, axes=1), np.tensordot(wk, Wb, axes=1)
    if Ak.shape[1] * Wk.shape[2] > MAX_PRODUCT_CELLS:  # large (sparse) data: no D x N product
        info = {"mode": int(best), "weight": float(weight[best]), "n_modes": int(weight.size),
                "rel_gap_means": np.nan, "rel_gap": np.nan, "refined": False,
                "modes": m, "A_draws": Ab, "W_draws": Wb, "draw_weights": wk,
                **_weight_info(m, best), **_labelled(m, Abar, Wbar)}
        return Abar, Wbar, info
    M = _mean_product(wk, Ak, Wk)
    norm = max(np.linalg.norm(M), 1e-300)
    gap0 = float(np.linalg.norm(Abar @ Wbar - M) / norm)
    A_out, W_out, refined = Abar, Wbar, False
    if gap0 > rtol and n_refine > 0:
        A_ref, W_ref = _hals(M, Abar, Wbar, n_refine)
        if np.linalg.norm(A_ref @ W_ref - M) < np.linalg.norm(Abar @ Wbar - M):
            A_out, W_out, refined = _balance(A_ref, W_ref) + (True,)
    gap = float(np.linalg.norm(A_out @ W_out - M) / norm)
    info = {"mode": int(best), "weight": float(weight[best]), "n_modes": int(weight.size),
            "rel_gap_means": gap0, "rel_gap": gap, "refined": refined,
            "modes": m, "A_draws": Ab, "W_draws": Wb, "draw_weights": wk,
            **_weight_info(m, best), **_labelled(m, A_out, W_out)}
    return A_out, W_out, info
