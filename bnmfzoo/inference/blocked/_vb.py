"""Row-blocked variational Bayes for Poisson and negative-binomial NMF (no PyMC, no Dask).

The same coordinate ascent as the serial count VB (Cemgil 2009; the negative binomial through
the expected CRT tables of Zhou & Carin 2015), with the rows cut into fixed blocks:

* a block holds its rows of ``q(A) = Gamma(aA, bA)``; given the column state (``L_W =
  exp E[log W]`` and ``sum_n E[W_kn]``) it makes one pass over its nonzeros
  (:func:`bnmfzoo.inference.kernels.countvb.poisson_vb_pass` or
  :func:`~bnmfzoo.inference.kernels.countvb.nb_tables`, the serial VB's own kernels), updates
  its ``q(A)`` and returns its statistics: the K x N table sums, its part of the bound at the
  old state, and ``sum_i E[A_ik]`` before and after the update;
* the driver adds the blocks' statistics **in block order** (every block sum is an index-order
  loop, so the bits do not depend on which process ran a block), evaluates the bound, updates
  ``q(W)`` and sends the new column state;
* a learned NB dispersion (:class:`NegBinVB` with ``alpha=None``) first takes the guarded Newton
  steps of the serial VB in ``log alpha``: each asks the blocks for scalar sums over their
  nonzeros (:class:`AlphaQuery`; :func:`~bnmfzoo.inference.kernels.countvb.alpha_sums`,
  :func:`~bnmfzoo.inference.kernels.countvb.lgamma_ratio_sum`), added in block order.

An iteration is deterministic: the result is bit for bit the same serially and on any number of
Dask workers, and equal to the serial VB up to the order of float additions.
"""

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import digamma

from bnmfzoo.inference.blocked import _kernels as kern
from bnmfzoo.inference.blocked._blocks import TAG_INIT_COLS, TAG_INIT_ROWS, block_seed
from bnmfzoo.inference.blocked._families import PoissonFamily, _Family
from bnmfzoo.inference.kernels.countvb import (
    alpha_sums,
    gamma_kl_elements,
    lgamma_ratio_sum,
    nb_tables,
    nonzero_means_into,
    poisson_vb_pass,
)


def _geometric(shape, rate):
    """``exp E[log x]`` under ``Gamma(shape, rate)``."""
    return np.exp(digamma(shape) - np.log(rate))


@dataclass
class VBBlockState:
    """A block's ``q(A)`` (shapes and rates; ``None`` before the first iteration)."""

    aA: object
    bA: object
    stats: tuple = ()
    M: tuple = None  # (sweep, the NB means at the nonzeros) between alpha queries and the step

    @property
    def A(self):
        """``E[A]`` of the block's rows."""
        return self.aA / self.bA

    def __getstate__(self):  # a checkpoint carries q(A), not the last statistics
        return {"aA": self.aA, "bA": self.bA, "stats": (), "M": None}


@dataclass
class VBCols:
    """What a block reads: ``L_W``, ``sum_n E[W]``, the start scale and the dispersion.

    ``W`` is ``L_W`` transposed (N, K), ``EWsum`` is ``sum_n E[W_kn]`` (K), ``alpha`` the NB
    dispersion of this iteration (``nan`` for the Poisson).
    """

    W: np.ndarray
    EWsum: np.ndarray
    scale: float
    alpha: float = math.nan


@dataclass
class AlphaQuery:
    """Ask every block for its sums at a candidate ``alpha`` (its ``q(A)`` is not updated).

    ``cols``: the iteration's column state; ``derivs``: also the derivatives' sums; ``first``:
    also ``sum log x!``, ``sum x`` and ``sum_i E[A_ik]``.
    """

    cols: VBCols
    alpha: float
    derivs: bool
    first: bool = False

    @property
    def W(self):
        """The ``L_W`` sent with the query."""
        return self.cols.W


@dataclass
class VBColState:
    """The driver's ``q(W) = Gamma(aW, bW)`` (K, N) and the column state sent to the blocks."""

    aW: np.ndarray
    bW: np.ndarray
    cols: VBCols


