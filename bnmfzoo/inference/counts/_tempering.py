"""The tempered-sweep interface of the count family (for :mod:`bnmfzoo.inference.tempering`).

**The path: a fraction ``beta`` of the data, randomly rounded.** Replica ``beta`` targets

``pi_beta(A, W, ...) ∝ p(A) p(W) p(rates, alpha) prod_dn L_beta(X_dn)``,
``L_beta(x) = (1 - f) P(n | beta o_dn, A, W) + f P(n + 1 | beta o_dn, A, W)``,

with ``n = floor(beta x)``, ``f = beta x - n`` and ``P(. | beta o, A, W)`` the model's own count
distribution at offsets ``beta o`` (Poisson with mean ``beta o (A W)_dn``; negative binomial
with shape ``alpha beta o (A W)_dn`` and the same ``p``). It is the posterior given the data
scaled by ``beta`` with each scaled count rounded down or up at random (up with probability
``f``, so ``beta x`` on average) and the exposures scaled by ``beta``. At ``beta = 1`` it is the
posterior (``f = 0``); as ``beta -> 0`` it tends to the prior; it is continuous in ``beta``
(where ``beta x`` reaches an integer both terms agree). Its ``beta``-derivative is close to the
log-likelihood, as for the power posterior ``p(A, W) p(X | A, W)^beta``, which latent-count
Gibbs cannot sample (``(sum_k m_k)^(beta x)`` has no multinomial expansion).

**Exact sweeps.** The rounding bit ``c_dn`` (``m = n + c``) is a latent variable of the replica:
a sweep draws ``c_dn | A, W`` (Bernoulli, ``P(c = 1) ∝ f P(n + 1) / ((1 - f) P(n) + f P(n +
1))``; ``P(n + 1) / P(n) = mu / (n + 1)`` for the Poisson mean ``mu``, ``(n + r) / ((n + 1) (1 +
alpha))`` for the NB shape ``r``), then one ordinary Gibbs sweep of the model on the counts
``m`` at offsets ``beta o`` (multinomial split and Gamma draws, Cemgil 2009; for the NB the
Dirichlet-multinomial split, CRT tables and the dispersion's slice update, Zhou & Carin 2015),
and the rescaling and shear moves (:mod:`bnmfzoo.inference.counts._sweeps`, exact for any
likelihood of ``A @ W``). Each step is an exact conditional of ``pi_beta(A, W, c)`` whose
``(A, W)`` marginal is ``pi_beta`` above, so the sweep leaves it invariant. Swaps compare that
marginal (:meth:`TemperedCounts.log_target`, O(nonzeros K)): no latent variable enters the
swap statistic.

**Measured** on the 21 breast SBS96 catalogues (183,916 mutations, Poisson, K = 4;
``benchmarks/speed/replica_nb.py``, 300 tune + 2000 draws through ``pm.sample``). Its log-target
moves with the log-likelihood: at ``beta`` 1, 0.5 and 0.2 its standard deviation over a chain
is ~15 nats, the Laplace value ``sqrt(p / 2)`` for ``p = (D + N) K = 468``, and the adaptive
ladder's neighbours swap at 0.45-0.73. Down to ``beta_min = 0.3`` (27 rungs) the replicas made
22 round trips (85 ms CPU per step, ~105 plain sweeps). Down to 0.2 (32 rungs) they made none
(2 in 4,000 steps of a fixed 30-rung geometric ladder):
near ``beta = 0.25`` the weakest of the four components fades (its total falls from ~7,000 to
~2,500 counts; chains run down and up the ladder disagree there by ~180 nats of
log-likelihood, a first-order-like transition that tempering crosses only slowly). Hence the
default ``beta_min = 0.3`` of
:class:`~bnmfzoo.inference.counts.replica_exchange.ReplicaExchangePoisson`. A second chain of
the same run made 1 round trip: round trips vary much between chains.

**Counts of 1: the split path (Poisson).** For ``x = 1`` the rounding path's swap statistic has
``beta``-derivative ``2 - mu - 1 / mu`` at ``beta = 1``: below ``beta = 1`` each count of 1 is
dropped with probability ``1 - beta``, and a dropped one's ``mu`` falls far (a word seen once in a
corpus has no other evidence), so the statistic has heavy tails. On the Reuters word counts (395
x 4,258, 60,114 nonzeros, 79 % of them 1s; K = 5) the ladder of that path reached its 296-rung
maximum while tuning and pairs 0.001 apart near ``beta = 1`` still swapped at 0.000. So, by
default (``split_max = 1``), a Poisson cell with ``x = 1`` follows the split path instead:

``L_beta(x) = exp(-beta o M_dn) (sum_k (o A_dk W_kn)^beta)^x / x!``

(from the latent sources ``z_k ~ Poisson(o A_dk W_kn)`` with their likelihood raised to
``beta``; ``(o M)^x exp(-o M) / x!`` at ``beta = 1``, ``K^x / x!`` as ``beta -> 0``; cells up to
``split_max`` follow it). Its
``beta``-derivative ``sum_k p_k log(o m_k) - o M`` (``p_k ∝ m_k^beta``) has no ``1 / mu``: the
count is kept in every replica. Its sweep splits the count in proportion to ``(A_dk W_kn)^beta``
and adds ``beta`` (not 1) to the Gamma shape of the component it lands in; the exposures are
``beta o`` as for the rounded cells. The rescaling move keeps every ``A_dk W_kn`` and stays; the
shear move, which changes them, is dropped in replicas below ``beta = 1`` (their target is no
longer a function of ``A @ W`` alone). By default counts of 2 or more keep the rounding path:
dropping one unit of them leaves evidence, and for large counts the split path's derivative
carries ``x`` times each cell's split entropy, which moves with the non-identified mixing
(below). Measured (``benchmarks/RESULTS.md``): on a sparse synthetic matrix with 79 % 1s the
ladder needs 50 rungs swapping at 0.32-0.61 against 66 at 0.20-0.61 without the split path; on
the Reuters counts it is not enough: with ``split_max`` 1, 4 or 20, pairs 0.01 apart near
``beta = 1`` swapped at 0.003 or less (a 6-rung probe), so replica exchange of the count family
does not yet work on text of that size.

Three earlier paths failed on the breast catalogues:

* tempering the augmented likelihood ``prod Poisson(Z; m)^beta`` needs a rejection split whose
  acceptance ``(prod_k z_k! / x!)^(1 - beta)`` vanishes for large counts (no count of the
  catalogues accepted in 100,000 proposals at ``beta = 0.2``);
* splitting at ``(A W)^beta`` (the path ``prod exp(-beta M) (sum_k m_k^beta)^x``) is exact but
  its ``beta``-derivative carries ``sum x H(p)``, the entropy of each cell's split, which moves
  with the non-identified mixing of the components: pairs near ``beta = 1`` swapped at 0-2 %;
  its NB analogue (``A, W`` raised to ``beta`` in the CRT-augmented posterior) swapped on
  tables whose noise grows with the total count (sd ~12,000 nats);
* scaling the data with one fixed rounding per cell (no latent bit) made each pair's swap
  statistic a sum over the cells whose rounded count changes between the rungs: a variance of
  about ``(beta - beta') p`` instead of ``(beta - beta')^2 p / (2 beta^2)``, and swaps at
  0.1-0.28 on 58 rungs.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
"""

