"""NumPy core shared by :func:`fit_vb`, :func:`fit_icm` and :func:`fit_multiplicative`.

Nothing here knows about PyMC. The Gaussian NMF / NMTF problems of Brouwer et al. (2017) are held
as a sparse index of the observed entries (:class:`Observed`), so every sweep costs
O(|observed| x rank) rather than O(D x N x rank).

Coordinate updates are written once for "moment" states (expectations ``E`` and variances ``V``
of every factor entry): mean-field VB plugs in truncated-normal moments of the optimal factor,
ICM plugs in the conditional mode with zero variance (so the VB formulas reduce to the Gibbs
conditionals). Factors are stored with the factor index first (``U`` as K x D, ``V`` as K x N,
``F`` as K x D, ``G`` as L x N) so that a column update touches contiguous memory.

Truncated normals are parameterized by mean ``mu`` and precision ``tau`` of the untruncated
normal, truncated to [0, inf); their moments, entropies and draws come from
:mod:`bnmfzoo.inference.gaussian.truncnorm`.
"""

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from scipy import special

from bnmfzoo.inference.gaussian._gram import PatternPaths, pattern_grams
from bnmfzoo.inference.gaussian.truncnorm import (
    sample_truncnorm,
    truncnorm_entropy,
    truncnorm_mean_var,
)
from bnmfzoo.models._spec import get_spec

LOG_2PI = np.log(2.0 * np.pi)


# ----------------------------------------------------------------------------------------------
# truncated normal (precision parameterization over bnmfzoo.inference.gaussian.truncnorm) and Gamma
# ----------------------------------------------------------------------------------------------
def tn_moments(mu, tau):
    """Mean and variance of N(mu, 1/tau) truncated to [0, inf) (stable in the far tail)."""
    return truncnorm_mean_var(mu, 1.0 / np.sqrt(tau))


def tn_moments_scalar(mu, tau):
    """Scalar :func:`tn_moments` (used for the elements of S)."""
    m, v = tn_moments(float(mu), float(tau))
    return float(m), float(v)


def tn_moments_rule(mu, prec):
    """VB column rule: the truncated-normal moments (scalar fast path for one element)."""
    if np.ndim(mu) == 0:
        return tn_moments_scalar(mu, prec)
    return tn_moments(mu, prec)


def tn_entropy(mu, tau):
    """Entropy of N(mu, 1/tau) truncated to [0, inf) (elementwise)."""
    return truncnorm_entropy(mu, 1.0 / np.sqrt(tau))


def tn_sample(mu, tau, rng, size=None):
    """Exact draws from N(mu, 1/tau) truncated to [0, inf), broadcast to ``size``."""
    mu = np.asarray(mu, dtype=float)
    tau = np.asarray(tau, dtype=float)
    shape = np.broadcast_shapes(mu.shape, tau.shape) if size is None else size
    return sample_truncnorm(np.broadcast_to(mu, shape), np.broadcast_to(1.0 / np.sqrt(tau), shape),
                            rng)


def gamma_elog(a, b):
    """E[log x] for x ~ Gamma(shape a, rate b)."""
    return special.digamma(a) - np.log(b)


def gamma_entropy(a, b):
    """Entropy of Gamma(shape a, rate b)."""
    return a - np.log(b) + special.gammaln(a) + (1.0 - a) * special.digamma(a)


def gamma_logprior(a0, b0, elog, mean):
    """E_q[log Gamma(x | a0, b0)] given E[log x] and E[x]."""
    return a0 * np.log(b0) - special.gammaln(a0) + (a0 - 1.0) * elog - b0 * mean


