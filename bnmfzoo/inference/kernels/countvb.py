"""Passes of count variational Bayes over the nonzeros (numba; the Gamma bound terms in SciPy).

Written once for the serial count VB (:mod:`bnmfzoo.inference.counts.variational`) and the
row-blocked VB (:mod:`bnmfzoo.inference.blocked`): every loop runs over the nonzeros of a CSR
block in index order, so a block's result has the same bits in any process.

* :func:`poisson_vb_pass` -- expected latent-count tables ``SA, SW`` of Poisson NMF under
  ``q(Z) ∝ L_A L_W`` and the data term ``sum x log sum_k L_A L_W - log x!`` (Cemgil 2009);
* :func:`nb_tables` -- expected CRT tables of the negative binomial
  ``E[l_dnk] = alpha o L_A L_W (psi(x + S) - psi(S))`` (Zhou & Carin 2015), with
  :func:`psi_diff` and :func:`digamma_series`;
* :func:`lgamma_ratio_sum` -- ``sum lgamma(x + aM) - lgamma(aM)``, the NB bound's data term;
* :func:`alpha_sums` -- the sums in the derivatives of that term in ``log alpha`` (with
  :func:`trigamma_series`), for the Newton steps of a learned dispersion;
* :func:`nonzero_means_into` -- ``o sum_k A W`` at each nonzero;
* :func:`gamma_kl_elements` -- ``E_q log p - E_q log q`` of Gamma factors, element by element.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
"""

import math

import numba
import numpy as np
from scipy.special import digamma, gammaln

__all__ = ["poisson_vb_pass", "nb_tables", "psi_diff", "digamma_series", "lgamma_ratio_sum",
           "nonzero_means_into", "gamma_kl_elements", "alpha_sums", "trigamma_series"]


@numba.njit(cache=True)
def poisson_vb_pass(indptr, cols, counts, LA, LWt, SA, SWt):
    """Fill ``SA`` (rows, K) and ``SWt`` (N, K); return the data term (``nan``: a zero mean).

    ``SA[d, k] = sum_n x_dn LA_dk LWt_nk / sum_k' LA_dk' LWt_nk'`` over the row's nonzeros,
    ``SWt`` likewise per column; the return value is ``sum x log(sum_k LA LWt) - log x!``.
    """
    D, K = LA.shape
    SA[:] = 0.0
    SWt[:] = 0.0
    ll = 0.0
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            n = cols[e]
            x = counts[e]
            den = 0.0
            for k in range(K):
                den += LA[d, k] * LWt[n, k]
            if not (den > 0.0 and den < np.inf):
                return np.nan
            r = x / den
            for k in range(K):
                t = LA[d, k] * LWt[n, k] * r
                SA[d, k] += t
                SWt[n, k] += t
            ll += x * math.log(den) - math.lgamma(x + 1.0)
    return ll


@numba.njit(cache=True)
def digamma_series(y):
    """``psi(y)`` for ``y > 0``: recurrence, then the asymptotic series (rel. error < 1e-10)."""
    r = 0.0
    while y < 6.0:  # recurrence, then the asymptotic series (relative error < 1e-10)
        r -= 1.0 / y
        y += 1.0
    f = 1.0 / (y * y)
    return (r + math.log(y) - 0.5 / y
            - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132)))))


@numba.njit(cache=True)
def psi_diff(x, S):
    """``psi(x + S) - psi(S)`` for an integer ``x >= 0`` (a finite sum up to x = 32)."""
    if x <= 32:
        out = 0.0
        for i in range(x):
            out += 1.0 / (S + i)
        return out
    return digamma_series(x + S) - digamma_series(S)


@numba.njit(cache=True)
def nb_tables(indptr, cols, counts, M, offsets_nz, alpha, LA, LWt, SA, SWt):
    """Fill ``SA`` (rows, K) and ``SWt`` (N, K) with the sums of the expected CRT tables.

    ``M`` is ``o sum_k LA LWt`` per nonzero (CSR order); ``counts`` integers.
    """
    D, K = LA.shape
    SA[:] = 0.0
    SWt[:] = 0.0
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            n = cols[e]
            we = alpha * offsets_nz[e] * psi_diff(counts[e], alpha * M[e])
            for k in range(K):
                t = LA[d, k] * LWt[n, k] * we
                SA[d, k] += t
                SWt[n, k] += t


@numba.njit(cache=True)
def lgamma_ratio_sum(counts, M, a):
    """``sum lgamma(x + aM) - lgamma(aM)`` (log of a product up to x = 8)."""
    out = 0.0
    for e in range(counts.size):
        x = counts[e]
        S = a * M[e]
        if x <= 8 and S < 1e30:  # the product stays below 1e250
            prod = 1.0
            for i in range(x):
                prod *= S + i
            out += math.log(prod)
        else:
            out += math.lgamma(x + S) - math.lgamma(S)
    return out


@numba.njit(cache=True)
def trigamma_series(y):
    """``psi'(y)`` for ``y > 0``: recurrence, then the asymptotic series."""
    r = 0.0
    while y < 6.0:
        r += 1.0 / (y * y)
        y += 1.0
    f = 1.0 / (y * y)
    return r + 1.0 / y + 0.5 * f + f / y * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f / 30)))


@numba.njit(cache=True)
def alpha_sums(counts, M, a):
    """``sum M (psi(x + aM) - psi(aM))`` and ``sum M^2 (psi'(x + aM) - psi'(aM))``."""
    g = 0.0
    h = 0.0
    for e in range(counts.size):
        x = counts[e]
        m = M[e]
        S = a * m
        if x <= 32:  # exact finite sums for integer x
            d1 = 0.0
            d2 = 0.0
            for i in range(x):
                t = 1.0 / (S + i)
                d1 += t
                d2 -= t * t
        else:
            d1 = digamma_series(x + S) - digamma_series(S)
            d2 = trigamma_series(x + S) - trigamma_series(S)
        g += m * d1
        h += m * m * d2
    return g, h


@numba.njit(cache=True)
def nonzero_means_into(indptr, cols, A, Wt, offsets_nz, out):
    """``out[e] = o_e sum_k A[d, k] Wt[n, k]`` at each nonzero ``e = (d, n)`` (CSR order)."""
    D, K = A.shape
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            j = cols[e]
            m = 0.0
            for k in range(K):
                m += A[d, k] * Wt[j, k]
            out[e] = m * offsets_nz[e]


def gamma_kl_elements(a, Eb, Elogb, alpha, beta):
    """``E_q[log Gamma(x; a, b)] - E_q[log q(x)]`` per element, ``q(x) = Gamma(alpha, beta)``.

    ``Eb`` and ``Elogb`` are the expectations of the prior rate under its own ``q`` (the
    constant rate and its log when it is fixed). Elementwise only (no sum), so a caller can add
    the terms in the order it needs.

    Examples
    --------
    >>> import numpy as np
    >>> float(gamma_kl_elements(1.0, 1.0, 0.0, np.array([1.0]), np.array([1.0]))[0])
    0.0
    """
    Elogx = digamma(alpha) - np.log(beta)
    Ex = alpha / beta
    logp = a * Elogb - gammaln(a) + (a - 1.0) * Elogx - Eb * Ex
    logq = alpha * np.log(beta) - gammaln(alpha) + (alpha - 1.0) * Elogx - alpha
    return logp - logq
