"""Numeric core of the collapsed samplers for mean-parameterized Bernoulli NMF (NumPy + numba).

Nothing here knows about PyMC. The observed entries of a binary D x N matrix are kept as three
flat arrays (``rows``, ``cols``, ``v``) in row-major order (the paper's f-outer systematic scan);
missing entries are simply absent, which marginalizes their indicators exactly.

Notation follows Lumbreras et al. (2020) with the project's names: the paper's W
(F x K, Dirichlet rows) is our ``A`` (D x K) and the paper's H (K x N) is our ``W``.

Beta-Dir (paper Eqs. 22-29, Algorithm 1):

* counters ``L[f, k]`` (row f assigned to k), ``C1[n, k]`` / ``C0[n, k]`` (ones / zeros of
  column n assigned to k);
* conditional (Eq. 25) ``p(z_fn = k) ∝ (g_k + L_fk) (a_k + C1_nk)^v (b_k + C0_nk)^(1-v) /
  (a_k + b_k + C1_nk + C0_nk)`` with the entry's own assignment removed;
* ``A_f | Z ~ Dir(g + L_f)``, ``W_kn | Z ~ Beta(a_k + C1_nk, b_k + C0_nk)`` (Eqs. 26-27).

Dir-Dir (Eqs. 53-63, Algorithm 2): counters ``L[f, k]`` for z (rows) and ``Q[n, k]`` for c
(columns); ``v = 1`` draws ``z = c`` jointly (Eq. 59), ``v = 0`` draws z avoiding c (Eq. 60) and
then c avoiding z (Eq. 61); ``A_f | Z ~ Dir(g + L_f)``, ``W_n | C ~ Dir(eta + Q_n)``.

The sweeps cache the column likelihood ratios ``(a+C1)/(a+b+M)`` and ``(b+C0)/(a+b+M)`` (updated in
O(1) when an entry moves), so each entry costs one multiply-add per component: O(|observed| K)
per sweep. Uniform variates come from the caller's ``numpy.random.Generator`` so a chain is
reproducible from its seed.
"""

import copy

import numba
import numpy as np
from scipy.special import gammaln

from bnmfzoo._base.entries import LongMatrix

__all__ = [
    "observed_entries",
    "entry_means",
    "bernoulli_nll_entries",
    "betadir_counts",
    "betadir_sweep",
    "betadir_log_joint",
    "dirdir_counts",
    "dirdir_init",
    "dirdir_sweep",
    "dirdir_log_joint",
    "cvb0_counts",
    "cvb0_sweep",
    "draw_dirichlet",
    "draw_beta",
    "bernoulli_nll",
    "assignment_summary",
    "BetaDirChain",
    "DirDirChain",
]


def observed_entries(X, mask=None, *, transpose=False):
    """Return ``(rows, cols, v)`` of the observed entries in row-major order.

    Parameters
    ----------
    X : numpy.ndarray or bnmfzoo._base.entries.LongMatrix
        D x N binary data (anything where ``mask`` is False is ignored), or the observed
        entries of sparse data (``ModelSpec.entries``; ``mask`` is then not used and no dense
        array is formed).
    mask : numpy.ndarray of bool, optional
        True where observed (dense ``X`` only).
    transpose : bool
        The entries of ``X.T`` instead (row-major order of the transpose, i.e. column-major
        order of ``X``), as Dir-Beta runs the Beta-Dir chain on the transposed data.

    Returns
    -------
    rows, cols : numpy.ndarray of int64
    v : numpy.ndarray of int8

    Dense data with NaN and the :class:`~bnmfzoo._base.entries.LongMatrix` of the same observed
    entries give the same three arrays, in the same order.

    Examples
    --------
    >>> from bnmfzoo._base.entries import long_format
    >>> e = long_format([0, 0, 1], [1, 2, 0], [1.0, 0.0, 1.0], shape=(2, 3))
    >>> [a.tolist() for a in observed_entries(e, transpose=True)]
    [[0, 1, 2], [1, 0, 0], [1, 1, 0]]
    """
    if isinstance(X, LongMatrix):
        rows, cols, values = X.rows, X.cols, X.values
        if transpose:  # stable sort by column keeps the rows increasing within each column
            order = np.argsort(cols, kind="stable")
            rows, cols, values = cols[order], rows[order], values[order]
        return (rows.astype(np.int64, copy=False), cols.astype(np.int64, copy=False),
                values.astype(np.int8))
    if mask is None:
        raise TypeError("observed_entries needs mask= with dense X")
    if transpose:
        X, mask = np.asarray(X).T, np.asarray(mask).T
    rows, cols = np.nonzero(mask)
    v = np.asarray(X)[rows, cols].astype(np.int8)
    return rows.astype(np.int64), cols.astype(np.int64), v


