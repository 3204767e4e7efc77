"""Gram-matrix half-sweeps for the exponential-Gaussian NMF samplers (no PyMC here).

The conditional of ``U[i, k]`` given its partner ``V`` (R x m) needs two sums over the row's
observed entries: ``sum_j m_ij V[k, j]^2`` and ``sum_j m_ij r_ij V[k, j]`` with ``r`` the
residual. Both follow from the row's Gram matrix ``G_i = V diag(m_i) V^T`` (R x R) and
``c_i = V (m_i * x_i)``: ``sum_j m_ij r_ij V[k, j] = c_ik - sum_l U[i, l] G_i[l, k]``. Rows that
share a missing-data pattern share ``G``, so with ``P`` distinct patterns a half-sweep costs
``O(P m R^2)`` in one BLAS product plus ``O(n R^2)`` for the sequential updates, instead of
``O(|observed| R)`` through the residual. Fully observed data (``P = 1``) and block-missing data
(e.g. drugs screened on subsets of cell lines: GDSC has 70 row and 34 column patterns) are
much cheaper this way; scattered missing entries are not, and
:func:`choose_half_sweep` keeps the residual path for them.

The updates are exactly those of the residual path, in the same order (row by row, ``k`` in
order), and draw from the generator in the same sequence, so both paths give the same chain up
to floating-point rounding (tested).
"""

from dataclasses import dataclass

import numba
import numpy as np

from bnmfzoo.inference.truncnorm import truncnorm_excess

__all__ = ["MissingPatterns", "missing_patterns", "choose_half_sweep", "gram_half_sweep",
           "gram_sweep"]

#: dense masks above this many entries are not built (the residual path is used)
MAX_DENSE_ENTRIES = 20_000_000

# Cost model (nanoseconds per operation on the development machine, bench_gibbs.py): a
# gathered residual update (dot + axpy per entry and factor), a BLAS multiply-add, and a
# multiply-add of the scalar R x R row loop.
_NS_RESIDUAL = 0.6
_NS_BLAS = 0.03
_NS_LOOP = 0.4


@dataclass(frozen=True)
class MissingPatterns:
    """Rows of a D x N matrix grouped by their pattern of observed entries.

    Attributes
    ----------
    pattern_of : numpy.ndarray
        ``(n,)`` index of each row's pattern.
    masks : numpy.ndarray
        ``(P, m_varying)`` float 0/1 observed indicator of each pattern on the partner entries
        that some pattern misses.
    varying, always : numpy.ndarray
        Partner entries missed by some pattern / observed in every pattern (their Gram
        contribution is shared by all patterns and computed once).
    xm : numpy.ndarray
        ``(n, m)`` data with missing entries set to 0.
    """

    pattern_of: np.ndarray
    masks: np.ndarray
    varying: np.ndarray
    always: np.ndarray
    xm: np.ndarray

    @property
    def arrays(self):
        """``(masks, varying, always, pattern_of, xm)``, the kernels' arguments."""
        return self.masks, self.varying, self.always, self.pattern_of, self.xm

    @property
    def n_patterns(self):
        """Number of distinct patterns ``P``."""
        return self.masks.shape[0]


def missing_patterns(X, observed):
    """Group the rows of ``X`` (n x m) by ``observed`` (bool, same shape).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    >>> mp = missing_patterns(X, ~np.isnan(X))
    >>> mp.n_patterns, mp.pattern_of.tolist()
    (2, [1, 0, 1])
    """
    observed = np.asarray(observed, dtype=bool)
    masks, pattern_of = np.unique(observed, axis=0, return_inverse=True)
    always = masks.all(axis=0)
    xm = np.where(observed, np.nan_to_num(np.asarray(X, dtype=float)), 0.0)
    return MissingPatterns(pattern_of=pattern_of.ravel().astype(np.int64),
                           masks=np.ascontiguousarray(masks[:, ~always], dtype=float),
                           varying=np.flatnonzero(~always).astype(np.int64),
                           always=np.flatnonzero(always).astype(np.int64),
                           xm=np.ascontiguousarray(xm))


