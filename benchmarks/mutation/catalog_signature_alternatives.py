"""Mutations of the alternative signature sets with masses (bnmfzoo.signatures.alternatives):
the prior's scale, the orientation of the model, the unknown mass, the ordering and the table."""

from benchmarks.mutation._harness import Mutation

_ALT = "bnmfzoo/signatures/alternatives.py"
_T = "tests/signatures/test_signature_alternatives.py::"
_BOTH = _T + "test_both_factorizations_listed_with_masses"
_TSV = _T + "test_alternatives_tsv_format"
_REST = _T + "test_max_alternatives_sums_the_rest"
_PRIOR = _T + "test_default_prior_rate_matches_the_data_scale"

MUTATIONS = [
    Mutation(
        id="sigalt-prior-rate-inverted", path=_ALT,
        old="        b = a * math.sqrt(K / X.mean())",
        new="        b = a * math.sqrt(X.mean() / K)",
        tests=(_PRIOR,),
        why="the Gamma prior's default rate inverted: the prior centred orders of magnitude "
            "away from the catalogue's scale"),
    Mutation(
        id="sigalt-model-not-transposed", path=_ALT,
        old="    model = poisson(X.T, K, a=float(a), b=float(b))",
        new="    model = poisson(X, K, a=float(a), b=float(b))",
        tests=(_PRIOR,),
        why="the model fitted to samples x channels: the modes' bases are exposures, not "
            "signatures"),
    Mutation(
        id="sigalt-unknown-mass-zero", path=_ALT,
        old="    nan = np.full(n_rows, math.nan)",
        new="    nan = np.zeros(n_rows)",
        tests=(_BOTH, _TSV),
        why="the mass of modes no particle reached reported as 0 instead of unknown"),
    Mutation(
        id="sigalt-order-ascending", path=_ALT,
        old="        order = np.argsort(-tot, kind=\"stable\")",
        new="        order = np.argsort(tot, kind=\"stable\")",
        tests=(_TSV,),
        why="signatures within an alternative ordered by increasing mutations"),
    Mutation(
        id="sigalt-cosine-to-itself", path=_ALT,
        old="        u0 = sigs[0] / np.linalg.norm(sigs[0], axis=1, keepdims=True)",
        new="        u0 = sigs[i] / np.linalg.norm(sigs[i], axis=1, keepdims=True)",
        tests=(_BOTH,),
        why="cosine_to_first compares each alternative with itself: every alternative looks "
            "the same as the first"),
    Mutation(
        id="sigalt-rest-mass-dropped", path=_ALT,
        old="        mass[i] = sum(m[\"mass\"] for m in rest)",
        new="        mass[i] = 0.0",
        tests=(_REST,),
        why="the alternatives beyond max_alternatives lose their mass"),
    Mutation(
        id="sigalt-tsv-unknown-written-zero", path=_ALT,
        old="[\"unknown\" if not np.isfinite(v) else",
        new="[\"0\" if not np.isfinite(v) else",
        tests=(_TSV,),
        why="alternatives.tsv writes an unknown mass as 0"),
    Mutation(
        id="sigalt-budget-never-checked", path=_ALT,
        old="    if need + used <= budget_s:",
        new="    if True:",
        tests=(_T + "test_budget_too_small_says_what_fits",),
        why="the pilot's estimate ignored: an SMC far over budget_s starts anyway"),
    Mutation(
        id="sigalt-next-same-particles", path=_ALT,
        old="        steps.append(f\"twice the particles, n_particles={2 * P} (command line: "
            "--particles \"",
        new="        steps.append(f\"twice the particles, n_particles={P} (command line: "
            "--particles \"",
        tests=(_T + "test_next_step_follows_the_reason",),
        why="the advice repeats the settings that were just tried"),
    Mutation(
        id="sigalt-pilot-times-the-compile", path=_ALT,
        old="    t0 = time.process_time()\n    pilot = smc_mode_masses(",
        new="    t0 = start\n    pilot = smc_mode_masses(",
        tests=(_T + "test_the_budget_pilot_does_not_time_the_first_compile",),
        why="the compile run is timed with the pilot: on a cold cache the cost per particle "
            "is many times too high and fitting budgets are refused"),
]
