"""Numeric core of the exponential-Gaussian (tri-)factorization samplers (no PyMC here).

Observed entries are stored sparsely twice, row-major (CSR) and column-major (CSC), and the
residual ``x - prediction`` is kept on the observed entries only, so a sweep costs
O(|observed| x rank) (O(|observed| x K x L) for the core matrix of the tri-factorization).

Given the other factor, the rows of ``A`` are conditionally independent, so updating
``A[:, k]`` for ``k = 1..R`` (Brouwer et al. 2017, Schmidt et al. 2009) is done row by row:
for each row ``i``, ``A[i, 0], ..., A[i, R-1]`` in turn from their truncated-normal conditionals.
This is the same Markov kernel (each column is a conditionally independent block), with the
row's residuals kept in cache. The same kernel updates ``W`` through its transpose (CSC order,
on a column-major copy of the residual), ``F`` with partner ``G S^T`` and ``G`` with partner
``F S``. The kernel and the reordering are in :mod:`bnmfzoo.inference.gaussian.gibbs._sweep_kernels`
(prefetched gathers, SIMD sums in a fixed order: bit for bit the plain two-pass loops).

For the NMF, each half-sweep takes the cheaper of this residual path and the Gram-matrix path
of :mod:`bnmfzoo.inference.gaussian.gibbs._gram` (same updates, same order, same draws), which wins
when many rows share a missing-data pattern (fully observed or block-missing data).

The functions here are used by :class:`~bnmfzoo.inference.GibbsNMF`,
:class:`~bnmfzoo.inference.GibbsNMTF` and the calibration tests (ICM and VB live in
:mod:`bnmfzoo.inference.gaussian.variational._vb_core`).
"""

import math
from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np

from bnmfzoo._base.entries import LongMatrix
from bnmfzoo._base.validation import fmt
from bnmfzoo.inference.gaussian.gibbs._gram import (
    PatternPaths,
    _conditional,
    all_finite,
    gram_half_sweep,
    gram_sweep,
)
from bnmfzoo.inference.gaussian.gibbs._mixing import check_overrelax, rescale_factors
from bnmfzoo.inference.gaussian.gibbs._sweep_kernels import factor_half_sweep, reorder

__all__ = [
    "ObservedEntries",
    "observed_entries",
    "NMFState",
    "NMTFState",
    "nmf_state",
    "nmtf_state",
    "nmf_sweep",
    "nmtf_sweep",
    "nmf_residual",
    "nmtf_residual",
    "NMF_BLOCKS",
    "NMTF_BLOCKS",
]

NMF_BLOCKS = frozenset({"A", "W", "tau", "lambda_"})
NMTF_BLOCKS = frozenset({"F", "S", "G", "tau", "lambda_F", "lambda_G"})


@dataclass(frozen=True)
class ObservedEntries(PatternPaths):
    """Observed entries of a D x N matrix in CSR and CSC order.

    Attributes
    ----------
    shape : tuple of int
    values, cols : numpy.ndarray
        Row-major (CSR) order; ``row_ptr[i]:row_ptr[i+1]`` are the entries of row ``i``.
    rows : numpy.ndarray
        Row index of each entry, CSR order.
    row_ptr : numpy.ndarray
    csc_values, csc_rows, col_ptr : numpy.ndarray
        The same entries in column-major (CSC) order.
    csc_perm : numpy.ndarray
        ``csc_array = csr_array[csc_perm]``.
    csr_perm : numpy.ndarray
        Inverse permutation: ``csr_array = csc_array[csr_perm]``.
    """

    shape: tuple
    values: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    row_ptr: np.ndarray
    csc_values: np.ndarray
    csc_rows: np.ndarray
    col_ptr: np.ndarray
    csc_perm: np.ndarray
    csr_perm: np.ndarray

    def __deepcopy__(self, memo):
        """Return ``self``: the observed entries are immutable (also shared by snapshots)."""
        return self

    @property
    def n_observed(self):
        """Number of observed entries."""
        return self.values.size

    @cached_property
    def sum_sq(self):
        """``sum(x^2)`` over the observed entries."""
        return float(self.values @ self.values)

    def observed_dense(self):
        """``(X with 0 where missing, observed mask)`` as dense D x N arrays."""
        D, N = self.shape
        observed = np.zeros((D, N), dtype=bool)
        observed[self.rows, self.cols] = True
        X = np.zeros((D, N))
        X[self.rows, self.cols] = self.values
        return X, observed


