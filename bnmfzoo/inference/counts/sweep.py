"""The latent-count Gibbs sweep of every count model: the split and the conjugate draws (no PyMC).

One module holds what ``pm.sample``
(:class:`~bnmfzoo.inference.counts.gibbs.gibbs_poisson.GibbsPoisson`), the compiled multi-sweep
kernel (:mod:`~bnmfzoo.inference.counts.gibbs._compiled`), replica
exchange (:mod:`bnmfzoo.inference.counts.tempering`) and the tests run. Model: ``X_dn ~
Poisson(o_dn sum_k A_dk W_kn)`` on the observed cells, ``A_dk ~ Gamma(a, b)``, ``W_kn ~ Gamma(a,
b)`` (shape, rate; rates may be Gamma variables themselves). Each count is split over the
factors, ``Z_dn. | X_dn ~ Multinomial(X_dn, p_k ∝ A_dk W_kn)`` (Cemgil 2009), and then

* ``A_dk | Z, W ~ Gamma(a_dk + sum_n Z_dnk, b_dk + c sum_{n obs in row d} o_dn W_kn)``
* ``W_kn | Z, A ~ Gamma(a_kn + sum_d Z_dnk, b_kn + c sum_{d obs in col n} o_dn A_dk)``
* the Gamma rate variables (ARD, per-row / per-column rates) given ``A, W``.

:func:`sweep` is that sweep with the model's options:

* **Poisson** (``c = 1``): the multinomial split (:func:`split_counts`).
* **Negative binomial through CRT** (shape ``alpha o (A W)_dn``, ``p = alpha / (1 + alpha)``):
  the Chinese-restaurant tables ``l_dnk`` of each component take the place of ``Z`` and ``c =
  alpha log(1 + 1 / alpha)`` (Zhou & Carin 2015, Theorem 1). Given the count they are drawn as
  ``L_dn ~ CRT(x_dn, R_dn)``, ``R_dn = sum_k r_dnk``, split ``Multinomial(L_dn, r_dn. /
  R_dn)`` (:func:`split_crt`): the law of the Dirichlet-multinomial split of ``x_dn`` followed
  by ``CRT(x_dnk, r_dnk)`` per part, at one table draw per count instead of K. A learned
  ``alpha`` is then updated by slice sampling its conditional given ``A, W``
  (:func:`slice_log_alpha`, Neal 2003).
* **NB2 multipliers** (PyMC's ``NegativeBinomial(mu, alpha)``, variance ``mu + mu^2 / alpha``):
  ``x_dn | g_dn ~ Poisson(g_dn mu_dn)``, ``g_dn ~ Gamma(alpha, alpha)``. First ``alpha | A, W``
  (slice sampling with ``g`` integrated out), then ``g | alpha, A, W, x ~ Gamma(alpha + x_dn,
  alpha + mu_dn)`` for every observed cell, then the Poisson sweep at exposures ``g o``: O(D N K).
* **Power posterior** ``p(A, W) prod Poisson(x | mu)^beta`` (``power=``, :func:`power_rung`):
  with ``beta x = n - delta``, ``n = ceil(beta x)``, a latent ``t_dn ~ Gamma(delta_dn, mu_dn)``
  per nonzero makes ``mu^n`` split as usual, at exposures ``beta o`` plus ``t o`` on the nonzeros
  (:mod:`bnmfzoo.inference.counts.tempering._power` derives it).
* **Offsets and missing cells** come with the problem (its
  :class:`~bnmfzoo.inference.counts._data.Exposure`); the tempered rounding path passes a
  problem with scaled offsets and rounded counts.

Each step is an exact conditional of the (augmented) posterior, so the sweep leaves it
invariant. The split runs over the nonzeros in a tiled order (:attr:`CountMatrix.tiled`) and
scatters the column counts into an N x K table that stays in cache (no atomics: one thread);
its uniforms come from a xoshiro256+ stream (:mod:`bnmfzoo.inference.kernels.streams`) held in
registers, one per count, the category found without branches (a search loop mispredicts about
once per draw: 113 against ~40 ns per nonzero). Counts above
:func:`~bnmfzoo.inference.counts._data.big_count` (``20 K``) are split by sequential binomials
(numba's sampler, seeded per sweep from the chain's generator). NB counts
up to :data:`BIG_NB_COUNT` draw their tables with one Bernoulli per customer; larger ones with
the bounded-cost block CRT of :mod:`bnmfzoo.inference.kernels` (at most ~2e4 blocks, ~10 ms,
for 32-bit counts), in calls of :data:`WORK_PER_CALL` work units
(Ctrl-C and signal handlers run between them). The compiled sweep draws its Gamma variables with
:func:`gamma_block_into` and :func:`rate_draws_into` (numba's generator); the Python sweep with
:func:`gamma_update` (the chain's ``numpy.random.Generator``).

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
Neal, R. M. (2003). Slice sampling. Annals of Statistics 31, 705-767.
Friel, N. & Pettitt, A. N. (2008). Marginal likelihood estimation via power posteriors.
JRSS B 70(3), 589-607.
"""

