"""Temperature ladders of replica exchange, shared by every tempered family (no PyMC).

Replica ``i`` of a ladder ``1 = beta_0 > beta_1 > ... > beta_{n-1} > 0`` targets a tempered
density ``pi_i`` whose log is ``beta_i l`` plus terms that do not change between replicas (the
log-likelihood for the Gaussian family, the collapsed log joint for the binary one). A swap of
the states of neighbours ``i, i + 1`` is accepted with probability
``min(1, exp((beta_i - beta_{i+1}) (l_{i+1} - l_i)))`` (Swendsen & Wang 1986; Geyer 1991).
Swaps alternate between even and odd pairs ("deterministic even-odd", the non-reversible
scheme of Syed, Bouchard-Cote, Deligiannidis & Doucet 2022), each pass leaving the product of
the tempered densities invariant.

The ladder is tuned in rounds of doubling length (Syed et al. 2022, Algorithm 4): from the
rejection rates ``r_i`` of each pair in a round the communication barrier
``Lambda(beta) = sum of r`` below ``beta`` is interpolated (monotone in ``beta``) and the new
``beta`` are placed at equal steps of ``Lambda``, which equalizes the swap rates. The hottest
``beta`` is kept; outside tuning the ladder is frozen.

**Its size adapts to the data** (:func:`initial_size`, :class:`LadderTuner` with ``grow``).
The rejection rate between ``beta`` and ``beta'`` is about ``|beta - beta'| lambda(beta)``, with
the local barrier ``lambda(beta) ~ sd_beta(l) / sqrt(pi)`` (Syed et al. 2022, Sec. 4; exact for
Gaussian energies). For a regular posterior with ``p`` free parameters the tempered
log-likelihood has ``Var_beta(l) ~ p / (2 beta^2)`` (Laplace), so the barrier from ``beta_min``
to 1 is ``Lambda ~ sqrt(p / (2 pi)) log(1 / beta_min)``: it grows with the model (for NMF,
``p = (D + N) R`` grows with the data) and with the span of the ladder. The round trips per
sweep of ``n`` replicas with equal rejection ``r = Lambda / (n - 1)`` are about
``1 / (n (2 + 2 (n - 1) r / (1 - r)))`` (Syed et al. 2022, Corollary 2), largest at
``n - 1 = 2 Lambda``, i.e. ``r = 1/2``: the default design. A chain starts with
``n = 2 Lambda_0 + 1`` replicas (``Lambda_0`` from ``p``); at the end of each tuning round the
barrier is re-estimated from the measured rejection rates and, if ``2 Lambda + 1`` exceeds the
ladder, rungs are inserted (at most doubling per round: a pair that never swaps only bounds
its share of ``Lambda`` from below) and the ladder is re-spaced at equal barrier. Measured on
CCLE IC50 rank 3 (``p = 1584``): ``Lambda_0`` 30 to ``beta = 0.15`` against 26 measured
(48 rungs swapping at 0.43-0.48).

A chain's replicas can start from one annealed trajectory (:func:`annealed_start`: swept at
temperatures falling from the hottest to ``beta = 1``, replica ``i`` taking the state reached at
``beta_i``; simulated annealing, Kirkpatrick, Gelatt & Vecchi 1983), so that each starts in a
state typical of its temperature rather than all at the chain's initial point.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator

from bnmfzoo.inference.tempering.smc import TooManySteps, smc

__all__ = ["geometric_ladder", "check_ladder", "swap_pass", "retune_ladder", "LadderTuner",
           "ladder_stats", "annealed_start", "check_anneal_start", "initial_size", "barrier",
           "nearest_rungs", "pilot_ladder", "TARGET_REJECTION", "MIN_SWAP_RATE"]

#: design rejection rate of every neighbour pair (``n - 1 = 2 Lambda``: most round trips per
#: sweep, see the module docstring)
TARGET_REJECTION = 0.5
#: a ladder whose final tuning round has a pair below this mean swap probability keeps growing
#: (if it may); the target every pair is meant to meet
MIN_SWAP_RATE = 0.2


def geometric_ladder(n_replicas, beta_min):
    """``n_replicas`` inverse temperatures from 1 down to ``beta_min``, geometrically spaced.

    Examples
    --------
    >>> geometric_ladder(3, 0.01).round(3).tolist()
    [1.0, 0.1, 0.01]
    """
    n = int(n_replicas)
    if n < 1:
        raise ValueError(f"n_replicas must be at least 1, got {n_replicas!r}")
    if not 0.0 < float(beta_min) < 1.0:
        raise ValueError(f"beta_min must lie in (0, 1), got {beta_min!r}")
    if n == 1:
        return np.ones(1)
    return np.exp(np.linspace(0.0, math.log(float(beta_min)), n))


def check_ladder(betas, n_replicas, beta_min):
    """The ladder ``betas`` (or a geometric one of ``n_replicas`` down to ``beta_min``), checked.

    Examples
    --------
    >>> check_ladder(None, 2, 0.25).tolist()
    [1.0, 0.25]
    """
    if betas is None:
        betas = geometric_ladder(n_replicas, beta_min)
    betas = np.array(betas, dtype=float)
    if betas.ndim != 1 or betas.size < 1 or betas[0] != 1.0 or \
            not np.all(np.diff(betas) < 0) or betas[-1] <= 0:
        raise ValueError(f"betas must be a decreasing ladder starting at 1 and ending "
                         f"above 0, got {betas!r}")
    return betas


def swap_pass(states, betas, logliks, rng, parity, log_target=None):
    """Propose swaps of neighbouring replicas ``(i, i + 1)`` for ``i % 2 == parity``, in place.

    ``states`` and ``logliks`` are lists indexed by temperature (``betas[i]``); an accepted
    swap exchanges ``states[i]`` with ``states[i + 1]`` (and their log-likelihoods). The
    acceptance ratio is ``exp((beta_i - beta_j) (l_j - l_i))`` for targets ``prior x
    exp(beta l)``; a family whose tempered targets are not of that form passes
    ``log_target(state, beta)`` (its log target up to the terms that do not depend on
    ``beta``), and the ratio is then ``pi_i(x_j) pi_j(x_i) / (pi_i(x_i) pi_j(x_j))``.

    Returns
    -------
    prob : numpy.ndarray
        ``(n - 1,)`` acceptance probabilities of the proposed swaps (NaN where none).
    accepted : numpy.ndarray of bool
        ``(n - 1,)``.

    Examples
    --------
    >>> import numpy as np
    >>> s, ll = ["hot", "cold"], [-1.0, -5.0]
    >>> p, acc = swap_pass(s, np.array([1.0, 0.5]), ll, np.random.default_rng(0), 0)
    >>> float(p[0]) == float(np.exp(0.5 * -4.0)), s if acc[0] else s[::-1]
    (True, ['cold', 'hot'])
    """
    n = len(states)
    prob = np.full(max(n - 1, 0), np.nan)
    accepted = np.zeros(max(n - 1, 0), dtype=bool)
    for i in range(int(parity) % 2, n - 1, 2):
        if log_target is None:
            log_ratio = (betas[i] - betas[i + 1]) * (logliks[i + 1] - logliks[i])
        else:
            a, b = states[i], states[i + 1]
            log_ratio = (log_target(b, betas[i]) + log_target(a, betas[i + 1])
                         - log_target(a, betas[i]) - log_target(b, betas[i + 1]))
        prob[i] = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
        if log_ratio >= 0 or rng.random() < prob[i]:
            accepted[i] = True
            states[i], states[i + 1] = states[i + 1], states[i]
            logliks[i], logliks[i + 1] = logliks[i + 1], logliks[i]
    return prob, accepted


def retune_ladder(betas, rejection, n=None):
    """New ladder with equal estimated rejection rates (Syed et al. 2022, Algorithm 4).

    ``rejection[i]`` estimates the swap rejection rate between ``betas[i]`` and ``betas[i+1]``.
    The communication barrier ``Lambda`` (cumulative rejection from the hottest replica) is
    interpolated in ``beta`` by a monotone cubic and the new ladder of ``n`` rungs (default:
    as many as ``betas``) puts equal barrier between neighbours; ``betas[0] = 1`` and the
    hottest ``beta`` are kept.

    Examples
    --------
    >>> b = retune_ladder(np.array([1.0, 0.5, 0.1]), np.array([0.0, 0.6]))
    >>> bool(b[0] == 1.0 and b[-1] == 0.1 and 0.1 < b[1] < 0.5)
    True
    >>> retune_ladder(np.array([1.0, 0.5, 0.1]), np.array([0.5, 0.5]), n=5).size
    5
    """
    betas = np.asarray(betas, dtype=float)
    n_old = betas.size
    n = n_old if n is None else int(n)
    if n_old < 3:
        if n <= n_old:
            return betas.copy()
        return geometric_ladder(n, betas[-1])
    r = np.clip(np.asarray(rejection, dtype=float), 1e-3, 1.0)  # a floor keeps it invertible
    x = betas[::-1]  # increasing
    lam = np.concatenate([[0.0], np.cumsum(r[::-1])])
    f = PchipInterpolator(x, lam)
    targets = np.linspace(0.0, lam[-1], n)[1:-1]
    new = np.empty(n)
    new[0], new[-1] = x[0], x[-1]
    for j, t in enumerate(targets, start=1):  # bisection on the monotone interpolant
        lo, hi = x[0], x[-1]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if f(mid) < t:
                lo = mid
            else:
                hi = mid
        new[j] = 0.5 * (lo + hi)
    new = np.maximum.accumulate(new)
    return new[::-1].copy()


@dataclass
class LadderTuner:
    """Round-based ladder tuning during warm-up; frozen afterwards.

    Rounds last ``first_round`` steps, then twice as long each time; at the end of a round the
    ladder is retuned from the round's rejection rates (:func:`retune_ladder`). With ``grow``
    it may also get longer: when ``Lambda / TARGET_REJECTION + 1`` (``Lambda`` the barrier
    estimated from the round, :func:`barrier`) exceeds the number of rungs, or a pair swapped
    below ``MIN_SWAP_RATE``, rungs are added (at most doubling the intervals per round, at
    most ``max_replicas``).
    """

    round_length: int = 16
    step_in_round: int = 0
    rejection_sum: np.ndarray | None = None
    proposals: np.ndarray | None = None
    rounds: int = 0
    reported: bool = False
    grow: bool = False
    max_replicas: int = 0

    def update(self, prob, betas, *, tune, adapt, where):
        """One step's bookkeeping; returns the ladder to use next.

        While tuning, record the swap probabilities ``prob`` and (``adapt``, more than two
        rungs, or ``grow``) retune at the end of a round. At the first step after tuning,
        warn once (:meth:`report`) if some neighbours almost never swapped on the final ladder.
        """
        if len(betas) < 2:
            return betas
        if tune:
            self.record(prob)
            if adapt and (len(betas) > 2 or self.grow):
                return self.maybe_retune(betas)
            return betas
        if not self.reported:
            self.report(betas, where)
        return betas

    def report(self, betas, where, threshold=0.01, min_proposals=10):
        """Warn, once, if neighbours swapped with mean probability below ``threshold``.

        The rates are those since the last retune: the steps of the final ladder.
        """
        self.reported = True
        if self.proposals is None:
            return
        seen = self.proposals >= min_proposals
        rate = 1.0 - self.rejection_sum / np.maximum(self.proposals, 1.0)
        low = np.flatnonzero(seen & (rate < threshold))
        if low.size:
            pairs = ", ".join(f"{betas[i]:.3g}-{betas[i + 1]:.3g} ({rate[i]:.3f})" for i in low)
            full = (f" The ladder reached max_replicas = {self.max_replicas}."
                    if self.grow and len(betas) >= self.max_replicas else "")
            warnings.warn(
                f"{where}: after tuning, neighbouring temperatures {pairs} swapped with mean "
                f"probability below {threshold} (over the last {int(self.proposals.max())} "
                f"proposals each): states hardly move along the ladder, so the replicas add "
                f"little. The tempered log density grows with the number of observed entries, "
                f"so large data need rungs closer together: more replicas (n_replicas) or a "
                f"beta_min nearer 1.{full}", UserWarning, stacklevel=2)

    def record(self, prob):
        """Add one step's acceptance probabilities (NaN = not proposed)."""
        if self.rejection_sum is None or self.rejection_sum.size != prob.size:
            self.rejection_sum = np.zeros(prob.size)
            self.proposals = np.zeros(prob.size)
        seen = ~np.isnan(prob)
        self.rejection_sum[seen] += 1.0 - prob[seen]
        self.proposals[seen] += 1.0
        self.step_in_round += 1

    def target_size(self, n, rejection):
        """Rungs wanted after a round with ``rejection`` rates on ``n`` rungs (``>= n``)."""
        if not self.grow or n >= self.max_replicas:
            return n
        want = int(math.ceil(barrier(rejection) / TARGET_REJECTION)) + 1
        if np.any(1.0 - rejection < MIN_SWAP_RATE):
            want = max(want, n + 1)
        if want <= n:
            return n
        return int(min(self.max_replicas, 2 * n - 1, want))

    def maybe_retune(self, betas):
        """Return the retuned ladder at the end of a round, else ``betas`` unchanged."""
        if self.step_in_round < self.round_length or self.proposals is None:
            return betas
        rejection = self.rejection_sum / np.maximum(self.proposals, 1.0)
        new = retune_ladder(betas, rejection, self.target_size(len(betas), rejection))
        self.rounds += 1
        self.round_length *= 2
        self.step_in_round = 0
        self.rejection_sum[:] = 0.0
        self.proposals[:] = 0.0
        return new