def observed_entries(X, mask=None):
    """Build :class:`ObservedEntries` from a D x N array (NaN or ``mask`` False = missing).

    ``X`` may also be a :class:`~bnmfzoo._base.entries.LongMatrix` (``ModelSpec.entries`` of a model
    built from sparse data): the same entries in the same order, with no dense array.

    Examples
    --------
    >>> import numpy as np
    >>> obs = observed_entries(np.array([[1.0, np.nan], [2.0, 3.0]]))
    >>> obs.n_observed, obs.row_ptr.tolist(), obs.col_ptr.tolist()
    (3, [0, 1, 3], [0, 2, 3])
    """
    if isinstance(X, LongMatrix):  # sparse input: already row-major, no dense array
        (D, N), rows, cols, values = X.shape, X.rows, X.cols, X.values
    else:
        Xv = np.asarray(getattr(X, "values", X), dtype=float)
        m = ~np.isnan(Xv)
        if mask is not None:
            m &= np.asarray(mask, dtype=bool)
        D, N = Xv.shape
        rows, cols = np.nonzero(m)  # row-major order
        values = Xv[rows, cols].astype(float)
    row_ptr = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=D), out=row_ptr[1:])
    col_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=N), out=col_ptr[1:])
    csc_perm = _column_order(cols.astype(np.int64, copy=False), col_ptr)
    csr_perm = np.empty_like(csc_perm)
    csr_perm[csc_perm] = np.arange(csc_perm.size)
    return ObservedEntries(
        shape=(D, N),
        values=np.ascontiguousarray(values),
        rows=rows.astype(np.int64, copy=False),
        cols=cols.astype(np.int64, copy=False),
        row_ptr=row_ptr,
        csc_values=np.ascontiguousarray(values[csc_perm]),
        csc_rows=rows[csc_perm].astype(np.int64, copy=False),
        col_ptr=col_ptr,
        csc_perm=csc_perm,
        csr_perm=csr_perm,
    )


# ----------------------------------------------------------------------------- numba kernels


@numba.njit(cache=True)
def _column_order(cols, col_ptr):
    """Stable counting sort of row-major entries by column: the CSR -> CSC permutation, O(n)."""
    pos = col_ptr[:-1].copy()
    perm = np.empty(cols.size, dtype=np.int64)
    for e in range(cols.size):
        j = cols[e]
        perm[pos[j]] = e
        pos[j] += 1
    return perm


@numba.njit(cache=True)
def _residual(U, V, ptr, idx, values, out):
    """``out[e] = values[e] - U[i] . V[idx[e]]`` for the entries ``ptr[i]:ptr[i+1]`` of row i."""
    R = U.shape[1]
    for i in range(U.shape[0]):
        for e in range(ptr[i], ptr[i + 1]):
            j = idx[e]
            s = 0.0
            for k in range(R):
                s += U[i, k] * V[j, k]
            out[e] = values[e] - s


# No fastmath here: with 'reassoc'/'contract' LLVM chose the reduction order and FMA use per
# compilation context, so the same seed gave different last digits depending on whether numba's
# on-disk cache was warm. Four explicit accumulators fix the summation order in the source and
# still let the loop vectorize (strict IEEE semantics, results independent of the cache).
@numba.njit(cache=True)
def _dot_sq(b, res, n):
    """Return ``(sum(res * b), sum(b * b))`` over the first ``n`` entries.

    Summed in four interleaved partial sums, combined as ``(s0 + s1) + (s2 + s3)``.
    """
    a0 = a1 = a2 = a3 = 0.0
    q0 = q1 = q2 = q3 = 0.0
    n4 = n - n % 4
    for e in range(0, n4, 4):
        v0 = b[e]
        v1 = b[e + 1]
        v2 = b[e + 2]
        v3 = b[e + 3]
        a0 += res[e] * v0
        a1 += res[e + 1] * v1
        a2 += res[e + 2] * v2
        a3 += res[e + 3] * v3
        q0 += v0 * v0
        q1 += v1 * v1
        q2 += v2 * v2
        q3 += v3 * v3
    for e in range(n4, n):
        v = b[e]
        a0 += res[e] * v
        q0 += v * v
    return (a0 + a1) + (a2 + a3), (q0 + q1) + (q2 + q3)