# ----------------------------------------------------------------------------------------------
# observed entries
# ----------------------------------------------------------------------------------------------
class Observed(PatternPaths):
    """Sparse index of the observed entries of a D x N matrix.

    Parameters
    ----------
    X : numpy.ndarray
        Data (values at unobserved entries are ignored).
    mask : numpy.ndarray of bool
        True where observed.
    """

    def __init__(self, X, mask):
        self.shape = tuple(mask.shape)
        self.rows, self.cols = np.nonzero(mask)
        self.x = np.asarray(X, dtype=float)[self.rows, self.cols]
        self.n = self.x.size
        ones = np.ones(self.n)
        self.M = sp.csr_matrix((ones, (self.rows, self.cols)), shape=self.shape)
        self.MT = self.M.T.tocsr()
        self.flat = self.rows * self.shape[1] + self.cols
        # at least an eighth observed: dense BLAS products beat sparse ones
        self.dense_mask = None
        if self.shape[0] * self.shape[1] <= 8 * self.n:
            self.dense_mask = np.zeros(self.shape)
            self.dense_mask.flat[self.flat] = 1.0

    @property
    def n_observed(self):
        """Number of observed entries."""
        return self.n

    def observed_dense(self):
        """``(X with 0 where missing, observed mask)`` as dense D x N arrays."""
        X = np.zeros(self.shape)
        X.flat[self.flat] = self.x
        observed = np.zeros(self.shape, dtype=bool)
        observed.flat[self.flat] = True
        return X, observed

    def row_sum(self, w):
        """Sum ``w`` (one value per observed entry) over each row."""
        return np.bincount(self.rows, weights=w, minlength=self.shape[0])

    def col_sum(self, w):
        """Sum ``w`` (one value per observed entry) over each column."""
        return np.bincount(self.cols, weights=w, minlength=self.shape[1])

    def rows_of(self, Qt):
        """``(M @ Qt.T).T``: for K x N ``Qt``, the K x D sums of ``Qt[k, j]`` over j in row i."""
        if self.dense_mask is not None:
            return Qt @ self.dense_mask.T
        return np.asarray(self.M @ Qt.T).T

    def cols_of(self, Pt):
        """For K x D ``Pt``, the K x N sums of ``Pt[k, i]`` over observed i in column j."""
        if self.dense_mask is not None:
            return Pt @ self.dense_mask
        return np.asarray(self.MT @ Pt.T).T

    def pair_sum(self, Pt, Qt):
        """``sum over observed (i, j) of sum_k Pt[k, i] Qt[k, j]``."""
        return float(np.sum(Pt * self.rows_of(Qt)))

    def product(self, Pt, Qt):
        """``sum_k Pt[k, rows] * Qt[k, cols]`` at every observed entry (length |observed|).

        Through the dense product when at least an eighth of the entries are observed (one BLAS
        call beats ``K`` gathers there), else entry by entry; likewise :meth:`rows_of` and
        :meth:`cols_of` multiply by the dense 0/1 mask then.
        """
        if self.dense_mask is not None:
            return np.take((Pt.T @ Qt).ravel(), self.flat)
        out = np.zeros(self.n)
        for k in range(Pt.shape[0]):
            out += Pt[k, self.rows] * Qt[k, self.cols]
        return out


# ----------------------------------------------------------------------------------------------
# problem description read from a model's spec
# ----------------------------------------------------------------------------------------------
FAMILIES = ("exponential_gaussian", "tri_exponential_gaussian")


@dataclass
class Problem:
    """Plain-array view of an ``exponential_gaussian`` / ``tri_exponential_gaussian`` spec."""

    family: str
    spec: object
    obs: Observed
    rank: tuple
    lam: dict  # role -> rate array in internal (factor-first) layout, or None under ARD
    alpha_tau: float
    beta_tau: float
    tau_fixed: object  # None or float (1 / sigma**2)
    ard: bool
    alpha0: float
    beta0: float

    @property
    def tri(self):
        """True for the tri-factorization."""
        return self.family == "tri_exponential_gaussian"


def _hyper(hyper, name, default):
    value = hyper.get(name, default)
    return default if value is None else value


