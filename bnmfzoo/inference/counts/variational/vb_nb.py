"""``fit_vb_nb``: variational Bayes for negative-binomial (Gamma-Poisson) NMF.

Model (:func:`bnmfzoo.models.negative_binomial`): ``X_dn ~ NB(r_dn, p)``, ``r_dn = alpha o_dn
sum_k A_dk W_kn``, ``p = alpha / (1 + alpha)``. Through the augmentation of Zhou & Carin (2015)
(:mod:`bnmfzoo.inference.counts.sweep`) each count splits as ``X_dn = sum_k x_dnk`` with
``x_dnk ~ NB(r_dnk, p)`` and tables ``l_dnk ~ CRT(x_dnk, r_dnk)``; the augmented likelihood is

``p(x, l | A, W) = prod_dnk |s(x_dnk, l_dnk)| r_dnk^l_dnk exp(-q r_dnk) (1 - p)^x_dnk / x_dnk!``

with ``q = log(1 + 1 / alpha)`` (``|s|``: unsigned Stirling numbers of the first kind), a
Poisson-like term in ``(A, W)``. Mean field ``q(A) q(W) q(x, l) q(rates)``:

* the optimal ``q(x, l)`` of a nonzero cell is the same law with ``r_dnk`` replaced by
  ``R_dnk = alpha o_dn exp(E log A_dk + E log W_kn)``: a Dirichlet-multinomial split with
  CRT tables. Its normalizer is ``sum prod_k R_k^(x_k) / x_k! = S^(X) / X!`` (rising
  factorials, Vandermonde), ``S = sum_k R_k``, so the expected tables are closed form:
  ``E[l_dnk] = R_dnk (psi(X_dn + S_dn) - psi(S_dn))``;
* ``q(A_dk) = Gamma(a + sum_n E[l_dnk], b + alpha q sum_n o_dn E[W_kn])``, likewise ``W``;
* with ``q(x, l)`` at its optimum the bound is exact and closed form:

  ``B = NB-loglik(X; shapes alpha o sum_k L_A L_W, rate term alpha q sum_obs o E[A] E[W])
  + sum (E log p(A) - E log q(A)) + (same for W and the rates)``,

  i.e. the NB log-likelihood with geometric means ``L = exp E[log .]`` in the shapes and
  arithmetic means in the ``exp(-q r)`` term (:func:`nb_vb_bound`).

Zero cells have ``x = l = 0``: they enter only through ``sum_obs o E[A] E[W]`` (the exposures),
so an iteration costs O(nonzeros x K + (D + N) K), as the Poisson VB: no dense per-cell
variable is materialized. A learned dispersion ``alpha ~ Gamma(a0, b0)`` is a point estimate
(VB-EM): each iteration raises ``B + log p(alpha)`` in ``log alpha`` by up to three guarded
Newton steps (analytic derivatives, each O(nonzeros)), keeping the old value unless the
objective rises. The reported
``elbo`` is then a bound on ``log p(X | alpha) + log p(alpha)`` at the estimate, not on
``log p(X)``; with a fixed ``alpha`` it bounds ``log p(X)``. Every update is an exact
coordinate maximizer, so the objective never decreases (tested).

For comparing ranks, :func:`alpha_integrated_bound` turns the point estimate into a bound on
``log p(X)`` (a Gaussian ``q(log alpha)``), which :func:`select_rank_nb` maximizes over ranks.

References
----------
Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
Computational Intelligence and Neuroscience, 785152.
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
"""

import math
import time
import weakref

import numpy as np
from scipy.special import digamma, gammaln

from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.counts._data import exposures, nb_loglik, nonzero_means
from bnmfzoo.inference.counts._problem import counts_spec
from bnmfzoo.inference.counts.sweep import nb_rate_factor
from bnmfzoo.inference.counts.variational._vb_core import (
    factor_updates,
    kl_terms,
    vb_init,
)
from bnmfzoo.inference.kernels.countvb import alpha_sums as _alpha_sums
from bnmfzoo.inference.kernels.countvb import lgamma_ratio_sum as _lgamma_ratio_sum
from bnmfzoo.inference.kernels.countvb import nb_tables as _tables_kernel
from bnmfzoo.inference.kernels.countvb import trigamma_series as _trigamma  # noqa: F401

