"""The power posterior of Poisson NMF, sampled exactly by conjugate Gibbs (tempered sweeps).

Replica ``beta`` of :mod:`bnmfzoo.inference.tempering` targets the power posterior

``pi_beta(A, W, rates) ∝ p(A, W, rates) prod_dn Poisson(X_dn | mu_dn)^beta``,
``mu_dn = o_dn sum_k A_dk W_kn``,

the path ``p0 exp(beta l)`` every other family tempers along. Its swap statistic is the
log-likelihood itself, whose spread over the posterior is ``sqrt(p / 2)`` nats for ``p``
informed parameters (Laplace), so neighbouring rungs swap at a spacing ``~ beta / sqrt(p / 2)``
whatever the counts look like.

**The augmentation.** ``Poisson(x | mu)^beta ∝ exp(-beta mu) mu^(beta x)``. Latent-count Gibbs
needs an integer power of ``mu = sum_k mu_k`` (the multinomial expansion). Write
``beta x = n - delta`` with ``n = ceil(beta x)`` and ``0 <= delta < 1``; for ``delta > 0``

``mu^(-delta) = Gamma(delta)^(-1) int_0^inf t^(delta - 1) exp(-t mu) dt``,

so with a latent ``t_dn >= 0`` per nonzero (``t = 0`` where ``delta = 0``)

``exp(-beta mu) mu^(beta x) = int exp(-(beta + t) mu) mu^n t^(delta - 1) / Gamma(delta) dt``,

and ``mu^n`` splits multinomially as usual. Every conditional is standard:

* ``t_dn | A, W ~ Gamma(delta_dn, mu_dn)`` (shape, rate);
* ``z_dn. | A, W ~ Multinomial(n_dn, p_k ∝ A_dk W_kn)`` (:func:`split_counts`' kernel);
* ``A_dk | z, t, W ~ Gamma(a + sum_n z_dnk, b + beta sum_n o_dn W_kn + sum_n t_dn o_dn W_kn)``
  (the first sum over the observed cells of row ``d``, the second over its nonzeros), and
  ``W`` alike;
* the rate variables given ``A, W`` as in plain Gibbs; then the rescaling and shear moves,
  which keep every ``A_dk W_kn`` and so every ``mu_dn`` (exact for any likelihood of ``A @ W``).

At ``beta = 1`` every ``delta`` is 0 and the sweep is the plain Gibbs sweep (the compiled one
runs there). Cost O(nonzeros K) per sweep, memory O(nonzeros + (D + N) K); nothing is kept per
rung.

This replaces, for Poisson models, the rounding path of
:mod:`bnmfzoo.inference.counts._tempering` (a random fraction of the data), whose swap
statistic has heavy tails when most counts are 1 (measured on the Reuters word counts in
``benchmarks/RESULTS.md``). The negative binomial has no such augmentation of
``NB(x | alpha mu, p)^beta`` and keeps the rounding path.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Friel, N. & Pettitt, A. N. (2008). Marginal likelihood estimation via power posteriors.
JRSS B 70(3), 589-607.
"""

import dataclasses

import numpy as np

from bnmfzoo.inference.counts._core import (
    _entry_exposure_A,
    _split_kernel,
    exposures,
    gamma_update,
    seed_state,
)
from bnmfzoo.inference.counts._gibbs import log_likelihood
from bnmfzoo.inference.counts._nb_core import nonzero_means
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals
from bnmfzoo.inference.counts._sweeps import gibbs_sweeps, group_moves
from bnmfzoo.inference.counts._tempering import check_inner_sweeps, copy_state

__all__ = ["PowerCounts"]


