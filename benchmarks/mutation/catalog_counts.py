"""Mutations of the count wing: latent-count split, conjugate Gamma draws, exposures (offsets,
missing cells), the NB CRT augmentation and the VB bound; NB VB (tables, rates) and the tempered
path of both families (rounding bits, exposures, swap target)."""

from benchmarks.mutation._harness import Mutation

_DATA = "bnmfzoo/inference/counts/_data.py"
_SWEEP = "bnmfzoo/inference/counts/sweep.py"
_VB = "bnmfzoo/inference/counts/variational/_vb_core.py"
_MOVES = "bnmfzoo/inference/counts/gibbs/_moves.py"
_COMP = "bnmfzoo/inference/counts/gibbs/_compiled.py"
_TP = "bnmfzoo/inference/counts/tempering/_rounding.py"
_STREAMS = "bnmfzoo/inference/kernels/streams.py"
_TPW = "tests/counts/test_counts_power.py"
_TS = "tests/counts/test_counts_sweeps.py"
_T = "tests/counts/test_counts_gibbs.py"
_TV = "tests/counts/test_counts_vb.py"
_NBVB = "bnmfzoo/inference/counts/variational/vb_nb.py"
_TNV = "tests/counts/test_counts_vb_nb.py"
_TNT = "tests/counts/test_counts_tempering_nb.py"
_TI = ("tests/counts/test_counts_user_models.py::"
       "test_imputed_counts_follow_the_posterior_predictive"
       "[poisson]")
_TI2 = ("tests/counts/test_counts_user_models.py::"
        "test_imputed_counts_follow_the_posterior_predictive"
        "[nb2]")
_GP = "bnmfzoo/inference/counts/gibbs/gibbs_poisson.py"
_TX = "tests/gaussian/test_exact_conditionals.py::"
_VAR = "bnmfzoo/inference/kernels/variates.py"
_CRT = "bnmfzoo/inference/kernels/crt.py"
_TE = "tests/counts/test_counts_exact.py::"
_TIN = "tests/frontends/test_interrupts.py::"
_TXC = "tests/counts/test_exact_conditionals_counts.py::"
_MARG = "bnmfzoo/inference/counts/gibbs/_marginal.py"
_TM = "tests/counts/test_counts_marginal.py::"
_HMC = "bnmfzoo/inference/counts/gibbs/_hmc_moves.py"
_HK = "bnmfzoo/inference/counts/_hmc_kernels.py"  # the gradients HMC shares
_TH = "tests/counts/test_counts_hmc_moves.py::"
_THR = "tests/counts/test_counts_hmc_rescale.py::"
_HF = "bnmfzoo/inference/counts/_hmc_fused.py"  # HmcPoisson's dense gradient
_THF = "tests/counts/test_counts_hmc_fused.py::"
_HSP = "bnmfzoo/inference/counts/_hmc_kernels.py"
_THS = "tests/counts/test_counts_hmc_sparse.py::"