__all__ = ["fit_vb_nb", "nb_vb_bound", "nb_vb_iteration", "expected_tables",
           "alpha_integrated_bound", "select_rank_nb"]


def _geometric(alpha, beta):
    return np.exp(digamma(alpha) - np.log(beta))


def expected_tables(problem, LA, LW, M, alpha):
    """``(SA (D, K), SW (K, N))``: sums of ``E[l_dnk]`` under the optimal ``q(x, l)``.

    ``M`` is ``o_dn sum_k LA_dk LW_kn`` per nonzero (CSR order), so ``S = alpha M`` and
    ``E[l_dnk] = alpha o_dn LA_dk LW_kn (psi(X + S) - psi(S))``.
    """
    if not np.all(np.isfinite(M)) or np.any(M <= 0.0):
        raise FloatingPointError("VB (NB): a nonzero count has a zero or non-finite mean")
    data = problem.data
    D, N = data.shape
    K = LA.shape[1]
    SA = np.empty((D, K))
    SWt = np.empty((N, K))
    _tables_kernel(data.indptr, data.cols, data.counts, np.ascontiguousarray(M, float),
                   np.ascontiguousarray(problem.offsets_nz, float), float(alpha),
                   np.ascontiguousarray(LA, float), np.ascontiguousarray(LW.T, float), SA, SWt)
    return SA, np.ascontiguousarray(SWt.T)


_LOG_FACTORIALS = weakref.WeakKeyDictionary()


def _objective(problem, a, M, total):
    """``B + log p(alpha)`` without the KL terms: ``nb_loglik`` + prior, fast path."""
    data = problem.data
    lf = _LOG_FACTORIALS.get(data)
    if lf is None:
        lf = _LOG_FACTORIALS[data] = float(gammaln(data.counts + 1.0).sum())
    x_sum = float(data.counts.sum())
    return (_lgamma_ratio_sum(data.counts, M, float(a)) - lf - x_sum * math.log1p(a)
            - a * math.log1p(1.0 / a) * total + _log_alpha_prior(problem, a))


def _log_alpha_prior(problem, alpha):
    if problem.alpha_prior is None:
        return 0.0
    a0, b0 = problem.alpha_prior
    return a0 * math.log(b0) - math.lgamma(a0) + (a0 - 1.0) * math.log(alpha) - b0 * alpha


def _total(problem, state):
    return float(np.sum(state.EA() * exposures(problem.expo, state.EW())))


def nb_vb_bound(problem, state, alpha, M=None):
    """The bound ``B`` (plus ``log p(alpha)`` when ``alpha`` is learned) at ``state``.

    ``M``: ``o sum_k L_A L_W`` per nonzero (computed when not given).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import negative_binomial, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> from bnmfzoo.inference.counts.variational._vb_core import vb_init
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> prob = problem_from_factorization(recognize(negative_binomial(X, 2, alpha=2.0)))
    >>> bool(np.isfinite(nb_vb_bound(prob, vb_init(prob, np.random.default_rng(1)), 2.0)))
    True
    """
    if M is None:
        M = nonzero_means(problem.data, _geometric(state.aA, state.bA),
                          _geometric(state.aW, state.bW), problem.offsets_nz)
    return (nb_loglik(alpha, problem.data, M, _total(problem, state))
            + _log_alpha_prior(problem, alpha) + kl_terms(problem, state))


def _alpha_derivatives(problem, a, M, total):
    """First and second derivatives of ``B + log p(alpha)`` in ``u = log alpha``."""
    x_sum = float(problem.data.counts.sum())
    g, h = _alpha_sums(problem.data.counts, np.ascontiguousarray(M, float), float(a))
    fa = g - x_sum / (1.0 + a) + total * (math.log(a / (1.0 + a)) + 1.0 / (1.0 + a))
    faa = h + x_sum / (1.0 + a) ** 2 + total * (1.0 / a - 1.0 / (1.0 + a) - 1.0 / (1.0 + a) ** 2)
    if problem.alpha_prior is not None:
        a0, b0 = problem.alpha_prior
        fa += (a0 - 1.0) / a - b0
        faa -= (a0 - 1.0) / a ** 2
    return a * fa, a * fa + a * a * faa