class PowerCounts:
    """Power-posterior sweeps of a Poisson model: ``sweep``, ``loglik``, ``copy``, ``dimension``.

    ``state`` is a dict with ``A``, ``W``, ``rates`` and ``alpha`` (``None``).

    Parameters
    ----------
    problem : CountProblem
        A Poisson problem.
    inner_sweeps : int
        Gibbs sweeps per tempered sweep.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = PowerCounts(problem_from_factorization(recognize(poisson(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.all(s["A"] > 0)), s["W"].shape
    (True, (2, 3))
    """

    def __init__(self, problem, inner_sweeps=1):
        if problem.family != "poisson":
            raise ValueError("the power-posterior sweep is for Poisson models; the negative "
                             "binomial tempers along the rounding path (TemperedCounts)")
        self.problem = problem
        self.inner_sweeps = check_inner_sweeps(inner_sweeps)
        D, N = problem.shape
        self.dimension = (D + N) * problem.rank
        data = problem.data
        self._rows = data.rows().astype(np.int32)
        self._cols = np.asarray(data.cols, np.int32)
        self._x = np.asarray(data.counts, float)
        self._o = np.asarray(problem.offsets_nz, float)

    def _scaled_exposure(self, beta):
        e = self.problem.expo
        if e.kind == "separable":
            return dataclasses.replace(e, row_offset=beta * e.row_offset)
        return dataclasses.replace(e, offsets=beta * e.offsets)

    def sweep(self, state, beta, rng):
        """``inner_sweeps`` exact sweeps of ``pi_beta`` (in place)."""
        beta = float(beta)
        if beta == 1.0:
            state.update(gibbs_sweeps(self.problem, state, rng, self.inner_sweeps))
            return
        if not 0.0 < beta < 1.0:
            raise ValueError(f"beta must be in (0, 1], got {beta!r}")
        scaled = beta * self._x
        n = np.ceil(scaled)
        delta = n - scaled
        frac = np.flatnonzero(delta > 1e-12)
        expo = self._scaled_exposure(beta)
        counts = n.astype(np.int32)
        for _ in range(self.inner_sweeps):
            self._one_sweep(state, counts, delta, frac, expo, rng)

    def _one_sweep(self, state, counts, delta, frac, expo, rng):
        p = self.problem
        A = np.ascontiguousarray(state["A"], float)
        W = np.ascontiguousarray(state["W"], float)
        D, N = p.shape
        K = p.rank
        mu = nonzero_means(p.data, A, W, self._o)
        if not np.all(np.isfinite(mu)) or np.any(mu[frac] <= 0.0):
            raise FloatingPointError("a nonzero count has a zero or non-finite mean A @ W")
        t_o = rng.gamma(delta[frac], 1.0 / mu[frac]) * self._o[frac]  # t_dn o_dn
        rows, cols = self._rows[frac], self._cols[frac]
        ZA, ZWt = np.empty((D, K)), np.empty((N, K))
        if _split_kernel(self._rows, self._cols, counts, A, np.ascontiguousarray(W.T),
                         seed_state(rng), int(rng.integers(0, 2**31 - 1)), ZA, ZWt):
            raise FloatingPointError("a nonzero count has a zero or non-finite mean A @ W")
        bA, bW = prior_rates(p, state["rates"])
        extra = np.empty((D, K))
        _entry_exposure_A(rows, cols, t_o, W, extra)
        A = gamma_update(rng, p.aA, bA, ZA, exposures(expo, W) + extra)
        extra_t = np.empty((N, K))
        _entry_exposure_A(cols, rows, t_o, np.ascontiguousarray(A.T), extra_t)
        W = gamma_update(rng, p.aW, bW, ZWt.T,
                         (exposures(expo, A.T, transpose=True) + extra_t).T)
        rates = dict(state["rates"])
        for name, (shape, rate) in rate_conditionals(p, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        state.update(A=A, W=W, rates=rates)
        state.update(group_moves(p, state, rng))

    def loglik(self, state):
        """The Poisson log-likelihood at ``state`` (the term multiplied by ``beta``)."""
        return log_likelihood(self.problem, state)

    def copy(self, state):
        """An independent copy."""
        return copy_state(state)
