"""The compiled Gibbs kernels named in ``ARCHITECTURE.md`` and the fast test that checks each
against its exact law, listed in ``REPORT.md`` by :mod:`benchmarks.mutation.run`.

``kind`` says how strong the check is: **exact conditional** (every component of one block's
draw, other blocks fixed, against its analytic conditional: KS / chi-square, Bonferroni),
**enumeration** (the kernel's chain against the exactly enumerated posterior of a tiny
model: every component jointly), **invariance** (exact draws of the target stay exact after
the kernel, or means against importance sampling: the kernel keeps the right distribution,
but one conditional can hide behind another), **exact update** (a deterministic update, such
as one VB coordinate round, against the same round computed by hand, to 1e-10), **SBC only**
(no fast exact test yet).
"""

_X = "tests/gaussian/test_exact_conditionals.py::"
_XC = "tests/counts/test_exact_conditionals_counts.py::"
_XG = "tests/gaussian/test_exact_conditionals_gaussian.py::"
_OR = "tests/gaussian/test_overrelaxed_gibbs.py::"

#: (kernel, kind, fast test(s))
KERNELS = [
    ("kernels `streams`: xoshiro256+ uniforms, normals and seeding", "exact conditional",
     "tests/house/test_kernel_floor.py::test_random_streams_are_uniform_and_normal"),
    ("kernels `crt`: Chinese-restaurant tables, direct and by blocks", "exact conditional",
     "tests/house/test_kernel_floor.py::test_crt_matches_its_exact_pmf"),
    ("kernels `variates`: Gamma, binomial, multinomial and Dirichlet-multinomial draws",
     "exact conditional",
     "tests/house/test_kernel_floor.py::test_gamma_binomial_and_multinomial_draws_match_their_laws"),
    ("counts `sweep`: latent-count split, count by count and sequential binomials",
     "exact conditional", _X + "test_split_every_component_and_the_joint_are_multinomial"),
    ("counts `sweep.gamma_block_into` (the compiled sweep's conjugate Gamma draws of A and W)",
     "exact conditional",
     _X + "test_compiled_gamma_draws_of_every_entry_are_exact"),
    ("counts `sweep.rate_draws_into`: compiled Gamma draws of the ARD / HPF rates",
     "exact conditional",
     _X + "test_compiled_rate_draws_are_exact"),
    ("counts `sweep.gamma_update` (the Python sweep's conjugate draw)", "exact conditional",
     _X + "test_python_gamma_update_is_shape_rate"),
    ("counts `gibbs/_moves`: rescaling and shear group moves", "invariance",
     "tests/counts/test_counts_sweeps.py::test_group_moves_keep_the_prior"),
    ("kernels `gig.gig_one` on a xoshiro stream (GIG draws of the count moves)",
     "exact conditional",
     "tests/counts/test_counts_sweeps.py::test_gig_matches_scipy"),
    ("counts `sweep.split_crt`: NB tables, CRT of the count split over the components",
     "enumeration",
     "tests/counts/test_counts_gibbs.py::test_nb_augmentation_matches_enumeration, "
     "tests/counts/test_counts_exact.py::"
     "test_tables_of_the_sum_have_the_law_of_the_tables_per_part"),
    ("counts `sweep.slice_log_alpha`: slice sampler of the NB dispersion", "invariance",
     _XC + "test_nb_dispersion_slice_step_keeps_its_exact_conditional"),
    ("counts `sweep` (NB2 option): per-cell Gamma multipliers", "exact conditional",
     _XC + "test_nb2_multipliers_of_every_cell_are_exact"),
    ("counts `sweep` (NB2 option): slice update of the NB2 dispersion", "invariance",
     _XC + "test_nb2_alpha_slice_step_keeps_its_exact_conditional"),
    ("counts `sweep` (power option): latent t and conjugate A, W draws at beta",
     "exact conditional",
     _XC + "test_power_sweep_latent_t_and_conjugate_draws_are_exact"),
    ("counts `tempering/_power`: the whole power-posterior sweep", "invariance",
     "tests/counts/test_counts_power.py::test_power_sweep_keeps_the_power_posterior"),
    ("counts `tempering/_rounding`: random-rounding bits given A, W (both families)",
     "exact conditional", _XC + "test_tempered_rounding_bits_of_every_cell_are_exact"),
    ("counts `tempering/_rounding`: tempered split (both families)", "invariance",
     "tests/counts/test_counts_gibbs.py::test_tempered_sweep_keeps_its_marginal, "
     "tests/counts/test_counts_tempering_nb.py::test_tempered_sweep_matches_quadrature"),
    ("counts `variational/_vb_core.vb_iteration` (Poisson VB, not a Gibbs kernel): one "
     "coordinate round",
     "exact update", _XC + "test_poisson_vb_update_is_the_stated_coordinate_ascent"),
    ("gaussian/variational `_vb_core` (VB, not a Gibbs kernel): one sweep of q(A), q(W)",
     "exact update", _XG + "test_vb_factor_updates_are_brouwers_formulas"),
    ("gaussian/gibbs `_core` + `_sweep_kernels` + `_gram`: NMF columns of A, rows of W, tau",
     "exact conditional",
     _X + "test_gaussian_gibbs_every_entry_follows_its_truncated_normal"),
    ("kernels `truncnorm` (the Gaussian Gibbs steps' truncated normals)", "exact conditional",
     "tests/gaussian/test_truncnorm.py::test_draws_match_scipy"),
    ("gaussian/gibbs `_mixing`: overrelaxed truncated-normal updates (both paths) and the "
     "rescaling move of GibbsNMF's default sweep", "exact conditional",
     _OR + "test_overrelaxed_update_keeps_its_truncated_normal, "
     + _OR + "test_rescaling_move_keeps_every_entry_of_the_prior, "
     + _OR + "test_overrelaxed_sweep_keeps_the_posterior"),
    ("gaussian/gibbs `noise_sd` (sigma ~ HalfNormal / HalfCauchy)", "exact conditional",
     "tests/gaussian/test_noise_sd.py::test_draws_follow_the_conditional"),
    ("gaussian/gibbs `_core`: NMTF factors F, G, core S, tau and ARD rates", "exact conditional",
     _XG + "test_nmtf_core_sweep_every_entry_follows_its_conditional"),
    ("gaussian/priors `_gamma_conditional`", "exact conditional",
     "tests/models/test_recognize_weighted.py::test_gamma_conditional_distribution"),
    ("gaussian/priors `_prior_core`: per-entry prior terms (residual and Gram paths)",
     "exact conditional",
     _X + "test_nmf_prior_sweep_every_entry_follows_its_truncated_normal"),
    ("gaussian/priors `_weighted_core`: Gamma factor priors, per-row / per-column noise "
     "precisions, Student-t latent precisions", "exact conditional",
     _XG + "test_weighted_sweep_every_entry_follows_its_conditional"),
    ("kernels `gig.gig_one` on a numpy Generator (GIG draws of `noise_sd` and the symmetry "
     "moves)",
     "exact conditional", "tests/tempering/test_replica_exchange.py::test_gig_draws_match_scipy"),
    ("gaussian/priors `_prior_nmtf`: F, S, G with per-entry priors, fixed or learned noise",
     "exact conditional",
     _X + "test_nmtf_prior_sweep_every_entry_follows_its_truncated_normal, "
     "tests/gaussian/test_nmtf_priors.py::test_nmtf_prior_sweep_keeps_the_posterior"),
    ("gaussian/modes `_tempering`: tempered sweep (factors at beta tau, tau, ARD rates)",
     "exact conditional", _XG + "test_tempered_sweep_every_entry_follows_its_conditional"),
    ("gaussian/modes `_symmetry`: rescaling and Q-Transform moves", "invariance",
     _XG + "test_symmetry_moves_keep_every_entry_of_the_prior"),
    ("binary `_core`: collapsed sweeps (Beta-Dirichlet, Dirichlet-Dirichlet), tempered or not",
     "enumeration",
     "tests/binary/test_bernoulli_gibbs.py::test_betadir_sweep_matches_enumerated_posterior, "
     "tests/binary/test_bernoulli_gibbs.py::test_dirdir_sweep_matches_enumerated_posterior, "
     "tests/binary/test_bernoulli_gibbs.py::test_assignments_given_factors_are_the_exact_conditionals"),
    ("binary `_tempering`: replica exchange of the collapsed sweep", "enumeration",
     "tests/binary/test_replica_collapsed.py::test_exchange_keeps_every_tempered_posterior"),
    ("tempering `smc`: adaptive-tempering SMC (CESS step, reweight, resample, move; "
     "waste-free; AIS on a fixed schedule), log Z and mode masses", "enumeration",
     "tests/tempering/test_smc.py::test_log_z_and_mode_mass_of_a_bimodal_target_are_exact, "
     "tests/tempering/test_smc.py::test_beta_dir_log_z_matches_enumeration, "
     "tests/tempering/test_smc.py::test_poisson_log_z_matches_quadrature, "
     "tests/tempering/test_smc.py::test_gaussian_log_z_matches_quadrature"),
]


def render_kernels():
    """The Markdown section of the report listing :data:`KERNELS`."""
    lines = ["## Compiled Gibbs kernels and their fast exact tests", "",
             "From `benchmarks/mutation/kernels.py` (kinds explained there).", "",
             "| kernel | check | fast test |", "|---|---|---|"]
    lines += [f"| {k} | {kind} | `{t}` |" for k, kind, t in KERNELS]
    return "\n".join(lines + [""])
