"""Mutations of the Gaussian-copula reference of a Poisson mode
(``bnmfzoo/inference/kernels/gamma_copula.py``), the HMC move with its term
(``bnmfzoo/inference/counts/tempering/_hmc_term.py`` and its glue in ``_local.py``) and the
adapter that draws, evaluates and moves it
(``bnmfzoo/inference/counts/tempering/_reference_poisson.py``; the negative binomial's in
``_reference_nb.py``, tests in ``test_copula_reference_nb.py``). Each is caught by a fast test of
``tests/tempering/test_copula_reference.py``: the density against scipy's Gaussian-copula
formula, exact draws against the marginals and the correlation, the gradient against central
differences, the fit against a dense recomputation, the move's invariance at ``b = 0`` (exact
draws of the reference) and at ``b = 0.5`` (sampling-importance-resampling draws), and the
SMC's log Z along the copula path against quadrature."""

from benchmarks.mutation._harness import Mutation

_GC = "bnmfzoo/inference/kernels/gamma_copula.py"
_LOCAL = "bnmfzoo/inference/counts/tempering/_local.py"
_HT = "bnmfzoo/inference/counts/tempering/_hmc_term.py"
_LOC = "bnmfzoo/inference/counts/tempering/_local.py"
_RPO = "bnmfzoo/inference/counts/tempering/_reference_poisson.py"
_T = "tests/tempering/test_copula_reference.py::"
_DENS = _T + "test_log_density_is_the_gaussian_copula_density"
_DRAW = _T + "test_exact_draws_have_the_marginals_and_the_correlation"
_GRAD = _T + "test_gradient_in_log_space_is_the_derivative_of_the_copula_term"
_FIT = _T + "test_fit_is_the_structured_correlation_of_the_scores_and_beats_the_product"
_B0 = _T + "test_the_move_keeps_the_reference_at_b0[False-0]"
_MID = _T + "test_the_move_keeps_an_intermediate_rung[0]"
_LOGZ = _T + "test_the_smc_along_the_copula_path_estimates_the_evidence"
_SUR = _T + "test_the_surrogate_gradient_is_close_to_the_exact_one"
_B0S = _T + "test_the_move_keeps_the_reference_at_b0[True-0]"
_CONS = _T + "test_small_steps_conserve_the_hamiltonian_with_the_term[True]"
_LR = "bnmfzoo/inference/large_route.py"
_RNB = "bnmfzoo/inference/counts/tempering/_reference_nb.py"
_TNB = "tests/tempering/test_copula_reference_nb.py::"
_NB_MID = _TNB + "test_the_nb_copula_move_keeps_an_intermediate_rung[0]"
_NB_LOGZ = _TNB + "test_the_smc_along_the_nb_copula_path_estimates_the_evidence"
_NB_CONS = _TNB + "test_small_steps_conserve_the_hamiltonian_with_the_nb_term"
_RP = "bnmfzoo/inference/reference_path.py"
_PM = _T + "test_the_per_mode_smc_runs_along_the_copula_path_when_asked[0]"
_B0M = _T + "test_the_move_keeps_the_reference_at_b0[compiled_mass-0]"
_CONSM = _T + "test_small_steps_conserve_the_hamiltonian_with_the_copula_mass"
_TRIM = ("tests/tempering/test_large_route.py::"
         "test_fit_chains_drop_each_chain_start_up_transient")
_COPY_PASS = ("tests/tempering/test_large_route.py::"
              "test_large_mode_masses_passes_the_copula_and_the_early_stop")
_COPY = ("tests/tempering/test_large_route.py::"
         "test_a_copy_the_fit_chains_show_is_dropped_before_its_smc")
_HC = "bnmfzoo/inference/counts/tempering/_hmc_copula.py"
_GS = "bnmfzoo/inference/kernels/gamma_scores.py"
_TK = "tests/tempering/test_copula_kernel.py::"
_B0C = _T + "test_the_move_keeps_the_reference_at_b0[compiled-0]"
_KFIELD = _TK + "test_the_compiled_field_is_the_surrogate_gradient"
_KSTEP = _TK + "test_one_transition_equals_the_numpy_form[0.4]"
_KSCORE = _TK + "test_incomplete_gamma_and_normal_quantile_match_scipy"
_LSPY = ("tests/tempering/test_large_route.py::"
         "test_large_mode_masses_passes_the_copula_and_the_early_stop")