@numba.njit(cache=True)
def entry_means(rows, cols, A, W):
    """``(A @ W)[rows, cols]`` without the D x N product: O(n_entries K)."""
    K = A.shape[1]
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        s = 0.0
        f = rows[i]
        n = cols[i]
        for k in range(K):
            s += A[f, k] * W[k, n]
        out[i] = s
    return out


def bernoulli_nll_entries(v, mean, *, clip=1e-12):
    """``-sum log p(v_i | mean_i)`` over observed entries given as flat arrays (Eq. 66)."""
    p = np.clip(np.asarray(mean, dtype=float), clip, 1.0 - clip)
    return float(-np.sum(np.where(np.asarray(v) == 1, np.log(p), np.log1p(-p))))


# --------------------------------------------------------------------------------------------
# Beta-Dir collapsed Gibbs
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def betadir_counts(rows, cols, v, z, D, N, K):
    """Counters ``L`` (D x K), ``C1`` and ``C0`` (N x K) of the assignments ``z``."""
    L = np.zeros((D, K))
    C1 = np.zeros((N, K))
    C0 = np.zeros((N, K))
    for i in range(rows.shape[0]):
        k = z[i]
        L[rows[i], k] += 1.0
        if v[i]:
            C1[cols[i], k] += 1.0
        else:
            C0[cols[i], k] += 1.0
    return L, C1, C0


@numba.njit(cache=True)
def _categorical(cum, K, t):
    """Index of the first ``cum[k] > t`` (``cum`` non-decreasing, ``t < cum[K-1]``)."""
    k = 0
    while k < K - 1 and cum[k] <= t:
        k += 1
    return k


@numba.njit(cache=True)
def _column_ratios(C1, C0, a, b):
    """Eq. 25's column factors ``(a+C1)/(a+b+M)`` and ``(b+C0)/(a+b+M)``, N x K each."""
    N, K = C1.shape
    r1 = np.empty((N, K))
    r0 = np.empty((N, K))
    for n in range(N):
        for k in range(K):
            inv = 1.0 / (a[k] + b[k] + C1[n, k] + C0[n, k])
            r1[n, k] = (a[k] + C1[n, k]) * inv
            r0[n, k] = (b[k] + C0[n, k]) * inv
    return r1, r0


@numba.njit(cache=True, inline="always")
def _move_label(f, n, k, vi, step, L, C1, C0, a, b, r1, r0):
    """Add ``step`` (+1 or -1) to an entry's counters under label ``k``, in place.

    Entry ``(f, n)`` with value ``vi``; column ``n``'s cached ratios for ``k`` are refreshed in
    O(1). The collapsed sweeps' remove (``step = -1``) and add (``step = +1``) step.
    """
    L[f, k] += step
    if vi:
        C1[n, k] += step
    else:
        C0[n, k] += step
    inv = 1.0 / (a[k] + b[k] + C1[n, k] + C0[n, k])
    r1[n, k] = (a[k] + C1[n, k]) * inv
    r0[n, k] = (b[k] + C0[n, k]) * inv


