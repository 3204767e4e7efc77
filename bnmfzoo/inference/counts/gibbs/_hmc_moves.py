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
slow direction of that window: the gradient of the combination of the components' log total
exposures that moves least from one state to the next (:func:`slow_exposure_direction`; the
first principal direction of the states, :func:`slow_direction`, was noise in 5,000
dimensions from 100 states). From that combination's lag-one autocorrelation at the window's
trajectory times, :func:`slow_time` estimates the quarter period that decorrelates it; after
the last window (which ends :data:`TERM_BUFFER` tuning draws before the end of tuning when
PyMC says how many there are, :func:`next_window_end`) the tuning trajectories stop at the
bulk's U-turn, and the kept draws stretch those times to the slow time when it is longer (by
at most :data:`SLOW_FACTOR_MAX`). At the end of tuning the step size becomes its average and
everything is frozen: the kept draws come from one fixed exact kernel (a mixture over the
drawn number of steps and step-size jitter).

**Rescaling** (``rescale=True``, the default): after each HMC transition each component's
scale, the direction ``A[:, k] c, W[k] / c`` along which the likelihood is constant, is drawn
from its exact conditional, a generalized inverse Gaussian given the Gamma priors (Liu &
Sabatti 2000; :func:`~bnmfzoo.inference.counts.gibbs._moves.rescale_into`), on a random stream
of its own seeded once from the chain's generator (so the generator's draws, and the numbers
of steps, stay independent of the state). On ESCC at K = 8 that ridge held the slowest
entries of ``A`` and ``W`` (ESS of the log scales 86-91 of 2,000 draws without it).

References
----------
Duane, S., Kennedy, A. D., Pendleton, B. J. & Roweth, D. (1987). Hybrid Monte Carlo.
Physics Letters B 195(2), 216-222.
Liu, J. S. & Sabatti, C. (2000). Generalised Gibbs sampler and multigrid Monte Carlo for
Bayesian computation. Biometrika 87, 353-369.
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

from bnmfzoo.inference.counts._hmc_fused import grad_fused
from bnmfzoo.inference.counts._hmc_kernels import finite as _finite
from bnmfzoo.inference.counts._hmc_kernels import (
    grad_cells,
    grad_sparse,
    kick,
    kick_drift,
    kinetic,
    momentum,
    sparse_cells,
)
from bnmfzoo.inference.counts._problem import observed_cells
from bnmfzoo.inference.counts.gibbs._hmc_mass import (
    MASS_RULES,
    conditional_shape_mass,
    diagonal_mass,
    drift,
    lowrank_mass,
    lowrank_momentum,
    lowrank_velocity,
    turned_velocity,
)
from bnmfzoo.inference.counts.gibbs._moves import rescale_into, shear_into
from bnmfzoo.inference.kernels.streams import seed_state

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
#: when the number of tuning draws is known, the last mass window is extended to end this
#: many draws before the end of tuning (as Stan's windows): the last mass comes from the
#: latest states and the step size and trajectory times are measured under it
TERM_BUFFER = 50
#: bounds of the adapted inverse mass
MASS_BOUNDS = (1e-8, 1e3)
#: the default mass of :class:`HmcAdapter` (:data:`~bnmfzoo.inference.counts.gibbs._hmc_mass.
#: MASS_RULES`)
MASS = "diag"
#: no low-rank correction of the mass (:func:`hmc_trajectory`'s ``UA, UWt, lam``)
NO_DIRS, NO_LAM = np.zeros((0, 0)), np.zeros(0)


@numba.njit(cache=True)
def _grad(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp):
    """:func:`_grad_into` with its dense buffers allocated here (for one-off calls)."""
    Nd = tWt.shape[0] if Xd.shape[0] > 0 else 0
    K = tA.shape[1]
    return _grad_into(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt,
                      want_lp, np.empty((K, Nd)), np.empty((K, Nd)), np.empty(Nd))