class _VBFamily:
    """Shared by the Poisson and NB blocked VB: start, block step, reduction, ``q(W)`` update."""

    def rate_factor(self, cols):
        """The Poisson rate of the latent counts per unit of ``A W`` (1 for the Poisson)."""
        return 1.0

    def start_alpha(self):
        """The dispersion of the first iteration (``nan``: none)."""
        return math.nan

    def __init__(self, rank, random_seed, a=1.0, b=1.0):
        self.rank = int(rank)
        self.seed = int(random_seed)
        self.a, self.b = float(a), float(b)

    check = PoissonFamily.check
    fold = staticmethod(_Family.fold)
    reduce = staticmethod(_Family.reduce)

    # ------------------------------------------------------------------ start
    def init_state(self, block):
        """No ``q(A)`` yet: the first iteration draws it (it needs the data's scale)."""
        return VBBlockState(None, None)

    def start_rows(self, block_index, n_rows, scale):
        """The random start of a block's ``q(A)`` (the serial VB's law, the block's stream)."""
        rng = np.random.default_rng(block_seed(self.seed, -1, block_index, TAG_INIT_ROWS))
        EA = scale * rng.gamma(2.0, 0.5, size=(n_rows, self.rank))
        aA = np.full_like(EA, self.a + 1.0)
        return aA, aA / EA

    def init_cols(self, n_cols, summaries):
        """``q(W)``'s random start and the start scale ``sqrt(mean count / K)``."""
        total = 0.0
        rows = 0
        for s in summaries:
            total += s.total
            rows += s.n_rows
        cells = float(rows) * float(n_cols)
        scale = math.sqrt(max(total / max(cells, 1.0), 1e-12) / self.rank)
        rng = np.random.default_rng(block_seed(self.seed, -1, -1, TAG_INIT_COLS))
        EW = scale * rng.gamma(2.0, 0.5, size=(self.rank, n_cols))
        aW = np.full_like(EW, self.a + 1.0)
        return self._colstate(aW, aW / EW, scale, self.start_alpha())

    def _colstate(self, aW, bW, scale, alpha):
        EWsum = np.empty(self.rank)
        kern.row_sums(np.ascontiguousarray(aW / bW), EWsum)
        return VBColState(aW, bW, VBCols(np.ascontiguousarray(_geometric(aW, bW).T), EWsum,
                                         scale, alpha))

    # ------------------------------------------------------------------ block step
    def step(self, block, state, cols, sweep, keep):
        """One iteration of the block: its bound terms, new ``q(A)`` and statistics."""
        if isinstance(cols, AlphaQuery):
            return self._alpha_query(block, state, cols, sweep)
        if state.aA is None:
            aA, bA = self.start_rows(block.index, block.n_rows, cols.scale)
        else:
            aA, bA = state.aA, state.bA
        K = self.rank
        LA = _geometric(aA, bA)
        SA = np.empty((block.n_rows, K))
        SWt = np.empty((cols.W.shape[0], K))
        data = self._pass(block, LA, cols, SA, SWt, state.M, sweep)
        EA_old = np.empty(K)
        kern.col_sums(np.ascontiguousarray(aA / bA), EA_old)
        kl = kern.ordered_sum(np.ascontiguousarray(
            gamma_kl_elements(self.a, self.b, math.log(self.b), aA, bA)))
        aA = self.a + SA
        bA = np.empty_like(aA)
        bA[:] = self.b + self.rate_factor(cols) * cols.EWsum
        EA_new = np.empty(K)
        kern.col_sums(np.ascontiguousarray(aA / bA), EA_new)
        return VBBlockState(aA, bA, (SWt, np.append(data, kl), EA_old, EA_new))

    # ------------------------------------------------------------------ driver
    def update_cols(self, reduced, colstate):
        """``(new column state, bound at the state before this iteration)``."""
        SWt, pieces, EA_old, EA_new = reduced
        aW, bW = colstate.aW, colstate.bW
        klW = kern.ordered_sum(np.ascontiguousarray(
            gamma_kl_elements(self.a, self.b, math.log(self.b), aW, bW)))
        total = 0.0  # sum_dnk E[A_dk] E[W_kn], K terms
        for k in range(self.rank):
            total += float(EA_old[k]) * float(colstate.cols.EWsum[k])
        bound = self._bound(pieces[:-1], total, colstate.cols.alpha) + float(pieces[-1]) + klW
        aW = self.a + np.ascontiguousarray(SWt.T)
        bW = np.ascontiguousarray(np.broadcast_to(
            (self.b + self.rate_factor(colstate.cols) * EA_new)[:, None], aW.shape))
        return self._colstate(aW, bW, colstate.cols.scale, colstate.cols.alpha), bound

    def update_alpha(self, executor, colstate, sweep):
        """The column state with this iteration's dispersion (unchanged unless it is learned)."""
        return colstate

    def stats_bytes(self, n_cols):
        """Bytes of one block's statistics."""
        return 8 * (self.rank * n_cols + 2 * self.rank + 4)


