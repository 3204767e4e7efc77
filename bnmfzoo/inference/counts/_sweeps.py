"""Many latent-count Gibbs sweeps in one numba call, with two exact group moves (no PyMC).

:func:`gibbs_sweeps` runs ``n_sweeps`` sweeps of the Poisson model (Cemgil 2009) inside one
compiled kernel: split the nonzero counts (:func:`~bnmfzoo.inference.counts._core.split_into`),
``A | Z, W``, ``W | Z, A``, the rescaling move, the Gamma rate variables (ARD, per-row /
per-column rates), and the shear move. A sweep of
:func:`~bnmfzoo.inference.counts._gibbs.gibbs_sweep` pays ~100-200 us of Python overhead; here
a sweep costs ~2 us plus ~15 ns per count (~60 us on 30 x 20 with 4,379 counts), so several
sweeps per PyMC draw cost little next to ``pm.sample``'s own per-step overhead.

**Rescaling move** (a group move: Liu & Wu 1999, Liu & Sabatti 2000). The likelihood depends on
the factors only through ``A @ W``, which is invariant under ``A[:, k] -> c A[:, k]``,
``W[k, :] -> W[k, :] / c`` (``c > 0``). For the multiplicative group with its Haar measure
``dc / c``, Liu & Sabatti's generalized Gibbs step draws ``c`` from
``p(c) ∝ pi(g_c(x)) |J_c(x)| / c`` with ``|J_c| = c^(D - N)`` (D entries scaled by c, N by
1 / c); with ``A_dk ~ Gamma(a_dk, b_dk)`` and ``W_kn ~ Gamma(a_kn, b_kn)`` (rates at the
current values of any rate variables)

    p(c) ∝ c^(P_k - 1) exp(-c S_A - S_W / c),  P_k = sum_d a_dk - sum_n a_kn,
    S_A = sum_d b_dk A_dk,  S_W = sum_n b_kn W_kn,

a generalized inverse Gaussian: ``c = sqrt(S_W / S_A) x`` with ``x ~ gig(P_k, 2 sqrt(S_A
S_W))`` (``scipy.stats.geninvgauss``), drawn exactly by Hörmann & Leydold's (2014) methods
(:func:`gig_one`: the algorithm of ``bnmfzoo.inference.gaussian.priors._gig``, SciPy's
choice of method, on this wing's xoshiro256+ uniforms, as wings do not import each
other). The move leaves the posterior invariant
for every family whose likelihood is a function of ``A @ W`` (Poisson, NB, tempered) and
mixes the scale of each component in one step; as it keeps every ``A_dk W_kn``, it is also
exact given the latent counts.

**Shear move** (:func:`shear_into`): ``W[j] + t W[k]``, ``A[:, k] - t A[:, j]`` for each ordered
pair, ``t`` from its exact conditional by slice sampling: it passes mass between components
along the other non-identified directions of NMF.

Neither move changes ``A @ W``. Measured (``benchmarks/RESULTS.md``): the rescaling raises the
ESS per sweep of raw factor entries and of the scales 2-5x; the ESS of ``A @ W`` and of
normalized factor rows stays ~0.05-0.2 per sweep, limited by the data augmentation itself
(row and column sums of ``A @ W`` mix in one sweep, ``K = 1`` models too; repeating the
``A, W`` updates given ``Z``, ``n_inner``, does not help).

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Liu, J. S. & Wu, Y. N. (1999). Parameter expansion for data augmentation. JASA 94, 1264-1274.
Liu, J. S. & Sabatti, C. (2000). Generalised Gibbs sampler and multigrid Monte Carlo for
Bayesian computation. Biometrika 87, 353-369.
Hörmann, W. & Leydold, J. (2014). Generating generalized inverse Gaussian random variates.
Statistics and Computing 24, 547-557.
Neal, R. M. (2003). Slice sampling. Annals of Statistics 31, 705-767.
"""

import math
import weakref

import numba
import numpy as np

from bnmfzoo.inference.counts._core import _next_uniform, seed_state, split_into

__all__ = ["gibbs_sweeps", "group_moves", "fast_path_ok", "shear_into", "rescale_into",
           "default_sweeps_per_draw", "sweep_cost", "gig_one", "gig_sample"]

_TINY = np.finfo(float).tiny


# ----------------------------------------------------------------------------- GIG draws

