"""Mutations of the Gaussian wing: Gibbs sweeps (residual and Gram paths), NMTF core, tau, ARD,
tempered sweeps of replica exchange, the q-transform's Jacobian, and mean-field VB."""

from benchmarks.mutation._harness import Mutation

_CORE = "bnmfzoo/inference/gaussian/gibbs/_core.py"
_KERN = "bnmfzoo/inference/gaussian/gibbs/_sweep_kernels.py"
_GRAM = "bnmfzoo/inference/gaussian/gibbs/_gram.py"
_TEMP = "bnmfzoo/inference/gaussian/modes/_tempering.py"
_SYM = "bnmfzoo/inference/gaussian/modes/_symmetry.py"
_MIX = "bnmfzoo/inference/gaussian/gibbs/_mixing.py"
_VB = "bnmfzoo/inference/gaussian/variational/_vb_core.py"
_SBC = "tests/gaussian/test_gibbs_sbc.py::test_sbc_gibbs"
#: the Gram path against the residual path: the same draws from the same generator
_GRAM_SAME = ("tests/gaussian/test_gibbs_gram.py::"
              "test_gram_and_residual_paths_give_the_same_chain[plain]")
_PNMTF = "bnmfzoo/inference/gaussian/priors/_prior_nmtf.py"
_SUFF = "tests/gaussian/test_sufficient_statistics.py"
_NMTF_INV = "tests/gaussian/test_nmtf_priors.py::test_nmtf_prior_sweep_keeps_the_posterior"
#: every entry of A, W and tau against its exact conditional
#: (tests/gaussian/test_exact_conditionals.py)
_EXACT = ("tests/gaussian/test_exact_conditionals.py::"
          "test_gaussian_gibbs_every_entry_follows_its_truncated_normal")
_EXACT_NMTF = ("tests/gaussian/test_exact_conditionals.py::"
               "test_nmtf_prior_sweep_every_entry_follows_its_truncated_normal")

