"""The generic replica exchange (``bnmfzoo.inference.tempering``): round trips, a growing
ladder, and exactness of the exchange through the tempered-sweep interface on a toy family.

* Round trips are counted on a ladder whose swaps are always accepted (a constant tempered
  term): under the even-odd scheme the cold state then travels ballistically, so the count is
  known exactly.
* The exchange over a toy family with exact tempered sweeps (``x ~ N(0, 1 / beta)``) keeps each
  position's exact marginal; a wrong swap ratio (sign flipped) is rejected by the same test.
* The ladder grows while tuning when neighbours hardly swap (a Gaussian log-likelihood of many
  terms), every pair then swapping at the target rate, and never after tuning.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from bnmfzoo.inference import ReplicaExchangeGibbs
from bnmfzoo.inference.tempering import ReplicaSet, exchange_step, ladder_stats
from bnmfzoo.inference.tempering._ladder import (
    MIN_SWAP_RATE,
    LadderTuner,
    initial_size,
    retune_ladder,
)
from bnmfzoo.models import exponential_gaussian


class Flat:
    """A family whose tempered term is constant: every swap is accepted."""

    dimension = 1

    def sweep(self, state, beta, rng):
        pass

    def loglik(self, state):
        return 0.0

    def copy(self, state):
        return list(state)


class Normal:
    """``x ~ N(0, 1 / beta)`` exactly at every ``beta`` (tempered term ``-x^2 / 2``)."""

    dimension = 1

    def __init__(self, sign=1.0):
        self.sign = sign

    def sweep(self, state, beta, rng):
        state[0] = rng.normal() / np.sqrt(beta)

    def loglik(self, state):
        return -0.5 * self.sign * state[0] ** 2

    def copy(self, state):
        return list(state)


def test_round_trips_are_counted_exactly():
    """Always-accepted swaps on 3 rungs: the labels at (cold, middle, hot) cycle with period 6,
    [1,0,2], [1,2,0], [2,1,0], [2,0,1], [0,2,1], [0,1,2]. Label 0 is back at the cold end after
    the hot end at step 5, label 1 (first cold at step 1) at 7, label 2 (first cold at step 3)
    at 9, then each every 6 steps. No randomness is consumed."""
    rs = ReplicaSet.new([[0], [1], [2]])
    trips, cold = [], []
    for _ in range(17):
        exchange_step(Flat(), rs, np.array([1.0, 0.5, 0.25]), np.random.default_rng(0))
        trips.append(rs.round_trips)
        cold.append(rs.labels[0])
    assert cold[:6] == [1, 1, 2, 2, 0, 0], cold
    assert trips == [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7], trips
    rs.reset_trips()
    assert rs.round_trips == 0


class StuckHot(Flat):
    """Pair (0, 1) always swaps, pair (1, 2) never: the hottest state's term is far lower."""

    def loglik(self, state):
        return state[0]


def test_no_round_trip_without_the_hot_end():
    """Labels 0 and 1 bounce between the two colder rungs and never reach the hottest one:
    no round trip, however often they return to the cold end."""
    rs = ReplicaSet.new([[0.0], [0.0], [-1e9]])
    for _ in range(20):
        exchange_step(StuckHot(), rs, np.array([1.0, 0.5, 0.25]), np.random.default_rng(0))
    assert rs.labels[2] == 2 and set(rs.labels[:2]) == {0, 1}
    assert rs.round_trips == 0


def _exchange_marginals(sign, n=3000, seed=3):
    betas = np.array([1.0, 0.5, 0.2])
    rng = np.random.default_rng(seed)
    out = np.empty((n, betas.size))
    fam = Normal(sign)
    for s in range(n):
        rs = ReplicaSet.new([[rng.normal() / np.sqrt(b)] for b in betas])
        for _ in range(3):
            exchange_step(fam, rs, betas, rng)
        out[s] = [st[0] for st in rs.states]
    return [stats.kstest(out[:, i] * np.sqrt(b), "norm").pvalue for i, b in enumerate(betas)]