def _update_alpha(problem, alpha, M, total, newton_steps=3):
    """Raise ``B + log p(alpha)`` in ``u = log alpha``: guarded Newton steps.

    Returns ``(alpha, objective without the KL terms at alpha)``.

    A step is ``-f'/f''`` when ``f'' < 0`` (else ``0.5 sign f'``), at most 1 in ``u``, halved
    until the objective rises (at most 30 halvings; otherwise ``alpha`` is kept); a Newton
    step whose predicted gain ``f'^2 / (2 |f''|)`` is below ``1e-14 (1 + |f|)``, the
    objective's rounding, is taken as is, so rounding never decides it. Each
    evaluation is O(nonzeros).
    """

    def f(a):
        return _objective(problem, a, M, total)

    fu0 = f(alpha)
    for _ in range(newton_steps):
        g, h = _alpha_derivatives(problem, alpha, M, total)
        if not (np.isfinite(g) and np.isfinite(h)) or abs(g) <= 1e-10 * (1.0 + abs(fu0)):
            break
        step = -g / h if h < 0.0 else 0.5 * math.copysign(1.0, g)
        step = max(-1.0, min(1.0, step))
        # a Newton step whose predicted gain is below the objective's round-off is taken
        # as is: the comparison below would decide it by rounding alone
        tiny = h < 0.0 and g * g <= -2e-14 * h * (1.0 + abs(fu0))
        for _ in range(30):
            cand = alpha * math.exp(step)
            fc = f(cand)
            if np.isfinite(fc) and (fc > fu0 or tiny):
                alpha, fu0 = cand, fc
                break
            step *= 0.5
        else:
            break
    return alpha, fu0


def nb_vb_iteration(problem, state, alpha):
    """One round of coordinate ascent: ``(new state, new alpha, bound before the updates)``.

    Order: ``alpha`` (when learned; the bound is evaluated after it), ``q(x, l)`` (closed
    form, through the expected tables), ``q(A)``, ``q(W)``, the rate variables.
    """
    LA, LW = _geometric(state.aA, state.bA), _geometric(state.aW, state.bW)
    M = nonzero_means(problem.data, LA, LW, problem.offsets_nz)
    total = _total(problem, state)
    if problem.alpha_prior is not None:
        alpha, value = _update_alpha(problem, alpha, M, total)
    else:
        value = _objective(problem, alpha, M, total)
    bound = value + kl_terms(problem, state)
    SA, SW = expected_tables(problem, LA, LW, M, alpha)
    c = nb_rate_factor(alpha)
    return factor_updates(problem, state, SA, SW, c), alpha, bound


_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def alpha_integrated_bound(problem, state, alpha):
    """A lower bound on ``log p(X)`` with the dispersion integrated out: ``(bound, m, s)``.

    The fitter's ``elbo`` with a learned ``alpha`` is ``B(alpha) + log p(alpha)`` at a point
    estimate, a density value, not a bound on ``log p(X)``; across ranks it lacks the Occam
    factor of ``alpha``. Here the family ``q(A) q(W) q(x, l | u) q(u)``, ``u = log alpha``,
    with ``q(A), q(W)`` as given, ``q(x, l | u)`` the optimal split and tables at each ``u``
    (so the inner bound is :func:`nb_vb_bound`'s closed form ``B(u)``) and
    ``q(u) = Normal(m, s^2)``, gives the valid bound

    ``E_q(u)[B(e^u) + log p_alpha(e^u) + u] + 0.5 log(2 pi e s^2)``

    (``+ u``: the Jacobian of ``u``), maximized over ``(m, s)`` from the Laplace start (``m``
    the ``alpha`` update's optimum, ``s^2 = -1 / f''``). The expectation is a 24-node
    Gauss-Hermite rule (exact for polynomials of degree <= 47 in ``u``); each node costs
    O(nonzeros). With a fixed ``alpha`` it returns ``(nb_vb_bound, log alpha, 0)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import negative_binomial, recognize
    >>> from bnmfzoo.inference.counts._problem import problem_from_factorization
    >>> X = np.random.default_rng(0).negative_binomial(2.0, 0.4, size=(6, 5))
    >>> prob = problem_from_factorization(recognize(negative_binomial(X, 2)))
    >>> state, alpha, _, _ = _run(prob, np.random.default_rng(1), 300, 1e-9, False)
    >>> bound, m, s = alpha_integrated_bound(prob, state, alpha)
    >>> bool(np.isfinite(bound) and s > 0)
    True
    """
    from scipy.optimize import minimize

    if problem.alpha_prior is None:
        return nb_vb_bound(problem, state, alpha), math.log(alpha), 0.0
    LA, LW = _geometric(state.aA, state.bA), _geometric(state.aW, state.bW)
    M = nonzero_means(problem.data, LA, LW, problem.offsets_nz)
    total = _total(problem, state)
    kl = kl_terms(problem, state)
    alpha, _ = _update_alpha(problem, alpha, M, total, newton_steps=20)
    _, h = _alpha_derivatives(problem, alpha, M, total)

    def neg(params):
        m, log_s = params
        s = math.exp(log_s)
        total_f = 0.0
        for x, w in zip(_GH_NODES, _GH_WEIGHTS):
            u = m + s * x
            fu = _objective(problem, math.exp(u), M, total) + u
            if not np.isfinite(fu):
                return np.inf
            total_f += w * fu
        return -(total_f + 0.5 * math.log(2.0 * math.pi * math.e * s * s))

    s0 = 1.0 / math.sqrt(-h) if h < 0.0 else 0.1
    start = np.array([math.log(alpha), math.log(s0)])
    res = minimize(neg, start, method="Nelder-Mead",
                   options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 400})
    best = res.x if res.fun <= neg(start) else start
    return -float(neg(best)) + kl, float(best[0]), float(math.exp(best[1]))