@numba.njit(cache=True)
def betadir_sweep(rows, cols, v, z, L, C1, C0, g, a, b, u, beta):
    """One systematic collapsed Gibbs sweep of Eq. 25, in place.

    With ``beta < 1`` the sweep targets the tempered collapsed joint ``p(V, Z)^beta`` (replica
    exchange): each label's conditional is Eq. 25's raised to ``beta`` and renormalized. With
    ``beta == 1`` it is Eq. 25 itself, with the same arithmetic.

    Parameters
    ----------
    rows, cols, v : numpy.ndarray
        Observed entries.
    z : numpy.ndarray of int64
        Current assignment of each observed entry (updated).
    L, C1, C0 : numpy.ndarray of float64
        Counters (updated).
    g, a, b : numpy.ndarray
        Length-K Dirichlet (row) and Beta (column) hyperparameters.
    u : numpy.ndarray
        One U(0, 1) variate per observed entry.
    beta : float
        Inverse temperature in (0, 1].
    """
    K = C1.shape[1]
    tempered = beta != 1.0
    r1, r0 = _column_ratios(C1, C0, a, b)
    cum = np.empty(K)
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        _move_label(f, n, z[i], v[i], -1.0, L, C1, C0, a, b, r1, r0)
        total = 0.0
        if tempered:
            r = r1 if v[i] else r0
            for kk in range(K):
                total += ((g[kk] + L[f, kk]) * r[n, kk]) ** beta
                cum[kk] = total
        elif v[i]:
            for kk in range(K):
                total += (g[kk] + L[f, kk]) * r1[n, kk]
                cum[kk] = total
        else:
            for kk in range(K):
                total += (g[kk] + L[f, kk]) * r0[n, kk]
                cum[kk] = total
        k = _categorical(cum, K, u[i] * total)
        z[i] = k
        _move_label(f, n, k, v[i], 1.0, L, C1, C0, a, b, r1, r0)


def _log_dirichlet_multinomial(conc, counts):
    """Sum over rows of log Γ(Σc) - Σ log Γ(c) + Σ log Γ(c + n) - log Γ(Σc + Σn)."""
    conc = np.broadcast_to(conc, counts.shape)
    c0 = conc.sum(axis=-1)
    return float(
        np.sum(gammaln(c0) - gammaln(c0 + counts.sum(axis=-1)))
        + np.sum(gammaln(conc + counts) - gammaln(conc))
    )


def betadir_log_joint(L, C1, C0, g, a, b):
    """Collapsed log joint ``log p(V, Z)`` of Beta-Dir (Eqs. 22-24; per-row observed counts)."""
    from scipy.special import betaln

    return _log_dirichlet_multinomial(g, L) + float(
        np.sum(betaln(a + C1, b + C0) - betaln(a, b))
    )


# --------------------------------------------------------------------------------------------
# Dir-Dir collapsed Gibbs (double augmentation)
# --------------------------------------------------------------------------------------------
def dirdir_init(v, K, rng):
    """Random labels with ``z == c`` on ones and ``z != c`` on zeros (Sec. 5, Eqs. 59-61)."""
    if K < 2:
        raise ValueError("the Dir-Dir model needs rank >= 2 (with one component v = 0 is "
                         "impossible)")
    z = rng.integers(0, K, size=v.shape[0]).astype(np.int64)
    shift = rng.integers(1, K, size=v.shape[0])
    c = np.where(v == 1, z, (z + shift) % K).astype(np.int64)
    return z, c


def assignments_given_factors(rows, cols, v, A, W, rng, *, Wt=None):
    """Draw the labels of every observed entry from their exact conditional given the factors.

    Beta-Dir (``W`` of shape (K, N)): ``P(z = k) ∝ A[d, k] W[k, n]`` on ones and
    ``A[d, k] (1 - W[k, n])`` on zeros (the augmentation of Eq. 19). Dir-Dir (``Wt`` of shape
    (N, K) instead of ``W``): on ones ``z = c = k`` with ``P ∝ A[d, k] Wt[n, k]`` (Eq. 59); on
    zeros the pair ``(z, c)``, ``z != c``, with ``P ∝ A[d, z] Wt[n, c]``, drawn as ``z`` with
    ``P ∝ A[d, k] (1 - Wt[n, k])`` and then ``c != z`` with ``P ∝ Wt[n, c]``.

    Returns ``z`` (and ``c`` for Dir-Dir) as int64 arrays. Raises ``ValueError`` when an entry
    has no label of positive probability (e.g. factors on the boundary of their support).
    """
    A = np.asarray(A, dtype=float)
    ones = np.asarray(v) == 1
    if Wt is None:
        Wc = np.asarray(W, dtype=float).T[cols]  # (n, K)
        p = A[rows] * np.where(ones[:, None], Wc, 1.0 - Wc)
    else:
        Wc = np.asarray(Wt, dtype=float)[cols]
        p = A[rows] * np.where(ones[:, None], Wc, 1.0 - Wc)
    total = p.sum(axis=1)
    if not np.all(np.isfinite(total) & (total > 0)):
        raise ValueError("the factors give some observed entry no label of positive "
                         "probability: start from a point inside the support (0 < A, W < 1)")
    z = _draw_rows(p / total[:, None], rng)
    if Wt is None:
        return z
    q = Wc.copy()
    q[np.arange(z.shape[0]), z] = 0.0
    c = np.where(ones, z, _draw_rows(q / q.sum(axis=1, keepdims=True), rng)).astype(np.int64)
    return z, c