def test_exchange_keeps_exact_tempered_marginals_and_rejects_a_wrong_ratio():
    """Three KS tests at Bonferroni level 0.01 / 3: false-failure rate < 1 %. The wrong swap
    ratio (sign of the tempered term flipped inside the swap only) must give p < 1e-6."""
    assert min(_exchange_marginals(1.0)) > 0.01 / 3

    class Wrong(Normal):
        def loglik(self, state):  # swaps use -l: low-likelihood states sink to beta = 1
            return 0.5 * state[0] ** 2

    betas = np.array([1.0, 0.5, 0.2])
    rng = np.random.default_rng(3)
    out = np.empty((3000, 3))
    for s in range(3000):
        rs = ReplicaSet.new([[rng.normal() / np.sqrt(b)] for b in betas])
        for _ in range(3):
            exchange_step(Wrong(), rs, betas, rng)
        out[s] = [st[0] for st in rs.states]
    p = stats.kstest(out[:, 0], "norm").pvalue
    assert p < 1e-6, p


def test_tuner_grows_the_ladder_where_pairs_do_not_swap():
    tuner = LadderTuner(grow=True, max_replicas=40, round_length=4)
    betas = np.geomspace(1.0, 0.05, 5)
    prob = np.array([0.0, 0.0, 0.6, 0.6])  # two pairs never swap
    for _ in range(4):
        betas = tuner.update(prob, betas, tune=True, adapt=True, where="s")
    # barrier 1 + 1 + 0.4 + 0.4 = 2.8: 2.8 / 0.5 + 1 -> 7 rungs (at most 2 * 5 - 1 = 9)
    assert betas.size == 7 and betas[0] == 1.0 and np.isclose(betas[-1], 0.05)
    assert np.all(np.diff(betas) < 0)
    # pairs that all swap at 0.6 (rejection 0.4 < 1/2): no growth
    tuner = LadderTuner(grow=True, max_replicas=40, round_length=4)
    b = np.geomspace(1.0, 0.05, 5)
    for _ in range(4):
        b = tuner.update(np.full(4, 0.6), b, tune=True, adapt=True, where="s")
    assert b.size == 5
    # an explicit ladder (grow=False) keeps its size
    tuner = LadderTuner(round_length=4)
    b = np.geomspace(1.0, 0.05, 5)
    for _ in range(4):
        b = tuner.update(np.zeros(4), b, tune=True, adapt=True, where="s")
    assert b.size == 5
    assert retune_ladder(np.array([1.0, 0.1]), np.array([1.0]), n=4).size == 4
    assert initial_size(1584, 0.15) == 62


def _X(D=40, N=30, seed=0):
    rng = np.random.default_rng(seed)
    return rng.exponential(size=(D, 2)) @ rng.exponential(size=(2, N)) + \
        0.1 * rng.exponential(size=(D, N))


def test_default_ladder_grows_to_swap_and_is_frozen_after_tuning():
    """Started with 4 rungs (``n_replicas`` not given, ``max_replicas`` 32) the ladder of a
    1200-entry problem grows while tuning until every pair swaps; the final ladder's pairs
    all swap at >= MIN_SWAP_RATE / 2 over the draws (a margin for 200 noisy draws), the ladder
    does not change after tuning, and ``round_trips`` is a non-decreasing int count."""
    with exponential_gaussian(_X(), 2):
        step = ReplicaExchangeGibbs(max_replicas=32, anneal_start=0)
        step.initial_betas = np.geomspace(1.0, 0.05, 4)  # start far too coarse
        idata = pm.sample(draws=200, tune=500, chains=1, step=step, random_seed=2,
                          progressbar=False, compute_convergence_checks=False)
    ss = idata.sample_stats
    betas, rate = ladder_stats(ss)
    n = int(np.isfinite(betas).sum())
    assert 4 < n <= 32, n
    assert np.all(rate[0, : n - 1] >= MIN_SWAP_RATE / 2), rate
    for i in range(n):
        b = ss[f"beta_{i}"].values
        assert np.all(b == b[:, :1])
    trips = ss["round_trips"].values[0]
    assert trips.dtype.kind == "i" and np.all(np.diff(trips) >= 0)


def test_explicit_ladders_are_kept():
    with exponential_gaussian(_X(8, 6), 2) as m:
        assert ReplicaExchangeGibbs(n_replicas=5, model=m).max_replicas == 5
        assert ReplicaExchangeGibbs(betas=[1, 0.5], model=m).n_replicas == 2
        auto = ReplicaExchangeGibbs(model=m)
        assert auto.grow and auto.n_replicas == initial_size(auto.tempered.dimension, 0.05)
        with pytest.raises(ValueError, match="max_replicas"):
            ReplicaExchangeGibbs(max_replicas=1, model=m)