import dataclasses
import math

import numba
import numpy as np

from bnmfzoo.inference.counts._data import (
    Exposure,
    big_count,
    cell_means,
    entry_exposure,
    exposures,
    nb2_cell_loglik,
    nb_loglik,
    nonzero_means,
    scaled_exposure,
    total_mean,
)
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals
from bnmfzoo.inference.kernels.crt import crt, crt_direct
from bnmfzoo.inference.kernels.streams import next_uniform, seed_state, to_unit, xoshiro_step
from bnmfzoo.inference.kernels.variates import gamma_draws, multinomial_into

__all__ = ["sweep", "split_counts", "split_arrays", "split_into", "split_crt", "gamma_update",
           "gamma_block_into", "rate_draws_into", "draw_rates", "slice_log_alpha",
           "nb_rate_factor", "initial_state", "power_rung", "PowerRung", "BLOCKS",
           "BIG_NB_COUNT", "WORK_PER_CALL"]

#: the blocks a sweep can update
BLOCKS = ("A", "W", "rates", "alpha")
_TINY = np.finfo(float).tiny

#: NB counts above this draw their tables by the block CRT of :mod:`bnmfzoo.inference.kernels`
#: (two binomials per block), counts up to it one Bernoulli per customer: about even in cost
#: near 256 on the breast SBS96 and ALL/AML matrices (``benchmarks/speed/nb_split.py``)
BIG_NB_COUNT = 256
#: up to this many tables of one nonzero are placed one uniform each (a binomial costs about
#: as much as ten uniforms); more by sequential binomials
SMALL_TABLES = 16
#: work units (CRT customers or blocks, K per nonzero) per call of the split kernel: the caller
#: returns to Python between calls (Ctrl-C and signal handlers run there), ~10-50 ms apart
WORK_PER_CALL = 2_000_000


# ----------------------------------------------------------------------------- the splits


@numba.njit(cache=True)
def _split_kernel(rows, cols, counts, A, Wt, state, np_seed, ZA, ZWt):
    """Seed numba's generator (the binomials of big counts), then :func:`split_into`."""
    np.random.seed(np_seed)
    return split_into(rows, cols, counts, A, Wt, state, ZA, ZWt)


@numba.njit(cache=True)
def split_into(rows, cols, counts, A, Wt, state, ZA, ZWt):
    """Multinomial split of every nonzero count; fills ZA (D, K) and ZWt (N, K). Returns code.

    ``rows, cols, counts`` in tiled order (:attr:`CountMatrix.tiled`). Codes: 0 ok, 1 a
    nonzero count whose means are all 0 or non-finite. Counts above ``big_count(K)`` use
    numba's binomial sampler (its generator is seeded by the caller). The xoshiro state is
    held in scalars during the loop and written back to ``state`` at the end.
    """
    return split_with_threshold(rows, cols, counts, A, Wt, state, ZA, ZWt,
                                big_count(A.shape[1]))


@numba.njit(cache=True)
def split_with_threshold(rows, cols, counts, A, Wt, state, ZA, ZWt, big):
    """:func:`split_into` with the counts above ``big`` split by sequential binomials.

    The same law for any ``big`` (``benchmarks/speed/split_threshold.py`` times the choice).
    """
    D, K = A.shape
    ZA[:] = 0.0
    ZWt[:] = 0.0
    cum = np.empty(K)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    code = 0
    for e in range(rows.size):
        d = rows[e]
        n = cols[e]
        x = counts[e]
        tot = 0.0
        for k in range(K):
            tot += A[d, k] * Wt[n, k]
            cum[k] = tot
        if not (tot > 0.0 and tot < np.inf):
            code = 1
            break
        if x <= big:
            for _ in range(x):
                out, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
                v = to_unit(out) * tot
                k = 0
                for j in range(K - 1):  # branchless: how many cumulative sums are <= v
                    k += v >= cum[j]
                ZA[d, k] += 1.0
                ZWt[n, k] += 1.0
        else:
            left = x
            rest = tot
            for k in range(K):
                if left == 0:
                    break
                p = A[d, k] * Wt[n, k]
                if k == K - 1 or rest <= p:
                    z = left
                else:
                    z = np.random.binomial(left, min(p / rest, 1.0))
                ZA[d, k] += z
                ZWt[n, k] += z
                left -= z
                rest -= p
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return code