MUTATIONS = [
    Mutation(
        id="counts-gamma-shape-misses-prior", path=_SWEEP,
        old="gamma_draws(rng, shape_prior + Z, rate_prior + E)",
        new="gamma_draws(rng, 1.0 + Z, rate_prior + E)",
        tests=(f"{_T}::test_sbc_counts[poisson-1]",),
        why="conjugate Gamma shape misses the prior shape (assumes an Exponential prior; the "
            "SBC cases use shape 2)"),
    Mutation(
        id="counts-rate-misses-row-offset", path=_DATA,
        old="        base = s[:, None] * (W @ c)[None, :]\n",
        new="        base = np.ones_like(s)[:, None] * (W @ c)[None, :]\n",
        tests=(f"{_T}::test_loglik_sparse_equals_dense_model",
               f"{_T}::test_sbc_counts[poisson-missing-offsets-1]"),
        why="the Gamma rate (exposure) of A misses the row offsets s_d"),
    Mutation(
        id="counts-split-without-W", path=_SWEEP,
        old="            tot += A[d, k] * Wt[n, k]\n            cum[k] = tot\n",
        new="            tot += A[d, k]\n            cum[k] = tot\n",
        tests=(f"{_T}::test_posterior_means_match_importance_sampling",),
        why="split probabilities proportional to A_dk only, without W_kn (100 SBC simulations "
            "of the 3 x 4 case did not see it)"),
    Mutation(
        id="counts-stale-A-in-W-rate", path=_SWEEP,
        old="EW = exposures(expo, A.T, transpose=True)",
        new="EW = exposures(expo, state[\"A\"].T, transpose=True)",
        tests=(f"{_T}::test_posterior_means_match_importance_sampling",),
        why="stale statistic: W's Gamma rate uses the A from before this sweep's A draw (100 "
            "SBC simulations of the 3 x 4 case did not see it: 1 passed)"),
    Mutation(
        id="counts-tiled-counts-misaligned", path=_DATA,
        old="        return (rows[order].astype(np.int32), self.cols[order].copy(),\n"
            "                self.counts[order].copy())\n",
        new="        old = np.lexsort((cols, rows, cols // TILE_COLUMNS))\n"
            "        return (rows[order].astype(np.int32), self.cols[order].copy(),\n"
            "                self.counts[old].copy())\n",
        tests=(f"{_T}::test_split_keeps_every_count_and_advances_the_generator",),
        why="tiled order: the counts permuted by the order without the count key, so they no "
            "longer belong to their (row, column)"),
    Mutation(
        id="counts-split-state-not-saved", path=_SWEEP,
        old="    state[0], state[1], state[2], state[3] = s0, s1, s2, s3\n",
        new="",
        tests=(f"{_T}::test_split_keeps_every_count_and_advances_the_generator",),
        why="the split's register copy of the xoshiro state is not written back: the next "
            "sweep replays the same uniforms"),
    Mutation(
        id="counts-missing-cells-in-mu", path=_DATA,
        old="        if rows.size:\n            _missing_correction(",
        new="        if False:\n            _missing_correction(",
        tests=(f"{_T}::test_exposure_skips_missing_cells",
               f"{_T}::test_sbc_counts[poisson-missing-offsets-1]"),
        why="missing cells counted in the -mu term (exposures over every cell)"),
    Mutation(
        id="counts-crt-off-by-one", path=_CRT,
        old="if next_uniform(state) * (r + i) < r:",
        new="if next_uniform(state) * (r + i + 1) < r:",
        tests=(f"{_T}::test_nb_augmentation_matches_enumeration",),
        why="CRT table probability r / (r + i + 1) instead of r / (r + i)"),
    Mutation(
        id="counts-nb-rate-factor-missing-alpha", path=_SWEEP,
        old="    return alpha * math.log1p(1.0 / alpha)\n",
        new="    return math.log1p(1.0 / alpha)\n",
        tests=(f"{_T}::test_sbc_counts[nb-1]",),
        why="Poisson rate of the CRT tables misses the factor alpha (r = alpha mu)"),
    Mutation(
        id="counts-tempered-rounding-ignores-rate", path=_TP,
        old="logit = rung.log_f + log_ratio - rung.log_1mf",
        new="logit = rung.log_f - rung.log_1mf",
        tests=(f"{_T}::test_tempered_sweep_keeps_its_marginal",),
        why="tempered sweep: each rounding bit drawn from its prior f, not from its conditional "
            "given A, W (the fixed-fraction rounding of a different path)"),
    Mutation(
        id="counts-tempered-unscaled-exposure", path=_TP,
        old="            scaled = dataclasses.replace(p, data=data, expo=rung.expo,\n",
        new="            scaled = dataclasses.replace(p, data=data, expo=p.expo,\n",
        tests=(f"{_T}::test_tempered_sweep_keeps_its_marginal",),
        why="tempered sweep: the scaled counts at the unscaled exposures o (not beta o)"),
    Mutation(
        id="counts-tempered-swap-target-misses-rounding", path=_TP,
        old="        return float(np.sum(base + mix) + rest)\n",
        new="        return float(np.sum(base) + rest)\n",
        tests=(f"{_T}::test_tempered_sweep_keeps_its_marginal",),
        why="swap target: the rounded-down term alone (the latent bit's mixture dropped)"),
    Mutation(
        id="counts-nbtemper-up-ratio-misses-p", path=_TP,
        old="np.log1p(rung.n) - math.log1p(alpha))",
        new="np.log1p(rung.n))",
        tests=(f"{_TNT}::test_tempered_sweep_matches_quadrature",),
        why="tempered NB: P(n + 1) / P(n) without the factor 1 - p = 1 / (1 + alpha)"),
    Mutation(
        id="counts-nbtemper-swap-target-misses-rate-term", path=_TP,
        old="            rest = alpha * math.log(alpha / (1.0 + alpha)) * total\n",
        new="            rest = 0.0\n",
        tests=(f"{_TNT}::test_nb_replica_exchange_cold_chain_matches_gibbs",),
        why="tempered NB swap target: the r log p term of every observed cell dropped"),
    Mutation(
        id="counts-rescale-without-jacobian", path=_MOVES,
        old='out["P"] = out["aA"].sum(axis=0) - out["aWt"].sum(axis=0)',
        new='out["P"] = (out["aA"] - 1.0).sum(axis=0) - (out["aWt"] - 1.0).sum(axis=0)',
        tests=(f"{_TS}::test_group_moves_keep_the_prior[rescale]",),
        why="rescaling move: the scale's conditional without the Jacobian c^(D - N) and the "
            "Haar measure dc / c (the exponent is the prior's shapes minus one)"),
    Mutation(
        id="counts-shear-rate-sign", path=_MOVES,
        old="        lin -= bA[d, k] * A[d, j]\n",
        new="        lin += bA[d, k] * A[d, j]\n",
        tests=(f"{_TS}::test_group_moves_keep_the_prior[shear]",),
        why="shear move: the prior rate term of A[:, k] - t A[:, j] with the wrong sign"),
    Mutation(
        id="counts-shear-skips-shapes-below-one", path=_MOVES,
        old="        if aWt[n, j] != 1.0:",
        new="        if aWt[n, j] > 1.0:",
        tests=(f"{_TS}::test_group_moves_keep_the_prior[shear]",),
        why="shear move: the log term of W's Gamma prior is skipped for shapes below 1 too "
            "(the fast path for shape-1 priors taken too widely)"),
    Mutation(
        id="counts-compiled-gamma-shape-misses-prior", path=_SWEEP,
        old="v = np.random.gamma(a[i, k] + Z[i, k], ",
        new="v = np.random.gamma(1.0 + Z[i, k], ",
        tests=(f"{_TS}::test_sbc_compiled_sweeps[poisson]",
               f"{_T}::test_posterior_means_match_importance_sampling[X2-1-400000-20000-compiled]"),
        why="compiled sweep: A's conjugate shape misses the prior shape (the SBC cases use "
            "shape 2; after the count-sorted split the SBC at seed 1 no longer saw it)"),
    Mutation(
        id="counts-gig-mode-shift-sign", path="bnmfzoo/inference/kernels/gig.py",
        old="        a1 = 2.0 * m * (p - 1.0) / b - 1.0\n",
        new="        a1 = 2.0 * m * (p + 1.0) / b - 1.0\n",
        tests=(f"{_TS}::test_gig_matches_scipy",),
        why="GIG ratio-of-uniforms bounding box from a wrong cubic (sign typo)"),
    Mutation(
        id="counts-vb-bound-misses-W-kl", path=_VB,
        old="    B += gamma_entropy_terms(problem.aW, EbW, ElbW, state.aW, state.bW)\n",
        new="",
        tests=(f"{_TV}::test_bound_below_evidence",),
        why="VB bound without W's prior/entropy terms (a bound that is not one)"),
    Mutation(
        id="counts-power-no-latent-t", path=_SWEEP,
        old="scale * _with_extra(exposures(expo, W), extra, rows, cols, W))",
        new="scale * exposures(expo, W))",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: A's Gamma rate misses the latent t_dn o_dn W_kn (the sweep then "
            "targets mu^ceil(beta x) instead of mu^(beta x))"),
    Mutation(
        id="counts-power-t-wrong-shape", path=_SWEEP,
        old="rng.gamma(rung.delta[frac], 1.0 / mu[frac])",
        new="rng.gamma(1.0 - rung.delta[frac], 1.0 / mu[frac])",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: t_dn drawn with shape 1 - delta instead of delta"),
    Mutation(
        id="counts-power-exposure-unscaled", path=_SWEEP,
        old="        expo = power.expo\n", new="        expo = problem.expo\n",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: the exposures sum o W, not beta o W (exp(-mu) untempered)"),
    Mutation(
        id="counts-power-t-without-offsets", path=_SWEEP,
        old="t_o = rng.gamma(rung.delta[frac], 1.0 / mu[frac]) * o[frac]",
        new="t_o = rng.gamma(rung.delta[frac], 1.0 / mu[frac])",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: the latent t's exposure misses the cell's offset o_dn"),
    Mutation(
        id="counts-nbvb-tables-are-counts", path="bnmfzoo/inference/kernels/countvb.py",
        old="we = alpha * offsets_nz[e] * psi_diff(counts[e], alpha * M[e])",
        new="we = counts[e] / M[e] * offsets_nz[e]",
        tests=(f"{_TNV}::test_nb_fixed_point_is_stationary",),
        why="NB VB: the expected CRT tables replaced by the expected split counts (the "
            "Poisson update: x share_k instead of R_k (psi(x + S) - psi(S)))"),
    Mutation(
        id="counts-nbvb-rate-misses-table-factor", path=_NBVB,
        old="    c = nb_rate_factor(alpha)\n", new="    c = 1.0\n",
        tests=(f"{_TNV}::test_nb_fixed_point_is_stationary",),
        why="NB VB: the Gamma rates of A, W miss the tables' rate factor alpha log(1 + 1/alpha)"),
    Mutation(
        id="counts-nb-evidence-misses-jacobian", path=_NBVB,
        old="            fu = _objective(problem, math.exp(u), M, total) + u\n",
        new="            fu = _objective(problem, math.exp(u), M, total)\n",
        tests=(f"{_TNV}::test_alpha_integrated_bound_lies_below_evidence",),
        why="NB rank-selection bound: q(log alpha) integrates the density of alpha without the "
            "Jacobian of u = log alpha"),
    Mutation(
        id="counts-nb-evidence-entropy-doubled", path=_NBVB,
        old="0.5 * math.log(2.0 * math.pi * math.e * s * s)",
        new="math.log(2.0 * math.pi * math.e * s * s)",
        tests=(f"{_TNV}::test_alpha_integrated_bound_lies_below_evidence",),
        why="NB rank-selection bound: the Gaussian entropy of q(log alpha) counted twice"),
    Mutation(
        id="counts-impute-without-offset", path=_GP,
        old="imputed.rows, imputed.cols, imputed.offsets)",
        new="imputed.rows, imputed.cols, np.ones_like(imputed.offsets))",
        tests=(_TI,),
        why="PyMC's imputed counts drawn from A @ W without their cell's offset"),
    Mutation(
        id="counts-impute-without-noise", path=_GP,
        old="        return rng.poisson(mu)\n", new="        return np.rint(mu).astype(np.int64)\n",
        tests=(_TI,),
        why="imputed counts set to their rounded mean instead of a Poisson draw"),
    Mutation(
        id="counts-impute-stale-factors", path=_GP,
        old="        self._write_imputed(new, state)\n",
        new="        self._write_imputed(new, self._state_from_point(point))\n",
        tests=(_TI,),
        why="imputed counts drawn from the previous draw's factors (right marginal, wrong "
            "joint with the factors written beside them)"),
    Mutation(
        id="counts-nb2-multiplier-ignores-mean", path=_SWEEP,
        old="g = rng.gamma(alpha + x, 1.0 / (alpha + mu))",
        new="g = rng.gamma(alpha + x, 1.0 / alpha)",
        tests=(_TI2,),
        why="NB2: the per-cell Gamma multiplier's rate misses the cell's mean (alpha + mu)"),
    Mutation(
        id="counts-nb2-exposure-without-multiplier", path=_SWEEP,
        old="rows, cols, offsets * g)", new="rows, cols, offsets)",
        tests=(_TI2,),
        why="NB2: the Gamma rates of A and W sum o W instead of g o W (a Poisson fit)"),
    Mutation(
        id="counts-nb2-alpha-without-prior", path=_SWEEP,
        old="return (a0 - 1.0) * math.log(a) - b0 * a + float(",
        new="return float(",
        tests=(_TI2,),
        why="NB2: the dispersion's slice target misses its Gamma prior"),
    Mutation(
        id="counts-nb2-imputed-as-other-nb", path=_GP,
        old='    if family == "nb2":\n        return rng.negative_binomial(alpha,',
        new='    if family == "nb2x":\n        return rng.negative_binomial(alpha,',
        tests=(_TI2,),
        why="NB2: PyMC's imputed counts drawn from the n = alpha mu NB (variance mu (1 + alpha) "
            "/ alpha instead of mu + mu^2 / alpha)"),
    # exact conditionals of every component (tests/gaussian/test_exact_conditionals.py)
    Mutation(
        id="exact-split-big-rest-not-reduced", path=_SWEEP,
        old="                rest -= p\n", new="                rest -= 0.0\n",
        tests=(_TX + "test_split_every_component_and_the_joint_are_multinomial",),
        why="sequential-binomial split (counts > BIG_COUNT) keeps the full total as the rest: "
            "component 0 exact, the later ones drawn with p_k / total instead of p_k / rest"),
    Mutation(
        id="exact-split-small-drops-last", path=_SWEEP,
        old="for j in range(K - 1):  # branchless", new="for j in range(K - 2):  # branchless",
        tests=(_TX + "test_split_every_component_and_the_joint_are_multinomial",),
        why="count-by-count split never reaches the last component (its units go to K - 2)"),
    Mutation(
        id="exact-split-seed-top-bit", path=_STREAMS,
        old="s = rng.integers(0, 2**64, size=4, dtype=np.uint64)",
        new="s = rng.integers(1, 2**63 - 1, size=4, dtype=np.uint64)",
        tests=(_TX + "test_split_every_component_and_the_joint_are_multinomial",),
        why="xoshiro256+ seeded with 63-bit words: the first uniform of each fresh state is "
            "triangular, biasing the first unit of every split (the bug the test found)"),
    Mutation(
        id="exact-compiled-gamma-rate-as-scale", path=_SWEEP,
        old="1.0 / (b[i, k] + E[i, k]))", new="(b[i, k] + E[i, k]))",
        tests=(_TX + "test_compiled_gamma_draws_of_every_entry_are_exact",),
        why="compiled conjugate draw of A and W (one kernel) with the rate passed as "
            "numpy's scale"),
    Mutation(
        id="exact-python-gamma-rate-as-scale", path=_VAR,
        old="rng.gamma(shape, 1.0 / rate)", new="rng.gamma(shape, rate)",
        tests=(_TX + "test_python_gamma_update_is_shape_rate",),
        why="the Python sweep's conjugate draw with the rate passed as numpy's scale"),
    Mutation(
        id="exact-compiled-rates-rate-as-scale", path=_SWEEP,
        old="lam[r] = max(np.random.gamma(sh[r], 1.0 / rt[r]), _TINY)",
        new="lam[r] = max(np.random.gamma(sh[r], rt[r]), _TINY)",
        tests=(_TX + "test_compiled_rate_draws_are_exact[ard]",),
        why="compiled conjugate draw of the ARD / HPF rates with the rate passed as numpy's "
            "scale"),
    Mutation(
        id="exact-binomial-inversion-off-by-one", path=_VAR,
        old="        if total > n:\n", new="        if total >= n:\n",
        tests=(_TE + "test_binomial_matches_scipy[20-0.3-0]",),
        why="binomial by geometric waiting times stops one trial early (a success on the "
            "n-th trial is lost)"),
    Mutation(
        id="exact-binomial-btrs-odds-as-probability", path=_VAR,
        old="    r = p / (1.0 - p)\n", new="    r = p\n",
        tests=(_TE + "test_binomial_matches_scipy[40-0.3-0]",),
        why="BTRS acceptance test with the success probability where the odds p / (1 - p) "
            "belong (the pmf ratio tilted)"),
    Mutation(
        id="exact-gamma-small-shape-boost", path=_VAR,
        old="out += math.log(open_uniform(state)) / a",
        new="out += math.log(open_uniform(state)) * a",
        tests=(_TE + "test_gamma_matches_scipy[0.5-0]",),
        why="Gamma(a) = Gamma(a + 1) U^(1/a) for a < 1 written with U^a"),
    Mutation(
        id="exact-multinomial-tail-keeps-current", path=_VAR,
        old="        for j in range(k + 1, K):\n", new="        for j in range(k, K):\n",
        tests=(_TE + "test_multinomial_marginals_and_pairs[0]",),
        why="sequential binomials: the remaining weight still counts the component just drawn"),
    Mutation(
        id="exact-dirmult-shape-off-by-one", path=_VAR,
        old="        g[k] = log_gamma(r[k], state)\n",
        new="        g[k] = log_gamma(r[k] + 1.0, state)\n",
        tests=(_TE + "test_dirichlet_multinomial_marginals_and_pairs[0]",),
        why="Dirichlet weights drawn with shapes r + 1 (the posterior's shape, not the prior's)"),
    Mutation(
        id="exact-crt-low-edge-uses-high", path=_CRT,
        old="        L = binomial(m, p_lo, state)\n", new="        L = binomial(m, p_hi, state)\n",
        tests=(_TE + "test_crt_blocks_match_exact_pmf[300-1.0-0]",),
        why="CRT blocks: the sure successes drawn at the block's highest probability"),
    Mutation(
        id="exact-crt-candidate-position-offset", path=_CRT,
        old="                i = a + buf[s]\n", new="                i = buf[s]\n",
        tests=(_TE + "test_crt_blocks_match_exact_pmf[2000-30.0-0]",),
        why="CRT candidates accepted at their position inside the block, not the customer's"),
    Mutation(
        id="exact-nb-big-crt-first-shape", path=_SWEEP,
        old="                tables = crt(x, R, state, work)\n",
        new="                tables = crt(x, r[0], state, work)\n",
        tests=(_TE + "test_tables_of_the_sum_have_the_law_of_the_tables_per_part[0-150-r0]",),
        why="large counts: the tables of the count drawn with one component's NB shape, not "
            "the cell's total"),
    Mutation(
        id="exact-nb-small-tables-split-evenly", path=_SWEEP,
        old="                    tot += r[k]\n                    cum[k] = tot\n",
        new="                    tot += 1.0\n                    cum[k] = tot\n",
        tests=(_TE + "test_tables_of_the_sum_have_the_law_of_the_tables_per_part"
                     "[1000000000-12-r1]",),
        why="a few tables placed evenly over the components, not in proportion to their "
            "shapes r_k"),
    Mutation(
        id="exact-nb-many-tables-split-evenly", path=_SWEEP,
        old="            elif multinomial_into(tables, r, n, state):\n",
        new="            elif multinomial_into(tables, np.ones(K), n, state):\n",
        tests=(_TE + "test_tables_of_the_sum_have_the_law_of_the_tables_per_part[0-150-r0]",),
        why="many tables split evenly over the components by the binomials"),
    Mutation(
        id="sweeps-chunks-reseed", path=_COMP,
        old="                              np_seed if done == 0 else -1, bool(marginal),",
        new="                              np_seed, bool(marginal),",
        tests=(_TE + "test_compiled_poisson_sweeps_do_not_depend_on_the_chunking",),
        why="the compiled sweeps reseed numba's generator at every chunk: the same Gamma "
            "draws repeat and the chain depends on the chunk size"),
    Mutation(
        id="interrupt-truncation-check-and", path="bnmfzoo/inference/_interrupt.py",
        old="    if got_c < chains or got_d < draws:\n",
        new="    if got_c < chains and got_d < draws:\n",
        tests=(_TIN + "test_truncated_result_is_refused",),
        why="a result with all chains but fewer draws (PyMC after a caught Ctrl-C) passes as "
            "complete"),
    Mutation(
        id="exact-nb2-multiplier-rate-as-scale", path=_SWEEP,
        old="    g = rng.gamma(alpha + x, 1.0 / (alpha + mu))\n",
        new="    g = rng.gamma(alpha + x, alpha + mu)\n",
        tests=(_TXC + "test_nb2_multipliers_of_every_cell_are_exact",),
        why="NB2: the per-cell Gamma multiplier drawn with its rate alpha + mu passed as "
            "numpy's scale"),
    Mutation(
        id="exact-nb2-alpha-prior-shape-off-by-one", path=_SWEEP,
        old="            return (a0 - 1.0) * math.log(a) - b0 * a + float(",
        new="            return a0 * math.log(a) - b0 * a + float(",
        tests=(_TXC + "test_nb2_alpha_slice_step_keeps_its_exact_conditional",),
        why="NB2: the dispersion's slice target with the Gamma prior's log density "
            "a0 log alpha instead of (a0 - 1) log alpha"),
    Mutation(
        id="exact-nb-slice-without-jacobian", path=_SWEEP,
        old="        return logpost(math.exp(u)) + u\n",
        new="        return logpost(math.exp(u))\n",
        tests=(_TXC + "test_nb_dispersion_slice_step_keeps_its_exact_conditional",),
        why="NB dispersion: slice sampling log alpha on the density of alpha, without the "
            "Jacobian of u = log alpha"),
    Mutation(
        id="exact-power-t-rate-as-scale", path=_SWEEP,
        old="rng.gamma(rung.delta[frac], 1.0 / mu[frac])",
        new="rng.gamma(rung.delta[frac], mu[frac])",
        tests=(_TXC + "test_power_sweep_latent_t_and_conjugate_draws_are_exact",),
        why="power posterior: the latent t_dn drawn with its rate mu_dn passed as numpy's "
            "scale"),
    Mutation(
        id="exact-power-W-rate-misses-t", path=_SWEEP,
        old="_with_extra(EW, extra, cols, rows, np.asarray(A).T).T",
        new="EW.T",
        tests=(_TXC + "test_power_sweep_latent_t_and_conjugate_draws_are_exact",),
        why="power posterior: W's conjugate Gamma rate misses sum_d t_dn o_dn A_dk (A's "
            "keeps it)"),
    Mutation(
        id="exact-tempered-up-ratio-off-by-one", path=_TP,
        old="np.log(mu) - np.log1p(rung.n)",
        new="np.log(mu) - np.log(rung.n + 2.0)",
        tests=(_TXC + "test_tempered_rounding_bits_of_every_cell_are_exact[poisson]",),
        why="tempered Poisson: the rounding bit's ratio P(n + 1) / P(n) written mu / (n + 2)"),
    Mutation(
        id="exact-vb-W-reads-old-A", path=_VB,
        old="    state = VBState(aA, bA, state.aW, state.bW, state.rates)\n",
        new="    state = VBState(state.aA, state.bA, state.aW, state.bW, state.rates)\n",
        tests=(_TXC + "test_poisson_vb_update_is_the_stated_coordinate_ascent",),
        why="VB update order: q(W) updated with the old q(A) (a Jacobi round: same fixed "
            "points, another path)"),
    Mutation(
        id="exact-tempered-bits-share-one-uniform", path=_TP,
        old="up = rng.random(rung.n.size) * (1.0 + np.exp(-logit)) < 1.0",
        new="up = rng.random() * (1.0 + np.exp(-logit)) < 1.0",
        tests=(_TXC + "test_tempered_rounding_bits_of_every_cell_are_exact[poisson]",),
        why="tempered path: one uniform shared by every cell's rounding bit (each bit's "
            "marginal exact, the bits comonotone instead of independent)"),
    Mutation(
        id="exact-tempered-nb-shape-without-alpha", path=_TP,
        old="np.log(rung.n + alpha * mu) - np.log1p(rung.n)",
        new="np.log(rung.n + mu) - np.log1p(rung.n)",
        tests=(_TXC + "test_tempered_rounding_bits_of_every_cell_are_exact[negative_binomial]",),
        why="tempered NB: the rounding bit's ratio P(n + 1) / P(n) with the mean mu where the "
            "NB shape r = alpha mu belongs"),
    Mutation(
        id="counts-marginal-drops-proposal-ratio", path=_MARG,
        old="log_ratio = f1 - f0 + _logq(u0, mode, L, nu, r) - _logq(u1, mode, L, nu, r)",
        new="log_ratio = f1 - f0",
        tests=(_TM + "test_marginal_move_keeps_the_prior",),
        why="marginal move: the independence proposal's density ratio left out (a Metropolis "
            "rule for a symmetric proposal)"),
    Mutation(
        id="counts-marginal-target-misses-jacobian", path=_MARG,
        old="        out += a[k] * u[k] - c[k] * math.exp(u[k])\n",
        new="        out += (a[k] - 1.0) * u[k] - c[k] * math.exp(u[k])\n",
        tests=(_TM + "test_marginal_move_keeps_the_prior",),
        why="marginal move: the target of u = log F misses the Jacobian e^u of the log"),
    Mutation(
        id="counts-marginal-rate-misses-exposure", path=_MARG,
        old="            c[k] = E[m, k] + b[m, k]\n",
        new="            c[k] = b[m, k]\n",
        tests=(_TM + "test_marginal_move_keeps_the_prior",
               _TM + "test_sbc_compiled_sweeps_with_marginal_moves[poisson]"),
        why="marginal move: the row's rate misses the exposure sum_j o_mj G_jk (the zero "
            "cells' likelihood)"),
    Mutation(
        id="counts-marginal-W-move-stale-exposure", path=_COMP,
        old="                exposure_into(A, c, s, mcols, mrows, separable, ecols, erows, eoffs, "
            "EWt)\n                code, _acc = marginal_rows_into(tindptr",
        new="                code, _acc = marginal_rows_into(tindptr",
        tests=(_TM + "test_sbc_compiled_sweeps_with_marginal_moves[poisson]",
               _TM + "test_sbc_compiled_sweeps_with_marginal_moves[poisson-missing-offsets]"),
        why="compiled sweep: the marginal move of W uses the exposures of the A before its own "
            "marginal move"),
    Mutation(
        id="counts-loglik-product-not-renormalized", path=_DATA,
        old="            if not (p > 1e-150 and p < 1e150):\n",
        new="            if not (p > 0.0 and p < np.inf):\n",
        tests=(_TM + "test_loglik_product_form_matches_scipy",),
        why="log-likelihood: the running product of the means of counts of 1 renormalized "
            "only once it has under- or overflowed"),
    Mutation(
        id="counts-hmc-target-misses-jacobian", path=_HK,
        old="                lp += a[i, k] * t[i, k] - r[i, k] * v\n",
        new="                lp += (a[i, k] - 1.0) * t[i, k] - r[i, k] * v\n",
        tests=(_TH + "test_hmc_transition_keeps_the_prior[cells]",
               _TH + "test_leapfrog_energy_error_is_second_order[cells]"),
        why="HMC: the log density of log A, log W misses the Jacobian e^theta (the gradient "
            "keeps it)"),
    Mutation(
        id="counts-hmc-mean-misses-offset", path=_HK,
        old="    return m * off\n",
        new="    return m\n",
        tests=(_TH + "test_hmc_transition_keeps_the_prior[cells]",
               _TH + "test_sbc_hmc_kernel[False]"),
        why="HMC: the cell means miss the exposure offsets (density and gradient alike)"),
    Mutation(
        id="counts-hmc-gradient-misses-offset", path=_HK,
        old="        r = beta * (x[c] / m - 1.0) * offs[c]\n",
        new="        r = beta * (x[c] / m - 1.0)\n",
        tests=(_TH + "test_leapfrog_energy_error_is_second_order[cells]",),
        why="HMC: the gradient misses the offset of the zero-count term (exact but slow: "
            "only the energy error's order shows it)"),
    Mutation(
        id="counts-hmc-final-kinetic-misses-mass", path=_HK,
        old="            k1 += 0.5 * imA[d, k] * pA[d, k] * pA[d, k]\n",
        new="            k1 += 0.5 * pA[d, k] * pA[d, k]\n",
        tests=(_TH + "test_hmc_transition_keeps_the_prior[cells]",
               _TH + "test_hmc_transition_keeps_the_prior[dense]"),
        why="HMC: the final kinetic energy of A ignores the mass"),
    Mutation(
        id="counts-hmc-dense-gradient-misses-offset", path=_HK,
        old="            R[d, n] = beta * (X[d, n] / m - Of[d, n])\n",
        new="            R[d, n] = beta * (X[d, n] / m - 1.0)\n",
        tests=(_TH + "test_leapfrog_energy_error_is_second_order[dense]",),
        why="HMC, dense form: the gradient's zero-count term misses the offsets"),
    Mutation(
        id="counts-hmc-dense-density-misses-offset", path=_HK,
        old="                    lp += beta * (X[d, n] * math.log(Of[d, n] * m) - Of[d, n] * m)\n",
        new="                    lp += beta * (X[d, n] * math.log(Of[d, n] * m) - m)\n",
        tests=(_TH + "test_hmc_transition_keeps_the_prior[dense]",),
        why="HMC, dense form: the log density's mean of a nonzero cell misses its offset"),
    Mutation(
        id="counts-hmc-adapts-after-tuning", path=_HMC,
        old="        if tune:\n",
        new="        if True:\n",
        tests=(_TH + "test_tuning_frozen_and_same_seed_same_draws",),
        why="HMC: the step size and mass keep adapting during the kept draws (not a fixed "
            "kernel)"),
    Mutation(
        id="counts-hmc-stop-tuning-does-not-freeze", path=_GP,
        old="            self._hmc.freeze()\n",
        new="",
        tests=(_TH + "test_tuning_frozen_and_same_seed_same_draws",),
        why="GibbsPoisson(moves='hmc'): the end of tuning does not fix the averaged step size"),
    Mutation(
        id="counts-hmc-kept-lengths-stop-at-uturn", path=_HMC,
        old="            return int(leaps[rng.integers(len(leaps))]), False\n",
        new="            return int(leaps[rng.integers(len(leaps))]), True\n",
        tests=(_TH + "test_learned_lengths_drawn_independently_of_the_state_and_capped",),
        why="HMC with learned lengths: the kept transitions stop at their U-turn (the length "
            "then depends on the state: the kernel is not reversible)"),
    Mutation(
        id="counts-hmc-tuning-ignores-max-leap", path=_HMC,
        old="        return self.max_leap, True\n",
        new="        return 4 * self.max_leap, True\n",
        tests=(_TH + "test_learned_lengths_drawn_independently_of_the_state_and_capped",),
        why="HMC with learned lengths: tuning trajectories run past max_leap (a draw's cost "
            "unbounded)"),
    Mutation(
        id="counts-hmc-lengths-ignore-step-size", path=_HMC,
        old="    return np.clip(np.ceil(t / eps), 1, max_leap).astype(np.int64)\n",
        new="    return np.clip(np.ceil(t), 1, max_leap).astype(np.int64)\n",
        tests=(_TH + "test_learned_lengths_drawn_independently_of_the_state_and_capped",),
        why="HMC with learned lengths: the trajectory times become steps without dividing by "
            "the step size"),
    Mutation(
        id="counts-hmc-uturn-ignores-direction", path=_HMC,
        old="    return dot < 0.0, along and pos * vel < 0.0\n",
        new="    return dot < 0.0, along\n",
        tests=(_TH + "test_uturn_along_the_slow_direction_runs_longer",),
        why="HMC with learned lengths: the U-turn along the slow direction counts as reached "
            "at once (lengths of the bulk only: ESCC does not converge)"),
    Mutation(
        id="counts-hmc-dual-averaging-sign", path=_HMC,
        old="eta * (self.target - acc)",
        new="eta * (acc - self.target)",
        tests=(_TH + "test_step_size_tuned_to_the_target_acceptance",),
        why="HMC: dual averaging drives the step size away from the target acceptance"),
    Mutation(
        id="counts-hmc-rescale-gig-index-sign", path=_HMC,
        old="prior[0].sum(axis=0) - prior[2].sum(axis=0))",
        new="prior[2].sum(axis=0) - prior[0].sum(axis=0))",
        tests=(_THR + "test_rescaling_move_keeps_the_prior_and_moves_the_scales",),
        why="HMC's rescaling move: the GIG index of the scale's conditional has its sign "
            "flipped (the Jacobian c^(D - N) read as c^(N - D))"),
    Mutation(
        id="counts-hmc-rescale-draws-on-the-generator", path=_HMC,
        old="                                         s[\"gig_stream\"]):\n",
        new="                                         rng):\n",
        tests=(_THR + "test_rescaling_draws_leave_the_generator_alone",),
        why="HMC's rescaling move draws on the chain's generator: how many uniforms its "
            "rejection sampler used (a function of the state) shifts the next momenta and "
            "numbers of steps"),
    Mutation(
        id="counts-hmc-fused-residual-misses-offset", path=_HF,
        old="            m[n] = Xr[n] / m[n] - Or[n]  # the residual",
        new="            m[n] = Xr[n] / m[n] - 1.0  # the residual",
        tests=(_THF + "test_fused_gradient_equals_the_reference_forms[False-shape2]",
               _THF + "test_fused_leapfrog_on_a_catalogue_sized_matrix_is_second_order"),
        why="HmcPoisson's fused dense gradient: the residual X / (A W) - o without the offsets "
            "(and counting missing cells): the leapfrog follows another density"),
    Mutation(
        id="counts-hmc-fused-w-gradient-without-jacobian", path=_HF,
        old="            gWt[n, k] = aWt[n, k] - rWt[n, k] * w + gW[k, n] * w\n",
        new="            gWt[n, k] = aWt[n, k] - rWt[n, k] * w + gW[k, n]\n",
        tests=(_THF + "test_fused_gradient_equals_the_reference_forms[False-shape2]",
               _THF + "test_fused_leapfrog_on_a_catalogue_sized_matrix_is_second_order"),
        why="HmcPoisson's fused dense gradient: the likelihood's gradient on log W without the "
            "chain rule's factor W (the gradient in W, not in log W)"),
    Mutation(
        id="counts-hmc-fused-overflow-unguarded", path=_HF,
        old="    if not math.isfinite(total):\n",
        new="    if False:\n",
        tests=(_THF + "test_fused_gradient_guards",),
        why="HmcPoisson's fused dense gradient: an overflowed mean (finite factors, infinite "
            "product) leaves a finite gradient, so a trajectory runs on through it"),
    Mutation(
        id="counts-hmc-slow-exposure-picks-the-fastest", path=_HMC,
        old="        a = vecs[:, 0]\n",
        new="        a = vecs[:, -1]\n",
        tests=(_THR + "test_slow_exposure_direction_finds_the_slow_attribution",),
        why="HMC with learned lengths: the slow direction is the fastest combination of the "
            "total exposures"),
    Mutation(
        id="counts-hmc-last-window-ignores-term-buffer", path=_HMC,
        old="    last = int(n_tune) - TERM_BUFFER\n",
        new="    last = int(n_tune)\n",
        tests=(_THR + "test_mass_windows_fit_the_tuning_draws",),
        why="HMC: the last mass window runs to the end of tuning (no draws left to tune the "
            "step size and measure the trajectory times under the final mass)"),
    Mutation(
        id="counts-hmc-kept-lengths-not-stretched", path=_HMC,
        old=("            if self.stretch and math.isfinite(stretch) and stretch > 1.0:"
             "  # the slow time"),
        new="            if False:  # the slow time",
        tests=(_THR + "test_kept_lengths_stretched_to_the_slow_time",),
        why="HMC with learned lengths: the kept draws use the bulk's U-turn times (too short "
            "for the attribution between signatures: ESCC K = 8 at min ESS 76-122)"),
    Mutation(
        id="counts-hmc-term-buffer-keeps-direction", path=_HMC,
        old="        if s[\"window_end\"] == -1 and SLOW_RULE == \"exposures\":\n",
        new="        if False:\n",
        tests=(_THR + "test_kept_lengths_stretched_to_the_slow_time",),
        why="HMC with learned lengths: after the last window the tuning trajectories still "
            "stop along the slow direction, so the stretch is applied on top of it"),
    Mutation(
        id="counts-hmc-sparse-missing-cells-not-given-back", path=_HSP,
        old="            r = offs[c]\n",
        new="            r = 0.0\n",
        tests=(_THS + "test_sparse_gradient_equals_all_cells[False-True]",
               _THS + "test_sparse_gradient_matches_finite_differences"),
        why="HMC, sparse form: the gradient of a missing cell's mean (taken out of the total "
            "mean) is not given back"),
    Mutation(
        id="counts-hmc-sparse-total-misses-row-offsets", path=_HSP,
        old="            gA[d, k] = aA[d, k] - bA[d, k] * A[d, k] + (gA[d, k] - rc[d] * sW[k]) "
            "* A[d, k]\n",
        new="            gA[d, k] = aA[d, k] - bA[d, k] * A[d, k] + (gA[d, k] - sW[k]) * A[d, k]\n",
        tests=(_THS + "test_sparse_gradient_equals_all_cells[True-False]",
               _THS + "test_sparse_gradient_matches_finite_differences"),
        why="HMC, sparse form: the total mean's gradient on log A misses the row offsets"),
    Mutation(
        id="counts-hmc-sparse-density-missing-sign", path=_HSP,
        old="                lp += m\n",
        new="                lp -= m\n",
        tests=(_THS + "test_sparse_gradient_equals_all_cells[False-True]",
               _THS + "test_sparse_gradient_matches_finite_differences"),
        why="HMC, sparse form: the log density subtracts a missing cell's mean twice instead "
            "of giving it back"),
    Mutation(
        id="counts-hmc-shear-priors-swapped", path=_HMC,
        old="            shear_into(A, Wt, *self.prior, s[\"gig_stream\"])\n",
        new="            shear_into(A, Wt, self.prior[0], self.prior[2], self.prior[1], "
            "self.prior[3],\n                       s[\"gig_stream\"])\n",
        tests=(_TH + "test_learned_lengths_frozen_kernel_with_the_shear_keeps_the_prior",),
        why="HMC with the shear move: the shear's conditional from the A rates and the W "
            "shapes swapped (a wrong target along the attribution between two components)"),
    Mutation(
        id="counts-hmc-shear-on-the-main-stream", path=_HMC,
        old="            shear_into(A, Wt, *self.prior, s[\"gig_stream\"])\n",
        new="            shear_into(A, Wt, *self.prior, seed_state(np.random.default_rng(0)))\n",
        tests=(_TH + "test_learned_lengths_frozen_kernel_with_the_shear_keeps_the_prior",),
        why="HMC with the shear move: every shear drawn from the same fixed stream (the same "
            "uniforms each time: a move that is not random, not the exact conditional)"),
    Mutation(
        id="cli-ignored-interrupt-dropped", path="bnmfzoo/cli.py",
        old="            send_again(u.exc_value.signum, 0.001)  # after this hook returns\n",
        new="            pass\n",
        tests=(_TIN + "test_an_interrupt_python_ignored_is_sent_again",
               _TIN + "test_an_interrupt_raised_in_del_is_sent_again_without_a_traceback"),
        why="a Ctrl-C whose raise Python ignored (in a weakref callback at start-up) is lost "
            "until the next check of the flag, and nothing says so"),
    Mutation(
        id="interrupt-raised-in-library-code", path="bnmfzoo/cli.py",
        old="        if (frame is not None and not own_code(frame.f_code.co_filename)\n",
        new="        if (frame is None and not own_code(frame.f_code.co_filename)\n",
        tests=(_TIN + "test_an_interrupt_in_library_code_is_raised_at_the_next_own_line",),
        why="Ctrl-C raised where the signal lands: in the library code numba's dispatcher runs "
            "while it unboxes a generator, it crashed the process (3 of 41 tries of bnmfzoo "
            "masses on CCLE; 17 of 40 in a loop of short kernel calls)"),
    Mutation(
        id="deferred-interrupt-waits-for-a-call", path="bnmfzoo/_base/interrupts.py",
        old="        if event in (\"call\", \"line\") and self.exc is not None:\n",
        new="        if event == \"call\" and self.exc is not None:\n",
        tests=(_TIN + "test_an_interrupt_in_library_code_is_raised_at_the_next_own_line",
               _TIN + "test_library_loops_raise_keyboard_interrupt_in_own_code_only"),
        why="a deferred interrupt raised only when own code calls a function, not at its next "
            "line: the command runs on past the library call the signal interrupted"),
    Mutation(
        id="deferral-drops-the-previous-tracer", path="bnmfzoo/_base/interrupts.py",
        old="            sys.settrace(self._previous)\n            self._previous, self._armed",
        new="            pass\n            self._previous, self._armed",
        tests=(_TIN + "test_an_interrupt_in_library_code_is_raised_at_the_next_own_line",),
        why="the trace function in place before the interrupt (a debugger's, coverage's) is not "
            "put back: Python removed it when the deferral's tracer raised"),
    Mutation(
        id="library-loops-keep-the-default-ctrl-c", path="bnmfzoo/inference/_mass_budget.py",
        old="        with own_code_interrupts(), budget_scope(",
        new="        with budget_scope(",
        tests=(_TIN + "test_library_loops_raise_keyboard_interrupt_in_own_code_only",),
        why="smc_mode_masses called from Python keeps the default Ctrl-C, which raises inside "
            "numba's unboxing of a generator and can crash a notebook's kernel"),
    Mutation(
        id="fitters-keep-the-default-ctrl-c", path="bnmfzoo/_registry.py",
        old="        with own_code_interrupts():  # Ctrl-C never raised inside numba's unboxing",
        new="        if True:  # Ctrl-C never raised inside numba's unboxing",
        tests=(_TIN + "test_library_loops_raise_keyboard_interrupt_in_own_code_only",),
        why="the non-MCMC methods (VB, ICM, particles...) run from Python keep the default "
            "Ctrl-C, raised wherever it lands, inside numba's unboxing too"),
    Mutation(
        id="interrupt-flag-left-set-after-the-command", path="bnmfzoo/cli.py",
        old="        clear()  # nothing left for a later call in this process",
        new="        pass  # nothing left for a later call in this process",
        tests=(_TIN + "test_an_interrupt_in_library_code_is_raised_at_the_next_own_line",),
        why="an interrupted command leaves its flag set: a later fit in the same process "
            "stops at its first draw (two CI failures of the first version of this change)"),
    Mutation(
        id="deferred-interrupt-has-no-fallback", path="bnmfzoo/cli.py",
        old=("                timers.append(send_again(signum, _fitcli.DEFER_S))  # DEFER_S, "
             "wherever it\n"),
        new="                pass  # DEFER_S, wherever it\n",
        tests=(_TIN + "test_an_interrupt_in_library_code_is_raised_at_the_next_own_line",),
        why="a Ctrl-C that lands in a long library call with no own line after it for a while "
            "waits for that call to end"),
    Mutation(
        id="cli-signal-inside-the-hook-handled-there", path="bnmfzoo/cli.py",
        old="        if inside_hook(frame):  # the signal the hook sends again landed before it "
            "returned\n",
        new="        if False:  # the signal the hook sends again landed before it returned\n",
        tests=(_TIN + "test_a_signal_landing_inside_the_unraisable_hook_is_sent_again",),
        why="the signal the unraisable hook sends again, landing before the hook returned (a "
            "loaded machine), is handled inside the hook: its raise is ignored there and the "
            "interrupt lost (CI, twice)"),
]
