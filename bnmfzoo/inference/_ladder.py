"""Temperature ladders of replica exchange, shared by the Gaussian and binary wings (no PyMC).

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

__all__ = ["geometric_ladder", "check_ladder", "swap_pass", "retune_ladder", "LadderTuner",
           "ladder_stats", "annealed_start", "check_anneal_start"]


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


def swap_pass(states, betas, logliks, rng, parity):
    """Propose swaps of neighbouring replicas ``(i, i + 1)`` for ``i % 2 == parity``, in place.

    ``states`` and ``logliks`` are lists indexed by temperature (``betas[i]``); an accepted
    swap exchanges ``states[i]`` with ``states[i + 1]`` (and their log-likelihoods).

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
        log_ratio = (betas[i] - betas[i + 1]) * (logliks[i + 1] - logliks[i])
        prob[i] = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
        if log_ratio >= 0 or rng.random() < prob[i]:
            accepted[i] = True
            states[i], states[i + 1] = states[i + 1], states[i]
            logliks[i], logliks[i + 1] = logliks[i + 1], logliks[i]
    return prob, accepted


def retune_ladder(betas, rejection):
    """New ladder with equal estimated rejection rates (Syed et al. 2022, Algorithm 4).

    ``rejection[i]`` estimates the swap rejection rate between ``betas[i]`` and ``betas[i+1]``.
    The communication barrier ``Lambda`` (cumulative rejection from the hottest replica) is
    interpolated in ``beta`` by a monotone cubic and the new ladder puts equal barrier between
    neighbours; ``betas[0] = 1`` and the hottest ``beta`` are kept.

    Examples
    --------
    >>> b = retune_ladder(np.array([1.0, 0.5, 0.1]), np.array([0.0, 0.6]))
    >>> bool(b[0] == 1.0 and b[-1] == 0.1 and 0.1 < b[1] < 0.5)
    True
    """
    betas = np.asarray(betas, dtype=float)
    n = betas.size
    if n < 3:
        return betas.copy()
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
    ladder is retuned from the round's rejection rates (:func:`retune_ladder`).
    """

    round_length: int = 16
    step_in_round: int = 0
    rejection_sum: np.ndarray | None = None
    proposals: np.ndarray | None = None
    rounds: int = 0
    reported: bool = False

    def update(self, prob, betas, *, tune, adapt, where):
        """One step's bookkeeping; returns the ladder to use next.

        While tuning, record the swap probabilities ``prob`` and (``adapt``, more than two
        rungs) retune at the end of a round. At the first step after tuning, warn once
        (:meth:`report`) if some neighbours almost never swapped on the final ladder.
        """
        if len(betas) < 2:
            return betas
        if tune:
            self.record(prob)
            return self.maybe_retune(betas) if adapt and len(betas) > 2 else betas
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
            warnings.warn(
                f"{where}: after tuning, neighbouring temperatures {pairs} swapped with mean "
                f"probability below {threshold} (over the last {int(self.proposals.max())} "
                f"proposals each): states hardly move along the ladder, so the replicas add "
                f"little. The tempered log density grows with the number of observed entries, "
                f"so large data need rungs closer together: more replicas (n_replicas) or a "
                f"beta_min nearer 1.", UserWarning, stacklevel=2)

    def record(self, prob):
        """Add one step's acceptance probabilities (NaN = not proposed)."""
        if self.rejection_sum is None:
            self.rejection_sum = np.zeros(prob.size)
            self.proposals = np.zeros(prob.size)
        seen = ~np.isnan(prob)
        self.rejection_sum[seen] += 1.0 - prob[seen]
        self.proposals[seen] += 1.0
        self.step_in_round += 1

    def maybe_retune(self, betas):
        """Return the retuned ladder at the end of a round, else ``betas`` unchanged."""
        if self.step_in_round < self.round_length or self.proposals is None:
            return betas
        rejection = self.rejection_sum / np.maximum(self.proposals, 1.0)
        new = retune_ladder(betas, rejection)
        self.rounds += 1
        self.round_length *= 2
        self.step_in_round = 0
        self.rejection_sum[:] = 0.0
        self.proposals[:] = 0.0
        return new


def ladder_stats(sample_stats):
    """Stack the per-pair stats of a replica-exchange run.

    Returns ``(betas, swap_rate)``: the final ladder of each chain (chain, temperature) and
    the mean acceptance probability of each neighbour pair over the draws (chain, pair).

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
    rates = [np.nanmean(np.asarray(sample_stats[f"swap_prob_{i}"]), axis=1)
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
    about 40 of 100 (``benchmarks/speed/annealed_start.py``; ``benchmarks/RESULTS.md`` §3.5).

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
