"""Mutations of the compressive prior's rank posterior (``bnmfzoo/signatures/compressive.py``),
of its conjugate step in the signatures' Gibbs sweep (``bnmfzoo/signatures/_gibbs.py``) and of
the random compression shape's update (``bnmfzoo/signatures/_shape.py``)."""

from benchmarks.mutation._harness import Mutation

_GIBBS = "bnmfzoo/signatures/_gibbs.py"
_COMP = "bnmfzoo/signatures/compressive.py"
_T = "tests/signatures/test_signature_compressive.py"
_EXACT = f"{_T}::test_compressive_step_targets_the_posterior_of_mu"
_SHAPE = "bnmfzoo/signatures/_shape.py"
_S = "tests/signatures/test_signature_shape.py"
_DENS = f"{_S}::test_shape_log_density_is_the_collapsed_conditional"
_GEW = f"{_S}::test_sweep_with_a_random_shape_keeps_the_prior"
_NODATA = f"{_S}::test_shape_without_data_targets_its_marginal"
_C = "tests/signatures/test_signature_strength.py"
_C_NODATA = f"{_C}::test_random_a_with_a_fixed_strength_targets_its_marginal_without_data"
_C_GEW = f"{_C}::test_sweep_with_a_random_shape_and_a_fixed_strength_keeps_the_prior"
_R = "tests/signatures/test_signature_convergence.py"

