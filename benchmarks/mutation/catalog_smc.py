"""Mutations of the adaptive-tempering SMC (``bnmfzoo/inference/tempering/smc.py``): the
incremental weights, the log normalizing constant, the log-likelihoods after a move, and the
waste-free population. Each is caught by a fast test against exact answers (a bimodal toy with
local moves, whose log Z and mode masses are known in closed form)."""

from benchmarks.mutation._harness import Mutation

_SMC = "bnmfzoo/inference/tempering/smc.py"
_T = "tests/tempering/test_smc.py::"
_EXACT = _T + "test_log_z_and_mode_mass_of_a_bimodal_target_are_exact"

MUTATIONS = [
    Mutation(
        id="smc-incremental-weight-sign-flipped", path=_SMC,
        old="        log_w = log_w + inc\n",
        new="        log_w = log_w - inc\n",
        tests=(_EXACT,),
        why="wrong sign in the incremental weight: particles of low likelihood gain weight, so "
            "the mode masses (and every later log Z increment) are wrong"),
    Mutation(
        id="smc-log-z-increment-sign-flipped", path=_SMC,
        old="log_z += float(logsumexp(log_w + inc))",
        new="log_z += float(logsumexp(log_w - inc))",
        tests=(_EXACT,),
        why="wrong sign in the normalizing constant's increment: log Z is biased"),
    Mutation(
        id="smc-stale-loglik-after-move", path=_SMC,
        old="            n_sweeps += N * n_moves\n"
            "            logliks = np.array([_loglik(family, s) for s in states])\n",
        new="            n_sweeps += N * n_moves\n",
        tests=(_EXACT,),
        why="stale log-likelihood after a move (and after resampling): the next weights use the "
            "likelihoods of states the particles no longer hold"),
    Mutation(
        id="smc-waste-free-keeps-only-chain-ends", path=_SMC,
        old="                family.sweep(s, beta, rng)\n            out.append(family.copy(s))",
        new="                family.sweep(s, beta, rng)\n            out.append(family.copy(a))",
        tests=(_T + "test_waste_free_smc_is_exact_too",),
        why="waste-free chains that never move: the population is copies of the ancestors"),
]