def barrier(rejection):
    """Estimated communication barrier ``Lambda``: the sum of the pairs' rejection rates.

    Syed et al. (2022), Theorem 3: a pair's rejection rate is the barrier accrued between its
    temperatures. A pair that never swaps gives 1, only a lower bound on its share.

    Examples
    --------
    >>> barrier([0.5, 0.25])
    0.75
    """
    r = np.asarray(rejection, dtype=float)
    r = r[np.isfinite(r)]
    return float(np.sum(np.clip(r, 0.0, 1.0)))


def initial_size(dimension, beta_min):
    """Rungs of a ladder from 1 to ``beta_min`` for a tempered term of ``dimension`` parameters.

    ``2 Lambda_0 + 1`` with ``Lambda_0 = sqrt(dimension / (2 pi)) log(1 / beta_min)`` (module
    docstring), at least 2.

    Examples
    --------
    >>> initial_size(1584, 0.15), initial_size(36, 0.05), initial_size(0, 0.5)
    (62, 16, 2)
    """
    lam = math.sqrt(max(float(dimension), 0.0) / (2.0 * math.pi)) * math.log(1.0 / beta_min)
    return max(2, int(math.ceil(lam / TARGET_REJECTION)) + 1)


def nearest_rungs(old, new):
    """For each ``beta`` of ``new``, the index of the nearest ``beta`` of ``old`` (in log).

    Examples
    --------
    >>> nearest_rungs([1.0, 0.1], [1.0, 0.5, 0.2, 0.1]).tolist()
    [0, 0, 1, 1]
    """
    lo, ln = np.log(np.asarray(old, dtype=float)), np.log(np.asarray(new, dtype=float))
    return np.abs(ln[:, None] - lo[None, :]).argmin(axis=1)


