"""The tempered-sweep interface of the Poisson family (for :mod:`bnmfzoo.inference.tempering`).

Tempering the Poisson likelihood itself, ``p(A) p(W) p(X | A, W)^beta``, is not conjugate for
latent-count Gibbs: ``(sum_k m_k)^(beta x)`` has no multinomial expansion. What is exact and
simple is to temper the *augmented* likelihood: replica ``beta`` targets

``pi_beta(Z, A, W) ∝ p(A) p(W) prod_dnk Poisson(Z_dnk; o_dn A_dk W_kn)^beta`` on
``sum_k Z_dnk = X_dn``,

whose ``(A, W)`` marginal at ``beta = 1`` is the posterior. Its conditionals are a Gamma
(shape ``a + beta Z``, rate ``b + beta exposure``) and, for each count, the "power multinomial"
``∝ prod_k (m_k^z_k / z_k!)^beta``, drawn exactly by rejection
(:func:`~bnmfzoo.inference.counts._core.split_counts_tempered`). The state carries the count
tables and ``sum log Z_dnk!`` of its last split, so the tempered term

``l(Z, A, W) = sum_dk ZA log A + sum_kn ZW log W + sum_nz x log o - sum log Z! - sum_obs o (A W)``

costs O((D + N) K) per evaluation: swaps are cheap. Rejection acceptance falls with the count
size at small ``beta`` (``E[(prod_k Z_k! / x!)^(1 - beta)]``): keep ``beta_min`` moderate for
data with large counts. Negative-binomial models: :class:`~bnmfzoo.inference.counts.
_nb_tempering.TemperedNB` (no rejection needed there).
"""

import numpy as np

from bnmfzoo.inference.counts._core import exposures, gamma_update, split_counts_tempered
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals

__all__ = ["TemperedPoisson"]


class TemperedPoisson:
    """``sweep(state, beta, rng)``, ``loglik(state)``, ``copy(state)``, ``dimension``.

    ``state`` is a dict with ``A``, ``W``, ``rates`` and the last split's ``ZA``, ``ZW``,
    ``lgz`` (filled by the first sweep).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = TemperedPoisson(problem_from_factorization(recognize(poisson(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.isfinite(fam.loglik(s)))
    True
    """

    def __init__(self, problem):
        if problem.family != "poisson":
            raise NotImplementedError("TemperedPoisson tempers Poisson models (negative "
                                      "binomial: TemperedNB)")
        self.problem = problem
        D, N = problem.shape
        self.dimension = (D + N) * problem.rank
        self._log_o = float(np.sum(problem.data.counts * np.log(problem.offsets_nz)))

    def sweep(self, state, beta, rng):
        """One exact sweep of ``pi_beta`` (in place)."""
        p = self.problem
        bA, bW = prior_rates(p, state["rates"])
        ZA, ZW, _, lgz = split_counts_tempered(p.data, state["A"], state["W"], beta, rng,
                                               with_lgz=True)
        A = gamma_update(rng, p.aA, bA, ZA, exposures(p.expo, state["W"]), beta)
        W = gamma_update(rng, p.aW, bW, ZW, exposures(p.expo, A.T, transpose=True).T, beta)
        rates = dict(state["rates"])
        for name, (shape, rate) in rate_conditionals(p, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        state.update(A=A, W=W, rates=rates, ZA=ZA, ZW=ZW, lgz=lgz)

    def loglik(self, state):
        """The augmented log-likelihood ``l(Z, A, W)`` (the term multiplied by ``beta``)."""
        A, W = state["A"], state["W"]
        return float(np.sum(state["ZA"] * np.log(A)) + np.sum(state["ZW"] * np.log(W))
                     + self._log_o - state["lgz"]
                     - np.sum(A * exposures(self.problem.expo, W)))

    def copy(self, state):
        """An independent copy."""
        out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
        out["rates"] = {n: v.copy() for n, v in state["rates"].items()}
        return out