class PoissonVB(_VBFamily):
    """Poisson NMF, ``A_ik, W_kj ~ Gamma(a, b)`` (shape, rate)."""

    name = "poisson"

    def _pass(self, block, LA, cols, SA, SWt, cached, sweep):
        ll = poisson_vb_pass(block.indptr, block.cols, block.values, LA, cols.W, SA, SWt)
        if not np.isfinite(ll):
            raise FloatingPointError("VB: a nonzero count has a zero or non-finite mean")
        return np.array([ll])

    def _bound(self, pieces, total, alpha):
        return float(pieces[0]) - total


class NegBinVB(_VBFamily):
    """Gamma-Poisson NMF ``X ~ NB(alpha (A W), alpha / (1 + alpha))``, ``alpha`` fixed or learned.

    With ``alpha=None`` the dispersion is a point estimate under ``alpha ~ Gamma(*alpha_prior)``
    (shape, rate), as in :func:`bnmfzoo.inference.fit_vb_nb`: before each iteration's block
    step, :meth:`update_alpha` raises ``B + log p(alpha)`` in ``u = log alpha`` by up to three
    guarded Newton steps from the start ``a0 / b0``. Their sums over the nonzeros (the data
    term and its two derivatives) are per-block scalars (an :class:`AlphaQuery`) added in block
    order, one round trip per Newton step and candidate.
    """

    name = "negative_binomial"
    newton_steps = 3

    def __init__(self, rank, random_seed, alpha, a=1.0, b=1.0, alpha_prior=None):
        super().__init__(rank, random_seed, a, b)
        if alpha is None:
            if alpha_prior is None:
                raise ValueError("alpha_prior: a learned dispersion needs its Gamma prior")
            self.alpha, self.alpha_prior = None, (float(alpha_prior[0]), float(alpha_prior[1]))
        else:
            self.alpha, self.alpha_prior = float(alpha), None

    def start_alpha(self):
        if self.alpha_prior is None:
            return self.alpha
        return self.alpha_prior[0] / self.alpha_prior[1]

    def rate_factor(self, cols):
        a = cols.alpha
        return a * math.log1p(1.0 / a)

    # ------------------------------------------------------------------ block side
    def _means(self, block, LA, cols, cached, sweep):
        """``sum_k L_A L_W`` at the block's nonzeros (kept between the queries of a sweep)."""
        if cached is not None and cached[0] == sweep:
            return cached[1]
        M = np.empty(block.nnz)
        nonzero_means_into(block.indptr, block.cols, LA, cols.W, np.ones(block.nnz), M)
        if not np.all(np.isfinite(M)) or np.any(M <= 0.0):
            raise FloatingPointError("VB (NB): a nonzero count has a zero or non-finite mean")
        return M

    def _pass(self, block, LA, cols, SA, SWt, cached, sweep):
        counts = block.values.astype(np.int64)
        ones = np.ones(block.nnz)
        M = self._means(block, LA, cols, cached, sweep)
        nb_tables(block.indptr, block.cols, counts, M, ones, cols.alpha, LA, cols.W, SA, SWt)
        return np.array([lgamma_ratio_sum(counts, M, cols.alpha),
                         kern.log_factorial_sum(block.values),
                         kern.ordered_sum(np.ascontiguousarray(block.values, np.float64))])

    def _alpha_query(self, block, state, query, sweep):
        """The block's sums at ``query.alpha``; its ``q(A)`` unchanged (drawn at the start).

        Statistics ``([lgamma-ratio sum, g, h, sum log x!, sum x], sum_i E[A_ik])`` (the
        derivative and ``first`` entries zero unless asked for).
        """
        if state.aA is None:
            aA, bA = self.start_rows(block.index, block.n_rows, query.cols.scale)
        else:
            aA, bA = state.aA, state.bA
        counts = block.values.astype(np.int64)
        M = self._means(block, _geometric(aA, bA), query.cols, state.M, sweep)
        vals = np.zeros(5)
        vals[0] = lgamma_ratio_sum(counts, M, query.alpha)
        if query.derivs:
            vals[1], vals[2] = alpha_sums(counts, M, query.alpha)
        EA = np.zeros(self.rank)
        if query.first:
            vals[3] = kern.log_factorial_sum(block.values)
            vals[4] = kern.ordered_sum(np.ascontiguousarray(block.values, np.float64))
            kern.col_sums(np.ascontiguousarray(aA / bA), EA)
        return VBBlockState(aA, bA, (vals, EA), (sweep, M))

    # ------------------------------------------------------------------ driver side
    def _log_prior(self, a):
        a0, b0 = self.alpha_prior
        return a0 * math.log(b0) - math.lgamma(a0) + (a0 - 1.0) * math.log(a) - b0 * a

    def _bound(self, pieces, total, alpha):
        lgr, lf, x_sum = (float(p) for p in pieces)
        return self._objective(lgr, lf, x_sum, total, alpha)

    def _objective(self, lgr, lf, x_sum, total, a):
        """``B + log p(alpha)`` without the KL terms (``fit_vb_nb``'s objective)."""
        out = lgr - lf - x_sum * math.log1p(a) - a * math.log1p(1.0 / a) * total
        if self.alpha_prior is not None:
            out += self._log_prior(a)
        return out

    def _derivatives(self, g, h, x_sum, total, a):
        """First and second derivatives of the objective in ``u = log alpha``."""
        fa = g - x_sum / (1.0 + a) + total * (math.log(a / (1.0 + a)) + 1.0 / (1.0 + a))
        faa = h + x_sum / (1.0 + a) ** 2 + total * (1.0 / a - 1.0 / (1.0 + a)
                                                     - 1.0 / (1.0 + a) ** 2)
        a0, b0 = self.alpha_prior
        fa += (a0 - 1.0) / a - b0
        faa -= (a0 - 1.0) / a ** 2
        return a * fa, a * fa + a * a * faa

    def update_alpha(self, executor, colstate, sweep):
        """Guarded Newton steps in ``log alpha`` at the iteration's state (``fit_vb_nb``'s).

        A step is ``-f'/f''`` when ``f'' < 0`` (else ``0.5 sign f'``), at most 1 in ``u``,
        halved until the objective rises (at most 30 halvings; otherwise ``alpha`` is kept); a
        Newton step whose predicted gain ``f'^2 / (2 |f''|)`` is below ``1e-14 (1 + |f|)``,
        the objective's rounding, is taken as is, so rounding never decides it.
        """
        if self.alpha_prior is None:
            return colstate
        cols = colstate.cols

        def ask(a, derivs, first=False):
            return self.reduce(executor.sweep(self, AlphaQuery(cols, a, derivs, first), sweep,
                                              False))

        alpha = cols.alpha
        vals, EA = ask(alpha, True, True)
        lf, x_sum = float(vals[3]), float(vals[4])
        total = 0.0  # sum_dnk E[A_dk] E[W_kn], K terms (as update_cols)
        for k in range(self.rank):
            total += float(EA[k]) * float(cols.EWsum[k])
        fu0 = self._objective(float(vals[0]), lf, x_sum, total, alpha)
        g_sum, h_sum = float(vals[1]), float(vals[2])
        for i in range(self.newton_steps):
            g, h = self._derivatives(g_sum, h_sum, x_sum, total, alpha)
            if not (np.isfinite(g) and np.isfinite(h)) or abs(g) <= 1e-10 * (1.0 + abs(fu0)):
                break
            step = -g / h if h < 0.0 else 0.5 * math.copysign(1.0, g)
            step = max(-1.0, min(1.0, step))
            # a Newton step whose predicted gain is below the objective's round-off is taken
            # as is: the comparison below would decide it by rounding alone
            tiny = h < 0.0 and g * g <= -2e-14 * h * (1.0 + abs(fu0))
            for _ in range(30):
                cand = alpha * math.exp(step)
                vals, _ = ask(cand, i + 1 < self.newton_steps)
                fc = self._objective(float(vals[0]), lf, x_sum, total, cand)
                if np.isfinite(fc) and (fc > fu0 or tiny):
                    alpha, fu0 = cand, fc
                    g_sum, h_sum = float(vals[1]), float(vals[2])
                    break
                step *= 0.5
            else:
                break
        return VBColState(colstate.aW, colstate.bW, replace(cols, alpha=alpha))
