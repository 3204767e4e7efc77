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

The pattern Gram matrices themselves are built along a minimum spanning tree of the patterns
under Hamming distance (rooted at the entries every pattern observes): each ``G_p`` is its
parent's plus or minus the rank-one terms of the few entries in which the two differ. On GDSC
the tree has 599 (rows) and 681 (columns) such entries, against 9,730 and 15,266 for summing
every pattern from scratch. Removing an entry subtracts its term; the rounding error of a
Gram entry is then of the order of machine epsilon times the terms summed along its path. By the
cycle property of minimum spanning trees no edge on a pattern's path to the root changes more
entries than the pattern holds (else its own edge to the root would be in the tree), so paths are
short in what they add and remove, and the error stays at the 1e-14 relative level (tested
against direct products).

The updates are exactly those of the residual path, in the same order (row by row, ``k`` in
order), and draw from the generator in the same sequence, so both paths give the same chain up
to floating-point rounding (tested).
"""

import math
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from scipy.sparse import csgraph

from bnmfzoo.inference.gaussian.gibbs._mixing import overrelaxed_scaled
from bnmfzoo.inference.kernels.truncnorm import truncnorm_excess

__all__ = ["MissingPatterns", "missing_patterns", "pattern_structure", "choose_half_sweep",
           "gram_half_sweep", "gram_sweep", "PatternPaths", "all_finite"]

#: dense masks above this many entries are not built (the residual path is used)
MAX_DENSE_ENTRIES = 20_000_000
#: above this many pattern pairs x entries the spanning tree is not searched (star tree)
MAX_TREE_WORK = 2_000_000_000

# Cost model of one half-sweep, nanoseconds per operation, fitted (non-negative least squares on
# relative error) to timings of both paths on scattered and block-missing masks, 200 x 100 to
# 4000 x 2000, 20-90 % observed, ranks 4, 10 and 20 (benchmarks/speed/gibbs_paths.py).
# Residual path: per observed entry and factor, per row and factor, and per call.
_NS_RESIDUAL_ENTRY = 1.57
_NS_RESIDUAL_ROW = 10.8
_NS_RESIDUAL_CALL = 48_000.0
# Gram path: the data-partner product ``xm @ V.T`` (per row x partner x factor), a rank-one term
# of the pattern tree and a pattern's copy from its parent (each per R^2), and per call.
_NS_GRAM_PRODUCT = 0.19
_NS_GRAM_TERM = 0.48
_NS_GRAM_PATTERN = 1.21
_NS_GRAM_CALL = 40_000.0


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
    tree_order, tree_parent : numpy.ndarray
        ``(P,)`` patterns in an order where every parent comes before its children, and each
        pattern's parent in the spanning tree (``-1``: the root, the ``always`` entries only).
    delta_ptr, delta_pos, delta_sign : numpy.ndarray
        CSR lists, per pattern, of the positions in ``varying`` where it differs from its
        parent, with ``+1.0`` (observed here, not in the parent) or ``-1.0`` (the reverse).
    """

    pattern_of: np.ndarray
    masks: np.ndarray
    varying: np.ndarray
    always: np.ndarray
    xm: np.ndarray
    tree_order: np.ndarray
    tree_parent: np.ndarray
    delta_ptr: np.ndarray
    delta_pos: np.ndarray
    delta_sign: np.ndarray

    @property
    def arrays(self):
        """The kernels' arguments (a tuple, passed on as ``*patterns.arrays``)."""
        return (self.varying, self.always, self.tree_order, self.tree_parent, self.delta_ptr,
                self.delta_pos, self.delta_sign, self.pattern_of, self.xm)

    @property
    def n_patterns(self):
        """Number of distinct patterns ``P``."""
        return self.masks.shape[0]

    @property
    def n_tree_entries(self):
        """Rank-one terms summed to build every pattern's Gram matrix along the tree."""
        return self.delta_pos.size


