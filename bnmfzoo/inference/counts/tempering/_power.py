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
* ``z_dn. | A, W ~ Multinomial(n_dn, p_k ∝ A_dk W_kn)`` (the split of
  :mod:`bnmfzoo.inference.counts.sweep`);
* ``A_dk | z, t, W ~ Gamma(a + sum_n z_dnk, b + beta sum_n o_dn W_kn + sum_n t_dn o_dn W_kn)``
  (the first sum over the observed cells of row ``d``, the second over its nonzeros), and
  ``W`` alike;
* the rate variables given ``A, W`` as in plain Gibbs; then the rescaling and shear moves,
  which keep every ``A_dk W_kn`` and so every ``mu_dn`` (exact for any likelihood of ``A @ W``).

The sweep is :func:`bnmfzoo.inference.counts.sweep.sweep` with ``power=``
(:func:`~bnmfzoo.inference.counts.sweep.power_rung`), followed by the group moves. At
``beta = 1`` every ``delta`` is 0 and the sweep is the plain Gibbs sweep (the compiled one
runs there). Cost O(nonzeros K) per sweep, memory O(nonzeros + (D + N) K); nothing is kept per
rung.

This replaces, for Poisson models, the rounding path of
:mod:`bnmfzoo.inference.counts.tempering._rounding` (a random fraction of the data), whose swap
statistic has heavy tails when most counts are 1 (measured on the Reuters word counts in
``docs/results/counts_core.md``). ``NB(x | alpha mu, p)^beta`` has no such augmentation;
the negative binomial's SMC and reference-path estimators temper its Poisson-Gamma mixture
instead (:mod:`bnmfzoo.inference.counts.tempering._power_nb`), and its replica exchange keeps
the rounding path.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Friel, N. & Pettitt, A. N. (2008). Marginal likelihood estimation via power posteriors.
JRSS B 70(3), 589-607.
"""

from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
from bnmfzoo.inference.counts.gibbs._moves import group_moves
from bnmfzoo.inference.counts.sweep import power_rung, sweep
from bnmfzoo.inference.counts.tempering._rounding import CountPath

__all__ = ["PowerCounts"]


class PowerCounts(CountPath):
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
    >>> from bnmfzoo.inference.counts.sweep import initial_state
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
        super().__init__(problem, inner_sweeps)

    def sweep(self, state, beta, rng):
        """``inner_sweeps`` exact sweeps of ``pi_beta`` (in place), each with the group moves."""
        beta = float(beta)
        if beta == 1.0:
            state.update(gibbs_sweeps(self.problem, state, rng, self.inner_sweeps))
            return
        if not 0.0 < beta < 1.0:
            raise ValueError(f"beta must be in (0, 1], got {beta!r}")
        rung = power_rung(self.problem, beta)
        for _ in range(self.inner_sweeps):
            state.update(sweep(self.problem, state, rng, power=rung))
            state.update(group_moves(self.problem, state, rng))
