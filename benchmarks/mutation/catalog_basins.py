"""Mutations of the basin rule for modes (``bnmfzoo/diagnostics/_modes/basins.py``): clusters
joined by a one-way move (weak instead of strong connectivity), moves counted across the
boundary between two chains, the representative not re-centred on the chains' draws (a single
noisy draw again), every mode's draws judged against mode 0's basin, and three of the test an
estimator's draws meet (``outside_basin``: no radius, a radius that does not ask for the nearest
representative, a radius below the cut). Each is caught by a fast test on constructed draws
(``tests/diagnostics/test_mode_basins.py``)."""

from benchmarks.mutation._harness import Mutation

_B = "bnmfzoo/diagnostics/_modes/basins.py"
_T = "tests/diagnostics/test_mode_basins.py::"
_BOTH = _T + "test_chain_connected_modes_needs_moves_both_ways"
_APART = _T + "test_two_separated_basins_stay_apart_and_a_one_way_move_leaves"
_BROAD = _T + "test_broad_single_basin_is_one_mode_though_draws_lie_beyond_the_cut_of_each_other"
_EXACT = _T + "test_exact_draws_of_a_broad_mode_stay_inside_its_basin"
_KNOWN = _T + "test_a_known_mode_within_the_radius_is_still_outside"

MUTATIONS = [
    Mutation(
        id="basins-one-way-move-joins", path=_B,
        old='connection="strong")',
        new='connection="weak")',
        tests=(_BOTH, _APART),
        why="weakly connected components: a chain that crossed a barrier once (burn-in, or a "
            "move it never undid) joins two modes, so a mode's draws that left it count as in"),
    Mutation(
        id="basins-moves-across-chains", path=_B,
        old="        seq = label[chain_of == c]\n",
        new="        seq = label\n",
        tests=(_BOTH,),
        why="the draws of all chains read as one sequence: the jump from one chain's last draw "
            "to the next chain's first is counted as a move between clusters"),
    Mutation(
        id="basins-representative-not-recentred", path=_B,
        old="                      _unit_l2(refs[k]), 2) if np.any(start_mode == k)",
        new="                      _unit_l2(refs[k]), 0) * 0 + _unit_l2(refs[k]) "
            "if np.any(start_mode == k)",
        tests=(_BROAD,),
        why="the representative stays one member (a single noisy draw): a broad stationary "
            "mode's draws lie beyond the cut from it"),
    Mutation(
        id="basins-home-of-mode-zero", path=_B,
        old="    inside = sc[\"mode_of\"][cl[\"label\"]] == comp[start_mode]\n",
        new="    inside = sc[\"mode_of\"][cl[\"label\"]] == comp[0]\n",
        tests=(_APART,),
        why="every mode's draws judged against mode 0's basin: another mode's draws look as if "
            "they had left it"),
    Mutation(
        id="basins-outside-no-radius", path=_B,
        old="    rest = np.flatnonzero(~inside)  # the few",
        new="    rest = np.flatnonzero(~inside)[:0]  # the few",
        tests=(_EXACT,),
        why="an estimator's draw is judged by the cut alone: a broad mode's exact draws lie "
            "beyond it about 10 % of the time and the separation rule refuses every run"),
    Mutation(
        id="basins-outside-radius-not-nearest", path=_B,
        old="        inside[rest] = own[nearest] & (",
        new="        inside[rest] = (ang[:, own] <= np.asarray(basins[\"cluster_radius\"])[own])"
            ".any(1) | (",
        tests=(_KNOWN,),
        why="a draw within the radius of any of the mode's clusters is inside although another "
            "mode's cluster is nearer: a leak into a known mode is hidden"),
    Mutation(
        id="basins-radius-below-cut", path=_B,
        old="            radius[c] = max(float(cut), float(np.quantile(d, RADIUS_QUANTILE)))\n",
        new="            radius[c] = min(float(cut), float(np.quantile(d, RADIUS_QUANTILE)))\n",
        tests=(_EXACT,),
        why="the radius never exceeds the cut: the chains' own reach is ignored"),
]
