"""Mutations of the count wing: latent-count split, conjugate Gamma draws, exposures (offsets,
missing cells), the NB CRT augmentation, the tempered split and the VB bound."""

from benchmarks.mutation._harness import Mutation

_CORE = "bnmfzoo/inference/counts/_core.py"
_GIBBS = "bnmfzoo/inference/counts/_gibbs.py"
_NB = "bnmfzoo/inference/counts/_nb_core.py"
_VB = "bnmfzoo/inference/counts/_vb_core.py"
_T = "tests/test_counts_gibbs.py"
_TV = "tests/test_counts_vb.py"

MUTATIONS = [
    Mutation(
        id="counts-gamma-shape-misses-prior", path=_CORE,
        old="    shape = shape_prior + beta * Z\n", new="    shape = 1.0 + beta * Z\n",
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
        id="counts-tempered-acceptance-sign", path=_CORE,
        old="logacc = (1.0 - beta) * _log_factorial_ratio(z, K, x)",
        new="logacc = (beta - 1.0) * _log_factorial_ratio(z, K, x)",
        tests=(f"{_T}::test_tempered_split_matches_power_multinomial",),
        why="tempered split: rejection exponent with the wrong sign"),
    Mutation(
        id="counts-vb-bound-misses-W-kl", path=_VB,
        old="    B += gamma_entropy_terms(problem.aW, EbW, ElbW, state.aW, state.bW)\n",
        new="",
        tests=(f"{_TV}::test_bound_below_evidence",),
        why="VB bound without W's prior/entropy terms (a bound that is not one)"),
]
