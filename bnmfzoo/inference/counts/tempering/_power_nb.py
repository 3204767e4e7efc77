"""A tempered path of negative-binomial NMF with exact latent-count sweeps (the Gamma-mixed power).

The model (:func:`bnmfzoo.models.negative_binomial`) is ``X_dn ~ NB(r_dn, p)`` with shape
``r_dn = alpha o_dn (A W)_dn`` and ``p = alpha / (1 + alpha)``: a Poisson count whose mean
``lambda_dn ~ Gamma(r_dn, alpha)`` (shape, rate) is integrated out. Replica ``beta`` tempers
the Poisson factor only, with ``lambda`` integrated out as well:

``pi_beta(A, W, alpha) ∝ p(A, W, alpha) prod_dn f_beta(x_dn)``,

``f_beta(x) = int Gamma(lambda | r, alpha) Poisson(x | lambda)^beta d lambda
= Gamma(r + beta x) / Gamma(r) (alpha / (alpha + beta))^r (alpha + beta)^(-beta x) / x!^beta``.

``f_1`` is the negative binomial and ``f_0 = 1``, so the path runs from the prior to the
posterior and its normalizer at ``beta = 1`` is the evidence. It is not ``NB^beta`` (which no
augmentation is known to sample), but any path of computable densities with these ends serves
the SMC and the tempering alike (Gelman & Meng 1998); as ``alpha -> inf`` it tends to the
Poisson power posterior of :mod:`bnmfzoo.inference.counts.tempering._power`, and unlike the
rounding path of :mod:`bnmfzoo.inference.counts.tempering._rounding` it is smooth in ``beta``.

**The augmentation.** With ``beta x = n - delta``, ``n = ceil(beta x)``, ``0 <= delta < 1``:

* ``Gamma(r + n) / Gamma(r) = sum_l |s(n, l)| r^l``: Chinese-restaurant tables ``L ~ CRT(n,
  r)`` split ``Multinomial(L, p_k ∝ A_dk W_kn)`` (Zhou & Carin 2015, Theorem 1; the NB sweep's
  :func:`~bnmfzoo.inference.counts.sweep.split_crt` on the counts ``n``);
* ``Gamma(r + n - delta) / Gamma(r + n) = Gamma(delta)^-1 int_0^1 u^(r + n - delta - 1)
  (1 - u)^(delta - 1) du`` for ``delta > 0``: a latent ``u ~ Beta(r + n - delta, delta)`` per
  such nonzero, whose factor ``u^r = exp(-r t)``, ``t = -log u``, is linear in ``A`` in the
  exponent;
* ``(alpha / (alpha + beta))^r = exp(-r log(1 + beta / alpha))``.

So ``A_dk | L, t, W, alpha ~ Gamma(a + sum_n L_dnk, b + alpha sum_n o_dn W_kn (log(1 + beta /
alpha) + t_dn))`` (``t = 0`` off the fractional nonzeros), and ``W`` alike: the plain NB sweep
with the counts ``n`` and a per-cell rate; at ``beta = 1`` every ``delta`` is 0 and it is the
plain sweep. The dispersion is slice-sampled from ``p(alpha | A, W)`` under ``f_beta`` (the
latent variables integrated out; they are drawn afresh from their conditional at the next
sweep), then the rescaling and shear moves, which keep every ``A_dk W_kn`` and so every
``r_dn``. Cost O(nonzeros K) per sweep, as the NB sweep's.

References
----------
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
Gelman, A. & Meng, X.-L. (1998). Simulating normalizing constants: from importance sampling to
bridge sampling to path sampling. Statistical Science 13(2), 163-185.
"""

import dataclasses
import math

import numpy as np
from scipy.special import gammaln

from bnmfzoo.inference.counts._data import (
    CountMatrix,
    entry_exposure,
    exposures,
    nonzero_means,
    total_mean,
)
from bnmfzoo.inference.counts._problem import prior_rates
from bnmfzoo.inference.counts.gibbs._moves import group_moves
from bnmfzoo.inference.counts.sweep import draw_rates, gamma_update, slice_log_alpha, split_crt
from bnmfzoo.inference.counts.tempering._rounding import CountPath

__all__ = ["PowerNB", "nb_power_loglik"]


