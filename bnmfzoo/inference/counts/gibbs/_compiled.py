"""Many Poisson Gibbs sweeps in one numba call, with the two exact group moves (no PyMC).

:func:`gibbs_sweeps` runs ``n_sweeps`` sweeps of the Poisson model (Cemgil 2009) inside one
compiled kernel, built from the pieces of :mod:`bnmfzoo.inference.counts.sweep` (the split
:func:`~bnmfzoo.inference.counts.sweep.split_into` and the conjugate draws
:func:`~bnmfzoo.inference.counts.sweep.gamma_block_into` and
:func:`~bnmfzoo.inference.counts.sweep.rate_draws_into`) and of
:mod:`~bnmfzoo.inference.counts.gibbs._moves`: split the nonzero counts, ``A | Z, W``,
``W | Z, A``, the rescaling move, the Gamma rate variables (ARD, per-row / per-column rates), and
the shear move. A Python sweep (:func:`~bnmfzoo.inference.counts.sweep.sweep`) pays ~100-200 us
of Python overhead; here a sweep costs ~2 us plus ~15 ns per count (~60 us on 30 x 20 with
4,379 counts), so several sweeps per PyMC draw cost little next to ``pm.sample``'s own per-step
overhead. Repeating the ``A, W`` updates given ``Z`` (``n_inner``) does not help the mixing of
``A @ W``, which the data augmentation limits.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.counts._data import big_count, exposure_into
from bnmfzoo.inference.counts.gibbs._marginal import NU, marginal_rows_into, transposed
from bnmfzoo.inference.counts.gibbs._moves import (
    ERRORS,
    problem_arrays,
    rescale_into,
    shear_into,
)
from bnmfzoo.inference.counts.sweep import gamma_block_into, rate_draws_into, split_into
from bnmfzoo.inference.kernels.streams import seed_state

__all__ = ["gibbs_sweeps", "fast_path_ok", "default_sweeps_per_draw", "sweep_cost"]



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
                   state, np_seed, marginal, indptr, ccols, ccounts, tindptr, trows, tcounts):
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
                exposure_into(Wt, s, c, mrows, mcols, separable, erows, ecols, eoffs, EA)
                if gamma_block_into(aA, ZA, bA, EA, A):
                    return 3
            if upd_W:
                exposure_into(A, c, s, mcols, mrows, separable, ecols, erows, eoffs, EWt)
                if gamma_block_into(aWt, ZWt, bWt, EWt, Wt):
                    return 3
            if rescale and upd_A and upd_W:  # A_dk W_kn unchanged: exact given Z as well
                code = rescale_into(A, Wt, bA, bWt, P, state)
                if code:
                    return code
            if upd_rates and lam.size:
                rate_draws_into(lam, lam_a, lam_b, idxA, aA, A, idxWt, aWt, Wt, sh, rt)
        if marginal:  # Z integrated out: each row of A given W, each column of W given A
            _current_rates(bA_const, idxA, lam, bA)
            _current_rates(bWt_const, idxWt, lam, bWt)
            if upd_A:
                exposure_into(Wt, s, c, mrows, mcols, separable, erows, ecols, eoffs, EA)
                code, _acc = marginal_rows_into(indptr, ccols, ccounts, A, Wt, EA, aA, bA, NU)
                if code:
                    return code
            if upd_W:
                exposure_into(A, c, s, mcols, mrows, separable, ecols, erows, eoffs, EWt)
                code, _acc = marginal_rows_into(tindptr, trows, tcounts, Wt, A, EWt, aWt, bWt,
                                                NU)
                if code:
                    return code
        if shear and upd_A and upd_W and K > 1:  # changes A_dk W_kn: after Z is discarded
            _current_rates(bA_const, idxA, lam, bA)
            _current_rates(bWt_const, idxWt, lam, bWt)
            shear_into(A, Wt, aA, bA, aWt, bWt, state)
    return 0


# ----------------------------------------------------------------------------- Python side


def fast_path_ok(problem, beta=1.0):
    """Whether :func:`gibbs_sweeps` runs the compiled kernel (Poisson at ``beta = 1``)."""
    return problem.family == "poisson" and beta == 1.0


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


def gibbs_sweeps(problem, state, rng, n_sweeps=1, *, update=("A", "W", "rates"),
                 rescale=True, shear=True, n_inner=1, marginal=False):
    """``n_sweeps`` compiled sweeps of a Poisson ``problem``; returns the new state (a new dict).

    Parameters
    ----------
    problem : CountProblem
        ``family == "poisson"`` (others: loop over
        :func:`~bnmfzoo.inference.counts.sweep.sweep` and
        :func:`~bnmfzoo.inference.counts.gibbs._moves.group_moves`).
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
    marginal : bool
        After each sweep, the independence Metropolis-Hastings move of every row of ``A``
        given ``W`` and of every column of ``W`` given ``A`` with the counts not split
        (:mod:`~bnmfzoo.inference.counts.gibbs._marginal`).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts.sweep import initial_state
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
    arrs = problem_arrays(problem)
    A = np.array(state["A"], dtype=float, order="C", copy=True)
    Wt = np.array(np.asarray(state["W"], dtype=float).T, order="C", copy=True)
    lam = _flatten(problem, arrs, state["rates"])
    rows, cols, counts = problem.data.tiled
    s, c, mr, mc, separable, er, ec, eo = arrs["expo"]
    xs = seed_state(rng)
    np_seed = int(rng.integers(0, 2**31 - 1))
    data = problem.data
    tind, trows, tcounts = transposed(data)
    cost = sweep_cost(problem) + (marginal_cost(problem) if marginal else 0.0)
    # calls of ~CALL_SECONDS: back in Python (Ctrl-C, signal handlers) between them; the
    # generators carry over, so the draws do not depend on the chunking
    per_call = max(1, int(CALL_SECONDS / cost))
    done = 0
    while done < n_sweeps:
        m = min(per_call, n_sweeps - done)
        code = _sweeps_kernel(rows, cols, counts, s, c, mr, mc, separable, er, ec, eo,
                              arrs["aA"], arrs["bA"], arrs["idxA"], arrs["aWt"], arrs["bW"],
                              arrs["idxW"], lam, arrs["lam_a"], arrs["lam_b"], arrs["P"],
                              "A" in update, "W" in update, "rates" in update, bool(rescale),
                              bool(shear), m, int(n_inner), A, Wt, xs,
                              np_seed if done == 0 else -1, bool(marginal), data.indptr,
                              data.cols, data.counts, tind, trows, tcounts)
        if code:
            raise FloatingPointError(f"gibbs_sweeps: {ERRORS[code]} (degenerate factors)")
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
    count split unit by unit + 60 ns per binomial (counts above ``big_count(K)``: K binomials) +
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


def marginal_cost(problem):
    """Modelled seconds of the marginal moves of every row of A and column of W.

    About 10 Newton steps per row, each ~3 ns per nonzero and K^2, for both factors.
    """
    K = problem.rank
    D, N = problem.shape
    return 2 * 10 * 3e-9 * (problem.data.nnz * K * K + (D + N) * K ** 3)


def sweep_cost(problem):
    """Modelled seconds of one compiled Poisson sweep (:func:`default_sweeps_per_draw`).

    Bounded by the data's size whatever the counts: a count above ``big_count(K)`` costs K
    binomials (numba's BTPE, O(1) each).
    """
    D, N = problem.shape
    K = problem.rank
    x = problem.data.counts
    big = big_count(K)
    units = float(x[x <= big].sum() + 4 * K * np.count_nonzero(x > big))
    return 2e-6 + 15e-9 * units + 20e-9 * (D + N) * K * K