def ladder_stats(sample_stats):
    """Stack the per-pair stats of a replica-exchange run.

    Returns ``(betas, swap_rate)``: the final ladder of each chain (chain, temperature) and
    the mean acceptance probability of each neighbour pair over the draws (chain, pair). A
    ladder whose size adapts declares stats for up to ``max_replicas`` rungs; the rungs (and
    pairs) a chain did not use are NaN.

    Examples
    --------
    >>> import xarray as xr, numpy as np
    >>> ds = xr.Dataset({"beta_0": (("chain", "draw"), np.ones((1, 2))),
    ...                  "beta_1": (("chain", "draw"), np.full((1, 2), 0.5)),
    ...                  "swap_prob_0": (("chain", "draw"), [[0.2, np.nan]])})
    >>> b, r = ladder_stats(ds)
    >>> b.tolist(), r.tolist()
    ([[1.0, 0.5]], [[0.2]])
    """
    n = sum(1 for name in sample_stats.data_vars if str(name).startswith("beta_"))
    betas = np.stack([np.asarray(sample_stats[f"beta_{i}"])[:, -1] for i in range(n)], axis=-1)
    def rate_of(p):
        seen = np.isfinite(p)
        return np.where(seen.any(axis=1), np.where(seen, p, 0.0).sum(axis=1)
                        / np.maximum(seen.sum(axis=1), 1), np.nan)

    rates = [rate_of(np.asarray(sample_stats[f"swap_prob_{i}"], dtype=float))
             for i in range(n - 1)]
    rate = np.stack(rates, axis=-1) if rates else np.zeros((betas.shape[0], 0))
    return betas, rate


