"""Mutations of the data-scaled defaults, the outlier rule and the log-likelihood options
(issue #34), each caught by a fast test of ``tests/gaussian/test_scale_defaults.py`` or
``tests/frontends/test_step_assignment.py``."""

from benchmarks.mutation._harness import Mutation

_SCALE = "tests/gaussian/test_scale_defaults.py"
_STEPS = "tests/frontends/test_step_assignment.py"

MUTATIONS = [
    Mutation(id="defaults-rate-without-root", path="bnmfzoo/models/gaussian.py",
             old="lam = float((n_factors / mean_abs) ** (1.0 / n_blocks))",
             new="lam = float(n_factors / mean_abs)",
             tests=(f"{_SCALE}::test_bayesian_nmf_defaults_are_scale_free",
                    f"{_SCALE}::test_auto_priors_are_in_the_graph_and_explicit_values_are_kept"),
             why="the automatic rate no longer scales as c**(-1/2): the prior mean of A W is off "
                 "the data's scale at other units"),
    Mutation(id="defaults-tau-rate-sd-not-variance", path="bnmfzoo/models/gaussian.py",
             old='beta = float(alpha_tau) * stats["variance"]',
             new='beta = float(alpha_tau) * stats["variance"] ** 0.5',
             tests=(f"{_SCALE}::test_model_defaults_are_scale_free_for_gibbs_and_vb",
                    f"{_SCALE}::test_auto_priors_are_in_the_graph_and_explicit_values_are_kept"),
             why="beta_tau in the data's units instead of squared units: tau's prior dominates "
                 "at small scales"),
    Mutation(id="defaults-explicit-rate-overridden", path="bnmfzoo/models/gaussian.py",
             old="    if isinstance(value, str) and value == AUTO:\n        lam = stats",
             new="    if True:\n        lam = stats",
             tests=(f"{_SCALE}::test_auto_priors_are_in_the_graph_and_explicit_values_are_kept",),
             why="a user's explicit rate is replaced by the automatic one"),
    Mutation(id="outliers-percentile-max", path="bnmfzoo/_base/outliers.py",
             old="OUTLIER_PERCENTILE = 90.0", new="OUTLIER_PERCENTILE = 100.0",
             tests=(f"{_SCALE}::test_outlier_is_named_by_position",),
             why="the reference includes the outlier itself, which then never exceeds it"),
    Mutation(id="loglik-thin-ignored", path="bnmfzoo/inference/chains.py",
             old="        post = post.isel(draw=slice(None, None, thin))",
             new="        post = post.isel(draw=slice(None, None, 1))",
             tests=(f"{_STEPS}::test_compact_log_likelihood_matches_float64",
                    f"{_STEPS}::test_skipped_log_likelihood_is_announced"),
             why="log_likelihood_thin keeps every draw"),
    Mutation(id="loglik-skip-silent", path="bnmfzoo/inference/chains.py",
             old="                _announce_skip(chains, draws, n_obs, thin)\n",
             new="",
             tests=(f"{_STEPS}::test_skipped_log_likelihood_is_announced",),
             why="the skipped log_likelihood is silent again"),
    Mutation(id="notice-every-factor", path="bnmfzoo/inference/_assignment.py",
             old="if not factors or var is not factors[0] or _claimed_by_another",
             new="if not factors or _claimed_by_another",
             tests=(f"{_STEPS}::test_unrecognized_nmf_like_model_says_why",),
             why="the notice is logged once per factor (several lines per pm.sample)"),
]
