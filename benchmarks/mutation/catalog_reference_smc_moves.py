"""Mutations of the reference-path SMC's local moves and their per-temperature HMC step
(``bnmfzoo/inference/counts/tempering/_step_rule.py``, the SMC glue of ``_local.py``, the
plumbing in ``reference_path.py`` and ``reference_tempering.py``). Each is caught by a fast test
of ``tests/tempering/test_reference_smc_moves.py``: the rule against its model, the step fixed
within a temperature and set between, exact draws kept at every temperature, log Z against
quadrature with the moves, the ``reference_pt`` route running the moves in both estimators."""

from benchmarks.mutation._harness import Mutation

_RULE = "bnmfzoo/inference/counts/tempering/_step_rule.py"
_LOC = "bnmfzoo/inference/counts/tempering/_local.py"
_RP = "bnmfzoo/inference/reference_path.py"
_RT = "bnmfzoo/inference/reference_tempering.py"
_T = "tests/tempering/test_reference_smc_moves.py::"
_MODEL = _T + "test_step_rule_hits_the_target_of_its_model"
_FIXED = _T + "test_step_is_fixed_within_a_temperature_and_set_between"
_KEEP = _T + "test_each_temperature_keeps_its_rung"
_QUAD = _T + "test_smc_with_moves_matches_quadrature"
_ROUTE = _T + "test_reference_pt_route_moves_both_estimators"
# the large-matrix route (HMC only, dense kernel, modes by restarts)
_DENSE = "bnmfzoo/inference/counts/tempering/_hmc_dense.py"
_HK = "bnmfzoo/inference/counts/_hmc_kernels.py"  # the shared gradients
_LR = "bnmfzoo/inference/large_route.py"
_L = "tests/tempering/test_large_route.py::"
_LKEEP = _L + "test_hmc_only_moves_keep_the_rung"
_LCELL = _L + "test_dense_kernel_matches_the_cell_loop"
_LQUAD = _L + "test_large_route_estimators_match_quadrature"
_LCHOICE = _L + "test_route_choice"
_LEND = _L + "test_large_mode_masses_says_what_it_did_not_check"
_LKL = _L + "test_kl_start_moves_towards_the_data"
_LZERO = _L + "test_kl_start_keeps_a_zero_column_at_its_prior_shape"