def split_arrays(rows, cols, counts, A, W, rng, state=None):
    """The multinomial split of the listed counts (any order): ``(ZA (D, K), ZW (K, N))``.

    ``rows, cols, counts`` are int32 arrays; :func:`split_counts` passes the tiled order.
    ``rng`` seeds the kernel's generators (after ``state`` when that is drawn here).
    """
    D, K = A.shape
    N = W.shape[1]
    if state is None:
        state = seed_state(rng)
    ZA = np.empty((D, K))
    ZWt = np.empty((N, K))
    code = _split_kernel(rows, cols, counts, np.ascontiguousarray(A, float),
                         np.ascontiguousarray(W.T, float), state,
                         int(rng.integers(0, 2**31 - 1)), ZA, ZWt)
    if code:
        raise FloatingPointError("a nonzero count has a zero or non-finite mean A @ W: the "
                                 "factors are degenerate (all zero, inf or NaN)")
    return ZA, np.ascontiguousarray(ZWt.T)


def split_counts(data, A, W, rng, state=None):
    """Split the nonzero counts multinomially: ``(ZA (D, K), ZW (K, N))`` count tables.

    Parameters
    ----------
    data : CountMatrix
    A : numpy.ndarray, shape (D, K)
    W : numpy.ndarray, shape (K, N)
    rng : numpy.random.Generator
        Seeds the kernel's generators (one draw per call).
    state : numpy.ndarray of uint64, optional
        A xoshiro256+ state to continue (updated in place); drawn from ``rng`` when None.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.counts._data import CountMatrix
    >>> m = CountMatrix.from_entries([0, 1], [1, 0], [5, 2], (2, 2))
    >>> ZA, ZW = split_counts(m, np.ones((2, 3)), np.ones((3, 2)), np.random.default_rng(0))
    >>> ZA.sum(axis=1).tolist(), ZW.sum(axis=0).tolist()
    ([5.0, 2.0], [2.0, 5.0])
    """
    return split_arrays(*data.tiled, A, W, rng, state)


@numba.njit(cache=True)
def _split_crt_kernel(indptr, cols, counts, A, Wt, scale_nz, state, LA, LWt, d0, budget,
                      threshold):
    """Tables of rows ``d0, d0 + 1, ...`` until ``budget`` work units are spent.

    Returns ``(code, next row)``: code 0 ok, 1 a nonzero count with a zero or non-finite NB
    shape. Each nonzero's tables are drawn at once, ``L ~ CRT(x, R)`` with ``R = sum_k r_k``,
    and split ``(l_k) | L ~ Multinomial(L, r / R)``: the law of the Dirichlet-multinomial split
    followed by ``CRT(x_k, r_k)`` per part (Zhou & Carin 2015, Theorem 1), without the split.
    Counts above ``threshold`` use the block CRT (:func:`crt`, O(blocks)), the others one
    Bernoulli per customer (:func:`crt_direct`, O(x)); up to :data:`SMALL_TABLES` tables are
    placed one uniform each, more by K sequential binomials, so a row costs at most O(row
    nonzeros x (threshold + K SMALL_TABLES)) plus the blocks.
    """
    D, K = A.shape
    r = np.empty(K)
    cum = np.empty(K)
    n = np.zeros(K)
    work = np.zeros(1, np.int64)
    d = d0
    while d < D and work[0] < budget:
        for k in range(K):
            LA[d, k] = 0.0
        for e in range(indptr[d], indptr[d + 1]):
            j = cols[e]
            x = counts[e]
            R = 0.0
            for k in range(K):
                r[k] = scale_nz[e] * A[d, k] * Wt[j, k]
                R += r[k]
                n[k] = 0.0
            if not (R > 0.0 and R < np.inf):
                return 1, d
            if x > threshold:
                tables = crt(x, R, state, work)
            else:
                work[0] += x
                tables = crt_direct(x, R, state)
            work[0] += K
            if tables <= SMALL_TABLES:  # one uniform per table, the category by its cumsum
                tot = 0.0
                for k in range(K):
                    tot += r[k]
                    cum[k] = tot
                for _ in range(tables):
                    v = next_uniform(state) * tot
                    k = 0
                    while k < K - 1 and v >= cum[k]:
                        k += 1
                    n[k] += 1.0
            elif multinomial_into(tables, r, n, state):
                return 1, d
            for k in range(K):
                LA[d, k] += n[k]
                LWt[j, k] += n[k]
        d += 1
    return 0, d


