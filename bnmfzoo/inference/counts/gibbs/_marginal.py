"""Marginal block moves of Poisson NMF: each row of a factor given the other, counts not split.

The latent-count sweep (Cemgil 2009) alternates the split ``Z | A, W`` and the factors given
``Z``. Where signatures overlap and the counts are large (mutational catalogues), the factors
given ``Z`` are far tighter than given the other factor alone, so the chain moves the
attribution of the counts (the exposures' totals) by tiny steps: the slow mixing of data
augmentation with a large fraction of missing information (Liu, Wong & Kong 1994; van Dyk &
Meng 2001). These moves integrate ``Z`` out. For one row ``F_m`` of a factor (a row of ``A``
given ``W``, or a column of ``W`` given ``A``), with ``G`` the other factor, the observed
nonzero counts ``x_mj`` of that row, ``E_mk`` the exposure (``sum_j o_mj G_jk`` over its
observed cells) and ``Gamma(a_mk, b_mk)`` priors, the conditional density of ``u = log F_m``
is (``c = E_m + b_m``)

    f(u) = sum_j x_mj log(sum_k e^{u_k} G_jk) - sum_k c_k e^{u_k} + sum_k a_mk u_k.

Its mode is that of the density of ``F_m`` with shapes ``a_mk``: strictly log-concave in
``F_m`` for ``a_mk > 0``, found by damped Newton steps from a start that depends on the data
and ``G`` only. A multivariate Student-t proposal (``nu`` degrees of freedom, scale the inverse
of the Hessian of ``f`` at the mode) is then accepted or rejected by the
independence Metropolis-Hastings rule (Tierney 1994). The proposal depends only on the
conditioning values, never on the current ``F_m``, so the move leaves the conditional exactly
invariant whatever the quality of the approximation; the t's polynomial tails dominate the
exponential left tail of ``f`` (a component absent from a row), so the sampler is uniformly
ergodic there (Mengersen & Tweedie 1996). Cost per row O(nonzeros K^2 + K^3) per Newton step
(~5-50 steps). On the breast SBS96 catalogues at K = 4 the move is accepted for 95-100% of the
rows and raises the ESS per sweep of the slowest exposures ~6x, but costs ~7x a latent-count
sweep, so the ESS per CPU second does not change (``docs/results/counts_core.md``): it is an
option of :class:`~bnmfzoo.inference.counts.gibbs.gibbs_poisson.GibbsPoisson` (``marginal=``),
off by default.

References
----------
Tierney, L. (1994). Markov chains for exploring posterior distributions. Annals of Statistics
22, 1701-1728.
Mengersen, K. L. & Tweedie, R. L. (1996). Rates of convergence of the Hastings and Metropolis
algorithms. Annals of Statistics 24, 101-121.
Liu, J. S., Wong, W. H. & Kong, A. (1994). Covariance structure of the Gibbs sampler with
applications to the comparisons of estimators and augmentation schemes. Biometrika 81, 27-40.
van Dyk, D. A. & Meng, X.-L. (2001). The art of data augmentation. JCGS 10, 1-50.
"""

import math
import weakref

import numba
import numpy as np

__all__ = ["marginal_rows_into", "transposed", "NU"]

#: degrees of freedom of the Student-t proposal
NU = 5.0
#: Newton steps at most per row (each halving its step until the density increases)
MAX_NEWTON = 50
_TINY = np.finfo(float).tiny


@numba.njit(cache=True)
def _logf(lo, hi, cols, counts, G, u, c, a):
    """``f(u)`` of one row (see the module docstring); -inf when a mean underflows."""
    K = u.size
    out = 0.0
    for k in range(K):
        out += a[k] * u[k] - c[k] * math.exp(u[k])
    for e in range(lo, hi):
        j = cols[e]
        mu = 0.0
        for k in range(K):
            mu += math.exp(u[k]) * G[j, k]
        if not mu > 0.0:
            return -np.inf
        out += counts[e] * math.log(mu)
    return out


