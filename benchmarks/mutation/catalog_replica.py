"""Mutations of the generic replica exchange (``bnmfzoo/inference/tempering/``): the swap ratio,
the tempered sweep of each rung, the bookkeeping of states, log-likelihoods and labels, round
trips, and the ladder frozen after tuning. Each is caught by a fast test of the generic core
(a toy family with exact tempered marginals, an exact round-trip count) or of the PyMC glue."""

from benchmarks.mutation._harness import Mutation

_LADDER = "bnmfzoo/inference/tempering/_ladder.py"
_EXCH = "bnmfzoo/inference/tempering/_exchange.py"
_STEP = "bnmfzoo/inference/tempering/step.py"
_GEN = "tests/tempering/test_replica_generic.py"
_EXACT = f"{_GEN}::test_exchange_keeps_exact_tempered_marginals_and_rejects_a_wrong_ratio"
_TRIPS = f"{_GEN}::test_round_trips_are_counted_exactly"

MUTATIONS = [
    Mutation(
        id="replica-swap-beta-difference-flipped", path=_LADDER,
        old="log_ratio = (betas[i] - betas[i + 1]) * (logliks[i + 1] - logliks[i])",
        new="log_ratio = (betas[i + 1] - betas[i]) * (logliks[i + 1] - logliks[i])",
        tests=(_EXACT,
               "tests/tempering/test_replica_exchange.py::"
               "test_swap_pass_preserves_exact_tempered_marginals"),
        why="wrong acceptance ratio: the sign of the beta difference flipped, so states of low "
            "likelihood are carried down to beta = 1"),
    Mutation(
        id="replica-every-rung-swept-at-beta-one", path=_EXCH,
        old="family.sweep(state, beta, rng)",
        new="family.sweep(state, 1.0, rng)",
        tests=(_EXACT,),
        why="a tempered term applied at beta = 1: every replica is swept with the untempered "
            "kernel while the swaps assume the tempered targets"),
    Mutation(
        id="replica-cold-swept-at-hottest-beta", path=_EXCH,
        old="enumerate(zip(replicas.states, betas, strict=True))",
        new="enumerate(zip(replicas.states, betas[::-1], strict=True))",
        tests=(_EXACT,),
        why="states paired with the wrong rungs: the cold replica is swept at the hottest beta"),
    Mutation(
        id="replica-swap-states-not-logliks", path=_LADDER,
        old="            logliks[i], logliks[i + 1] = logliks[i + 1], logliks[i]\n",
        new="",
        tests=("tests/tempering/test_replica_exchange.py::test_swap_pass_accepts_with_the_metropolis_ratio",),
        why="stale sufficient statistic: states are swapped but their log-likelihoods stay, so "
            "the cold chain's recorded log-likelihood (and a later pass) use another state's"),
    Mutation(
        id="replica-labels-do-not-follow-states", path=_EXCH,
        old="        labels[i], labels[i + 1] = labels[i + 1], labels[i]",
        new="        labels[i], labels[i + 1] = labels[i], labels[i + 1]",
        tests=(_TRIPS,),
        why="labels left behind by a swap: cold_label and round_trips count nothing"),
    Mutation(
        id="replica-round-trip-hot-end-off-by-one", path=_EXCH,
        old="cold, hot = self.labels[0], self.labels[-1]",
        new="cold, hot = self.labels[0], self.labels[1]",
        tests=(f"{_GEN}::test_no_round_trip_without_the_hot_end",),
        why="off-by-one index: a round trip counted when a label reaches the second rung, not "
            "the hottest"),
    Mutation(
        id="replica-ladder-tuned-after-tuning", path=_STEP,
        old="betas = self.tuner.update(prob, self.betas, tune=tune, adapt=self.adapt,",
        new="betas = self.tuner.update(prob, self.betas, tune=True, adapt=self.adapt,",
        tests=("tests/tempering/test_replica_step.py::test_ladder_is_frozen_after_tuning",),
        why="the ladder keeps changing during the recorded draws: not a fixed Markov kernel"),
    Mutation(
        id="replica-n-sweeps-ignored", path=_EXCH,
        old="for _ in range(n_sweeps):",
        new="for _ in range(1):",
        tests=(f"{_GEN}::test_n_sweeps_sweeps_each_replica_at_its_own_beta_and_keeps_the_"
               "marginals",),
        why="n_sweeps silently ignored: one sweep per swap whatever the user asked"),
]
