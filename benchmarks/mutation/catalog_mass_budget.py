"""Mutations of the default route's cost rules: the CPU budget that caps a whole
``smc_mode_masses`` call (``bnmfzoo/inference/_mass_budget.py``, its checks in
``smc_masses.py`` and the reference path's sweep, the catch in ``reference_tempering.py``), the
negligible-mode rule (``mass_upper_bounds`` and the skip in ``per_mode_check`` and
``per_mode_reasons``) and the t quantile of the agreement rule (``agreement_factor``,
``welch_dof``). Each is caught by a fast test of ``tests/tempering/test_mass_budget_and_skip.py``
(constructed runs, the route with the bound forced, tiny budgets)."""

from benchmarks.mutation._harness import Mutation

_B = "bnmfzoo/inference/_mass_budget.py"
_V = "bnmfzoo/inference/_mass_verdict.py"
_RT = "bnmfzoo/inference/reference_tempering.py"
_SM = "bnmfzoo/inference/smc_masses.py"
_RP = "bnmfzoo/inference/reference_path.py"
_T = "tests/tempering/test_mass_budget_and_skip.py::"
_TQ = _T + "test_agreement_factor_is_the_t_quantile_never_below_two"
_TV = _T + "test_verdict_uses_the_t_quantile_of_four_runs"
_UB = _T + "test_mass_upper_bounds_on_constructed_runs"
_SKIPV = _T + "test_skipped_mode_needs_no_tempering_but_an_unskipped_one_does"
_ROUTE = _T + "test_route_skips_the_second_estimator_of_a_bounded_mode"
_SCOPE = _T + "test_budget_scope_and_budgeted_sweep"
_TINY = _T + "test_tiny_budget_stops_the_smc_from_the_prior_promptly_with_no_mass"
_PTB = _T + "test_budget_running_out_in_the_tempering_returns_unchecked_masses"
_BAS = _T + "test_budget_is_checked_between_the_basin_rule_and_the_basin_shares"
_LRN = ("tests/frontends/test_masses_command.py::"
        "test_the_large_route_is_refused_from_its_full_predicted_cost")
_LRG = ("tests/frontends/test_masses_command.py::"
        "test_large_route_need_grows_with_the_barrier_and_the_move")
_CMD = "bnmfzoo/_cli/masses_budget.py"
_DUP = "tests/tempering/test_duplicate_modes.py::"
_CLI = "bnmfzoo/_cli/masses.py"
_TC = "tests/frontends/test_masses_command.py::"
_PSTEPS = _TC + "test_the_poisson_routes_pilot_measures_its_steps"
_FLOOR = _TC + "test_the_smc_from_the_prior_keeps_its_particle_floor"
_PRUNS = _TC + "test_the_command_runs_the_smc_from_the_prior_with_the_pilots_runs"
_TRT = "tests/tempering/test_reference_tempering.py::"
_TRIPS = _TRT + "test_tempering_ends_at_its_round_trips_or_its_cpu_share"
_SHARE = _TRT + "test_tempering_runs_share_the_budget_left"
_TOGETHER = _TRT + "test_runs_together_go_to_the_runs_short_of_the_trips_first"
_RUNS = "bnmfzoo/inference/tempering/_runs.py"
_NEED = _TRT + "test_tempering_need_scales_the_measured_trip_rate"
_TFLOOR = _TRT + "test_tempering_floor_is_the_round_trip_time_of_ideal_index_processes"
_TFMSG = _TRT + "test_the_short_tempering_reason_gives_the_floor_and_the_rate_so_far"
_NBR = _TC + "test_auto_picks_the_route_per_family"
_SHORT = _TRT + "test_runs_ended_on_their_cpu_share_count_against_the_masses_below_the_rule_only"
_PSWEEP = _TC + "test_the_pilot_times_the_sweeps_its_short_smc_makes"
_SPREAD = _TC + "test_the_nb_route_refuses_a_budget_its_runs_spread_says_is_too_small"
_SF = "bnmfzoo/inference/counts/tempering/_scale_fit.py"
_TS = "tests/tempering/test_poisson_route_sizing.py::"
_NORM = _TS + "test_scale_normalized_keeps_the_product_and_equalizes_the_column_sums"
_RIDGE = _TS + "test_the_route_tempers_a_high_count_mode_from_the_ridge_free_reference"
_PSIZE = _TS + "test_path_smc_particles_follow_the_budget_left"
_PFLOOR = _TS + "test_path_smc_refuses_below_its_floor_before_the_runs"
_PROUTE = _TS + "test_the_route_reports_a_path_smc_too_dear_for_the_budget"

_MR = "bnmfzoo/inference/_mass_result.py"
_UNR = _T + "test_an_unreached_mode_blocks_unless_the_reference_path_bounds_it_below_the_cut"
_UNRR = _T + "test_the_reference_route_establishes_past_a_negligible_unreached_mode"