def choose_half_sweep(n_observed, n_rows, n_partner, n_patterns, rank):
    """Return ``"gram"`` or ``"residual"``: the cheaper path for one half-sweep.

    Examples
    --------
    >>> choose_half_sweep(79259, 705, 139, 70, 20)  # GDSC, K = 20
    'gram'
    >>> choose_half_sweep(100_000, 943, 1682, 943, 20)  # MovieLens 100K
    'residual'
    """
    tri = rank * (rank + 1) / 2
    residual = _NS_RESIDUAL * 3.0 * n_observed * rank
    gram = (_NS_BLAS * (n_patterns * n_partner * tri + n_rows * n_partner * rank)
            + _NS_LOOP * 2.0 * n_rows * rank * rank)
    return "gram" if gram < residual else "residual"


@numba.njit(cache=True)
def _pattern_grams(V, masks, varying, always):
    """``G[p] = V diag(mask_p) V^T`` for every pattern (numba; one BLAS product inside)."""
    R = V.shape[0]
    n_patterns = masks.shape[0]
    Vv = np.empty((R, varying.size))
    for k in range(R):
        for e in range(varying.size):
            Vv[k, e] = V[k, varying[e]]
    n_tri = R * (R + 1) // 2
    prod = np.empty((n_tri, varying.size))
    t = 0
    for k in range(R):
        for m in range(k, R):
            for e in range(varying.size):
                prod[t, e] = Vv[k, e] * Vv[m, e]
            t += 1
    tri = prod @ masks.T  # (R(R+1)/2, P), the entries that differ (BLAS reads masks.T in place)
    common = np.zeros((R, R))
    if always.size:
        Va = np.empty((R, always.size))
        for k in range(R):
            for e in range(always.size):
                Va[k, e] = V[k, always[e]]
        common = Va @ Va.T
    G = np.empty((n_patterns, R, R))
    for p in range(n_patterns):
        t = 0
        for k in range(R):
            for m in range(k, R):
                G[p, k, m] = G[p, m, k] = tri[t, p] + common[k, m]
                t += 1
    return G


def pattern_grams(V, patterns):
    """``G[p] = V diag(mask_p) V^T`` for every pattern, shape ``(P, R, R)``.

    The partner entries observed in every pattern contribute the same ``V_a V_a^T`` to all of
    them and are summed once; the rest go through one BLAS product.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, np.nan, 2.0], [1.0, 1.0, 1.0]])
    >>> V = np.arange(6.0).reshape(2, 3)
    >>> mp = missing_patterns(X, ~np.isnan(X))
    >>> G = pattern_grams(V, mp)
    >>> bool(np.allclose(G[mp.pattern_of[0]], V[:, [0, 2]] @ V[:, [0, 2]].T))
    True
    """
    return _pattern_grams(np.ascontiguousarray(V, dtype=float), patterns.masks,
                          patterns.varying, patterns.always)


@numba.njit(cache=True, inline="always")
def conditional_scaled(lin, inv_sd, lam, rng):
    """Draw the truncated normal with precision ``inv_sd**-2``.

    The conditional of a factor entry is ``TN(lin / prec, 1 / prec)`` on [0, inf) with
    ``prec = inv_sd**-2``; ``inv_sd = inf`` (nothing observed) falls back to the
    Exponential(``lam``) prior. Taking ``1 / sqrt(prec)`` as input keeps divisions out of the
    sequential loops.
    """
    if not inv_sd < np.inf:
        return rng.standard_exponential() / lam
    return inv_sd * truncnorm_excess(-lin * inv_sd, rng)


@numba.njit(cache=True, inline="always")
def _conditional(lin, prec, lam, rng):
    """:func:`conditional_scaled` from the precision ``prec`` (``<= 0``: the prior)."""
    inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else np.inf
    return conditional_scaled(lin, inv_sd, lam, rng)