def _draw_rows(p, rng):
    """One categorical draw per row of the probability matrix ``p`` (rows sum to 1)."""
    cum = np.cumsum(p, axis=1)
    u = rng.random(p.shape[0]) * cum[:, -1]
    return np.minimum((cum <= u[:, None]).sum(axis=1), p.shape[1] - 1).astype(np.int64)


@numba.njit(cache=True)
def dirdir_counts(rows, cols, z, c, D, N, K):
    """Counters ``L`` (D x K) of z and ``Q`` (N x K) of c."""
    L = np.zeros((D, K))
    Q = np.zeros((N, K))
    for i in range(rows.shape[0]):
        L[rows[i], z[i]] += 1.0
        Q[cols[i], c[i]] += 1.0
    return L, Q


@numba.njit(cache=True)
def dirdir_sweep(rows, cols, v, z, c, L, Q, g, eta, u, blocked_zeros, beta):
    """One collapsed Gibbs sweep of the doubly augmented Dir-Dir model (Eqs. 59-61), in place.

    ``u`` holds two U(0, 1) variates per observed entry (shape ``(n_obs, 2)``). On zeros the
    paper draws z avoiding c, then c avoiding z (``blocked_zeros=False``); with
    ``blocked_zeros=True`` the pair is drawn jointly (not in the paper: ``P(z = k) ∝ (g_k + L_fk)
    (S - eta_k - Q_nk)``, then c from Eq. 61). The sequential scheme cannot move at K = 2 (z and
    c are then forced), so the blocked draw is required there.

    With ``beta < 1`` the sweep targets the tempered collapsed joint ``p(V, Z, C)^beta`` (replica
    exchange): every conditional (of a pair or of one label) is raised to ``beta`` and
    renormalized; the blocked draw's marginal becomes ``(g_k + L_fk)^beta (S_beta - (eta_k +
    Q_nk)^beta)`` with ``S_beta = sum_m (eta_m + Q_nm)^beta``. With ``beta == 1`` it is the
    untempered sweep, with the same arithmetic.
    """
    K = L.shape[1]
    cum = np.empty(K)
    tempered = beta != 1.0
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        if v[i]:
            k = z[i]
            L[f, k] -= 1.0
            Q[n, k] -= 1.0
            total = 0.0
            for kk in range(K):
                w = (g[kk] + L[f, kk]) * (eta[kk] + Q[n, kk])
                total += w ** beta if tempered else w
                cum[kk] = total
            k = _categorical(cum, K, u[i, 0] * total)
            z[i] = k
            c[i] = k
            L[f, k] += 1.0
            Q[n, k] += 1.0
        else:
            k = z[i]
            L[f, k] -= 1.0
            ci = c[i]
            if blocked_zeros:
                Q[n, ci] -= 1.0
                S = 0.0
                total = 0.0
                if tempered:
                    for kk in range(K):
                        S += (eta[kk] + Q[n, kk]) ** beta
                    for kk in range(K):
                        rest = max(S - (eta[kk] + Q[n, kk]) ** beta, 0.0)  # round-off
                        total += (g[kk] + L[f, kk]) ** beta * rest
                        cum[kk] = total
                else:
                    for kk in range(K):
                        S += eta[kk] + Q[n, kk]
                    for kk in range(K):
                        total += (g[kk] + L[f, kk]) * (S - eta[kk] - Q[n, kk])
                        cum[kk] = total
                k = _categorical(cum, K, u[i, 0] * total)
            else:
                # z avoids the current c (Eq. 60)
                total = 0.0
                for kk in range(K):
                    if kk != ci:
                        w = g[kk] + L[f, kk]
                        total += w ** beta if tempered else w
                    cum[kk] = total
                k = _categorical_skip(cum, K, u[i, 0] * total, ci)
                Q[n, ci] -= 1.0
            z[i] = k
            L[f, k] += 1.0
            # c avoids the new z (Eq. 61)
            total = 0.0
            for kk in range(K):
                if kk != k:
                    w = eta[kk] + Q[n, kk]
                    total += w ** beta if tempered else w
                cum[kk] = total
            ci = _categorical_skip(cum, K, u[i, 1] * total, k)
            c[i] = ci
            Q[n, ci] += 1.0