def check_anneal_start(anneal_start):
    """Validate the length (sweeps) of :func:`annealed_start`'s trajectory (0 turns it off)."""
    if isinstance(anneal_start, bool) or not (isinstance(anneal_start, (int, np.integer))
                                              and anneal_start >= 0):
        raise ValueError(f"anneal_start must be a non-negative integer (sweeps of the "
                         f"annealed start), got {anneal_start!r}")
    return int(anneal_start)


def annealed_start(state, betas, n_sweeps, sweep, copy):
    """Replica states from one annealed trajectory, coldest first.

    ``state`` is swept ``n_sweeps`` times by ``sweep(state, beta)`` (in place), at inverse
    temperatures rising geometrically from the hottest of ``betas`` (``betas[-1]``) to 1, one
    sweep each. Replica ``i`` is ``copy(state)`` taken after the last sweep at a temperature
    not colder than its own (``beta <= betas[i]``); the coldest is the trajectory's end. The
    path's length does not depend on the ladder, and it is the length that matters: on CCLE
    IC50 rank 3, from 0.05, 800 sweeps ended in the posterior's narrow mode in 4 of 100 runs
    (as did 100 sweeps at each of 8 rungs), 2000 sweeps in 0 of 100, and quenched starts in
    about 40 of 100 (``benchmarks/investigations/annealed_start.py``;
    ``benchmarks/RESULTS.md`` §3.5).

    Examples
    --------
    >>> seen = []
    >>> def record(state, beta):  # a stand-in sweep: counts itself and records beta
    ...     state[0] += 1
    ...     seen.append(round(float(beta), 3))
    >>> annealed_start([0], [1.0, 0.5, 0.25], 5, record, list)
    [[5], [3], [1]]
    >>> seen
    [0.25, 0.354, 0.5, 0.707, 1.0]
    """
    betas = np.asarray(betas, dtype=float)
    path = np.geomspace(betas[-1], 1.0, int(n_sweeps))
    after = np.append(path[1:], np.inf)  # the next sweep's beta
    replicas = [None] * betas.size
    i = betas.size - 1
    for b, b_next in zip(path, after, strict=True):
        sweep(state, b)
        while i >= 0 and betas[i] < b_next:
            replicas[i] = copy(state)
            i -= 1
    while i >= 0:  # n_sweeps == 0: every replica is the state itself
        replicas[i] = copy(state)
        i -= 1
    return replicas


