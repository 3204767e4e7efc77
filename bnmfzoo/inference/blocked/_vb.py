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
  ``q(W)`` and sends the new column state.

An iteration is deterministic: the result is bit for bit the same serially and on any number of
Dask workers, and equal to the serial VB up to the order of float additions.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from bnmfzoo.inference.blocked import _kernels as kern
from bnmfzoo.inference.blocked._blocks import TAG_INIT_COLS, TAG_INIT_ROWS, block_seed
from bnmfzoo.inference.blocked._families import PoissonFamily, _Family
from bnmfzoo.inference.kernels.countvb import (
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

    @property
    def A(self):
        """``E[A]`` of the block's rows."""
        return self.aA / self.bA

    def __getstate__(self):  # a checkpoint carries q(A), not the last statistics
        return {"aA": self.aA, "bA": self.bA, "stats": ()}


@dataclass
class VBCols:
    """What a block reads: ``L_W`` transposed (N, K), ``sum_n E[W_kn]`` (K) and the start scale."""

    W: np.ndarray
    EWsum: np.ndarray
    scale: float


@dataclass
class VBColState:
    """The driver's ``q(W) = Gamma(aW, bW)`` (K, N) and the column state sent to the blocks."""

    aW: np.ndarray
    bW: np.ndarray
    cols: VBCols


class _VBFamily:
    """Shared by the Poisson and NB blocked VB: start, block step, reduction, ``q(W)`` update."""

    rate_factor = 1.0

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
        return self._colstate(aW, aW / EW, scale)

    def _colstate(self, aW, bW, scale):
        EWsum = np.empty(self.rank)
        kern.row_sums(np.ascontiguousarray(aW / bW), EWsum)
        return VBColState(aW, bW, VBCols(np.ascontiguousarray(_geometric(aW, bW).T), EWsum,
                                         scale))

    # ------------------------------------------------------------------ block step
    def step(self, block, state, cols, sweep, keep):
        """One iteration of the block: its bound terms, new ``q(A)`` and statistics."""
        if state.aA is None:
            aA, bA = self.start_rows(block.index, block.n_rows, cols.scale)
        else:
            aA, bA = state.aA, state.bA
        K = self.rank
        LA = _geometric(aA, bA)
        SA = np.empty((block.n_rows, K))
        SWt = np.empty((cols.W.shape[0], K))
        data = self._pass(block, LA, cols, SA, SWt)
        EA_old = np.empty(K)
        kern.col_sums(np.ascontiguousarray(aA / bA), EA_old)
        kl = kern.ordered_sum(np.ascontiguousarray(
            gamma_kl_elements(self.a, self.b, math.log(self.b), aA, bA)))
        aA = self.a + SA
        bA = np.empty_like(aA)
        bA[:] = self.b + self.rate_factor * cols.EWsum
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
        bound = self._bound(pieces[:-1], total) + float(pieces[-1]) + klW
        aW = self.a + np.ascontiguousarray(SWt.T)
        bW = np.ascontiguousarray(np.broadcast_to(
            (self.b + self.rate_factor * EA_new)[:, None], aW.shape))
        return self._colstate(aW, bW, colstate.cols.scale), bound

    def stats_bytes(self, n_cols):
        """Bytes of one block's statistics."""
        return 8 * (self.rank * n_cols + 2 * self.rank + 4)


class PoissonVB(_VBFamily):
    """Poisson NMF, ``A_ik, W_kj ~ Gamma(a, b)`` (shape, rate)."""

    name = "poisson"

    def _pass(self, block, LA, cols, SA, SWt):
        ll = poisson_vb_pass(block.indptr, block.cols, block.values, LA, cols.W, SA, SWt)
        if not np.isfinite(ll):
            raise FloatingPointError("VB: a nonzero count has a zero or non-finite mean")
        return np.array([ll])

    def _bound(self, pieces, total):
        return float(pieces[0]) - total


class NegBinVB(_VBFamily):
    """Gamma-Poisson NMF ``X ~ NB(alpha (A W), alpha / (1 + alpha))`` with a fixed ``alpha``."""

    name = "negative_binomial"

    def __init__(self, rank, random_seed, alpha, a=1.0, b=1.0):
        super().__init__(rank, random_seed, a, b)
        self.alpha = float(alpha)
        self.rate_factor = self.alpha * math.log1p(1.0 / self.alpha)

    def _pass(self, block, LA, cols, SA, SWt):
        counts = block.values.astype(np.int64)
        ones = np.ones(block.nnz)
        M = np.empty(block.nnz)
        nonzero_means_into(block.indptr, block.cols, LA, cols.W, ones, M)
        if not np.all(np.isfinite(M)) or np.any(M <= 0.0):
            raise FloatingPointError("VB (NB): a nonzero count has a zero or non-finite mean")
        nb_tables(block.indptr, block.cols, counts, M, ones, self.alpha, LA, cols.W, SA, SWt)
        return np.array([lgamma_ratio_sum(counts, M, self.alpha),
                         kern.log_factorial_sum(block.values),
                         kern.ordered_sum(np.ascontiguousarray(block.values, np.float64))])

    def _bound(self, pieces, total):
        lgr, lf, x_sum = (float(p) for p in pieces)
        a = self.alpha
        return lgr - lf - x_sum * math.log1p(a) - a * math.log1p(1.0 / a) * total