def _pattern_tree(masks):
    """Minimum spanning tree of the patterns (rows of bool ``masks``) plus an empty root.

    Edge weights are Hamming distances, so the tree minimizes the number of rank-one terms
    needed to build every pattern's Gram matrix from its parent's. Returns
    ``(order, parent, delta_ptr, delta_pos, delta_sign)`` (see :class:`MissingPatterns`).
    """
    P, m = masks.shape
    sizes = masks.sum(axis=1)
    if P * P * max(m, 1) <= MAX_TREE_WORK:
        f = masks.astype(float)
        dist = np.empty((P + 1, P + 1))
        dist[:P, :P] = f @ (1.0 - f).T
        dist[:P, :P] += dist[:P, :P].T
        dist[P, :P] = dist[:P, P] = sizes
        dist[P, P] = 0.0
        # + 0.5 on every edge: the same tree (all spanning trees have P edges), and no weight is
        # 0 (a dense 0 means "no edge" to csgraph)
        dist += 0.5
        np.fill_diagonal(dist, 0.0)
        mst = csgraph.minimum_spanning_tree(dist)
        order, pred = csgraph.breadth_first_order(mst, P, directed=False)
        order = order[1:]  # drop the root
        parent = np.where(pred[:P] == P, -1, pred[:P])
    else:  # star: every pattern from the root
        order, parent = np.arange(P), np.full(P, -1)
    ptr, pos, sign = [0], [], []
    for p in range(P):
        base = masks[parent[p]] if parent[p] >= 0 else np.zeros(m, dtype=bool)
        added, removed = np.flatnonzero(masks[p] & ~base), np.flatnonzero(base & ~masks[p])
        pos += [added, removed]
        sign += [np.ones(added.size), -np.ones(removed.size)]
        ptr.append(ptr[-1] + added.size + removed.size)
    return (np.asarray(order, dtype=np.int64), np.asarray(parent, dtype=np.int64),
            np.asarray(ptr, dtype=np.int64), np.concatenate(pos).astype(np.int64),
            np.concatenate(sign).astype(float))


def pattern_structure(observed):
    """Distinct row patterns of the bool matrix ``observed`` and their spanning tree.

    Returns ``(masks, pattern_of, always, tree)``: the ``(P, m)`` distinct patterns, each row's
    pattern, the entries observed by every pattern and :func:`_pattern_tree` of the others.
    Needs only the mask, so the cost model can count the tree's terms before any data are copied.
    """
    observed = np.asarray(observed, dtype=bool)
    masks, pattern_of = np.unique(observed, axis=0, return_inverse=True)
    always = masks.all(axis=0)
    return masks, pattern_of.ravel(), always, _pattern_tree(masks[:, ~always])


def missing_patterns(X, observed, structure=None):
    """Group the rows of ``X`` (n x m) by ``observed`` (bool, same shape).

    ``structure`` is :func:`pattern_structure` of ``observed`` when already computed.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    >>> mp = missing_patterns(X, ~np.isnan(X))
    >>> mp.n_patterns, mp.pattern_of.tolist()
    (2, [1, 0, 1])
    """
    observed = np.asarray(observed, dtype=bool)
    masks, pattern_of, always, tree = structure or pattern_structure(observed)
    xm = np.where(observed, np.nan_to_num(np.asarray(X, dtype=float)), 0.0)
    return MissingPatterns(pattern_of=pattern_of.astype(np.int64),
                           masks=np.ascontiguousarray(masks[:, ~always], dtype=float),
                           varying=np.flatnonzero(~always).astype(np.int64),
                           always=np.flatnonzero(always).astype(np.int64),
                           xm=np.ascontiguousarray(xm), tree_order=tree[0], tree_parent=tree[1],
                           delta_ptr=tree[2], delta_pos=tree[3], delta_sign=tree[4])


def choose_half_sweep(n_observed, n_rows, n_partner, n_patterns, n_terms, rank):
    """Return ``"gram"`` or ``"residual"``: the cheaper path for one half-sweep.

    The residual path costs O(observed entries x R); the Gram path costs the data-partner
    product, the pattern tree's ``n_terms`` rank-one terms (R^2 each) and a copy per pattern
    (the fit did not resolve a separate per-row cost). Scattered missing data have as many
    patterns as rows and about one tree term per observed entry, so the Gram path costs
    O(observed x R^2) there and loses; block-missing data (few patterns, few terms) take it.

    Examples
    --------
    >>> choose_half_sweep(79259, 705, 139, 70, 599, 20)  # GDSC, K = 20
    'gram'
    >>> choose_half_sweep(100_000, 943, 1682, 943, 100_000, 20)  # MovieLens 100K
    'residual'
    """
    R2 = rank * rank
    residual = (_NS_RESIDUAL_ENTRY * n_observed * rank + _NS_RESIDUAL_ROW * n_rows * rank
                + _NS_RESIDUAL_CALL)
    gram = (_NS_GRAM_PRODUCT * n_rows * n_partner * rank + _NS_GRAM_TERM * n_terms * R2
            + _NS_GRAM_PATTERN * n_patterns * R2 + _NS_GRAM_CALL)
    return "gram" if gram < residual else "residual"


