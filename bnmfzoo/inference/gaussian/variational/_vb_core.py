"""NumPy core shared by :func:`fit_vb`, :func:`fit_icm` and :func:`fit_multiplicative`.

Nothing here knows about PyMC. The Gaussian NMF / NMTF problems of Brouwer et al. (2017) are held
as a sparse index of the observed entries (:class:`Observed`), so every sweep costs
O(|observed| x rank) rather than O(D x N x rank).

Coordinate updates are written once for "moment" states (expectations ``E`` and variances ``V``
of every factor entry): mean-field VB plugs in truncated-normal moments of the optimal factor,
ICM plugs in the conditional mode with zero variance (so the VB formulas reduce to the Gibbs
conditionals). Factors are stored with the factor index first (``U`` as K x D, ``V`` as K x N,
``F`` as K x D, ``G`` as L x N) so that a column update touches contiguous memory.

The layers: truncated-normal / Gamma moments in :mod:`._vb_moments`, the observed-entry index
and problem description in :mod:`._vb_problem`, starting values in :mod:`._vb_init`, the moment
state and coordinate sweeps here, and the PyMC glue (reading the model spec, building the
DataTree) in :mod:`._vb_glue`. The names of the first three are re-exported here, so the fitters
see one ``core`` namespace.
"""

import numba
import numpy as np

from bnmfzoo.inference.gaussian.gibbs._gram import pattern_grams

# re-exported: the fitters use one ``core`` namespace for the numeric layers
from bnmfzoo.inference.gaussian.variational._vb_init import (  # noqa: F401
    check_iterations,
    init_means,
    kmeans_missing,
)
from bnmfzoo.inference.gaussian.variational._vb_moments import (  # noqa: F401
    LOG_2PI,
    gamma_elog,
    gamma_entropy,
    gamma_logprior,
    tn_entropy,
    tn_moments,
    tn_moments_rule,
    tn_moments_scalar,
    tn_sample,
)
from bnmfzoo.inference.gaussian.variational._vb_problem import Observed, Problem, factor_roles  # noqa: F401


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
        # Gamma rate variables of a recognized model (Problem.rates): q(lambda) or the point
        self.rate_ab, self.rate_E, self.rate_logE = {}, {}, {}
        self.entry_lam, self.entry_loglam = {}, {}  # role -> E[lambda], E[log lambda] per entry
        for term in problem.rates:
            a, b = term.alpha.copy(), term.beta.copy()
            self.set_rate(term, a / b, gamma_elog(a, b), (a, b))
        self.resid = None
        self.refresh()

    def set_rate(self, term, mean, log_mean, ab=None):
        """Set ``E[lambda]`` and ``E[log lambda]`` (a point: its value and log) of a rate term."""
        self.rate_E[term.name] = np.asarray(mean, dtype=float)
        self.rate_logE[term.name] = np.asarray(log_mean, dtype=float)
        if ab is not None:
            self.rate_ab[term.name] = ab
        for role, index in term.users:
            self.entry_lam[role] = self.rate_E[term.name][index]
            self.entry_loglam[role] = self.rate_logE[term.name][index]

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
        if role in self.entry_lam:
            lam = self.entry_lam[role]
            return lam if k is None else lam[k]
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


def _with_prior(state, role, prec):
    """``prec`` plus the prior's quadratic term (HalfNormal, TruncatedNormal); as is otherwise.

    The conditional (or optimal q) of an entry with prior ``exp(-q x^2 / 2 + lin x)`` on
    ``x >= 0`` is a truncated normal with precision ``tau sum(partner^2) + q`` and mean
    ``(lin + tau num) / prec``; :meth:`MomentState.rate` gives ``-lin``.
    """
    q = state.problem.prior_prec(role)
    return prec if q is None else prec + q


def sweep_nmf(state, column_rule, *, kernel="auto"):
    """One pass over the columns of A then W (Brouwer's order, after the ARD update).

    ``column_rule(mu, prec) -> (E, V)`` gives the new moments of a column whose optimal
    conditional / variational factor is TN(mu, prec). ``kernel`` is how the numerator sums are
    formed: through the residual (one pass over the observed entries per column) or through
    the missing-data patterns' Gram matrices of the partner's means (O(n R) per column, see
    :mod:`bnmfzoo.inference.gaussian.gibbs._gram`); ``"auto"`` takes the cheaper one, as the Gibbs
    sampler does. Both make the same updates in the same order.
    """
    obs = state.problem.obs
    if kernel == "auto":
        kernel = "gram" if obs.half_sweep_paths(state.E["A"].shape[0]) == ("gram", "gram") \
            else "residual"
    if kernel == "gram":
        prec_A = _with_prior(state, "A", state.tau * obs.rows_of(state.second("W")))
        _gram_columns(state, "A", "W", obs.row_patterns, prec_A, column_rule)
        prec_W = _with_prior(state, "W", state.tau * obs.cols_of(state.second("A")))
        _gram_columns(state, "W", "A", obs.col_patterns, prec_W, column_rule)
        state.refresh()
        return
    if kernel != "residual":
        raise ValueError(f"kernel must be 'auto', 'gram' or 'residual', got {kernel!r}")
    tau = state.tau
    EA, EW = state.E["A"], state.E["W"]
    r = state.resid
    R = EA.shape[0]
    prec_A = _with_prior(state, "A", tau * obs.rows_of(state.second("W")))  # R x D
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
    prec_W = _with_prior(state, "W", tau * obs.cols_of(state.second("A")))  # R x N
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
    prec_F = _with_prior(state, "F", tau * obs.rows_of(a_cols))
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
    prec_S = _with_prior(state, "S", tau * (state.second("F") @ obs.rows_of(state.second("G")).T))
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
    prec_G = _with_prior(state, "G", tau * obs.cols_of(b_rows))  # L x N
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


def rate_posterior(state):
    """Shape/rate of the Gamma conditional (or q) of each rate variable (Problem.rates)."""
    return {term.name: term.posterior(state.E) for term in state.problem.rates}


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


def draw_predictions(problem, draws):
    """Mean over draws of the per-draw prediction on the observed entries, and per-draw MSE.

    ``draws`` holds public-layout arrays shaped (chain, draw, ...). Predictions are formed on
    the observed entries only (O(observed x R) per draw through :class:`Observed.product`,
    never a dense D x N product unless at least an eighth of the entries are observed), and
    never as mean(A) @ mean(W). Returns ``(mean prediction per observed entry in the order of
    problem.obs, mse of shape (chain, draw))``.
    """
    roles = factor_roles(problem)
    first = draws[roles[0]]
    n_chain, n_draw = first.shape[:2]
    obs = problem.obs
    total = np.zeros(obs.n)
    mse = np.empty((n_chain, n_draw))
    for c in range(n_chain):
        for d in range(n_draw):
            v = {r: draws[r][c, d] for r in roles}
            if problem.tri:
                pred = obs.product(np.ascontiguousarray(v["F"].T), v["S"] @ v["G"].T)
            else:
                pred = obs.product(np.ascontiguousarray(v["A"].T), v["W"])
            total += pred
            err = obs.x - pred
            mse[c, d] = float(err @ err) / obs.n
    return total / (n_chain * n_draw), mse


def mse_on(pred, X, mask):
    """Mean squared error of ``pred`` against ``X`` over ``mask``."""
    err = (np.asarray(pred) - np.asarray(X))[mask]
    return float(np.mean(err**2))
