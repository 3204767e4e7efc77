"""Gibbs sweep of NB2 count NMF: PyMC's ``NegativeBinomial(mu=o * (A @ W), alpha=alpha)``.

NB2 (variance ``mu + mu^2 / alpha``; Cameron & Trivedi 1986) is a Poisson with one Gamma
multiplier per cell: ``x_dn | g_dn ~ Poisson(g_dn mu_dn)``, ``g_dn ~ Gamma(alpha, alpha)``
(shape, rate). Given the multipliers the model is Poisson NMF whose cell ``dn`` has exposure
``g_dn o_dn``, so Cemgil (2009)'s latent-count Gibbs applies unchanged. One sweep:

1. ``alpha | A, W`` (a learned dispersion): slice sampling of ``log alpha`` on the NB2
   likelihood with the multipliers integrated out;
2. ``g | alpha, A, W, x ~ Gamma(alpha + x_dn, alpha + mu_dn)``, every observed cell;
3. the counts split multinomially over the components (``g`` cancels), then
   ``A | Z, W, g`` and ``W | Z, A, g`` by conjugate Gamma draws (exposures ``sum g o W``);
4. the Gamma rate variables of ARD / hierarchical priors.

Steps 1-2 draw ``(alpha, g)`` from their joint conditional, so every step is an exact
conditional of the augmented posterior. The multipliers cost one draw per **observed cell**,
zeros included: O(D N K) per sweep, unlike the Poisson and ``n = alpha mu`` NB sweeps, which
cost O(nonzeros K).
"""

import math

import numpy as np
from scipy.special import gammaln

from bnmfzoo._terms._pairs import _product
from bnmfzoo.inference.counts._core import Exposure, exposures, gamma_update, split_counts
from bnmfzoo.inference.counts._nb_core import slice_log_alpha
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals

__all__ = ["cell_means", "nb2_cell_loglik", "nb2_loglik", "nb2_sweep"]


def nb2_cell_loglik(x, mu, alpha):
    """NB2 log-pmf of counts ``x`` with means ``mu`` and dispersion ``alpha`` (elementwise).

    Examples
    --------
    >>> from scipy.stats import nbinom
    >>> x, mu, a = np.array([0.0, 3.0]), np.array([1.5, 2.0]), 0.8
    >>> bool(np.allclose(nb2_cell_loglik(x, mu, a), nbinom.logpmf(x, a, a / (a + mu))))
    True
    """
    return (gammaln(x + alpha) - gammaln(alpha) - gammaln(x + 1.0)
            + alpha * np.log(alpha / (alpha + mu)) + x * np.log(mu / (alpha + mu)))


def cell_means(A, W, rows, cols, offsets):
    """``offsets * (A @ W)[rows, cols]`` without forming ``A @ W`` (the pair-product kernel)."""
    out = np.empty(rows.size)
    _product(np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(np.asarray(W).T,
                                                                          dtype=float),
             rows, cols, out)
    return out * offsets


def _cell_means(cells, A, W):
    rows, cols, offsets, _ = cells
    return cell_means(A, W, rows, cols, offsets)


def nb2_loglik(problem, state):
    """NB2 log-likelihood of the observed cells at ``state`` (``A``, ``W``, ``alpha``)."""
    cells = problem.cells
    mu = _cell_means(cells, state["A"], state["W"])
    return float(np.sum(nb2_cell_loglik(cells[3], mu, float(state["alpha"]))))


def nb2_sweep(problem, state, rng, *, update=("A", "W", "rates", "alpha")):
    """One sweep (module docstring); returns the new state (a new dict).

    Examples
    --------
    >>> import pymc as pm
    >>> from bnmfzoo.models import recognize
    >>> from bnmfzoo.inference.counts._gibbs import initial_state
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> with pm.Model() as model:
    ...     A = pm.Gamma("A", 1.0, 1.0, shape=(5, 2))
    ...     W = pm.Gamma("W", 1.0, 1.0, shape=(2, 4))
    ...     alpha = pm.Gamma("alpha", 2.0, 1.0)
    ...     _ = pm.NegativeBinomial("X", mu=A @ W, alpha=alpha, observed=X)
    >>> prob = problem_from_factorization(recognize(model))
    >>> rng = np.random.default_rng(1)
    >>> s = nb2_sweep(prob, initial_state(prob, rng), rng)
    >>> prob.family, s["A"].shape, s["alpha"] > 0
    ('nb2', (5, 2), True)
    """
    cells = problem.cells
    rows, cols, offsets, x = cells
    A, W = state["A"], state["W"]
    rates = dict(state["rates"])
    alpha = float(state["alpha"])
    mu = _cell_means(cells, A, W)
    if not np.all(np.isfinite(mu)):
        raise FloatingPointError("the NB2 means are not finite")
    if "alpha" in update and problem.alpha_prior is not None:
        a0, b0 = problem.alpha_prior

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + float(np.sum(nb2_cell_loglik(x, mu, a)))

        alpha = slice_log_alpha(alpha, logpost, rng)
    g = rng.gamma(alpha + x, 1.0 / (alpha + mu))
    D, N = problem.shape
    expo = Exposure("entries", np.ones(D), np.ones(N), rows, cols, offsets * g)
    bA, bW = prior_rates(problem, rates)
    ZA, ZW = split_counts(problem.data, A, W, rng)
    if "A" in update:
        A = gamma_update(rng, problem.aA, bA, ZA, exposures(expo, W))
    if "W" in update:
        W = gamma_update(rng, problem.aW, bW, ZW, exposures(expo, A.T, transpose=True).T)
    if "rates" in update and problem.rates:
        for name, (shape, rate) in rate_conditionals(problem, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
    return {"A": A, "W": W, "rates": rates, "alpha": alpha}