class PatternPaths:
    """Missing-data patterns and the choice of half-sweep path, for a sparse observed index.

    A mixin for the observed-entry classes of the samplers: it needs ``shape``,
    ``n_observed`` and ``observed_dense()`` (``(X with 0 where missing, bool mask)``), and adds
    the row / column :class:`MissingPatterns` and :meth:`half_sweep_paths`, all built once.
    """

    @cached_property
    def _dense(self):
        return self.observed_dense()

    @cached_property
    def _structures(self):
        """:func:`pattern_structure` of the rows and of the columns (``None``: too large)."""
        D, N = self.shape
        if D * N > MAX_DENSE_ENTRIES:
            return None
        observed = self._dense[1]
        return pattern_structure(observed), pattern_structure(observed.T)

    @cached_property
    def row_patterns(self):
        """:class:`MissingPatterns` of the rows."""
        X, observed = self._dense
        structures = self._structures
        return missing_patterns(X, observed, structures and structures[0])

    @cached_property
    def col_patterns(self):
        """:class:`MissingPatterns` of the columns."""
        X, observed = self._dense
        structures = self._structures
        return missing_patterns(X.T, observed.T, structures and structures[1])

    def half_sweep_paths(self, rank):
        """``(path for the rows' factor, path for the columns')``, ``"gram"`` or ``"residual"``.

        When the Gram path would lose even with a single pattern and no tree terms (its
        least possible cost, e.g. on sparse data, where its dense data-partner product alone
        costs more than the residual path), the residual path is taken without building the
        dense mask the pattern analysis needs.
        """
        D, N = self.shape
        n = self.n_observed
        if all(choose_half_sweep(n, a, b, 1, 0, rank) == "residual" for a, b in ((D, N), (N, D))):
            return "residual", "residual"
        structures = self._structures
        if structures is None:
            return "residual", "residual"
        (row_masks, _, _, row_tree), (col_masks, _, _, col_tree) = structures
        return (choose_half_sweep(n, D, N, row_masks.shape[0], row_tree[3].size, rank),
                choose_half_sweep(n, N, D, col_masks.shape[0], col_tree[3].size, rank))


@numba.njit(cache=True)
def _pattern_grams(V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign):
    """``G[p] = V diag(mask_p) V^T`` for every pattern, along the pattern tree (numba)."""
    R = V.shape[0]
    common = np.zeros((R, R))
    if always.size:
        Va = np.empty((R, always.size))
        for k in range(R):
            for e in range(always.size):
                Va[k, e] = V[k, always[e]]
        common = Va @ Va.T  # one BLAS product
    Vv = np.empty((varying.size, R))  # a varying entry's R values, contiguous
    for e in range(varying.size):
        for k in range(R):
            Vv[e, k] = V[k, varying[e]]
    n_patterns = order.size
    G = np.empty((n_patterns, R * R))  # flat rows: the rank-one updates vectorize
    v = np.empty(R)
    for p in order:
        q = parent[p]
        if q >= 0:
            G[p] = G[q]
        else:
            G[p] = common.ravel()
        for d in range(delta_ptr[p], delta_ptr[p + 1]):
            v[:] = Vv[delta_pos[d]]
            sign = delta_sign[d]
            for k in range(R):
                svk = sign * v[k]
                row = k * R
                for m in range(R):
                    G[p, row + m] += svk * v[m]
    return G.reshape((n_patterns, R, R))