def problem_from_model(model, *, method):
    """Read the spec of a Gaussian NMF / NMTF ``model`` into a :class:`Problem`."""
    spec = get_spec(model, families=FAMILIES, method=method)
    h = dict(spec.hyper)
    D, N = spec.mask.shape
    obs = Observed(spec.X_values, spec.mask)
    sigma = h.get("sigma")
    tau_fixed = None if sigma is None else 1.0 / float(sigma) ** 2
    ard = bool(h.get("ard", False))
    if spec.family == "exponential_gaussian":
        R = int(np.atleast_1d(spec.rank)[0])
        rank = (R,)
        lam = {
            "A": np.broadcast_to(np.asarray(_hyper(h, "lambda_A", 0.1), float), (D, R)).T.copy(),
            "W": np.broadcast_to(np.asarray(_hyper(h, "lambda_W", 0.1), float), (R, N)).copy(),
        }
    else:
        K, L = (int(v) for v in spec.rank)
        rank = (K, L)
        lam = {
            "F": np.broadcast_to(np.asarray(_hyper(h, "lambda_F", 0.1), float), (D, K)).T.copy(),
            "S": np.broadcast_to(np.asarray(_hyper(h, "lambda_S", 0.1), float), (K, L)).copy(),
            "G": np.broadcast_to(np.asarray(_hyper(h, "lambda_G", 0.1), float), (N, L)).T.copy(),
        }
    return Problem(
        family=spec.family, spec=spec, obs=obs, rank=rank, lam=lam,
        alpha_tau=float(_hyper(h, "alpha_tau", 1.0)), beta_tau=float(_hyper(h, "beta_tau", 1.0)),
        tau_fixed=tau_fixed, ard=ard,
        alpha0=float(_hyper(h, "alpha0", 1.0)), beta0=float(_hyper(h, "beta0", 1.0)),
    )


# ----------------------------------------------------------------------------------------------
# initialisation
# ----------------------------------------------------------------------------------------------
def kmeans_missing(X, mask, k, rng, *, max_iter=200):
    """K-means on the rows of ``X`` using only observed coordinates (Brouwer's ``kmeans.py``).

    Distances are mean squared differences over observed coordinates; centroids are means of the
    observed values; an empty cluster is reseeded with the point furthest from its centroid.

    Returns
    -------
    numpy.ndarray of int
        Cluster label of each row.
    """
    X = np.where(mask, X, 0.0)
    Mf = mask.astype(float)
    n_obs = np.maximum(Mf.sum(axis=1), 1.0)
    lo = np.where(mask, X, np.inf).min(axis=0)
    hi = np.where(mask, X, -np.inf).max(axis=0)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, 0.0)
    centroids = lo + rng.random((k, X.shape[1])) * (hi - lo)
    labels = np.full(X.shape[0], -1)
    for _ in range(max_iter):
        # ||x - c||^2 over observed coordinates / n_obs
        dist = ((X**2).sum(1)[:, None] - 2.0 * X @ centroids.T + Mf @ (centroids**2).T)
        dist /= n_obs[:, None]
        new = dist.argmin(axis=1)
        for c in range(k):
            if not np.any(new == c):
                far = int(dist[np.arange(X.shape[0]), new].argmax())
                new[far] = c
                dist[far, :] = 0.0
        if np.array_equal(new, labels):
            break
        labels = new
        ind = np.eye(k)[labels]  # n x k
        counts = ind.T @ Mf
        sums = ind.T @ X
        centroids = np.where(counts > 0, sums / np.maximum(counts, 1.0), centroids)
    return labels