def _run(problem, rng, max_iter, tol, progressbar):
    state = vb_init(problem, rng)
    alpha = problem.alpha
    if problem.alpha_prior is not None:
        alpha = problem.alpha_prior[0] / problem.alpha_prior[1]
    alpha = float(alpha)
    trace = []
    converged = False
    for _ in progress(range(max_iter), desc="VB (NB)", progressbar=progressbar):
        state, alpha, bound = nb_vb_iteration(problem, state, alpha)
        trace.append(bound)
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * abs(trace[-1]):
            converged = True
            break
    return state, alpha, np.array(trace), converged


def fit_vb_nb(model, *, max_iter=1000, tol=1e-7, n_draws=500, random_seed=None,
              progressbar=True):
    """Fit a recognized negative-binomial NMF model by variational Bayes; return a DataTree.

    Parameters
    ----------
    model : pymc.Model
        E.g. :func:`bnmfzoo.models.negative_binomial` (fixed or learned ``alpha``; ARD,
        hierarchical rates, offsets and masks as in :func:`bnmfzoo.inference.fit_vb_poisson`).
    max_iter : int
    tol : float
        Stop when the bound changes by less than ``tol`` times its magnitude.
    n_draws : int
        Draws from ``q`` in the ``posterior`` group (one chain); a learned ``alpha`` is a
        point estimate, repeated in every draw.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        As :func:`bnmfzoo.inference.fit_vb_poisson` (``posterior``, ``variational`` with the
        Gamma parameters, ``elbo``, ``share``, ``active``, ``observed_data``,
        ``diagnostics``), plus ``alpha`` in ``variational``; ``attrs["method"]`` is
        ``"vb_nb"``.

    Examples
    --------
    >>> import numpy as np
    >>> import bnmfzoo as bz
    >>> X = np.random.default_rng(0).negative_binomial(2.0, 0.4, size=(8, 6))
    >>> dt = bz.inference.fit_vb_nb(bz.models.negative_binomial(X, 2), random_seed=0,
    ...                             progressbar=False)
    >>> bool(np.all(np.diff(dt["variational"]["elbo"].values) >= -1e-9))
    True
    """
    from bnmfzoo.inference.counts.variational.vb import _vb_datatree

    found, problem = counts_spec(model, method="fit_vb_nb")
    if problem.family == "poisson":
        raise TypeError("fit_vb_nb fits negative-binomial models; this model's likelihood is "
                        "Poisson (use fit_vb_poisson)")
    if problem.family == "nb2":
        raise TypeError("fit_vb_nb fits the NB with n = alpha * mu, p = alpha / (1 + alpha); "
                        "pm.NegativeBinomial(mu=, alpha=) (NB2) is sampled by GibbsPoisson "
                        "(pm.sample) but has no VB fit")
    max_iter = check_int(max_iter, name="max_iter")
    n_draws = check_int(n_draws, name="n_draws")
    tol = check_number(tol, name="tol", minimum=0.0, strict=False)
    rng = as_generator(random_seed)
    t0 = time.process_time()
    state, alpha, trace, converged = _run(problem, rng, max_iter, tol, progressbar)
    cpu = time.process_time() - t0
    extra_post = {}
    if problem.alpha_prior is not None and "alpha" in found.var_names:
        extra_post[found.var_names["alpha"]] = np.full((1, n_draws), alpha)
    return _vb_datatree(found, problem, state, trace, converged, cpu, rng, n_draws,
                        method="vb_nb", extra_post=extra_post,
                        extra_var={"alpha": ((), np.float64(alpha))})


