"""Posterior signatures and exposures, and their assignment to a reference catalogue.

From posterior draws of a Poisson NMF ``Y ~ T V`` (channels x samples; ``T`` the signatures,
``V`` the exposures), each draw is put on the scale the field reports: signature ``k`` is
column ``k`` of ``T`` divided by its sum (a distribution over the 96 channels) and its exposure
in sample ``n`` is ``V_kn`` times that sum (the expected number of mutations it contributed).
Draws are first aligned (:func:`align_draws`: the Hungarian pairing on cosine to the posterior
mean), so ``k`` names the same signature in every draw.

**Assignment** (:func:`assign`). For each extracted signature and each draw, the reference
signature of highest cosine is its best match in that draw; over draws, the fraction of draws
in which reference ``j`` is the best match estimates the posterior probability that ``j`` is
the best match. The signature is reported with its most probable match, the cosine to it
(posterior median and central interval) and ``p_novel``, the posterior probability that
*no* reference signature reaches the cutoff (the best cosine of the draw is below it); it is
called ``novel`` when ``p_novel > 0.5``. Probabilities are Monte-Carlo estimates from the draws
(error about ``sqrt(p (1 - p) / ESS)``), conditional on the rank.
"""

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import linear_sum_assignment

__all__ = ["normalize_draws", "align_draws", "assign", "summarize_draws", "probability_text",
           "assignment_table"]


def normalize_draws(T_draws, V_draws):
    """``(signatures (G, K, D), exposures (G, N, K))`` from ``T`` (G, D, K) and ``V`` (G, K, N)."""
    T_draws, V_draws = np.asarray(T_draws, float), np.asarray(V_draws, float)
    sums = T_draws.sum(axis=1)  # (G, K)
    sig = np.transpose(T_draws / sums[:, None, :], (0, 2, 1))
    expo = np.transpose(V_draws * sums[:, :, None], (0, 2, 1))
    return sig, expo


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def align_draws(sig, expo, *, n_iter=3):
    """Permute each draw's signatures to match the running posterior mean (Hungarian, cosine).

    Returns the aligned ``(sig, expo)`` and the number of draws that needed a permutation.
    """
    sig, expo = sig.copy(), expo.copy()
    moved = 0
    for _ in range(n_iter):
        ref = _unit(sig.mean(axis=0))
        changed = 0
        for g in range(sig.shape[0]):
            _, perm = linear_sum_assignment(ref @ _unit(sig[g]).T, maximize=True)
            if (perm != np.arange(perm.size)).any():
                sig[g], expo[g] = sig[g][perm], expo[g][:, perm]
                changed += 1
        moved += changed
        if not changed:
            break
    return sig, expo, moved


def summarize_draws(draws, level=0.9, axis=0):
    """``(mean, low, high)`` of ``draws`` along ``axis``: the central ``level`` interval."""
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=axis)
    return draws.mean(axis=axis), lo, hi


def probability_text(p, n_draws):
    """A Monte-Carlo probability from ``n_draws`` draws, as text.

    ``"<0.005"`` for 0 with 200 draws (no draw is not probability zero: with ``G`` draws,
    about ``1 / G`` is the resolution), ``">0.995"`` for 1, else 3 decimals.

    Examples
    --------
    >>> [probability_text(p, 200) for p in (0.0, 0.5, 1.0)]
    ['<0.005', '0.500', '>0.995']
    """
    tiny = 1.0 / max(int(n_draws), 1)
    if not np.isfinite(p):
        return "nan"
    if p <= 0.0:
        return f"<{tiny:.2g}"
    if p >= 1.0:
        return f">{1.0 - tiny:.4g}"
    return f"{p:.3f}"