def init_means(problem, init, rng, *, kmeans_offset=0.0):
    """Initial factor values (internal layout) for ``init`` in {"random", "exp", "kmeans"}.

    "random" draws from the exponential priors (rate E[lambda] = alpha0 / beta0 under ARD),
    "exp" uses the prior means, "kmeans" (NMTF only) sets F and G to K-means cluster
    indicators plus ``kmeans_offset`` and draws S from its prior. A dict of arrays in the
    public layout (A: row x factor, W: factor x col, F, S, G) is used as given.
    """
    D, N = problem.obs.shape
    rates = {}
    for role, lam in problem.lam.items():
        if problem.ard and role in ("A", "W", "F", "G"):
            rates[role] = np.full(lam.shape, problem.alpha0 / problem.beta0)
        else:
            rates[role] = lam
    if isinstance(init, dict):
        out = {}
        for role in rates:
            if role not in init:
                raise ValueError(f"init is missing {role!r} (needs {sorted(rates)})")
            arr = np.asarray(init[role], dtype=float)
            arr = arr.T if role in ("A", "F", "G") else arr
            if arr.shape != rates[role].shape or not np.all(np.isfinite(arr)) or (arr < 0).any():
                raise ValueError(f"init[{role!r}] must be a finite non-negative array of shape "
                                 f"{arr.T.shape if role in ('A', 'F', 'G') else arr.shape}")
            out[role] = arr.copy()
        return out
    if init == "random":
        return {role: rng.exponential(1.0 / r) for role, r in rates.items()}
    if init == "exp":
        return {role: 1.0 / r for role, r in rates.items()}
    if init == "kmeans":
        if not problem.tri:
            raise ValueError("init='kmeans' is for the tri-factorization; use 'random' or 'exp'")
        K, L = problem.rank
        X = problem.spec.X_values
        mask = problem.spec.mask
        f_lab = kmeans_missing(X, mask, K, rng)
        g_lab = kmeans_missing(X.T, mask.T, L, rng)
        return {
            "F": np.eye(K)[f_lab].T + kmeans_offset,
            "S": rng.exponential(1.0 / rates["S"]),
            "G": np.eye(L)[g_lab].T + kmeans_offset,
        }
    raise ValueError(f"init must be 'random', 'exp', 'kmeans' or a dict of arrays, got {init!r}")