import dataclasses
import math

import numpy as np
from scipy.special import gammaln, logsumexp, xlogy

from bnmfzoo.inference.counts._core import CountMatrix, exposures, gamma_update, split_counts
from bnmfzoo.inference.counts._gibbs import gibbs_sweep, log_likelihood
from bnmfzoo.inference.counts._nb_core import nonzero_means
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals
from bnmfzoo.inference.counts._sweeps import gibbs_sweeps, group_moves

__all__ = ["TemperedCounts"]


@dataclasses.dataclass(frozen=True)
class _Rung:
    """What a ladder rung needs at the nonzeros (and its scaled exposures)."""

    expo: object
    n: np.ndarray
    log_f: np.ndarray
    log_1mf: np.ndarray
    offsets_nz: np.ndarray
    log_n_fact: np.ndarray


class TemperedCounts:
    """Tempered sweeps of Poisson and NB models: ``sweep``, ``log_target``, ``loglik``, ``copy``.

    ``state`` is a dict with ``A``, ``W``, ``rates`` and ``alpha`` (``None`` for Poisson).

    Parameters
    ----------
    problem : CountProblem
    inner_sweeps : int
        Gibbs sweeps (each with the group moves) given one draw of the rounding bits: the
        bits cost a fixed ~1 ms of Python per draw on small data, a compiled Poisson sweep
        ~0.5 ms on the breast catalogues.
    split_max : int, optional
        Poisson: cells whose count is at most ``split_max`` follow the split path (module
        docstring) instead of the rounding path (default 1; 0 rounds every cell; the NB model
        always rounds).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = TemperedCounts(problem_from_factorization(recognize(poisson(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.isclose(fam.log_target(s, 1.0), fam.loglik(s)))
    True
    """

    def __init__(self, problem, inner_sweeps=1, split_max=1):
        if isinstance(inner_sweeps, bool) or not isinstance(inner_sweeps, (int, np.integer)) \
                or inner_sweeps < 1:
            raise ValueError(f"inner_sweeps must be a positive integer, got {inner_sweeps!r}")
        self.inner_sweeps = int(inner_sweeps)
        self.problem = problem
        D, N = problem.shape
        self.dimension = (D + N) * problem.rank + (problem.alpha_prior is not None)
        self._poisson = problem.family == "poisson"
        data = problem.data
        self._rows = data.rows()
        self._cols = np.asarray(data.cols, np.int64)
        self._x = np.asarray(data.counts, float)
        if isinstance(split_max, bool) or not isinstance(split_max, (int, np.integer)) \
                or split_max < 0:
            raise ValueError(f"split_max must be an integer >= 0, got {split_max!r}")
        small = self._x <= split_max
        self._small = small if (self._poisson and small.any()) else None
        if self._small is not None:  # the split path's cells, fixed: tiled once
            self._small_data = CountMatrix.from_entries(self._rows[small], self._cols[small],
                                                        self._x[small], problem.shape)
            self._log_o_small = np.log(np.asarray(problem.offsets_nz, float)[small])
            self._small_x = self._x[small]
            self._small_log_fact = gammaln(self._small_x + 1.0)

    def _rung(self, beta):
        """The rung's arrays, computed afresh.

        O(nonzeros), against the sweep's O(nonzeros K); nothing is kept per rung, so memory
        stays that of one rung at any ladder size.
        """
        e = self.problem.expo
        if e.kind == "separable":
            expo = dataclasses.replace(e, row_offset=beta * e.row_offset)
        else:
            expo = dataclasses.replace(e, offsets=beta * e.offsets)
        scaled = beta * self._x
        n = np.floor(scaled)
        f = np.clip(scaled - n, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            return _Rung(expo, n, np.log(f), np.log1p(-f), beta * self.problem.offsets_nz,
                         gammaln(n + 1.0))

    def _log_up_ratio(self, state, rung):
        """``(mu, log P(n + 1) / P(n))`` at every nonzero of the data (``mu = beta o A W``)."""
        mu = nonzero_means(self.problem.data, state["A"], state["W"], rung.offsets_nz)
        with np.errstate(divide="ignore"):
            if self._poisson:
                return mu, np.log(mu) - np.log1p(rung.n)
            alpha = float(state["alpha"])
            return mu, (np.log(rung.n + alpha * mu) - np.log1p(rung.n) - math.log1p(alpha))

    def sweep(self, state, beta, rng):
        """One exact sweep of ``pi_beta`` (in place).

        The rounding bits given ``A, W``, then ``inner_sweeps`` Gibbs sweeps with the group
        moves.
        """
        beta = float(beta)
        p = self.problem
        if beta == 1.0:
            scaled = p
        else:
            rung = self._rung(beta)
            _, log_ratio = self._log_up_ratio(state, rung)
            with np.errstate(invalid="ignore", over="ignore"):
                logit = rung.log_f + log_ratio - rung.log_1mf  # -inf where f = 0
                up = rng.random(rung.n.size) * (1.0 + np.exp(-logit)) < 1.0
            m = rung.n + up
            keep = m > 0
            if self._small is not None:
                keep &= ~self._small
            data = CountMatrix.from_entries(self._rows[keep], self._cols[keep], m[keep],
                                            p.shape)
            scaled = dataclasses.replace(p, data=data, expo=rung.expo,
                                         offsets_nz=rung.offsets_nz[keep])
            if self._small is not None:
                for _ in range(self.inner_sweeps):
                    self._hybrid_sweep(scaled, beta, state, rng)
                return
        if self._poisson:
            state.update(gibbs_sweeps(scaled, state, rng, self.inner_sweeps))
            return
        for _ in range(self.inner_sweeps):
            state.update(group_moves(p, gibbs_sweep(scaled, state, rng), rng))

    def _hybrid_sweep(self, scaled, beta, state, rng):
        """One Poisson sweep with the small counts on the split path (in place).

        The rounded cells (``scaled``, at exposures ``beta o``) split in proportion to
        ``A_dk W_kn``, the counts up to ``split_max`` in proportion to ``(A_dk W_kn)^beta``;
        the latter's latent counts enter the Gamma shapes weighted by ``beta``, the exposures
        of every cell by ``beta``. Then the rate variables and the rescaling move (which keeps
        every ``A_dk W_kn``); no shear move, which would change the split path's term.
        """
        p = self.problem
        A, W = state["A"], state["W"]
        bA, bW = prior_rates(p, state["rates"])
        ZA, ZW = split_counts(scaled.data, A, W, rng)
        ZA1, ZW1 = split_counts(self._small_data, A ** beta, W ** beta, rng)
        A = gamma_update(rng, p.aA, bA, ZA + beta * ZA1, exposures(scaled.expo, W))
        W = gamma_update(rng, p.aW, bW, ZW + beta * ZW1,
                         exposures(scaled.expo, A.T, transpose=True).T)
        rates = dict(state["rates"])
        for name, (shape, rate) in rate_conditionals(p, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        state.update(A=A, W=W, rates=rates)
        state.update(group_moves(p, state, rng, shear=False))

    def _small_term(self, state, beta):
        """``sum x log sum_k (o A_dk W_kn)^beta - log x!`` over the split path's cells."""
        r, c = self._rows[self._small], self._cols[self._small]
        with np.errstate(divide="ignore"):
            logm = np.log(state["A"][r]) + np.log(state["W"][:, c].T)
        lse = logsumexp(beta * (logm + self._log_o_small[:, None]), axis=1)
        return float(np.sum(self._small_x * lse - self._small_log_fact))

    def log_target(self, state, beta):
        """``log prod_dn L_beta(X_dn)`` at ``state`` (the priors cancel in swaps).

        O(nonzeros K); at ``beta = 1`` the model's log-likelihood.
        """
        beta = float(beta)
        if beta == 1.0:
            return self.loglik(state)
        rung = self._rung(beta)
        mu, log_ratio = self._log_up_ratio(state, rung)
        total = float(np.sum(state["A"] * exposures(rung.expo, state["W"])))  # sum beta o M
        n = rung.n
        if self._poisson:
            base = xlogy(n, mu) - rung.log_n_fact
            rest = -total
        else:
            alpha = float(state["alpha"])
            r = alpha * mu
            base = gammaln(n + r) - gammaln(r) - rung.log_n_fact - n * math.log1p(alpha)
            rest = alpha * math.log(alpha / (1.0 + alpha)) * total
        mix = np.logaddexp(rung.log_1mf, rung.log_f + log_ratio)
        if self._small is None:
            return float(np.sum(base + mix) + rest)
        rounded = float(np.sum((base + mix)[~self._small]))
        return rounded + self._small_term(state, beta) + rest

    def loglik(self, state):
        """The model's log-likelihood of the data at ``state`` (the cold chain's stat)."""
        return log_likelihood(self.problem, state)

    def copy(self, state):
        """An independent copy."""
        out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
        out["rates"] = {n: v.copy() for n, v in state["rates"].items()}
        return out