@dataclasses.dataclass(frozen=True)
class _Rung:
    """The rung's counts ``n = ceil(beta x)`` (same CSR pattern) and ``delta = n - beta x``."""

    beta: float
    data: CountMatrix
    delta: np.ndarray
    frac: np.ndarray  # the nonzeros with delta > 0


def nb_power_loglik(x, lfact, r_nz, total_r, alpha, beta):
    """``sum_dn log f_beta(x_dn)`` (module docstring) from the shapes ``r`` at the nonzeros.

    ``lfact``: ``log x!`` at the nonzeros; ``total_r``: ``sum r`` over every observed cell
    (zeros contribute ``r log(alpha / (alpha + beta))`` only). At ``beta = 1`` the NB
    log-likelihood.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import gammaln
    >>> from scipy.stats import nbinom
    >>> x, r = np.array([2.0, 5.0]), np.array([0.7, 3.0])
    >>> ours = nb_power_loglik(x, gammaln(x + 1), r, r.sum() + 0.4, 1.5, 1.0)
    >>> ref = nbinom.logpmf(x, r, 1.5 / 2.5).sum() + nbinom.logpmf(0, 0.4, 1.5 / 2.5)
    >>> bool(np.isclose(ours, ref))
    True
    """
    bx = beta * x
    return float(np.sum(gammaln(r_nz + bx) - gammaln(r_nz) - bx * math.log(alpha + beta)
                        - beta * lfact) + total_r * math.log(alpha / (alpha + beta)))


