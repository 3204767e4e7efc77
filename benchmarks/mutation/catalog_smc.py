"""Mutations of the adaptive-tempering SMC (``bnmfzoo/inference/tempering/smc.py``): the
incremental weights, the log normalizing constant, the log-likelihoods after a move, and the
waste-free population; and of the per-mode bridge sampling (``bnmfzoo/inference/bridge.py``,
``bnmfzoo/inference/mode_bridge.py``): the bridge iteration, the Jacobians of the families'
unconstrained parametrisations, the alignment of label-switched copies, draws from a stale
state. Each is caught by a fast test against exact answers (a bimodal toy with local moves,
whose log Z and mode masses are known in closed form; tiny models whose evidence is known by
quadrature or enumeration; two label-switched copies of known mass)."""

from benchmarks.mutation._harness import Mutation

_SMC = "bnmfzoo/inference/tempering/smc.py"
_T = "tests/tempering/test_smc.py::"
_EXACT = _T + "test_log_z_and_mode_mass_of_a_bimodal_target_are_exact"
_BR = "bnmfzoo/inference/bridge.py"
_MB = "bnmfzoo/inference/mode_bridge.py"
_TB = "tests/tempering/test_bridge.py::"
_GAMMA = _TB + "test_bridge_log_z_of_a_product_of_log_gammas_is_exact"
_RD = "bnmfzoo/inference/counts/tempering/_rounding.py"
_TN = "tests/counts/test_counts_tempering_nb.py::"
_NEAR = _T + "test_next_beta_near_keeps_the_conditional_ess_from_any_previous_step"
_SEARCH = _TN + "test_the_smc_searches_the_next_beta_in_few_batched_evaluations"
_BATCH = _TN + "test_batched_log_target_is_the_per_state_one"
_NBQ = _TN + "test_nb_smc_from_the_prior_log_z_matches_quadrature"
_KEPT = _TN + "test_kept_rung_is_the_rung_of_the_beta_asked"
_TT = "tests/tempering/test_bridge_transient.py::"
_WARP = _TB + "test_warped_bridge_of_skewed_log_gammas_in_150_dimensions"
_KLS = ("tests/tempering/test_kl_chain_starts.py::"
        "test_kl_starts_are_the_best_of_the_refined_prior_draws")

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
    Mutation(
        id="bridge-proposal-count-confused", path=_BR,
        old="num = logsumexp(a2 - np.logaddexp(ls1 + a2, ls2 + log_r)) - math.log(n2)",
        new="num = logsumexp(a2 - np.logaddexp(ls1 + a2, ls2 + log_r)) - math.log(n1)",
        tests=(_GAMMA,),
        why="wrong bridge iteration: the proposal's average divided by N1 instead of N2, so "
            "log Z is off by log(N2 / N1) whenever the two counts differ"),
    Mutation(
        id="bridge-function-differs-between-terms", path=_BR,
        old="num = logsumexp(a2 - np.logaddexp(ls1 + a2, ls2 + log_r))",
        new="num = logsumexp(a2 - np.logaddexp(ls2 + a2, ls2 + log_r))",
        tests=(_GAMMA, _TB + "test_bridge_iteration_reaches_the_fixed_point"),
        why="wrong bridge iteration: the proposal's term uses another bridge function (s2 for "
            "s1) than the target's, so the identity E_q[p a] / E_p[q a] = Z no longer holds"),
    Mutation(
        id="bridge-gaussian-jacobian-dropped", path=_MB,
        old="h.lambda_A * A.sum((1, 2)) + lA.sum((1, 2))",
        new="h.lambda_A * A.sum((1, 2))",
        tests=(_TB + "test_gaussian_bridge_log_z_matches_quadrature",),
        why="the log transform's Jacobian of A missing from the Gaussian log joint: the "
            "bridge integrates another density"),
    Mutation(
        id="bridge-count-jacobian-dropped", path=_MB,
        old="gammaln(a) + a * lx - b * np.exp(lx))",
        new="gammaln(a) + (a - 1) * lx - b * np.exp(lx))",
        tests=(_TB + "test_poisson_bridge_log_z_matches_quadrature",),
        why="the Gamma prior's density in log coordinates without the Jacobian"),
    Mutation(
        id="bridge-beta-dir-jacobian-dropped", path=_MB,
        old="np.sum(a * lW + b * l1W, axis=(1, 2))",
        new="np.sum((a - 1) * lW + (b - 1) * l1W, axis=(1, 2))",
        tests=(_TB + "test_beta_dir_bridge_log_z_matches_enumeration",),
        why="the logit's Jacobian w (1 - w) missing from the Beta-Dir log joint"),
    Mutation(
        id="bridge-draws-not-aligned", path=_MB,
        old="                    perm = perm[0, k]\n",
        new="                    perm = np.arange(param.rank)\n",
        tests=(_TB + "test_label_switching_copies_are_aligned_and_counted",),
        why="label-switched draws not permuted to the mode's representative: the proposal "
            "straddles several copies"),
    Mutation(
        id="prior-chain-modes-end-states", path=_MB,
        old="    U = np.stack(means)\n",
        new="    U = _unit_l2(np.stack([np.asarray(family.factors(s)[0], float) for s in ends]))\n",
        tests=("tests/tempering/test_prior_chain_modes.py::"
               "test_one_broad_mode_is_not_split_by_noisy_end_states",),
        why="plain chains from the prior compared by their single end states, not their "
            "aligned means: one broad mode's noisy draws lie beyond the cut and become new "
            "modes (one mode counted twice)"),
    Mutation(
        id="kl-chain-starts-discarded", path=_MB,
        old="        cand.append(kl_nmf_start(problem, family.draw_prior(rng), n_iter=n_kl))",
        new="        cand.append(family.draw_prior(rng))",
        tests=(_KLS,),
        why="the KL updates' result discarded: the mode search's chains start from raw prior "
            "draws (ranked by log joint), which miss the heaviest of many modes more often"),
    Mutation(
        id="kl-chain-starts-ranking-reversed", path=_MB,
        old="    return [cand[i] for i in np.argsort(-lj, kind=\"stable\")[:n_chains]]",
        new="    return [cand[i] for i in np.argsort(lj, kind=\"stable\")[:n_chains]]",
        tests=(_KLS,),
        why="the best-of-m ranking reversed: the chains start from the KL-refined draws of "
            "lowest log joint"),
    Mutation(
        id="chain-starts-other-families-drawn-first", path=_MB,
        old="        return (family.draw_prior(rng) for _ in range(n_chains))\n",
        new="        return [family.draw_prior(rng) for _ in range(n_chains)]\n",
        tests=("tests/tempering/test_kl_chain_starts.py::"
               "test_other_families_and_too_few_candidates_start_from_exact_prior_draws",),
        why="the other families' starts all drawn before the first chain runs: their searches "
            "(and the masses printed in the README) move to other random numbers"),
    Mutation(
        id="chain-starts-asymmetric-prior-unguarded", path=_MB,
        old="        except ValueError:  # priors that differ between components: no log joint",
        new="        except KeyError:  # priors that differ between components: no log joint",
        tests=("tests/tempering/test_kl_chain_starts.py::"
               "test_other_families_and_too_few_candidates_start_from_exact_prior_draws",),
        why="a Poisson model whose priors differ between components stops the mode search "
            "with the bridge's symmetry error instead of starting from prior draws"),
    Mutation(
        id="bridge-stale-state", path=_MB,
        old="                thetas.append(param.theta(s, perm, rng))",
        new="                thetas.append(param.theta(starts[k][0], perm, rng))",
        tests=(_TB + "test_per_mode_bridge_masses_of_a_bimodal_target_are_exact",),
        why="draws read from the chain's start instead of its current state (a stale state "
            "after the moves)"),
    # the NB rounding path's cheaper SMC step (batched log target, warm-started search)
    Mutation(
        id="smc-path-search-plain-bisection", path=_SMC,
        old="        elif path.log_target is not None and len(betas) > 1:",
        new="        elif False:",
        tests=(_SEARCH,),
        why="the next beta of a path family bisected to 1e-10: about 35 evaluations of every "
            "particle's log target per step, 56 % of the NB SMC's CPU on a 50 x 25 matrix"),
    Mutation(
        id="smc-path-batch-unused", path=_SMC,
        old='getattr(family, "log_target_batch", None) if self.log_target else None',
        new="None",
        tests=(_SEARCH,),
        why="the batched log target is ignored: every trial beta recomputes each particle's "
            "means at the nonzeros (1.7x the cost per evaluation)"),
    Mutation(
        id="next-beta-near-upper-end", path=_SMC,
        old="    return lo if lo > beta else hi\n\n\ndef _check_settings",
        new="    return hi\n\n\ndef _check_settings",
        tests=(_NEAR,),
        why="the upper end of the bracket: the step's CESS falls below the target"),
    Mutation(
        id="next-beta-near-coarse", path=_SMC,
        old="    while hi - lo > max(rel * (lo - beta), tol * max(1.0, hi)):",
        new="    while hi - lo > max(0.5 * (lo - beta), tol * max(1.0, hi)):",
        tests=(_NEAR,),
        why="the bracket left at half the step: steps up to a third too short (more steps)"),
    Mutation(
        id="rounding-batch-total-unscaled", path=_RD,
        old="                    rest = alpha * np.log(alpha / (1.0 + alpha)) * beta * tot1",
        new="                    rest = alpha * np.log(alpha / (1.0 + alpha)) * tot1",
        tests=(_BATCH, _NBQ),
        why="the zeros' term of the batched NB log target not scaled by beta: the weights of "
            "the SMC from the prior and its log Z wrong"),
    Mutation(
        id="rounding-batch-ratio-without-p", path=_RD,
        old="log_ratio = np.log(n + r) - np.log1p(n) - np.log1p(a)",
        new="log_ratio = np.log(n + r) - np.log1p(n)",
        tests=(_BATCH,),
        why="the batched NB ratio P(n + 1) / P(n) without its factor 1 / (1 + alpha)"),
    Mutation(
        id="rounding-kept-rung-stale", path=_RD,
        old="        if last is not None and last[0] == beta:",
        new="        if last is not None:",
        tests=(_KEPT, _BATCH),
        why="the kept rung returned at any beta: sweeps and weights at a stale rounding"),
    # the bridge check: a prior-chain "mode" its own chains leave for an SMC mode is joined
    Mutation(
        id="bridge-transient-join-disabled", path=_MB,
        old='    joined = transient_prior_modes(out["left"], out["into"], K)',
        new="    joined = []",
        tests=(_TT + "test_a_prior_chain_on_its_way_into_an_smc_mode_is_joined_to_it",),
        why="a prior chain still on its way into the SMC's mode fails the check as a mode whose "
            "draws all left it (the 50 x 25 NB matrix at the default budget)"),
    Mutation(
        id="bridge-transient-joined-not-dropped", path=_MB,
        old='        keep = np.setdiff1d(np.arange(len(out["left"])), [k for k, _ in joined])',
        new='        keep = np.arange(len(out["left"]))',
        tests=(_TT + "test_a_prior_chain_on_its_way_into_an_smc_mode_is_joined_to_it",),
        why="the joined transient stays in the masses and the reasons"),
    Mutation(
        id="bridge-into-transposed", path=_MB,
        old="                            into[k, j] += 1.0 / (n_chains * draws)",
        new="                            into[j, k] += 1.0 / (n_chains * draws)",
        tests=(_TT + "test_bridge_masses_reports_where_the_leaving_draws_went",),
        why="where the leaving draws went recorded against the wrong mode"),
    Mutation(
        id="bridge-transient-half-left", path=_MB,
        old="        if left[k] > 1.0 - MAX_LEFT and j < K and into[k, j] > 0.5:",
        new="        if left[k] > MAX_LEFT and j < K and into[k, j] > 0.0:",
        tests=(_TT + "test_the_transient_rule_needs_nearly_all_draws_gone_into_an_smc_mode",),
        why="a mode that holds half its chains, or whose draws went nowhere known, joined"),
    # the bridge's error: autocorrelation, and no error bar without overlap
    Mutation(
        id="bridge-autocorrelation-ignored", path=_BR,
        old="    tau = integrated_time(lp1 - lq1, chain_of[br_idx])\n",
        new="    tau = 1.0\n",
        tests=(_TB + "test_bridge_interval_covers_log_z_from_autocorrelated_draws",),
        why="the target's part of the error treats autocorrelated chain draws as independent: "
            "the 2-se interval covers about 45 % of the time, not 90 %"),
    Mutation(
        id="bridge-overlap-rule-dropped", path=_BR,
        old="    if not min(overlap) >= MIN_OVERLAP:",
        new="    if False:",
        tests=(_TB + "test_bridge_without_overlap_reports_no_error_bar",),
        why="a bridge whose sums rest on one or two draws reports its error at the ceiling "
            "(about 1.4 nats) while it is 8 nats off"),
    Mutation(
        id="bridge-mode-infinite-error-kept", path=_MB,
        old="        if not math.isfinite(est.se):",
        new="        if False:",
        tests=(_TB + "test_per_mode_bridge_without_overlap_fails_the_mode",),
        why="a mode without an error bar keeps its finite log Z with an infinite error, so "
            "the check's comparison with the SMC passes whatever the values"),
    Mutation(
        id="bridge-warp-jacobian-dropped", path=_BR,
        old="        lp1, lq1 = lp1 - jac1, q.logpdf(y1)",
        new="        lp1, lq1 = lp1, q.logpdf(y1)",
        tests=(_WARP,),
        why="the warped target's draws lose the Jacobian |dy / dtheta| while the proposal's "
            "keep it: the two sides bridge different densities and log Z is off"),
    Mutation(
        id="bridge-warp-fitted-on-bridged-half", path=_BR,
        old="        q = GaussianProposal.fit(w.forward(theta[fit_idx])[0], shrinkage)",
        new="        q = GaussianProposal.fit(w.forward(post)[0], shrinkage)",
        tests=(_WARP,),
        why="the proposal fitted on the very draws it is bridged with (Overstall & Forster "
            "2010): in 150 dimensions it fits their noise, and log Z is biased"),
    Mutation(
        id="bridge-warp-out-of-image-draws-dropped", path=_BR,
        old="        prop, ok = w.inverse(y2)\n",
        new="        prop, ok = w.inverse(y2)\n        y2, prop, ok = y2[ok], prop[ok], ok[ok]\n",
        tests=(_WARP,),
        why="proposal draws outside the warp's image are dropped instead of counted with "
            "p = 0: the proposal is no longer the normalized normal its log density says"),
    Mutation(
        id="bridge-sized-draws-ignore-the-budget", path="bnmfzoo/inference/mode_bridge.py",
        old="                cap_s = min(MAX_SIZED_SWEEP_S, max(budget_left(), 0.0) / (M - k))\n",
        new="                cap_s = MAX_SIZED_SWEEP_S\n",
        tests=("tests/tempering/test_bridge_transient.py::"
               "test_the_sized_bridge_draws_stay_within_the_budget_left",),
        why="the NB bridge sizes its draws to 60 CPU s per mode whatever budget is left, so "
            "with many modes it overruns the command's budget"),
    Mutation(
        id="smc-poisson-mode-width-over-n-moves", path="bnmfzoo/inference/smc_masses.py",
        old='                   lambda s: (s["A"], s["W"]), width_sweeps=WIDTH_SWEEPS)\n',
        new=('                   lambda s: (s["A"], s["W"]),\n'
             '                   width_sweeps=0 if poisson else WIDTH_SWEEPS)\n'),
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_count_modes_width_is_measured_over_more_sweeps",),
        why="a Poisson mode's width is read over 2 sweeps: the cut splits an over-ranked "
            "ridge into 164 modes and checking them runs out of the budget"),
    Mutation(
        id="smc-gaussian-mode-width-over-n-moves", path="bnmfzoo/inference/smc_masses.py",
        old=('    return _Family("exponential_gaussian", fam, draw_prior, lambda s: (s.A, s.W),\n'
             '                   width_sweeps=WIDTH_SWEEPS)\n'),
        new='    return _Family("exponential_gaussian", fam, draw_prior, lambda s: (s.A, s.W))\n',
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_count_modes_width_is_measured_over_more_sweeps",),
        why="a Gaussian mode's width is read over the SMC's 10 sweeps: the cut splits an "
            "over-ranked ridge into clusters the check finds to be one mode, and the run is "
            "refused"),
]
