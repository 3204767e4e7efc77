"""A cheap screen of the ranks: the variational evidence bound of the signatures' model.

The model of :mod:`bnmfzoo.signatures.evidence` (signatures ``T_k ~ Dirichlet(alpha)``,
exposures ``V_kn ~ Gamma(a_V, b_V[n])``, ``Y_dn ~ Poisson((T V)_dn)``), fitted by mean-field
variational Bayes over the sources, signatures and exposures (Cemgil 2009, with the columns of
``T`` on the simplex): ``q(T_k) = Dirichlet(alpha + E s_dk)``, ``q(V_kn) = Gamma(a_V + E s_kn,
b_V[n] + 1)``, ``q(S_dn.)`` multinomial with weights ``exp(E log T_dk + E log V_kn)``.

The bound ``L_K <= log p(Y | K)`` of one labelling is raised by ``log K!`` (the ``K!``
relabelled copies of a well separated ``q`` form a mixture whose bound is ``L_K + log K!``;
Bishop 2006, Sec. 10.2.5), so that ranks are compared on the same footing. The bound is
*not* the evidence: its gap grows with the rank (the mean field ignores the correlations
between sources, signatures and exposures), so it tends to choose too few signatures on weak
data, and too many under overdispersion. :func:`bnmfzoo.signatures.evidence.rank_posterior`
uses it only to decide where Chib's estimate is spent, and reports the ranks it did not
evaluate as such.
"""

import math

import numpy as np
from scipy.special import digamma, gammaln

__all__ = ["vb_bound", "default_prior"]


def _kl_start(Y, K, rng, n_iter=50):
    """A start near a mode: KL multiplicative updates (Lee & Seung 2001) from a random point.

    Returns ``T`` with columns summing to 1 and ``V`` in mutations.
    """
    D, N = Y.shape
    scale = math.sqrt(max(Y.mean(), 1e-3) / K)
    T = rng.gamma(1.0, scale, (D, K)) + 1e-3
    V = rng.gamma(1.0, scale, (K, N)) + 1e-3
    for _ in range(n_iter):
        R = Y / np.maximum(T @ V, 1e-12)
        T *= (R @ V.T) / np.maximum(V.sum(axis=1), 1e-12)[None, :]
        R = Y / np.maximum(T @ V, 1e-12)
        V *= (T.T @ R) / np.maximum(T.sum(axis=0), 1e-12)[:, None]
    T, V = np.maximum(T, 1e-6), np.maximum(V, 1e-6)
    sums = T.sum(axis=0)
    return T / sums, V * sums[:, None]


def default_prior(Y, rank):
    """``(alpha, a_V, b_V)``: uniform signatures, exposures of prior mean burden / K.

    ``T_k ~ Dirichlet(1, ..., 1)`` (uniform on the simplex); ``V_kn ~ Gamma(1, K / m_n)`` with
    ``m_n`` the sample's number of mutations, so each sample's expected total is its observed
    burden (an empirical-Bayes scale, the same rule at every rank).
    """
    burden = np.maximum(np.asarray(Y).sum(axis=0), 1.0)
    return 1.0, 1.0, rank / burden


def _fit(Y, T, V, prior, n_iter, tol):
    alpha, aV, bV = prior
    D, N = Y.shape
    K = T.shape[1]
    A = alpha + T * 100.0  # Dirichlet parameters around the start
    B = aV + V
    C = bV + 1.0  # (N,)
    const = gammaln(Y + 1.0).sum()
    last = -np.inf
    for it in range(n_iter):
        elogT = digamma(A) - digamma(A.sum(axis=0))[None, :]
        elogV = digamma(B) - np.log(C)[None, :]
        eT, eV = np.exp(elogT), np.exp(elogV)
        Z = np.maximum(eT @ eV, 1e-300)
        R = Y / Z
        s_dk = eT * (R @ eV.T)
        s_kn = eV * (eT.T @ R)
        if it % 10 == 0 or it == n_iter - 1:
            ev = B / C[None, :]
            bound = float((Y * np.log(Z)).sum() - const - ev.sum())
            bound += float(K * (gammaln(D * alpha) - D * gammaln(alpha))
                           + ((alpha - 1.0) * elogT).sum()
                           - (gammaln(A.sum(axis=0)) - gammaln(A).sum(axis=0)).sum()
                           - ((A - 1.0) * elogT).sum())
            bound += float((aV * np.log(bV)[None, :] - gammaln(aV) + (aV - 1.0) * elogV
                            - bV[None, :] * ev).sum()
                           - (B * np.log(C)[None, :] - gammaln(B) + (B - 1.0) * elogV
                              - C[None, :] * ev).sum())
            if abs(bound - last) < tol * max(1.0, abs(bound)):
                break
            last = bound
        A = alpha + s_dk
        B = aV + s_kn
    return bound, A / A.sum(axis=0, keepdims=True), B / C[None, :]


def vb_bound(Y, rank, *, prior=None, n_restarts=2, n_iter=400, tol=1e-7, random_seed=None):
    """``max over restarts of L_K + log K!`` for the signatures' model (module docstring).

    Also returns the variational means ``E T`` (D, K) and ``E V`` (K, N) of the best restart:
    a start near the posterior mode for the Gibbs chains of Chib's estimate, whose burn-in
    from a cruder start is long where signatures overlap.

    Parameters
    ----------
    Y : array of int, shape (D, N)
        Counts, channels x samples.
    rank : int
    prior : tuple, optional
        ``(alpha, a_V, b_V)``; default :func:`bnmfzoo.signatures.evidence.default_prior`.
    n_restarts, n_iter, tol
        Restarts from KL-NMF starts, iterations each, relative change that stops one.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    (float, numpy.ndarray, numpy.ndarray)
        The bound, ``E T`` and ``E V``.
    """
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2 or not np.isfinite(Y).all() or (Y < 0).any():
        raise ValueError("Y must be a 2-D array of non-negative counts")
    K = int(rank)
    rng = np.random.default_rng(random_seed)
    alpha, aV, bV = default_prior(Y, K) if prior is None else prior
    bV = np.broadcast_to(np.asarray(bV, dtype=float), (Y.shape[1],)).copy()
    best = (-np.inf, None, None)
    for _ in range(max(1, n_restarts)):
        T, V = _kl_start(Y, K, rng)
        fit = _fit(Y, T, V, (float(alpha), float(aV), bV), n_iter, tol)
        if fit[0] > best[0]:
            best = fit
    return best[0] + math.lgamma(K + 1.0), best[1], best[2]