def split_crt(data, A, W, scale_nz, rng, *, threshold=BIG_NB_COUNT, budget=WORK_PER_CALL):
    """Table counts ``(LA (D, K), LW (K, N))`` of the DirMult split and CRT of every nonzero.

    ``scale_nz`` is ``alpha o_dn`` per nonzero (CSR order). Cost O(sum over nonzeros of
    ``K min(x, threshold)``) plus, for counts above ``threshold``, O(K) for the split and
    the CRT blocks (:mod:`bnmfzoo.inference.kernels.crt`: ~``sqrt(r) log(1 + n / r)``,
    at most ~2e4 for 32-bit counts): bounded by the number of nonzeros, not their values.
    The kernel runs in calls of ``budget`` work units and returns to Python between them,
    so Ctrl-C and signals are seen within ~50 ms. The draws do not depend on ``budget``.
    """
    D, N = data.shape
    K = A.shape[1]
    LA = np.empty((D, K))
    LWt = np.zeros((N, K))
    A = np.ascontiguousarray(A, float)
    Wt = np.ascontiguousarray(W.T, float)
    scale_nz = np.ascontiguousarray(scale_nz, float)
    state = seed_state(rng)
    d = 0
    while d < D:
        code, d = _split_crt_kernel(data.indptr, data.cols, data.counts, A, Wt, scale_nz, state,
                                    LA, LWt, d, int(budget), int(threshold))
        if code:
            raise FloatingPointError("a nonzero count has a zero or non-finite NB shape")
    return LA, np.ascontiguousarray(LWt.T)


def nb_rate_factor(alpha):
    """``alpha log(1 + 1 / alpha)``: the Poisson rate of the tables per unit of ``o A W``."""
    return alpha * math.log1p(1.0 / alpha)


# ----------------------------------------------------------------------------- conjugate draws

def gamma_update(rng, shape_prior, rate_prior, Z, E):
    """Draws of ``Gamma(shape_prior + Z, rate_prior + E)`` (elementwise, shape-rate).

    Floored at the smallest positive float (:func:`~bnmfzoo.inference.kernels.gamma_draws`):
    a draw with a small shape can underflow to 0, which would make a count impossible.
    """
    return gamma_draws(rng, shape_prior + Z, rate_prior + E)


@numba.njit(cache=True)
def gamma_block_into(a, Z, b, E, out):
    """``out = max(Gamma(a + Z, b + E), tiny)`` elementwise (numba's generator); returns a code.

    The compiled sweep's conjugate draw of one factor (:func:`gamma_update` for the Python
    sweep); 0 ok, 3 a non-finite draw.
    """
    M, K = out.shape
    for i in range(M):
        for k in range(K):
            v = np.random.gamma(a[i, k] + Z[i, k], 1.0 / (b[i, k] + E[i, k]))
            if not v < np.inf:
                return 3
            out[i, k] = max(v, _TINY)
    return 0


@numba.njit(cache=True)
def rate_draws_into(lam, lam_a, lam_b, idxA, aA, A, idxWt, aWt, Wt, sh, rt):
    """The Gamma rate variables given ``A, W`` in one flat vector ``lam`` (numba's generator).

    ``lam_r ~ Gamma(alpha_r + sum of the users' shapes, beta_r + sum of the users' values)``;
    ``idxA`` / ``idxWt`` give each factor entry's element of ``lam`` (-1: a constant rate);
    ``sh``, ``rt``: scratch of ``lam``'s size.
    """
    D, K = A.shape
    N = Wt.shape[0]
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


