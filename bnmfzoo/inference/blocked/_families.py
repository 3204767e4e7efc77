"""The two families of the blocked sweep (no PyMC, no Dask).

What a block does, how the blocks' statistics reduce, and the column draw on the driver.

One sweep is an exact Gibbs sweep of the model's posterior: every block draws its rows of ``A``
from their full conditional given the column factors (and, for counts, the latent split drawn
first in the same block), then the driver reduces the blocks' statistics **in block order**
(float sums are not associative, so the order is fixed whatever the number of workers) and
draws ``W`` (and the noise precision) from their full conditionals given the new ``A``.
"""

from dataclasses import dataclass

import numpy as np

from bnmfzoo.inference.blocked import _kernels as kern
from bnmfzoo.inference.blocked._blocks import (
    TAG_COLS,
    TAG_INIT_COLS,
    TAG_INIT_ROWS,
    TAG_ROWS,
    TAG_TAU,
    block_seed,
)


@dataclass
class BlockState:
    """A block's row factors, their running sum over kept draws, and the last statistics."""

    A: np.ndarray
    A_sum: np.ndarray
    n_kept: int
    stats: tuple


@dataclass
class ColState:
    """The column factors ``W`` (K, N) and the noise precision (Gaussian; ``nan`` for counts)."""

    W: np.ndarray
    tau: float = float("nan")


@dataclass(frozen=True)
class Summary:
    """What the driver needs to know of a block before sweeping."""

    n_rows: int
    nnz: int
    sumsq: float
    full: bool
    nbytes: int
    integral: bool
    total: float = 0.0


def summarize(block):
    """The :class:`Summary` of a loaded block."""
    v = block.values
    integral = bool(np.all(v >= 0) and np.all(v == np.floor(v))) if v.size else True
    total = float(kern.ordered_sum(np.ascontiguousarray(v, dtype=np.float64))) if v.size else 0.0
    return Summary(block.n_rows, block.nnz, float(kern.sum_squares(v)),
                   bool(block.full), int(block.nbytes), integral, total)


class _Family:
    def __init__(self, rank, random_seed):
        self.rank = int(rank)
        self.seed = int(random_seed)

    def init_state(self, block):
        """Prior draw of the block's rows (stream of the block, sweep -1)."""
        A = np.empty((block.n_rows, self.rank))
        self._prior_rows(block_seed(self.seed, -1, block.index, TAG_INIT_ROWS), A)
        return BlockState(A, np.zeros_like(A), 0, ())

    def step(self, block, state, cols, sweep, keep):
        """One sweep of block ``block`` (a new state; the input is not modified)."""
        A = state.A.copy()
        stats = self._block(block, A, cols, block_seed(self.seed, sweep, block.index, TAG_ROWS))
        A_sum, n_kept = state.A_sum, state.n_kept
        if keep:
            A_sum, n_kept = A_sum + A, n_kept + 1
        return BlockState(A, A_sum, n_kept, stats)

    def check(self, summaries):
        """Refuse data the family cannot take, before any sweep (default: anything)."""

    @staticmethod
    def fold(stats_list):
        """Statistics of a worker's blocks as sent to the driver (default: unchanged)."""
        return stats_list

    @staticmethod
    def reduce(stats_list):
        """Sum the blocks' statistics in block order (the same order for any worker count)."""
        total = [np.array(s, dtype=np.float64, copy=True) for s in stats_list[0]]
        for stats in stats_list[1:]:
            for t, s in zip(total, stats):
                t += s
        return total