@numba.njit(cache=True)
def _logq(x, p, b):
    if x <= 0.0:
        return -math.inf
    return (p - 1.0) * math.log(x) - b * (x + 1.0 / x) / 2.0


@numba.njit(cache=True)
def _mode(p, b):
    if p < 1.0:
        return b / (math.sqrt((p - 1.0) ** 2 + b * b) + 1.0 - p)
    return (math.sqrt((1.0 - p) ** 2 + b * b) - (1.0 - p)) / b


@numba.njit(cache=True)
def gig_one(p, b, state):
    """One draw of ``gig(p, b)``: density ∝ ``x^(p - 1) exp(-b (x + 1/x) / 2)``, ``b > 0``.

    Hörmann & Leydold (2014), the three methods chosen as SciPy does; ``state`` is a
    xoshiro256+ state (:func:`~bnmfzoo.inference.counts._core.seed_state`).
    """
    invert = p < 0.0
    if invert:
        p = -p
    m = _mode(p, b)
    if p >= 1.0 or b > 1.0 or b >= min(0.5, 2.0 * math.sqrt(1.0 - p) / 3.0):
        if p >= 1.0 or b > 1.0:  # ratio of uniforms with mode shift
            a2 = -2.0 * (p + 1.0) / b - m
            a1 = 2.0 * m * (p - 1.0) / b - 1.0
            p1 = a1 - a2 * a2 / 3.0
            q1 = 2.0 * a2 ** 3 / 27.0 - a2 * a1 / 3.0 + m
            phi = math.acos(-q1 * math.sqrt(-27.0 / p1 ** 3) / 2.0)
            s1 = -math.sqrt(-4.0 * p1 / 3.0)
            root1 = s1 * math.cos(phi / 3.0 + math.pi / 3.0) - a2 / 3.0
            root2 = -s1 * math.cos(phi / 3.0) - a2 / 3.0
            lm = _logq(m, p, b)
            vmin = (root1 - m) * math.exp(0.5 * (_logq(root1, p, b) - lm))
            vmax = (root2 - m) * math.exp(0.5 * (_logq(root2, p, b) - lm))
            umax = 1.0
            c = m
        else:  # ratio of uniforms without mode shift
            lm = 0.0
            umax = math.exp(0.5 * _logq(m, p, b))
            xplus = ((1.0 + p) + math.sqrt((1.0 + p) ** 2 + b * b)) / b
            vmin = 0.0
            vmax = xplus * math.exp(0.5 * _logq(xplus, p, b))
            c = 0.0
        while True:
            u = umax * (1.0 - _next_uniform(state))  # in (0, umax]
            v = vmin + (vmax - vmin) * _next_uniform(state)
            x = v / u + c
            if 2.0 * math.log(u) <= _logq(x, p, b) - lm:
                return 1.0 / x if invert else x
    # rejection from a three-piece hat (0 <= p < 1, b small)
    x0 = b / (1.0 - p)
    xs = max(x0, 2.0 / b)
    k1 = math.exp(_logq(m, p, b))
    A1 = k1 * x0
    k2 = 0.0
    A2 = 0.0
    if x0 < 2.0 / b:
        k2 = math.exp(-b)
        if p > 0.0:
            A2 = k2 * ((2.0 / b) ** p - x0 ** p) / p
        else:
            A2 = k2 * math.log(2.0 / b ** 2)
    k3 = xs ** (p - 1.0)
    A3 = 2.0 * k3 * math.exp(-xs * b / 2.0) / b
    At = A1 + A2 + A3
    while True:
        u = 1.0 - _next_uniform(state)
        v = At * _next_uniform(state)
        if v <= A1:
            x = x0 * v / A1
            h = k1
        elif v <= A1 + A2:
            if p > 0.0:
                x = (x0 ** p + (v - A1) * p / k2) ** (1.0 / p)
            else:
                x = b * math.exp((v - A1) * math.exp(b))
            h = k2 * x ** (p - 1.0)
        else:
            z = math.exp(-xs * b / 2.0) - b * (v - A1 - A2) / (2.0 * k3)
            x = -2.0 / b * math.log(z)
            h = k3 * math.exp(-x * b / 2.0)
        if x > 0.0 and math.log(u * h) <= _logq(x, p, b):
            return 1.0 / x if invert else x


@numba.njit(cache=True)
def _gig_many(p, b, state, out):
    for i in range(out.size):
        out[i] = gig_one(p, b, state)


