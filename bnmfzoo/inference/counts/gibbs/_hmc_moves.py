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
``eps``, ``n_leap`` and mass (or an ``eps`` drawn independently of the state) the transition
leaves ``pi`` invariant.

**Adaptation** (:class:`HmcAdapter`, during PyMC's tuning only): the step size by a constant-
gain stochastic approximation of the acceptance rate to ``target`` with a running average, and
the diagonal inverse mass from windows of states and gradients as nutpie does,
``inv_mass = sqrt(var(theta) / var(grad))`` (Seyboldt's gradient-based diagonal adaptation),
starting from ``trigamma`` of each entry's conditional Gamma shape given the expected latent
counts (the variance of ``log x`` given the split). At the end of tuning the step size becomes
the running average and everything is frozen: the kept draws come from one fixed exact kernel.

References
----------
Duane, S., Kennedy, A. D., Pendleton, B. J. & Roweth, D. (1987). Hybrid Monte Carlo.
Physics Letters B 195(2), 216-222.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
ch. 5. Chapman & Hall/CRC.
"""

import math

import numba
import numpy as np
from scipy.special import polygamma

from bnmfzoo.inference.counts._problem import observed_cells

__all__ = ["hmc_transition", "HmcAdapter", "HMC_ERRORS", "hmc_cells"]

#: codes of :func:`hmc_transition` besides 0 (accepted) and 1 (rejected)
HMC_ERRORS = {2: "the state, the mass or the step size is not finite (or the start has a zero "
                 "mean or a non-finite density)"}

#: step size adaptation: gain per transition, weight of the running average
ADAPT_GAIN, ADAPT_AVERAGE = 0.1, 0.02
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

    ``rows, cols, offs, x``: the observed cells; ``Xd, Od``: the same as dense ``D x N``
    counts and offsets (0 at missing cells), used instead when not empty (:func:`hmc_cells`).
    ``zA, zWt``: standard normal draws (overwritten; the momentum is ``z / sqrt(inv_mass)``);
    ``imA, imWt``: the diagonal inverse mass (positive); ``log_u``: ``log`` of a uniform draw.
    ``gA, gWt`` receive the gradient of ``log pi`` at the state the transition ends in. Codes:
    0 accepted, 1 rejected (``theta`` unchanged; ``log_acc`` ``-inf`` when the trajectory met
    a non-finite value), 2 non-finite input or start (unchanged, :data:`HMC_ERRORS`).
    """
    D, K = tA.shape
    N = tWt.shape[0]
    if not (_finite(tA) and _finite(tWt) and _finite(imA) and _finite(imWt)
            and math.isfinite(eps) and eps > 0.0):
        return 2, -np.inf
    for v in imA.ravel():
        if not v > 0.0:
            return 2, -np.inf
    for v in imWt.ravel():
        if not v > 0.0:
            return 2, -np.inf
    A = np.empty((D, K))
    Wt = np.empty((N, K))
    lp0 = _grad(tA, tWt, rows, cols, offs, x, Xd, Od, aA, bA, aWt, bWt, A, Wt, gA, gWt, True)
    if not math.isfinite(lp0) or not (_finite(gA) and _finite(gWt)):
        return 2, -np.inf
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
    for s in range(n_leap):
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
        return 0, min(log_acc, 0.0)
    gA[:, :] = g0A
    gWt[:, :] = g0Wt
    return 1, min(log_acc, 0.0)


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


class HmcAdapter:
    """One chain's HMC transitions with their tuning (module docstring).

    Parameters
    ----------
    cells : tuple
        :func:`hmc_cells` of the problem.
    prior : tuple
        ``(aA, bA, aWt, bWt)``: the Gamma shapes and rates of the entries (D x K and N x K).
    n_leap : int
        Leapfrog steps per transition.
    target : float
        Acceptance rate the step size is tuned to.
    """

    def __init__(self, cells, prior, n_leap, target=0.8):
        self.cells, self.prior = cells, prior
        self.n_leap, self.target = int(n_leap), float(target)
        self.state = None

    def start(self, A, Wt):
        """Fresh tuning state at ``(A, W.T)`` (a chain's start)."""
        imA, imWt = conditional_shape_mass(self.cells, A, Wt, self.prior[0], self.prior[2])
        self.state = {"imA": imA, "imWt": imWt, "log_eps": math.log(0.1),
                      "log_eps_bar": math.log(0.1), "n_adapt": 0, "n_tuned": 0,
                      "window_end": FIRST_WINDOW, "window": [], "acc_sum": 0.0, "n_try": 0}

    def freeze(self):
        """End of tuning: the step size becomes the running average; counters reset."""
        s = self.state
        if s is not None and s["n_adapt"]:
            s["log_eps"] = s["log_eps_bar"]
        if s is not None:
            s.update(n_adapt=0, window=[], acc_sum=0.0, n_try=0)

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
        s["window"], s["n_adapt"] = [], 0
        s["window_end"] = 2 * s["window_end"] + FIRST_WINDOW

    def transition(self, A, Wt, rng, tune):
        """One transition from ``(A, W.T)``; returns ``(A, W.T)`` (new arrays)."""
        s = self.state
        tA, tWt = np.log(A), np.log(Wt)
        zA, zWt = rng.standard_normal(tA.shape), rng.standard_normal(tWt.shape)
        eps = math.exp(s["log_eps"]) * rng.uniform(0.8, 1.2)
        gA, gWt = np.empty_like(tA), np.empty_like(tWt)
        code, log_acc = hmc_transition(tA, tWt, zA, zWt, *self.cells, *self.prior, s["imA"],
                                       s["imWt"], eps, self.n_leap, math.log(rng.uniform()),
                                       gA, gWt)
        if code == 2:
            raise FloatingPointError(f"GibbsPoisson(moves='hmc'): {HMC_ERRORS[2]}")
        acc = math.exp(log_acc)
        s["n_try"] += 1
        s["acc_sum"] += acc
        if tune:
            s["n_adapt"] += 1
            s["n_tuned"] += 1
            s["log_eps"] += ADAPT_GAIN * (acc - self.target)
            w = max(1.0 / s["n_adapt"], ADAPT_AVERAGE)
            s["log_eps_bar"] = (1.0 - w) * s["log_eps_bar"] + w * s["log_eps"]
            s["window"].append((np.concatenate([tA.ravel(), tWt.ravel()]),
                                np.concatenate([gA.ravel(), gWt.ravel()])))
            if s["n_tuned"] == s["window_end"]:
                self._end_window()
        return np.exp(tA), np.exp(tWt)

    def acceptance(self):
        """Mean acceptance probability since the start or the last :meth:`freeze`."""
        s = self.state
        return s["acc_sum"] / s["n_try"] if s and s["n_try"] else math.nan