def assign(sig, reference, *, cutoff=0.9, level=0.9, labels=None):
    """Posterior assignment of extracted signatures to a reference catalogue.

    Parameters
    ----------
    sig : array, shape (G, K, D)
        Aligned posterior draws of the K normalized signatures.
    reference : xarray.DataArray
        Reference signatures ``("signature", "channel")``, channels in the same order
        (:func:`bnmfzoo.signatures.read_signatures`).
    cutoff : float
        Cosine below which a signature matches nothing (reported ``novel``).
    level : float
        Level of the cosine intervals.
    labels : sequence of str, optional
        Names of the K extracted signatures.

    Returns
    -------
    table : pandas.DataFrame
        One row per signature: ``signature``, ``best_match``, ``probability``, ``cosine``
        (posterior median of the cosine to ``best_match``), ``cosine_low``, ``cosine_high``,
        ``second_match`` (the next most probable match; among references that are the best
        match in no draw, the one of highest median cosine), ``second_probability``,
        ``p_novel``, ``call`` (the match, or ``novel``). Probabilities are fractions of the
        ``G`` draws: 0 means "below about 1 / G", not impossible (:func:`probability_text`
        writes it so); ``attrs["n_draws"]`` is ``G``.
    probabilities : xarray.DataArray
        ``(signature, reference)``: the posterior probability that each reference signature
        is the best match.

    Examples
    --------
    >>> import xarray as xr
    >>> ref = xr.DataArray(np.eye(3) + 0.01, dims=("signature", "channel"),
    ...                    coords={"signature": ["R1", "R2", "R3"]})
    >>> draws = np.tile(np.array([[1, 0.02, 0.01], [0.3, 0.3, 0.4]]), (10, 1, 1))
    >>> table, _ = assign(draws, ref, cutoff=0.9)
    >>> table[["best_match", "probability", "call"]].values.tolist()
    [['R1', 1.0, 'R1'], ['R3', 1.0, 'novel']]
    """
    sig = np.asarray(sig, float)
    ref_vals = np.asarray(reference.values, float)
    if sig.ndim != 3 or sig.shape[2] != ref_vals.shape[1]:
        raise ValueError(f"sig must have shape (draws, signatures, {ref_vals.shape[1]}), got "
                         f"{sig.shape}")
    names = np.asarray(reference.coords[reference.dims[0]].values).astype(str)
    G, K, _ = sig.shape
    labels = [f"Sig{k + 1}" for k in range(K)] if labels is None else list(labels)
    cos = np.einsum("gkd,jd->gkj", _unit(sig), _unit(ref_vals))  # (G, K, J)
    best = cos.argmax(axis=2)  # (G, K)
    prob = np.stack([np.bincount(best[:, k], minlength=len(names)) / G for k in range(K)])
    med = np.median(cos, axis=0)  # (K, J): breaks ties among references never best
    rows = []
    for k in range(K):
        order = np.lexsort((-med[k], -prob[k]))
        j, j2 = order[0], order[1] if len(order) > 1 else order[0]
        c = cos[:, k, j]
        lo, hi = np.quantile(c, [(1 - level) / 2, (1 + level) / 2])
        p_novel = float((cos[:, k, :].max(axis=1) < cutoff).mean())
        rows.append((labels[k], str(names[j]), prob[k, j], float(np.median(c)), lo, hi,
                     str(names[j2]), prob[k, j2], p_novel,
                     "novel" if p_novel > 0.5 else str(names[j])))
    table = pd.DataFrame(rows, columns=["signature", "best_match", "probability", "cosine",
                                        "cosine_low", "cosine_high", "second_match",
                                        "second_probability", "p_novel", "call"])
    table.attrs.update(cutoff=cutoff, level=level, n_draws=G)
    probs = xr.DataArray(prob, dims=("signature", "reference"),
                         coords={"signature": labels, "reference": names},
                         name="match_probability")
    return table, probs


def assignment_table(dt):
    """The assignment of a :func:`~bnmfzoo.signatures.extract` result as a table.

    Probabilities that no draw or every draw gave are written ``<1/G`` or ``>1-1/G``
    (:func:`probability_text`).
    """
    a = dt["assignment"].to_dataset().drop_vars("match_probability")
    a = a.drop_dims("reference", errors="ignore").to_dataframe().reset_index()
    G = int(dt.attrs.get("n_draws", 0))
    for col in ("probability", "second_probability", "p_novel"):
        a[col] = [probability_text(v, G) for v in a[col]]
    return a