MUTATIONS = [
    Mutation(
        id="gauss-overrelax-clamps-instead-of-rejecting", path=_MIX,
        old="    if new < 0.0:  # outside the support: rejected\n        return old",
        new="    if new < 0.0:  # outside the support: rejected\n        return 0.0",
        tests=("tests/gaussian/test_overrelaxed_gibbs.py::test_overrelaxed_update_keeps_its_truncated_normal",),
        why="an overrelaxed proposal below 0 is clamped to 0 instead of rejected: an atom at 0"),
    Mutation(
        id="gauss-overrelax-wrong-noise-scale", path=_MIX,
        old="inv_sd * math.sqrt(1.0 - alpha * alpha) * rng.standard_normal()",
        new="inv_sd * (1.0 - alpha * alpha) * rng.standard_normal()",
        tests=("tests/gaussian/test_overrelaxed_gibbs.py::test_overrelaxed_update_keeps_its_truncated_normal",),
        why="Adler's update without the square root: the kernel no longer keeps N(m, s^2)"),
    Mutation(
        id="gauss-overrelax-around-zero", path=_MIX,
        old="new = m + alpha * (old - m) + inv_sd",
        new="new = m + alpha * old + inv_sd",
        tests=("tests/gaussian/test_overrelaxed_gibbs.py::test_overrelaxed_update_keeps_its_truncated_normal",),
        why="the overrelaxed reflection taken about 0 instead of the conditional mean"),
    Mutation(
        id="gauss-rescale-move-without-jacobian", path=_MIX,
        old="gig_draws(float(D - N), 2.0", new="gig_draws(0.0, 2.0",
        tests=("tests/gaussian/test_overrelaxed_gibbs.py::test_rescaling_move_keeps_every_entry_of_the_prior",),
        why="the rescaling move's GIG order without the Jacobian c^(D - N)"),
    Mutation(
        id="gauss-overrelax-residual-path-variance", path=_KERN,
        old="inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (",
        new="inv_sd = 1.0 / prec if prec > 0.0 else (",
        tests=("tests/gaussian/test_overrelaxed_gibbs.py::test_overrelaxed_sweep_keeps_the_posterior[residual]",
               "tests/gaussian/test_overrelaxed_gibbs.py::test_gram_and_residual_paths_give_the_same_overrelaxed_chain"),
        why="the residual path's overrelaxed update given the variance for the sd"),
    Mutation(
        id="gauss-tau-shape-counts-missing", path=_CORE,
        old="shape = hyper.alpha_tau + 0.5 * obs.n_observed",
        new="shape = hyper.alpha_tau + 0.5 * obs.shape[0] * obs.shape[1]",
        tests=(f"{_SBC}[nmf-missing-17]",),
        why="wrong missing-data mask: the noise precision's Gamma shape counts the missing "
            "entries too (audit: uncaught by the 2 Gibbs SBC cases)"),
    Mutation(
        id="gauss-tau-rate-no-half", path=_CORE,
        old="rate = hyper.beta_tau + 0.5 * state.sse",
        new="rate = hyper.beta_tau + state.sse",
        tests=(f"{_SBC}[nmf-gram-11]", _GRAM_SAME),
        why="wrong rate of a conjugate update: tau's Gamma rate uses SSE instead of SSE / 2"),
    Mutation(
        id="gauss-halfsweep-drops-own-term", path=_KERN,
        old="lin = tau * (s1 + old * s2) - lam[k]",
        new="lin = tau * s1 - lam[k]",
        tests=(f"{_SBC}[nmf-residual-15]",),
        why="conditional missing a term: the residual-path factor conditional leaves the "
            "entry's own contribution in the residual"),
    Mutation(
        id="gauss-halfsweep-no-prior-rate", path=_KERN,
        old="lin = tau * (s1 + old * s2) - lam[k]",
        new="lin = tau * (s1 + old * s2)",
        tests=(f"{_EXACT}[residual]", f"{_SBC}[nmf-residual-15]"),
        why="conditional missing a term: the exponential prior's rate is left out of the "
            "residual-path factor conditional"),
    Mutation(
        id="gauss-halfsweep-stale-residual", path=_KERN,
        old="        if d_prev != 0.0:  # the last entry's change\n",
        new="        if False:  # the last entry's change\n",
        # the SBC runs its chains to the 25,600-sweep cap under this bug (over 15 min): the
        # kept residual against the recomputed one first
        tests=(f"{_SUFF}::test_nmf_sweep_keeps_the_residual_current[residual]",
               "tests/gaussian/test_sweep_kernels.py::"
               "test_fused_kernel_is_the_two_pass_kernel_bit_for_bit[3]",
               f"{_SBC}[nmf-residual-15]"),
        why="stale sufficient statistic: the residual is not updated after the last factor "
            "entry of a row changes"),
    Mutation(
        id="gauss-gram-stale-t", path=_GRAM,
        old="t[m] += d * gk[m]",
        new="t[m] += 0.0 * gk[m]",
        tests=(f"{_SBC}[nmf-gram-11]", _GRAM_SAME),
        why="stale sufficient statistic: the Gram path's t = G u is not updated after an "
            "entry changes"),
    Mutation(
        id="gauss-gram-sse-cross-term", path=_GRAM,
        old="total += u[k] * (t[k] - 2.0 * c[k])",
        new="total += u[k] * (t[k] - c[k])",
        tests=(f"{_SBC}[nmf-gram-11]", _GRAM_SAME),
        why="wrong sufficient statistic: the Gram path's squared error misses half the cross "
            "term, so tau's rate is wrong"),
    Mutation(
        id="gauss-gram-no-prior-rate", path=_GRAM,
        old="lin = tau * (c[k] - t[k] + old * g[k, k]) - lam[k]",
        new="lin = tau * (c[k] - t[k] + old * g[k, k])",
        tests=(f"{_EXACT}[gram]", f"{_SBC}[nmf-gram-11]", _GRAM_SAME),
        why="conditional missing a term: Gram-path conditional without the prior rate"),
    Mutation(
        id="gauss-nmtf-core-drops-own-term", path=_CORE,
        old="lin = tau * (s1 + old * s2) - lam_S",
        new="lin = tau * s1 - lam_S",
        tests=(f"{_SBC}[nmtf-13]",),
        why="conditional missing a term: the NMTF core S[k, m] conditional leaves its own "
            "contribution in the residual"),
    Mutation(
        id="gauss-nmtf-core-stale-residual", path=_CORE,
        old="resid[e] -= d * F[rows[e], k] * G[cols[e], m]",
        new="resid[e] -= 0.0 * F[rows[e], k] * G[cols[e], m]",
        # (the SBC's chains drift to the sweep cap under this bug: > 8 min, so the kept
        # residual against the recomputed one first)
        tests=(f"{_SUFF}::test_nmtf_sweep_keeps_the_residual_current", f"{_SBC}[nmtf-13]"),
        why="stale sufficient statistic: the residual is not updated after S[k, m] changes"),
    Mutation(
        id="gauss-ard-shape-off", path=_CORE,
        old="shape = hyper.alpha0 + D + N",
        new="shape = hyper.alpha0 + D",
        tests=(f"{_SBC}[nmf-ard-gram-12]",),
        why="wrong shape of a conjugate update: the ARD rate's Gamma shape counts only A's "
            "entries, not W's"),
    Mutation(
        id="gauss-tempered-tau-shape-at-beta-one", path=_TEMP,
        old="shape = hyper.alpha_tau + 0.5 * beta * obs.n_observed",
        new="shape = hyper.alpha_tau + 0.5 * obs.n_observed",
        tests=("tests/tempering/test_replica_exchange.py::test_sbc_replica_exchange[re+moves]",),
        why="a tempered term applied at beta = 1: the hot replicas' tau shape is not tempered"),
    Mutation(
        id="gauss-tempered-factors-at-beta-one", path=_TEMP,
        old="_nmf_halves(state, obs, beta * tau, lam_A, lam_W",
        new="_nmf_halves(state, obs, tau, lam_A, lam_W",
        tests=(f"{_SBC}[nmf-tempered-18]",
               "tests/tempering/test_replica_exchange.py::test_sbc_replica_exchange[re+moves]"),
        why="a tempered term applied at beta = 1: the hot replicas' factor conditionals use "
            "the untempered precision"),
    Mutation(
        id="gauss-qtransform-no-jacobian", path=_SYM,
        old="+ (D - N if jacobian_power is None else jacobian_power) * eps * np.trace(Z))",
        new="+ (0 if jacobian_power is None else jacobian_power) * eps * np.trace(Z))",
        tests=("tests/tempering/test_replica_exchange.py::"
               "test_symmetry_moves_keep_the_law_along_the_orbit[moves1]",),
        why="missing Jacobian: the q-transform move's acceptance ratio without |det Q|^(D-N)"),
    Mutation(
        id="gauss-vb-tau-shape-counts-missing", path=_VB,
        old="return p.alpha_tau + 0.5 * p.obs.n, p.beta_tau + 0.5 * sse",
        new="return p.alpha_tau + 0.5 * p.obs.shape[0] * p.obs.shape[1], p.beta_tau + 0.5 * sse",
        # (not seen by test_elbo_never_decreases / test_elbo_matches_monte_carlo: a
        # non-optimal q(tau) still gives a rising ELBO that matches its Monte Carlo estimate)
        tests=("tests/gaussian/test_vb_optimality.py::test_tau_update_maximizes_the_elbo",),
        why="wrong missing-data mask: q(tau)'s shape counts the missing entries (VB)"),
    Mutation(
        id="gauss-vb-A-mean-no-prior-rate", path=_VB,
        old='mu = (-state.rate("A", k) + tau * num) / prec',
        new="mu = (tau * num) / prec",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_vb_factor_updates_are_brouwers_formulas[residual]",
               "tests/gaussian/test_vb.py::test_sparse_sweep_matches_dense_reference"),
        why="conditional missing a term: q(A)'s truncated-normal location without the prior "
            "rate (the dense-reference test runs the Gram path under kernel='auto' and never "
            "reached this residual-path line)"),
    Mutation(
        id="gauss-vb-ard-shape-off", path=_VB,
        old='out["AW"] = (p.alpha0 + D + N + 0 * s, p.beta0 + s)',
        new='out["AW"] = (p.alpha0 + D + 0 * s, p.beta0 + s)',
        tests=("tests/gaussian/test_vb_optimality.py::test_ard_update_maximizes_the_elbo",),
        why="wrong shape of a conjugate update: q(lambda)'s shape counts only A's entries"),
    Mutation(
        id="gauss-nmtf-prior-core-no-prior-linear-term", path=_PNMTF,
        old="lin = tau * (s1 + old * s2) + Lin[k, m]",
        new="lin = tau * (s1 + old * s2)",
        tests=(f"{_NMTF_INV}[mixed-61]",),
        why="conditional missing a term: GibbsNMTF with user priors, S's conditional without "
            "its prior's linear term (the Exponential rates)"),
    Mutation(
        id="gauss-nmtf-prior-rate-pooled-over-columns", path=_PNMTF,
        old="rate += np.bincount(index.ravel(), weights=values.ravel(), minlength=shape.size)",
        new="rate += values.sum()",
        tests=(f"{_NMTF_INV}[rates_fixed_sigma-62]",),
        why="wrong sufficient statistic: a Gamma rate's conditional rate sums every entry of "
            "the factor, not only the entries that use that rate"),
    Mutation(
        id="gauss-nmtf-prior-fixed-sigma-not-squared", path=_PNMTF,
        old='tau = 1.0 / float(plan.sigma) ** 2 if plan.noise == "fixed"',
        new='tau = 1.0 / float(plan.sigma) if plan.noise == "fixed"',
        tests=(_EXACT_NMTF, f"{_NMTF_INV}[rates_fixed_sigma-62]"),
        why="wrong noise precision: a fixed sigma used as a variance (1 / sigma, not "
            "1 / sigma^2)"),
    Mutation(
        id="exact-gauss-tau-rate-full-sse", path=_CORE,
        old="rate = hyper.beta_tau + 0.5 * state.sse",
        new="rate = hyper.beta_tau + state.sse",
        tests=(f"{_EXACT}[residual]",),
        why="wrong rate of a conjugate update: the noise precision's Gamma rate takes the whole "
            "squared error instead of half"),
    Mutation(
        id="exact-nmtf-prior-core-drops-prior", path=_PNMTF,
        old="lin = tau * (s1 + old * s2) + Lin[k, m]",
        new="lin = tau * (s1 + old * s2)",
        tests=(_EXACT_NMTF,),
        why="conditional missing a term: the NMTF core S[k, m]'s conditional without its "
            "prior's linear term (an exponential rate)"),
    # exact conditionals of the NMTF core sweep, stated VB updates
    # (tests/gaussian/test_exact_conditionals_gaussian.py)
    Mutation(
        id="exact-nmtf-core-drops-rate", path=_CORE,
        old="lin = tau * (s1 + old * s2) - lam_S",
        new="lin = tau * (s1 + old * s2)",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_nmtf_core_sweep_every_entry_follows_its_conditional",),
        why="conditional missing a term: the compiled NMTF core S[k, m]'s conditional without "
            "its exponential prior rate"),
    Mutation(
        id="exact-vb-gram-mean-no-prior-rate", path=_VB,
        old="mu = (-state.rate(role, k) + state.tau * num) / prec[k]",
        new="mu = (state.tau * num) / prec[k]",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_vb_factor_updates_are_brouwers_formulas[gram]",),
        why="conditional missing a term: the Gram path's q(A), q(W) truncated-normal location "
            "without the prior rate"),
    Mutation(
        id="exact-gig-ratio-of-uniforms-no-mode-shift",
        path="bnmfzoo/inference/kernels/gig.py",
        old="x = v / u + c", new="x = v / u",
        tests=("tests/tempering/test_replica_exchange.py::test_gig_draws_match_scipy",),
        why="wrong term of an exact draw: the GIG ratio-of-uniforms candidate without its mode "
            "shift (p >= 1 or b > 1: the noise_sd and symmetry-move draws)"),
    Mutation(
        id="exact-tempered-tau-rate-at-beta-one", path=_TEMP,
        old="rate = hyper.beta_tau + 0.5 * beta * state.sse",
        new="rate = hyper.beta_tau + 0.5 * state.sse",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_tempered_sweep_every_entry_follows_its_conditional[residual]",),
        why="a tempered term applied at beta = 1: the hot replicas' tau rate takes the whole "
            "squared error instead of beta SSE / 2"),
    Mutation(
        id="exact-symmetry-rescale-without-jacobian",
        path="bnmfzoo/inference/gaussian/modes/_symmetry.py",
        old="c = draw_scales(lam_A * A.sum(axis=0), lam_W * Wt.sum(axis=0), D - N, rng)",
        new="c = draw_scales(lam_A * A.sum(axis=0), lam_W * Wt.sum(axis=0), 0, rng)",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_symmetry_moves_keep_every_entry_of_the_prior[rescale]",),
        why="a Jacobian dropped: the rescaling move's scale drawn without the map's Jacobian "
            "c^(D - N) (GIG order 0)"),
    Mutation(
        id="exact-symmetry-qtransform-prior-sign",
        path="bnmfzoo/inference/gaussian/modes/_symmetry.py",
        old="log_ratio = (-(lam_A * (A_new.sum(axis=0) - A.sum(axis=0))).sum()",
        new="log_ratio = ((lam_A * (A_new.sum(axis=0) - A.sum(axis=0))).sum()",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_symmetry_moves_keep_every_entry_of_the_prior[qtransform]",),
        why="wrong sign in an acceptance ratio: the Q-Transform's prior ratio of A inverted"),
]