@numba.njit(cache=True)
def _axpy(res, d, b, n):
    """``res[:n] -= d * b[:n]`` (element-wise: vectorizes without fast-math flags)."""
    for e in range(n):
        res[e] -= d * b[e]


@numba.njit(cache=True)
def _core_sweep(F, S, G, rows, cols, resid, tau, lam_S, rng):
    """Update every entry ``S[k, m]`` (row-major order) for ``x_ij = F_i S G_j^T + noise``."""
    K, L = S.shape
    n = rows.size
    for k in range(K):
        for m in range(L):
            s1 = 0.0
            s2 = 0.0
            for e in range(n):
                c = F[rows[e], k] * G[cols[e], m]
                s1 += resid[e] * c
                s2 += c * c
            old = S[k, m]
            prec = tau * s2
            lin = tau * (s1 + old * s2) - lam_S
            new = _conditional(lin, prec, lam_S, rng)
            d = new - old
            if d != 0.0:
                for e in range(n):
                    resid[e] -= d * F[rows[e], k] * G[cols[e], m]
                S[k, m] = new


@numba.njit(cache=True)
def _nmf_factors(A, Wt, resid, row_ptr, cols, col_ptr, csc_rows, csr_perm, tau, lam_A, lam_W,
                 rng, do_A, do_W, alpha=0.0):
    """Columns of ``A`` then rows of ``W`` (stored as ``Wt``); one numba call per sweep.

    ``resid`` is in row-major order; the ``W`` half-sweep works on a column-major copy,
    written and read back in row-major order (``reorder``; ``csr_perm[e]`` is the column-major
    position of entry ``e``). Returns 0, or the 1-based index of the first half-sweep (1:
    ``A``, 2: ``W``) after which its factor held a non-finite value (the sweep stops there).
    """
    if do_A:
        factor_half_sweep(A, Wt, row_ptr, cols, resid, tau, lam_A, rng, alpha)
        if not all_finite(A):
            return 1
    if do_W:
        scratch = np.empty(resid.size)
        reorder(resid, csr_perm, scratch, True)
        factor_half_sweep(Wt, A, col_ptr, csc_rows, scratch, tau, lam_W, rng, alpha)
        reorder(scratch, csr_perm, resid, False)
        if not all_finite(Wt):
            return 2
    return 0


@numba.njit(cache=True)
def _nmtf_factors(F, S, G, resid, rows, cols, row_ptr, col_ptr, csc_rows, csr_perm, tau, lam_F,
                  lam_S, lam_G, rng, do_F, do_S, do_G):
    """Columns of ``F``, entries of ``S``, columns of ``G``; one numba call per sweep.

    Returns 0, or 1 / 2 / 3 when ``F`` / ``S`` / ``G`` held a non-finite value after its
    update (the sweep stops there). ``G`` is updated on a column-major copy of the residual, as
    ``W`` in :func:`_nmf_factors`.
    """
    if do_F:
        partner = G @ np.ascontiguousarray(S.T)  # N x K: coefficient of F[i, k] in x_ij
        factor_half_sweep(F, partner, row_ptr, cols, resid, tau, lam_F, rng)
        if not all_finite(F):
            return 1
    if do_S:
        _core_sweep(F, S, G, rows, cols, resid, tau, lam_S, rng)
        if not all_finite(S):
            return 2
    if do_G:
        partner = F @ S  # D x L: coefficient of G[j, l] in x_ij
        scratch = np.empty(resid.size)
        reorder(resid, csr_perm, scratch, True)
        factor_half_sweep(G, partner, col_ptr, csc_rows, scratch, tau, lam_G, rng)
        reorder(scratch, csr_perm, resid, False)
        if not all_finite(G):
            return 3
    return 0