class NormalAR(Normal):
    """``N(0, 1 / beta)`` by an autoregressive kernel (exact, not an independent draw); records
    the ``beta`` of every sweep in ``state[1]``."""

    rho = 0.8

    def sweep(self, state, beta, rng):
        state[0] = self.rho * state[0] + np.sqrt(1 - self.rho**2) * rng.normal() / np.sqrt(beta)
        state[1].append(float(beta))

    def copy(self, state):
        return [state[0], list(state[1])]


def test_n_sweeps_sweeps_each_replica_at_its_own_beta_and_keeps_the_marginals():
    """``n_sweeps`` repeats the sweep of each replica at its own ``beta`` before the swaps;
    ``n_sweeps=1`` is the default's random stream. Exactness: 3000 independent runs of 3 steps
    from exact draws, KS test of each position at Bonferroni level 0.01 / 3 (false-failure
    rate < 1 %); a sweep at the wrong temperature (every replica at ``beta = 1``) gives p < 1e-6
    at the hottest position."""
    betas = np.array([1.0, 0.5, 0.2])
    rs = ReplicaSet.new([[0.0, []] for _ in betas])
    exchange_step(NormalAR(), rs, betas, np.random.default_rng(0), n_sweeps=3)
    assert sorted(tuple(st[1]) for st in rs.states) == sorted((b,) * 3 for b in betas)
    a, b = ([[0.5, []] for _ in betas] for _ in range(2))
    ra, rb = ReplicaSet.new(a), ReplicaSet.new(b)
    ga, gb = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(5):
        exchange_step(NormalAR(), ra, betas, ga)
        exchange_step(NormalAR(), rb, betas, gb, n_sweeps=1)
    assert [s[0] for s in ra.states] == [s[0] for s in rb.states]

    class Cold(NormalAR):  # the mutation: every sweep at beta = 1
        def sweep(self, state, beta, rng):
            super().sweep(state, 1.0, rng)

    def positions(family, seed):
        rng = np.random.default_rng(seed)
        out = np.empty((3000, 3))
        for s in range(3000):
            rs = ReplicaSet.new([[rng.normal() / np.sqrt(b), []] for b in betas])
            for _ in range(3):
                exchange_step(family, rs, betas, rng, n_sweeps=3)
            out[s] = [st[0] for st in rs.states]
        return out

    out = positions(NormalAR(), 5)
    pv = [stats.kstest(out[:, i] * np.sqrt(b), "norm").pvalue for i, b in enumerate(betas)]
    assert min(pv) > 0.01 / 3, pv
    bad = positions(Cold(), 5)
    assert stats.kstest(bad[:, 2] * np.sqrt(0.2), "norm").pvalue < 1e-6
    with exponential_gaussian(_X(8, 6), 2) as m:
        assert ReplicaExchangeGibbs(model=m).n_sweeps == 1
        assert ReplicaExchangeGibbs(n_sweeps=4, model=m).n_sweeps == 4
        for bad_value in (0, 1.5, True):
            with pytest.raises(ValueError, match="n_sweeps"):
                ReplicaExchangeGibbs(n_sweeps=bad_value, model=m)


def test_tempered_sweep_protocol_names_what_a_family_lacks():
    """The protocol is what ``ReplicaExchange`` checks: the test families and the Gaussian
    step's family satisfy it, a family without ``copy`` is refused by name, and only a family
    with ``log_target`` is a ``TemperedPath`` (whose swaps use it)."""
    from bnmfzoo.inference.tempering import TemperedPath, TemperedSweep
    from bnmfzoo.inference.tempering.interface import check_tempered_sweep, log_target_of

    assert isinstance(Normal(), TemperedSweep) and not isinstance(Normal(), TemperedPath)
    with exponential_gaussian(_X(8, 6), 2) as m:
        assert isinstance(ReplicaExchangeGibbs(n_replicas=2, model=m).tempered, TemperedSweep)

    class NoCopy:
        dimension = 1

        def sweep(self, state, beta, rng):
            pass

        def loglik(self, state):
            return 0.0

    with pytest.raises(TypeError, match="NoCopy lacks copy"):
        check_tempered_sweep(NoCopy())

    class Path(Normal):
        def log_target(self, state, beta):
            return beta * self.loglik(state)

    path = Path()
    assert isinstance(path, TemperedPath) and log_target_of(path)([2.0], 0.5) == -1.0
    assert log_target_of(Normal()) is None