@numba.njit(cache=True)
def _grad_into(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt, want_lp,
               W, gW, m):
    """Gradient of ``log pi`` at ``(tA, tWt)`` into ``gA, gWt``; ``A, Wt, W, gW, m``: buffers.

    On the dense counts ``Xd`` and offsets ``Od`` (0 at missing cells) when given (non-empty,
    one fused pass over the rows: :func:`~bnmfzoo.inference.counts._hmc_fused.grad_fused`, with
    ``W, gW`` of shape ``K x N`` and ``m`` of length ``N``), else over the cells
    (:mod:`bnmfzoo.inference.counts._hmc_kernels` with ``beta = 1``). Returns ``log pi`` if
    ``want_lp`` else 0, NaN if a mean is not positive and finite (or, dense, their sum not
    finite; a zero mean makes the gradient non-finite). When ``Od`` alone is given (one row:
    the separable offsets), from the nonzero and missing cells only
    (:func:`~bnmfzoo.inference.counts._hmc_kernels.grad_sparse`).
    """
    if Xd.shape[0] > 0:
        return grad_fused(tA, tWt, Xd, Od, aA, bA, aWt, bWt, A, W, gW, m, gA, gWt, want_lp)
    if Od.shape[0] > 0:
        return grad_sparse(tA, tWt, rows, cols, offs, x, Od[0], aA, bA, aWt, bWt, A, Wt, gA,
                           gWt, want_lp)
    return grad_cells(tA, tWt, rows, cols, offs, x, aA, bA, aWt, bWt, 1.0, A, Wt, gA, gWt,
                      want_lp)


@numba.njit(cache=True)
def hmc_transition(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, imA, imWt,
                   eps, n_leap, log_u, gA, gWt):
    """One HMC transition on ``theta = (log A, log W.T)``, in place; returns ``(code, log_acc)``.

    :func:`hmc_trajectory` with a fixed number of steps (``stop_uturn=False``).
    """
    code, log_acc, _ = hmc_trajectory(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA,
                                      aWt, bWt, imA, imWt, eps, n_leap, log_u, gA, gWt, False,
                                      gA[:0], gWt[:0], NO_DIRS, NO_DIRS, NO_LAM)
    return code, log_acc