@numba.njit(cache=True)
def _categorical_skip(cum, K, t, skip):
    """Like :func:`_categorical` but never returns ``skip`` (whose mass is zero)."""
    k = _categorical(cum, K, t)
    if k == skip:  # only possible through ties at zero mass; move to the next allowed index
        k = k + 1 if k + 1 < K else k - 1
    return k


def dirdir_log_joint(L, Q, g, eta):
    """Collapsed log joint ``log p(V, Z, C)`` of Dir-Dir (valid while all constraints hold)."""
    return _log_dirichlet_multinomial(g, L) + _log_dirichlet_multinomial(eta, Q)


# --------------------------------------------------------------------------------------------
# Beta-Dir CVB0
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def cvb0_counts(rows, cols, v, q, D, N):
    """Expected counters ``E[L]`` (D x K), ``E[C1]``, ``E[C0]`` (N x K) of responsibilities q."""
    K = q.shape[1]
    L = np.zeros((D, K))
    C1 = np.zeros((N, K))
    C0 = np.zeros((N, K))
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        for k in range(K):
            L[f, k] += q[i, k]
            if v[i]:
                C1[n, k] += q[i, k]
            else:
                C0[n, k] += q[i, k]
    return L, C1, C0


@numba.njit(cache=True)
def cvb0_sweep(rows, cols, v, q, L, C1, C0, g, a, b):
    """One in-place CVB0 sweep (Eq. 36, parentheses as in the module doc); returns max |Δq|."""
    K = q.shape[1]
    p = np.empty(K)
    delta = 0.0
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        vi = v[i]
        s = 0.0
        for k in range(K):
            qk = q[i, k]
            lk = L[f, k] - qk
            c1 = C1[n, k]
            c0 = C0[n, k]
            if vi:
                c1 -= qk
                num = a[k] + c1
            else:
                c0 -= qk
                num = b[k] + c0
            val = (g[k] + lk) * num / (a[k] + b[k] + c1 + c0)
            if val < 0.0:  # round-off in the running sums
                val = 0.0
            p[k] = val
            s += val
        for k in range(K):
            new = p[k] / s
            d = new - q[i, k]
            if abs(d) > delta:
                delta = abs(d)
            q[i, k] = new
            L[f, k] += d
            if vi:
                C1[n, k] += d
            else:
                C0[n, k] += d
    return delta


# --------------------------------------------------------------------------------------------
# Exact conditional draws and metrics
# --------------------------------------------------------------------------------------------
def draw_dirichlet(rng, conc):
    """Draw Dirichlet vectors along the last axis of ``conc``, robust for tiny concentrations.

    Gamma variates with shape < 1 are drawn in log space (``G(a) = G(a + 1) U^(1/a)``), then
    normalized with a log-sum-exp, so concentrations like ``1/K`` never produce 0/0. Entries are
    floored at the smallest normal float so that the simplex transform's log stays finite.
    """
    conc = np.asarray(conc, dtype=float)
    small = conc < 1.0
    logg = np.log(rng.gamma(np.where(small, conc + 1.0, conc)))
    logu = np.log(rng.uniform(size=conc.shape))
    logg = np.where(small, logg + logu / conc, logg)
    logg -= logg.max(axis=-1, keepdims=True)
    x = np.exp(logg)
    x /= x.sum(axis=-1, keepdims=True)
    tiny = np.finfo(float).tiny
    if (x < tiny).any():
        x = np.maximum(x, tiny)
        x /= x.sum(axis=-1, keepdims=True)
    return x