def pattern_grams(V, patterns):
    """``G[p] = V diag(mask_p) V^T`` for every pattern, shape ``(P, R, R)``.

    The partner entries observed in every pattern contribute the same ``V_a V_a^T`` to all of
    them and are summed once (the tree's root); every other pattern adds and removes the
    rank-one terms in which it differs from its parent in the pattern tree.

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
    return _pattern_grams(np.ascontiguousarray(V, dtype=float), *patterns.arrays[:7])


@numba.njit(cache=True, inline="always")
def conditional_scaled(lin, inv_sd, lam, rng):
    """Draw the truncated normal with precision ``inv_sd**-2``.

    The conditional of a factor entry is ``TN(lin / prec, 1 / prec)`` on [0, inf) with
    ``prec = inv_sd**-2``; ``inv_sd = inf`` (nothing observed) falls back to the
    Exponential(``lam``) prior. Taking ``1 / sqrt(prec)`` as input keeps divisions out of the
    sequential loops. A NaN ``inv_sd`` (from a NaN precision) gives NaN, which the sweeps'
    finite checks report, rather than a silent draw from the prior.
    """
    if inv_sd == np.inf:
        return rng.standard_exponential() / lam
    return inv_sd * truncnorm_excess(-lin * inv_sd, rng)


@numba.njit(cache=True, inline="always")
def _conditional(lin, prec, lam, rng):
    """:func:`conditional_scaled` from the precision ``prec`` (``<= 0``: the prior; NaN: NaN)."""
    inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (np.inf if prec <= 0.0 else np.nan)
    return conditional_scaled(lin, inv_sd, lam, rng)


# No fast-math flags: with them the summation order and FMA use depended on the compilation
# context, so results changed with the state of numba's cache. The R-long dot product keeps a
# fixed order (two partial sums).
@numba.njit(cache=True)
def _gram_rows(U, C, G, pattern_of, tau, lam, rng, alpha):
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
            inv_sd[p, k] = 1.0 / np.sqrt(prec) if prec > 0.0 else (
                np.inf if prec <= 0.0 else np.nan)
    t = np.empty(R)
    total = 0.0
    for i in range(n):
        p = pattern_of[i]
        g = G[p]
        u = U[i]
        c = C[i]
        for k in range(R):  # t = G u (G symmetric: contiguous rows)
            gk = g[k]
            s0 = 0.0
            s1 = 0.0
            R2 = R - R % 2
            for m in range(0, R2, 2):
                s0 += gk[m] * u[m]
                s1 += gk[m + 1] * u[m + 1]
            if R2 < R:
                s0 += gk[R2] * u[R2]
            t[k] = s0 + s1
        for k in range(R):
            old = u[k]
            lin = tau * (c[k] - t[k] + old * g[k, k]) - lam[k]
            if alpha != 0.0:  # overrelaxed (bnmfzoo.inference.gaussian.gibbs._mixing)
                new = overrelaxed_scaled(old, lin, inv_sd[p, k], lam[k], alpha, rng)
            else:
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
def _gram_half(U, V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign,
               pattern_of, xm, tau, lam, rng, alpha):
    """One numba call per half-sweep (passing a Generator into numba has a fixed cost)."""
    G = _pattern_grams(V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign)
    C = xm @ V.T  # BLAS reads the transposed layout directly
    return _gram_rows(U, C, G, pattern_of, tau, lam, rng, alpha)


# reassociation only (no 'nnan'/'ninf'): x - x cannot be folded to 0, and the sum vectorizes
@numba.njit(cache=True, fastmath={"reassoc"})
def all_finite(U):
    """True when every entry of the C-contiguous array ``U`` is finite (numba, one pass).

    ``x - x`` is 0 for a finite ``x`` and NaN for NaN or +-inf, so the sum is NaN exactly
    when some entry is not finite (and it cannot overflow).
    """
    u = U.reshape(-1)
    s = 0.0
    for e in range(u.size):
        s += u[e] - u[e]
    return s == 0.0


@numba.njit(cache=True)
def _gram_sweep(A, Wt, row_patterns, col_patterns, tau, lam_A, lam_W, rng, alpha):
    """Both half-sweeps (``A`` then ``W``) in one numba call; patterns as tuples.

    Returns ``(squared error - sum(x^2), status)``: status 0, or 1 when ``A`` is not finite
    after its half-sweep (``W`` is then left alone), 2 when ``W`` is not finite after its own.
    """
    _gram_half(A, np.ascontiguousarray(Wt.T), *row_patterns, tau, lam_A, rng, alpha)
    if not all_finite(A):
        return math.nan, 1
    total = _gram_half(Wt, np.ascontiguousarray(A.T), *col_patterns, tau, lam_W, rng, alpha)
    if not all_finite(Wt):
        return total, 2
    return total, 0


def gram_half_sweep(U, V, patterns, tau, lam, rng, alpha=0.0):
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
    alpha : float
        0: a fresh draw of each entry from its conditional; in (-1, 0): the overrelaxed update
        of :func:`~bnmfzoo.inference.gaussian.gibbs._mixing.overrelaxed_scaled`.

    Returns
    -------
    float
        ``sum_obs (x - U V)^2 - sum_obs x^2`` for the updated ``U`` (add ``sum(x^2)`` for the
        squared error).
    """
    return _gram_half(U, np.ascontiguousarray(V, dtype=float), *patterns.arrays, float(tau), lam,
                      rng, float(alpha))


def gram_sweep(A, Wt, row_patterns, col_patterns, tau, lam_A, lam_W, rng, alpha=0.0):
    """:func:`gram_half_sweep` of ``A`` (n x R) then of ``Wt`` (m x R), in one numba call.

    Returns ``(squared error minus sum(x^2), status)`` after both halves (see
    :func:`gram_half_sweep`); ``status`` is 0, or 1 / 2 when ``A`` / ``W`` held a non-finite
    value after its half-sweep (the sweep stops there). Saves the fixed cost of passing the
    generator into numba twice.
    """
    return _gram_sweep(A, Wt, row_patterns.arrays, col_patterns.arrays, float(tau), lam_A, lam_W,
                       rng, float(alpha))