def gig_sample(p, b, size, rng):
    """``size`` draws of ``gig(p, b)`` (for tests and checks against SciPy).

    Examples
    --------
    >>> import numpy as np
    >>> x = gig_sample(0.5, 2.0, 20000, np.random.default_rng(0))
    >>> from scipy.stats import geninvgauss
    >>> bool(abs(x.mean() - geninvgauss(0.5, 2.0).mean()) < 0.02)
    True
    """
    if not (math.isfinite(p) and math.isfinite(b) and b > 0):
        raise ValueError(f"gig_sample needs finite p and b > 0, got p={p!r}, b={b!r}")
    out = np.empty(int(size))
    _gig_many(float(p), float(b), seed_state(rng), out)
    return out


# ----------------------------------------------------------------------------- the moves

@numba.njit(cache=True)
def rescale_into(A, Wt, bA, bWt, P, state):
    """The rescaling move of every component, in place (``Wt`` = W.T); returns a code.

    0 ok; 2 when a scale sum is zero or non-finite (that component and the rest unchanged).
    """
    D, K = A.shape
    N = Wt.shape[0]
    for k in range(K):
        sa = 0.0
        for d in range(D):
            sa += bA[d, k] * A[d, k]
        sw = 0.0
        for n in range(N):
            sw += bWt[n, k] * Wt[n, k]
        if not (sa > 0.0 and sw > 0.0 and sa < np.inf and sw < np.inf):
            return 2
        c = math.sqrt(sw / sa) * gig_one(P[k], 2.0 * math.sqrt(sa * sw), state)
        for d in range(D):
            A[d, k] = max(A[d, k] * c, _TINY)
        for n in range(N):
            Wt[n, k] = max(Wt[n, k] / c, _TINY)
    return 0


@numba.njit(cache=True)
def _shear_slope(A, Wt, bA, bWt, j, k):
    """The linear coefficient of the shear's log density (from the Gamma rates)."""
    lin = 0.0
    for n in range(Wt.shape[0]):
        lin += bWt[n, j] * Wt[n, k]
    for d in range(A.shape[0]):
        lin -= bA[d, k] * A[d, j]
    return lin


@numba.njit(cache=True)
def _shear_logp(t, A, Wt, aA, aWt, lin, j, k):
    """Log density (up to a constant) of the shear ``W_j + t W_k``, ``A_k - t A_j``."""
    D = A.shape[0]
    N = Wt.shape[0]
    out = 0.0
    for n in range(N):
        if aWt[n, j] != 1.0:  # shape 1 (the default priors): no log term, and no log to pay
            out += (aWt[n, j] - 1.0) * math.log(Wt[n, j] + t * Wt[n, k])
    for d in range(D):
        if aA[d, k] != 1.0:
            out += (aA[d, k] - 1.0) * math.log(A[d, k] - t * A[d, j])
    return out - t * lin


@numba.njit(cache=True)
def shear_into(A, Wt, aA, bA, aWt, bWt, state):
    """The shear move of every ordered pair of components, in place (``Wt`` = W.T).

    For ``j != k``: ``W[j] -> W[j] + t W[k]``, ``A[:, k] -> A[:, k] - t A[:, j]`` keeps ``A @ W``
    and both factors non-negative for ``t`` in an interval around 0; an additive group with
    unit Jacobian, so ``t`` is drawn from the prior restricted to that interval (Liu &
    Sabatti 2000) by slice sampling with shrinkage from the whole interval (Neal 2003: exact,
    a few evaluations of O(D + N) each). Moves along the non-identifiable directions of NMF
    (mass passed between components) that the latent-count split explores slowly.
    """
    K = A.shape[1]
    for j in range(K):
        for k in range(K):
            if j != k:
                shear_pair_into(A, Wt, aA, bA, aWt, bWt, j, k, state)