def draw_beta(rng, a, b):
    """Beta draws kept strictly inside (0, 1) so the log-odds transform stays finite."""
    x = rng.beta(a, b)
    eps = np.finfo(float).eps
    return np.clip(x, np.finfo(float).tiny, 1.0 - eps / 2)


def bernoulli_nll(X, mask, mean, *, clip=1e-12):
    """Negative log-likelihood ``-Σ_observed log p(v | mean)`` (Eq. 66), means clipped."""
    p = np.clip(np.asarray(mean, dtype=float), clip, 1.0 - clip)
    Xv = np.asarray(X, dtype=float)
    ll = np.where(Xv == 1.0, np.log(p), np.log1p(-p))
    return float(-np.sum(ll[mask]))


# --------------------------------------------------------------------------------------------
# Chain states (numeric; the PyMC step methods and the SBC tests wrap these)
# --------------------------------------------------------------------------------------------
def _check_assignments(z, n, K, name):
    """Return ``z`` (an int64 array of ``n`` labels in ``0..K-1``), not copied when it is one."""
    z = np.asarray(z)
    if z.shape != (n,) or z.dtype != np.int64:
        z = np.asarray(z, dtype=np.int64)
        if z.shape != (n,):
            raise ValueError(f"{name} must hold one label per observed entry ({n}), got shape "
                             f"{z.shape}")
    if n and (z.min() < 0 or z.max() >= K):
        raise ValueError(f"{name} must hold labels in 0..{K - 1}")
    return z


def assignment_summary(L, threshold=0.01):
    """``(n_active, n_nonempty)``: components with >= ``threshold`` of all assignments / any."""
    mass = L.sum(axis=0)
    total = mass.sum()
    return int(np.sum(mass >= threshold * total)), int(np.sum(mass > 0))


def _copy_chain(chain, mutable):
    new = copy.copy(chain)
    for name in mutable:
        setattr(new, name, getattr(chain, name).copy())
    return new


class BetaDirChain:
    """State of one Beta-Dir collapsed Gibbs chain: assignments ``z`` and counters.

    Rows carry the Dirichlet factor (concentration ``g``) and columns the Beta factor
    (``a``, ``b``); Dir-Beta runs this chain on the transposed data.

    Parameters
    ----------
    rows, cols, v : numpy.ndarray
        Observed entries (see :func:`observed_entries`).
    D, N : int
        Matrix shape.
    g, a, b : numpy.ndarray of shape (K,)
        Hyperparameters.
    rng : numpy.random.Generator
        Draws the random one-hot initialization (paper).
    z : numpy.ndarray of int64, optional
        Start from these assignments instead (used as is and updated in place; ``rng`` is then
        not used); the counters are computed from them.
    """

    def __init__(self, rows, cols, v, D, N, g, a, b, rng, *, z=None):
        self.rows, self.cols, self.v = rows, cols, v
        self.D, self.N = int(D), int(N)
        self.g, self.a, self.b = (np.asarray(x, dtype=float) for x in (g, a, b))
        self.K = self.g.shape[0]
        if z is None:
            self.z = rng.integers(0, self.K, size=rows.shape[0]).astype(np.int64)
        else:
            self.z = _check_assignments(z, rows.shape[0], self.K, "z")
        self.L, self.C1, self.C0 = betadir_counts(rows, cols, v, self.z, self.D, self.N, self.K)

    def copy(self):
        """The same state in a new chain (labels and counters copied, data shared)."""
        return _copy_chain(self, ("z", "L", "C1", "C0"))

    def sweep(self, rng, beta=1.0):
        """One collapsed sweep (Eq. 25; of ``p(V, Z)^beta`` with ``beta < 1``)."""
        u = rng.random(self.rows.shape[0])
        betadir_sweep(self.rows, self.cols, self.v, self.z, self.L, self.C1, self.C0,
                      self.g, self.a, self.b, u, float(beta))

    def draw(self, rng):
        """Exact draw of the factors given Z: ``(A (D, K) Dirichlet rows, W (K, N) Beta)``."""
        A = draw_dirichlet(rng, self.g + self.L)
        W = draw_beta(rng, (self.a + self.C1).T, (self.b + self.C0).T)
        return A, W

    def conditional_means(self):
        """``(E[A | Z], E[W | Z, V])`` (Eqs. 28-29)."""
        conc = self.g + self.L
        A = conc / conc.sum(axis=1, keepdims=True)
        W = ((self.a + self.C1) / (self.a + self.b + self.C1 + self.C0)).T
        return A, W

    def log_joint(self):
        """Collapsed ``log p(V, Z)``."""
        return betadir_log_joint(self.L, self.C1, self.C0, self.g, self.a, self.b)