MUTATIONS = [
    Mutation(
        id="overlapping-copies-advise-more-smc", path=_V,
        old="    if not all(f or o for f, o in zip(failed, overlap, strict=True)):\n",
        new="    if True:\n",
        tests=("tests/tempering/test_smc_masses.py::"
               "test_overlapping_label_copies_advise_the_rank_or_the_model_not_more_smc",),
        why="a mode whose label copies overlap is told to run more SMC, which cannot separate "
            "components the rank does not tell apart (laurberg 6 x 6 under the default model)"),
    Mutation(
        id="budget-precheck-times-the-first-sweep", path=_SM,
        old=("    family.tempered.sweep(s, 0.5, rng)\n"
             "    spare, times = np.random.default_rng(0), []\n"),
        new="    spare, times = rng, []\n    n_timed = 1\n",
        tests=(_T + "test_the_budget_precheck_times_a_warm_sweep_not_the_first",),
        why="the precheck times the first (compiling) sweep: laurberg's default command was "
            "refused for a step predicted at 938 s of a 900 s budget"),
    Mutation(
        id="unreached-mode-cut-at-one-percent", path=_MR,
        old="        if b < NEGLIGIBLE:  # NaN (unbounded) is not below\n",
        new="        if b < MIN_CHECKED:  # NaN (unbounded) is not below\n",
        tests=(_UNR,),
        why="a mode no SMC particle reached stops blocking when bounded below 1 % instead of "
            "0.1 %: a bound wrong by a factor of 2 would then hide a 1 % mode"),
    Mutation(
        id="unreached-mode-bound-of-the-wrong-mode", path=_MR,
        old="        b = float(bound[n_found + j])\n",
        new="        b = float(bound[j])\n",
        tests=(_UNR,),
        why="the unreached mode is judged by a found mode's bound (off-by-the-found-modes index)"),
    Mutation(
        id="unreached-mode-runs-not-done-read-as-data", path=_MR,
        old="            bound = mass_upper_bounds(run_lz, details.get(\"runs_done\"))\n",
        new="            bound = mass_upper_bounds(run_lz)\n",
        tests=(_UNR,),
        why="a mode's early-stopped runs are bounded as if all had run: one run gives a bound"),
    Mutation(
        id="unreached-mode-reasons-dropped", path=_SM,
        old="    reasons += why\n",
        new="",
        tests=(_UNRR,),
        why="a mode of real mass that no SMC particle from the prior reached no longer blocks "
            "established: the SMC's masses are then shares among the modes it found"),
    Mutation(
        id="reference-mode-entry-skipped-keeps-check",
        path="bnmfzoo/inference/_mass_result.py",
        old='            "mass_check": math.nan if skipped else float(check_mass),\n',
        new='            "mass_check": float(check_mass),\n',
        tests=(_ROUTE,),
        why="a mode bounded below 1 % reports the tempering's number as a second estimate, "
            "though the tempering skipped it (the shared per-mode entry of both routes)"),
    Mutation(
        id="pilot-reference-check-fixed-share", path="bnmfzoo/_cli/masses_budget.py",
        old="            check_s = max(0.08 * budget,\n",
        new="            check_s = 0.1 * 0.8 * budget or max(0.08 * budget,\n",
        tests=("tests/frontends/test_masses_command.py::"
               "test_the_pilot_reserves_the_reference_paths_predicted_cost",),
        why="the reference path gets a fixed 10 % whatever it costs: on GDSC rank 5 the check "
            "ran out of budget after the SMC from the prior had taken 542 of 900 s"),
    Mutation(
        id="budget-basin-shares-unchecked", path=_RP,
        old="the cap\n        check_budget()\n",
        new="the cap\n",
        tests=(_BAS,),
        why="no budget check after the basin rule: with about a hundred modes the basin shares "
            "ran 46 s past the cap"),
    Mutation(
        id="budget-check-ignored", path=_B,
        old="        if used > d[1]:",
        new="        if used > 1e30 * d[1]:",
        tests=(_SCOPE, _TINY),
        why="the budget never fires: the call overruns it"),
    Mutation(
        id="budget-family-not-wrapped", path=_SM,
        old="        family.tempered = BudgetedSweep(family.tempered)",
        new="        family.tempered = family.tempered",
        tests=(_TINY,),
        why="the SMC from the prior's sweeps are not checked: only a step-size precheck"),
    Mutation(
        id="budget-reference-sweep-unchecked", path=_RP,
        old="        check_budget()\n        self.adapter.sweep(self.q, state, beta, rng)",
        new="        self.adapter.sweep(self.q, state, beta, rng)",
        tests=(_PTB,),
        why="the reference path's sweeps (per-mode SMC, tempering scans) never check the budget"),
    Mutation(
        id="budget-tempering-not-caught", path=_RT,
        old="    except BudgetExhausted as err:\n        pt_out = None",
        new="    except ValueError as err:\n        pt_out = None",
        tests=(_PTB,),
        why="a budget that runs out in the tempering loses the reference-path SMC's masses"),
    Mutation(
        id="budget-check-stage-not-caught", path=_SM,
        old="    except BudgetExhausted as err:  # what the SMC from the prior found, unchecked",
        new="    except ValueError as err:  # what the SMC from the prior found, unchecked",
        tests=(_T + "test_budget_running_out_in_the_reference_check_keeps_the_prior_masses_"
                    "unchecked",),
        why="a budget that runs out in the check loses the SMC from the prior's masses"),
    Mutation(
        id="skip-rule-inverted", path=_RT,
        old="np.flatnonzero(upper < NEGLIGIBLE)",
        new="np.flatnonzero(upper >= NEGLIGIBLE)",
        tests=(_ROUTE,),
        why="the heavy modes lose their second estimator and the negligible ones keep it"),
    Mutation(
        id="skip-bound-margin-sign", path=_V,
        old="        x = mean[k] - mean[top] + f * math.hypot(se[k], se[top])",
        new="        x = mean[k] - mean[top] - f * math.hypot(se[k], se[top])",
        tests=(_UB,),
        why="the lower end taken for the upper bound: modes near 1 % skipped"),
    Mutation(
        id="skip-bound-jensen-dropped", path=_V,
        old="+ 0.5 * sd[k] ** 2 \\",
        new="+ 0.0 * sd[k] ** 2 \\",
        tests=(_UB,),
        why="the low bias of a noisy SMC log Z-hat left out of the bound"),
    Mutation(
        id="skip-tempering-still-required", path=_V,
        old="            if not np.isfinite(lz[k]) and not (k in skip and lz is lz_p):",
        new="            if not np.isfinite(lz[k]):",
        tests=(_SKIPV,),
        why="a skipped mode is then reported as a failed tempering"),
    Mutation(
        id="skipped-mode-share-left-in-the-smc-masses", path=_V,
        old="        m_s, s_s = m_s / kept, s_s / kept",
        new="        pass",
        tests=(_T + "test_masses_are_compared_among_the_modes_the_tempering_estimated",),
        why="the SMC's masses, shares among every mode, are compared with the tempering's, "
            "shares among the tempered ones: a skipped mode's 2.5e-6 fails the agreement"),
    Mutation(
        id="t-quantile-dropped", path=_V,
        old="    return 2.0 if math.isinf(d) else max(2.0, float(student_t.ppf(0.975, d)))",
        new="    return 2.0",
        tests=(_TQ, _TV),
        why="the normal rule on 4 runs: a 14 % nominal false-failure rate, not 5 %"),
    Mutation(
        id="welch-dof-squared-missing", path=_V,
        old="    return (v1 + v2) ** 2 / den if den > 0 else math.inf",
        new="    return (v1 + v2) / den if den > 0 else math.inf",
        tests=(_TQ,),
        why="the Welch-Satterthwaite degrees of freedom miscomputed"),
    Mutation(
        id="large-route-full-cost-unchecked", path="bnmfzoo/_cli/masses_budget.py",
        old='    if a.budget - used < max(large_need, full["total_s"]):',
        new="    if a.budget - used < large_need:",
        tests=(_LRN,),
        why="only the large route's floor (20 particles) is checked: a budget below its full "
            "predicted cost is spent to say not established (ESCC SBS96, 900 CPU s)"),
    Mutation(
        id="large-route-need-without-tempering", path="bnmfzoo/inference/large_route.py",
        old='"pt_s": pt_s, "total_s": smc_s + pt_s}',
        new='"pt_s": pt_s, "total_s": smc_s}',
        tests=(_LRN,),
        why="the predicted cost leaves out the tempering (barrier x scans x runs), the larger "
            "part on ESCC SBS96"),
    Mutation(
        id="large-route-need-barrier-linear-scans", path="bnmfzoo/inference/large_route.py",
        old="    kept = math.ceil(trips * (2.0 + 2.0 * lam))",
        new="    kept = math.ceil(trips * 2.0)",
        tests=(_LRN, _LRG),
        why="the scans for the round trips no longer grow with the barrier"),
    Mutation(
        id="poisson-route-steps-guessed", path=_CMD,
        old="    steps, cost, per_sweep = _measured_steps(fam, per_sweep, moves, budget, steps)  "
            "# CPU s\n",
        new="    steps, cost, per_sweep = (_measured_steps(fam, per_sweep, moves, budget, steps) "
            "if check != 'reference_pt' else (steps, per_sweep, per_sweep))  # CPU s\n",
        tests=(_PSTEPS,),
        why="the Poisson route guesses the SMC from the prior's steps (7 sqrt(dim)): 142 on "
            "ALL/AML where 898-910 ran, and the tempering then ran out of budget"),
    Mutation(
        id="prior-smc-runs-kept", path=_CMD,
        old="        runs = min(runs, PT_PRIOR_MIN_RUNS)\n",
        new="        runs = runs\n",
        tests=(_FLOOR, _PSTEPS),
        why="the SMC from the prior keeps 4 small runs (Reuters: 64 particles each, each run "
            "ended in a mode of its own)"),
    Mutation(
        id="prior-smc-share-fixed", path=_CMD,
        old="        share = min(PT_PRIOR_MAX_SHARE, PT_PRIOR_MIN_PARTICLES * runs * moves "
            "/ sweeps)\n",
        new="        share = share\n",
        tests=(_FLOOR,),
        why="the share stays at 12 % however few particles per run it buys"),
    Mutation(
        id="prior-smc-pilot-runs-dropped", path=_CLI,
        old='            runs = sizes.get("runs", a.runs)',
        new="            runs = a.runs",
        tests=(_PRUNS,),
        why="the pilot sizes 2 runs but the command runs 4 with the particles of 2"),
    Mutation(
        id="poisson-route-fixed-scans", path=_CMD,
        old='"moves": 2, "pt_trips": 15, "bridge_draws": 1000}',
        new='"moves": 2, "pt_trips": None, "bridge_draws": 1000}',
        tests=(_PRUNS,),
        why="the Poisson route's tempering runs a fixed 2,500 scans (68-89 round trips where "
            "10 are needed; ALL/AML's one mode did not fit in the budget left)"),
    Mutation(
        id="pt-trips-never-stop", path=_RUNS,
        old='    return "trips" if trips >= stop_trips else None',
        new='    return "trips" if trips >= 10**9 else None',
        tests=(_TRIPS,),
        why="a run never ends at its round trips: the scans are the cap again"),
    Mutation(
        id="pt-cpu-share-ignored", path=_RUNS,
        old="    if max_cpu_s is not None and cpu > max_cpu_s:",
        new="    if max_cpu_s is not None and cpu > 1e30:",
        tests=(_TRIPS,),
        why="a run ignores its share of the budget left, and the budget runs out in it with "
            "no estimate of the mode at all"),
    Mutation(
        id="pt-allowance-not-rising", path=_RT,
        old="run_allowance(budget_left(), 1 + later)",
        new="run_allowance(budget_left(), 2 + later)",
        tests=(_SHARE,),
        why="the modes left are miscounted: the last mode's runs get half of what is left and "
            "stop short of their round trips"),
    Mutation(
        id="pt-runs-together-not-by-need", path=_RUNS,
        old="        for i in behind or live:\n",
        new="        for i in live:\n",
        tests=(_TOGETHER,),
        why="the runs advance in turn whatever their trips: runs past the verdict's minimum "
            "take the CPU the runs short of it need (breast SBS96 NB: 11, 9, 15, 15 trips)"),
    Mutation(
        id="pt-runs-together-cap-ignored", path=_RUNS,
        old='            advance(i, "cpu" if max_cpu_s is not None and _cpu() - t0 > max_cpu_s '
            'else why)\n',
        new="            advance(i, why)\n",
        tests=(_TOGETHER,),
        why="the mode's runs together ignore their share of the budget left: the budget runs "
            "out inside the tempering with no estimate"),
    Mutation(
        id="pt-run-cpu-counts-the-others", path=_RT,
        old="        t0 += time.process_time() - paused  # the other runs' CPU while this one "
            "waited\n",
        new="        pass\n",
        tests=(_TRT + "test_a_run_counts_only_its_own_cpu",),
        why="a run waiting while the others advance counts their CPU as its own: its CPU per "
            "rung-scan and the need the verdict names are inflated by the number of runs"),
    Mutation(
        id="pt-need-rate-inverted", path=_B,
        old="    per_run = target * kept.sum() / trips.sum()",
        new="    per_run = target * trips.sum() / kept.sum()",
        tests=(_NEED,),
        why="the budget named for the tempering shrinks as its round trips get rarer"),
    Mutation(
        id="pt-floor-no-start-up", path=_B,
        old="    per_run = ((r.size + 1) / 2.0 + target) * scans_per_trip",
        new="    per_run = target * scans_per_trip",
        tests=(_TFLOOR,),
        why="the floor forgets that a replica's first trip needs it at b = 1 first: it names "
            "about half the CPU the runs need"),
    Mutation(
        id="pt-floor-rejections-not-odds", path=_B,
        old="    scans_per_trip = 2.0 + 2.0 * float(np.sum(r / (1.0 - r)))",
        new="    scans_per_trip = 2.0 + 2.0 * float(np.sum(r))",
        tests=(_TFLOOR,),
        why="the barrier in place of the rejections' odds: the round-trip time is understated "
            "where swaps are rejected often"),
    Mutation(
        id="pt-floor-above-the-rate-so-far", path=_B,
        old="    if math.isfinite(need) and at_least and need > floor:",
        new="    if math.isfinite(need) and at_least:",
        tests=(_TFMSG,),
        why="the reason names an upper bound below its floor"),
    Mutation(
        id="pt-floor-below-what-it-had", path=_B,
        old='"start-up included)") if math.isfinite(floor) and floor > had else ""',
        new='"start-up included)") if math.isfinite(floor) else ""',
        tests=(_TFMSG,),
        why="the reason names a floor below the CPU the runs already used (breast SBS96 NB: "
            "'at least about 277' after 387): no guide to the budget"),
    Mutation(
        id="poisson-route-fit-draws-halved", path=_CMD,
        old='"moves": 2, "pt_trips": 15, "bridge_draws": 1000}',
        new='"moves": 2, "pt_trips": 15, "bridge_draws": 500}',
        tests=(_NBR,),
        why="the Poisson route's copula is fitted to 4 x 500 draws, where 4 x 1,000 lowered "
            "its barrier (the command 15-38 % cheaper on four catalogues)"),
    Mutation(
        id="nb-route-poisson-scan-cap", path=_CMD,
        old='pt_leap=10, pt_scans=8000, bridge_draws=500)',
        new='pt_leap=10, bridge_draws=500)',
        tests=(_NBR,),
        why="the negative binomial's tempering runs stop at 2,500 kept scans, before the 10 "
            "round trips its runs reach at about 2,900 on breast SBS96"),
    Mutation(
        id="beta-dir-not-routed", path=_CMD,
        old='''                 "beta_dir": BETA_DIR_ROUTE}.get(fam.name)''',
        new='''                 "beta_dir_": BETA_DIR_ROUTE}.get(fam.name)''',
        tests=(_NBR,),
        why="binary models back on the reference check, whose SMC from the prior gives the "
            "masses: parliament at K = 2 took 671 CPU s and was refused beside another job"),
    Mutation(
        id="beta-dir-route-hmc-move", path=_CMD,
        old='BETA_DIR_ROUTE = dict(POISSON_ROUTE, pt_local="sweep", pt_leap=10, bridge_draws=500)',
        new='BETA_DIR_ROUTE = dict(POISSON_ROUTE, pt_leap=10, bridge_draws=500)',
        tests=(_NBR,),
        why="the binary route asks for the Poisson route's HMC and group moves, which the "
            "Beta-Dir reference has not: the route falls back to the reference check"),
    Mutation(
        id="pilot-sweep-at-beta-07", path=_CMD,
        old="    return PILOT_STEP_FACTOR * steps, sweep + overhead / max(moves, 1), sweep\n",
        new="    return PILOT_STEP_FACTOR * steps, per_sweep + overhead / max(moves, 1), "
            "per_sweep\n",
        tests=(_PSWEEP,),
        why="the pilot sizes the particles from the sweep at beta = 0.7, 1.6-2.3x the mean "
            "sweep of the negative binomial's rounding path: the budget is under-filled"),
    Mutation(
        id="pilot-overhead-counts-the-sweeps", path=_CMD,
        old="    overhead = max(0.0, (time.process_time() - t0 - counted.cpu) / "
            "(PILOT_PARTICLES * steps))\n",
        new="    overhead = max(0.0, (time.process_time() - t0) / (PILOT_PARTICLES * steps))\n",
        tests=(_PSWEEP,),
        why="the step's overhead includes the sweeps, counted twice"),
    Mutation(
        id="spread-rule-point-estimate", path=_CMD,
        old="    if low <= particles:\n",
        new="    if about <= particles:\n",
        tests=(_SPREAD,),
        why="the refusal trusts the point estimate of four runs' variance (3 degrees of "
            "freedom), not its lower bound: budgets that may suffice are refused"),
    Mutation(
        id="spread-rule-moves-ignored", path=_CMD,
        old="    about = particles * s2 / (moves * SPREAD_SD ** 2)\n",
        new="    about = particles * s2 / SPREAD_SD ** 2\n",
        tests=(_SPREAD,),
        why="the sweeps per step are not credited: the need is overstated up to 5x"),
    Mutation(
        id="spread-rule-not-on-auto", path=_CMD,
        old='check in ("auto", "bridge"):\n',
        new='check == "bridge":\n',
        tests=(_SPREAD,),
        why="the default command (check auto) never refuses: breast SBS96 with the NB model "
            "spends 440 CPU s to say not established"),
    Mutation(
        id="ridge-fit-not-normalized", path=_SF,
        old="    c = s / np.exp(np.log(s).mean(0))",
        new="    c = np.ones_like(s)",
        tests=(_NORM, _RIDGE),
        why="the ridge-free fit is the marginal fit again: the scale ridge's spread is taken "
            "as every entry's, and a high-count mode's path stays long (barrier 23 on ALL/AML)"),
    Mutation(
        id="ridge-fit-pins-an-entry", path=_SF,
        old=("    if np.any(after[spread] < MIN_VARIANCE_KEPT * before[spread]):\n"
             "        return None\n"),
        new="",
        tests=(_TS + "test_no_ridge_free_reference_where_the_normalization_pins_an_entry",),
        why="a ridge-free fit that pins an entry (one row of A) is offered to the pilot, which "
            "cannot see the spike: the tempering's log Z 9 nats low on a 1 x 6 matrix"),
    Mutation(
        id="upper-bound-overflows-far-below", path=_V,
        old="math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))",
        new="math.exp(-x)) if x < 700 else 1.0",
        tests=(_UB,),
        why="the bound of a mode more than 709 nats below the heaviest overflows (the large "
            "route crashed on ESCC SBS96 with the early stop)"),
    Mutation(
        id="ridge-fit-never-used", path=_RT,
        old="        if two[1] < lam0:  # the shorter path from its reference",
        new="        if False:  # the shorter path from its reference",
        tests=(_RIDGE,),
        why="the lower pilot barrier is reported but the tempering still starts from the "
            "marginal reference and its longer ladder"),
    Mutation(
        id="path-smc-modes-not-shared", path=_B,
        old="        todo = max(1, self.n_modes - int(k if position is None else position))",
        new="        todo = 1",
        tests=(_PSIZE,),
        why="each mode's reference-path SMC is sized as if it were the last: the first mode "
            "takes the whole share and the later ones run out of budget"),
    Mutation(
        id="path-smc-sized-by-label-not-place", path=_B,
        old="        todo = max(1, self.n_modes - int(k if position is None else position))",
        new="        todo = max(1, self.n_modes - int(k))",
        tests=(_PSIZE,),
        why="a mode estimated first but listed last is sized as the last: it takes the whole "
            "share (the modes are estimated heaviest-looking first, not in their listed order)"),
    Mutation(
        id="path-smc-floor-dropped", path=_B,
        old="        if n < PATH_MIN_PARTICLES:",
        new="        if n < 1:",
        tests=(_PFLOOR,),
        why="a reference-path SMC of a handful of particles per run starts instead of a "
            "refusal that names the budget needed"),
    Mutation(
        id="path-smc-size-not-passed", path=_RT,
        old="                              n_particles=size, n_moves=n_moves, cess=cess,",
        new="                              n_particles=n_particles, n_moves=n_moves, cess=cess,",
        tests=(_PROUTE,),
        why="the per-mode check runs the fixed 4 x 100 particles per mode whatever the budget "
            "left (Reuters 200 x 100: the budget ran out in it)"),
    Mutation(
        id="pt-cpu-short-held-to-the-target", path=_B,
        old="             if pt_out[\"round_trips\"][k, r] < min(target, min_trips)]",
        new="             if pt_out[\"round_trips\"][k, r] < target]",
        tests=(_SHORT,),
        why="a run that ended on its CPU share with 10-14 round trips (the rule is 10) refuses "
            "the masses: Reuters 200 x 100 was not established for runs of 12-15 trips"),
    Mutation(
        id="pt-cpu-short-any-stop", path=_B,
        old="zip(*np.nonzero(pt_out[\"stopped\"] == \"cpu\"),",
        new="zip(*np.nonzero(pt_out[\"stopped\"] != \"\"),",
        tests=(_SHORT,),
        why="runs that ended on their trips or scans are reported as short of the CPU share"),
    Mutation(
        id="failed-check-masses-compared", path=_SM,
        old="    chk, chk_se, extra = _failed_check_unknown_all(chk, chk_se, extra)\n",
        new="",
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_failed_bridge_compares_no_masses_and_advises_the_bridge",),
        why="a bridge that failed on a mode gives mass 0 +- nan, which is printed as a check "
            "mass and compared with the SMC (\"SMC 1.000 vs bridge 0.000 +- nan\")"),
    Mutation(
        id="failed-check-extra-modes-kept", path="bnmfzoo/inference/_mass_verdict.py",
        old="    m, s = failed_check_unknown(m, s)\n    return m[:K], s[:K],",
        new="    m[:K], s[:K] = failed_check_unknown(m[:K], s[:K])\n    return m[:K], s[:K],",
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_failed_check_leaves_no_check_mass_on_the_modes_only_plain_chains_found",),
        why="a check that failed on a mode only plain chains found still prints the other "
            "modes' shares among the modes it estimated as masses"),
    Mutation(
        id="check-failure-reason-untyped", path="bnmfzoo/inference/_mass_verdict.py",
        old='    reasons = [CheckFailed(f"mode {k}: the {name} failed ({failed})")\n',
        new='    reasons = [(f"mode {k}: the {name} failed ({failed})")\n',
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_failed_bridge_compares_no_masses_and_advises_the_bridge",),
        why="a failed bridge is advised as if the SMC were short (more particles), not the "
            "bridge (more draws per mode or another check)"),
    Mutation(
        id="early-stop-runs-not-done-counted", path=_V,
        old="    n = np.full(M, R) if n_done is None else np.asarray(n_done, int)\n",
        new="    n = np.full(M, R)\n",
        tests=(_T + "test_mass_upper_bounds_of_a_mode_whose_runs_stopped_early",),
        why="a mode's runs not made are read as failed runs: an early-stopped mode is never "
            "bounded (or bounded from runs it did not have)"),
    Mutation(
        id="early-stop-never", path=_RP,
        old="                    run_lz[before], n_done=done[before])[i] < early_stop:",
        new="                    run_lz[before], n_done=done[before])[i] < 0.0:",
        tests=(_DUP + "test_a_mode_far_below_an_earlier_one_stops_after_two_runs",),
        why="a mode 50 nats below another still gets all its runs: the CPU the early stop "
            "saves is spent"),
    Mutation(
        id="early-stop-without-the-bound", path=_RP,
        old="            if early_stop is not None and 2 <= r + 1 < n_runs and i and mass_upper_",
        new="            if early_stop is not None and 2 <= r + 1 < n_runs and i or mass_upper_",
        tests=(_DUP + "test_a_mode_far_below_an_earlier_one_stops_after_two_runs",),
        why="every mode after the first stops at two runs, however heavy"),
    Mutation(
        id="early-stop-mean-over-runs-not-done", path=_RP,
        old="        z = run_lz[k, :done[k]]\n",
        new="        z = run_lz[k]\n",
        tests=(_DUP + "test_a_mode_far_below_an_earlier_one_stops_after_two_runs",),
        why="an early-stopped mode's log Z averaged over its NaN runs: NaN, the mode lost"),
    Mutation(
        id="mode-order-lightest-first", path=_RP,
        old="(joint.size < min_draws, -float(joint.mean()) if joint.size else 0.0, k)",
        new="(joint.size < min_draws, float(joint.mean()) if joint.size else 0.0, k)",
        tests=(_DUP + "test_the_heaviest_looking_mode_is_estimated_first_so_a_far_mode_listed_"
               "first_stops", "tests/house/test_doctests.py::test_doctest[bnmfzoo.inference."
               "reference_path.mode_order]"),
        why="the modes are estimated lightest-looking first: a far mode comes before the heavy "
            "one and nothing bounds it early (Reuters seed 1 spent 195 s on two such modes)"),
    Mutation(
        id="mode-order-not-used", path=_RP,
        old="    order = mode_order(fits, inside)\n",
        new="    order = list(range(M))\n",
        tests=(_DUP + "test_the_heaviest_looking_mode_is_estimated_first_so_a_far_mode_listed_"
               "first_stops",),
        why="the modes are estimated in the order they were found, whatever their log joint"),
    Mutation(
        id="mode-order-early-stop-by-label", path=_RP,
        old="            before = order[:i + 1]  # this mode and the ones estimated before it\n",
        new="            before = list(range(k + 1))\n",
        tests=(_DUP + "test_the_heaviest_looking_mode_is_estimated_first_so_a_far_mode_listed_"
               "first_stops",),
        why="the early stop bounds a mode by the modes listed before it, not those estimated "
            "before it: a far mode listed first is never stopped"),
    Mutation(
        id="pt-dear-never-refused", path=_RT,
        old="if allow is not None and floor > allow:  # its share cannot hold it: not started",
        new="if allow is not None and floor > 1e300:  # its share cannot hold it: not started",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="a tempering its share of the budget cannot hold starts anyway and spends the "
            "budget (ALL/AML: 375 s, then the budget ran out with no bound named)"),
    Mutation(
        id="pt-dear-reason-dropped", path=_RT,
        old="        reasons += too_dear_reasons(pt_out, MIN_ROUND_TRIPS)\n",
        new="\n",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="a mode with no tempering and no reason: the verdict may call it established"),
    Mutation(
        id="pt-dear-called-a-failure", path=_RT,
        old="                  skipped=skipped + dear, prior_dof=prior_dof)",
        new="                  skipped=skipped, prior_dof=prior_dof)",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="the tempering not started is reported as the estimator failing on the mode"),
    Mutation(
        id="pt-dear-check-mass-zero", path="bnmfzoo/inference/_mass_result.py",
        old="    not_run = pt_o is None or bool(",
        new="    not_run = pt_o is None or 0 * bool(",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="a mode whose tempering never ran gets a check mass of 0 (ALL/AML printed "
            "mass_check 0.0): a number where the check has none"),
    Mutation(
        id="pt-floor-sweep-cost-inflated", path="bnmfzoo/inference/_mass_budget.py",
        old="    return float(np.mean(per) if every else np.median(per))\n",
        new="    return 10.0 * float(np.mean(per) if every else np.median(per))\n",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="the floor's CPU per sweep is overstated (as the pilot SMC's per-step overheads "
            "did): the floor is above what the runs use, and a tempering that fits is refused"),
    Mutation(
        id="budget-reason-generic-advice", path="bnmfzoo/inference/_mass_result.py",
        old="runs are sized from it.\" if any(\"raise the budget\" in r for r in reasons)",
        new="runs are sized from it.\" if any(\"raise the bduget\" in r for r in reasons)",
        tests=(_T + "test_a_tempering_its_share_cannot_hold_is_not_started",),
        why="a result refused for want of CPU advises longer tempering (pt_scans), a cap the "
            "budget-sized runs never reached, instead of the budget the reason names"),
    Mutation(
        id="pt-floor-without-tuning", path=_B,
        old="    return per_scan * float(tune_scans) + tempering_floor(",
        new="    return 0.0 * float(tune_scans) + tempering_floor(",
        tests=(_T + "test_the_start_floor_is_the_rejection_floor_at_an_even_spread_plus_the_"
               "tuning",),
        why="the floor leaves out the scans every run tunes and burns before it keeps any"),
    Mutation(
        id="pt-floor-barrier-over-rungs-not-pairs", path=_B,
        old="    r = min(max(float(barrier), 0.0) / (n - 1), 1.0 - 1e-9)\n",
        new="    r = min(max(float(barrier), 0.0) / n, 1.0 - 1e-9)\n",
        tests=(_T + "test_the_start_floor_is_the_rejection_floor_at_an_even_spread_plus_the_"
               "tuning",),
        why="the barrier is spread over the rungs, not the n - 1 neighbour pairs that reject: "
            "the floor is too low"),
    Mutation(
        id="pilot-reference-sweep-times-its-compile", path=_CMD,
        old="    ad.sweep(q, s, 0.5, rng)  # compiles on a cold cache: not timed\n",
        new="",
        tests=("tests/frontends/test_masses_command.py::test_the_reference_sweep_is_timed_after_"
               "its_compile",),
        why="the first reference-path sweep, a compile on a cold cache, is timed: the route "
            "refuses budgets a warm cache fills"),
    Mutation(
        id="pilot-smc-times-its-compile", path=_CMD,
        old="    _compile_smc(fam, budget)\n",
        new="",
        tests=("tests/frontends/test_masses_command.py::test_the_pilot_smc_is_timed_after_its_"
               "compile",),
        why="no untimed SMC before the pilot's: on a cold cache its per-step overhead includes "
            "the compile and the SMC gets fewer particles than a warm cache gives"),
    Mutation(
        id="product-pilot-cap-margin-inverted", path=_B,
        old="    cost = float(rung_scan_s) / float(margin)",
        new="    cost = float(rung_scan_s) * float(margin)",
        tests=("tests/house/test_doctests.py::test_doctest[bnmfzoo.inference._mass_budget."
               "product_barrier_cap]",),
        why="the product's rung-scans taken as dearer than timed, not cheaper: its pilot stops "
            "at a barrier four times too low and a product path that would beat the copula's "
            "floor is never finished"),
    Mutation(
        id="product-pilot-capped-without-copula", path=_RT,
        old="        (betas, lam0), two = pilot(q, cap), (None, math.nan) if q2 is None else "
            "pilot(q2, cap)",
        new="        (betas, lam0), two = pilot(q, cap), (None, math.nan) if q2 is None else "
            "pilot(q2, math.inf)",
        tests=("tests/tempering/test_large_route.py::"
               "test_large_mode_masses_passes_the_copula_and_the_early_stop",),
        why="the ridge-free reference's pilot runs to the end while the copula already beat "
            "any path that long (ESCC SBS96, K = 4: 32 CPU s of a pilot that cannot win)"),
    Mutation(
        id="early-copies-drop-the-kept-groups-starts", path="bnmfzoo/inference/large_route.py",
        old="        starts[i] = (starts[i] + starts[j])[:n_chains]",
        new="        starts[i] = starts[j][:n_chains]",
        tests=("tests/tempering/test_large_route.py::"
               "test_a_copy_the_fit_chains_show_is_dropped_before_its_smc",),
        why="a merged mode's fit chains start from its copy's restarts only: the kept group's "
            "own start states are lost"),
    Mutation(
        id="hmc-fit-draws-near-the-reference", path="bnmfzoo/inference/large_route.py",
        old="                path.sweep(s, 1.0, rng)  # checks the budget",
        new="                path.sweep(s, 0.05, rng)  # checks the budget",
        tests=("tests/tempering/test_large_route.py::test_hmc_fit_draws_are_draws_of_the_mode",),
        why="the copula's extra fit draws come from the path near its reference, not from the "
            "posterior: the reference is then fitted partly to itself"),
    Mutation(
        id="hmc-fit-draws-reuse-the-chain-ids", path="bnmfzoo/inference/large_route.py",
        old="                                             chain.max() + 1 + c,",
        new="                                             c,",
        tests=("tests/tempering/test_large_route.py::test_hmc_fit_draws_are_draws_of_the_mode",),
        why="an HMC chain takes its fit chain's id: the basin rule reads two chains as one "
            "that jumps back to its start"),
    Mutation(
        id="hmc-fit-draws-not-run-by-the-route", path="bnmfzoo/inference/large_route.py",
        old="fits=hmc_fit_draws(pt_fam, fitted, rng, hmc_moves))",
        new="fits=fitted[0])",
        tests=("tests/tempering/test_large_route.py::"
               "test_large_mode_masses_passes_the_copula_and_the_early_stop",),
        why="the large route fits its copula to the sweep's draws alone (a longer path on "
            "ESCC SBS96: pilot barrier 6.4-6.8 against 5.3-5.5)"),
    Mutation(
        id="basin-rule-chain-stride-from-n-chains", path="bnmfzoo/diagnostics/_modes/basins.py",
        old="    stride = 1 + max([n_chains] + [int(f[2].max()) for f in fits if f[2].size])",
        new="    stride = 1 + n_chains",
        tests=("tests/tempering/test_large_route.py::"
               "test_the_basin_rule_keeps_each_modes_chains_apart",),
        why="with the HMC fit chains a mode holds 2 n_chains chains: ids collide across modes "
            "and the basin rule joins modes whose chains never crossed"),
    Mutation(
        id="hmc-fit-draws-ignore-the-budget", path="bnmfzoo/inference/large_route.py",
        old="HMC_FIT_SHARE, 0, HMC_FIT_MOVES)",
        new="HMC_FIT_SHARE, HMC_FIT_MOVES, HMC_FIT_MOVES)",
        tests=("tests/tempering/test_large_route.py::"
               "test_the_hmc_fit_draws_take_at_most_their_share_of_the_budget",),
        why="every mode's HMC fit draws run their full length whatever the budget left: with "
            "three modes on ESCC SBS96 that is ~370 of 900 CPU s before either estimator"),
    Mutation(
        id="hmc-fit-draws-before-the-copies-merge", path="bnmfzoo/inference/large_route.py",
        old="                if copy_of:  # one mode: estimated once, before any SMC run is spent",
        new="                if copy_of and hmc:  # one mode: estimated once, before any SMC run "
            "is spent",
        tests=("tests/tempering/test_large_route.py::"
               "test_copies_the_full_fit_chains_show_are_merged_before_the_hmc_fit_draws",),
        why="the HMC fit draws run for a copy the full fit chains already showed (ESCC SBS96, "
            "K = 4, seed 1: 124 of 900 CPU s, and the tempering then not started)"),
    Mutation(
        id="kept-modes-drop-the-fit-cpu", path="bnmfzoo/inference/large_route.py",
        old="        return refs[keep], [starts[k] for k in keep], counts[keep], (*again[:3],\n"
            "                                                                     fitted[3] + "
            "again[3])",
        new="        return refs[keep], [starts[k] for k in keep], counts[keep], again",
        tests=("tests/tempering/test_large_route.py::"
               "test_copies_the_full_fit_chains_show_are_merged_before_the_hmc_fit_draws",),
        why="after a merge the fit chains' CPU reported is the basin rule's alone (the SMC line's "
            "'fit chains' figure drops the chains that made the draws)"),
    Mutation(
        id="restart-kl-fixed-updates", path="bnmfzoo/inference/large_route.py",
        old="        s = kl_nmf_start(tempered.problem, family.draw_prior(rng), n_iter=n_kl,\n"
            "                         tol=mode_tol(tempered.problem))",
        new="        s = kl_nmf_start(tempered.problem, family.draw_prior(rng), n_iter=300)",
        tests=("tests/tempering/test_large_route.py::"
               "test_kl_start_stops_once_its_gain_is_below_tol",),
        why="the restarts stop after 300 KL updates, up to 7,800 nats below the typical set on "
            "ESCC SBS96 at K = 4 (the fit chains' first 900 sweeps a climb)"),
    Mutation(
        id="kl-start-tol-compares-with-the-start", path="bnmfzoo/inference/counts/_kl_start.py",
        old="            last = now\n",
        new="",
        tests=("tests/tempering/test_large_route.py::"
               "test_kl_start_stops_once_its_gain_is_below_tol",),
        why="the gain is measured from the start, not over the last KL_CHECK updates: the "
            "updates never stop early"),
    Mutation(
        id="cli-statement-in-python-names", path=_CLI,
        old="        text = text.replace(old, new)\n",
        new="        pass\n",
        tests=("tests/frontends/test_masses_command.py::"
               "test_a_refusal_is_said_in_the_commands_flags_with_the_budget_to_run_next",),
        why="the command's refusal advises n_runs, n_particles and cess, arguments a command-"
            "line user has no way to pass"),
    Mutation(
        id="cli-next-budget-not-squared", path=_CLI,
        old="factor = (sd / TARGET_LOG_Z_SD) ** 2",
        new="factor = sd / TARGET_LOG_Z_SD",
        tests=("tests/frontends/test_masses_command.py::"
               "test_a_refusal_is_said_in_the_commands_flags_with_the_budget_to_run_next",),
        why="the budget to run next scaled by the sd's ratio, not the variance's: half the "
            "particles the runs need to agree"),
    Mutation(
        id="cli-next-budget-when-particles-given", path=_CLI,
        old="if not out[\"established\"] and a.particles is None and sd >= 2.0:",
        new="if not out[\"established\"] and sd >= 2.0:",
        tests=("tests/frontends/test_masses_command.py::"
               "test_a_refusal_is_said_in_the_commands_flags_with_the_budget_to_run_next",),
        why="a budget is suggested though --particles fixed the SMC's size: a larger budget "
            "would change nothing"),
    Mutation(
        id="gaussian-route-keeps-five-sweeps", path=_CMD,
        old="                defaults.update(REFERENCE_CHECK_ROUTE)\n",
        new="",
        tests=(_TC + "test_auto_picks_the_route_per_family",),
        why="the exponential-Gaussian route's SMC starts at 5 sweeps per step: on the faces "
            "its runs' log Z spread stays near the rule's 2 nats at any particle count"),
    Mutation(
        id="reference-check-moves-for-every-family", path=_CMD,
        old="\"pt_scans\": 500, \"moves\": 5,",
        new="\"pt_scans\": 500, \"moves\": 10,",
        tests=(_TC + "test_auto_picks_the_route_per_family",),
        why="the 10 sweeps per step measured on the exponential-Gaussian route given to the "
            "bridge route of models without a reference path, unmeasured there"),
    Mutation(
        id="pilot-falls-below-five-sweeps", path=_CMD,
        old="        if particles >= REF_MIN_PARTICLES or (m <= REF_MIN_MOVES and need <= budget):",
        new="        if particles >= REF_MIN_PARTICLES:",
        tests=(_TC + "test_the_pilots_fall_stops_at_five_sweeps_while_both_estimators_fit",),
        why="the sweeps per step fall below 5 for particles while both estimators fit: on the "
            "faces 375 x 2 gave the runs' log Z sd 3.26 where 150 x 5 gave 1.36"),
    Mutation(
        id="reference-check-without-early-stop", path="bnmfzoo/inference/reference_check.py",
        old="                          early_stop=EARLY_STOP, fitted=fitted)",
        new="                          fitted=fitted)",
        tests=(_DUP + "test_the_reference_check_stops_a_far_mode_after_two_runs",),
        why="the exponential-Gaussian route's check runs all four runs of a mode bounded far "
            "below the others: on the faces such modes took the check past the budget"),
]
