"""Mutations of the vectorized rank-normalized R-hat and bulk ESS behind the unconverged-chains
warning (``bnmfzoo/diagnostics/_convergence.py``): each is caught by the entry-by-entry
agreement with arviz-stats."""

from benchmarks.mutation._harness import Mutation

_CONV = "bnmfzoo/diagnostics/_convergence.py"
_AGREE = "tests/diagnostics/test_fast_convergence.py::test_matches_arviz_stats_entry_by_entry"
_ALIGN = "bnmfzoo/diagnostics/_modes/alignment.py"
_APART = "tests/diagnostics/test_alignment.py::test_warning_says_when_chains_stay_apart[0]"

MUTATIONS = [
    Mutation(
        id="convergence-no-folded-rhat", path=_CONV,
        old="np.fmax(bulk, _rhat(z_folded))",
        new="bulk",
        tests=(_AGREE,),
        why="R-hat of the bulk only: chains that agree in location but not in spread pass"),
    Mutation(
        id="convergence-blom-offset", path=_CONV,
        old="/ 2.0 + 1.0 - 0.375) / (N - 2 * 0.375 + 1)",
        new="/ 2.0 + 1.0 - 0.5) / (N - 2 * 0.5 + 1)",
        tests=(_AGREE,),
        why="Hazen's offset instead of Blom's 3/8: the normal scores of the ranks are off"),
    Mutation(
        id="convergence-no-monotone-sequence", path=_CONV,
        old="mono = np.minimum.accumulate(q, axis=0)",
        new="mono = q",
        tests=(_AGREE,),
        why="Geyer's initial monotone sequence dropped: noisy autocorrelations inflate or "
            "deflate the ESS"),
    Mutation(
        id="convergence-unsplit-chains", path=_CONV,
        old="half = S // 2\n",
        new="half = S\n",
        tests=(_AGREE,),
        why="chains not split in halves: a trend within a chain no longer raises R-hat"),
    Mutation(
        id="convergence-ess-one-chain-variance", path=_CONV,
        old="var_plus = mean_var * (n - 1.0) / n + np.var(z.mean(2), axis=1, ddof=1)",
        new="var_plus = mean_var * (n - 1.0) / n",
        tests=(_AGREE,),
        why="the between-chain variance left out of the ESS's variance estimate"),
    Mutation(
        id="convergence-apart-argmax-both", path=_ALIGN,
        old="top, bottom = int(np.argmax(lo)), int(np.argmin(hi))",
        new="top, bottom = int(np.argmax(lo)), int(np.argmax(hi))",
        tests=(_APART,),
        why="chains that stay apart compared with themselves: the warning calls them slow "
            "mixing and asks for more draws"),
    Mutation(
        id="convergence-apart-full-range", path=_ALIGN,
        old="lo, hi = np.percentile(x, [5, 95], axis=1)",
        new="lo, hi = np.percentile(x, [50, 50], axis=1)",
        tests=(_APART,),
        why="chains compared by their medians alone: any shift reads as chains apart"),
]