@numba.njit(cache=True)
def shear_pair_into(A, Wt, aA, bA, aWt, bWt, j, k, state):
    """The shear move of the ordered pair ``(j, k)``, in place (see :func:`shear_into`)."""
    D = A.shape[0]
    N = Wt.shape[0]
    lo = -np.inf
    for n in range(N):
        if Wt[n, k] > 0.0:
            lo = max(lo, -Wt[n, j] / Wt[n, k])
    hi = np.inf
    for d in range(D):
        if A[d, j] > 0.0:
            hi = min(hi, A[d, k] / A[d, j])
    if not (lo < 0.0 < hi and lo > -np.inf and hi < np.inf):
        return
    lin = _shear_slope(A, Wt, bA, bWt, j, k)
    y = _shear_logp(0.0, A, Wt, aA, aWt, lin, j, k)
    y += math.log(1.0 - _next_uniform(state))
    t = 0.0
    for _ in range(200):
        t = lo + (hi - lo) * _next_uniform(state)
        if t > lo and t < hi and _shear_logp(t, A, Wt, aA, aWt, lin, j, k) > y:
            break
        if t < 0.0:
            lo = t
        else:
            hi = t
    else:
        t = 0.0
    if t != 0.0:
        for n in range(N):
            Wt[n, j] = max(Wt[n, j] + t * Wt[n, k], _TINY)
        for d in range(D):
            A[d, k] = max(A[d, k] - t * A[d, j], _TINY)


@numba.njit(cache=True)
def _exposure_into(F, s_self, c_other, miss_self, miss_other, separable, e_self, e_other,
                   e_offs, out):
    """``out[i, k] = sum_{j observed with i} o_ij F[j, k]`` (F: the other factor, rows = j)."""
    M, K = out.shape
    L = F.shape[0]
    if separable:
        for k in range(K):
            t = 0.0
            for j in range(L):
                t += c_other[j] * F[j, k]
            for i in range(M):
                out[i, k] = s_self[i] * t
        if miss_self.size:
            for e in range(miss_self.size):
                i = miss_self[e]
                j = miss_other[e]
                o = s_self[i] * c_other[j]
                for k in range(K):
                    out[i, k] -= o * F[j, k]
            for i in range(M):
                for k in range(K):
                    out[i, k] = max(out[i, k], 0.0)  # round-off of the subtraction
    else:
        out[:] = 0.0
        for e in range(e_self.size):
            i = e_self[e]
            j = e_other[e]
            for k in range(K):
                out[i, k] += e_offs[e] * F[j, k]


@numba.njit(cache=True)
def _current_rates(const, idx, lam, out):
    M, K = out.shape
    for i in range(M):
        for k in range(K):
            r = idx[i, k]
            out[i, k] = const[i, k] if r < 0 else lam[r]


@numba.njit(cache=True)
def _sweeps_kernel(rows, cols, counts, s, c, mrows, mcols, separable, erows, ecols, eoffs,
                   aA, bA_const, idxA, aWt, bWt_const, idxWt, lam, lam_a, lam_b, P,
                   upd_A, upd_W, upd_rates, rescale, shear, n_sweeps, n_inner, A, Wt,
                   state, np_seed):
    """``n_sweeps`` sweeps, in place on ``A``, ``Wt``, ``lam``; returns a code.

    0 ok, 1 degenerate mean of a nonzero count, 2 degenerate scale sum, 3 non-finite input or
    draw. ``np_seed < 0``: numba's generator is not reseeded (a continued run, see
    :func:`gibbs_sweeps`).
    """
    if np_seed >= 0:
        np.random.seed(np_seed)
    D, K = A.shape
    N = Wt.shape[0]
    for d in range(D):
        for k in range(K):
            if not (A[d, k] >= 0.0 and A[d, k] < np.inf):
                return 3
    for n in range(N):
        for k in range(K):
            if not (Wt[n, k] >= 0.0 and Wt[n, k] < np.inf):
                return 3
    for r in range(lam.size):
        if not (lam[r] > 0.0 and lam[r] < np.inf):
            return 3
    ZA = np.empty((D, K))
    ZWt = np.empty((N, K))
    EA = np.empty((D, K))
    EWt = np.empty((N, K))
    bA = np.empty((D, K))
    bWt = np.empty((N, K))
    sh = np.empty(lam.size)
    rt = np.empty(lam.size)
    for _ in range(n_sweeps):
        code = split_into(rows, cols, counts, A, Wt, state, ZA, ZWt)
        if code:
            return code
        for _inner in range(n_inner):  # Gibbs on (A, W, rates) | Z, all exact conditionals
            _current_rates(bA_const, idxA, lam, bA)
            _current_rates(bWt_const, idxWt, lam, bWt)
            if upd_A:
                _exposure_into(Wt, s, c, mrows, mcols, separable, erows, ecols, eoffs, EA)
                for d in range(D):
                    for k in range(K):
                        v = np.random.gamma(aA[d, k] + ZA[d, k], 1.0 / (bA[d, k] + EA[d, k]))
                        if not v < np.inf:
                            return 3
                        A[d, k] = max(v, _TINY)
            if upd_W:
                _exposure_into(A, c, s, mcols, mrows, separable, ecols, erows, eoffs, EWt)
                for n in range(N):
                    for k in range(K):
                        v = np.random.gamma(aWt[n, k] + ZWt[n, k],
                                            1.0 / (bWt[n, k] + EWt[n, k]))
                        if not v < np.inf:
                            return 3
                        Wt[n, k] = max(v, _TINY)
            if rescale and upd_A and upd_W:  # A_dk W_kn unchanged: exact given Z as well
                code = rescale_into(A, Wt, bA, bWt, P, state)
                if code:
                    return code
            if upd_rates and lam.size:
                sh[:] = lam_a
                rt[:] = lam_b
                for d in range(D):
                    for k in range(K):
                        r = idxA[d, k]
                        if r >= 0:
                            sh[r] += aA[d, k]
                            rt[r] += A[d, k]
                for n in range(N):
                    for k in range(K):
                        r = idxWt[n, k]
                        if r >= 0:
                            sh[r] += aWt[n, k]
                            rt[r] += Wt[n, k]
                for r in range(lam.size):
                    lam[r] = max(np.random.gamma(sh[r], 1.0 / rt[r]), _TINY)
        if shear and upd_A and upd_W and K > 1:  # changes A_dk W_kn: after Z is discarded
            _current_rates(bA_const, idxA, lam, bA)
            _current_rates(bWt_const, idxWt, lam, bWt)
            shear_into(A, Wt, aA, bA, aWt, bWt, state)
    return 0