def draw_rates(problem, A, W, rates, rng):
    """The rate variables drawn from their Gamma conditionals given ``A, W`` (a new dict)."""
    rates = dict(rates)
    for name, (shape, rate) in rate_conditionals(problem, A, W).items():
        rates[name] = gamma_draws(rng, shape, rate)
    return rates


def slice_log_alpha(alpha, logpost, rng, *, width=1.0, max_steps=50):
    """One slice-sampling update (stepping out, shrinkage; Neal 2003) of ``log alpha``.

    ``logpost(alpha)`` is the log density of ``alpha`` (prior times likelihood); the Jacobian
    of ``u = log alpha`` is added here.
    """
    def f(u):
        return logpost(math.exp(u)) + u

    u0 = math.log(alpha)
    f0 = f(u0)
    if math.isnan(f0) or f0 == math.inf:  # a level no point exceeds: shrinkage without end
        raise FloatingPointError(f"the log density of alpha = {alpha!r} is {f0!r}, not finite")
    y = f0 + math.log(rng.uniform())
    lo = u0 - width * rng.uniform()
    hi = lo + width
    steps = 0
    while f(lo) > y and steps < max_steps:
        lo -= width
        steps += 1
    steps = 0
    while f(hi) > y and steps < max_steps:
        hi += width
        steps += 1
    while True:
        u = rng.uniform(lo, hi)
        if f(u) > y:
            return math.exp(u)
        if u < u0:
            lo = u
        else:
            hi = u


def initial_state(problem, rng):
    """A start: rates at their prior means, factors drawn from their priors given them."""
    rates = {n: a / b for n, (a, b, _) in problem.rates.items()}
    rates = {n: np.asarray(v, float).reshape(problem.rates[n][2]) for n, v in rates.items()}
    bA, bW = prior_rates(problem, rates)
    A = np.maximum(rng.gamma(problem.aA, 1.0 / bA), 1e-3 * problem.aA / bA)
    W = np.maximum(rng.gamma(problem.aW, 1.0 / bW), 1e-3 * problem.aW / bW)
    alpha = problem.alpha
    if problem.alpha_prior is not None:
        alpha = problem.alpha_prior[0] / problem.alpha_prior[1]
    return {"A": A, "W": W, "rates": rates, "alpha": alpha}


# ----------------------------------------------------------------------------- the sweep

@dataclasses.dataclass(frozen=True)
class PowerRung:
    """What the power-posterior sweep at ``beta`` needs (:func:`power_rung`).

    Attributes
    ----------
    beta : float
    rows, cols : numpy.ndarray of int32
        Every nonzero, CSR order (the split walks this order).
    counts : numpy.ndarray of int32
        ``n = ceil(beta x)``.
    delta : numpy.ndarray
        ``n - beta x`` (the shape of the latent ``t``).
    frac : numpy.ndarray of int
        The nonzeros with ``delta > 0`` (the others have ``t = 0``).
    expo : Exposure
        The exposures at offsets ``beta o``.
    """

    beta: float
    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray
    delta: np.ndarray
    frac: np.ndarray
    expo: Exposure


def power_rung(problem, beta):
    """The :class:`PowerRung` of a Poisson ``problem`` at ``0 < beta < 1``."""
    if problem.family != "poisson":
        raise ValueError("the power-posterior sweep is for Poisson models")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    data = problem.data
    scaled = beta * np.asarray(data.counts, float)
    n = np.ceil(scaled)
    delta = n - scaled
    return PowerRung(float(beta), data.rows().astype(np.int32), np.asarray(data.cols, np.int32),
                     n.astype(np.int32), delta, np.flatnonzero(delta > 1e-12),
                     scaled_exposure(problem.expo, beta))


def _nb2_multipliers(problem, A, W, alpha, rng, update):
    """NB2: ``alpha | A, W`` (when learned), then ``g``; ``(alpha, exposures g o)``."""
    rows, cols, offsets, x = problem.cells
    mu = cell_means(A, W, rows, cols, offsets)
    if not np.all(np.isfinite(mu)):
        raise FloatingPointError("the NB2 means are not finite")
    if "alpha" in update and problem.alpha_prior is not None:
        a0, b0 = problem.alpha_prior

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + float(np.sum(nb2_cell_loglik(x, mu, a)))

        alpha = slice_log_alpha(alpha, logpost, rng)
    g = rng.gamma(alpha + x, 1.0 / (alpha + mu))
    D, N = problem.shape
    return alpha, Exposure("entries", np.ones(D), np.ones(N), rows, cols, offsets * g)


