"""The dense Poisson NMF gradient on ``log A, log W`` in one fused pass over the rows (numba).

The same target and gradient as :func:`~bnmfzoo.inference.counts._hmc_kernels.grad_dense`
with ``beta = 1``:

``log pi = sum_x (a_x theta_x - r_x e^theta_x) + sum_dn (X_dn log mu_dn - mu_dn) + const``,

``mu_dn = o_dn (A W)_dn``, gradient ``a - r x`` plus ``A_dk sum_n R_dn W_kn`` on ``log A`` and
``W_kn sum_d R_dn A_dk`` on ``log W`` with ``R = X / (A W) - o`` (``o`` 0 at missing cells).
Where ``grad_dense`` makes three BLAS products, a ``D x N`` residual and a dozen temporaries,
:func:`grad_fused` visits each row ``d`` once: its means ``(A W)_d`` (a length-``N`` buffer),
its residuals, and both gradient sums, with the inner loops over ``n`` contiguous (``W`` is
kept as ``K x N``) so that they vectorize. On the 21 x 96 breast SBS96 catalogue one gradient
drops from about 11 to 8 microseconds at K = 4 (1.3-1.4x at K = 4 and 8 there and on ESCC at
K = 4; about even on the 552 x 96 ESCC catalogue at K = 8; ``docs/results/counts_dense.md``,
section 9). The sums are
reassociated (SIMD), so the gradient differs from ``grad_dense`` in the last bits; an HMC
transition is exact for any deterministic gradient (the leapfrog map stays reversible and
volume-preserving; the Metropolis test uses the log density), so this changes the draws, not
the target.

References
----------
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
ch. 5. Chapman & Hall/CRC.
"""

import math

import numba
import numpy as np

__all__ = ["grad_fused", "fused_buffers"]

#: reassociation and contraction only: ``inf`` and ``nan`` keep their meaning, so the
#: non-finite guards still see them
_FM = {"reassoc", "contract"}


def fused_buffers(D, N, K):
    """Work buffers of :func:`grad_fused`: ``(A, W, gW, m)``, ``D x K``, two ``K x N``, ``N``."""
    return np.empty((D, K)), np.empty((K, N)), np.empty((K, N)), np.empty(N)


@numba.njit(cache=True, fastmath=_FM, error_model="numpy")
def grad_fused(tA, tWt, X, Of, aA, rA, aWt, rWt, A, W, gW, m, gA, gWt, want_lp):
    """Gradient of ``log pi`` at ``(tA, tWt) = (log A, log W.T)`` into ``gA, gWt``.

    ``X, Of``: the dense ``D x N`` counts and offsets (``Of`` 0 at missing cells, whose counts
    are 0); ``aA, rA, aWt, rWt``: the Gamma shapes and rates (``D x K``, ``N x K``); ``A, W,
    gW, m``: work buffers (:func:`fused_buffers`; ``A`` receives ``exp(tA)``, ``W``
    ``exp(tWt).T``). Returns ``log pi`` (with the constant ``sum X log Of``) if ``want_lp``
    else 0; NaN when the sum of the means is not finite (an overflowed mean). A zero mean
    makes the gradient non-finite, which the caller checks.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    lp = 0.0
    for d in range(D):
        for k in range(K):
            a = math.exp(tA[d, k])
            A[d, k] = a
            gA[d, k] = aA[d, k] - rA[d, k] * a
            if want_lp:
                lp += aA[d, k] * tA[d, k] - rA[d, k] * a
    for n in range(N):
        for k in range(K):
            w = math.exp(tWt[n, k])
            W[k, n] = w
            gW[k, n] = 0.0
            if want_lp:
                lp += aWt[n, k] * tWt[n, k] - rWt[n, k] * w
    total = 0.0
    for d in range(D):
        Xr, Or = X[d], Of[d]
        for n in range(N):
            m[n] = 0.0
        for k in range(K):
            a = A[d, k]
            Wk = W[k]
            for n in range(N):
                m[n] += a * Wk[n]
        for n in range(N):
            total += m[n]
        if want_lp:
            for n in range(N):
                mu = Or[n] * m[n]
                if Xr[n] > 0.0:
                    lp += Xr[n] * math.log(mu) - mu
                else:
                    lp -= mu
        for n in range(N):
            m[n] = Xr[n] / m[n] - Or[n]  # the residual R_dn, in place of the mean
        for k in range(K):
            a = A[d, k]
            Wk, gWk = W[k], gW[k]
            s = 0.0
            for n in range(N):
                s += m[n] * Wk[n]
                gWk[n] += m[n] * a
            gA[d, k] += s * a
    if not math.isfinite(total):
        return np.nan
    for n in range(N):
        for k in range(K):
            w = W[k, n]
            gWt[n, k] = aWt[n, k] - rWt[n, k] * w + gW[k, n] * w
    return lp if want_lp else 0.0
