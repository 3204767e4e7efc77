"""Independent evidence estimates of tiny Poisson NMF problems, to check Chib's estimate.

* :func:`exact_log_evidence`: brute force. Given ``T``, each column of ``V`` integrates in
  closed form once the sources are enumerated, so ``p(Y) = E_{T ~ prior} prod_n p(y_n | T)``
  with the sum over every source configuration done exactly and the expectation over ``T`` by
  prior Monte Carlo; only a few counts per column are feasible.
* :func:`ais_log_evidence`: annealed importance sampling (Neal 2001, *Stat. Comput.* 11:125)
  along the geometric path ``p(T, V) p(Y | T, V)^beta``, random-walk Metropolis in log space;
  unbiased for ``p(Y)`` whatever the schedule, feasible for a few dozen parameters.

Neither uses the Gibbs sweep, the augmentation or the relabelling average of
:func:`bnmfzoo.signatures.evidence.chib_log_evidence`, so an error there shows as a gap.
"""

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = ["exact_log_evidence", "ais_log_evidence"]


def _compositions(x, parts):
    """Every way to write the count ``x`` as an ordered sum of ``parts`` nonnegative integers."""
    if parts == 1:
        yield (x,)
        return
    for first in range(x + 1):
        for rest in _compositions(x - first, parts - 1):
            yield (first, *rest)


def _prior(Y, prior):
    alpha, aV, bV = prior
    return alpha, aV, np.broadcast_to(np.asarray(bV, float), (Y.shape[1],))


def exact_log_evidence(Y, rank, *, prior=(1.0, 1.0, 1.0), n_prior=200_000, random_seed=None):
    """``log p(Y)`` of a tiny matrix: ``V`` integrated exactly, ``S`` enumerated, ``T`` by MC.

    The model of :func:`~bnmfzoo.signatures.evidence.chib_log_evidence` (``prior = (alpha,
    a_V, b_V)``). With the columns of ``T`` summing to 1, ``p(y_n | T) = sum_S prod_k b_n^a
    Gamma(a + s_kn) / (Gamma(a) (b_n + 1)^(a + s_kn)) prod_d T_dk^s_dkn / s_dkn!``, averaged
    over ``n_prior`` Dirichlet prior draws of ``T``.

    Returns
    -------
    (float, float)
        ``log p(Y)`` and its standard error (delta method).
    """
    rng = np.random.default_rng(random_seed)
    Y = np.asarray(Y, dtype=np.int64)
    D, N = Y.shape
    alpha, aV, bV = _prior(Y, prior)
    T = rng.gamma(alpha, 1.0, (n_prior, D, rank))
    T /= T.sum(axis=1, keepdims=True)
    logT, colsum = np.log(T), T.sum(axis=1)  # (M, D, K), (M, K) (ones)
    total = np.zeros(n_prior)
    for n in range(N):
        terms = []
        for config in itertools.product(*(_compositions(int(Y[d, n]), rank) for d in range(D))):
            s = np.array(config, dtype=float)  # (D, K)
            s_k = s.sum(axis=0)
            term = (aV * math.log(bV[n]) - gammaln(aV) + gammaln(aV + s_k)).sum()
            term = term - gammaln(s + 1).sum()
            term = term - ((aV + s_k)[None, :] * np.log(bV[n] + colsum)).sum(axis=1)
            term = term + np.einsum("dk,mdk->m", s, logT)
            terms.append(term)
        total += logsumexp(np.array(terms), axis=0)
    log_z = logsumexp(total) - math.log(n_prior)
    w = np.exp(total - total.max())
    se = w.std(ddof=1) / math.sqrt(n_prior) / w.mean()
    return float(log_z), float(se)


def _loglik(Y, logG, logV, const):
    G = np.exp(logG)
    lam = np.einsum("pdk,pkn->pdn", G / G.sum(axis=1, keepdims=True), np.exp(logV))
    return (Y[None] * np.log(lam) - lam).sum(axis=(1, 2)) - const


def _logprior(logG, logV, alpha, aV, bV):
    # Gamma(alpha, 1) variables G, T_k = G_k / sum_d G_dk ~ Dirichlet(alpha); densities of
    # exp(logG), exp(logV) with the Jacobian: a log x - b x (+ constants that cancel)
    lt = (alpha * logG - np.exp(logG)).sum(axis=(1, 2))
    lv = (aV * logV - bV[None, None, :] * np.exp(logV)).sum(axis=(1, 2))
    return lt + lv


def ais_log_evidence(Y, rank, *, prior=(1.0, 1.0, 1.0), n_particles=1000, n_temps=500,
                     n_mh=3, random_seed=None):
    """Annealed importance sampling estimate of ``log p(Y)`` (module docstring).

    The signatures are written ``T_k = G_k / sum_d G_dk`` with ``G_dk ~ Gamma(alpha, 1)``
    (then ``T_k ~ Dirichlet(alpha)``), so the sampler moves freely in ``(log G, log V)``.
    Temperatures ``beta_t = (t / n_temps)^4``; at each, ``n_mh`` random-walk Metropolis steps
    in ``(log T, log V)`` leave ``p(T, V) p(Y | T, V)^beta`` invariant; the step size is set
    from the previous temperature's acceptance rate over the particles.

    Returns
    -------
    (float, float)
        ``log p(Y)`` and its standard error over particles (delta method; AIS weights are
        right-skewed, so the error is if anything understated: use independent runs too).
    """
    rng = np.random.default_rng(random_seed)
    Y = np.asarray(Y, dtype=float)
    D, N = Y.shape
    aT, aV, bV = _prior(Y, prior)
    const = gammaln(Y + 1.0).sum()
    P, K = n_particles, rank
    logT = np.log(rng.gamma(aT, 1.0, (P, D, K)))
    logV = np.log(rng.gamma(aV, 1.0 / bV[None, :], (P, K, N)))
    ll = _loglik(Y, logT, logV, const)
    lp = _logprior(logT, logV, aT, aV, bV)
    betas = (np.arange(n_temps + 1) / n_temps) ** 4
    logw = np.zeros(P)
    step = 0.5
    for t in range(1, n_temps + 1):
        logw += (betas[t] - betas[t - 1]) * ll
        beta = betas[t]
        accepted = 0
        for _ in range(n_mh):
            nT = logT + step * rng.standard_normal(logT.shape)
            nV = logV + step * rng.standard_normal(logV.shape)
            nll = _loglik(Y, nT, nV, const)
            nlp = _logprior(nT, nV, aT, aV, bV)
            acc = np.log(rng.random(P)) < (nlp + beta * nll) - (lp + beta * ll)
            logT[acc], logV[acc], ll[acc], lp[acc] = nT[acc], nV[acc], nll[acc], nlp[acc]
            accepted += acc.sum()
        rate = accepted / (n_mh * P)
        step *= math.exp(rate - 0.3)  # aim at about 30 % acceptance
    # the Gamma normalizing constants left out of _logprior cancel along the path
    log_z = logsumexp(logw) - math.log(P)
    w = np.exp(logw - logw.max())
    se = w.std(ddof=1) / math.sqrt(P) / w.mean()
    return float(log_z), float(se)