class DirDirChain:
    """State of one Dir-Dir collapsed Gibbs chain: labels ``z`` (rows), ``c`` (columns), counters.

    Parameters
    ----------
    rows, cols, v : numpy.ndarray
        Observed entries.
    D, N : int
        Matrix shape.
    g, eta : numpy.ndarray of shape (K,)
        Dirichlet concentrations of the rows of ``A`` and the columns of ``W``.
    rng : numpy.random.Generator
        Draws the random initialization (``z == c`` on ones, ``z != c`` on zeros).
    blocked_zeros : bool, optional
        Draw (z, c) jointly on zeros instead of the paper's sequential update. Default: only
        when K = 2, where the sequential update cannot move.
    z, c : numpy.ndarray of int64, optional
        Start from these assignments instead (both or neither; used as is and updated in
        place, ``rng`` is then not used). They must satisfy ``z == c`` on ones and ``z != c``
        on zeros.
    """

    def __init__(self, rows, cols, v, D, N, g, eta, rng, *, blocked_zeros=None, z=None,
                 c=None):
        self.rows, self.cols, self.v = rows, cols, v
        self.D, self.N = int(D), int(N)
        self.g, self.eta = (np.asarray(x, dtype=float) for x in (g, eta))
        self.K = self.g.shape[0]
        self.blocked_zeros = (self.K == 2) if blocked_zeros is None else bool(blocked_zeros)
        if (z is None) != (c is None):
            raise ValueError("give both assignments z and c, or neither")
        if z is None:
            self.z, self.c = dirdir_init(v, self.K, rng)
        else:
            self.z = _check_assignments(z, rows.shape[0], self.K, "z")
            self.c = _check_assignments(c, rows.shape[0], self.K, "c")
            if np.any((self.z == self.c) != (np.asarray(v) == 1)):
                raise ValueError("Dir-Dir assignments need z == c on ones and z != c on zeros")
        self.L, self.Q = dirdir_counts(rows, cols, self.z, self.c, self.D, self.N, self.K)

    def copy(self):
        """The same state in a new chain (labels and counters copied, data shared)."""
        return _copy_chain(self, ("z", "c", "L", "Q"))

    def sweep(self, rng, beta=1.0):
        """One collapsed sweep (Eqs. 59-61; of ``p(V, Z, C)^beta`` with ``beta < 1``)."""
        u = rng.random((self.rows.shape[0], 2))
        dirdir_sweep(self.rows, self.cols, self.v, self.z, self.c, self.L, self.Q,
                     self.g, self.eta, u, self.blocked_zeros, float(beta))

    def draw(self, rng):
        """Exact draw given (Z, C): ``(A (D, K), Wt (N, K))``, both with Dirichlet rows."""
        return draw_dirichlet(rng, self.g + self.L), draw_dirichlet(rng, self.eta + self.Q)

    def conditional_means(self):
        """``(E[A | Z], E[W | C])`` with ``W`` of shape (K, N)."""
        ca = self.g + self.L
        cw = self.eta + self.Q
        return ca / ca.sum(axis=1, keepdims=True), (cw / cw.sum(axis=1, keepdims=True)).T

    def log_joint(self):
        """Collapsed ``log p(V, Z, C)``."""
        return dirdir_log_joint(self.L, self.Q, self.g, self.eta)
