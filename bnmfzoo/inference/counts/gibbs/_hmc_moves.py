"""Hamiltonian Monte Carlo on ``log A, log W`` of Poisson NMF (``GibbsPoisson(moves="hmc")``).

The target is the posterior of ``X_dn ~ Poisson(o_dn (A W)_dn)`` with Gamma(``a``, ``b``)
priors on the entries, on ``theta = log x`` (Jacobian ``x``):

``log pi = sum_x (a_x theta_x - b_x e^theta_x) + sum_cells (X log mu - mu) + const``,

``mu_dn = o_dn sum_k A_dk W_kn`` over the observed cells. The gradient is ``a - b x`` plus
``A_dk sum_n (X_dn / mu_dn - 1) o_dn W_kn`` (and the same for ``W``); the latent counts are not
split, so a gradient costs O(cells K) and needs no logarithm: the log density (one ``log`` per
cell) is evaluated at the two ends of a trajectory only.

**Why.** On dense count matrices (mutational catalogues: tens of counts per cell) the latent-
count sweep moves the attribution of counts between overlapping signatures by tiny steps
(0.003 effective draws per sweep on breast SBS96, ``docs/results/counts_core.md``), while HMC
moves all entries jointly along the gradient (Duane et al. 1987; Neal 2011).

**Kernel.** :func:`hmc_transition`: a fresh momentum ``p ~ N(0, M)`` with a diagonal mass
``M = diag(1 / inv_mass)``, ``n_leap`` leapfrog steps of size ``eps``, a Metropolis test on the
change of the Hamiltonian; a trajectory meeting a non-finite value is rejected. For any fixed
``eps``, ``n_leap`` and mass (or an ``eps`` and ``n_leap`` drawn independently of the state:
a mixture of such kernels) the transition leaves ``pi`` invariant.

**Adaptation** (:class:`HmcAdapter`, during PyMC's tuning only): the step size by dual
averaging of the acceptance rate to ``target`` (Hoffman & Gelman 2014, restarted at each new
mass), and the diagonal inverse mass from windows of states and gradients as nutpie does,
``inv_mass = sqrt(var(theta) / var(grad))`` (Seyboldt's gradient-based diagonal adaptation),
starting from ``trigamma`` of each entry's conditional Gamma shape given the expected latent
counts (the variance of ``log x`` given the split).

**Trajectory length** (unless ``n_leap`` is given): as eHMC (Wu, Stoehr & Robert 2018), each
tuning transition runs until its trajectory turns back (a U-turn, Hoffman & Gelman 2014), at
most :data:`MAX_LEAP` steps, and records the time ``steps x eps``; the kept transitions draw
their number of steps from those times (the last mass window's) divided by the frozen step
size, independently of the state. A diagonal mass leaves one correlated direction, the
attribution of counts between overlapping signatures, far wider than the rest, and the U-turn
of all entries together comes at the time of the bulk, too early for it (on the 552 x 96 ESCC
catalogue the chains then do not converge, ``docs/results/counts_dense.md``). So, once a mass
window has ended, a trajectory runs until it has turned back both as a whole and along the
first principal direction of that window's states in the metric of the mass
(:func:`slow_direction`). At the end of tuning the step size becomes its average and
everything is frozen: the kept draws come from one fixed exact kernel (a mixture over the
drawn number of steps and step-size jitter).

References
----------
Duane, S., Kennedy, A. D., Pendleton, B. J. & Roweth, D. (1987). Hybrid Monte Carlo.
Physics Letters B 195(2), 216-222.
Hoffman, M. D. & Gelman, A. (2014). The No-U-Turn sampler: adaptively setting path lengths
in Hamiltonian Monte Carlo. Journal of Machine Learning Research 15, 1593-1623.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
ch. 5. Chapman & Hall/CRC.
Wu, C., Stoehr, J. & Robert, C. P. (2018). Faster Hamiltonian Monte Carlo by learning leapfrog
scale. arXiv:1810.04449.
"""

import math

