"""One Gibbs sweep of a :class:`~bnmfzoo.inference.counts._problem.CountProblem` (no PyMC).

Order: split the counts given ``A, W`` (Poisson: multinomial; NB: Dirichlet-multinomial and
CRT tables), ``A | Z, W, rates``, ``W | Z, A, rates``, the Gamma rate variables given
``A, W``, and (NB with a learned dispersion) ``alpha | A, W`` by slice sampling. Each is an
exact conditional, so the sweep leaves the posterior invariant.
"""

import math

import numpy as np

from bnmfzoo.inference.counts._core import (
    exposures,
    gamma_update,
    poisson_loglik,
    split_counts,
)
from bnmfzoo.inference.counts._nb2 import cell_means, nb2_loglik, nb2_sweep
from bnmfzoo.inference.counts._nb_core import (
    nb_loglik,
    nb_rate_factor,
    nonzero_means,
    slice_log_alpha,
    split_crt,
    total_mean,
)
from bnmfzoo.inference.counts._problem import prior_rates, rate_conditionals

__all__ = ["gibbs_sweep", "impute_counts", "initial_state", "log_likelihood"]


def initial_state(problem, rng):
    """A start: rates at their prior means, factors drawn from their priors given them."""
    rates = {n: a / b for n, (a, b, _) in problem.rates.items()}
    rates = {n: np.asarray(v, float).reshape(problem.rates[n][2]) for n, v in rates.items()}
    bA, bW = prior_rates(problem, rates)
    A = np.maximum(rng.gamma(problem.aA, 1.0 / bA), 1e-3 * problem.aA / bA)
    W = np.maximum(rng.gamma(problem.aW, 1.0 / bW), 1e-3 * problem.aW / bW)
    alpha = problem.alpha
    if problem.alpha_prior is not None:
        alpha = problem.alpha_prior[0] / problem.alpha_prior[1]
    return {"A": A, "W": W, "rates": rates, "alpha": alpha}


def impute_counts(imputed, family, state, rng):
    """Exact draw of PyMC's imputed (NaN) counts given ``A``, ``W`` and the NB dispersion.

    ``imputed`` (:class:`bnmfzoo.models.Imputed`) lists the cells and their offsets ``o``;
    the draw is ``Poisson(o * (A @ W)[cells])`` or, for the negative binomial,
    ``NB(n = alpha o (A @ W)[cells], p = alpha / (1 + alpha))`` (NB2: ``n = alpha``,
    ``p = alpha / (alpha + o (A @ W)[cells])``). The sweeps see only the
    observed cells, so drawing these from their conditional right after them is exact Gibbs
    for the joint posterior of factors and missing counts.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> imp = SimpleNamespace(rows=np.array([0]), cols=np.array([1]), offsets=np.array([2.0]))
    >>> state = {"A": np.ones((2, 1)), "W": np.full((1, 2), 3.0), "alpha": None}
    >>> x = [impute_counts(imp, "poisson", state, np.random.default_rng(i))[0] for i in range(400)]
    >>> bool(abs(np.mean(x) - 6.0) < 0.6)   # mean 6, sd of the mean 0.12
    True
    """
    mu = cell_means(state["A"], state["W"], imputed.rows, imputed.cols, imputed.offsets)
    if not np.all(np.isfinite(mu)) or np.any(mu < 0):
        raise FloatingPointError("the means of the imputed counts are not finite and >= 0")
    if family == "poisson":
        return rng.poisson(mu)
    alpha = float(state["alpha"])
    if family == "nb2":
        return rng.negative_binomial(alpha, alpha / (alpha + mu))
    return rng.negative_binomial(np.maximum(alpha * mu, 1e-300), alpha / (1.0 + alpha))


def log_likelihood(problem, state):
    """Log-likelihood of the observed cells at ``state`` (Poisson, NB or NB2)."""
    A, W = state["A"], state["W"]
    if problem.family == "nb2":
        return nb2_loglik(problem, state)
    if problem.family == "poisson":
        return poisson_loglik(problem.data, problem.expo, A, W, problem.offsets_nz)
    mu_nz = nonzero_means(problem.data, A, W, problem.offsets_nz)
    return nb_loglik(float(state["alpha"]), problem.data, mu_nz, total_mean(problem.expo, A, W))


def gibbs_sweep(problem, state, rng, *, update=("A", "W", "rates", "alpha")):
    """One sweep; returns the new state (a new dict). NB2 models: ``_nb2.nb2_sweep``.

    Parameters
    ----------
    problem : CountProblem
    state : dict
        ``"A"`` (D x K), ``"W"`` (K x N), ``"rates"`` (name -> array), ``"alpha"``.
    rng : numpy.random.Generator
    update : tuple of str
        Which blocks to update (others are kept: another step method samples them).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> X = np.random.default_rng(0).poisson(2.0, size=(5, 4))
    >>> prob = problem_from_factorization(recognize(poisson(X, 2, ard=True)))
    >>> rng = np.random.default_rng(1)
    >>> s = gibbs_sweep(prob, initial_state(prob, rng), rng)
    >>> s["A"].shape, s["rates"]["lambda_"].shape
    ((5, 2), (2,))
    """
    if problem.family == "nb2":
        return nb2_sweep(problem, state, rng, update=update)
    A, W = state["A"], state["W"]
    rates = dict(state["rates"])
    alpha = state.get("alpha")
    bA, bW = prior_rates(problem, rates)
    data, expo = problem.data, problem.expo
    if problem.family == "poisson":
        ZA, ZW = split_counts(data, A, W, rng)
        scale = 1.0
    else:
        ZA, ZW = split_crt(data, A, W, alpha * problem.offsets_nz, rng)
        scale = nb_rate_factor(alpha)
    if "A" in update:
        A = gamma_update(rng, problem.aA, bA, ZA, scale * exposures(expo, W))
    if "W" in update:
        W = gamma_update(rng, problem.aW, bW, ZW,
                         scale * exposures(expo, A.T, transpose=True).T)
    if "rates" in update and problem.rates:
        for name, (shape, rate) in rate_conditionals(problem, A, W).items():
            rates[name] = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
    if "alpha" in update and problem.alpha_prior is not None:
        a0, b0 = problem.alpha_prior
        mu_nz = nonzero_means(data, A, W, problem.offsets_nz)
        tot = total_mean(expo, A, W)

        def logpost(a):
            return (a0 - 1.0) * math.log(a) - b0 * a + nb_loglik(a, data, mu_nz, tot)

        alpha = slice_log_alpha(float(alpha), logpost, rng)
    return {"A": A, "W": W, "rates": rates, "alpha": alpha}
