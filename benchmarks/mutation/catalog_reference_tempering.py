"""Mutations of per-mode parallel tempering along the reference path
(``bnmfzoo/inference/reference_tempering.py``) and of the one verdict of the per-mode checks
(``bnmfzoo/inference/_mass_verdict.py``): the stepping-stone terms (sign, the draws of the wrong
rung, the missing ``1 / T``), a stale ``l'`` after the sweeps, the round-trip count, and the
reasons of the verdict (the one-sided comparison with the SMC from the prior, the round-trip
rule); and of the extra local moves of a Poisson rung (HMC on log A, log W in
``bnmfzoo/inference/counts/tempering/_hmc.py``, the group moves and their glue in ``_local.py``
and the reference adapter). Each is caught by a fast test: rank-1 Poisson and
exponential-Gaussian log Z against quadrature, round trips on constructed index paths, the
verdict on constructed inputs, the moves' invariance against exact draws of a rank-1 rung, the
HMC density and gradient against direct computations."""

from benchmarks.mutation._harness import Mutation

_RT = "bnmfzoo/inference/reference_tempering.py"
_PT = "bnmfzoo/inference/tempering/_path_targets.py"
_RUNS = "bnmfzoo/inference/tempering/_runs.py"
_V = "bnmfzoo/inference/_mass_verdict.py"
_T = "tests/tempering/test_reference_tempering.py::"
_POIS = _T + "test_poisson_mode_log_z_matches_quadrature"
_GAUS = _T + "test_gaussian_mode_log_z_matches_quadrature"
_SS = _T + "test_stepping_stone_of_a_gaussian_path"
_TRIPS = _T + "test_round_trips_on_constructed_index_paths"
_VERDICT = _T + "test_per_mode_verdict_each_reason_fires"

_HK = "bnmfzoo/inference/counts/_hmc_kernels.py"  # gradient and leapfrog
_LOC = "bnmfzoo/inference/counts/tempering/_local.py"
_RP = "bnmfzoo/inference/reference_path.py"
_RPO = "bnmfzoo/inference/counts/tempering/_reference_poisson.py"
_BAS = "bnmfzoo/diagnostics/_modes/basins.py"
_DUP = "tests/tempering/test_duplicate_modes.py::"
_H = "tests/tempering/test_reference_hmc.py::"
_INV = _H + "test_moves_leave_the_rung_invariant"
_GRAD = _H + "test_gradient_and_density"
_CONS = _H + "test_small_steps_conserve_the_hamiltonian[False]"
_ADAPT = _H + "test_adapter_runs_the_moves_and_default_is_the_sweep"

