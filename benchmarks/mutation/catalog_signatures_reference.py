"""Mutations of the prior informed by a reference catalogue: the Dirichlet parameter per
signature and channel of the signatures' Gibbs sweeps (``bnmfzoo/signatures/_gibbs.py``) and the
informed prior's parameters (``bnmfzoo/signatures/compressive.py``: ``reference_alpha``,
``reference_concentration``)."""

from benchmarks.mutation._harness import Mutation

_GIBBS = "bnmfzoo/signatures/_gibbs.py"
_COMP = "bnmfzoo/signatures/compressive.py"
_T = "tests/signatures/test_signature_reference.py"
_ONE = f"{_T}::test_one_signature_draws_are_the_conjugate_dirichlet"
_GEWEKE = f"{_T}::test_nb_sweep_keeps_a_per_channel_prior"
_BETA = f"{_T}::test_concentrations_reach_the_median_cosine"
_RUN = f"{_T}::test_the_informed_run_finds_the_reference_signatures_used"

MUTATIONS = [
    Mutation(
        id="reference-poisson-alpha-channel-ignored", path=_GIBBS,
        old="g[d] = np.random.gamma(alpha[d, k] + s_dk[d, k], 1.0)\n",
        new="g[d] = np.random.gamma(alpha[0, k] + s_dk[d, k], 1.0)\n",
        tests=(_ONE,),
        why="the Poisson sweep's Dirichlet step uses the first channel's parameter for every "
            "channel (the informed prior's shape ignored)"),
    Mutation(
        id="reference-nb-proposal-alpha-channel-ignored", path=_GIBBS,
        old="g[d] = np.random.gamma(alpha[d, k] + s_dk[d, k], 1.0 / w[d])",
        new="g[d] = np.random.gamma(alpha[0, k] + s_dk[d, k], 1.0 / w[d])",
        tests=(_GEWEKE,),
        why="the negative-binomial sweep's proposal uses the first channel's parameter for "
            "every channel while its acceptance ratio assumes the per-channel one"),
    Mutation(
        id="reference-nb-alpha-signature-ignored", path=_GIBBS,
        old="A += alpha[d, k] + s_dk[d, k]",
        new="A += alpha[d, 0] + s_dk[d, k]",
        tests=(_GEWEKE,),
        why="the acceptance ratio of the negative-binomial signature step sums the first "
            "signature's parameters for every signature"),
    Mutation(
        id="reference-channels-shuffled", path=_COMP,
        old="    return np.hstack([np.maximum(beta[None, :] * S, ALPHA_FLOOR),\n",
        new="    return np.hstack([np.maximum(beta[None, :] * S[::-1], ALPHA_FLOOR),\n",
        tests=(_BETA, _RUN),
        why="the reference's columns are reversed against the catalogue's channels"),
    Mutation(
        id="reference-concentration-ignored", path=_COMP,
        old="    return np.hstack([np.maximum(beta[None, :] * S, ALPHA_FLOOR),\n",
        new="    return np.hstack([np.maximum(S, ALPHA_FLOOR),\n",
        tests=(_BETA, _RUN),
        why="the informed prior's concentration beta_h is dropped (Dirichlet(s_h): nearly flat)"),
    Mutation(
        id="reference-concentration-one-step", path=_COMP,
        old="        for _ in range(30):\n            mid = (lo + hi) / 2\n",
        new="        for _ in range(1):\n            mid = (lo + hi) / 2\n",
        tests=(_BETA,),
        why="the bisection of the concentration stops after one step"),
    Mutation(
        id="signatures-nb-phi-jacobian-dropped", path=_GIBBS,
        old="    lp = a_p * eta - b_p * phi + D * N * phi * eta\n",
        new="    lp = (a_p - 1.0) * eta - b_p * phi + D * N * phi * eta\n",
        tests=(_GEWEKE,),
        why="the slice sampler of log phi drops the Jacobian of the log: it samples the "
            "dispersion's conditional times 1 / phi (caught by the dispersion's marginal, not "
            "by the signatures')"),
]