def pilot_ladder(path, rng, *, n_particles=20, cess=0.9, min_rungs=8, max_rungs=200,
                 max_barrier=math.inf):
    """A ladder from a short adaptive SMC along ``path``: about ``2 Lambda + 1`` rungs.

    The SMC's steps lose equal conditional ESS, so each carries about the same barrier: at
    CESS fraction ``c``, ``delta b sd(l') ~ sqrt(1 / c - 1)`` and the rejection rate of a step
    ``~ delta b sd(l') / sqrt(pi)`` (Syed et al. 2022, Sec. 4). The ladder takes ``2 Lambda +
    1`` rungs evenly spread over the schedule's steps (swap rate about 1/2, the most round
    trips per sweep), clipped to ``[min_rungs, max_rungs]``.

    ``max_barrier``: the SMC stops once its steps carry more than this barrier (a caller that
    only needs to know whether the path is shorter than another's); the result is then
    ``(None, inf)``.
    """
    per_step = math.sqrt(1.0 / cess - 1.0) / math.sqrt(math.pi)
    max_steps = 100_000 if not math.isfinite(max_barrier) else max(
        1, math.ceil(max_barrier / per_step))
    try:
        run = smc(path, path.draw, int(n_particles), rng, cess=cess, n_moves=1,
                  max_steps=max_steps)
    except TooManySteps:
        if math.isfinite(max_barrier):
            return None, math.inf
        raise
    steps = run.betas.size - 1
    lam = steps * per_step
    n = int(np.clip(math.ceil(2.0 * lam) + 1, min_rungs, max_rungs))
    x = np.linspace(0.0, steps, n)
    b = np.interp(x, np.arange(steps + 1), run.betas)
    b[0], b[-1] = 0.0, 1.0
    b = np.maximum.accumulate(b)
    b = np.unique(b)
    return b[::-1].copy(), lam