@numba.njit(cache=True)
def hmc_trajectory(tA, tWt, zA, zWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, imA, imWt,
                   eps, n_leap, log_u, gA, gWt, stop_uturn, uA, uWt, UA, UWt, lam):
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
    after ``n_leap`` steps. ``UA, UWt, lam``: the low-rank correction of the mass
    (:mod:`~bnmfzoo.inference.counts.gibbs._hmc_mass`: ``r`` directions, shapes ``(r, D K)``,
    ``(r, N K)``, ``(r,)``); ``r = 0``: the diagonal mass alone.
    """
    D, K = tA.shape
    N = tWt.shape[0]
    r = lam.shape[0]
    if not (_finite(tA) and _finite(tWt) and _finite(imA) and _finite(imWt)
            and math.isfinite(eps) and eps > 0.0 and n_leap >= 1 and _finite(UA)
            and _finite(UWt) and _finite(lam) and np.all(lam > 0.0)
            and (r == 0 or UA.shape == (r, D * K) and UWt.shape == (r, N * K))):
        return 2, -np.inf, 0
    for v in imA.ravel():
        if not v > 0.0:
            return 2, -np.inf, 0
    for v in imWt.ravel():
        if not v > 0.0:
            return 2, -np.inf, 0
    A = np.empty((D, K))
    Wt = np.empty((N, K))
    Nd = N if Xd.shape[0] > 0 else 0  # the fused dense gradient's buffers
    W, gW, m = np.empty((K, Nd)), np.empty((K, Nd)), np.empty(Nd)
    lp0 = _grad_into(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt,
                     True, W, gW, m)
    if not math.isfinite(lp0) or not (_finite(gA) and _finite(gWt)):
        return 2, -np.inf, 0
    g0A = gA.copy()
    g0Wt = gWt.copy()
    qA = tA.copy()
    qWt = tWt.copy()
    pA = zA
    pWt = zWt
    sA, sWt, vA, vWt = np.sqrt(imA), np.sqrt(imWt), np.empty((D, K)), np.empty((N, K))
    yA, yW, c = np.empty(D * K), np.empty(N * K), np.empty(r)
    lm1 = lam - 1.0
    if r:  # p = M^1/2 z; the energy from the velocity M^-1 p
        lowrank_momentum(pA, pWt, sA, sWt, UA, UWt, lam)
        k0 = lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c)
    else:
        k0 = momentum(pA, pWt, imA, imWt)
    lp = lp0
    ok = True
    steps = 0
    turned_bulk, turned_along = False, uA.size == 0
    for s in range(n_leap):
        steps = s + 1
        if r:
            kick(pA, pWt, gA, gWt, eps)
            lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c)
            drift(qA, qWt, vA, vWt, eps)
        else:
            kick_drift(qA, qWt, pA, pWt, gA, gWt, imA, imWt, eps)
        lp = _grad_into(qA, qWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA,
                        gWt, s == n_leap - 1, W, gW, m)
        if not (math.isfinite(lp) and _finite(gA) and _finite(gWt)):
            ok = False
            break
        kick(pA, pWt, gA, gWt, eps)
        if stop_uturn and s < n_leap - 1:
            if r:
                lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c)
                bulk, along = turned_velocity(qA, qWt, tA, tWt, vA, vWt, uA, uWt)
            else:
                bulk, along = _turned(qA, qWt, tA, tWt, pA, pWt, imA, imWt, uA, uWt)
            turned_bulk = turned_bulk or bulk
            turned_along = turned_along or along
        if stop_uturn and s < n_leap - 1 and turned_bulk and turned_along:
            lp = _grad_into(qA, qWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA,
                            gWt, True, W, gW, m)  # the log density at the end (same gradient)
            break
    log_acc = -np.inf
    if ok:
        k1 = (lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c) if r
              else kinetic(pA, pWt, imA, imWt))
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
#: the sparse gradient (nonzero and missing cells, :func:`~bnmfzoo.inference.counts.
#: _hmc_kernels.grad_sparse`) replaces the loop over every observed cell when the nonzero
#: plus missing cells are at most this share of the observed ones
SPARSE_SHARE = 0.9


def hmc_cells(problem, dense=None, sparse=None):
    """``(rows, cols, offsets, counts, Xd, Od)`` for :func:`hmc_transition`.

    The observed cells (contiguous), and their dense ``D x N`` counts ``Xd`` and offsets ``Od``
    (0 at missing cells) when ``dense`` (default: when most cells are observed and nonzero,
    :data:`DENSE_SHARE`), else empty ``(0, 0)`` arrays. When ``sparse`` (default: not dense,
    separable offsets and the nonzero plus missing cells at most :data:`SPARSE_SHARE` of the
    observed ones), the sparse form instead (:func:`~bnmfzoo.inference.counts.
    _hmc_kernels.sparse_cells`): the nonzero then the missing cells, ``Xd`` empty and ``Od``
    one row holding the row then the column offsets; the gradient then costs
    O((nonzeros + missing + D + N) K) and the zeros are never listed.
    """
    D, N = problem.shape
    e = problem.expo
    separable = e.kind == "separable"
    n_obs = D * N - e.rows.size if separable else e.rows.size
    if dense is None:
        dense = (n_obs >= DENSE_SHARE * D * N and problem.data.nnz >= DENSE_SHARE * n_obs
                 and D * N <= DENSE_MAX_CELLS)
    if sparse is None:
        sparse = (not dense and separable
                  and problem.data.nnz + e.rows.size <= SPARSE_SHARE * n_obs)
    if sparse:
        if dense:
            raise ValueError("hmc_cells: dense and sparse cannot both be True")
        rows, cols, offs, x, rc = sparse_cells(problem)
        return rows, cols, offs, x, np.zeros((0, 0)), np.ascontiguousarray(rc[None, :])
    rows, cols, offs, x = observed_cells(problem)
    Xd, Od = np.zeros((0, 0)), np.zeros((0, 0))
    if dense:
        Xd, Od = np.zeros((D, N)), np.zeros((D, N))
        Xd[rows, cols] = x
        Od[rows, cols] = offs
    return (np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(cols, np.int64),
            np.ascontiguousarray(offs, float), np.ascontiguousarray(x, float), Xd, Od)


def leap_cap(cells, n_factors, max_work=MAX_TRANSITION_WORK):
    """Most leapfrog steps of one transition such that it stays within ``max_work`` units.

    One gradient costs about ``(cells + D + N) * K`` units, ``cells`` the dense ``D x N`` block,
    the observed cells, or in the sparse form the nonzero and missing cells; the cap depends on
    the shapes only (never on timings), so draws stay reproducible. At least 8, at most
    :data:`MAX_LEAP`.

    Examples
    --------
    >>> rows = np.zeros(21 * 96, np.int64)
    >>> cells = (rows, rows, np.ones(rows.size), np.ones(rows.size), np.zeros((0, 0)), None)
    >>> leap_cap(cells, 4), leap_cap((rows, rows, None, None, np.zeros((3000, 1000)), None), 8)
    (1024, 12)
    """
    rows, Xd = cells[0], cells[4]
    n_cells = Xd.size if Xd.size else rows.size
    # the sparse form's offsets row has D + N entries (the cells' form has none)
    D_plus_N = sum(Xd.shape) if Xd.size else cells[5].size if cells[5] is not None else 0
    work = max(1.0, float(n_cells + D_plus_N) * n_factors)
    return int(min(MAX_LEAP, max(8, max_work // work)))


def slow_direction(theta, inv_mass, scale_dirs=None):
    """The direction of largest variance of tuning states in the metric of the mass.

    ``theta``: states (draws x entries); ``inv_mass``: the diagonal inverse mass. Returns the
    first principal direction ``u`` of ``theta / sqrt(inv_mass)`` as ``u / sqrt(inv_mass)``
    (so that its dot product with ``q - theta_0`` is the displacement along ``u`` in the
    preconditioned space), or an empty array when fewer than 3 states or non-finite ones.
    ``scale_dirs`` (directions x entries, disjoint supports), when given, are projected out
    of the states first: directions another move mixes (:func:`rescale_directions`).

    A diagonal mass leaves a correlated direction (the attribution of counts between
    overlapping signatures) much wider than the others after preconditioning; the states of
    a window spread most along it. Its U-turn time is the trajectory length that moves along
    it, where the U-turn of all entries together stops at the time of the bulk.
    """
    z = (theta - theta.mean(axis=0)) / np.sqrt(inv_mass)
    if z.shape[0] < 3 or not np.all(np.isfinite(z)):
        return np.zeros(0)
    for v in () if scale_dirs is None else scale_dirs:
        w = v / np.sqrt(inv_mass)
        z = z - np.outer(z @ w, w / (w @ w))
    u = np.linalg.svd(z, full_matrices=False)[2][0]
    return u / np.sqrt(inv_mass)


def rescale_directions(D, N, K):
    """The ``K`` rescaling directions of ``theta = (log A, log W.T)`` (flattened row-major).

    Along direction ``k`` (``+1`` on ``log A[:, k]``, ``-1`` on ``log W[k, :]``) the
    likelihood is constant: the rescaling move (:func:`~bnmfzoo.inference.counts.gibbs.
    _moves.rescale_into`) draws the position on it exactly.
    """
    v = np.zeros((K, D * K + N * K))
    for k in range(K):
        v[k, k:D * K:K] = 1.0
        v[k, D * K + k::K] = -1.0
    return v


#: the slow direction of a mass window: ``"exposures"`` (:func:`slow_exposure_direction` and
#: :func:`slow_time`) or ``"principal"`` (:func:`slow_direction`, the former rule: no stretch)
SLOW_RULE = "exposures"
#: the kept trajectory times are stretched by at most this factor (:func:`slow_time`)
SLOW_FACTOR_MAX = 8.0


def slow_exposure_direction(theta, D, N, K, with_rate=False):
    """The gradient of the slowest-mixing combination of the components' log total exposures.

    ``theta``: consecutive tuning states (draws x entries, ``(log A, log W.T)`` flattened).
    Each state's log total exposures ``e_k = log sum_d A_dk + log sum_n W_kn`` (invariant
    under the rescaling of a component) are the summaries of how counts are attributed
    between components; the combination ``a . e`` whose increments are smallest relative to
    its spread (the smallest generalized eigenvalue of ``cov(e_t+1 - e_t)`` against
    ``cov(e)``, the slowest linear feature of the window) is the direction along which the
    chain moves most slowly. Returns its gradient at the window's mean state, ``a_k A_dk /
    sum_d A_dk`` on ``log A`` and ``a_k W_kn / sum_n W_kn`` on ``log W`` (flattened as
    ``theta``): its dot product with ``q - theta_0`` is, to first order, the change of
    ``a . e``. Empty when fewer than ``K + 3`` states or non-finite ones. With ``with_rate``,
    also that eigenvalue ``lam = var(f_t+1 - f_t) / var(f)`` of ``f = a . e`` (``2 (1 - rho)``,
    ``rho`` its lag-one autocorrelation).
    """
    from scipy.linalg import eigh

    if theta.shape[0] < K + 3 or not np.all(np.isfinite(theta)):
        return (np.zeros(0), math.nan) if with_rate else np.zeros(0)
    A = np.exp(theta[:, :D * K]).reshape(-1, D, K)
    Wt = np.exp(theta[:, D * K:]).reshape(-1, N, K)
    sA, sW = A.sum(axis=1), Wt.sum(axis=1)
    e = np.log(sA) + np.log(sW)
    c0 = np.cov(e, rowvar=False).reshape(K, K)
    c1 = np.cov(np.diff(e, axis=0), rowvar=False).reshape(K, K)
    ridge = 1e-10 * max(np.trace(c0), 1e-300)
    try:
        lams, vecs = eigh(c1 + ridge * np.eye(K), c0 + ridge * np.eye(K))
        a = vecs[:, 0]
    except np.linalg.LinAlgError:
        return (np.zeros(0), math.nan) if with_rate else np.zeros(0)
    mA, mW = A.mean(axis=0), Wt.mean(axis=0)
    uA = a * mA / mA.sum(axis=0)
    uWt = a * mW / mW.sum(axis=0)
    u = np.concatenate([uA.ravel(), uWt.ravel()])
    if not np.all(np.isfinite(u)):
        u = np.zeros(0)
    return (u, float(lams[0])) if with_rate else u


def slow_time(lam, mean_time):
    """Trajectory time that decorrelates a direction with increment ratio ``lam``.

    Along a Gaussian direction of width ``sigma`` (in the metric of the mass) an HMC
    trajectory of time ``tau`` with a fresh momentum gives consecutive states the correlation
    ``rho = cos(tau / sigma)`` (Neal 2011, section 5.4.1). From the window's ``rho = 1 - lam /
    2`` at its mean trajectory time ``mean_time``, ``sigma = mean_time / arccos(rho)``, and a
    quarter period ``pi sigma / 2`` makes consecutive states uncorrelated along it. Never
    below ``mean_time`` and at most :data:`SLOW_FACTOR_MAX` times it; ``nan`` when not
    measured.

    Examples
    --------
    >>> round(slow_time(2.0, 1.0), 3), round(slow_time(2 * (1 - math.cos(0.25)), 1.0), 3)
    (1.0, 6.283)
    """
    if not (math.isfinite(lam) and math.isfinite(mean_time) and mean_time > 0.0):
        return math.nan
    rho = min(max(1.0 - lam / 2.0, -1.0), 1.0)
    angle = math.acos(rho)
    if angle <= 0.0:
        return SLOW_FACTOR_MAX * mean_time
    return mean_time * min(max(0.5 * math.pi / angle, 1.0), SLOW_FACTOR_MAX)


def next_window_end(end, n_tune=None):
    """The tuning step at which the mass window after the one ending at ``end`` ends.

    Doubling windows (``2 end + FIRST_WINDOW``); with ``n_tune`` known, a window after which
    the next would not end by ``n_tune - TERM_BUFFER`` is extended to that step (Stan's rule),
    and no window follows one ending there (``-1``).

    Examples
    --------
    >>> [next_window_end(e) for e in (50, 150)], next_window_end(50, 300), next_window_end(250, 300)
    ([150, 350], 250, -1)
    """
    nxt = 2 * end + FIRST_WINDOW
    if n_tune is None:
        return nxt
    last = int(n_tune) - TERM_BUFFER
    if 2 * nxt + FIRST_WINDOW > last:
        return last if last > end else -1
    return nxt


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
    rescale, shear : bool
        After each HMC transition (in tuning and after), the exact rescaling move of every
        component (:func:`~bnmfzoo.inference.counts.gibbs._moves.rescale_into`, default
        ``True``; the slow direction is sought apart from its directions), then the shear of
        each pair (:func:`~bnmfzoo.inference.counts.gibbs._moves.shear_into`, default ``False``).
    mass : {"diag", "exposures", "krylov", "span"}
        The diagonal mass alone, or with a low-rank correction fitted at each window's end
        (:mod:`~bnmfzoo.inference.counts.gibbs._hmc_mass`, :data:`MASS`).
    stretch : bool
        Kept trajectory times stretched to the slow combination's time (:meth:`freeze`;
        needed on ESCC at K = 8 with either mass, ``docs/results/counts_dense_2.md``).
    """

    def __init__(self, cells, prior, n_leap=None, target=0.8, max_leap=None, rescale=True,
                 mass=None, stretch=True, shear=False):
        mass = MASS if mass is None else mass
        if mass not in MASS_RULES:
            raise ValueError(f"mass must be one of {MASS_RULES}, got {mass!r}")
        self.mass = mass
        self.stretch = bool(stretch)
        self.cells, self.prior = cells, prior
        self.n_leap = None if n_leap is None else int(n_leap)
        self.target = float(target)
        self.max_leap = (leap_cap(cells, prior[0].shape[1]) if max_leap is None
                         else int(max_leap))
        self.rescale, self.shear = bool(rescale), bool(shear)
        # the rescaling move's GIG index per component: sum_d a_dk - sum_n a_kn
        self._gig_p = np.ascontiguousarray(prior[0].sum(axis=0) - prior[2].sum(axis=0))
        self.state = None

    def start(self, A, Wt, n_tune=None):
        """Fresh tuning state at ``(A, W.T)`` (a chain's start).

        ``n_tune``: the chain's number of tuning draws when known (the last mass window then
        ends :data:`TERM_BUFFER` draws before the end of tuning, :func:`next_window_end`).
        """
        imA, imWt = conditional_shape_mass(self.cells, A, Wt, self.prior[0], self.prior[2])
        self.state = {"imA": imA, "imWt": imWt, "log_eps": math.log(0.1),
                      "log_eps_bar": math.log(0.1), "n_adapt": 0, "n_tuned": 0,
                      "window_end": FIRST_WINDOW, "window": [], "acc_sum": 0.0, "n_try": 0,
                      "da_mu": math.log(1.0), "da_hbar": 0.0, "da_t": 0,
                      "times": [], "times_before": [], "leaps": None,
                      "uA": np.zeros((0, 0)), "uWt": np.zeros((0, 0)), "n_tune": n_tune,
                      "UA": np.zeros((0, A.size)), "UWt": np.zeros((0, Wt.size)),
                      "lam": np.zeros(0)}

    def freeze(self):
        """End of tuning: the averaged step size, the learned leapfrog steps; counters reset."""
        s = self.state
        if s is None:
            return
        s["log_eps"] = s["log_eps_bar"]
        times = s["times"] if len(s["times"]) >= MIN_TIMES else s["times_before"] + s["times"]
        if self.n_leap is None and times:
            stretch = s.get("slow_time", math.nan) / float(np.mean(times))
            if self.stretch and math.isfinite(stretch) and stretch > 1.0:  # the slow time
                times = [t * stretch for t in times]
            s["leaps"] = leaps_from_times(times, math.exp(s["log_eps"]), self.max_leap)
        s.update(n_adapt=0, window=[], acc_sum=0.0, n_try=0, times=[], times_before=[])

    def _end_window(self):
        s = self.state
        half = s["window"][len(s["window"]) // 2:]  # the later half of the window
        th = np.array([w[0] for w in half])
        gr = np.array([w[1] for w in half])
        v = diagonal_mass(th, gr, MASS_BOUNDS)
        DK = s["imA"].size
        s["imA"] = np.ascontiguousarray(v[:DK].reshape(s["imA"].shape))
        s["imWt"] = np.ascontiguousarray(v[DK:].reshape(s["imWt"].shape))
        D, K = s["imA"].shape
        N = s["imWt"].shape[0]
        if self.mass != "diag":  # the low-rank correction relative to the new diagonal
            U, lam = lowrank_mass(th, gr, v, self.mass, D, N, K)
            s["UA"], s["UWt"] = np.ascontiguousarray(U[:, :DK]), np.ascontiguousarray(U[:, DK:])
            s["lam"] = np.ascontiguousarray(lam)
        if SLOW_RULE == "exposures":
            u, lam = slow_exposure_direction(th, D, s["imWt"].shape[0], K, with_rate=True)
            # the quarter period of the slowest exposure combination at this window's times
            s["slow_time"] = slow_time(lam, float(np.mean(s["times"])) if s["times"]
                                       else math.nan)
        else:
            u = slow_direction(th, v, rescale_directions(D, s["imWt"].shape[0], K)
                               if self.rescale else None)
        if u.size:
            s["uA"] = np.ascontiguousarray(u[:DK].reshape(s["imA"].shape))
            s["uWt"] = np.ascontiguousarray(u[DK:].reshape(s["imWt"].shape))
        s["window"], s["n_adapt"] = [], 0
        s["window_end"] = next_window_end(s["window_end"], s.get("n_tune"))
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
        uA, uWt = s["uA"], s["uWt"]
        if s["window_end"] == -1 and SLOW_RULE == "exposures":
            # after the last mass window: the bulk's U-turn times, which the kept draws
            # stretch to the slow direction's time (:meth:`freeze`)
            uA, uWt = uA[:0], uWt[:0]
        code, log_acc, steps = hmc_trajectory(tA, tWt, zA, zWt, *self.cells, *self.prior,
                                              s["imA"], s["imWt"], eps, n_leap,
                                              math.log(rng.uniform()), gA, gWt, uturn,
                                              uA, uWt, s["UA"], s["UWt"], s["lam"])
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
        A, Wt = np.exp(tA), np.exp(tWt)
        if (self.rescale or self.shear) and s.get("gig_stream") is None:
            # the group moves draw from a stream of their own, seeded once from the generator,
            # whose draws (momenta, step sizes, numbers of steps) then do not depend on theirs
            s["gig_stream"] = seed_state(rng)
        if self.rescale and rescale_into(A, Wt, self.prior[1], self.prior[3], self._gig_p,
                                         s["gig_stream"]):
            raise FloatingPointError("GibbsPoisson(moves='hmc'): a component's scale sum is "
                                     "zero or not finite")
        if self.shear:  # A @ W unchanged: the attribution between each pair, exactly
            shear_into(A, Wt, *self.prior, s["gig_stream"])
        return A, Wt

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
