"""Mutations of the per-mode evidence along the reference path
(``bnmfzoo/inference/reference_path.py``): the tempered term ``log p0 + log L - log q`` (the
reference's sign, the prior dropped), the power posterior's rung kept stale, the tempered noise
precision. Each is caught by a fast test whose answer is known by quadrature (rank-1 Poisson
and exponential-Gaussian models on a 1 x 2 matrix). Swapping the weights of the reference and
the prior in the per-entry conjugate priors, or leaving the truncated normal's linear term
untempered, was tried and is NOT caught by these rank-1 tests (the log Z shifts by about 0.06
nats against a tolerance of 4 x 0.02: a rank-1 posterior's scale ridge makes the fitted
reference of an entry close to its prior); those two are not listed."""

from benchmarks.mutation._harness import Mutation

_RPO = "bnmfzoo/inference/counts/tempering/_reference_poisson.py"
_RP = "bnmfzoo/inference/reference_path.py"
_RG = "bnmfzoo/inference/gaussian/modes/_reference_gaussian.py"
_T = "tests/tempering/test_reference_path.py::"
_POIS = _T + "test_poisson_mode_log_z_matches_quadrature"
_GAUS = _T + "test_gaussian_mode_log_z_matches_quadrature"
_RT = "bnmfzoo/inference/reference_tempering.py"
_LEAK = _T + "test_a_leaking_mode_s_fit_chains_are_continued_before_the_basin_rule_decides"
_WIRED = _T + "test_both_routes_continue_leaking_fit_chains"
_KEPT = _T + "test_the_per_mode_route_keeps_the_continuation_s_record_when_copies_are_dropped"
_BASINS = "bnmfzoo/diagnostics/_modes/basins.py"

MUTATIONS = [
    Mutation(
        id="reference-log-q-sign-flipped", path=_RP,
        old="return a.log_p0(state) + a.loglik(state) - a.log_q(self.q, state)",
        new="return a.log_p0(state) + a.loglik(state) + a.log_q(self.q, state)",
        tests=(_POIS, _GAUS),
        why="wrong sign of the reference in the incremental weight: the path ends at "
            "p0 L q^2, not the posterior, so the mode's log Z is wrong"),
    Mutation(
        id="reference-stale-power-rung", path=_RPO,
        old="            if self._rung[0] != b:\n",
        new="            if self._rung[0] is None:\n",
        tests=(_POIS,),
        why="the power posterior's latent counts kept from the first temperature: the sweep "
            "at every later b samples the likelihood raised to the first b"),
    Mutation(
        id="reference-prior-dropped-from-tempered-term", path=_RP,
        old="return a.log_p0(state) + a.loglik(state) - a.log_q(self.q, state)",
        new="return a.loglik(state) - a.log_q(self.q, state)",
        tests=(_POIS, _GAUS),
        why="the prior missing from the incremental weight while the sweeps still temper it: "
            "the weights and the moves target different paths"),
    Mutation(
        id="reference-noise-precision-untempered", path=_RG,
        old='ext["tau"] = b * tau',
        new='ext["tau"] = tau',
        tests=(_GAUS,),
        why="the likelihood's precision not multiplied by b: the sweep samples q^(1-b) p0^b L "
            "instead of q^(1-b) (p0 L)^b"),
    Mutation(
        id="leaking-fit-chains-not-continued", path=_RP,
        old="    if extend and leaking:\n",
        new="    if False and extend and leaking:\n",
        tests=(_LEAK,),
        why="a mode whose fit chains left its basin is judged on its 500 draws alone: a chain "
            "that stopped half-way between two clusters of one broad mode refuses the run"),
    Mutation(
        id="leaking-fit-chains-restarted", path=_RP,
        old="more = _aligned_draws(family, adapter, refs[k], ends[k], rng, len(ends[k]),",
        new="more = _aligned_draws(family, adapter, refs[k], starts[k], rng, len(ends[k]),",
        tests=(_LEAK,),
        why="the continued chains start again from the mode's members, not where they stopped: "
            "new chains, not longer ones, so a chain's crossing is never completed"),
    Mutation(
        id="every-mode-s-fit-chains-continued", path=_RP,
        old="if ends[k] and basins[\"left\"][k] > MAX_LEFT]",
        new="if ends[k]]",
        tests=(_LEAK,),
        why="every mode's chains continued, leaking or not (the cost of the fit chains "
            "quadrupled on every run)"),
    Mutation(
        id="reference-check-does-not-continue-leaks", path=_RP,
        old="family, adapter, refs, starts, rng, cut, n_chains, n_draws, thin, n_burn)",
        new="family, adapter, refs, starts, rng, cut, n_chains, n_draws, thin, n_burn, extend=0)",
        tests=(_WIRED,),
        why="reference_log_z called without fit chains judges a leak on the first 500 draws"),
    Mutation(
        id="gaussian-route-check-does-not-continue-leaks",
        path="bnmfzoo/inference/reference_check.py",
        old="    fitted = fit_chains_and_basins(family, adapter, refs, starts, rng, cut, n_chains, "
            "n_draws,\n                                   thin, 50)",
        new="    fitted = fit_chains_and_basins(family, adapter, refs, starts, rng, cut, n_chains, "
            "n_draws,\n                                   thin, 50, extend=0)",
        tests=(_WIRED,),
        why="the reference check (the exponential-Gaussian route) judges a leak on the first "
            "500 draws"),
    Mutation(
        id="per-mode-route-does-not-continue-leaks", path=_RT,
        old="all_refs, starts, rng, cut, n_chains, n_draws, thin, 50)",
        new="all_refs, starts, rng, cut, n_chains, n_draws, thin, 50, extend=0)",
        tests=(_WIRED,),
        why="the per-mode route (Poisson, NB, Beta-Dir) judges a leak on the first draws"),
    Mutation(
        id="leaking-fit-chains-not-continued-by-default", path=_RP,
        old="n_burn, fits=None, trim=False, extend=LEAK_EXTEND, kept=None):",
        new="n_burn, fits=None, trim=False, extend=0, kept=None):",
        tests=(_LEAK,),
        why="the continuation off unless a caller asks: every route judges a leak on the "
            "first draws"),
    Mutation(
        id="continuation-record-lost-when-copies-dropped", path=_RT,
        old="                                       kept=(fitted[1], keep))\n",
        new=")\n",
        tests=(_KEPT,),
        why="the per-mode route re-applies the basin rule after dropping copies without the "
            "continuation's record: the command no longer says that leaking chains ran on"),
    Mutation(
        id="continuation-record-not-renumbered", path=_BASINS,
        old="extended=[keep.index(k) for k in earlier[\"extended\"] if k in keep],",
        new="extended=list(earlier[\"extended\"]),",
        tests=(_KEPT,),
        why="the continued modes keep their numbers from before the copies were dropped, so "
            "the record names the wrong mode"),
]
