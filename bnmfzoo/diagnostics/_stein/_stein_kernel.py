r"""The Stein kernel matrix and the V- and U-statistics of the KSD (NumPy only).

For a base kernel :math:`k` and the score :math:`S = \nabla \log p` the Stein kernel is
(Liu, Lee & Jordan 2016, Theorem 3.6; Masood & Doshi-Velez 2019, eq. 3)

.. math::

    \mathcal K_p(\theta, \theta') = S^\top S' k + S^\top \nabla_{\theta'} k
    + S'^\top \nabla_\theta k + \operatorname{tr} \nabla_\theta \nabla_{\theta'} k ,

and the squared KSD of weighted points is the V-statistic
:math:`\mathbb S = \sum_{ij} w_i w_j \mathcal K_p(\theta_i, \theta_j)` (Masood & Doshi-Velez
2019, eq. 4). For i.i.d. points from :math:`q` its expectation is
:math:`\mathrm{KSD}^2(q, p) + \mathbb E_q[\mathcal K_p(\theta, \theta)] / M`, so for exact
draws it falls like :math:`1/M`; the U-statistic (diagonal removed, Liu, Lee & Jordan 2016,
eq. 14) is unbiased for :math:`\mathrm{KSD}^2(q, p)` and is about zero for exact draws.
"""

from collections.abc import Mapping

import numpy as np

from bnmfzoo.diagnostics._stein._kernels import AdaptiveKernel, median_imq

__all__ = ["ksd_statistics", "stein_kernel_matrix"]


def _as_blocks(positions, scores, blocks):
    """Normalize inputs to (dict name -> (M, d_g) positions, same for scores)."""
    if isinstance(positions, Mapping) != isinstance(scores, Mapping):
        raise TypeError("positions and scores must both be dicts or both be arrays")
    if isinstance(positions, Mapping):
        if set(positions) != set(scores):
            raise ValueError(
                f"positions and scores have different blocks: {sorted(positions)} vs "
                f"{sorted(scores)}"
            )
        pos = {}
        sco = {}
        for name in positions:
            p = np.asarray(positions[name], dtype=float)
            s = np.asarray(scores[name], dtype=float)
            if p.shape != s.shape or p.ndim < 1:
                raise ValueError(
                    f"positions[{name!r}] and scores[{name!r}] must have the same shape "
                    f"(M, ...), got {p.shape} and {s.shape}"
                )
            pos[name] = p.reshape(len(p), -1)
            sco[name] = s.reshape(len(s), -1)
    else:
        p = np.asarray(positions, dtype=float)
        s = np.asarray(scores, dtype=float)
        if p.ndim != 2 or p.shape != s.shape:
            raise ValueError(
                f"positions and scores must be arrays of the same shape (M, d), got "
                f"{p.shape} and {s.shape}"
            )
        if blocks is None:
            blocks = {"theta": slice(None)}
        pos = {name: p[:, sl] for name, sl in blocks.items()}
        sco = {name: s[:, sl] for name, sl in blocks.items()}
        covered = np.zeros(p.shape[1], dtype=int)
        for sl in blocks.values():
            covered[sl] += 1
        if (covered != 1).any():
            raise ValueError("blocks must cover every coordinate of positions exactly once")
    ms = {v.shape[0] for v in pos.values()}
    if len(ms) != 1:
        raise ValueError(f"all blocks must have the same number of points, got {sorted(ms)}")
    if 0 in ms:
        raise ValueError("positions must hold at least one point")
    for name in pos:
        if not (np.isfinite(pos[name]).all() and np.isfinite(sco[name]).all()):
            raise ValueError(f"positions/scores of block {name!r} contain NaN or infinite values")
    return pos, sco


