"""Gamma-Poisson (negative-binomial) NMF: Dirichlet-multinomial split and CRT augmentation.

Model (:func:`bnmfzoo.likelihoods.negative_binomial`): ``X_dn ~ NB(r_dn, p)`` with shape
``r_dn = alpha o_dn sum_k A_dk W_kn`` and ``p = alpha / (1 + alpha)`` (PyMC's spelling). A sum of
NB variables with one ``p`` is NB, so ``X_dn = sum_k x_dnk`` with ``x_dnk ~ NB(r_dnk, p)``:
given ``X_dn`` the split is Dirichlet-multinomial with parameters ``r_dnk``. Each ``x_dnk`` is
then a compound Poisson: the number of tables ``l_dnk ~ CRT(x_dnk, r_dnk)`` (Chinese restaurant
table distribution) is ``Poisson(r_dnk q)`` with ``q = log(1 + 1 / alpha)`` marginally, which
makes ``A`` and ``W`` conjugate again (Zhou & Carin 2015, Theorem 1):
``A_dk | l ~ Gamma(a + sum_n l_dnk, b + alpha q sum_n o_dn W_kn)``. Zeros have ``l = 0`` and
enter only through the exposures, as in the Poisson model. The dispersion ``alpha`` is updated
by slice sampling its conditional given ``A, W`` (the NB likelihood, O(nonzeros) per
evaluation).

**Cost bounded by the data's size.** A count ``x`` up to :data:`BIG_NB_COUNT` is split by a
Polya urn (O(x K)) and its tables drawn one customer at a time (O(x)); a larger one by a
Dirichlet draw and K binomials (O(K), :mod:`bnmfzoo.inference.counts._exact.variates`) and
block CRT draws (O(sqrt(r) log(1 + x / r)) blocks for a shape ``r``,
:mod:`bnmfzoo.inference.counts._exact.crt`: at most ~2e4 blocks, ~10 ms, for 32-bit counts).
All are exact. The kernel runs in calls of :data:`WORK_PER_CALL` work units and returns to
Python between them (Ctrl-C and signal handlers run there).

References
----------
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._core import _next_uniform, exposures, seed_state
from bnmfzoo.inference.counts._exact.crt import crt
from bnmfzoo.inference.counts._exact.variates import dirmult_into

__all__ = ["split_crt", "nb_loglik", "slice_log_alpha", "nb_rate_factor", "BIG_NB_COUNT"]


def nb_rate_factor(alpha):
    """``alpha log(1 + 1 / alpha)``: the Poisson rate of the tables per unit of ``o A W``."""
    return alpha * math.log1p(1.0 / alpha)


#: counts above this are split (Dirichlet-multinomial) and their tables drawn (CRT) by the
#: bounded-cost exact samplers of :mod:`bnmfzoo.inference.counts._exact`; counts up to it by
#: the Polya urn and one Bernoulli per customer (the draws of every earlier release)
BIG_NB_COUNT = 64
#: work units (urn steps, CRT customers or blocks) per call of the split kernel: the caller
#: returns to Python between calls (Ctrl-C and signal handlers run there), ~10-50 ms apart
WORK_PER_CALL = 2_000_000


@numba.njit(cache=True)
def _split_crt_kernel(indptr, cols, counts, A, Wt, scale_nz, state, LA, LWt, d0, budget,
                      threshold):
    """Split and tables of rows ``d0, d0 + 1, ...`` until ``budget`` work units are spent.

    Returns ``(code, next row)``: code 0 ok, 1 a nonzero count with a zero or non-finite NB
    shape. Counts above ``threshold`` use :func:`dirmult_into` and :func:`crt` (cost O(K) and
    O(blocks)); the others the urn (O(x K)) and the direct CRT (O(x)), so a row costs at most
    O(row nonzeros x K x threshold) plus the blocks.
    """
    D, K = A.shape
    r = np.empty(K)
    cum = np.empty(K)
    n = np.zeros(K)
    g = np.empty(K)
    work = np.zeros(1, np.int64)
    d = d0
    while d < D and work[0] < budget:
        for k in range(K):
            LA[d, k] = 0.0
        for e in range(indptr[d], indptr[d + 1]):
            j = cols[e]
            x = counts[e]
            R = 0.0
            for k in range(K):
                r[k] = scale_nz[e] * A[d, k] * Wt[j, k]
                R += r[k]
                n[k] = 0.0
            if not (R > 0.0 and R < np.inf):
                return 1, d
            if x > threshold:
                if dirmult_into(x, r, g, n, state):
                    return 1, d
                work[0] += 4 * K
            else:
                work[0] += x * K
                for t in range(x):  # Polya urn: the Dirichlet-multinomial split
                    tot = 0.0
                    for k in range(K):
                        tot += r[k] + n[k]
                        cum[k] = tot
                    v = _next_uniform(state) * tot
                    k = 0
                    while k < K - 1 and v >= cum[k]:
                        k += 1
                    n[k] += 1.0
            for k in range(K):  # CRT(n_k, r_k): tables opened
                m = int(n[k])
                if m > threshold:
                    tables = float(crt(m, r[k], state, work))
                else:
                    work[0] += m
                    tables = 0.0
                    for i in range(m):
                        if _next_uniform(state) * (r[k] + i) < r[k]:
                            tables += 1.0
                LA[d, k] += tables
                LWt[j, k] += tables
        d += 1
    return 0, d


def split_crt(data, A, W, scale_nz, rng, *, threshold=BIG_NB_COUNT, budget=WORK_PER_CALL):
    """Table counts ``(LA (D, K), LW (K, N))`` of the DirMult split and CRT of every nonzero.

    ``scale_nz`` is ``alpha o_dn`` per nonzero (CSR order). Cost O(sum over nonzeros of
    ``K min(x, threshold)``) plus, for counts above ``threshold``, O(K) for the split and
    the CRT blocks (:mod:`bnmfzoo.inference.counts._exact.crt`: ~``sqrt(r) log(1 + n / r)``,
    at most ~2e4 for 32-bit counts): bounded by the number of nonzeros, not their values.
    The kernel runs in calls of ``budget`` work units and returns to Python between them,
    so Ctrl-C and signals are seen within ~50 ms. The draws do not depend on ``budget``.
    """
    D, N = data.shape
    K = A.shape[1]
    LA = np.empty((D, K))
    LWt = np.zeros((N, K))
    A = np.ascontiguousarray(A, float)
    Wt = np.ascontiguousarray(W.T, float)
    scale_nz = np.ascontiguousarray(scale_nz, float)
    state = seed_state(rng)
    d = 0
    while d < D:
        code, d = _split_crt_kernel(data.indptr, data.cols, data.counts, A, Wt, scale_nz, state,
                                    LA, LWt, d, int(budget), int(threshold))
        if code:
            raise FloatingPointError("a nonzero count has a zero or non-finite NB shape")
    return LA, np.ascontiguousarray(LWt.T)


@numba.njit(cache=True)
def _nz_means(indptr, cols, A, Wt, offsets_nz, out):
    D, K = A.shape
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            j = cols[e]
            m = 0.0
            for k in range(K):
                m += A[d, k] * Wt[j, k]
            out[e] = m * offsets_nz[e]


@numba.njit(cache=True)
def _nb_nz_part(counts, mu_nz, alpha):
    out = 0.0
    for e in range(counts.size):
        x = counts[e]
        r = alpha * mu_nz[e]
        out += math.lgamma(x + r) - math.lgamma(r) - math.lgamma(x + 1.0)
    return out


def nonzero_means(data, A, W, offsets_nz):
    """``o_dn (A @ W)_dn`` at every nonzero (CSR order)."""
    out = np.empty(data.nnz)
    _nz_means(data.indptr, data.cols, np.ascontiguousarray(A, float),
              np.ascontiguousarray(W.T, float), offsets_nz, out)
    return out


def nb_loglik(alpha, data, mu_nz, total_mu):
    """NB log-likelihood of the observed cells given the means (``total_mu``: their sum).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import nbinom
    >>> from bnmfzoo.inference.counts._core import CountMatrix
    >>> X = np.array([[0, 2], [1, 0]]); mu = np.array([[0.5, 1.5], [2.0, 1.0]])
    >>> m = CountMatrix.from_entries(*np.nonzero(X), X[np.nonzero(X)], X.shape)
    >>> a = 1.7
    >>> ours = nb_loglik(a, m, mu[np.nonzero(X)], mu.sum())
    >>> bool(np.isclose(ours, nbinom.logpmf(X, a * mu, a / (1 + a)).sum()))
    True
    """
    x = data.counts
    lp = math.log(alpha / (1.0 + alpha))
    lq = math.log(1.0 / (1.0 + alpha))
    return (_nb_nz_part(x, mu_nz, alpha) + float(x.sum()) * lq + alpha * lp * total_mu)


def slice_log_alpha(alpha, logpost, rng, *, width=1.0, max_steps=50):
    """One slice-sampling update (stepping out, shrinkage; Neal 2003) of ``log alpha``.

    ``logpost(alpha)`` is the log density of ``alpha`` (prior times likelihood); the Jacobian
    of ``u = log alpha`` is added here.
    """
    def f(u):
        return logpost(math.exp(u)) + u

    u0 = math.log(alpha)
    y = f(u0) + math.log(rng.uniform())
    lo = u0 - width * rng.uniform()
    hi = lo + width
    steps = 0
    while f(lo) > y and steps < max_steps:
        lo -= width
        steps += 1
    steps = 0
    while f(hi) > y and steps < max_steps:
        hi += width
        steps += 1
    while True:
        u = rng.uniform(lo, hi)
        if f(u) > y:
            return math.exp(u)
        if u < u0:
            lo = u
        else:
            hi = u


def total_mean(expo, A, W):
    """``sum over observed cells of o_dn (A @ W)_dn``."""
    return float(np.sum(A * exposures(expo, W)))
