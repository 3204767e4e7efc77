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
        old="    adapter = reference_adapter(family, local, n_leap)\n    moves = getattr",
        new="    adapter = reference_adapter(family)\n    moves = getattr",
        tests=(_QUAD,),
        why="the reference-path SMC ignores its local moves (the sweep alone)"),
    Mutation(
        id="reference-smc-population-mode-off", path=_RP,
        old="    if moves is not None:\n        moves.per_temperature()\n",
        new="",
        tests=(_QUAD,),
        why="the SMC's HMC step adapted by the chain within temperatures, not set per "
            "temperature from the population"),
    Mutation(
        id="reference-pt-smc-without-moves", path=_RT,
        old="                              local=pt_local, n_leap=pt_leap, **fit)",
        new="                              **fit)",
        tests=(_ROUTE,),
        why="check='reference_pt' gives the local moves to the PT only, not to the SMC"),
]
