"""KL multiplicative updates from a state towards a posterior mode of a Poisson NMF.

Used to start chains that look for modes (the large route's restarts,
:func:`bnmfzoo.inference.large_route.restart_modes`, and the default route's plain chains,
:func:`bnmfzoo.inference.mode_bridge.chain_starts`); it only moves a start, it is no kernel.

References
----------
Lee, D. D. & Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
"""

import numpy as np

from bnmfzoo.inference.counts._problem import observed_cells

__all__ = ["kl_nmf_start"]


def kl_nmf_start(problem, state, n_iter=300):
    """``state`` moved by ``n_iter`` KL multiplicative updates towards the mode in ``log x``.

    ``A <- (A sum_n (X/mu) o W + aA) / (sum_n o W + bA)`` and the same for ``W``: the
    minorise-maximise step of Lee & Seung (2001) for the Poisson likelihood with the Gamma
    prior's density on ``log x`` (``a log x - b x``), so it climbs to the posterior mode of
    ``(log A, log W)``, where HMC runs. Every update keeps the factors positive and away from
    zero (a row or column of zeros gets ``a / (b + ...)``, not an underflow). The
    observed cells' offsets ``o`` are used; unobserved cells carry no weight. Returns a new
    state dict (``A``, ``W`` floored at the smallest positive float).
    """
    D, N = problem.shape
    rows, cols, offs, x = observed_cells(problem)
    X, Of = np.zeros((D, N)), np.zeros((D, N))
    X[rows, cols], Of[rows, cols] = x, offs
    K = problem.rank
    aA, bA = (np.broadcast_to(np.asarray(v, float), (D, K)) for v in (problem.aA, problem.bA))
    aW, bW = (np.broadcast_to(np.asarray(v, float), (K, N)) for v in (problem.aW, problem.bW))
    A, W = np.array(state["A"], float), np.array(state["W"], float)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W)) and np.all(A > 0)
            and np.all(W > 0)):
        raise ValueError("state must hold finite positive factors A and W")
    tiny = np.finfo(float).tiny
    for _ in range(int(n_iter)):
        R = X / np.maximum(Of * (A @ W), tiny) * Of
        A = np.maximum((A * (R @ W.T) + aA) / (Of @ W.T + bA), tiny)
        R = X / np.maximum(Of * (A @ W), tiny) * Of
        W = np.maximum((W * (A.T @ R) + aW) / (A.T @ Of + bW), tiny)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W))):
        raise FloatingPointError("the KL updates met a non-finite value")
    out = dict(state)
    out.update(A=A, W=W)
    return out