# ----------------------------------------------------------------------------- Python side

_ARRAYS = weakref.WeakKeyDictionary()


def fast_path_ok(problem, beta=1.0):
    """Whether :func:`gibbs_sweeps` runs the compiled kernel (Poisson at ``beta = 1``)."""
    return problem.family == "poisson" and beta == 1.0


def _flat_rates(problem):
    """Offsets of the rate variables in one flat vector, and its prior ``(alpha, beta)``."""
    offsets, a, b, pos = {}, [], [], 0
    for name, (alpha, beta, shape) in problem.rates.items():
        size = int(np.prod(shape, dtype=np.int64))
        offsets[name] = pos
        a.append(np.broadcast_to(np.asarray(alpha, float).ravel(), (size,)))
        b.append(np.broadcast_to(np.asarray(beta, float).ravel(), (size,)))
        pos += size
    cat = (lambda v: np.ascontiguousarray(np.concatenate(v))) if a else (lambda v: np.zeros(0))
    return offsets, cat(a), cat(b)


def _arrays(problem):
    """The kernel's constant arrays for ``problem`` (cached per problem object)."""
    got = _ARRAYS.get(problem)
    if got is not None:
        return got
    D, N = problem.shape
    K = problem.rank
    offsets, lam_a, lam_b = _flat_rates(problem)
    out = {"offsets": offsets, "lam_a": lam_a, "lam_b": lam_b}
    for role, shape, const in (("A", (D, K), problem.bA), ("W", (K, N), problem.bW)):
        if role in problem.rate_of:
            name, idx = problem.rate_of[role]
            idx = np.broadcast_to(np.asarray(idx, np.int64), shape) + offsets[name]
            const = np.zeros(shape)
        else:
            idx = np.full(shape, -1, np.int64)
            const = np.broadcast_to(np.asarray(const, float), shape)
        if role == "W":
            idx, const = idx.T, const.T
        out["idx" + role] = np.ascontiguousarray(idx)
        out["b" + role] = np.ascontiguousarray(const, dtype=float)
    out["aA"] = np.ascontiguousarray(np.broadcast_to(problem.aA, (D, K)), dtype=float)
    out["aWt"] = np.ascontiguousarray(np.broadcast_to(problem.aW, (K, N)).T, dtype=float)
    out["P"] = out["aA"].sum(axis=0) - out["aWt"].sum(axis=0)
    e = problem.expo
    i64 = np.int64
    if e.kind == "separable":
        out["expo"] = (e.row_offset.astype(float), e.col_offset.astype(float),
                       e.rows.astype(i64), e.cols.astype(i64), True,
                       np.zeros(0, i64), np.zeros(0, i64), np.zeros(0))
    else:
        out["expo"] = (np.ones(D), np.ones(N), np.zeros(0, i64), np.zeros(0, i64), False,
                       e.rows.astype(i64), e.cols.astype(i64), e.offsets.astype(float))
    _ARRAYS[problem] = out
    return out