MUTATIONS = [
    Mutation(
        id="step-rule-inverted", path=_RULE,
        old="return log_eps + min(max(0.5 * math.log(z_target / z), lo), hi)",
        new="return log_eps + min(max(0.5 * math.log(z / z_target), lo), hi)",
        tests=(_MODEL, _FIXED),
        why="the step grows when the acceptance is too low and shrinks when it is too high"),
    Mutation(
        id="step-rule-without-square-root", path=_RULE,
        old="return log_eps + min(max(0.5 * math.log(z_target / z), lo), hi)",
        new="return log_eps + min(max(math.log(z_target / z), lo), hi)",
        tests=(_MODEL,),
        why="the acceptance model's eps^2 read as eps: every correction squared"),
    Mutation(
        id="smc-step-adapted-within-temperature", path=_LOC,
        old="        self.freeze()\n        self.population = True",
        new="        self.population = True",
        tests=(_FIXED,),
        why="the chain's own adaptation left on in SMC: the step changes after every "
            "particle's transition, so the move at one temperature is no fixed kernel"),
    Mutation(
        id="smc-step-never-updated", path=_LOC,
        old="            self.log_eps = next_log_step(self.log_eps, acc, self.target)\n",
        new="",
        tests=(_FIXED,),
        why="the population's acceptance recorded but never used: the initial step forever"),
    Mutation(
        id="smc-step-carried-into-next-run", path=_LOC,
        old="        if beta < self._temp:  # a new run\n            self.reset()\n"
            "        elif self._t_n:",
        new="        if self._t_n:",
        tests=(_FIXED,),
        why="a new run starts from the previous run's last step: the runs whose spread is "
            "the error are no longer independent"),
    Mutation(
        id="smc-acceptance-counted-stale", path=_LOC,
        old="            self._t_n += 1\n            self._t_sum += acc\n",
        new="            self._t_n += 1\n            self._t_sum += 1.0\n",
        tests=(_FIXED,),
        why="every transition counted as accepted: the step only grows"),
    Mutation(
        id="reference-smc-local-dropped", path=_RP,
        old="    adapter = reference_adapter(family, local, n_leap)\n    cop = ",
        new="    adapter = reference_adapter(family)\n    cop = ",
        tests=(_QUAD,),
        why="the reference-path SMC ignores its local moves (the sweep alone)"),
    Mutation(
        id="reference-smc-population-mode-off", path=_RP,
        old="            ad.moves.per_temperature()\n",
        new="            pass\n",
        tests=(_QUAD,),
        why="the SMC's HMC step adapted by the chain within temperatures, not set per "
            "temperature from the population"),
    Mutation(
        id="reference-pt-smc-without-moves", path=_RT,
        old="                              local=pt_local, n_leap=pt_leap, early_stop=EARLY_STOP,",
        new="                              early_stop=EARLY_STOP,",
        tests=(_ROUTE,),
        why="check='reference_pt' gives the local moves to the PT only, not to the SMC"),
    Mutation(
        id="dense-hmc-gamma-rate-sign", path=_HK,
        old="    gA[:, :] = aA - rA * A + (R @ Wt) * A",
        new="    gA[:, :] = aA + rA * A + (R @ Wt) * A",
        tests=(_LCELL,),
        why="the Gamma term's sign in the gradient (at b < 1 mostly the reference's rate): the "
            "kernel stays exact through the Metropolis test but its trajectories are wrong"),
    Mutation(
        id="dense-hmc-likelihood-power-dropped", path=_DENSE,
        old="    lp += beta * like",
        new="    lp += like",
        tests=(_LKEEP, _LCELL),
        why="the density tests the full likelihood at every b: the move targets the posterior, "
            "not the rung"),
    Mutation(
        id="dense-hmc-kinetic-without-mass", path=_DENSE,
        old="    k1 = 0.5 * (np.sum(imA * pA * pA) + np.sum(imWt * pWt * pWt))",
        new="    k1 = 0.5 * (np.sum(pA * pA) + np.sum(imWt * pWt * pWt))",
        tests=("tests/tempering/test_reference_hmc.py::"
               "test_small_steps_conserve_the_hamiltonian[True]",),
        why="the dense move's final kinetic energy of A without the inverse mass: the "
            "Hamiltonian's change, and so the acceptance, is wrong"),
    Mutation(
        id="dense-hmc-stale-density", path=_DENSE,
        old="    lp = dense_log_density(qA, qWt, M, X, Of, aA, rA, aWt, rWt, beta)",
        new="    lp = dense_log_density(tA, tWt, M, X, Of, aA, rA, aWt, rWt, beta)",
        tests=(_LKEEP,),
        why="the proposal's density read at the old factors (stale): the Metropolis test no "
            "longer sees the prior terms' change"),
    Mutation(
        id="hmc-move-result-stale", path=_LOC,
        old="        if n_hmc:\n            if compiled:\n",
        new="        if False:\n            if compiled:\n",
        tests=(_LKEEP, _LQUAD),
        why="the HMC move's result dropped: the state (and its log-likelihood) stays the old "
            "one, so without the sweep nothing moves A W"),
    Mutation(
        id="hmc-only-above-0.7-without-sweep", path=_LOC,
        old="            hmc_from = HMC_FROM if self.sweep else 0.0",
        new="            hmc_from = HMC_FROM",
        tests=(_LKEEP, _LQUAD),
        why="without the latent-count sweep HMC still runs only at b >= 0.7: below it no move "
            "changes A W"),
    Mutation(
        id="large-route-state-not-updated", path=_LR,
        old="        state.update(A=A, W=W)\n\n    def loglik",
        new="        pass\n\n    def loglik",
        tests=(_LQUAD, _LEND),
        why="the restarts' and fit chains' moves never written back: every draw is the start "
            "(a stale state and log-likelihood)"),
    Mutation(
        id="kl-start-without-prior-shape", path="bnmfzoo/inference/counts/_kl_start.py",
        old="        W = np.maximum((W * (A.T @ R) + aW) / (A.T @ Of + bW), tiny)",
        new="        W = np.maximum((W * (A.T @ R)) / (A.T @ Of + bW), tiny)",
        tests=(_LZERO,),
        why="plain KL updates: a column of zeros underflows to the smallest float, where HMC "
            "in log space cannot leave it"),
    Mutation(
        id="route-choice-inverted", path=_LR,
        old="    faster = cs > ratio * ch",
        new="    faster = ch > ratio * cs",
        tests=(_LCHOICE,),
        why="the large route chosen when the sweep is the faster move"),
]