def _power_split(problem, A, W, rung, rng):
    """Power posterior: the latent ``t`` and the split of ``n``; ``(ZA, ZW, extra exposures)``."""
    o = problem.offsets_nz
    A = np.ascontiguousarray(A, float)
    W = np.ascontiguousarray(W, float)
    mu = nonzero_means(problem.data, A, W, o)
    frac = rung.frac
    if not np.all(np.isfinite(mu)) or np.any(mu[frac] <= 0.0):
        raise FloatingPointError("a nonzero count has a zero or non-finite mean A @ W")
    t_o = rng.gamma(rung.delta[frac], 1.0 / mu[frac]) * o[frac]  # t_dn o_dn
    ZA, ZW = split_arrays(rung.rows, rung.cols, rung.counts, A, W, rng)
    return ZA, ZW, (rung.rows[frac], rung.cols[frac], t_o)


def _with_extra(E, extra, rows, cols, F):
    """``E`` plus the exposures of the latent ``t o`` at the listed nonzeros (F: K x M)."""
    if extra is None:
        return E
    out = np.empty_like(E)
    entry_exposure(rows, cols, extra[2], np.ascontiguousarray(F, float), out)
    return E + out


def sweep(problem, state, rng, *, update=BLOCKS, power=None):
    """One Gibbs sweep of a count ``problem`` (module docstring); returns a new state dict.

    Parameters
    ----------
    problem : CountProblem
        Its ``family`` chooses the split (``"poisson"``; ``"negative_binomial"``: CRT tables;
        ``"nb2"``: Gamma multipliers first); its exposure carries the offsets and missing cells.
    state : dict
        ``"A"`` (D x K), ``"W"`` (K x N), ``"rates"`` (name -> array), ``"alpha"``.
    rng : numpy.random.Generator
    update : tuple of str
        Which blocks to update (others are kept: another step method samples them).
    power : PowerRung, optional
        Sweep the power posterior at ``power.beta`` (Poisson models, :func:`power_rung`).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> prob = problem_from_factorization(recognize(poisson(X, 2, ard=True)))
    >>> rng = np.random.default_rng(1)
    >>> s = sweep(prob, initial_state(prob, rng), rng)
    >>> s["A"].shape, s["rates"]["lambda_"].shape
    ((5, 2), (2,))
    >>> s = sweep(prob, s, rng, power=power_rung(prob, 0.5))
    >>> bool(np.all(s["A"] > 0))
    True
    """
    A, W = state["A"], state["W"]
    alpha = state.get("alpha")
    expo, scale, extra = problem.expo, 1.0, None
    if problem.family == "nb2":
        alpha, expo = _nb2_multipliers(problem, A, W, float(alpha), rng, update)
    bA, bW = prior_rates(problem, state["rates"])
    if power is not None:
        ZA, ZW, extra = _power_split(problem, A, W, power, rng)
        expo = power.expo
    elif problem.family == "negative_binomial":
        ZA, ZW = split_crt(problem.data, A, W, alpha * problem.offsets_nz, rng)
        scale = nb_rate_factor(alpha)
    else:
        ZA, ZW = split_counts(problem.data, A, W, rng)
    rows, cols = (None, None) if extra is None else extra[:2]
    if "A" in update:
        A = gamma_update(rng, problem.aA, bA, ZA,
                         scale * _with_extra(exposures(expo, W), extra, rows, cols, W))
    if "W" in update:
        EW = exposures(expo, A.T, transpose=True)
        W = gamma_update(rng, problem.aW, bW, ZW,
                         scale * _with_extra(EW, extra, cols, rows, np.asarray(A).T).T)
    rates = state["rates"]
    if "rates" in update and problem.rates:
        rates = draw_rates(problem, A, W, rates, rng)
    else:
        rates = dict(rates)
    learn_alpha = "alpha" in update and problem.alpha_prior is not None
    if problem.family == "negative_binomial" and learn_alpha:
        a0, b0 = problem.alpha_prior
        data = problem.data
        mu_nz = nonzero_means(data, A, W, problem.offsets_nz)
        tot = total_mean(expo, A, W)

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + nb_loglik(a, data, mu_nz, tot)

        alpha = slice_log_alpha(float(alpha), logpost, rng)
    return {"A": A, "W": W, "rates": rates, "alpha": alpha}