# ----------------------------------------------------------------------------- states


@dataclass
class NMFState:
    """Current values of a Gibbs/ICM chain for ``X ~ A W``.

    ``Wt`` is ``W`` transposed (N x R, C-contiguous); ``lambda_`` is None without ARD.
    ``resid`` (``x - A W`` on the observed entries, CSR order) and ``sse`` (its squared norm)
    are kept current by the sweeps, or recomputed on demand after a Gram-path half-sweep.
    """

    A: np.ndarray
    Wt: np.ndarray
    tau: float
    lambda_: np.ndarray | None
    obs: ObservedEntries = field(repr=False)
    _resid: np.ndarray | None = field(default=None, repr=False)
    _sse: float | None = field(default=None, repr=False)

    @property
    def W(self):
        """The R x N weight matrix."""
        return self.Wt.T

    @property
    def resid(self):
        """``x - A W`` on the observed entries (CSR order)."""
        if self._resid is None:
            self._resid = nmf_residual(self.A, self.W, self.obs)
        return self._resid

    @property
    def sse(self):
        """Squared error ``sum((x - A W)^2)`` over the observed entries."""
        if self._sse is None:
            r = self.resid
            self._sse = float(r @ r)
        return self._sse

    def _gram_updated(self, sse_minus_sum_sq):
        """Record a Gram-path half-sweep: the residual is stale, the squared error known."""
        self._resid = None
        sse = self.obs.sum_sq + sse_minus_sum_sq
        # below this the subtraction has lost too many digits: recompute from the residual
        self._sse = sse if sse > 1e-8 * self.obs.sum_sq else None

    def _residual_updated(self):
        self._sse = None

    def train_mse(self):
        """Mean squared residual over the observed entries."""
        return self.sse / self.obs.n_observed


@dataclass
class NMTFState:
    """Current values of a Gibbs/ICM chain for ``X ~ F S G^T`` (resid in CSR order)."""

    F: np.ndarray
    S: np.ndarray
    G: np.ndarray
    tau: float
    lambda_F: np.ndarray | None
    lambda_G: np.ndarray | None
    resid: np.ndarray

    @property
    def sse(self):
        """Squared error ``sum((x - F S G^T)^2)`` over the observed entries."""
        return float(self.resid @ self.resid)

    def train_mse(self):
        """Mean squared residual over the observed entries."""
        return self.sse / self.resid.size


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def nmf_residual(A, W, obs):
    """``x - A W`` on the observed entries (CSR order)."""
    out = np.empty(obs.n_observed)
    _residual(_f64(A), _f64(np.asarray(W).T), obs.row_ptr, obs.cols, obs.values, out)
    return out


def nmtf_residual(F, S, G, obs):
    """``x - F S G^T`` on the observed entries (CSR order)."""
    return nmf_residual(_f64(F) @ _f64(S), _f64(G).T, obs)


def nmf_state(A, W, tau, lambda_, obs):
    """Start an :class:`NMFState` (copies the arrays and computes the residual)."""
    A = _f64(A).copy()
    Wt = _f64(np.asarray(W).T).copy()
    lam = None if lambda_ is None else _f64(lambda_).copy()
    return NMFState(A=A, Wt=Wt, tau=float(tau), lambda_=lam, obs=obs)


def nmtf_state(F, S, G, tau, lambda_F, lambda_G, obs):
    """Start an :class:`NMTFState` (copies the arrays and computes the residual)."""
    F, S, G = _f64(F).copy(), _f64(S).copy(), _f64(G).copy()
    lF = None if lambda_F is None else _f64(lambda_F).copy()
    lG = None if lambda_G is None else _f64(lambda_G).copy()
    return NMTFState(F=F, S=S, G=G, tau=float(tau), lambda_F=lF, lambda_G=lG,
                     resid=nmtf_residual(F, S, G, obs))