import numba
import numpy as np
from scipy.special import polygamma

from bnmfzoo.inference.counts._problem import observed_cells

__all__ = ["hmc_transition", "hmc_trajectory", "HmcAdapter", "HMC_ERRORS", "hmc_cells",
           "leaps_from_times"]

#: codes of :func:`hmc_transition` besides 0 (accepted) and 1 (rejected)
HMC_ERRORS = {2: "the state, the mass or the step size is not finite (or the start has a zero "
                 "mean or a non-finite density)"}

#: step size adaptation by dual averaging (Hoffman & Gelman 2014; Stan's constants)
DA_GAMMA, DA_T0, DA_KAPPA = 0.05, 10.0, 0.75
#: largest step size (``log``) the adaptation may propose
LOG_EPS_MAX = math.log(10.0)
#: most leapfrog steps of one learned-length transition (a draw's cost stays bounded: about
#: 0.14 s on the 552 x 96 ESCC catalogue) and, without tuning, the fixed number used
MAX_LEAP, FALLBACK_LEAP = 1024, 64
#: work units (cells x factors, see :func:`leap_cap`) of one transition at most, so that one
#: transition, the interval at which Ctrl-C is seen, stays under about a second: one unit costs
#: 0.5-2.7 ns on the 2-core machine of the measurements (ESCC 552 x 96 and 3000 x 1000, K = 8)
MAX_TRANSITION_WORK = 3e8
#: U-turn times of the last mass window used when it has at least this many, else the window
#: before it too
MIN_TIMES = 20
#: tuning steps at which the mass windows end (then doubling): 50, 150, 350, 750, ...
FIRST_WINDOW = 50
#: bounds of the adapted inverse mass
MASS_BOUNDS = (1e-8, 1e3)


@numba.njit(cache=True)
def _grad_into(tA, tWt, rows, cols, offs, x, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp):
    """Gradient of ``log pi`` at ``(tA, tWt)`` into ``gA, gWt``.

    ``A, Wt``: work buffers. Returns ``log pi`` if ``want_lp`` else 0, NaN if a mean is not
    positive and finite.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    lp = 0.0
    for d in range(D):
        for k in range(K):
            A[d, k] = math.exp(tA[d, k])
            gA[d, k] = aA[d, k] - bA[d, k] * A[d, k]
            if want_lp:
                lp += aA[d, k] * tA[d, k] - bA[d, k] * A[d, k]
    for n in range(N):
        for k in range(K):
            Wt[n, k] = math.exp(tWt[n, k])
            gWt[n, k] = aWt[n, k] - bWt[n, k] * Wt[n, k]
            if want_lp:
                lp += aWt[n, k] * tWt[n, k] - bWt[n, k] * Wt[n, k]
    for c in range(rows.shape[0]):
        d = rows[c]
        n = cols[c]
        m = 0.0
        for k in range(K):
            m += A[d, k] * Wt[n, k]
        m *= offs[c]
        if not (m > 0.0 and m < np.inf):
            return np.nan
        if want_lp:
            if x[c] > 0.0:
                lp += x[c] * math.log(m) - m
            else:
                lp -= m
        r = (x[c] / m - 1.0) * offs[c]
        for k in range(K):
            gA[d, k] += r * Wt[n, k] * A[d, k]
            gWt[n, k] += r * A[d, k] * Wt[n, k]
    return lp if want_lp else 0.0


@numba.njit(cache=True)
def _grad_dense_into(tA, tWt, Xd, Od, aA, bA, aWt, bWt, gA, gWt, want_lp):
    """:func:`_grad_into` on dense ``D x N`` counts ``Xd`` and offsets ``Od``.

    ``Od`` is 0 at missing cells (whose counts are 0): ``mu = Od * (A @ W)``, and the
    likelihood's gradient term ``X / mu - 1`` times ``o`` is ``Xd / (A @ W) - Od``: three
    matrix products (BLAS).
    """
    A = np.exp(tA)
    Wt = np.exp(tWt)
    M = A @ np.ascontiguousarray(Wt.T)
    lp = 0.0
    if want_lp:
        lp = np.sum(aA * tA - bA * A) + np.sum(aWt * tWt - bWt * Wt)
    D, N = M.shape
    R = np.empty((D, N))
    for d in range(D):
        for n in range(N):
            m = M[d, n]
            if not (m > 0.0 and m < np.inf):
                return np.nan
            R[d, n] = Xd[d, n] / m - Od[d, n]
            if want_lp:
                if Xd[d, n] > 0.0:
                    lp += Xd[d, n] * math.log(Od[d, n] * m) - Od[d, n] * m
                else:
                    lp -= Od[d, n] * m
    gA[:, :] = aA - bA * A + (R @ Wt) * A
    gWt[:, :] = aWt - bWt * Wt + (np.ascontiguousarray(R.T) @ A) * Wt
    return lp if want_lp else 0.0


@numba.njit(cache=True)
def _grad(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp):
    """The dense gradient when ``Xd`` is given (non-empty), else the cells' one."""
    if Xd.shape[0] > 0:
        return _grad_dense_into(tA, tWt, Xd, Od, aA, bA, aWt, bWt, gA, gWt, want_lp)
    return _grad_into(tA, tWt, rows, cols, offs, x, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp)