def check_iterations(max_iter, name="max_iter"):
    """Validate an iteration count."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"{name} must be a positive integer, got {max_iter!r}")
    return int(max_iter)


# ----------------------------------------------------------------------------------------------
# moment state and coordinate sweeps (shared by VB and ICM)
# ----------------------------------------------------------------------------------------------
class MomentState:
    """Expectations ``E`` and variances ``V`` of every factor (internal layout) plus tau, lambda.

    ``mu``/``prec`` keep the truncated-normal parameters of the last update (VB only).
    """

    def __init__(self, problem, values):
        self.problem = problem
        self.E = {k: np.asarray(v, float).copy() for k, v in values.items()}
        self.V = {k: np.zeros_like(v) for k, v in self.E.items()}
        self.mu = {k: v.copy() for k, v in self.E.items()}
        self.prec = {k: np.ones_like(v) for k, v in self.E.items()}
        self.tau = problem.tau_fixed if problem.tau_fixed is not None else 1.0
        self.logtau = np.log(self.tau)
        self.tau_ab = None
        self.lam_ab = {}
        self.lam_E = {}
        self.lam_logE = {}
        if problem.ard:
            for role, length in self._ard_roles().items():
                self.lam_ab[role] = (np.full(length, problem.alpha0),
                                     np.full(length, problem.beta0))
                self.lam_E[role] = np.full(length, problem.alpha0 / problem.beta0)
                self.lam_logE[role] = gamma_elog(problem.alpha0, np.full(length, problem.beta0))
        self.resid = None
        self.refresh()

    def _ard_roles(self):
        p = self.problem
        if p.tri:
            return {"F": p.rank[0], "G": p.rank[1]}
        return {"AW": p.rank[0]}

    def refresh(self):
        """Recompute the residual and the derived products from scratch."""
        obs = self.problem.obs
        if self.problem.tri:
            self.H = self.E["S"] @ self.E["G"]  # K x N
            self.Q = self.E["S"].T @ self.E["F"]  # L x D
            self.resid = obs.x - obs.product(self.E["F"], self.H)
        else:
            self.resid = obs.x - obs.product(self.E["A"], self.E["W"])

    def second(self, role):
        """E[x^2] of a factor."""
        return self.V[role] + self.E[role] ** 2

    def rate(self, role, k=None):
        """E[lambda] of the prior of factor ``role`` (column ``k``) in internal layout."""
        p = self.problem
        if p.ard and role != "S":
            key = "AW" if role in ("A", "W") else role
            lam = self.lam_E[key]
            return lam[:, None] if k is None else lam[k]
        return p.lam[role] if k is None else p.lam[role][k]

    # ---- sums of squared errors -------------------------------------------------------------
    def expected_sse(self):
        """E_q[sum over observed (x - prediction)^2] (exact under the mean-field q)."""
        obs = self.problem.obs
        sse = float(self.resid @ self.resid)
        if self.problem.tri:
            EF, ES, EG = self.E["F"], self.E["S"], self.E["G"]
            VF, VG = self.V["F"], self.V["G"]
            if any(np.any(self.V[r]) for r in ("F", "S", "G")):
                sse += obs.pair_sum(self.second("F"), self.second("S") @ self.second("G"))
                sse -= obs.pair_sum(EF**2, ES**2 @ EG**2)
                sse += obs.pair_sum(VF, self.H**2 - ES**2 @ EG**2)
                sse += obs.pair_sum(self.Q**2 - (ES**2).T @ EF**2, VG)
        elif np.any(self.V["A"]) or np.any(self.V["W"]):
            EA, EW = self.E["A"], self.E["W"]
            sse += obs.pair_sum(self.second("A"), self.second("W"))
            sse -= obs.pair_sum(EA**2, EW**2)
        return sse


@numba.njit(cache=True)
def add_back(r, own_idx, part_idx, own, part, n_own):
    """Add column ``own * part`` back into the residual ``r``; return its row/col sums.

    For each observed entry e: ``r[e] += own[own_idx[e]] * part[part_idx[e]]`` and
    ``out[own_idx[e]] += r[e] * part[part_idx[e]]`` (the numerator of a column update).
    """
    out = np.zeros(n_own)
    for e in range(r.size):
        w = part[part_idx[e]]
        r[e] += own[own_idx[e]] * w
        out[own_idx[e]] += r[e] * w
    return out


@numba.njit(cache=True)
def swap_columns(r, rows, cols, a_out, b_out, a_in, b_in, by_row, n_out):
    """Move to the next column in one pass over the observed entries.

    The residual ``r = x - prediction`` gets the outgoing (just updated) column
    ``a_out b_out^T`` subtracted and the incoming column ``a_in b_in^T`` added back:
    ``r[e] += a_in[i] b_in[j] - a_out[i] b_out[j]``. Returns the numerator sums of the incoming
    column's update, ``sum_j r * b_in[j]`` per row (``by_row``) or ``sum_i r * a_in[i]`` per
    column.
    """
    out = np.zeros(n_out)
    for e in range(r.size):
        i = rows[e]
        j = cols[e]
        r[e] += a_in[i] * b_in[j] - a_out[i] * b_out[j]
        if by_row:
            out[i] += r[e] * b_in[j]
        else:
            out[j] += r[e] * a_in[i]
    return out


@numba.njit(cache=True)
def take_out(r, own_idx, part_idx, own, part):
    """Subtract the column ``own * part`` from the residual ``r`` (observed entries only)."""
    for e in range(r.size):
        r[e] -= own[own_idx[e]] * part[part_idx[e]]


@numba.njit(cache=True)
def add_back_element(r, rows, cols, f, g, s):
    """``r += s * f[rows] * g[cols]``; return ``sum(r * f[rows] * g[cols])`` (an S element)."""
    total = 0.0
    for e in range(r.size):
        fg = f[rows[e]] * g[cols[e]]
        r[e] += s * fg
        total += r[e] * fg
    return total


def _set_column(state, role, k, new_E, new_V, mu, prec):
    state.E[role][k] = new_E
    state.V[role][k] = new_V
    state.mu[role][k] = mu
    state.prec[role][k] = prec


def sweep_nmf(state, column_rule, *, kernel="auto"):
    """One pass over the columns of A then W (Brouwer's order, after the ARD update).

    ``column_rule(mu, prec) -> (E, V)`` gives the new moments of a column whose optimal
    conditional / variational factor is TN(mu, prec). ``kernel`` is how the numerator sums are
    formed: through the residual (one pass over the observed entries per column) or through
    the missing-data patterns' Gram matrices of the partner's means (O(n R) per column, see
    :mod:`bnmfzoo.inference.gaussian._gram`); ``"auto"`` takes the cheaper one, as the Gibbs
    sampler does. Both make the same updates in the same order.
    """
    obs = state.problem.obs
    if kernel == "auto":
        kernel = "gram" if obs.half_sweep_paths(state.E["A"].shape[0]) == ("gram", "gram") \
            else "residual"
    if kernel == "gram":
        prec_A = state.tau * obs.rows_of(state.second("W"))
        _gram_columns(state, "A", "W", obs.row_patterns, prec_A, column_rule)
        prec_W = state.tau * obs.cols_of(state.second("A"))
        _gram_columns(state, "W", "A", obs.col_patterns, prec_W, column_rule)
        state.refresh()
        return
    if kernel != "residual":
        raise ValueError(f"kernel must be 'auto', 'gram' or 'residual', got {kernel!r}")
    tau = state.tau
    EA, EW = state.E["A"], state.E["W"]
    r = state.resid
    R = EA.shape[0]
    prec_A = tau * obs.rows_of(state.second("W"))  # R x D
    rows, cols = obs.rows, obs.cols
    D, N = obs.shape
    zero_D, zero_N = np.zeros(D), np.zeros(N)
    a_out, b_out = zero_D, zero_N  # column leaving the residual (none at first)
    for k in range(R):
        num = swap_columns(r, rows, cols, a_out, b_out, EA[k], EW[k], True, D)
        prec = prec_A[k]
        mu = (-state.rate("A", k) + tau * num) / prec
        _set_column(state, "A", k, *column_rule(mu, prec), mu, prec)
        a_out, b_out = EA[k], EW[k]
    prec_W = tau * obs.cols_of(state.second("A"))  # R x N
    for k in range(R):
        num = swap_columns(r, rows, cols, a_out, b_out, EA[k], EW[k], False, N)
        prec = prec_W[k]
        mu = (-state.rate("W", k) + tau * num) / prec
        _set_column(state, "W", k, *column_rule(mu, prec), mu, prec)
        a_out, b_out = EA[k], EW[k]
    take_out(r, rows, cols, a_out, b_out)


def _gram_columns(state, role, partner, patterns, prec, column_rule):
    """Update every column of ``role`` (R x n) given the partner's means, via pattern Grams.

    The numerator of column ``k`` at row ``i`` is ``sum_j m_ij r_ij V[k, j]`` with the residual
    of every column but ``k``: ``c_ik - t_ik + U[k, i] G_i[k, k]``, where ``G_i`` is the Gram
    matrix of the partner's means over row ``i``'s pattern, ``c_i = V (m_i * x_i)`` and
    ``t_i = G_i U[:, i]`` is kept current as the columns change.
    """
    U, V = state.E[role], state.E[partner]
    G = pattern_grams(V, patterns)[patterns.pattern_of]  # (n, R, R)
    C = patterns.xm @ V.T  # (n, R)
    T = np.einsum("ikl,li->ik", G, U)
    for k in range(U.shape[0]):
        g_k = G[:, k, :]
        num = C[:, k] - T[:, k] + U[k] * g_k[:, k]
        mu = (-state.rate(role, k) + state.tau * num) / prec[k]
        old = U[k].copy()
        _set_column(state, role, k, *column_rule(mu, prec[k]), mu, prec[k])
        T += (U[k] - old)[:, None] * g_k


def sweep_nmtf(state, column_rule):
    """One pass F (by column), S (element-wise, row-major), G (by column) for X ~ F S G^T."""
    obs = state.problem.obs
    tau = state.tau
    E, V = state.E, state.V
    EF, ES, EG = E["F"], E["S"], E["G"]
    K, L = ES.shape
    r = state.resid
    rows, cols = obs.rows, obs.cols
    # ---- F ----
    H = state.H
    a_cols = H**2 + state.second("S") @ state.second("G") - ES**2 @ EG**2  # K x N
    prec_F = tau * obs.rows_of(a_cols)
    MVG = obs.rows_of(V["G"])  # L x D: sum_{j in row i} Var G[l, j]
    Q = state.Q
    D, N = obs.shape
    for k in range(K):
        num = add_back(r, rows, cols, EF[k], H[k], D)
        corr = np.sum(ES[k][:, None] * MVG * (Q - EF[k][None, :] * ES[k][:, None]), axis=0)
        mu = (-state.rate("F", k) + tau * (num - corr)) / prec_F[k]
        old = EF[k].copy()
        _set_column(state, "F", k, *column_rule(mu, prec_F[k]), mu, prec_F[k])
        take_out(r, rows, cols, EF[k], H[k])
        Q += np.outer(ES[k], EF[k] - old)
    # ---- S ----
    prec_S = tau * (state.second("F") @ obs.rows_of(state.second("G")).T)  # K x L
    MTVF = obs.cols_of(V["F"])  # K x N
    for k in range(K):
        for c in range(L):
            t1 = add_back_element(r, rows, cols, EF[k], EG[c], ES[k, c])
            t2 = np.sum(EF[k] * MVG[c] * (Q[c] - EF[k] * ES[k, c]))
            t3 = np.sum(EG[c] * MTVF[k] * (H[k] - EG[c] * ES[k, c]))
            mu = (-state.rate("S")[k, c] + tau * (t1 - t2 - t3)) / prec_S[k, c]
            old = ES[k, c]
            ES[k, c], V["S"][k, c] = column_rule(float(mu), float(prec_S[k, c]))
            state.mu["S"][k, c], state.prec["S"][k, c] = mu, prec_S[k, c]
            add_back_element(r, rows, cols, EF[k], EG[c], -ES[k, c])
            Q[c] += (ES[k, c] - old) * EF[k]
            H[k] += (ES[k, c] - old) * EG[c]
    # ---- G ----
    b_rows = Q**2 + state.second("S").T @ state.second("F") - (ES**2).T @ EF**2  # L x D
    prec_G = tau * obs.cols_of(b_rows)  # L x N
    for c in range(L):
        num = add_back(r, cols, rows, EG[c], Q[c], N)
        corr = np.sum(ES[:, c][:, None] * MTVF * (H - ES[:, c][:, None] * EG[c][None, :]), axis=0)
        mu = (-state.rate("G", c) + tau * (num - corr)) / prec_G[c]
        old = EG[c].copy()
        _set_column(state, "G", c, *column_rule(mu, prec_G[c]), mu, prec_G[c])
        take_out(r, cols, rows, EG[c], Q[c])
        H += np.outer(ES[:, c], EG[c] - old)


def sweep(state, column_rule, *, kernel="auto"):
    """Dispatch to :func:`sweep_nmf` (with ``kernel``) or :func:`sweep_nmtf`."""
    if state.problem.tri:
        sweep_nmtf(state, column_rule)
    else:
        sweep_nmf(state, column_rule, kernel=kernel)


def ard_posterior(state):
    """Shape/rate of the Gamma conditional (or q) of each ARD rate vector."""
    p = state.problem
    out = {}
    if p.tri:
        D, N = p.obs.shape
        out["F"] = (p.alpha0 + D + 0 * state.E["F"].sum(1), p.beta0 + state.E["F"].sum(1))
        out["G"] = (p.alpha0 + N + 0 * state.E["G"].sum(1), p.beta0 + state.E["G"].sum(1))
    else:
        D, N = p.obs.shape
        s = state.E["A"].sum(1) + state.E["W"].sum(1)
        out["AW"] = (p.alpha0 + D + N + 0 * s, p.beta0 + s)
    return out


def tau_posterior(state, sse):
    """Shape/rate of the Gamma conditional (or q) of the noise precision."""
    p = state.problem
    return p.alpha_tau + 0.5 * p.obs.n, p.beta_tau + 0.5 * sse


def training_mse(state):
    """Mean squared error of the current mean prediction on the observed entries."""
    return float(state.resid @ state.resid) / state.problem.obs.n


def predict(problem, values):
    """Dense prediction ``A @ W`` or ``F @ S @ G^T`` from public-layout arrays."""
    if problem.tri:
        return values["F"] @ values["S"] @ values["G"].T
    return values["A"] @ values["W"]


def to_public(role, arr):
    """Internal (factor-first) layout -> public layout."""
    return arr.T if role in ("A", "F", "G") else arr


# ----------------------------------------------------------------------------------------------
# DataTree output shared by the three fitters
# ----------------------------------------------------------------------------------------------
ROLE_DIMS = {
    "A": ["row", "factor"],
    "W": ["factor", "col"],
    "F": ["row", "factor_row"],
    "S": ["factor_row", "factor_col"],
    "G": ["col", "factor_col"],
    "tau": [],
    "lambda_": ["factor"],
    "lambda_F": ["factor_row"],
    "lambda_G": ["factor_col"],
}


def factor_roles(problem):
    """Factor roles of the problem in sweep order."""
    return ("F", "S", "G") if problem.tri else ("A", "W")


def var_name(problem, role):
    """PyMC variable name the model uses for ``role`` (falls back to the role itself)."""
    return problem.spec.var_names.get(role) or role


def result_coords(problem):
    """Coordinates for the DataTree: the data's row/col labels and integer factor indices."""
    from bnmfzoo._results import data_coords

    coords = data_coords(problem.spec.X)
    if problem.tri:
        coords["factor_row"] = np.arange(problem.rank[0])
        coords["factor_col"] = np.arange(problem.rank[1])
    else:
        coords["factor"] = np.arange(problem.rank[0])
    return coords


def build_result(problem, draws, *, method, sample_stats=None, groups=None, attrs=None):
    """Wrap posterior ``draws`` ({role: (chain, draw, ...)} in public layout) in a DataTree.

    ``draws`` may hold the roles A/W (or F/S/G), ``tau`` and ``lambda_`` (``lambda_F``,
    ``lambda_G``). Variables are named as in the model's spec.
    """
    from bnmfzoo._results import build_datatree

    posterior, dims = {}, {}
    for role, arr in draws.items():
        name = var_name(problem, role)
        posterior[name] = arr
        dims[name] = ROLE_DIMS[role]
    X = problem.spec.X
    dims["X"] = ["row", "col"]
    return build_datatree(
        posterior,
        sample_stats=sample_stats,
        observed_data={"X": np.asarray(X.values, dtype=float)},
        coords=result_coords(problem),
        dims=dims,
        groups=groups,
        attrs={"method": method, "model": problem.family, **(attrs or {})},
    )


def draw_predictions(problem, draws):
    """Mean over draws of the per-draw product (A @ W or F S G^T) and per-draw training MSE.

    ``draws`` holds public-layout arrays shaped (chain, draw, ...). Never forms
    mean(A) @ mean(W).
    """
    roles = factor_roles(problem)
    first = draws[roles[0]]
    n_chain, n_draw = first.shape[:2]
    obs = problem.obs
    total = np.zeros(obs.shape)
    mse = np.empty((n_chain, n_draw))
    for c in range(n_chain):
        for d in range(n_draw):
            pred = predict(problem, {r: draws[r][c, d] for r in roles})
            total += pred
            err = obs.x - pred[obs.rows, obs.cols]
            mse[c, d] = float(err @ err) / obs.n
    return total / (n_chain * n_draw), mse


def mse_on(pred, X, mask):
    """Mean squared error of ``pred`` against ``X`` over ``mask``."""
    err = (np.asarray(pred) - np.asarray(X))[mask]
    return float(np.mean(err**2))
