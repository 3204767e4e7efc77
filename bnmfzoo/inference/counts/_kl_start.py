"""KL multiplicative updates from a state towards a posterior mode of a Poisson NMF.

Used to start chains that look for modes (the large route's restarts,
:func:`bnmfzoo.inference.large_route.restart_modes`, and the default route's plain chains,
:func:`bnmfzoo.inference.mode_bridge.chain_starts`); it only moves a start, it is no kernel.

References
----------
Lee, D. D. & Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
"""

import math

import numpy as np

from bnmfzoo.inference.counts._problem import observed_cells

__all__ = ["kl_nmf_start", "log_posterior", "mode_tol", "KL_CHECK", "KL_MAX"]


#: updates between the checks of :func:`kl_nmf_start`'s ``tol``
KL_CHECK = 50
#: the most KL updates of a start moved to its mode (:func:`mode_tol` as ``tol``; the large
#: route's restarts)
KL_MAX = 5000


def mode_tol(problem):
    """``sqrt(dimension)`` nats: below this gain in :data:`KL_CHECK` updates a start is at its mode.

    Close enough for the chains that follow: the posterior's typical set lies about
    ``dimension / 2`` nats below the mode, spread over about ``sqrt(dimension / 2)``.
    """
    D, N = problem.shape
    return math.sqrt((D + N) * problem.rank)


def kl_nmf_start(problem, state, n_iter=300, tol=None):
    """``state`` moved by ``n_iter`` KL multiplicative updates towards the mode in ``log x``.

    ``A <- (A sum_n (X/mu) o W + aA) / (sum_n o W + bA)`` and the same for ``W``: the
    minorise-maximise step of Lee & Seung (2001) for the Poisson likelihood with the Gamma
    prior's density on ``log x`` (``a log x - b x``), so it climbs to the posterior mode of
    ``(log A, log W)``, where HMC runs. Every update keeps the factors positive and away from
    zero (a row or column of zeros gets ``a / (b + ...)``, not an underflow). The
    observed cells' offsets ``o`` are used; unobserved cells carry no weight. Returns a new
    state dict (``A``, ``W`` floored at the smallest positive float).

    With ``tol``, the updates stop once :data:`KL_CHECK` of them raised that log posterior
    (:func:`log_posterior`) by less than ``tol`` (``n_iter`` is then the most made). From
    prior draws on ESCC SBS96 at K = 4, 300 updates left the starts 1,700-9,000 nats below
    the mode and up to 7,800 below the posterior's typical set (chains of latent-count sweeps
    from such a start spent their first 900 sweeps climbing); with ``tol = sqrt(dimension)``
    (51) the updates stopped after 800-1,150, within 50-200 nats of the mode
    (``docs/results/masses_copula_reference_2.md`` section 34).

    Examples
    --------
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.models import poisson, recognize
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(rng.gamma(2.0, 1.0, (20, 2)) @ rng.gamma(2.0, 5.0, (2, 15)))
    >>> p = problem_from_factorization(recognize(poisson(X.astype(float), 2)))
    >>> s0 = {"A": rng.gamma(1.0, 1.0, (20, 2)), "W": rng.gamma(1.0, 1.0, (2, 15))}
    >>> s = kl_nmf_start(p, s0, n_iter=5000, tol=1.0)
    >>> bool(log_posterior(p, kl_nmf_start(p, s, 50)) - log_posterior(p, s) < 1.0)
    True
    """
    X, Of, aA, bA, aW, bW = _dense(problem)
    A, W = np.array(state["A"], float), np.array(state["W"], float)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W)) and np.all(A > 0)
            and np.all(W > 0)):
        raise ValueError("state must hold finite positive factors A and W")
    tiny = np.finfo(float).tiny
    last = _log_posterior(X, Of, A, W, aA, bA, aW, bW) if tol is not None else None
    for i in range(int(n_iter)):
        R = X / np.maximum(Of * (A @ W), tiny) * Of
        A = np.maximum((A * (R @ W.T) + aA) / (Of @ W.T + bA), tiny)
        R = X / np.maximum(Of * (A @ W), tiny) * Of
        W = np.maximum((W * (A.T @ R) + aW) / (A.T @ Of + bW), tiny)
        if last is not None and (i + 1) % KL_CHECK == 0:
            now = _log_posterior(X, Of, A, W, aA, bA, aW, bW)
            if now - last < float(tol):
                break
            last = now
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W))):
        raise FloatingPointError("the KL updates met a non-finite value")
    out = dict(state)
    out.update(A=A, W=W)
    return out


def _log_posterior(X, Of, A, W, aA, bA, aW, bW):
    """The Poisson log likelihood plus the Gamma priors' log densities on ``log A, log W``."""
    mu = np.maximum(Of * (A @ W), np.finfo(float).tiny)
    prior = np.sum(aA * np.log(A) - bA * A) + np.sum(aW * np.log(W) - bW * W)
    return float(np.sum(X * np.log(mu) - mu) + prior)


def log_posterior(problem, state):
    """What :func:`kl_nmf_start` climbs: the log posterior of ``(log A, log W)``.

    Up to a constant; the Poisson log likelihood of the observed cells plus the Gamma priors'
    log densities on ``log A`` and ``log W``.
    """
    X, Of, aA, bA, aW, bW = _dense(problem)
    return _log_posterior(X, Of, np.asarray(state["A"], float), np.asarray(state["W"], float),
                          aA, bA, aW, bW)


def _dense(problem):
    """Dense counts and offsets, and the priors' shapes and rates at the factors' shapes.

    The ``(D, N)`` arrays are zero where a cell is not observed.
    """
    D, N = problem.shape
    rows, cols, offs, x = observed_cells(problem)
    X, Of = np.zeros((D, N)), np.zeros((D, N))
    X[rows, cols], Of[rows, cols] = x, offs
    K = problem.rank
    aA, bA = (np.broadcast_to(np.asarray(v, float), (D, K)) for v in (problem.aA, problem.bA))
    aW, bW = (np.broadcast_to(np.asarray(v, float), (K, N)) for v in (problem.aW, problem.bW))
    return X, Of, aA, bA, aW, bW