@numba.njit(cache=True)
def _logg(lo, hi, cols, counts, G, F, c, a):
    """``sum_j x_j log(F . G_j) - c . F + a . log F`` (the mode's objective); -inf off F > 0."""
    K = F.size
    out = 0.0
    for k in range(K):
        if not F[k] > 0.0:
            return -np.inf
        out += a[k] * math.log(F[k]) - c[k] * F[k]
    for e in range(lo, hi):
        j = cols[e]
        mu = 0.0
        for k in range(K):
            mu += F[k] * G[j, k]
        if not mu > 0.0:
            return -np.inf
        out += counts[e] * math.log(mu)
    return out


@numba.njit(cache=True)
def _chol(M, L):
    """Cholesky factor ``L`` (lower) of a symmetric positive definite ``M``; False if not."""
    K = M.shape[0]
    for i in range(K):
        for j in range(i + 1):
            s = M[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            if i == j:
                if not (s > 0.0 and s < np.inf):
                    return False
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
        for j in range(i + 1, K):
            L[i, j] = 0.0
    return True


@numba.njit(cache=True)
def _mode(lo, hi, cols, counts, G, c, a, F, grad, H, L, step, trial):
    """The mode of ``_logg`` into ``F`` by damped Newton steps (False: not formed).

    Fills ``H`` with the negative Hessian (in F) at the mode. Deterministic given the data,
    ``G``, ``c`` and ``a``: the start never reads the current row.
    """
    K = F.size
    tot = 0.0
    for e in range(lo, hi):
        tot += counts[e]
    for k in range(K):  # a start that depends on the conditioning values only
        F[k] = (a[k] + tot / K) / c[k]
    g0 = _logg(lo, hi, cols, counts, G, F, c, a)
    for _ in range(MAX_NEWTON):
        for k in range(K):
            grad[k] = a[k] / F[k] - c[k]
            for t in range(K):
                H[k, t] = 0.0
            H[k, k] = a[k] / (F[k] * F[k])
        for e in range(lo, hi):
            j = cols[e]
            mu = 0.0
            for k in range(K):
                mu += F[k] * G[j, k]
            w = counts[e] / mu
            w2 = w / mu
            for k in range(K):
                grad[k] += w * G[j, k]
                for t in range(k + 1):
                    H[k, t] += w2 * G[j, k] * G[j, t]
        for k in range(K):
            for t in range(k):
                H[t, k] = H[k, t]
        if not _chol(H, L):
            return False
        # step = H^{-1} grad (H: the negative Hessian)
        for i in range(K):
            s = grad[i]
            for t in range(i):
                s -= L[i, t] * step[t]
            step[i] = s / L[i, i]
        for i in range(K - 1, -1, -1):
            s = step[i]
            for t in range(i + 1, K):
                s -= L[t, i] * step[t]
            step[i] = s / L[i, i]
        h = 1.0
        moved = False
        for _half in range(60):
            for k in range(K):
                trial[k] = F[k] + h * step[k]
            g1 = _logg(lo, hi, cols, counts, G, trial, c, a)
            if g1 >= g0:
                moved = True
                break
            h *= 0.5
        if not moved:
            break
        small = True
        for k in range(K):
            if abs(trial[k] - F[k]) > 1e-10 * F[k]:
                small = False
            F[k] = trial[k]
        g0 = g1
        if small:
            break
    # the negative Hessian at the mode (same formula)
    for k in range(K):
        for t in range(K):
            H[k, t] = 0.0
        H[k, k] = a[k] / (F[k] * F[k])
    for e in range(lo, hi):
        j = cols[e]
        mu = 0.0
        for k in range(K):
            mu += F[k] * G[j, k]
        w2 = counts[e] / (mu * mu)
        for k in range(K):
            for t in range(k + 1):
                H[k, t] += w2 * G[j, k] * G[j, t]
    for k in range(K):
        for t in range(k):
            H[t, k] = H[k, t]
    return True


@numba.njit(cache=True)
def _logq(u, mode, L, nu, r):
    """Log density (up to a constant) of the t proposal: ``r = L^T (u - mode)``."""
    K = u.size
    q = 0.0
    for i in range(K):
        s = 0.0
        for t in range(i, K):
            s += L[t, i] * (u[t] - mode[t])
        r[i] = s
        q += s * s
    return -0.5 * (nu + K) * math.log1p(q / nu)


@numba.njit(cache=True)
def marginal_rows_into(indptr, cols, counts, F, G, E, a, b, nu):
    """The independence Metropolis-Hastings move of every row of ``F`` given ``G``, in place.

    ``indptr, cols, counts``: the CSR arrays of the nonzero counts of the rows of ``F`` (for
    ``W``: the CSC arrays, with ``F = W.T``); ``E``: exposures ``sum_j o_mj G_jk`` (M x K);
    ``a, b``: the Gamma shapes and current rates of ``F`` (M x K). Uses numba's generator.
    Returns ``(code, accepted)``: code 0 ok, 3 non-finite input; ``accepted`` counts the rows
    moved. A row whose mode or Hessian cannot be formed (degenerate ``G``) is left unchanged.
    """
    M, K = F.shape
    for m in range(M):
        for k in range(K):
            if not (F[m, k] > 0.0 and F[m, k] < np.inf and E[m, k] >= 0.0
                    and E[m, k] < np.inf and a[m, k] > 0.0 and b[m, k] >= 0.0
                    and b[m, k] < np.inf):
                return 3, 0
    for j in range(G.shape[0]):
        for k in range(K):
            if not (G[j, k] >= 0.0 and G[j, k] < np.inf):
                return 3, 0
    c = np.empty(K)
    am = np.empty(K)
    Fm = np.empty(K)
    grad = np.empty(K)
    H = np.empty((K, K))
    L = np.empty((K, K))
    step = np.empty(K)
    trial = np.empty(K)
    mode = np.empty(K)
    u0 = np.empty(K)
    u1 = np.empty(K)
    z = np.empty(K)
    r = np.empty(K)
    accepted = 0
    for m in range(M):
        lo = indptr[m]
        hi = indptr[m + 1]
        for k in range(K):
            c[k] = E[m, k] + b[m, k]
            am[k] = a[m, k]
        if not _mode(lo, hi, cols, counts, G, c, am, Fm, grad, H, L, step, trial):
            continue
        # precision of u = log F at the mode: diag(F) H diag(F)
        for k in range(K):
            mode[k] = math.log(Fm[k])
            for t in range(K):
                H[k, t] *= Fm[k] * Fm[t]
        if not _chol(H, L):
            continue
        # the t proposal: u1 = mode + L^{-T} z sqrt(nu / chi2_nu), L L^T the precision
        for k in range(K):
            z[k] = np.random.standard_normal()
            u0[k] = math.log(F[m, k])
        s = math.sqrt(nu / (2.0 * np.random.gamma(0.5 * nu, 1.0)))
        for i in range(K - 1, -1, -1):
            v = z[i]
            for t in range(i + 1, K):
                v -= L[t, i] * u1[t]
            u1[i] = v / L[i, i]
        for k in range(K):
            u1[k] = mode[k] + s * u1[k]
        f1 = _logf(lo, hi, cols, counts, G, u1, c, am)
        if not f1 > -np.inf:
            continue
        f0 = _logf(lo, hi, cols, counts, G, u0, c, am)
        log_ratio = f1 - f0 + _logq(u0, mode, L, nu, r) - _logq(u1, mode, L, nu, r)
        if math.log(np.random.random()) < log_ratio:
            ok = True
            for k in range(K):
                v = math.exp(u1[k])
                if not (v > 0.0 and v < np.inf):
                    ok = False
            if ok:
                for k in range(K):
                    F[m, k] = math.exp(u1[k])
                accepted += 1
    return 0, accepted


# ----------------------------------------------------------------------------- Python side


_CSC = weakref.WeakKeyDictionary()


def transposed(data):
    """The CSC arrays ``(indptr, rows, counts)`` of a :class:`CountMatrix` (cached)."""
    got = _CSC.get(data)
    if got is not None:
        return got
    D, N = data.shape
    rows = np.repeat(np.arange(D), np.diff(data.indptr))
    order = np.argsort(data.cols, kind="stable")
    indptr = np.zeros(N + 1, np.int64)
    np.cumsum(np.bincount(data.cols, minlength=N), out=indptr[1:])
    out = (indptr, np.ascontiguousarray(rows[order], np.int32),
           np.ascontiguousarray(data.counts[order]))
    _CSC[data] = out
    return out