def _gamma(shape, rate, rng):
    """Draw from Gamma(shape, rate), element-wise."""
    return rng.gamma(shape, 1.0 / rate)


_CAUSES = ("likely causes: data of extreme magnitude (largest |x| observed: {xmax:.3g}; "
           "rescale X), or hyperparameters far from the data's scale (prior rates, ARD "
           "alpha0/beta0, alpha_tau/beta_tau), or a start whose products overflow")


def _nonfinite(what, obs, detail=""):
    """The error a sweep raises when ``what`` is no longer finite."""
    xmax = float(np.abs(obs.values).max()) if obs.n_observed else 0.0
    return FloatingPointError(
        f"Gibbs sweep: {what} is not finite{detail}; " + _CAUSES.format(xmax=xmax)
    )


def _check_positive_finite(name, value, obs):
    """Raise :func:`_nonfinite` unless every entry of ``value`` is finite and > 0."""
    if isinstance(value, np.ndarray):
        ok = value.size == 0 or (0.0 < float(value.min()) and float(value.max()) < math.inf)
    else:
        ok = 0.0 < float(value) < math.inf  # NaN fails
    if not ok:
        raise _nonfinite(f"{name} (must be finite and > 0, got {fmt(value)})", obs)


def _update_tau(state, obs, hyper, rng):
    sigma = hyper.sigma
    if sigma is not None:
        state.tau = 1.0 / float(sigma) ** 2
        return
    shape = hyper.alpha_tau + 0.5 * obs.n_observed
    rate = hyper.beta_tau + 0.5 * state.sse
    state.tau = float(_gamma(shape, rate, rng))
    if not (0.0 < state.tau < np.inf):
        raise _nonfinite(f"the noise precision tau = {fmt(state.tau)}", obs,
                         f" (squared error of the fit: {fmt(state.sse)})")


def _nmf_halves(state, obs, tau, lam_A, lam_W, rng, do_A, do_W, kernel, alpha=0.0):
    """Columns of ``A`` then rows of ``W``, each half by the Gram or the residual path."""
    if kernel == "auto":
        path_A, path_W = obs.half_sweep_paths(state.A.shape[1])
    else:
        path_A = path_W = kernel
    gram_A, gram_W = do_A and path_A == "gram", do_W and path_W == "gram"
    if not (gram_A or gram_W):  # one numba call for the whole sweep
        status = _nmf_factors(state.A, state.Wt, state.resid, obs.row_ptr, obs.cols,
                              obs.col_ptr, obs.csc_rows, obs.csr_perm, tau, lam_A, lam_W, rng,
                              do_A, do_W, alpha)
        state._residual_updated()
        _check_halves(status, ("A", "W"), obs, tau)
        return
    if gram_A and gram_W:  # likewise
        sse_part, status = gram_sweep(state.A, state.Wt, obs.row_patterns, obs.col_patterns,
                                      tau, lam_A, lam_W, rng, alpha)
        state._gram_updated(sse_part)
        _check_halves(status, ("A", "W"), obs, tau)
        return
    for role, gram, do in (("A", gram_A, do_A), ("W", gram_W, do_W)):
        if not do:
            continue
        if gram:
            U, V, lam, patterns = ((state.A, state.Wt.T, lam_A, obs.row_patterns) if role == "A"
                                   else (state.Wt, state.A.T, lam_W, obs.col_patterns))
            state._gram_updated(gram_half_sweep(U, V, patterns, tau, lam, rng, alpha))
            _check_halves(0 if all_finite(U) else 1, (role,), obs, tau)
        else:
            status = _nmf_factors(state.A, state.Wt, state.resid, obs.row_ptr, obs.cols,
                                  obs.col_ptr, obs.csc_rows, obs.csr_perm, tau, lam_A, lam_W,
                                  rng, role == "A", role == "W", alpha)
            state._residual_updated()
            _check_halves(status, ("A", "W"), obs, tau)


