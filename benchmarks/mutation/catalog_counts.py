"""Mutations of the count wing: latent-count split, conjugate Gamma draws, exposures (offsets,
missing cells), the NB CRT augmentation and the VB bound; NB VB (tables, rates) and the tempered
path of both families (rounding bits, exposures, swap target)."""

from benchmarks.mutation._harness import Mutation

_CORE = "bnmfzoo/inference/counts/_core.py"
_GIBBS = "bnmfzoo/inference/counts/_gibbs.py"
_NB = "bnmfzoo/inference/counts/_nb_core.py"
_VB = "bnmfzoo/inference/counts/_vb_core.py"
_SW = "bnmfzoo/inference/counts/_sweeps.py"
_TP = "bnmfzoo/inference/counts/_tempering.py"
_PW = "bnmfzoo/inference/counts/_power.py"
_TPW = "tests/test_counts_power.py"
_TS = "tests/test_counts_sweeps.py"
_T = "tests/test_counts_gibbs.py"
_TV = "tests/test_counts_vb.py"
_NBVB = "bnmfzoo/inference/counts/vb_nb.py"
_TNV = "tests/test_counts_vb_nb.py"
_TNT = "tests/test_counts_tempering_nb.py"
_TI = ("tests/test_counts_user_models.py::test_imputed_counts_follow_the_posterior_predictive"
       "[poisson]")
_TI2 = ("tests/test_counts_user_models.py::test_imputed_counts_follow_the_posterior_predictive"
        "[nb2]")
_NB2 = "bnmfzoo/inference/counts/_nb2.py"
_GP = "bnmfzoo/inference/counts/gibbs_poisson.py"

