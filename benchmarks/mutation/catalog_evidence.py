"""Mutations of Chib's evidence estimate for Poisson NMF (``benchmarks/reproduce/counts/_chib.py``,
the independent check of the VB bound in Cemgil (2009)'s model-order experiment)."""

from benchmarks.mutation._harness import Mutation

_CHIB = "benchmarks/reproduce/counts/_chib.py"
_T = "tests/test_cemgil_chib.py"

MUTATIONS = [
    Mutation(
        id="evidence-chib-relabelling-sum-not-mean", path=_CHIB,
        old="    logw = logsumexp(const[:, None] + per, axis=1) - math.log(per.shape[1])\n",
        new="    logw = logsumexp(const[:, None] + per, axis=1)\n",
        tests=(f"{_T}::test_chib_matches_exact_evidence_with_label_switching",),
        why="the relabellings are summed, not averaged: the ordinate is I! too high when the "
            "chain stays in one labelling"),
    Mutation(
        id="evidence-chib-T-rate-mean-not-sum", path=_CHIB,
        old="                                       1.0 / (b + V.sum(axis=1))[None, :])\n",
        new="                                       1.0 / (b + V.mean(axis=1))[None, :])\n",
        tests=(f"{_T}::test_chib_matches_exact_evidence_with_label_switching",
               f"{_T}::test_chib_rank_one_matches_exact_evidence"),
        why="the Gamma full conditional of T takes the mean of V's row instead of its sum: the "
            "Gibbs sampler targets another posterior"),
    Mutation(
        id="evidence-chib-loglik-without-factorials", path=_CHIB,
        old="    log_lik = float((X * np.log(lam) - lam - gammaln(X + 1.0)).sum())\n",
        new="    log_lik = float((X * np.log(lam) - lam).sum())\n",
        tests=(f"{_T}::test_chib_rank_one_matches_exact_evidence",),
        why="the Poisson log-likelihood at (T*, V*) drops log x!: the evidence is off by a "
            "constant (which does not change a rank choice, but does the value)"),
]