def _check_halves(status, blocks, obs, tau):
    """Raise when a numba sweep reported block ``blocks[status - 1]`` non-finite."""
    if status:
        raise _nonfinite(f"factor {blocks[status - 1]} after its half-sweep", obs,
                         f" (tau = {fmt(tau)})")


def factor_rates(state, obs, hyper, rng, update):
    """The exponential rates ``(lam_A, lam_W)``, each of shape (R,), of one sweep.

    With ARD the rates are first drawn from their Gamma conditional (Brouwer et al. 2017) when
    ``"lambda_"`` is in ``update``. Shared by :func:`nmf_sweep` and the tempered sweeps (the
    rates' conditional does not involve the likelihood: it is the same at every temperature).
    """
    D, N = obs.shape
    R = state.A.shape[1]
    ard = bool(hyper.ard)
    if ard and "lambda_" in update:
        shape = hyper.alpha0 + D + N
        rate = hyper.beta0 + state.A.sum(axis=0) + state.Wt.sum(axis=0)
        state.lambda_ = np.asarray(_gamma(shape, rate, rng), dtype=float)
    if ard:
        return _f64(state.lambda_), _f64(state.lambda_)
    return np.full(R, float(hyper.lambda_A)), np.full(R, float(hyper.lambda_W))


def nmf_sweep(state, obs, hyper, rng, *, update=NMF_BLOCKS, kernel="auto", overrelax=0.0,
              rescale=False):
    """One Gibbs sweep for the exponential-Gaussian NMF, in place.

    Order (Brouwer et al. 2017, released code): ARD rates ``lambda_`` -> columns of ``A`` ->
    rows of ``W`` -> (the rescaling move, when asked) -> ``tau``.

    Parameters
    ----------
    state : NMFState
        Modified in place (``resid`` must match ``A``, ``W``).
    obs : ObservedEntries
    hyper : bnmfzoo.models._spec.GaussianHyper
        ``ModelSpec.hyper`` of an ``exponential_gaussian`` model (``lambda_A``, ``lambda_W``,
        ``alpha_tau``, ``beta_tau``, ``sigma``, ``ard``, ``alpha0``, ``beta0``).
    rng : numpy.random.Generator
        Advanced in place.
    update : set of str
        Blocks to update, a subset of ``{"A", "W", "tau", "lambda_"}``.
    kernel : {"auto", "gram", "residual"}
        How each half-sweep computes its sums: through pattern Gram matrices or the residual
        (same draws either way); ``"auto"`` takes the cheaper one for this mask and rank.
    overrelax : float
        0 (default): each factor entry drawn afresh from its conditional (Brouwer et al.'s
        sweep). In (-1, 0): the overrelaxed updates of
        :func:`~bnmfzoo.inference.gaussian.gibbs._mixing.overrelaxed_scaled` (Adler 1981;
        Neal 1998), exact, faster mixing of the factors within a mode.
    rescale : bool
        After the factors (when both are updated), the exact rescaling move of every factor
        (:func:`~bnmfzoo.inference.gaussian.gibbs._mixing.rescale_factors`).

    Returns
    -------
    NMFState
        ``state`` itself.

    Raises
    ------
    FloatingPointError
        When a rate, ``tau`` or a factor stops being finite (checked before the factors and
        after each half-sweep and the ``tau`` update), with the likely cause: data of extreme
        magnitude or hyperparameters far from the data's scale.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> obs = observed_entries(X)
    >>> from bnmfzoo.models._spec import GaussianHyper
    >>> hyper = GaussianHyper(lambda_A=0.1, lambda_W=0.1)
    >>> st = nmf_state(np.ones((5, 2)), np.ones((2, 4)), 1.0, None, obs)
    >>> st = nmf_sweep(st, obs, hyper, np.random.default_rng(1))
    >>> bool(np.allclose(st.resid, nmf_residual(st.A, st.W, obs)))
    True
    """
    update = frozenset(update)
    ard = bool(hyper.ard)
    lam_A, lam_W = factor_rates(state, obs, hyper, rng, update)
    tau = 1.0 / float(hyper.sigma) ** 2 if hyper.sigma is not None else float(state.tau)
    if kernel not in ("auto", "gram", "residual"):
        raise ValueError(f"kernel must be 'auto', 'gram' or 'residual', got {kernel!r}")
    alpha = check_overrelax(overrelax)
    if "A" in update or "W" in update:
        if ard:
            _check_positive_finite("the ARD rates lambda_", lam_A, obs)
        else:
            _check_positive_finite("the rate lambda_A", hyper.lambda_A, obs)
            _check_positive_finite("the rate lambda_W", hyper.lambda_W, obs)
        _check_positive_finite("the noise precision tau", tau, obs)
        _nmf_halves(state, obs, tau, lam_A, lam_W, rng, "A" in update, "W" in update, kernel,
                    alpha)
    if rescale and "A" in update and "W" in update:
        sse = state.sse  # A W, hence the squared error, is unchanged by the move
        rescale_factors(state.A, state.Wt, lam_A, lam_W, rng)
        if not (all_finite(state.A) and all_finite(state.Wt)):
            raise _nonfinite("a factor after the rescaling move", obs)
        state._resid = None
        state._sse = sse
    if "tau" in update:
        _update_tau(state, obs, hyper, rng)
    return state