@numba.njit(cache=True)
def _finite(a):
    for v in a.ravel():
        if not math.isfinite(v):
            return False
    return True


@numba.njit(cache=True)
def hmc_transition(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, imA, imWt,
                   eps, n_leap, log_u, gA, gWt):
    """One HMC transition on ``theta = (log A, log W.T)``, in place; returns ``(code, log_acc)``.

    :func:`hmc_trajectory` with a fixed number of steps (``stop_uturn=False``).
    """
    code, log_acc, _ = hmc_trajectory(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA,
                                      aWt, bWt, imA, imWt, eps, n_leap, log_u, gA, gWt, False,
                                      gA[:0], gWt[:0])
    return code, log_acc


@numba.njit(cache=True)
def hmc_trajectory(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, imA, imWt,
                   eps, n_leap, log_u, gA, gWt, stop_uturn, uA, uWt):
    """One HMC transition, in place; returns ``(code, log_acc, steps)``.

    ``rows, cols, offs, x``: the observed cells; ``Xd, Od``: the same as dense ``D x N``
    counts and offsets (0 at missing cells), used instead when not empty (:func:`hmc_cells`).
    ``zA, zWt``: standard normal draws (overwritten; the momentum is ``z / sqrt(inv_mass)``);
    ``imA, imWt``: the diagonal inverse mass (positive); ``log_u``: ``log`` of a uniform draw.
    ``gA, gWt`` receive the gradient of ``log pi`` at the state the transition ends in. Codes:
    0 accepted, 1 rejected (``theta`` unchanged; ``log_acc`` ``-inf`` when the trajectory met
    a non-finite value), 2 non-finite input or start (unchanged, :data:`HMC_ERRORS`).
    ``steps``: the leapfrog steps run. With ``stop_uturn`` (tuning only: the length then
    depends on the state, so the transition is not reversible) the trajectory stops at the
    first step by which ``(theta - theta_0) . M^-1 p < 0`` has held (it turned back towards
    its start; Hoffman & Gelman 2014) and, when ``uA, uWt`` are not empty, the motion along
    that one direction has turned back, ``(u . (theta - theta_0)) (u . M^-1 p) < 0``; or
    after ``n_leap`` steps.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    if not (_finite(tA) and _finite(tWt) and _finite(imA) and _finite(imWt)
            and math.isfinite(eps) and eps > 0.0 and n_leap >= 1):
        return 2, -np.inf, 0
    for v in imA.ravel():
        if not v > 0.0:
            return 2, -np.inf, 0
    for v in imWt.ravel():
        if not v > 0.0:
            return 2, -np.inf, 0
    A = np.empty((D, K))
    Wt = np.empty((N, K))
    lp0 = _grad(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt, True)
    if not math.isfinite(lp0) or not (_finite(gA) and _finite(gWt)):
        return 2, -np.inf, 0
    g0A = gA.copy()
    g0Wt = gWt.copy()
    qA = tA.copy()
    qWt = tWt.copy()
    pA = zA
    pWt = zWt
    k0 = 0.0
    for d in range(D):
        for k in range(K):
            pA[d, k] = zA[d, k] / math.sqrt(imA[d, k])
            k0 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]
    for n in range(N):
        for k in range(K):
            pWt[n, k] = zWt[n, k] / math.sqrt(imWt[n, k])
            k0 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]
    lp = lp0
    ok = True
    steps = 0
    turned_bulk, turned_along = False, uA.size == 0
    for s in range(n_leap):
        steps = s + 1
        for d in range(D):
            for k in range(K):
                pA[d, k] += 0.5 * eps * gA[d, k]
                qA[d, k] += eps * imA[d, k] * pA[d, k]
        for n in range(N):
            for k in range(K):
                pWt[n, k] += 0.5 * eps * gWt[n, k]
                qWt[n, k] += eps * imWt[n, k] * pWt[n, k]
        lp = _grad(qA, qWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt,
                   s == n_leap - 1)
        if not (math.isfinite(lp) and _finite(gA) and _finite(gWt)):
            ok = False
            break
        for d in range(D):
            for k in range(K):
                pA[d, k] += 0.5 * eps * gA[d, k]
        for n in range(N):
            for k in range(K):
                pWt[n, k] += 0.5 * eps * gWt[n, k]
        if stop_uturn and s < n_leap - 1:
            bulk, along = _turned(qA, qWt, tA, tWt, pA, pWt, imA, imWt, uA, uWt)
            turned_bulk = turned_bulk or bulk
            turned_along = turned_along or along
        if stop_uturn and s < n_leap - 1 and turned_bulk and turned_along:
            lp = _grad(qA, qWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt,
                       True)  # the log density at the end (the gradient is unchanged)
            break
    log_acc = -np.inf
    if ok:
        k1 = 0.0
        for d in range(D):
            for k in range(K):
                k1 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]
        for n in range(N):
            for k in range(K):
                k1 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]
        log_acc = (lp - k1) - (lp0 - k0)
        if not math.isfinite(log_acc):
            log_acc = -np.inf
    if log_acc > -np.inf and log_u < log_acc:
        tA[:, :] = qA
        tWt[:, :] = qWt
        return 0, min(log_acc, 0.0), steps
    gA[:, :] = g0A
    gWt[:, :] = g0Wt
    return 1, min(log_acc, 0.0), steps


@numba.njit(cache=True)
def _turned(qA, qWt, tA, tWt, pA, pWt, imA, imWt, uA, uWt):
    """``(turned, turned_along)``: whether the trajectory heads back towards its start.

    ``turned``: ``(q - theta) . M^-1 p < 0``; ``turned_along``: the same along the direction
    ``u`` (``False`` when ``uA, uWt`` are empty).
    """
    dot, pos, vel = 0.0, 0.0, 0.0
    along = uA.size > 0
    for d in range(qA.shape[0]):
        for k in range(qA.shape[1]):
            v = imA[d, k] * pA[d, k]
            dot += (qA[d, k] - tA[d, k]) * v
            if along:
                pos += uA[d, k] * (qA[d, k] - tA[d, k])
                vel += uA[d, k] * v
    for n in range(qWt.shape[0]):
        for k in range(qWt.shape[1]):
            v = imWt[n, k] * pWt[n, k]
            dot += (qWt[n, k] - tWt[n, k]) * v
            if along:
                pos += uWt[n, k] * (qWt[n, k] - tWt[n, k])
                vel += uWt[n, k] * v
    return dot < 0.0, along and pos * vel < 0.0


#: the kernel uses dense ``D x N`` arrays (matrix products) when at least this share of the
#: cells is observed and nonzero counts are this share of them, and ``D N`` is at most
#: ``DENSE_MAX_CELLS``: 2.3-4.3x faster per gradient than the loop over cells on the SBS96
#: catalogues (``docs/results/counts_dense.md``)
DENSE_SHARE, DENSE_MAX_CELLS = 0.5, 20_000_000


def hmc_cells(problem, dense=None):
    """``(rows, cols, offsets, counts, Xd, Od)`` for :func:`hmc_transition`.

    The observed cells (contiguous), and their dense ``D x N`` counts ``Xd`` and offsets ``Od``
    (0 at missing cells) when ``dense`` (default: when most cells are observed and nonzero,
    :data:`DENSE_SHARE`), else empty ``(0, 0)`` arrays.
    """
    rows, cols, offs, x = observed_cells(problem)
    D, N = problem.shape
    if dense is None:
        dense = (rows.size >= DENSE_SHARE * D * N and np.count_nonzero(x) >= DENSE_SHARE *
                 rows.size and D * N <= DENSE_MAX_CELLS)
    Xd, Od = np.zeros((0, 0)), np.zeros((0, 0))
    if dense:
        Xd, Od = np.zeros((D, N)), np.zeros((D, N))
        Xd[rows, cols] = x
        Od[rows, cols] = offs
    return (np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(cols, np.int64),
            np.ascontiguousarray(offs, float), np.ascontiguousarray(x, float), Xd, Od)


def leap_cap(cells, n_factors, max_work=MAX_TRANSITION_WORK):
    """Most leapfrog steps of one transition such that it stays within ``max_work`` units.

    One gradient costs about ``(cells + D + N) * K`` units, ``cells`` the dense ``D x N`` block
    or the observed cells; the cap depends on the shapes only (never on timings), so draws
    stay reproducible. At least 8, at most :data:`MAX_LEAP`.

    Examples
    --------
    >>> rows = np.zeros(21 * 96, np.int64)
    >>> cells = (rows, rows, np.ones(rows.size), np.ones(rows.size), np.zeros((0, 0)), None)
    >>> leap_cap(cells, 4), leap_cap((rows, rows, None, None, np.zeros((3000, 1000)), None), 8)
    (1024, 12)
    """
    rows, Xd = cells[0], cells[4]
    n_cells = Xd.size if Xd.size else rows.size
    D_plus_N = sum(Xd.shape) if Xd.size else 0
    work = max(1.0, float(n_cells + D_plus_N) * n_factors)
    return int(min(MAX_LEAP, max(8, max_work // work)))


def conditional_shape_mass(cells, A, Wt, aA, aWt):
    """``trigamma`` of each entry's Gamma shape given the expected latent counts at ``(A, W)``.

    The shape is ``a + A_dk sum_n o W_kn X_dn / mu_dn`` (and the same for ``W``).
    """
    rows, cols, offs, x = cells[:4]
    mu = offs * np.einsum("ck,ck->c", A[rows], Wt[cols])
    r = np.where(x > 0, x / np.maximum(mu, 1e-300), 0.0)
    sA = np.zeros_like(A)
    sWt = np.zeros_like(Wt)
    np.add.at(sA, rows, r[:, None] * Wt[cols])
    np.add.at(sWt, cols, r[:, None] * A[rows])
    return (np.ascontiguousarray(polygamma(1, aA + A * sA)),
            np.ascontiguousarray(polygamma(1, aWt + Wt * sWt)))


def slow_direction(theta, inv_mass):
    """The direction of largest variance of tuning states in the metric of the mass.

    ``theta``: states (draws x entries); ``inv_mass``: the diagonal inverse mass. Returns the
    first principal direction ``u`` of ``theta / sqrt(inv_mass)`` as ``u / sqrt(inv_mass)``
    (so that its dot product with ``q - theta_0`` is the displacement along ``u`` in the
    preconditioned space), or an empty array when fewer than 3 states or non-finite ones.

    A diagonal mass leaves a correlated direction (the attribution of counts between
    overlapping signatures) much wider than the others after preconditioning; the states of
    a window spread most along it. Its U-turn time is the trajectory length that moves along
    it, where the U-turn of all entries together stops at the time of the bulk.
    """
    z = (theta - theta.mean(axis=0)) / np.sqrt(inv_mass)
    if z.shape[0] < 3 or not np.all(np.isfinite(z)):
        return np.zeros(0)
    u = np.linalg.svd(z, full_matrices=False)[2][0]
    return u / np.sqrt(inv_mass)


def leaps_from_times(times, eps, max_leap):
    """Leapfrog steps ``ceil(t / eps)`` of trajectory times ``t`` measured during tuning.

    Clipped to ``[1, max_leap]``: the empirical distribution the kept transitions draw from.
    """
    t = np.asarray(times, dtype=float)
    return np.clip(np.ceil(t / eps), 1, max_leap).astype(np.int64)


class HmcAdapter:
    """One chain's HMC transitions with their tuning (module docstring).

    Parameters
    ----------
    cells : tuple
        :func:`hmc_cells` of the problem.
    prior : tuple
        ``(aA, bA, aWt, bWt)``: the Gamma shapes and rates of the entries (D x K and N x K).
    n_leap : int or None
        Leapfrog steps per transition; ``None`` (default): learned during tuning
        (:data:`MAX_LEAP` caps it).
    target : float
        Acceptance rate the step size is tuned to.
    max_leap : int, optional
        Most leapfrog steps of one transition when ``n_leap`` is learned (default
        :func:`leap_cap`: :data:`MAX_LEAP`, fewer on matrices so large that a transition would
        take more than about a second, the interval at which Ctrl-C is seen).
    """

    def __init__(self, cells, prior, n_leap=None, target=0.8, max_leap=None):
        self.cells, self.prior = cells, prior
        self.n_leap = None if n_leap is None else int(n_leap)
        self.target = float(target)
        self.max_leap = (leap_cap(cells, prior[0].shape[1]) if max_leap is None
                         else int(max_leap))
        self.state = None

    def start(self, A, Wt):
        """Fresh tuning state at ``(A, W.T)`` (a chain's start)."""
        imA, imWt = conditional_shape_mass(self.cells, A, Wt, self.prior[0], self.prior[2])
        self.state = {"imA": imA, "imWt": imWt, "log_eps": math.log(0.1),
                      "log_eps_bar": math.log(0.1), "n_adapt": 0, "n_tuned": 0,
                      "window_end": FIRST_WINDOW, "window": [], "acc_sum": 0.0, "n_try": 0,
                      "da_mu": math.log(1.0), "da_hbar": 0.0, "da_t": 0,
                      "times": [], "times_before": [], "leaps": None,
                      "uA": np.zeros((0, 0)), "uWt": np.zeros((0, 0))}

    def freeze(self):
        """End of tuning: the averaged step size, the learned leapfrog steps; counters reset."""
        s = self.state
        if s is None:
            return
        s["log_eps"] = s["log_eps_bar"]
        times = s["times"] if len(s["times"]) >= MIN_TIMES else s["times_before"] + s["times"]
        if self.n_leap is None and times:
            s["leaps"] = leaps_from_times(times, math.exp(s["log_eps"]), self.max_leap)
        s.update(n_adapt=0, window=[], acc_sum=0.0, n_try=0, times=[], times_before=[])

    def _end_window(self):
        s = self.state
        half = s["window"][len(s["window"]) // 2:]  # the later half of the window
        th = np.array([w[0] for w in half])
        gr = np.array([w[1] for w in half])
        v = np.sqrt(np.var(th, axis=0) / np.maximum(np.var(gr, axis=0), 1e-300))
        v = np.clip(np.nan_to_num(v, nan=1.0), *MASS_BOUNDS)
        DK = s["imA"].size
        s["imA"] = np.ascontiguousarray(v[:DK].reshape(s["imA"].shape))
        s["imWt"] = np.ascontiguousarray(v[DK:].reshape(s["imWt"].shape))
        u = slow_direction(th, v)
        if u.size:
            s["uA"] = np.ascontiguousarray(u[:DK].reshape(s["imA"].shape))
            s["uWt"] = np.ascontiguousarray(u[DK:].reshape(s["imWt"].shape))
        s["window"], s["n_adapt"] = [], 0
        s["window_end"] = 2 * s["window_end"] + FIRST_WINDOW
        # a new metric: the step size's dual averaging restarts (as Stan's does) and the
        # trajectory times measured under the old mass are kept only as a fallback
        s.update(da_mu=math.log(10.0) + s["log_eps_bar"], da_hbar=0.0, da_t=0,
                 times_before=s["times"], times=[])

    def _leaps(self, rng, tune):
        """Leapfrog steps of this transition and whether it stops at a U-turn (tuning)."""
        if self.n_leap is not None:
            return self.n_leap, False
        leaps = self.state["leaps"]
        if not tune and leaps is not None:
            # drawn independently of the state: a mixture of reversible kernels
            return int(leaps[rng.integers(len(leaps))]), False
        if not tune:  # no tuning ran: the former fixed default
            return min(FALLBACK_LEAP, self.max_leap), False
        return self.max_leap, True

    def transition(self, A, Wt, rng, tune):
        """One transition from ``(A, W.T)``; returns ``(A, W.T)`` (new arrays)."""
        s = self.state
        tA, tWt = np.log(A), np.log(Wt)
        zA, zWt = rng.standard_normal(tA.shape), rng.standard_normal(tWt.shape)
        eps = math.exp(s["log_eps"]) * rng.uniform(0.8, 1.2)
        n_leap, uturn = self._leaps(rng, tune)
        gA, gWt = np.empty_like(tA), np.empty_like(tWt)
        code, log_acc, steps = hmc_trajectory(tA, tWt, zA, zWt, *self.cells, *self.prior,
                                              s["imA"], s["imWt"], eps, n_leap,
                                              math.log(rng.uniform()), gA, gWt, uturn,
                                              s["uA"], s["uWt"])
        if code == 2:
            raise FloatingPointError(f"GibbsPoisson(moves='hmc'): {HMC_ERRORS[2]}")
        acc = math.exp(log_acc)
        s["n_try"] += 1
        s["acc_sum"] += acc
        if tune:
            s["n_adapt"] += 1
            s["n_tuned"] += 1
            self._dual_average(acc)
            if uturn and log_acc > -np.inf:  # a divergent trajectory measures nothing
                s["times"].append(steps * eps)
            s["window"].append((np.concatenate([tA.ravel(), tWt.ravel()]),
                                np.concatenate([gA.ravel(), gWt.ravel()])))
            if s["n_tuned"] == s["window_end"]:
                self._end_window()
        return np.exp(tA), np.exp(tWt)

    def _dual_average(self, acc):
        """Dual averaging of ``log eps`` towards the target acceptance.

        Nesterov's dual averaging as in Hoffman & Gelman (2014), algorithm 5, with Stan's
        constants :data:`DA_GAMMA`, :data:`DA_T0`, :data:`DA_KAPPA`.
        """
        s = self.state
        s["da_t"] += 1
        t = s["da_t"]
        eta = 1.0 / (t + DA_T0)
        s["da_hbar"] = (1.0 - eta) * s["da_hbar"] + eta * (self.target - acc)
        s["log_eps"] = min(s["da_mu"] - math.sqrt(t) / DA_GAMMA * s["da_hbar"], LOG_EPS_MAX)
        w = t ** -DA_KAPPA
        s["log_eps_bar"] = w * s["log_eps"] + (1.0 - w) * s["log_eps_bar"]

    def acceptance(self):
        """Mean acceptance probability since the start or the last :meth:`freeze`."""
        s = self.state
        return s["acc_sum"] / s["n_try"] if s and s["n_try"] else math.nan