def _flatten(problem, arrs, rates):
    lam = np.empty(arrs["lam_a"].size)
    for name, pos in arrs["offsets"].items():
        v = np.asarray(rates[name], float).ravel()
        lam[pos:pos + v.size] = v
    return lam


def _unflatten(problem, arrs, lam, old):
    out = dict(old)
    for name, pos in arrs["offsets"].items():
        shape = problem.rates[name][2]
        size = int(np.prod(shape, dtype=np.int64))
        out[name] = lam[pos:pos + size].reshape(shape).copy()
    return out


_ERRORS = {1: "a nonzero count has a zero or non-finite mean A @ W",
           2: "a component's scale sum (rescaling move) is zero or non-finite",
           3: "non-finite factors, rates or Gamma draws"}


def gibbs_sweeps(problem, state, rng, n_sweeps=1, *, update=("A", "W", "rates"),
                 rescale=True, shear=True, n_inner=1):
    """``n_sweeps`` compiled sweeps of a Poisson ``problem``; returns the new state (a new dict).

    Parameters
    ----------
    problem : CountProblem
        ``family == "poisson"`` (others: loop over
        :func:`~bnmfzoo.inference.counts._gibbs.gibbs_sweep` and :func:`group_moves`).
    state : dict
        ``"A"`` (D x K), ``"W"`` (K x N), ``"rates"`` (name -> array).
    rng : numpy.random.Generator
        Seeds the kernel (two draws per call).
    n_sweeps : int
    update : tuple of str
        Blocks to update; the rescaling move needs both ``"A"`` and ``"W"``.
    rescale : bool
        Apply the exact rescaling move of every component after each sweep.
    shear : bool
        Apply the exact shear move (:func:`shear_into`) of every ordered pair of components
        after each sweep.
    n_inner : int
        Updates of ``A, W`` (rescaling, rates) per split of the counts: repeated exact
        conditionals given the latent counts ``Z``, cheap (no pass over the counts).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> prob = problem_from_factorization(recognize(poisson(X, 2, ard=True)))
    >>> rng = np.random.default_rng(1)
    >>> s = gibbs_sweeps(prob, initial_state(prob, rng), rng, 10)
    >>> s["A"].shape, s["W"].shape, s["rates"]["lambda_"].shape
    ((5, 2), (2, 4), (2,))
    """
    if not fast_path_ok(problem):
        raise ValueError(f"gibbs_sweeps compiles the Poisson sweep only; got family "
                         f"{problem.family!r}")
    n_sweeps = int(n_sweeps)
    if n_sweeps < 1:
        raise ValueError(f"n_sweeps must be a positive integer, got {n_sweeps}")
    arrs = _arrays(problem)
    A = np.array(state["A"], dtype=float, order="C", copy=True)
    Wt = np.array(np.asarray(state["W"], dtype=float).T, order="C", copy=True)
    lam = _flatten(problem, arrs, state["rates"])
    rows, cols, counts = problem.data.tiled
    s, c, mr, mc, separable, er, ec, eo = arrs["expo"]
    xs = seed_state(rng)
    np_seed = int(rng.integers(0, 2**31 - 1))
    # calls of ~CALL_SECONDS: back in Python (Ctrl-C, signal handlers) between them; the
    # generators carry over, so the draws do not depend on the chunking
    per_call = max(1, int(CALL_SECONDS / sweep_cost(problem)))
    done = 0
    while done < n_sweeps:
        m = min(per_call, n_sweeps - done)
        code = _sweeps_kernel(rows, cols, counts, s, c, mr, mc, separable, er, ec, eo,
                              arrs["aA"], arrs["bA"], arrs["idxA"], arrs["aWt"], arrs["bW"],
                              arrs["idxW"], lam, arrs["lam_a"], arrs["lam_b"], arrs["P"],
                              "A" in update, "W" in update, "rates" in update, bool(rescale),
                              bool(shear), m, int(n_inner), A, Wt, xs,
                              np_seed if done == 0 else -1)
        if code:
            raise FloatingPointError(f"gibbs_sweeps: {_ERRORS[code]} (degenerate factors)")
        done += m
    new = dict(state)
    new.update(A=A, W=np.ascontiguousarray(Wt.T),
               rates=_unflatten(problem, arrs, lam, state["rates"]))
    return new


