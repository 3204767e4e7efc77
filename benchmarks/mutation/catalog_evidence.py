"""Mutations of Chib's evidence estimate for Poisson NMF (``bnmfzoo/signatures/evidence.py``,
the posterior over the number of signatures). The Gamma-Gamma copy that Cemgil (2009)'s
model-order benchmark uses (``benchmarks/reproduce/counts/_chib.py``) has no test of its own
any more: ``tests/counts/test_cemgil_chib.py`` checks the library's estimator."""

from benchmarks.mutation._harness import Mutation

_CHIB = "bnmfzoo/signatures/evidence.py"
_T = "tests/counts/test_cemgil_chib.py"
_S = "tests/signatures/test_signature_evidence.py"
_GIBBS = "bnmfzoo/signatures/_gibbs.py"
_SPLIT = "tests/signatures/test_signature_gibbs_split.py"
_SCREEN = "bnmfzoo/signatures/screen.py"

MUTATIONS = [
    Mutation(
        id="evidence-chib-relabelling-sum-not-mean", path=_CHIB,
        old="    logw = logsumexp(per, axis=1) - math.log(n_perms_total)  # one term per draw\n",
        new="    logw = logsumexp(per, axis=1)  # one term per draw\n",
        tests=(f"{_T}::test_chib_matches_exact_evidence_with_label_switching",),
        why="the relabellings are summed, not averaged: the ordinate is K! too high when the "
            "chain stays in one labelling"),
    Mutation(
        id="evidence-chib-V-rate-without-signature-mass", path=_CHIB,
        old=("            V_star[None], aV + red[\"s_kn\"], "
             "(bV + 1.0)[None, None, :]).sum(axis=1)])  # (G, N)\n"),
        new=("            V_star[None], aV + red[\"s_kn\"], bV[None, None, :]).sum(axis=1)])"
             "  # (G, N)\n"),
        tests=(f"{_T}::test_chib_matches_exact_evidence_with_label_switching",
               f"{_T}::test_chib_rank_one_matches_exact_evidence",
               f"{_S}::test_chib_matches_brute_force"),
        why="the exposures' ordinate forgets the signature's unit mass in the Gamma rate: "
            "p(V* | T*, Y) is evaluated under the wrong conditional"),
    Mutation(
        id="evidence-chib-loglik-without-factorials", path=_CHIB,
        old=("    log_lik = float((x * np.log(lam[r, c])).sum() - lam.sum() "
             "- gammaln(x + 1.0).sum())\n"),
        new="    log_lik = float((x * np.log(lam[r, c])).sum() - lam.sum())\n",
        tests=(f"{_T}::test_chib_rank_one_matches_exact_evidence",),
        why="the Poisson log-likelihood at (T*, V*) drops log x!: the evidence is off by a "
            "constant (which does not change a rank choice, but does the value)"),
    Mutation(
        id="signatures-split-alias-branches-swapped", path=_GIBBS,
        old="                j = i if f < prob[i] else alias[i]\n",
        new="                j = alias[i] if f < prob[i] else i\n",
        tests=(f"{_SPLIT}::test_split_is_the_multinomial",),
        why="the alias table's two outcomes are swapped: medium cells are split with the "
            "wrong probabilities"),
    Mutation(
        id="signatures-split-binomial-rest-not-shrunk", path=_GIBBS,
        old="                tot -= rate[k]\n",
        new="",
        tests=(f"{_SPLIT}::test_split_is_the_multinomial",),
        why="conditional binomials divide by the total rate, not the rate of the signatures "
            "left: large cells put too much on the last signatures"),
    Mutation(
        id="signatures-split-search-unscaled-uniform", path=_GIBBS,
        old="                u = float(res >> uint64(11)) * (1.0 / 9007199254740992.0) * tot\n",
        new="                u = float(res >> uint64(11)) * (1.0 / 9007199254740992.0)\n",
        tests=(f"{_SPLIT}::test_split_is_the_multinomial",),
        why="the uniform of the linear search is not scaled to the total rate: small cells "
            "go to the first signatures"),
    Mutation(
        id="signatures-screen-dirichlet-entropy-sign", path=_SCREEN,
        old="                           - ((A - 1.0) * elogT).sum())\n",
        new="                           + ((A - 1.0) * elogT).sum())\n",
        tests=("tests/signatures/test_signature_screen.py::"
               "test_bound_is_exact_at_rank_one_and_below_the_evidence_at_rank_two",),
        why="the variational bound adds the Dirichlet's E log q term instead of subtracting "
            "it: the bound is no longer the evidence at rank 1"),
    Mutation(
        id="evidence-unreliable-bound-without-error", path=_CHIB,
        old="    upper = z + 2.0 * np.nan_to_num(table[\"se\"].to_numpy(), nan=0.0)\n",
        new="    upper = z\n",
        tests=("tests/signatures/test_signature_screen.py::"
               "test_unreliable_rank_bounds_the_others",),
        why="an unreliable rank's evidence is taken as its own upper bound, without the "
            "estimate's error: the bounds on the probabilities are too narrow"),
]