class PoissonFamily(_Family):
    """Poisson NMF with ``A_ik, W_kj ~ Gamma(a, b)`` (shape, rate)."""

    name = "poisson"

    def __init__(self, rank, random_seed, a=1.0, b=1.0):
        super().__init__(rank, random_seed)
        self.a, self.b = float(a), float(b)

    def check(self, summaries):
        bad = [b for b, s in enumerate(summaries) if not s.integral]
        if bad:
            raise ValueError(f"X: a count model needs non-negative integer counts; block "
                             f"{bad[0]} holds non-integer or negative values (normalized "
                             "data? pass the raw counts)")

    def _prior_rows(self, seed, A):
        kern.gamma_matrix(self.a, self.b, seed, A)

    def init_cols(self, n_cols, summaries):
        W = np.empty((self.rank, n_cols))
        kern.gamma_matrix(self.a, self.b, block_seed(self.seed, -1, -1, TAG_INIT_COLS), W)
        return ColState(W)

    def _block(self, block, A, cols, seed):
        K, N = cols.W.shape
        ZW, Asum, Wsum = np.empty((K, N)), np.empty(K), np.empty(K)
        kern.row_sums(cols.W, Wsum)
        kern.poisson_block(block.indptr, block.cols, block.values, A, cols.W, Wsum, self.a,
                           self.b, seed, ZW, Asum)
        return ZW, Asum

    @staticmethod
    def fold(stats_list):
        """Add a worker's latent-count totals into its first block's (exact: integers).

        The totals are integers below 2^53 held in float64, so their sum is exact in any
        order and the driver's result does not depend on which blocks share a worker; the
        float sums of ``A`` stay per block and are added in block order.
        """
        first = np.array(stats_list[0][0], copy=True)
        for ZW, _ in stats_list[1:]:
            first += ZW
        return [(first, stats_list[0][1])] + [(None, a) for _, a in stats_list[1:]]

    @staticmethod
    def reduce(stats_list):
        """Latent-count totals summed (exact), sums of ``A`` added in block order."""
        ZW = None
        for z, _ in stats_list:
            if z is not None:
                ZW = np.array(z, dtype=np.float64, copy=True) if ZW is None else ZW + z
        Asum = np.array(stats_list[0][1], dtype=np.float64, copy=True)
        for _, a in stats_list[1:]:
            Asum += a
        return ZW, Asum

    def draw_cols(self, reduced, cols, sweep, summaries):
        ZW, Asum = reduced
        W = np.empty_like(cols.W)
        kern.poisson_columns(ZW, Asum, self.a, self.b,
                             block_seed(self.seed, sweep, -1, TAG_COLS), W)
        return ColState(W)

    def stats_bytes(self, n_cols, full):
        return 8 * self.rank * (n_cols + 1)


class GaussianFamily(_Family):
    """Exponential-Gaussian NMF.

    ``A ~ Exp(lambda_A)``, ``W ~ Exp(lambda_W)``, ``tau ~ Gamma(alpha_tau, beta_tau)`` (or a
    fixed ``tau``).
    """

    name = "exponential_gaussian"

    def __init__(self, rank, random_seed, lambda_A=1.0, lambda_W=1.0, alpha_tau=1.0,
                 beta_tau=1.0, tau=None):
        super().__init__(rank, random_seed)
        self.lambda_A, self.lambda_W = float(lambda_A), float(lambda_W)
        self.alpha_tau, self.beta_tau = float(alpha_tau), float(beta_tau)
        self.fixed_tau = None if tau is None else float(tau)

    def _prior_rows(self, seed, A):
        kern.exponential_matrix(self.lambda_A, seed, A)

    def init_cols(self, n_cols, summaries):
        W = np.empty((self.rank, n_cols))
        kern.exponential_matrix(self.lambda_W, block_seed(self.seed, -1, -1, TAG_INIT_COLS), W)
        if self.fixed_tau is not None:
            return ColState(W, self.fixed_tau)
        return ColState(W, self.alpha_tau / self.beta_tau)

    def _block(self, block, A, cols, seed):
        K, N = cols.W.shape
        full = block.full
        B, G = np.empty((N, K)), np.empty((1 if full else N, K, K))
        kern.gaussian_block(block.indptr, block.cols, block.values, A, cols.W, cols.tau,
                            self.lambda_A, seed, full, B, G)
        return B, G

    @staticmethod
    def reduce(stats_list):
        """Block-order sums; a fully observed block's one Gram matrix counts for every column."""
        if any(s[1].shape[0] != 1 for s in stats_list):
            n = max(s[1].shape[0] for s in stats_list)
            stats_list = [(B, np.broadcast_to(G, (n, *G.shape[1:]))) for B, G in stats_list]
        return _Family.reduce(stats_list)

    def draw_cols(self, reduced, cols, sweep, summaries):
        B, G = reduced
        W = cols.W.copy()  # coordinate-wise: each entry's conditional reads the others' values
        kern.gaussian_columns(B, G, cols.tau, self.lambda_W,
                              block_seed(self.seed, sweep, -1, TAG_COLS), W)
        if self.fixed_tau is not None:
            return ColState(W, self.fixed_tau)
        sumsq = 0.0
        n_obs = 0
        for s in summaries:
            sumsq += s.sumsq
            n_obs += s.nnz
        sse = kern.gaussian_sse(B, G, sumsq, W)
        tau = kern.gamma_draw(self.alpha_tau + 0.5 * n_obs, self.beta_tau + 0.5 * sse,
                              block_seed(self.seed, sweep, -1, TAG_TAU))
        return ColState(W, float(tau))

    def stats_bytes(self, n_cols, full):
        return 8 * self.rank * n_cols + 8 * self.rank ** 2 * (1 if full else n_cols)
