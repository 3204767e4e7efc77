"""Mutations of the Gaussian reference path's rescaling move and of the ``reference`` route's
handling of a mode the plain chains from the prior reached twice
(``bnmfzoo/inference/reference_path.py``): the move left out of the path's sweep, the Jacobian
of the group move with the wrong sign, the slice drawn at the wrong level or shrunk without
end, the compiled halves' squared error not recorded, and a prior-chain copy kept (refused
instead of dropped). Each is caught by a fast test of
``tests/tempering/test_gaussian_rescale.py`` (an exact-target test of the move, the log Z of a
2 x 40 rank-1 matrix against quadrature) or ``tests/tempering/test_duplicate_modes.py``."""

from benchmarks.mutation._harness import Mutation

_RP = "bnmfzoo/inference/reference_path.py"
_RG = "bnmfzoo/inference/gaussian/modes/_reference_gaussian.py"
_T = "tests/tempering/test_gaussian_rescale.py::"
_LAW = _T + "test_rescaling_move_keeps_the_log_scale_law"
_RIDGE = _T + "test_reference_path_log_z_on_a_scale_ridge_matches_quadrature"
_COPY = "tests/tempering/test_duplicate_modes.py::test_reference_check_drops_a_prior_chain_copy"
_FAR = ("tests/tempering/test_duplicate_modes.py::"
        "test_the_reference_check_stops_a_far_mode_after_two_runs")
_RC = "bnmfzoo/inference/reference_check.py"

MUTATIONS = [
    Mutation(
        id="rescale-move-not-in-path-sweep", path=_RG,
        old=("            s.tau = tau\n"
             "            rescale_components(s, *ext[\"A\"], *ext[\"W\"], rng)\n"),
        new="            s.tau = tau\n",
        tests=(_RIDGE,),
        why="the path's sweeps move along the scale ridge in hundreds of sweeps: the particles "
            "stay where the reference put them and log Z comes out low"),
    Mutation(
        id="rescale-jacobian-sign", path=_RG,
        old="    d = float(A.shape[0] - Wt.shape[0])\n",
        new="    d = float(Wt.shape[0] - A.shape[0])\n",
        tests=(_LAW, _RIDGE),
        why="the Jacobian c^(D - N) of the group move inverted: the scale's law is wrong"),
    Mutation(
        id="rescale-slice-level", path=_RG,
        old="    y = f(0.0) - rng.exponential()\n",
        new="    y = f(0.0) - 2.0 * rng.exponential()\n",
        tests=(_LAW,),
        why="the slice drawn under f(u)^(1/2): the move samples a flattened law"),
    Mutation(
        id="rescale-slice-shrinks-forever", path=_RG,
        old=("        if hi - lo < 1e-15:  # only when y = f(0) (an exponential draw of 0): "
             "stay at u = 0\n            return 0.0\n"),
        new="",
        tests=(_T + "test_the_slice_draw_ends_when_its_level_is_the_top_of_the_density",),
        why="a slice level at the density's top (an exponential draw of 0) shrinks the bracket "
            "forever: a hang in compiled code that Ctrl-C cannot stop"),
    Mutation(
        id="reference-compiled-halves-sse-not-recorded", path=_RG,
        old="                s._gram_updated(sse_term)\n",
        new="",
        tests=(_T + "test_the_compiled_path_sweep_draws_what_the_interpreted_one_does[None]",),
        why="stale sufficient statistic: the compiled Gram halves of the path's sweep leave the "
            "state's squared error at its value before the sweep, so a free tau is drawn from "
            "the wrong Gamma"),
    Mutation(
        id="reference-check-keeps-prior-copy", path=_RC,
        old=("    drop = sorted({j for _, j in dup if j >= K})\n    if drop:\n"
             "        out = drop_modes("),
        new="    drop = []\n    if drop:\n        out = drop_modes(",
        tests=(_COPY, _FAR),
        why="a prior-chain copy of an SMC mode is kept: the result is refused (one mode counted "
            "twice) instead of estimating the mode once"),
    Mutation(
        id="reference-check-runs-paths-for-fit-chain-copies", path=_RC,
        old=("    dropped = sorted(j for j in fit_copies(fitted, cut, record[\"cross_fit\"]) "
             "if j >= n_smc_modes)"),
        new="    dropped = []",
        tests=(_COPY,),
        why="a prior-chain mode the fit chains already show to be a copy gets a full path "
            "before it is dropped (on the faces half the check's CPU)"),
]
