"""Mutations of per-mode parallel tempering along the reference path
(``bnmfzoo/inference/reference_tempering.py``) and of the one verdict of the per-mode checks
(``bnmfzoo/inference/_mass_verdict.py``): the stepping-stone terms (sign, the draws of the wrong
rung, the missing ``1 / T``), a stale ``l'`` after the sweeps, the round-trip count, and the
reasons of the verdict (the one-sided comparison with the SMC from the prior, the round-trip
rule). Each is caught by a fast test: rank-1 Poisson and exponential-Gaussian log Z against
quadrature, round trips on constructed index paths, the verdict on constructed inputs."""

from benchmarks.mutation._harness import Mutation

_RT = "bnmfzoo/inference/reference_tempering.py"
_V = "bnmfzoo/inference/_mass_verdict.py"
_T = "tests/tempering/test_reference_tempering.py::"
_POIS = _T + "test_poisson_mode_log_z_matches_quadrature"
_GAUS = _T + "test_gaussian_mode_log_z_matches_quadrature"
_SS = _T + "test_stepping_stone_of_a_gaussian_path"
_TRIPS = _T + "test_round_trips_on_constructed_index_paths"
_VERDICT = _T + "test_per_mode_verdict_each_reason_fires"

MUTATIONS = [
    Mutation(
        id="pt-stepping-stone-sign", path=_RT,
        old="terms = logsumexp(np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        new="terms = logsumexp(-np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="wrong sign of the incremental weight (b_(i+1) - b_i) l': each term estimates "
            "Z_(i-1) / Z_i instead of Z_(i+1) / Z_i"),
    Mutation(
        id="pt-stepping-stone-wrong-rung", path=_RT,
        old="terms = logsumexp(np.diff(b)[None, :] * ll[:, :-1], axis=0)",
        new="terms = logsumexp(np.diff(b)[None, :] * ll[:, 1:], axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="the ratio Z_(i+1) / Z_i estimated from the draws of rung i + 1 (not an "
            "importance sample of it): biased upwards"),
    Mutation(
        id="pt-stepping-stone-no-mean", path=_RT,
        old="axis=0) - math.log(ll.shape[0])",
        new="axis=0)",
        tests=(_SS, _POIS, _GAUS),
        why="log-sum-exp instead of log-mean-exp over the kept scans: every term off by log T"),
    Mutation(
        id="pt-stale-loglik-after-sweeps", path=_RT,
        old="""    ll = [rungs.path(1.0).loglik(s) for s in states]
    bad = [""",
        new="""    ll = [v for v in getattr(rungs, "last", None) or
          [rungs.path(1.0).loglik(s) for s in states]]
    rungs.last = ll
    bad = [""",
        tests=(_POIS, _GAUS),
        why="l' of every replica kept from the first scan (a stale log-likelihood after a "
            "move): the swaps and the stepping stone use values of states that no longer "
            "exist"),
    Mutation(
        id="pt-round-trip-without-cold-start", path=_RT,
        old="        if phase[hot] == 1:\n            phase[hot] = 2",
        new="        if phase[hot] <= 1:\n            phase[hot] = 2",
        tests=(_TRIPS,),
        why="a replica that starts at b = 0 counts a round trip on its first arrival at "
            "b = 1 (half a trip)"),
    Mutation(
        id="verdict-prior-total-two-sided", path=_V,
        old="    if prior_log_z > total + 2.0 * comb + LOG_Z_SLACK:",
        new="    if abs(prior_log_z - total) > 2.0 * comb + LOG_Z_SLACK:",
        tests=(_VERDICT,),
        why="the SMC-from-prior total compared two-sided: its low bias (log of an unbiased "
            "Z-hat) then fails results the per-mode estimators establish"),
    Mutation(
        id="verdict-round-trips-best-run", path=_V,
        old="if not (t.size and t.min() >= min_trips):",
        new="if not (t.size and t.max() >= min_trips):",
        tests=(_VERDICT,),
        why="the round-trip rule applied to the best tempering run of a mode, not to every run"),
    Mutation(
        id="verdict-light-mode-rule-inverted", path=_V,
        old="        if max(m_s[k], m_p[k]) < MIN_CHECKED:\n            continue",
        new="        if min(m_s[k], m_p[k]) < MIN_CHECKED:\n            continue",
        tests=(_VERDICT,),
        why="a mode is skipped when either estimator puts it below 1 %: a mode one estimator "
            "calls heavy and the other empty passes"),
]
