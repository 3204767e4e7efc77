"""The compiled Gibbs kernels named in ``ARCHITECTURE.md`` and the fast test that checks each
against its exact law, listed in ``REPORT.md`` by :mod:`benchmarks.mutation.run`.

``kind`` says how strong the check is: **exact conditional** (every component of one block's
draw, other blocks fixed, against its analytic conditional: KS / chi-square, Bonferroni),
**enumeration** (the kernel's chain against the exactly enumerated posterior of a tiny
model: every component jointly), **invariance** (exact draws of the target stay exact after
the kernel, or means against importance sampling: the kernel keeps the right distribution,
but one conditional can hide behind another), **SBC only** (no fast exact test yet).
"""

_X = "tests/test_exact_conditionals.py::"

#: (kernel, kind, fast test(s))
KERNELS = [
    ("counts `_core`: latent-count split, count by count and sequential binomials",
     "exact conditional", _X + "test_split_every_component_and_the_joint_are_multinomial"),
    ("counts `_sweeps`: compiled conjugate Gamma draws of A and W", "exact conditional",
     _X + "test_compiled_gamma_draws_of_every_entry_are_exact"),
    ("counts `_sweeps`: compiled Gamma draws of the ARD / HPF rates", "exact conditional",
     _X + "test_compiled_rate_draws_are_exact"),
    ("counts `_core.gamma_update` (the Python sweep's conjugate draw)", "exact conditional",
     _X + "test_python_gamma_update_is_shape_rate"),
    ("counts `_sweeps`: rescaling and shear group moves", "invariance",
     "tests/test_counts_sweeps.py::test_group_moves_keep_the_prior"),
    ("counts `_sweeps.gig_one` (GIG draws)", "exact conditional",
     "tests/test_counts_sweeps.py::test_gig_matches_scipy"),
    ("counts `_nb_core`: NB split + CRT tables (small counts)", "enumeration",
     "tests/test_counts_gibbs.py::test_nb_augmentation_matches_enumeration"),
    ("counts `_nb_core`: slice sampler of the NB dispersion", "SBC only",
     "tests/test_counts_sweeps.py::test_sbc_nb_sweep_with_group_moves"),
    ("counts `_nb2`: per-cell Gamma multipliers", "invariance",
     "tests/test_counts_user_models.py::test_imputed_counts_follow_the_posterior_predictive"),
    ("counts `_power`: power-posterior sweep", "invariance",
     "tests/test_counts_power.py::test_power_sweep_keeps_the_power_posterior"),
    ("counts `_tempering`: tempered split (both families)", "invariance",
     "tests/test_counts_gibbs.py::test_tempered_sweep_keeps_its_marginal, "
     "tests/test_counts_tempering_nb.py::test_tempered_sweep_matches_quadrature"),
    ("gaussian/gibbs `_core` + `_sweep_kernels` + `_gram`: NMF columns of A, rows of W, tau",
     "exact conditional",
     _X + "test_gaussian_gibbs_every_entry_follows_its_truncated_normal"),
    ("gaussian/gibbs `truncnorm`", "exact conditional",
     "tests/test_truncnorm.py::test_draws_match_scipy"),
    ("gaussian/gibbs `noise_sd` (sigma ~ HalfNormal / HalfCauchy)", "exact conditional",
     "tests/test_noise_sd.py::test_draws_follow_the_conditional"),
    ("gaussian/gibbs `_core`: NMTF core S and factors F, G", "SBC only",
     "tests/test_gibbs_sbc.py::test_sbc_gibbs"),
    ("gaussian/priors `_gamma_conditional`", "exact conditional",
     "tests/test_recognize_weighted.py::test_gamma_conditional_distribution"),
    ("gaussian/priors `_prior_core`: per-entry prior terms (residual and Gram paths)",
     "exact conditional",
     _X + "test_nmf_prior_sweep_every_entry_follows_its_truncated_normal"),
    ("gaussian/priors `_weighted_core`, `_gig`", "SBC only",
     "tests/test_recognize_sbc.py::test_sbc_recognized_priors, "
     "tests/test_recognize_weighted.py::test_sbc_weighted"),
    ("gaussian/priors `_prior_nmtf`: F, S, G with per-entry priors, fixed or learned noise",
     "exact conditional",
     _X + "test_nmtf_prior_sweep_every_entry_follows_its_truncated_normal, "
     "tests/test_nmtf_priors.py::test_nmtf_prior_sweep_keeps_the_posterior"),
    ("gaussian/modes `_tempering`, `_symmetry`", "SBC only",
     "tests/test_gibbs_sbc.py::test_sbc_gibbs"),
    ("binary `_core`: collapsed sweeps (Beta-Dirichlet, Dirichlet-Dirichlet), tempered or not",
     "enumeration",
     "tests/test_bernoulli_gibbs.py::test_betadir_sweep_matches_enumerated_posterior, "
     "tests/test_bernoulli_gibbs.py::test_dirdir_sweep_matches_enumerated_posterior, "
     "tests/test_bernoulli_gibbs.py::test_assignments_given_factors_are_the_exact_conditionals"),
    ("binary `_tempering`: replica exchange of the collapsed sweep", "enumeration",
     "tests/test_replica_collapsed.py::test_exchange_keeps_every_tempered_posterior"),
]


def render_kernels():
    """The Markdown section of the report listing :data:`KERNELS`."""
    lines = ["## Compiled Gibbs kernels and their fast exact tests", "",
             "From `benchmarks/mutation/kernels.py` (kinds explained there).", "",
             "| kernel | check | fast test |", "|---|---|---|"]
    lines += [f"| {k} | {kind} | `{t}` |" for k, kind, t in KERNELS]
    return "\n".join(lines + [""])