def select_rank_nb(X, ranks, *, restarts=3, max_iter=1000, tol=1e-7, random_seed=None,
                   progressbar=True, **model_kwargs):
    """Choose the rank of negative-binomial NMF by a VB lower bound on ``log p(X)``.

    Fits :func:`bnmfzoo.models.negative_binomial` by :func:`bnmfzoo.inference.fit_vb_nb` at
    every rank (``restarts`` random starts) and returns the rank with the largest bound. With
    a learned dispersion (the default) the fitter's own ``elbo`` holds ``alpha`` at a point
    estimate and is not a bound on the evidence; the bound compared here integrates
    ``log alpha`` under a fitted Gaussian ``q``
    (:func:`bnmfzoo.inference.counts.variational.vb_nb.alpha_integrated_bound`), so every rank
    pays for its dispersion. With a fixed ``alpha`` it is the fitter's bound on
    ``log p(X | alpha)``.

    Parameters
    ----------
    X : array-like, scipy.sparse matrix or LongMatrix
        Counts.
    ranks : iterable of int
    restarts : int
    max_iter, tol, random_seed, progressbar
        As in :func:`bnmfzoo.inference.fit_vb_nb`.
    **model_kwargs
        Passed to :func:`bnmfzoo.models.negative_binomial` (``alpha``, ``alpha_prior``,
        ``a``, ``b``, offsets, ``mask``...).

    Returns
    -------
    dict
        ``"rank"`` (the best), ``"ranks"``, ``"elbo"`` (best bound per rank),
        ``"elbo_restarts"`` (every restart's bound), ``"alpha"`` (the learned dispersion of the
        best restart per rank), ``"point"`` (its point-estimate objective, the fitter's
        ``elbo``) and ``"log_alpha_sd"`` (the sd of ``q(log alpha)``; 0 when fixed).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.gamma(2, 2, (30, 2)) @ rng.gamma(2, 1, (2, 25))
    >>> X = rng.negative_binomial(2.0 * mu, 2.0 / 3.0)
    >>> select_rank_nb(X, [1, 2, 3], restarts=1, random_seed=0, progressbar=False)["rank"]
    2
    """
    from bnmfzoo.models.poisson_nmf import negative_binomial

    ranks = [check_int(r, name="ranks") for r in ranks]
    restarts = check_int(restarts, name="restarts")
    rng = as_generator(random_seed)
    keys = ("elbo", "alpha", "point", "log_alpha_sd")
    best = {k: [] for k in keys}
    every = []
    for r in ranks:
        _, problem = counts_spec(negative_binomial(X, r, **model_kwargs),
                                 method="select_rank_nb")
        runs = []
        for _ in range(restarts):
            state, alpha, _, _ = _run(problem, rng, max_iter, tol, progressbar)
            bound, _, sd = alpha_integrated_bound(problem, state, alpha)
            runs.append((bound, alpha, nb_vb_bound(problem, state, alpha), sd))
        every.append([run[0] for run in runs])
        top = max(runs, key=lambda run: run[0])
        for k, v in zip(keys, top):
            best[k].append(float(v))
    out = {k: np.array(v) for k, v in best.items()}
    return {"rank": ranks[int(np.argmax(out["elbo"]))], "ranks": np.array(ranks), **out,
            "elbo_restarts": every}