MUTATIONS = [
    Mutation(
        id="hmc-jacobian-dropped", path=_HK,
        old="                lp += a[i, k] * t[i, k] - r[i, k] * v\n",
        new="                lp += (a[i, k] - 1.0) * t[i, k] - r[i, k] * v\n",
        tests=(_INV, _GRAD),
        why="the log-space Jacobian of A left out of the density: HMC then targets a "
            "different law of A"),
    Mutation(
        id="hmc-likelihood-power-dropped", path=_HK,
        old="lp += beta * (x[c] * math.log(m) - m)",
        new="lp += x[c] * math.log(m) - m",
        tests=(_INV, _GRAD),
        why="the nonzero cells' likelihood at power 1 instead of b in the Metropolis test"),
    Mutation(
        id="hmc-gradient-sign", path=_HK,
        old="r = beta * (x[c] / m - 1.0) * offs[c]",
        new="r = -beta * (x[c] / m - 1.0) * offs[c]",
        tests=(_GRAD,),
        why="the likelihood's gradient with the wrong sign: the kernel stays exact (the test "
            "uses the density) but its trajectories run downhill and are rejected"),
    Mutation(
        id="hmc-accept-inverted", path=_HK,
        old="    if log_u < log_acc:",
        new="    if log_u > log_acc:",
        tests=(_INV,),
        why="the Metropolis test inverted: improbable proposals accepted"),
    Mutation(
        id="hmc-kinetic-without-mass", path=_HK,
        old="            k1 += 0.5 * imWt[n, k] * pWt[n, k] * pWt[n, k]",
        new="            k1 += 0.5 * pWt[n, k] * pWt[n, k]",
        tests=(_CONS, _INV, _GRAD),
        why="the final kinetic energy without the inverse mass: the Hamiltonian's change "
            "is wrong, so is the acceptance"),
    Mutation(
        id="local-rescale-shape-sign", path=_LOC,
        old="rescale_into(A, Wt, rA, rWt, aA.sum(0) - aWt.sum(0), seed_state(rng))",
        new="rescale_into(A, Wt, rA, rWt, aWt.sum(0) - aA.sum(0), seed_state(rng))",
        tests=(_INV,),
        why="the rescaling move's power P_k with the wrong sign: the scale drawn from the "
            "wrong generalized inverse Gaussian"),
    Mutation(
        id="local-hmc-state-stale", path=_LOC,
        old="            A, Wt = np.exp(tA), np.exp(tWt)\n",
        new="            pass\n",
        tests=(_INV,),
        why="an accepted HMC move not written back (a stale state after a move)"),
    Mutation(
        id="adapter-moves-discarded", path=_RPO,
        old=("                              ref_shapes=(q[\"aA\"], q[\"aW\"]))\n"
             "        s.update(A=A, W=W)\n"),
        new="                              ref_shapes=(q[\"aA\"], q[\"aW\"]))\n",
        tests=(_ADAPT,),
        why="the reference adapter drops what its local moves return: the PT runs the sweep "
            "alone while reporting the HMC's acceptance"),
    Mutation(
        id="pt-stepping-stone-sign", path=_PT,
        old="terms = logsumexp(np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        new="terms = logsumexp(-np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="wrong sign of the incremental weight (b_(i+1) - b_i) l': each term estimates "
            "Z_(i-1) / Z_i instead of Z_(i+1) / Z_i"),
    Mutation(
        id="pt-stepping-stone-wrong-rung", path=_PT,
        old="terms = logsumexp(np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        new="terms = logsumexp(np.diff(b)[None, :] * ll[:, 1:], axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="the ratio Z_(i+1) / Z_i estimated from the draws of rung i + 1 (not an "
            "importance sample of it): biased upwards"),
    Mutation(
        id="pt-stepping-stone-no-mean", path=_PT,
        old="axis=0) - math.log(ll.shape[0])",
        new="axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="log-sum-exp instead of log-mean-exp over the kept scans: every term off by log T"),
    Mutation(
        id="pt-stale-loglik-after-sweeps", path=_RT,
        old="""    ll = [rungs.path(1.0).loglik(s) for s in states]
    bad = [""",
        new="""    ll = [v for v in getattr(rungs, "last", None) or
          [rungs.path(1.0).loglik(s) for s in states]]
    rungs.last = ll
    bad = [""",
        tests=(_POIS, _GAUS),
        why="l' of every replica kept from the first scan (a stale log-likelihood after a "
            "move): the swaps and the stepping stone use values of states that no longer "
            "exist"),
    Mutation(
        id="pt-round-trip-without-cold-start", path=_RUNS,
        old="        if phase[hot] == 1:\n            phase[hot] = 2",
        new="        if phase[hot] <= 1:\n            phase[hot] = 2",
        tests=(_TRIPS,),
        why="a replica that starts at b = 0 counts a round trip on its first arrival at "
            "b = 1 (half a trip)"),
    Mutation(
        id="verdict-prior-total-two-sided", path=_V,
        old="    if prior_log_z > total + f * comb + LOG_Z_SLACK:",
        new="    if abs(prior_log_z - total) > f * comb + LOG_Z_SLACK:",
        tests=(_VERDICT,),
        why="the SMC-from-prior total compared two-sided: its low bias (log of an unbiased "
            "Z-hat) then fails results the per-mode estimators establish"),
    Mutation(
        id="verdict-round-trips-best-run", path=_V,
        old="skip and not (t.size and t.min() >= min_trips):",
        new="skip and not (t.size and t.max() >= min_trips):",
        tests=(_VERDICT,),
        why="the round-trip rule applied to the best tempering run of a mode, not to every run"),
    Mutation(
        id="verdict-light-mode-rule-inverted", path=_V,
        old="        if k in skip or max(m_s[k], m_p[k]) < MIN_CHECKED:\n            continue",
        new="        if k in skip or min(m_s[k], m_p[k]) < MIN_CHECKED:\n            continue",
        tests=(_VERDICT,),
        why="a mode is skipped when either estimator puts it below 1 %: a mode one estimator "
            "calls heavy and the other empty passes"),
    Mutation(
        id="duplicate-guard-disabled", path=_RP,
        old='"duplicates": duplicate_modes(cross_path, cross_fit, max_share=DUPLICATE_SHARE),',
        new='"duplicates": [],',
        tests=(_DUP + "test_a_mode_passed_twice_is_joined_by_the_reference_path",
               _DUP + "test_per_mode_route_drops_a_prior_chain_copy"),
        why="no duplicate guard: a mode the plain chains from the prior reached again is "
            "estimated twice, its mass split between the copies and the total log 2 too high"),
    Mutation(
        id="duplicate-guard-one-sided", path=_BAS,
        old="if s[i, j] > max_share and s[j, i] > max_share}",
        new="if s[i, j] > max_share or s[j, i] > max_share}",
        tests=(_DUP + "test_duplicates_on_constructed_modes",),
        why="a mode whose members drifted into another's basin (one direction) is called a "
            "copy and dropped: a leak the per-mode checks must report becomes a lost mode"),
    Mutation(
        id="duplicate-copy-not-dropped", path=_RT,
        old="drop = sorted({j for _, j in dup if j >= K_kept})",
        new="drop = []",
        tests=(_DUP + "test_per_mode_route_still_drops_a_copy_the_fit_chains_missed",),
        why="the per-mode route's path particles find a copy the fit chains missed but keep "
            "it: masses 0.5 / 0.5 for one mode"),
    Mutation(
        id="fit-chain-copies-ignored", path=_RT,
        old="    copy_of = fit_copies(fitted, cut)\n",
        new="    copy_of = {}\n",
        tests=(_DUP + "test_per_mode_route_spends_no_smc_run_on_a_prior_chain_copy",
               _DUP + "test_two_smc_modes_that_are_one_are_merged_before_the_per_mode_"
                      "estimates"),
        why="copies the fit chains show are estimated all the same (SMC runs spent on them) "
            "and two SMC modes that are one refuse the result as a mode counted twice"),
    Mutation(
        id="fit-chain-copies-not-grouped", path=_RP,
        old="        first[max(a, b)] = min(a, b)\n",
        new="        pass\n",
        tests=(_DUP + "test_two_smc_modes_that_are_one_are_merged_before_the_per_mode_"
                      "estimates",),
        why="the pairs the fit chains show are never grouped: no copy is merged or dropped"),
    Mutation(
        id="merged-copy-keeps-its-label", path="bnmfzoo/inference/_mass_result.py",
        old="        first[j] = first[i]\n",
        new="        pass\n",
        tests=(_DUP + "test_two_smc_modes_that_are_one_are_merged_before_the_per_mode_"
                      "estimates",),
        why="the merged copy's particles stay a mode of their own: the result lists a mode "
            "the per-mode estimators never estimated"),
    Mutation(
        id="route-merge-not-applied", path="bnmfzoo/inference/smc_masses.py",
        old='            if pm.get("merged"):\n',
        new="            if False:\n",
        tests=(_DUP + "test_the_route_reports_a_split_mode_once_with_all_its_particles",),
        why="the per-mode estimators merged the copy but the result still lists the SMC's "
            "two clusters: a mode without estimates and half the members of the other"),
    Mutation(
        id="merged-copy-not-realigned", path="bnmfzoo/inference/_mass_result.py",
        old="    if moved.any():\n",
        new="    if False:\n",
        tests=(_DUP + "test_two_smc_modes_that_are_one_are_merged_before_the_per_mode_"
                      "estimates",),
        why="the merged copy's particles keep their columns in the copy's order: the mode's "
            "aligned factors mix two labellings"),
    Mutation(
        id="tempering-copy-share-ignored", path=_V,
        old="        if k not in skip and short and np.isfinite(sv) and sv > MAX_LEFT:\n",
        new="        if k not in skip and short and np.isfinite(sv) and sv > 1.0:\n",
        tests=(_T + "test_tempering_draws_on_another_label_copy_are_a_typed_overlap_reason",),
        why="a tempering run held on another label copy is read as too short (no round trips), "
            "and the advice is more tempering where the copies overlap"),
    Mutation(
        id="tempering-copy-of-the-wrong-order", path="bnmfzoo/inference/reference_path.py",
        old="    return np.any(perm != np.arange(center.shape[-1]), axis=1)\n",
        new="    return np.all(perm == np.arange(center.shape[-1]), axis=1)\n",
        tests=(_T + "test_the_b1_check_counts_states_on_another_copy",
               _T + "test_tempering_draws_on_another_label_copy_are_a_typed_overlap_reason"),
        why="a state in the mode's own column order counts as another copy: every check "
            "of every mode says the copies overlap"),
    Mutation(
        id="tempering-copy-share-not-reported", path=_RT,
        old="        pt_swapped[k] = in_mode.swapped\n",
        new="        pt_swapped[k] = math.nan\n",
        tests=(_POIS,),
        why="the tempering's copy share never reaches the verdict"),
    Mutation(
        id="tempering-copy-reason-without-short-run", path=_V,
        old="        short = k < len(trips) and not (trips[k].size and trips[k].min() >= "
            "min_trips)\n",
        new="        short = True\n",
        tests=(_T + "test_tempering_draws_on_another_label_copy_are_a_typed_overlap_reason",),
        why="a run held on another copy for a while that still made its round trips is "
            "refused: its stepping-stone estimate (from the lower rungs' draws) stands"),
]
