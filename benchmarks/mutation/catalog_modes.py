"""Mutations of the mode masses: the batch-means MCSE, its 95 % interval, the crossing check,
the split R-hat of the mode indicator, nearest-representative assignment of draws and the AIS
evidence."""

from benchmarks.mutation._harness import Mutation

_MASSES = "bnmfzoo/diagnostics/_modes/masses.py"
_EVID = "bnmfzoo/inference/gaussian/modes/mode_evidence.py"
_MARKOV = ("tests/diagnostics/test_mode_masses.py::"
           "test_batch_means_mcse_matches_the_exact_error_of_a_markov_chain")
_HONEST = ("tests/diagnostics/test_mode_masses.py::"
           "test_mode_masses_calls_crossing_chains_a_mass_and_others_not")
_AIS = ("tests/diagnostics/test_mode_masses.py::"
        "test_ais_mode_evidence_matches_quadrature_on_a_tiny_nmf")
_CHAINS = "tests/diagnostics/test_modes.py::test_mcmc_modes_chains_and_warning"
_RARE = "tests/diagnostics/test_modes.py::test_keep_rare_finds_a_mode_visited_in_short_excursions"
_INTERVAL = ("tests/diagnostics/test_mode_masses.py::"
             "test_mass_interval_covers_a_rare_mode_at_its_level")

MUTATIONS = [
    Mutation(
        id="modes-mcse-divides-by-n", path=_MASSES,
        old="return float(means.std(ddof=1) / math.sqrt(means.size))",
        new="return float(means.std(ddof=1) / means.size)",
        tests=(_MARKOV,),
        why="batch-means error divided by the number of batches instead of its square root: "
            "errors ~4x too small"),
    Mutation(
        id="modes-mcse-batches-per-draw", path=_MASSES,
        old="b = n_batches_of(C, n_batches)",
        new="b = max(2, S // 4)",
        tests=(_MARKOV,),
        why="batches of 4 draws: the autocorrelation of a sticky indicator is ignored (the "
            "i.i.d. error, far too small)"),
    Mutation(
        id="modes-no-crossing-check", path=_MASSES,
        old="if n_changes.sum() == 0:",
        new="if n_changes.sum() < 0:",
        tests=(_HONEST, _CHAINS),
        why="chains that never change mode are reported as masses (the share of chains called "
            "a weight)"),
    Mutation(
        id="modes-indicator-rhat-no-between", path=_MASSES,
        old="B = n * means.var(ddof=1)",
        new="B = means.var(ddof=1)",
        tests=(_HONEST,),
        why="the between-chain variance of the indicator loses its factor n: disagreeing chains "
            "pass as agreeing"),
    Mutation(
        id="modes-visits-count-all-draws", path=_MASSES,
        old="n_visits = np.bincount(label[start], minlength=K)",
        new="n_visits = np.bincount(label.ravel(), minlength=K)",
        tests=(_HONEST, _RARE),
        why="visits counted as draws: a mode seen in 2 excursions of 40 draws looks well "
            "visited"),
    # (argmax instead of argmin in the nearest-representative assignment is an equivalent
    # mutant with two modes: the labels swap each pass and the representatives follow them)
    Mutation(
        id="modes-min-visits-ignored", path=_MASSES,
        old="few = n_visits < min_visits",
        new="few = n_visits < 0",
        tests=(_RARE,),
        why="a mode seen in a handful of excursions is called a reliable mass"),
    Mutation(
        id="modes-interval-neff-from-se", path=_MASSES,
        old="min(float(n), p * (1 - p) / se**2)",
        new="min(float(n), p * (1 - p) / se)",
        tests=(_INTERVAL,),
        why="effective sample size from the MCSE instead of its square: an interval many "
            "times too wide (covers always)"),
    Mutation(
        id="modes-interval-ignores-mcse", path=_MASSES,
        old="n_eff = float(n) if se <= 0 or p in (0.0, 1.0) else",
        new="n_eff = float(n) if True or p in (0.0, 1.0) else",
        tests=(_INTERVAL,),
        why="the interval of independent draws (binomial on all draws): ignores the "
            "autocorrelation, far too narrow"),
    Mutation(
        id="evidence-drops-indicator", path=_EVID,
        old="log_z[k], se[k] = _log_mean_exp_indicator(log_w[k], end[k] == k)",
        new="log_z[k], se[k] = _log_mean_exp_indicator(log_w[k], end[k] >= 0)",
        tests=(_AIS,),
        why="AIS runs that end in another mode still count towards this mode's evidence"),
    Mutation(
        id="evidence-delta-wrong-sign", path=_EVID,
        old="J = np.diag(p) - np.outer(p, p)  # d p_k / d log Z_j",
        new="J = np.diag(p) + np.outer(p, p)  # d p_k / d log Z_j",
        tests=("tests/diagnostics/test_mode_masses.py::"
               "test_masses_from_log_evidence_propagates_errors_like_a_simulation",),
        why="delta-method Jacobian of the normalized masses with the wrong sign"),
    # exact arithmetic of the estimators (tests/diagnostics/test_estimator_arithmetic.py)
    Mutation(
        id="exact-mcse-ddof0", path=_MASSES,
        old="return float(means.std(ddof=1) / math.sqrt(means.size))",
        new="return float(means.std(ddof=0) / math.sqrt(means.size))",
        tests=("tests/diagnostics/test_estimator_arithmetic.py::"
               "test_two_batches_give_half_the_difference_of_their_means",),
        why="batch-means error with the biased sd of the batch means: 2.5 % too small at 20 "
            "batches (sqrt(19 / 20)), 29 % at two"),
    Mutation(
        id="exact-interval-13pct-narrow", path=_MASSES,
        old="min(float(n), p * (1 - p) / se**2)",
        new="min(float(n), p * (1 - p) / (0.87 * se)**2)",
        tests=("tests/diagnostics/test_estimator_arithmetic.py::"
               "test_interval_is_clopper_pearson_of_the_effective_sample",),
        why="Korn-Graubard interval 13 % too narrow (the MCSE scaled by 0.87 in the effective "
            "sample size)"),
    Mutation(
        id="exact-interval-10pct-narrow-coverage", path=_MASSES,
        old="min(float(n), p * (1 - p) / se**2)",
        new="min(float(n), p * (1 - p) / (0.9 * se)**2)",
        tests=("tests/diagnostics/test_estimator_arithmetic.py::"
               "test_mass_interval_coverage_floor_set_by_its_own_error",),
        why="interval 10 % too narrow, named to the coverage test alone: its floor, set by its "
            "own Monte-Carlo error, must see it"),
    Mutation(
        id="exact-interval-no-t-correction", path=_MASSES,
        old="    if df >= 1:\n        n_eff *=",
        new="    if df >= 10**9:\n        n_eff *=",
        tests=("tests/diagnostics/test_estimator_arithmetic.py::"
               "test_interval_widens_as_degrees_of_freedom_or_effective_sample_fall",),
        why="the Korn-Graubard (z / t_df)^2 shrink dropped: the interval no longer widens as "
            "the degrees of freedom fall"),
]