MUTATIONS = [
    Mutation(
        id="counts-gamma-shape-misses-prior", path=_CORE,
        old="    shape = shape_prior + Z\n", new="    shape = 1.0 + Z\n",
        tests=(f"{_T}::test_sbc_counts[poisson-1]",),
        why="conjugate Gamma shape misses the prior shape (assumes an Exponential prior; the "
            "SBC cases use shape 2)"),
    Mutation(
        id="counts-rate-misses-row-offset", path=_CORE,
        old="        base = s[:, None] * (W @ c)[None, :]\n",
        new="        base = np.ones_like(s)[:, None] * (W @ c)[None, :]\n",
        tests=(f"{_T}::test_loglik_sparse_equals_dense_model",
               f"{_T}::test_sbc_counts[poisson-missing-offsets-1]"),
        why="the Gamma rate (exposure) of A misses the row offsets s_d"),
    Mutation(
        id="counts-split-without-W", path=_CORE,
        old="            tot += A[d, k] * Wt[n, k]\n            cum[k] = tot\n",
        new="            tot += A[d, k]\n            cum[k] = tot\n",
        tests=(f"{_T}::test_posterior_means_match_importance_sampling",),
        why="split probabilities proportional to A_dk only, without W_kn (100 SBC simulations "
            "of the 3 x 4 case did not see it)"),
    Mutation(
        id="counts-stale-A-in-W-rate", path=_GIBBS,
        old="scale * exposures(expo, A.T, transpose=True).T",
        new="scale * exposures(expo, state[\"A\"].T, transpose=True).T",
        tests=(f"{_T}::test_posterior_means_match_importance_sampling",),
        why="stale statistic: W's Gamma rate uses the A from before this sweep's A draw (100 "
            "SBC simulations of the 3 x 4 case did not see it: 1 passed)"),
    Mutation(
        id="counts-tiled-counts-misaligned", path=_CORE,
        old="        return (rows[order].astype(np.int32), self.cols[order].copy(),\n"
            "                self.counts[order].copy())\n",
        new="        old = np.lexsort((cols, rows, cols // TILE_COLUMNS))\n"
            "        return (rows[order].astype(np.int32), self.cols[order].copy(),\n"
            "                self.counts[old].copy())\n",
        tests=(f"{_T}::test_split_keeps_every_count_and_advances_the_generator",),
        why="tiled order: the counts permuted by the order without the count key, so they no "
            "longer belong to their (row, column)"),
    Mutation(
        id="counts-split-state-not-saved", path=_CORE,
        old="    state[0], state[1], state[2], state[3] = s0, s1, s2, s3\n",
        new="",
        tests=(f"{_T}::test_split_keeps_every_count_and_advances_the_generator",),
        why="the split's register copy of the xoshiro state is not written back: the next "
            "sweep replays the same uniforms"),
    Mutation(
        id="counts-missing-cells-in-mu", path=_CORE,
        old="        if rows.size:\n            _missing_correction(",
        new="        if False:\n            _missing_correction(",
        tests=(f"{_T}::test_exposure_skips_missing_cells",
               f"{_T}::test_sbc_counts[poisson-missing-offsets-1]"),
        why="missing cells counted in the -mu term (exposures over every cell)"),
    Mutation(
        id="counts-crt-off-by-one", path=_NB,
        old="if _next_uniform(state) * (r[k] + i) < r[k]:",
        new="if _next_uniform(state) * (r[k] + i + 1) < r[k]:",
        tests=(f"{_T}::test_nb_augmentation_matches_enumeration",),
        why="CRT table probability r / (r + i + 1) instead of r / (r + i)"),
    Mutation(
        id="counts-nb-rate-factor-missing-alpha", path=_NB,
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
        id="counts-rescale-without-jacobian", path=_SW,
        old='out["P"] = out["aA"].sum(axis=0) - out["aWt"].sum(axis=0)',
        new='out["P"] = (out["aA"] - 1.0).sum(axis=0) - (out["aWt"] - 1.0).sum(axis=0)',
        tests=(f"{_TS}::test_group_moves_keep_the_prior[rescale]",),
        why="rescaling move: the scale's conditional without the Jacobian c^(D - N) and the "
            "Haar measure dc / c (the exponent is the prior's shapes minus one)"),
    Mutation(
        id="counts-shear-rate-sign", path=_SW,
        old="        lin -= bA[d, k] * A[d, j]\n",
        new="        lin += bA[d, k] * A[d, j]\n",
        tests=(f"{_TS}::test_group_moves_keep_the_prior[shear]",),
        why="shear move: the prior rate term of A[:, k] - t A[:, j] with the wrong sign"),
    Mutation(
        id="counts-shear-skips-shapes-below-one", path=_SW,
        old="        if aWt[n, j] != 1.0:",
        new="        if aWt[n, j] > 1.0:",
        tests=(f"{_TS}::test_group_moves_keep_the_prior[shear]",),
        why="shear move: the log term of W's Gamma prior is skipped for shapes below 1 too "
            "(the fast path for shape-1 priors taken too widely)"),
    Mutation(
        id="counts-compiled-gamma-shape-misses-prior", path=_SW,
        old="v = np.random.gamma(aA[d, k] + ZA[d, k], ",
        new="v = np.random.gamma(1.0 + ZA[d, k], ",
        tests=(f"{_TS}::test_sbc_compiled_sweeps[poisson]",
               f"{_T}::test_posterior_means_match_importance_sampling[X2-1-400000-20000-compiled]"),
        why="compiled sweep: A's conjugate shape misses the prior shape (the SBC cases use "
            "shape 2; after the count-sorted split the SBC at seed 1 no longer saw it)"),
    Mutation(
        id="counts-gig-mode-shift-sign", path=_SW,
        old="            a1 = 2.0 * m * (p - 1.0) / b - 1.0\n",
        new="            a1 = 2.0 * m * (p + 1.0) / b - 1.0\n",
        tests=(f"{_TS}::test_gig_matches_scipy",),
        why="GIG ratio-of-uniforms bounding box from a wrong cubic (sign typo)"),
    Mutation(
        id="counts-vb-bound-misses-W-kl", path=_VB,
        old="    B += gamma_entropy_terms(problem.aW, EbW, ElbW, state.aW, state.bW)\n",
        new="",
        tests=(f"{_TV}::test_bound_below_evidence",),
        why="VB bound without W's prior/entropy terms (a bound that is not one)"),
    Mutation(
        id="counts-power-no-latent-t", path=_PW,
        old="exposures(expo, W) + extra)", new="exposures(expo, W))",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: A's Gamma rate misses the latent t_dn o_dn W_kn (the sweep then "
            "targets mu^ceil(beta x) instead of mu^(beta x))"),
    Mutation(
        id="counts-power-t-wrong-shape", path=_PW,
        old="rng.gamma(delta[frac], 1.0 / mu[frac])",
        new="rng.gamma(1.0 - delta[frac], 1.0 / mu[frac])",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: t_dn drawn with shape 1 - delta instead of delta"),
    Mutation(
        id="counts-power-exposure-unscaled", path=_PW,
        old="expo = self._scaled_exposure(beta)", new="expo = self.problem.expo",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: the exposures sum o W, not beta o W (exp(-mu) untempered)"),
    Mutation(
        id="counts-power-t-without-offsets", path=_PW,
        old="t_o = rng.gamma(delta[frac], 1.0 / mu[frac]) * self._o[frac]",
        new="t_o = rng.gamma(delta[frac], 1.0 / mu[frac])",
        tests=(f"{_TPW}::test_power_sweep_keeps_the_power_posterior",),
        why="power posterior: the latent t's exposure misses the cell's offset o_dn"),
    Mutation(
        id="counts-nbvb-tables-are-counts", path=_NBVB,
        old="we = alpha * offsets_nz[e] * _psi_diff(counts[e], alpha * M[e])",
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
        id="counts-impute-without-offset", path=_GIBBS,
        old="imputed.rows, imputed.cols, imputed.offsets)",
        new="imputed.rows, imputed.cols, np.ones_like(imputed.offsets))",
        tests=(_TI,),
        why="PyMC's imputed counts drawn from A @ W without their cell's offset"),
    Mutation(
        id="counts-impute-without-noise", path=_GIBBS,
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
        id="counts-nb2-multiplier-ignores-mean", path=_NB2,
        old="g = rng.gamma(alpha + x, 1.0 / (alpha + mu))",
        new="g = rng.gamma(alpha + x, 1.0 / alpha)",
        tests=(_TI2,),
        why="NB2: the per-cell Gamma multiplier's rate misses the cell's mean (alpha + mu)"),
    Mutation(
        id="counts-nb2-exposure-without-multiplier", path=_NB2,
        old="rows, cols, offsets * g)", new="rows, cols, offsets)",
        tests=(_TI2,),
        why="NB2: the Gamma rates of A and W sum o W instead of g o W (a Poisson fit)"),
    Mutation(
        id="counts-nb2-alpha-without-prior", path=_NB2,
        old="return (a0 - 1.0) * math.log(a) - b0 * a + float(",
        new="return float(",
        tests=(_TI2,),
        why="NB2: the dispersion's slice target misses its Gamma prior"),
    Mutation(
        id="counts-nb2-imputed-as-other-nb", path=_GIBBS,
        old='    if family == "nb2":\n        return rng.negative_binomial(alpha,',
        new='    if family == "nb2x":\n        return rng.negative_binomial(alpha,',
        tests=(_TI2,),
        why="NB2: PyMC's imputed counts drawn from the n = alpha mu NB (variance mu (1 + alpha) "
            "/ alpha instead of mu + mu^2 / alpha)"),
]