MUTATIONS = [
    Mutation(
        id="compressive-mu-shape-without-exposures", path=_GIBBS,
        old="                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0 + N * a_c, 1.0), "
            "1e-300)\n",
        new="                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0, 1.0), 1e-300)\n",
        tests=(_EXACT,),
        why="the inverse-gamma conditional of mu_k forgets the N exposures' Gamma shapes: "
            "mu_k is drawn far too large"),
    Mutation(
        id="compressive-mu-scale-shape-one", path=_GIBBS,
        old="                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0 + N * a_c, 1.0), "
            "1e-300)\n",
        new="                mu[k] = max((b0 + tot) / np.random.gamma(a0 + N * a_c, 1.0), "
            "1e-300)\n",
        tests=(_EXACT,),
        why="the scale of mu_k's conditional uses sum V instead of a sum V (right only for "
            "a = 1, the default)"),
    Mutation(
        id="compressive-exposure-rate-without-mu", path=_GIBBS,
        old="                                                   1.0 / (bV[n] + rk[k] + 1.0)), "
            "1e-300)\n",
        new="                                                   1.0 / (bV[n] + 1.0)), 1e-300)\n",
        tests=(_EXACT,),
        why="the exposures' Gamma rate forgets a / mu_k: the compressive prior no longer "
            "reaches the exposures"),
    Mutation(
        id="compressive-rate-stale-after-mu", path=_GIBBS,
        old="                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0 + N * a_c, 1.0), "
            "1e-300)\n                rk[k] = a_c / mu[k]\n",
        new="                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0 + N * a_c, 1.0), "
            "1e-300)\n",
        tests=(_EXACT,),
        why="the exposures' rate a / mu_k is not refreshed after mu_k is drawn: the next "
            "sweep uses the starting mu for ever"),
    Mutation(
        id="compressive-ess-pooled-draws", path=_COMP,
        old="        ess = float(min(max(ess, 1.0), total))\n",
        new="        ess = float(total)\n",
        tests=(f"{_T}::test_table_errors_grow_when_chains_disagree",),
        why="the Monte-Carlo error uses the number of draws, not their effective number: "
            "chains that disagree look certain"),
    Mutation(
        id="compressive-unvisited-rank-zero", path=_COMP,
        old="            rows.append((K, math.nan, 0.0, 1.0 - (1.0 - level) ** (1.0 / ess), 0, "
            "ess,\n",
        new="            rows.append((K, 0.0, 0.0, 0.0, 0, ess,\n",
        tests=(f"{_T}::test_table_errors_grow_when_chains_disagree",),
        why="a rank no draw visits is reported probability 0, not an upper bound"),
    Mutation(
        id="compressive-active-at-epsilon", path=_COMP,
        old="    return (np.asarray(mu) > np.asarray(multiple)[..., None] * epsilon)"
            ".sum(axis=-1)\n",
        new="    return (np.asarray(mu) > epsilon).sum(axis=-1)\n",
        tests=(f"{_T}::test_active_counts_rule",),
        why="active at mu_k > epsilon: about half the compressed signatures count as active"),
    Mutation(
        id="compressive-draws-all-columns", path=_COMP,
        old="        T_draws[i], V_draws[i] = Ts[c][g][:, act], Vs[c][g][act]\n",
        new="        T_draws[i], V_draws[i] = Ts[c][g][:, :best], Vs[c][g][:best]\n",
        tests=(f"{_T}::test_two_signatures_found_with_their_profiles",),
        why="the signatures at the most probable rank are the first columns, not the active "
            "ones"),
    Mutation(
        id="signatures-budget-never-checked", path=_GIBBS,
        old="        if _DEADLINE[0] is not None and time.process_time() > _DEADLINE[0]:\n",
        new="        if _DEADLINE[0] is not None and time.process_time() > _DEADLINE[0] + 1e9:\n",
        tests=("tests/signatures/test_signature_budget.py::"
               "test_sweeps_stop_at_the_first_chunk_boundary_after_the_deadline",
               "tests/signatures/test_signature_budget.py::"
               "test_too_small_a_budget_stops_the_compressive_run_early"),
        why="the CPU budget is never checked between chunks: a too-small budget_s runs the "
            "whole compressive run (and the alternatives) instead of stopping early"),
    Mutation(
        id="shape-missing-jacobian", path=_SHAPE,
        old="    lp = c0 * eta - d0 * a\n",
        new="    lp = (c0 - 1.0) * eta - d0 * a\n",
        tests=(_DENS, _GEW),
        why="the slice sampler on log a forgets the Jacobian: a is drawn from its density in a, "
            "not in log a (too small)"),
    Mutation(
        id="shape-without-mu-prior", path=_SHAPE,
        old="            lp -= (aN + 2.0) * math.log(mu[k]) + epsilon * aN / mu[k]\n",
        new="            lp -= 0.0\n",
        tests=(_DENS, _GEW),
        why="a's conditional forgets that mu_k's inverse-gamma prior depends on a"),
    Mutation(
        id="shape-without-source-lgamma", path=_SHAPE,
        old="                lp += math.lgamma(a + s) - lga\n",
        new="                lp += 0.0\n",
        tests=(_DENS, _GEW),
        why="the Gamma-Poisson marginal of the sources' sums loses Gamma(a + s) / Gamma(a)"),
    Mutation(
        id="shape-slice-shrinks-wrong-side", path=_SHAPE,
        old="        if eta < eta0:\n            left = eta\n",
        new="        if eta > eta0:\n            left = eta\n",
        tests=(f"{_S}::test_shape_slice_step_keeps_its_conditional",),
        why="the slice's shrinkage cuts the side holding the current point"),
    Mutation(
        id="shape-mu-prior-stale", path=_SHAPE,
        old="        comp[2], comp[3] = a_c * N + 1.0, comp[7] * a_c * N\n",
        new="        pass\n",
        tests=(_GEW, _NODATA),
        why="after a is drawn, mu's prior InvGamma(a N + 1, epsilon a N) keeps the starting a"),
    Mutation(
        id="shape-exposures-keep-old-shape", path=_GIBBS,
        old="                a_c = shape_step(comp, s_nk, mu, cr, rk, N)\n"
            "                aV, a0, b0 = a_c, comp[2], comp[3]\n",
        new="                a_c = shape_step(comp, s_nk, mu, cr, rk, N)\n"
            "                a0, b0 = comp[2], comp[3]\n",
        tests=(_GEW, _NODATA),
        why="the Poisson sweep's exposures keep the starting shape after a is drawn"),
    Mutation(
        id="shape-nb-rate-ignores-theta", path=_GIBBS,
        old="            a_c = shape_step(comp, s_nk, mu, C, rk, N)\n",
        new="            a_c = shape_step(comp, s_nk, mu, C * 0.0 + 1.0, rk, N)\n",
        tests=(_GEW,),
        why="the negative-binomial sweep's update of a uses the Poisson rate 1 in place of "
            "sum_d theta_dn T_dk for the exposures integrated out"),
    Mutation(
        id="strength-ignored", path=_COMP,
        old="    cs = a0 if strength is None else float(strength)  # the compression strength\n",
        new="    cs = a0  # the compression strength\n",
        tests=(f"{_C}::test_strength_sets_the_kernels_mu_prior",),
        why="strength= is accepted but mu's prior stays InvGamma(a N + 1, epsilon a N)"),
    Mutation(
        id="strength-mu-prior-follows-a", path=_SHAPE,
        old="    follow = not (comp.shape[0] >= 9 and comp[8] > 0.0)\n",
        new="    follow = True\n",
        tests=(_C_NODATA, _C_GEW),
        why="with a fixed strength, the random a's step still treats mu's prior as following "
            "a, and re-sets it after each draw of a"),
    Mutation(
        id="strength-mu-prior-refreshed", path=_SHAPE,
        old="    if follow:\n        comp[2], comp[3] = a_c * N + 1.0, comp[7] * a_c * N\n",
        new="    if True:\n        comp[2], comp[3] = a_c * N + 1.0, comp[7] * a_c * N\n",
        tests=(_C_NODATA, _C_GEW),
        why="the fixed strength's mu-prior is overwritten by InvGamma(a N + 1, epsilon a N) "
            "after the first draw of a"),
    Mutation(
        id="strength-logpost-keeps-mu-prior", path=_SHAPE,
        old="        if follow:\n            lp -= (aN + 2.0) * math.log(mu[k])",
        new="        if True:\n            lp -= (aN + 2.0) * math.log(mu[k])",
        tests=(f"{_C}::test_shape_log_density_with_a_fixed_strength", _C_NODATA),
        why="a's conditional keeps the a-dependent factor of mu's prior although the prior is "
            "fixed by the strength (half of it: the normalising constant is dropped)"),
    Mutation(
        id="strength-comp-uses-a", path=_SHAPE,
        old="    return np.array([1.0, a, c * N + 1.0, eps * c * N, 1.0, shape[1], shape[2], "
            "eps, c])\n",
        new="    return np.array([1.0, a, a * N + 1.0, eps * a * N, 1.0, shape[1], shape[2], "
            "eps, c])\n",
        tests=(_C_NODATA, _C_GEW),
        why="the kernels' state puts the starting a in mu's prior in place of the strength"),
    Mutation(
        id="strength-cutoff-ignored", path=_COMP,
        old="    if strength is not None:\n        return float(active_cutoffs(",
        new="    if False:\n        return float(active_cutoffs(",
        tests=(f"{_C}::test_strength_activity_cutoff_and_result",),
        why="a small strength widens mu's prior but the activity cutoff stays 1.5 epsilon: "
            "unused signatures count as active"),
    Mutation(
        id="strength-charge-without-exponent", path=_COMP,
        old="    return float(-(log_comp + a * N * math.log(m) + a * N))\n",
        new="    return float(-(log_comp + a * N * math.log(m)))\n",
        tests=(f"{_C}::test_compression_charge_against_quadrature",),
        why="the plain prior's exp(-a S / m) = exp(-a N) is dropped from the charge"),
    Mutation(
        id="rhat-note-never", path=_COMP,
        old="    if rhat > RHAT_LIMIT:\n",
        new="    if rhat > 10 * RHAT_LIMIT:\n",
        tests=(f"{_R}::test_a_weak_compression_still_compressing_is_flagged",),
        why="the note stays silent when the chains' counts still drift (R-hat about 2)"),
    Mutation(
        id="rhat-unsplit-chains", path=_COMP,
        old="        value = float(azs.rhat(counts, method=\"rank\"))\n",
        new="        value = float(azs.rhat(counts, method=\"identity\"))\n",
        tests=(f"{_R}::test_counts_rhat_cases",),
        why="the classic R-hat without splitting the chains: a drift that every chain shares "
            "(all still compressing from the same start) is not seen"),
    Mutation(
        id="rhat-stuck-apart-is-fine", path=_COMP,
        old="        return math.inf  # every half-chain constant but not all equal: no mixing at "
            "all\n",
        new="        return 1.0  # every half-chain constant but not all equal: no mixing at all\n",
        tests=(f"{_R}::test_counts_rhat_cases",),
        why="chains stuck at different counts (no within-chain variance) count as converged"),
    Mutation(
        id="capacity-note-never", path=_COMP,
        old="at_capacity=float(np.mean(counts >= k_max))",
        new="at_capacity=float(np.mean(counts > k_max))",
        tests=("tests/signatures/test_signature_compressive.py::"
               "test_note_says_when_draws_use_every_signature_of_the_overfitted_model",),
        why="draws that fill the overfitted model are not reported: P(K) is silently cut off "
            "at k_max"),
]
