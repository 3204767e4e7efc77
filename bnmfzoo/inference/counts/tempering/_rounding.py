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
log-likelihood, as for the power posterior ``p(A, W) p(X | A, W)^beta``. Latent-count Gibbs
samples the Poisson power posterior exactly with one more latent variable per nonzero
(:mod:`bnmfzoo.inference.counts.tempering._power`, used for Poisson models); no such augmentation of
``NB(x | alpha mu, p)^beta`` is known, so the negative binomial's replica exchange tempers along
this path.

**Exact sweeps.** The rounding bit ``c_dn`` (``m = n + c``) is a latent variable of the replica:
a sweep draws ``c_dn | A, W`` (Bernoulli, ``P(c = 1) ∝ f P(n + 1) / ((1 - f) P(n) + f P(n +
1))``; ``P(n + 1) / P(n) = mu / (n + 1)`` for the Poisson mean ``mu``, ``(n + r) / ((n + 1) (1 +
alpha))`` for the NB shape ``r``), then one ordinary Gibbs sweep of the model on the counts
``m`` at offsets ``beta o`` (multinomial split and Gamma draws, Cemgil 2009; for the NB the
Dirichlet-multinomial split, CRT tables and the dispersion's slice update, Zhou & Carin 2015),
and the rescaling and shear moves (:mod:`bnmfzoo.inference.counts.gibbs._moves`, exact for any
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
:class:`~bnmfzoo.inference.counts.tempering.replica_exchange.ReplicaExchangePoisson`. A second
chain of the same run made 1 round trip: round trips vary much between chains.

**Poisson models temper along the power posterior instead**
(:mod:`bnmfzoo.inference.counts.tempering._power`, the default of
:class:`~bnmfzoo.inference.counts.tempering.replica_exchange.ReplicaExchangePoisson`): for ``x =
1`` this path's swap statistic has ``beta``-derivative ``2 - mu - 1 / mu`` at ``beta = 1``
(below ``beta = 1`` each count of 1 is dropped with probability ``1 - beta``, and a dropped
one's ``mu`` falls far when a word seen once has no other evidence), so on text its swap
statistic has heavy tails. On the Reuters word counts (395 x 4,258, 60,114 nonzeros, 79 % of
them 1s; K = 5) the ladder of this path reached its 296-rung maximum while tuning and pairs
0.001 apart near ``beta = 1`` still swapped at 0.000; so did a split path for small counts (each
kept and split in proportion to ``(A_dk W_kn)^beta``: at most 0.003 at a spacing of 0.01), where
the power posterior swaps at 0.34-0.41 (``docs/results/counts_core.md``). The negative binomial
has no exact sweep of its power posterior; its replica exchange keeps this path, while its SMC
and reference-path estimators temper the Poisson-Gamma mixture
(:mod:`bnmfzoo.inference.counts.tempering._power_nb`: on breast SBS96 at K = 4 the SMC from the
prior took 350 steps instead of 465, and its runs' log Z spread 12 nats instead of 21).

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
from scipy.special import gammaln, xlogy

from bnmfzoo.inference.counts._data import CountMatrix, exposures, nonzero_means, scaled_exposure
from bnmfzoo.inference.counts._problem import log_likelihood
from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
from bnmfzoo.inference.counts.gibbs._moves import group_moves
from bnmfzoo.inference.counts.sweep import sweep

__all__ = ["TemperedCounts", "CountPath", "check_inner_sweeps", "copy_state"]


def check_inner_sweeps(inner_sweeps):
    """``inner_sweeps`` as an int, or a ValueError unless it is a positive integer."""
    if isinstance(inner_sweeps, bool) or not isinstance(inner_sweeps, (int, np.integer)) \
            or inner_sweeps < 1:
        raise ValueError(f"inner_sweeps must be a positive integer, got {inner_sweeps!r}")
    return int(inner_sweeps)


def copy_state(state):
    """An independent copy of a count-family state (``A``, ``W``, ``rates``, ``alpha``)."""
    out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
    out["rates"] = {n: v.copy() for n, v in state["rates"].items()}
    return out


@dataclasses.dataclass(frozen=True)
class _Rung:
    """What a ladder rung needs at the nonzeros (and its scaled exposures)."""

    expo: object
    n: np.ndarray
    log_f: np.ndarray
    log_1mf: np.ndarray
    offsets_nz: np.ndarray
    log_n_fact: np.ndarray


class CountPath:
    """What both count paths share: every member of the tempered-sweep protocol but ``sweep``.

    ``problem``, ``inner_sweeps``, ``dimension``, ``loglik`` and ``copy`` of
    :class:`bnmfzoo.inference.tempering.TemperedSweep`.
    """

    def __init__(self, problem, inner_sweeps=1):
        self.inner_sweeps = check_inner_sweeps(inner_sweeps)
        self.problem = problem
        D, N = problem.shape
        self.dimension = (D + N) * problem.rank + (problem.alpha_prior is not None)

    def loglik(self, state):
        """The model's log-likelihood of the data at ``state`` (the term multiplied by beta)."""
        return log_likelihood(self.problem, state)

    def copy(self, state):
        """An independent copy."""
        return copy_state(state)


class TemperedCounts(CountPath):
    """Tempered sweeps of Poisson and NB models: ``sweep``, ``log_target``, ``loglik``, ``copy``.

    ``state`` is a dict with ``A``, ``W``, ``rates`` and ``alpha`` (``None`` for Poisson).

    Parameters
    ----------
    problem : CountProblem
    inner_sweeps : int
        Gibbs sweeps (each with the group moves) given one draw of the rounding bits: the
        bits cost a fixed ~1 ms of Python per draw on small data, a compiled Poisson sweep
        ~0.5 ms on the breast catalogues.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts.sweep import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = TemperedCounts(problem_from_factorization(recognize(poisson(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.isclose(fam.log_target(s, 1.0), fam.loglik(s)))
    True
    >>> from bnmfzoo.inference.tempering import TemperedPath
    >>> isinstance(fam, TemperedPath)
    True
    """

    def __init__(self, problem, inner_sweeps=1):
        super().__init__(problem, inner_sweeps)
        self._poisson = problem.family == "poisson"
        data = problem.data
        self._rows = data.rows()
        self._cols = np.asarray(data.cols, np.int64)
        self._x = np.asarray(data.counts, float)
        self._last_rung = None

    def _rung(self, beta):
        """The rung's arrays: the last ``beta``'s kept, any other computed afresh.

        O(nonzeros), against the sweep's O(nonzeros K); one rung is kept, so memory stays that
        of one rung at any ladder size. The SMC sweeps every particle at one ``beta`` and a
        ladder sweeps rung by rung, so the kept one is the one asked for most of the time.
        """
        last = self._last_rung
        if last is not None and last[0] == beta:
            return last[1]
        rung = self._new_rung(beta)
        self._last_rung = (beta, rung)
        return rung

    def _new_rung(self, beta):
        expo = scaled_exposure(self.problem.expo, beta)
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
            data = CountMatrix.from_entries(self._rows[keep], self._cols[keep], m[keep],
                                            p.shape)
            scaled = dataclasses.replace(p, data=data, expo=rung.expo,
                                         offsets_nz=rung.offsets_nz[keep])
        if self._poisson:
            state.update(gibbs_sweeps(scaled, state, rng, self.inner_sweeps))
            return
        for _ in range(self.inner_sweeps):
            state.update(group_moves(p, sweep(scaled, state, rng), rng))

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
        return float(np.sum(base + mix) + rest)

    def log_target_batch(self, states):
        """``beta -> [log_target(s, beta) for s in states]``, valid while the states are unchanged.

        The same value as :meth:`log_target` (to rounding), for the SMC's choice of the next
        ``beta``, which evaluates every particle at tens of trial ``beta`` per step: the means
        at the nonzeros ``beta o (A W)_dn`` and the total ``sum beta o M`` are linear in
        ``beta``, so they are computed once per state (O(nonzeros K)) and each trial costs
        O(nonzeros) per state, the rung's arrays once for all states.
        """
        p = self.problem
        mu1 = np.stack([nonzero_means(p.data, s["A"], s["W"], p.offsets_nz) for s in states])
        tot1 = np.array([float(np.sum(s["A"] * exposures(p.expo, s["W"]))) for s in states])
        alpha = None if self._poisson else np.array([float(s["alpha"]) for s in states])

        def at(beta):
            beta = float(beta)
            rung = self._rung(beta)
            mu, n = beta * mu1, rung.n
            with np.errstate(divide="ignore"):
                if self._poisson:
                    log_ratio = np.log(mu) - np.log1p(n)
                    base = xlogy(n, mu) - rung.log_n_fact
                    rest = -beta * tot1
                else:
                    a = alpha[:, None]
                    r = a * mu
                    log_ratio = np.log(n + r) - np.log1p(n) - np.log1p(a)
                    base = gammaln(n + r) - gammaln(r) - rung.log_n_fact - n * np.log1p(a)
                    rest = alpha * np.log(alpha / (1.0 + alpha)) * beta * tot1
            with np.errstate(invalid="ignore"):
                mix = np.logaddexp(rung.log_1mf, rung.log_f + log_ratio)
            return np.sum(base + mix, axis=1) + rest

        return at