def stein_kernel_matrix(positions, scores, *, blocks=None, kernel=None, return_kernel=False):
    r"""Stein kernel matrix :math:`K_{ij} = \mathcal K_p(\theta_i, \theta_j)` in closed form.

    Eq. 3 of Masood & Doshi-Velez (2019) for a block-radial base kernel
    :math:`k = F(r^2_1, \dots, r^2_G)`, with :math:`\Delta = \theta - \theta'`:

    .. math::

        \mathcal K_p = \langle S, S'\rangle k
        + \sum_g 2F_g \langle S'_g - S_g, \Delta_g\rangle
        + \sum_g \left[-2 d_g F_g - 4 r_g^2 F_{gg}\right],

    evaluated for all pairs from Gram matrices (:math:`\lVert\Delta_g\rVert^2` from norms and
    :math:`\theta\theta^\top`, :math:`\langle S'_g - S_g, \Delta_g\rangle` from
    :math:`S\theta^\top`) after centering each block. Cost :math:`O(M^2 d)` in BLAS calls,
    memory :math:`O(M^2 + Md)`.

    Parameters
    ----------
    positions, scores : numpy.ndarray or dict of str to numpy.ndarray
        Either arrays ``(M, d)`` split by ``blocks``, or dicts block name -> array ``(M, ...)``.
    blocks : dict of str to slice, optional
        Block name -> slice of the ``d`` coordinates (e.g. ``ScoreFunction.blocks``). Default one
        block named ``"theta"``.
    kernel : object with ``evaluate(sqdist) -> (k, d1, d2)`` or ``fit(sqdist)``, optional
        The base kernel (see :mod:`bnmfzoo.diagnostics._stein._kernels`); an adaptive kernel (with
        ``fit``) is first fitted to the points' pairwise squared distances. Default
        :func:`~bnmfzoo.diagnostics._stein._kernels.median_imq`: one IMQ kernel (``b = -1/2``) with
        a
        per-block length scale equal to the median pairwise distance of that block.
    return_kernel : bool
        Also return the (fitted) base kernel.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, kernel)
        Symmetric positive semi-definite ``(M, M)`` matrix (and the base kernel used).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics import stein_kernel_matrix
    >>> x = np.random.default_rng(0).normal(size=(5, 2))
    >>> K = stein_kernel_matrix(x, -x)  # standard normal target: score -x
    >>> K.shape, bool(np.allclose(K, K.T))
    ((5, 5), True)
    """
    kernel = median_imq() if kernel is None else kernel
    if not (hasattr(kernel, "evaluate") or isinstance(kernel, AdaptiveKernel)):
        raise TypeError(
            f"kernel must provide evaluate(sqdist) -> (k, d1, d2) (e.g. a BlockKernel), got "
            f"{kernel!r}"
        )
    pos, sco = _as_blocks(positions, scores, blocks)
    sqdist = {}
    cross = {}
    dims = {}
    score_gram = 0.0
    for name, x in pos.items():
        s = sco[name]
        x = x - x.mean(axis=0)  # translation invariant; limits cancellation in the Gram trick
        sq = np.einsum("ij,ij->i", x, x)
        r2 = sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)
        np.maximum(r2, 0.0, out=r2)
        np.fill_diagonal(r2, 0.0)
        sqdist[name] = r2
        sx = s @ x.T  # sx[i, j] = <S_i, theta_j>
        dsx = np.diag(sx)
        # <S_j - S_i, theta_i - theta_j> for the pair (i, j)
        cross[name] = sx + sx.T - dsx[:, None] - dsx[None, :]
        dims[name] = x.shape[1]
        score_gram = score_gram + s @ s.T
    if isinstance(kernel, AdaptiveKernel):
        kernel = kernel.fit(sqdist)
    k, d1, d2 = kernel.evaluate(sqdist)
    K = score_gram * k
    for name in pos:
        K += 2.0 * d1[name] * cross[name]
        K += -2.0 * dims[name] * d1[name] - 4.0 * sqdist[name] * d2[name]
    K = 0.5 * (K + K.T)
    return (K, kernel) if return_kernel else K


def ksd_statistics(K, weights=None):
    r"""V- and U-statistics of the squared KSD and the effective number of points.

    Parameters
    ----------
    K : array-like, shape (M, M)
        A Stein kernel matrix (:func:`stein_kernel_matrix`).
    weights : array-like, shape (M,), optional
        Non-negative weights summing to one; default uniform.

    Returns
    -------
    dict
        ``ksd_v``: :math:`V = w^\top K w` (Masood & Doshi-Velez 2019, eq. 4; the diagonal
        included); ``ksd_u``: :math:`U = \sum_{i \ne j} w_i w_j K_{ij} / (1 - \sum_i w_i^2)`,
        which for uniform weights is the U-statistic
        :math:`\frac{1}{M(M-1)}\sum_{i \ne j} K_{ij}` (Liu, Lee & Jordan 2016, eq. 14), unbiased
        for :math:`\mathrm{KSD}^2` of i.i.d. points and so about zero, possibly negative, for exact
        draws (for weights chosen from ``K`` itself it is a diagnostic, not an unbiased
        estimate); ``n_eff``: :math:`1 / \sum_i w_i^2`. ``ksd_u`` is NaN when one point carries
        all the weight.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein._stein_kernel import ksd_statistics
    >>> stats = ksd_statistics(np.array([[2.0, -1.0], [-1.0, 2.0]]))
    >>> stats["ksd_v"], stats["ksd_u"], stats["n_eff"]
    (0.5, -1.0, 2.0)
    """
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"K must be a non-empty square matrix, got shape {K.shape}")
    m = K.shape[0]
    w = np.full(m, 1.0 / m) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (m,):
        raise ValueError(f"weights must have shape ({m},), got {w.shape}")
    v = float(w @ K @ w)
    sq = float(w @ w)
    diag = float(np.sum(w * w * np.diag(K)))
    u = (v - diag) / (1.0 - sq) if 1.0 - sq > 1e-12 else float("nan")
    return {"ksd_v": v, "ksd_u": float(u), "n_eff": 1.0 / sq}