MUTATIONS = [
    Mutation(
        id="copula-term-weight-b", path=_LOC,
        old="math.log(rng.uniform()), term, 1.0 - float(beta), term_grad,",
        new="math.log(rng.uniform()), term, float(beta), term_grad,",
        tests=(_B0, _MID),
        why="the copula's term weighted b instead of 1 - b: the rung near the reference loses "
            "the copula's correlation"),
    Mutation(
        id="copula-quadratic-sign", path=_GC,
        old="return float(-0.5 * self.log_det - 0.5 * z @ g), -g * dz",
        new="return float(-0.5 * self.log_det + 0.5 * z @ g), -g * dz",
        tests=(_B0, _GRAD),
        why="the copula's quadratic form with the wrong sign in the move's density: the "
            "Metropolis test targets the opposite correlation"),
    Mutation(
        id="copula-log-det-dropped", path=_GC,
        old="return float(-0.5 * self.log_det - 0.5 * z @ (self.solve(z) - z))",
        new="return float(-0.5 * z @ (self.solve(z) - z))",
        tests=(_DENS, _LOGZ),
        why="the copula's normalizing constant left out: log q is off by a constant and every "
            "evidence along the path with it"),
    Mutation(
        id="copula-draws-without-factors", path=_GC,
        old="            z += rng.standard_normal((n, self.U.shape[1])) @ self.U.T\n",
        new="            pass\n",
        tests=(_DRAW, _B0),
        why="exact draws of the reference without the low-rank part of the correlation"),
    Mutation(
        id="copula-woodbury-sign", path=_GC,
        old="        return y - self._binv_u @ t\n",
        new="        return y + self._binv_u @ t\n",
        tests=(_DENS,),
        why="Woodbury's identity with the wrong sign: C^-1 z is wrong"),
    Mutation(
        id="copula-upper-tail-sign", path=_GC,
        old="    z[up] = -ndtri(gammaincc(",
        new="    z[up] = ndtri(gammaincc(",
        tests=(_DENS, _DRAW),
        why="the normal score of the upper tail with the wrong sign"),
    Mutation(
        id="copula-gradient-chain-dropped", path=_GC,
        old="        return float(-0.5 * self.log_det - 0.5 * z @ g), -g * dz\n",
        new="        return float(-0.5 * self.log_det - 0.5 * z @ g), -g\n",
        tests=(_GRAD,),
        why="the gradient in z returned as the gradient in log x (dz / dtheta left out): the "
            "kernel stays exact but its trajectories are rejected"),
    Mutation(
        id="copula-fit-residual-kept", path=_GC,
        old='        resid = corr_b - np.einsum("mir,mjr->mij", ub, ub)\n',
        new="        resid = corr_b * 1.0\n",
        tests=(_FIT,),
        why="the blocks keep the whole sample correlation, the factors' share counted twice"),
    Mutation(
        id="copula-adapter-runs-the-product-sweep", path=_RPO,
        old='        if "copula" in q:\n            if self.moves.sweep or not self.moves.hmc:',
        new='        if False:\n            if self.moves.sweep or not self.moves.hmc:',
        tests=(_MID, _LOGZ),
        why="the copula path moved by the product reference's sweep (exact for another rung)"),
    Mutation(
        id="copula-adapter-log-q-product", path=_RPO,
        old='        if "copula" in q:\n            return q["copula"].logpdf(',
        new='        if False:\n            return q["copula"].logpdf(',
        tests=(_MID, _LOGZ),
        why="log q of the copula reference evaluated as the product of its marginals"),
    Mutation(
        id="copula-hmc-term-gradient-dropped", path=_HT,
        old="    gA += weight * g[:n].reshape(gA.shape)\n",
        new="",
        tests=(_CONS,),
        why="the copula term's gradient left out of A's kicks: trajectories ignore the "
            "correlation and are rejected, and the kernel, still exact, barely moves"),
    Mutation(
        id="copula-surrogate-chain-dropped", path=_GC,
        old="        dz[wh] = y * np.sqrt(a)\n",
        new="        dz[wh] = y\n",
        tests=(_SUR,),
        why="the Wilson-Hilferty scores' derivative without its factor sqrt(a): the kicks "
            "follow a wrong field (the kernel stays exact, its acceptance falls)"),
    Mutation(
        id="copula-surrogate-value-used-in-the-test", path=_HT,
        old="        v = term(theta)[0] if want_lp else 0.0\n",
        new="        v = 0.5 * float(g @ g) if want_lp else 0.0\n",
        tests=(_B0S,),
        why="the Metropolis test reads a value that is not the exact copula density when the "
            "kicks use the surrogate gradient"),
    Mutation(
        id="large-route-pt-copula-dropped", path=_LR,
        old="copula=copula, stop_trips=pt_trips, fitted_chains=fitted)",
        new="stop_trips=pt_trips, fitted_chains=fitted)",
        tests=(_LSPY,),
        why="the large route's tempering ignores copula=True while its settings say copula"),
    Mutation(
        id="large-route-no-early-stop", path=_LR,
        old="local=LARGE_LOCAL, n_leap=n_leap, early_stop=EARLY_STOP,\n",
        new="local=LARGE_LOCAL, n_leap=n_leap,\n",
        tests=(_LSPY,),
        why="the large route's SMC runs every mode's runs in full, however negligible (on "
            "ESCC two of three restart groups are 275 and 2,130 nats below the first)"),
    Mutation(
        id="large-route-copula-fit-by-hmc-draws", path=_LR,
        old="tempered=BudgetedSweep(family.tempered))",
        new="tempered=tempered)",
        tests=(_LSPY,),
        why="the large route's copula fitted to HMC chain draws: on ESCC its barrier 40 "
            "instead of 14 from as many latent-count sweep draws"),
    Mutation(
        id="large-route-tempering-ignores-the-trips", path=_LR,
        old="copula=copula, stop_trips=pt_trips, fitted_chains",
        new="copula=copula, fitted_chains",
        tests=(_LSPY,),
        why="the large route's tempering runs its scans whatever its round trips: sized from "
            "the product's ladder, the copula's runs stop early with the budget unspent"),
    Mutation(
        id="large-route-dear-tempering-unexplained", path=_LR,
        old="        reasons += too_dear_reasons(pt_out, MIN_ROUND_TRIPS)\n",
        new="",
        tests=("tests/tempering/test_large_route.py::"
               "test_large_route_says_when_a_tempering_was_too_dear_to_start",),
        why="a tempering too dear to start is reported as 'too few draws in the mode' (ESCC, "
            "copula, 900 s) instead of what it needs"),
    Mutation(
        id="large-route-cpu-short-unexplained", path=_LR,
        old="            reasons += cpu_short_reasons(pt_out, pt_trips, MIN_ROUND_TRIPS)\n",
        new="            pass\n",
        tests=("tests/tempering/test_large_route.py::"
               "test_large_route_says_what_a_tempering_ended_on_its_share_would_need",),
        why="a tempering run ended on its CPU share is refused without saying what CPU its "
            "mode would need (the sweep route says it)"),
    Mutation(
        id="copula-kept-by-barrier-alone", path="bnmfzoo/inference/reference_tempering.py",
        old="            if copula_pilot[k][1] < copula_pilot[k][2]:",
        new="            if lw < fitted[k][4]:",
        tests=("tests/tempering/test_large_route.py::"
               "test_the_copula_is_kept_where_its_runs_cost_less[1.0-not copula]",),
        why="the copula kept for a shorter path however dear its move (NB 80 x 40: barrier "
            "11.5 against 12.7 at 4 times the CPU per move, a floor above the budget)"),
    Mutation(
        id="masses-command-copula-off-by-default", path="bnmfzoo/_cli/masses.py",
        old="action=argparse.BooleanOptionalAction, default=True,",
        new="action=argparse.BooleanOptionalAction, default=False,",
        tests=("tests/frontends/test_masses_command.py::"
               "test_the_large_route_is_refused_from_its_full_predicted_cost",),
        why="the command's count routes stop piloting the copula: on Reuters 200 x 100 at "
            "K = 4 the tempering then costs 469 CPU s instead of 342"),
    Mutation(
        id="sweep-seconds-median-on-every-rung", path="bnmfzoo/inference/_mass_budget.py",
        old="    return float(np.mean(per) if every else np.median(per))",
        new="    return float(np.median(per))",
        tests=("tests/tempering/test_mass_budget_and_skip.py::"
               "test_sweep_seconds_on_every_rung_sees_moves_the_median_misses",),
        why="the copula's choice reads the median rung's move, which misses the HMC the "
            "product's runs add at the top rungs (0.45 against 1.92 ms per rung-scan on "
            "Reuters), and keeps the product where the copula is cheaper"),
    # the negative binomial's copula path (_reference_nb.py, _hmc_term.py with alpha)
    Mutation(
        id="nb-copula-dispersion-under-the-prior", path=_RNB,
        old="alpha=self.path.alpha_step(\n                replace(self.problem, **mix)",
        new="alpha=self.path.alpha_step(\n                self.problem",
        tests=(_NB_MID,),
        why="the copula path's dispersion step under the prior's Gamma instead of the rung's "
            "mixture with the reference's"),
    Mutation(
        id="nb-copula-dispersion-not-moved", path=_RNB,
        old="            s.update(A=A, W=W, alpha=self.path.alpha_step(",
        new="            s.update(A=A, W=W, _alpha=self.path.alpha_step(",
        tests=(_NB_MID,),
        why="the copula path moves the factors only: the dispersion keeps its start"),
    Mutation(
        id="nb-copula-log-q-without-dispersion", path=_RNB,
        old="                   + _gamma_logpdf(s[\"W\"], q[\"aW\"], q[\"bW\"]))\n"
            "        if self.learn_alpha:",
        new="                   + _gamma_logpdf(s[\"W\"], q[\"aW\"], q[\"bW\"]))\n"
            "        if self.learn_alpha and \"copula\" not in q:",
        tests=(_NB_MID, _NB_LOGZ),
        why="log q of the copula reference without the dispersion's Gamma: every weight and "
            "the path's evidence are wrong"),
    Mutation(
        id="nb-copula-draws-from-the-product", path=_RNB,
        old="        if \"copula\" in q:\n            D, N = self.problem.shape",
        new="        if False:\n            D, N = self.problem.shape",
        tests=(_NB_LOGZ,),
        why="the copula path's SMC starts from the product's draws while log q is the copula's"),
    Mutation(
        id="nb-copula-hmc-runs-the-poisson-density", path=_HT,
        old="    if alpha is not None:\n        lp = nb_log_density_grad(",
        new="    if False:\n        lp = nb_log_density_grad(",
        tests=(_NB_MID, _NB_CONS),
        why="the NB rung's HMC with the copula term evaluates the Poisson rung's density"),
    Mutation(
        id="per-mode-smc-ignores-the-copula", path=_RP,
        old="    cop = reference_adapter(family, \"hmc\", COPULA_LEAPFROG) if copula and (",
        new="    cop = reference_adapter(family, \"hmc\", COPULA_LEAPFROG) if False and (",
        tests=(_PM,),
        why="the per-mode SMC asked for the copula path runs along the product's"),
    Mutation(
        id="per-mode-smc-copula-step-by-the-chain", path=_RP,
        old="    for ad in (adapter, cop):",
        new="    for ad in (adapter,):",
        tests=(_PM,),
        why="the copula path's HMC step adapted by each chain within a temperature, not set "
            "per temperature from the population (the SMC's moves are then not fixed kernels)"),
    Mutation(
        id="per-mode-smc-moves-of-the-other-adapter", path=_RP,
        old="        moves = getattr(path.adapter, \"moves\", None)",
        new="        moves = getattr(adapter, \"moves\", None)",
        tests=(_PM,),
        why="the copula path's moves never reset between runs (the runs are not independent)"),
    Mutation(
        id="large-route-smc-from-the-product", path=_LR,
        old="                                  fitted=fitted, copula=copula)",
        new="                                  fitted=fitted)",
        tests=(_LSPY,),
        why="the large route's SMC runs along the product's path from the copula's fit draws "
            "(on ESCC SBS96 its log Z was 35 nats low)"),
    Mutation(
        id="large-route-tempering-refits-its-chains", path=_LR,
        old="copula=copula, stop_trips=pt_trips, fitted_chains=fitted)",
        new="copula=copula, stop_trips=pt_trips)",
        tests=(_LSPY,),
        why="the tempering runs its own fit chains again (about 48 CPU s per mode on ESCC)"),
    Mutation(
        id="large-route-copies-found-after-the-smc-only", path=_LR,
        old="        copy_of = fit_copies(fitted, cut)  # restarts'",
        new="        copy_of = {}  # restarts'",
        # the copy test's copy is now found by the short chains first (early_copies), so the
        # test that skips that check names this site
        tests=(_COPY, "tests/tempering/test_large_route.py::"
               "test_copies_the_full_fit_chains_show_are_merged_before_the_hmc_fit_draws"),
        why="a restart group the fit chains show to be a copy gets its own SMC runs (89 CPU s "
            "on ESCC SBS96 before it was dropped as a copy)"),
    Mutation(
        id="large-route-copy-restarts-not-counted", path=_LR,
        old="        counts[i] += counts[j]\n",
        new="        pass\n",
        tests=(_COPY,),
        why="the restarts that reached a mode through a copy are not counted for it"),
    Mutation(
        id="large-route-floor-counts-the-product-smc", path=_LR,
        old="COPULA_MOVE_FACTOR) if copula else",
        new="COPULA_MOVE_FACTOR) if False else",
        tests=("tests/frontends/test_masses_command.py::"
               "test_the_large_route_is_refused_from_its_full_predicted_cost",),
        why="the refusal floor counts the product path's SMC where the copula's runs (a third "
            "of the temperatures): no longer a floor of what the route spends"),
    Mutation(
        id="copula-compiled-term-weight-b", path=_LOC,
        old="                1.0 - float(beta))\n        if term is not None:",
        new="                float(beta))\n        if term is not None:",
        tests=(_B0C,),
        why="the compiled move weights the copula's term b instead of 1 - b: at b = 0 the rung "
            "loses the copula's correlation"),
    Mutation(
        id="copula-compiled-end-without-the-term", path=_HC,
        old="        return lp + weight * v if math.isfinite(v) else math.nan",
        new="        return lp if math.isfinite(v) else math.nan",
        tests=(_B0C, _KSTEP),
        why="the compiled move's Metropolis test leaves out the copula's exact density: it "
            "targets the product of Gammas"),
    Mutation(
        id="copula-compiled-field-sign", path=_GS,
        old="        out[i] = -(out[i] - z[i]) * dz[i]",
        new="        out[i] = (out[i] - z[i]) * dz[i]",
        tests=(_KFIELD, _KSTEP),
        why="the compiled kicks push against the copula's gradient (the target is kept by the "
            "exact test; only the acceptance falls, so the equivalence tests must see it)"),
    Mutation(
        id="copula-compiled-woodbury-sign", path=_GS,
        old="            out[i] -= acc",
        new="            out[i] += acc",
        tests=(_KFIELD, _KSTEP),
        why="Woodbury's correction added instead of subtracted: the kicks use the wrong "
            "inverse correlation"),
    Mutation(
        id="copula-compiled-theta-order-of-w",
        path="bnmfzoo/inference/counts/tempering/_hmc_term.py",
        old="            theta[D * K + k * N + n] = tWt[n, k]",
        new="            theta[D * K + n * K + k] = tWt[n, k]",
        tests=(_TK + "test_theta_is_in_the_order_of_the_adapters_draws",),
        why="log W read column by column where the copula's order is row by row: the field is "
            "evaluated at a permuted state"),
    Mutation(
        id="copula-compiled-score-tail", path=_GS,
        old="    if p > 0.5:\n        z = -normal_quantile(q)",
        new="    if p > 0.5:\n        z = normal_quantile(q)",
        tests=(_KFIELD,),
        why="the upper tail's exact score with the wrong sign (shapes below 1)"),
    Mutation(
        id="gamma-scores-halley-sign", path=_GS,
        old="    return x - u / den",
        new="    return x + u / den",
        tests=(_KSCORE,),
        why="the normal quantile's refinement step goes the wrong way (error 1e-9 instead of "
            "1e-15)"),
    Mutation(
        id="dense-grad-divides-before-the-check", path="bnmfzoo/inference/counts/_hmc_kernels.py",
        old="""            if not (m > 0.0 and m < np.inf):
                return np.nan, np.empty((0, 0))
            R[d, n] = beta * (X[d, n] / m - Of[d, n])""",
        new="""            R[d, n] = beta * (X[d, n] / m - Of[d, n])
            if not (m > 0.0 and m < np.inf):
                return np.nan, np.empty((0, 0))""",
        tests=(_TK + "test_one_transition_equals_the_numpy_form[0.4]",),
        why="the dense gradient divides by a mean before checking it: compiled code raises "
            "ZeroDivisionError where a trajectory whose mean underflows must be rejected (a "
            "masses run on 214 ESCC genomes at K = 6 ended on it)"),
    Mutation(
        id="copula-memo-keyed-by-the-first-entry", path=_GC,
        old="        key = x.tobytes()",
        new="        key = x[:1].tobytes()",
        tests=(_TK + "test_the_memo_of_the_copula_term_returns_the_same_values_and_stays_"
               "bounded", _MID),
        why="the copula term's memo keyed by part of the point: a stale value for a new point "
            "(the path's log-likelihood and the Metropolis test go wrong)"),
    Mutation(
        id="copula-log-point-hands-out-the-memo", path=_GC,
        old="        return np.log(x) if t is None else t.copy()",
        new="        return np.log(x) if t is None else t",
        tests=(_T + "test_a_move_starts_from_the_exact_log_its_last_move_ended_at",),
        why="the remembered log of a point handed out without a copy: a move changes it in "
            "place, and the next state at that point (a resampled copy) starts elsewhere"),
    Mutation(
        id="copula-compiled-move-result-stale", path=_LOCAL,
        old=("                A, Wt = x[:A.size].reshape(A.shape), "
             "x[A.size:].reshape(Wt.shape[::-1]).T"),
        new="                pass",
        tests=(_T + "test_the_move_keeps_the_reference_at_b0[compiled-0]",),
        why="the compiled copula move's end dropped: the state stays where it was while the "
            "memo remembers the end, so nothing moves A W"),
    Mutation(
        id="copula-log-point-forgets", path=_GC,
        old="        return np.log(x) if t is None else t.copy()",
        new="        return np.log(x)",
        tests=(_T + "test_a_move_starts_from_the_exact_log_its_last_move_ended_at",),
        why="each transition starts from log x, a neighbour of where the last one ended: the "
            "exact copula term (the incomplete gamma functions) is computed twice per "
            "transition (14 % of a rung-scan on 214 ESCC genomes at K = 6)"),
    Mutation(
        id="fit-chains-keep-their-transient", path=_RP,
        old="        if trim:\n            fits = [_after_transients(f) for f in fits]\n",
        new="",
        tests=(_TRIM,),
        why="the fit chains' start-up transients stay in the draws a reference is fitted to "
            "(on ESCC SBS96 at K = 4: a copula 6,932 nats of Jeffreys divergence from the "
            "posterior instead of 102, three times the SMC's temperatures)"),
    Mutation(
        id="large-route-fits-to-the-transient", path=_LR,
        old=("                                           rng, cut, n_chains, pt_draws, thin, "
             "n_burn,\n                                           trim=True, extend=0)"),
        new=("                                           rng, cut, n_chains, pt_draws, thin, "
             "n_burn,\n                                           trim=False, extend=0)"),
        tests=(_COPY_PASS,),
        why="the large route's copula fitted to fit chains with their start-up transients"),
    Mutation(
        id="transient-cut-uncapped", path="bnmfzoo/diagnostics/_transient.py",
        old="    cap = (n + 1) // 2\n",
        new="    cap = n - 1\n",
        tests=("tests/diagnostics/test_transient.py::"
               "test_each_chain_is_cut_at_its_own_transient_and_at_most_half",),
        why="a chain that never settles is cut to its last draws instead of reported at the "
            "cap (half the chain)"),
    Mutation(
        id="copula-lanczos-pairs-mismatched", path=_GC,
        old="    return s[order], vt[order]\n",
        new="    return s[order], vt[order][::-1]\n",
        tests=(_T + "test_a_large_fit_keeps_the_leading_factors_of_the_full_svd",),
        why="a large fit's leading singular values paired with the wrong vectors: U U' is not "
            "the scores' leading correlation"),
    Mutation(
        id="copula-mass-momentum-diagonal", path=_HC,
        old="    return copula.solve(copula.draw_scores(rng)) / s",
        new="    return rng.standard_normal(s.size) / s",
        tests=(_B0M,),
        why="the momentum drawn for the diagonal mass while the kinetic energy and the drift "
            "use the copula's: the Hamiltonian is conserved, but the move leaves q's draws "
            "with another distribution"),
    Mutation(
        id="copula-mass-kinetic-diagonal", path=_HC,
        old=("    k0 = 0.5 * copula_velocity(p, scale, copula.blocks, copula.block_cov, "
             "copula.U, v)"),
        new="    k0 = 0.5 * float(np.sum(scale * scale * p * p))",
        tests=(_CONSM,),
        why="the start's kinetic energy taken with the diagonal mass: the Metropolis test "
            "compares two different Hamiltonians"),
    Mutation(
        id="copula-mass-drift-diagonal", path=_HC,
        old="            theta[i] += eps * v[i]",
        new="            theta[i] += eps * s[i] * s[i] * p[i]",
        tests=(_CONSM,),
        why="the drift moves with the diagonal mass while the kinetic energy is the copula's: "
            "the leapfrog no longer integrates the Hamiltonian the test uses"),
    Mutation(
        id="copula-mass-term-weight-b", path=_LOC,
        old="copula, 1.0 - float(beta), rng)",
        new="copula, float(beta), rng)",
        tests=(_B0M,),
        why="the move with the copula's mass weights the copula's term b instead of 1 - b: at "
            "b = 0 the rung loses the copula's correlation"),
    Mutation(
        id="copula-memo-key-without-the-widening",
        path="bnmfzoo/inference/counts/tempering/_reference_poisson.py",
        old="    key = (draws.shape, float(widen), int(n_factors), np.asarray(blocks).tobytes(),",
        new="    key = (draws.shape, 1.0, int(n_factors), np.asarray(blocks).tobytes(),",
        tests=("tests/tempering/test_copula_reference.py::"
               "test_the_adapter_remembers_its_last_copula_fit",),
        why="a copula fitted at one widening is handed out for another: the tempering's pilot "
            "of a second widening would run the first's path"),
    Mutation(
        id="copula-memo-never-refits",
        path="bnmfzoo/inference/counts/tempering/_reference_poisson.py",
        old="    if last is None or last[0] != key:",
        new="    if last is None:",
        tests=("tests/tempering/test_copula_reference.py::"
               "test_the_adapter_remembers_its_last_copula_fit",),
        why="every mode after the first gets the first mode's copula"),
    Mutation(
        id="copula-unflat-order-of-w", path=_HT,
        old="            tWt[n, k] = theta[D * K + k * N + n]",
        new="            tWt[n, k] = theta[D * K + n * K + k]",
        tests=(_TK + "test_theta_is_in_the_order_of_the_adapters_draws",),
        why="the copula-mass trajectory writes its positions back into log W transposed: each "
            "leapfrog step's gradient is taken at a permuted state"),
]