def nmtf_sweep(state, obs, hyper, rng, *, update=NMTF_BLOCKS):
    """One Gibbs sweep for the exponential-Gaussian tri-factorization, in place.

    Order (Brouwer et al. 2017, released code): ``lambda_F``, ``lambda_G`` (ARD) -> columns of
    ``F`` -> entries of ``S`` (row-major) -> columns of ``G`` -> ``tau``.

    Parameters
    ----------
    state : NMTFState
    obs : ObservedEntries
    hyper : bnmfzoo.models._spec.GaussianHyper
        ``ModelSpec.hyper`` of a ``tri_exponential_gaussian`` model.
    rng : numpy.random.Generator
    update : set of str
        Subset of ``{"F", "S", "G", "tau", "lambda_F", "lambda_G"}``.

    Returns
    -------
    NMTFState
        ``state`` itself.

    Raises
    ------
    FloatingPointError
        As :func:`nmf_sweep` (checked after the updates of ``F``, ``S``, ``G`` and ``tau``).
    """
    D, N = obs.shape
    K, L = state.S.shape
    update = frozenset(update)
    ard = bool(hyper.ard)
    if ard and "lambda_F" in update:
        rate = hyper.beta0 + state.F.sum(axis=0)
        state.lambda_F = np.asarray(_gamma(hyper.alpha0 + D, rate, rng), dtype=float)
    if ard and "lambda_G" in update:
        rate = hyper.beta0 + state.G.sum(axis=0)
        state.lambda_G = np.asarray(_gamma(hyper.alpha0 + N, rate, rng), dtype=float)
    if ard:
        lam_F, lam_G = _f64(state.lambda_F), _f64(state.lambda_G)
    else:
        lam_F = np.full(K, float(hyper.lambda_F))
        lam_G = np.full(L, float(hyper.lambda_G))
    tau = 1.0 / float(hyper.sigma) ** 2 if hyper.sigma is not None else float(state.tau)
    if update & {"F", "S", "G"}:
        for name, lam in (("the rates lambda_F", lam_F), ("the rates lambda_G", lam_G),
                          ("the rate lambda_S", hyper.lambda_S),
                          ("the noise precision tau", tau)):
            _check_positive_finite(name, lam, obs)
        status = _nmtf_factors(state.F, state.S, state.G, state.resid, obs.rows, obs.cols,
                               obs.row_ptr, obs.col_ptr, obs.csc_rows, obs.csr_perm, tau, lam_F,
                               float(hyper.lambda_S), lam_G, rng, "F" in update,
                               "S" in update, "G" in update)
        _check_halves(status, ("F", "S", "G"), obs, tau)
    if "tau" in update:
        _update_tau(state, obs, hyper, rng)
    return state
