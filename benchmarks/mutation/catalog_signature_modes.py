"""Mutations of the several-starts extraction of the signatures (bnmfzoo.signatures.modes): the
log joint density, the choice of the chain and the consensus start."""

from benchmarks.mutation._harness import Mutation

_MODES = "bnmfzoo/signatures/modes.py"
_T = "tests/signatures/test_signature_modes.py::"
_JOINT = _T + "test_log_joint_is_the_sum_of_the_models_log_densities"
_CHOICE = _T + "test_best_mode_keeps_the_chain_of_highest_log_joint"
_CONSENSUS = _T + "test_consensus_start_recovers_separated_signatures"
_SEED = _T + "test_best_mode_same_seed_same_draws_and_sampled_chains_are_scored"

MUTATIONS = [
    Mutation(
        id="sigmodes-joint-no-dirichlet-term", path=_MODES,
        old="                    + ((alpha - 1.0) * np.log(T)).sum())",
        new="                    + 0.0)",
        tests=(_JOINT,),
        why="the Dirichlet prior of the signatures loses its (alpha - 1) log T term: modes of a "
            "sparse prior are compared as if it were uniform"),
    Mutation(
        id="sigmodes-joint-gamma-rate-sign", path=_MODES,
        old="                     - bV[None, :] * V).sum())",
        new="                     + bV[None, :] * V).sum())",
        tests=(_JOINT,),
        why="the exposures' Gamma prior with the rate term's sign flipped: large exposures "
            "rewarded"),
    Mutation(
        id="sigmodes-joint-drops-mu", path=_MODES,
        old="lp = float((Y * np.log(mu)).sum() - mu.sum() - const_y)",
        new="lp = float((Y * np.log(mu)).sum() - const_y)",
        tests=(_JOINT, _CHOICE),
        why="the Poisson log-likelihood without its -mu term: scaled-up fits win"),
    Mutation(
        id="sigmodes-argmin", path=_MODES,
        old="chosen = int(np.argmax(means))",
        new="chosen = int(np.argmin(means))",
        tests=(_CHOICE, _SEED),
        why="the chain of the lowest log joint kept: the blended mode reported"),
    Mutation(
        id="sigmodes-consensus-one-cluster", path=_MODES,
        old="cent = np.array([sigs[labels == k].mean(axis=0) for k in range(K)])",
        new="cent = np.array([sigs[labels == 0].mean(axis=0) for k in range(K)])",
        tests=(_CONSENSUS,),
        why="every start signature the mean of one cluster: the consensus start has K copies "
            "of one signature"),
]
