"""The tempered-sweep interface of the negative-binomial model (for replica exchange).

Through the CRT augmentation (:mod:`bnmfzoo.inference.counts._nb_core`) the augmented
likelihood of a nonzero cell is ``prod_k |s(x_k, l_k)| / x_k! (alpha o)^l_k (1 - p)^x_k
(A_dk W_kn)^l_k exp(-q alpha o A_dk W_kn)`` (``q = log(1 + 1 / alpha)``), and ``exp(-q alpha o
(A W)_dn)`` for a zero cell. Replica ``beta`` raises only the factor that carries ``A, W``:

``pi_beta(A, W, alpha, x, l) ∝ p(A) p(W) p(alpha) h(x, l, alpha) exp(beta ell)``, with
``ell = sum_dk LA log A + sum_kn LW log W - alpha q sum_obs o (A W)`` (``LA``, ``LW``: the
tables summed over columns / rows) and the base ``h = prod |s| / x! (alpha o)^l (1 - p)^x``
untempered. At ``beta = 1`` it is the augmented NB posterior; at ``beta = 0`` the ``(A, W)``
marginal is the prior. Every conditional stays exact:

* ``(x, l) | A, W, alpha``: Dirichlet-multinomial split with parameters
  ``R_k = alpha o (A_dk W_kn)^beta``, then ``CRT(x_k, R_k)`` (the ``beta = 1`` kernel
  :func:`~bnmfzoo.inference.counts._nb_core.split_crt` at ``A^beta, W^beta``);
* ``A | l, W``: ``Gamma(a + beta LA, b + beta alpha q sum_n o W)``; likewise ``W``;
* ``alpha | A, W`` (latents summed out, drawn before them): the NB likelihood with shapes
  ``alpha o sum_k (A W)^beta`` and ``beta`` times the rate term, by slice sampling.

``ell`` costs O((D + N) K) from the state's tables, so swaps are cheap; the swap uses
``exp((beta_i - beta_j)(ell_j - ell_i))`` (``h`` and the priors cancel). Unlike the Poisson
tempering (:mod:`~bnmfzoo.inference.counts._tempering`) no rejection step is needed: the
tempered split is as cheap as the plain one, O(sum of the counts x K) per sweep.

Limitation (measured): ``ell`` carries the sampling noise of the tables, which grows with the
total count. On the 21 breast SBS96 catalogues (183,916 mutations, K = 4) its standard
deviation over a ``beta = 1`` chain is ~12,000 nats (~1,100 at fixed ``A, W, alpha``), against
~18 for the NB log-likelihood: neighbouring swaps near ``beta = 1`` then need spacings of
~1e-4, and the adaptive ladder (58 rungs) made no round trip
(``benchmarks/speed/replica_nb.py``). The sampler is exact but useful only on data with small
totals. Tempering the NB likelihood itself (swaps on the NB log-likelihood) with independence
Metropolis steps proposing from these conditionals was tried: exact on a 1 x 1 case, but its
acceptance was 0 below ``beta = 1`` on the same data.
"""

import math

import numpy as np

from bnmfzoo.inference.counts._core import exposures, gamma_update
from bnmfzoo.inference.counts._nb_core import (
    nb_loglik,
    nb_rate_factor,
    nonzero_means,
    slice_log_alpha,
    split_crt,
)
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals

__all__ = ["TemperedNB", "tempered_tables"]


def tempered_tables(problem, A, W, alpha, beta, rng):
    """``(LA, LW)``: tables of the tempered split, ``R_dnk = alpha o_dn (A_dk W_kn)^beta``."""
    if beta == 1.0:
        return split_crt(problem.data, A, W, alpha * problem.offsets_nz, rng)
    return split_crt(problem.data, A ** beta, W ** beta, alpha * problem.offsets_nz, rng)


class TemperedNB:
    """``sweep(state, beta, rng)``, ``loglik(state)``, ``copy(state)``, ``dimension``.

    ``state`` is a dict with ``A``, ``W``, ``rates``, ``alpha`` and the last split's tables
    ``LA``, ``LW`` (filled by the first sweep).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import negative_binomial, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = TemperedNB(problem_from_factorization(recognize(negative_binomial(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.isfinite(fam.loglik(s)))
    True
    """

    def __init__(self, problem):
        if problem.family == "poisson":
            raise TypeError("TemperedNB tempers negative-binomial models (Poisson: "
                            "TemperedPoisson)")
        self.problem = problem
        D, N = problem.shape
        self.dimension = (D + N) * problem.rank + (problem.alpha_prior is not None)

    def _update_alpha(self, A, W, alpha, beta, rng):
        p = self.problem
        a0, b0 = p.alpha_prior
        Ab, Wb = (A, W) if beta == 1.0 else (A ** beta, W ** beta)
        m_nz = nonzero_means(p.data, Ab, Wb, p.offsets_nz)  # o sum_k (A W)^beta
        tot = beta * float(np.sum(A * exposures(p.expo, W)))

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + nb_loglik(a, p.data, m_nz, tot)

        return slice_log_alpha(float(alpha), logpost, rng)

    def sweep(self, state, beta, rng):
        """One exact sweep of ``pi_beta`` (in place)."""
        p = self.problem
        A, W, alpha = state["A"], state["W"], state["alpha"]
        if p.alpha_prior is not None:
            alpha = self._update_alpha(A, W, alpha, beta, rng)
        bA, bW = prior_rates(p, state["rates"])
        LA, LW = tempered_tables(p, A, W, alpha, beta, rng)
        c = nb_rate_factor(alpha)
        A = gamma_update(rng, p.aA, bA, LA, c * exposures(p.expo, W), beta)
        W = gamma_update(rng, p.aW, bW, LW, c * exposures(p.expo, A.T, transpose=True).T, beta)
        rates = dict(state["rates"])
        for name, (shape, rate) in rate_conditionals(p, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        state.update(A=A, W=W, rates=rates, alpha=alpha, LA=LA, LW=LW)

    def loglik(self, state):
        """The tempered term ``ell(A, W, alpha, l)`` (the term multiplied by ``beta``)."""
        A, W = state["A"], state["W"]
        return float(np.sum(state["LA"] * np.log(A)) + np.sum(state["LW"] * np.log(W))
                     - nb_rate_factor(state["alpha"]) * np.sum(A * exposures(self.problem.expo,
                                                                             W)))

    def copy(self, state):
        """An independent copy."""
        out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
        out["rates"] = {n: v.copy() for n, v in state["rates"].items()}
        return out