# reassociation lets the R-long loops vectorize; no 'nnan'/'ninf' (prec <= 0 checks stay exact)
@numba.njit(cache=True, fastmath={"reassoc", "contract", "arcp", "nsz"})
def _gram_rows(U, C, G, pattern_of, tau, lam, rng):
    """Update every ``U[i, k]`` (row by row, ``k`` in order); return ``sum_i U_i (G U_i - 2 c_i)``.

    ``t = G_i U_i`` is kept current through the row's updates, so each conditional costs O(R).
    The returned value plus ``sum(x^2)`` is the squared error of the new ``U``.
    """
    n, R = U.shape
    n_patterns = G.shape[0]
    inv_sd = np.empty((n_patterns, R))  # 1 / sqrt(tau G_kk), once per pattern
    for p in range(n_patterns):
        for k in range(R):
            prec = tau * G[p, k, k]
            inv_sd[p, k] = 1.0 / np.sqrt(prec) if prec > 0.0 else np.inf
    t = np.empty(R)
    total = 0.0
    for i in range(n):
        p = pattern_of[i]
        g = G[p]
        u = U[i]
        c = C[i]
        for k in range(R):  # t = G u (G symmetric: contiguous rows)
            s = 0.0
            gk = g[k]
            for m in range(R):
                s += gk[m] * u[m]
            t[k] = s
        for k in range(R):
            old = u[k]
            lin = tau * (c[k] - t[k] + old * g[k, k]) - lam[k]
            new = conditional_scaled(lin, inv_sd[p, k], lam[k], rng)
            d = new - old
            if d != 0.0:
                gk = g[k]
                for m in range(R):
                    t[m] += d * gk[m]
                u[k] = new
        for k in range(R):
            total += u[k] * (t[k] - 2.0 * c[k])
    return total


@numba.njit(cache=True)
def _gram_half(U, V, masks, varying, always, pattern_of, xm, tau, lam, rng):
    """One numba call per half-sweep (passing a Generator into numba has a fixed cost)."""
    G = _pattern_grams(V, masks, varying, always)
    C = xm @ V.T  # BLAS reads the transposed layout directly
    return _gram_rows(U, C, G, pattern_of, tau, lam, rng)


@numba.njit(cache=True)
def _gram_sweep(A, Wt, row_patterns, col_patterns, tau, lam_A, lam_W, rng):
    """Both half-sweeps (``A`` then ``W``) in one numba call; patterns as 5-tuples."""
    _gram_half(A, np.ascontiguousarray(Wt.T), *row_patterns, tau, lam_A, rng)
    return _gram_half(Wt, np.ascontiguousarray(A.T), *col_patterns, tau, lam_W, rng)


def gram_half_sweep(U, V, patterns, tau, lam, rng):
    """Update ``U`` (n x R, in place) given partner ``V`` (R x m) through pattern Gram matrices.

    Parameters
    ----------
    U : numpy.ndarray
        C-contiguous float64 factor whose rows are the data's rows in ``patterns``.
    V : numpy.ndarray
        Partner factor, ``x_ij ~ U[i] . V[:, j]``.
    patterns : MissingPatterns
    tau : float
        Noise precision.
    lam : numpy.ndarray
        Exponential rate of each column of ``U``.
    rng : numpy.random.Generator

    Returns
    -------
    float
        ``sum_obs (x - U V)^2 - sum_obs x^2`` for the updated ``U`` (add ``sum(x^2)`` for the
        squared error).
    """
    return _gram_half(U, np.ascontiguousarray(V, dtype=float), *patterns.arrays, float(tau), lam,
                      rng)


def gram_sweep(A, Wt, row_patterns, col_patterns, tau, lam_A, lam_W, rng):
    """:func:`gram_half_sweep` of ``A`` (n x R) then of ``Wt`` (m x R), in one numba call.

    Returns the squared error minus ``sum(x^2)`` after both halves (see
    :func:`gram_half_sweep`). Saves the fixed cost of passing the generator into numba twice.
    """
    return _gram_sweep(A, Wt, row_patterns.arrays, col_patterns.arrays, float(tau), lam_A, lam_W,
                       rng)
