"""Mutations of Chib's evidence estimate for Poisson NMF (``bnmfzoo/signatures/evidence.py``,
the posterior over the number of signatures). The Gamma-Gamma copy that Cemgil (2009)'s
model-order benchmark uses (``benchmarks/reproduce/counts/_chib.py``) has no test of its own
any more: ``tests/counts/test_cemgil_chib.py`` checks the library's estimator."""

from benchmarks.mutation._harness import Mutation

_CHIB = "bnmfzoo/signatures/evidence.py"
_T = "tests/counts/test_cemgil_chib.py"
_S = "tests/signatures/test_signature_evidence.py"

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
]