#: CPU seconds a ``pm.sample`` step costs outside the sweeps (measured ~0.07 ms in PyMC's loop
#: plus ~0.05 ms in the step: point <-> state, the log-likelihood stat; 30 x 20, K = 3)
STEP_OVERHEAD = 1.2e-4
#: upper bound of the automatic number of sweeps per draw
MAX_AUTO_SWEEPS = 20
#: modelled seconds of compiled sweeps per kernel call of :func:`gibbs_sweeps` (one sweep at
#: least): Python sees Ctrl-C and signals between calls
CALL_SECONDS = 0.05


def default_sweeps_per_draw(problem):
    """Sweeps per PyMC draw so that the sweeps cost at least 4x the step's own overhead.

    A deterministic function of the problem's size (never of a timing, so a seed gives the
    same chain on every machine): the compiled Poisson sweep is modelled as 2 us + 15 ns per
    count split unit by unit + 60 ns per binomial (counts above ``BIG_COUNT``: K binomials) +
    20 ns per (D + N) K^2 (the group moves; measured on the 21 SBS96 catalogues: 0.42 ms per
    sweep at K = 3, model 0.42 ms), and ``ceil(4 STEP_OVERHEAD / cost)`` sweeps, between 1 and
    :data:`MAX_AUTO_SWEEPS`, are run per draw (at most ~20% of the CPU time outside the
    sweeps). The latent-count chain's autocorrelation time for ``A @ W`` is ~5-20 sweeps on
    the benchmarks (``benchmarks/speed/counts_ess.py``), so the extra sweeps raise the ESS per
    draw about in proportion. Other families and tempered sweeps: 1.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> prob = problem_from_factorization(recognize(poisson(np.ones((30, 20)), 3)))
    >>> default_sweeps_per_draw(prob)
    20
    """
    if not fast_path_ok(problem):
        return 1
    cost = sweep_cost(problem)
    return int(min(MAX_AUTO_SWEEPS, max(1, math.ceil(4 * STEP_OVERHEAD / cost))))


def sweep_cost(problem):
    """Modelled seconds of one compiled Poisson sweep (:func:`default_sweeps_per_draw`).

    Bounded by the data's size whatever the counts: a count above ``BIG_COUNT`` costs K
    binomials (numba's BTPE, O(1) each).
    """
    from bnmfzoo.inference.counts._core import BIG_COUNT

    D, N = problem.shape
    K = problem.rank
    x = problem.data.counts
    units = float(x[x <= BIG_COUNT].sum() + 4 * K * np.count_nonzero(x > BIG_COUNT))
    return 2e-6 + 15e-9 * units + 20e-9 * (D + N) * K * K


def group_moves(problem, state, rng, *, rescale=True, shear=True):
    """The rescaling and shear moves alone on ``state`` (any family); returns a new state dict.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> prob = problem_from_factorization(recognize(poisson(np.ones((3, 4)), 2)))
    >>> rng = np.random.default_rng(0)
    >>> s = initial_state(prob, rng)
    >>> t = group_moves(prob, s, rng)
    >>> bool(np.allclose(s["A"] @ s["W"], t["A"] @ t["W"]))
    True
    """
    from bnmfzoo.inference.counts._problem import prior_rates

    arrs = _arrays(problem)
    bA, bW = prior_rates(problem, state["rates"])
    D, N = problem.shape
    K = problem.rank
    A = np.array(state["A"], dtype=float, order="C", copy=True)
    Wt = np.array(np.asarray(state["W"], dtype=float).T, order="C", copy=True)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(Wt))):
        raise FloatingPointError("group_moves: non-finite factors")
    bA = np.ascontiguousarray(np.broadcast_to(bA, (D, K)), dtype=float)
    bWt = np.ascontiguousarray(np.broadcast_to(bW, (K, N)).T, dtype=float)
    xs = seed_state(rng)
    if shear and K > 1:
        shear_into(A, Wt, arrs["aA"], bA, arrs["aWt"], bWt, xs)
    if rescale:
        code = rescale_into(A, Wt, bA, bWt, arrs["P"], xs)
        if code:
            raise FloatingPointError(f"group_moves: {_ERRORS[code]}")
    new = dict(state)
    new.update(A=A, W=np.ascontiguousarray(Wt.T))
    return new