class PowerNB(CountPath):
    """Tempered sweeps of an NB model along ``p0 f_beta``: ``sweep``, ``log_target``, ``loglik``.

    ``state`` is a dict with ``A``, ``W``, ``rates`` and ``alpha``. See the module docstring.

    Parameters
    ----------
    problem : CountProblem
        A negative-binomial problem.
    inner_sweeps : int
        Sweeps (each with the group moves) per tempered sweep.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import negative_binomial, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts.sweep import initial_state
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> fam = PowerNB(problem_from_factorization(recognize(negative_binomial(X, 2))))
    >>> rng = np.random.default_rng(1)
    >>> s = initial_state(fam.problem, rng)
    >>> fam.sweep(s, 0.5, rng)
    >>> bool(np.isclose(fam.log_target(s, 1.0), fam.loglik(s))), fam.log_target(s, 0.0)
    (True, 0.0)
    """

    def __init__(self, problem, inner_sweeps=1):
        if problem.family != "negative_binomial":
            raise ValueError("PowerNB tempers negative-binomial models (NB with shape alpha o "
                             f"(A W)), got {problem.family!r}")
        super().__init__(problem, inner_sweeps)
        data = problem.data
        self._x = np.asarray(data.counts, float)
        self._lfact = gammaln(self._x + 1.0)
        self._rows = data.rows().astype(np.int32)
        self._cols = np.asarray(data.cols, np.int32)
        self._last = None

    def _rung(self, beta):
        last = self._last
        if last is not None and last.beta == beta:
            return last
        data = self.problem.data
        n = np.ceil(beta * self._x)
        delta = n - beta * self._x
        rung = _Rung(beta, dataclasses.replace(data, counts=n.astype(np.int32)), delta,
                     np.flatnonzero(delta > 1e-12))
        self._last = rung
        return rung

    def _shapes(self, state):
        """``(r at the nonzeros, sum of r over the observed cells)``."""
        p, alpha = self.problem, float(state["alpha"])
        mu = nonzero_means(p.data, state["A"], state["W"], p.offsets_nz)
        return alpha * mu, alpha * total_mean(p.expo, state["A"], state["W"])

    def log_target(self, state, beta):
        """``sum_dn log f_beta(x_dn)`` at ``state`` (the priors cancel); 0 at ``beta = 0``."""
        beta = float(beta)
        if beta == 0.0:
            return 0.0
        r, tot = self._shapes(state)
        return nb_power_loglik(self._x, self._lfact, r, tot, float(state["alpha"]), beta)

    def log_target_batch(self, states):
        """``beta -> [log_target(s, beta) for s in states]`` while the states are unchanged.

        The shapes and ``log Gamma(r)`` are computed once per state; a trial ``beta`` then
        costs one ``log Gamma`` per nonzero and state.
        """
        shapes = [self._shapes(s) for s in states]
        r = np.stack([z[0] for z in shapes])
        tot = np.array([z[1] for z in shapes])
        alpha = np.array([float(s["alpha"]) for s in states])
        lg_r = gammaln(r)
        x, lfact = self._x, self._lfact

        def at(beta):
            beta = float(beta)
            if beta == 0.0:
                return np.zeros(len(states))
            bx = beta * x
            nz = gammaln(r + bx) - lg_r - bx * np.log(alpha + beta)[:, None] - beta * lfact
            return nz.sum(axis=1) + tot * np.log(alpha / (alpha + beta))

        return at

    def sweep(self, state, beta, rng):
        """``inner_sweeps`` exact sweeps of ``pi_beta`` with the group moves (in place)."""
        beta = float(beta)
        if not 0.0 < beta <= 1.0:
            raise ValueError(f"beta must be in (0, 1], got {beta!r}")
        self.sweep_with(self.problem, state, beta, rng)

    def sweep_with(self, p, state, beta, rng):
        """:meth:`sweep` with the priors of the problem ``p`` (the same data).

        Per-entry shapes and rates and a Gamma ``alpha_prior`` are allowed: a reference path's
        ``q^(1 - b) p0^b``.
        """
        rung = self._rung(float(beta))
        for _ in range(self.inner_sweeps):
            state.update(group_moves(p, self._gibbs(p, state, rung, rng), rng))

    def _gibbs(self, p, state, rung, rng):
        A, W, alpha, beta = state["A"], state["W"], float(state["alpha"]), rung.beta
        o = p.offsets_nz
        frac = rung.frac
        if frac.size:
            r = alpha * nonzero_means(p.data, A, W, o)[frac]
            if not np.all(np.isfinite(r)) or np.any(r <= 0.0):
                raise FloatingPointError("a nonzero count has a zero or non-finite NB shape")
            g1 = rng.gamma(r + rung.data.counts[frac] - rung.delta[frac])
            g2 = rng.gamma(rung.delta[frac])
            t = np.log1p(g2 / g1)  # -log u, u ~ Beta(r + n - delta, delta)
        LA, LW = split_crt(rung.data, A, W, alpha * o, rng)
        c = alpha * math.log1p(beta / alpha)  # the rate of A W per unit offset

        def rate(F, rows, cols, base):  # base + alpha sum over frac nonzeros of t o F
            if not frac.size:
                return c * base
            out = np.empty_like(base)
            entry_exposure(rows, cols, alpha * t * o[frac], np.ascontiguousarray(F, float), out)
            return c * base + out

        bA, bW = prior_rates(p, state["rates"])
        A = gamma_update(rng, p.aA, bA, LA, rate(W, self._rows[frac], self._cols[frac],
                                                 exposures(p.expo, W)))
        EW = exposures(p.expo, A.T, transpose=True)
        W = gamma_update(rng, p.aW, bW, LW,
                         rate(np.asarray(A).T, self._cols[frac], self._rows[frac], EW).T)
        rates = draw_rates(p, A, W, state["rates"], rng) if p.rates else dict(state["rates"])
        alpha = self.alpha_step(p, A, W, alpha, beta, rng)
        return {"A": A, "W": W, "rates": rates, "alpha": alpha}

    def alpha_step(self, p, A, W, alpha, beta, rng):
        """The dispersion slice-sampled from ``p.alpha_prior(alpha) prod f_beta`` at ``A, W``.

        The latent variables integrated out, so this is an exact move of ``pi_beta`` given the
        factors on its own too (the copula path's move, :mod:`bnmfzoo.inference.counts.
        tempering._reference_nb`). ``alpha`` unchanged without a learned dispersion.
        """
        if p.alpha_prior is None:
            return alpha
        a0, b0 = p.alpha_prior
        mu = nonzero_means(p.data, A, W, p.offsets_nz)
        tot = total_mean(p.expo, A, W)
        x, lfact = self._x, self._lfact

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + nb_power_loglik(
                x, lfact, a * mu, a * tot, a, beta)

        return slice_log_alpha(float(alpha), logpost, rng)
