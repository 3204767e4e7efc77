"""Gibbs sweeps of the Gaussian NMF with per-entry priors on the factors (no PyMC here).

Every prior the recognizer accepts on a factor entry ``u`` has a log-density that is quadratic
on ``u >= 0``: ``-q u^2 / 2 + l u`` with

* ``Exponential(lam)``: ``q = 0``, ``l = -lam``;
* ``HalfNormal(sigma)``: ``q = 1 / sigma^2``, ``l = 0``;
* ``TruncatedNormal(mu, sigma, lower=0)``: ``q = 1 / sigma^2``, ``l = mu / sigma^2``.

With the Gaussian likelihood, the conditional of ``U[i, k]`` is then a normal truncated to
``[0, inf)`` with precision ``tau sum_j V_kj^2 + q_ik`` and linear term
``tau sum_j r_ij V_kj + l_ik`` (``r`` the residual without ``U[i, k]``'s contribution), one
kernel for all of them, with per-entry ``(q, l)`` arrays. When the precision is 0 (no observed
entry and an exponential prior) the draw is from the prior, ``Exponential(-l)``.

Exponential rates that are elements of a Gamma random variable (ARD, per column, row, factor or
scalar, shared by both factors or not) are updated from their Gamma conditionals:
``Gamma(alpha_m + n_m, beta_m + sum of the n_m entries whose rate is element m)``.

The updates and the order are those of :func:`bnmfzoo.inference.gaussian.gibbs._core.nmf_sweep`
(rates, then ``A`` row by row, then ``W``, then ``tau``), with the residual path or the
Gram-matrix path per half-sweep (:mod:`~bnmfzoo.inference.gaussian.gibbs._gram`); with ``q = 0`` and
``l = -lam`` the draws are those of ``nmf_sweep`` (``x + (-lam)`` equals ``x - lam`` in IEEE
arithmetic).
"""

from dataclasses import dataclass, field

import numba
import numpy as np

from bnmfzoo.inference.gaussian.gibbs._core import (
    _axpy,
    _check_halves,
    _check_positive_finite,
    _dot_sq,
    _gamma,
    _update_tau,
)
from bnmfzoo.inference.gaussian.gibbs._gram import _pattern_grams, all_finite, conditional_scaled
from bnmfzoo.inference.gaussian.gibbs._sweep_kernels import reorder

__all__ = ["PriorTerms", "RateBlock", "NMFPriorPlan", "prior_terms", "prior_nmf_sweep",
           "update_rate_blocks"]


def prior_terms(family, params, shape):
    """``(q, l)`` arrays of ``shape`` for a prior ``family`` with parameter arrays ``params``.

    Examples
    --------
    >>> q, l = prior_terms("truncated_normal", {"mu": 1.0, "sigma": 2.0}, (1, 2))
    >>> q.tolist(), l.tolist()
    ([[0.25, 0.25]], [[0.25, 0.25]])
    """
    if family == "exponential":
        lam = np.broadcast_to(np.asarray(params["lam"], dtype=float), shape)
        return np.zeros(shape), np.ascontiguousarray(-lam)
    sigma = np.broadcast_to(np.asarray(params["sigma"], dtype=float), shape)
    q = np.ascontiguousarray(1.0 / sigma**2)
    if family == "halfnormal":
        return q, np.zeros(shape)
    if family == "truncated_normal":
        mu = np.broadcast_to(np.asarray(params["mu"], dtype=float), shape)
        return q, np.ascontiguousarray(mu * q)
    raise ValueError(f"unknown prior family {family!r}")


@numba.njit(cache=True)
def _prior_half_sweep(U, V, ptr, idx, resid, tau, Q, Lin, rng):
    """Residual-path update of every ``U[i, k]`` with per-entry prior terms ``Q``, ``Lin``."""
    R = U.shape[1]
    max_n = 0
    for i in range(U.shape[0]):
        max_n = max(max_n, ptr[i + 1] - ptr[i])
    buf = np.empty((R, max_n))
    for i in range(U.shape[0]):
        start = ptr[i]
        n = ptr[i + 1] - start
        for e in range(n):
            j = idx[start + e]
            for k in range(R):
                buf[k, e] = V[j, k]
        res = resid[start:start + n]
        for k in range(R):
            b = buf[k]
            s1, s2 = _dot_sq(b, res, n)
            old = U[i, k]
            prec = tau * s2 + Q[i, k]
            lin = tau * (s1 + old * s2) + Lin[i, k]
            inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (np.inf if prec <= 0.0 else np.nan)
            new = conditional_scaled(lin, inv_sd, -Lin[i, k], rng)
            d = new - old
            if d != 0.0:
                _axpy(res, d, b, n)
                U[i, k] = new


@numba.njit(cache=True)
def _csc_prior_half_sweep(U, V, col_ptr, csc_rows, csr_perm, resid, tau, Q, Lin, rng):
    """Column half-sweep of :func:`_prior_half_sweep` on a column-major copy of ``resid``.

    The copy is written and read back in row-major order (``reorder``, as the exponential
    prior's sweep does), which touches about one cache line per column at a time.
    """
    scratch = np.empty(resid.size)
    reorder(resid, csr_perm, scratch, True)
    _prior_half_sweep(U, V, col_ptr, csc_rows, scratch, tau, Q, Lin, rng)
    reorder(scratch, csr_perm, resid, False)


@numba.njit(cache=True)
def _gram_prior_rows(U, C, G, pattern_of, tau, Q, Lin, rng):
    """Gram-path update (see ``_gram._gram_rows``) with per-entry prior terms."""
    n, R = U.shape
    t = np.empty(R)
    total = 0.0
    for i in range(n):
        g = G[pattern_of[i]]
        u = U[i]
        c = C[i]
        for k in range(R):
            gk = g[k]
            s0 = 0.0
            s1 = 0.0
            R2 = R - R % 2
            for m in range(0, R2, 2):
                s0 += gk[m] * u[m]
                s1 += gk[m + 1] * u[m + 1]
            if R2 < R:
                s0 += gk[R2] * u[R2]
            t[k] = s0 + s1
        for k in range(R):
            old = u[k]
            prec = tau * g[k, k] + Q[i, k]
            inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (np.inf if prec <= 0.0 else np.nan)
            lin = tau * (c[k] - t[k] + old * g[k, k]) + Lin[i, k]
            new = conditional_scaled(lin, inv_sd, -Lin[i, k], rng)
            d = new - old
            if d != 0.0:
                gk = g[k]
                for m in range(R):
                    t[m] += d * gk[m]
                u[k] = new
        for k in range(R):
            total += u[k] * (t[k] - 2.0 * c[k])
    return total


@numba.njit(cache=True)
def _gram_prior_half(U, V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign,
                     pattern_of, xm, tau, Q, Lin, rng):
    G = _pattern_grams(V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign)
    C = xm @ V.T
    return _gram_prior_rows(U, C, G, pattern_of, tau, Q, Lin, rng)


@dataclass(frozen=True)
class RateBlock:
    """A Gamma variable whose elements are exponential rates of factor entries.

    ``users`` is ``((role, index), ...)`` with ``index`` in the sweep's layout (``A``: D x R,
    ``W``: N x R): entry ``[i, k]`` has rate ``value[index[i, k]]`` (``value`` flattened).
    """

    name: str
    alpha: np.ndarray
    beta: np.ndarray
    users: tuple


@dataclass(frozen=True)
class PriorTerms:
    """``(q, l)`` of one factor in the sweep's layout, or how to get them.

    ``kind`` is ``"constant"`` (``q``, ``lin`` given), ``"rate"`` (exponential with rates
    from ``rate``: ``q = 0``, ``lin = -value[index]``) or ``"external"`` (supplied per sweep).
    """

    kind: str
    q: np.ndarray | None = None
    lin: np.ndarray | None = None
    rate: str | None = None
    index: np.ndarray | None = None


@dataclass(frozen=True)
class NMFPriorPlan:
    """What :func:`prior_nmf_sweep` needs besides the state: priors, rates and noise.

    ``noise`` is ``"precision"`` (Gamma ``alpha_tau``, ``beta_tau``), ``"fixed"`` (``sigma``) or
    ``"external"`` (``tau`` supplied per sweep).
    """

    A: PriorTerms
    W: PriorTerms
    rates: tuple = ()
    noise: str = "precision"
    alpha_tau: float = 1.0
    beta_tau: float = 1.0
    sigma: float | None = None
    blocks: frozenset = field(default_factory=frozenset)


def _terms(plan_terms, rates, external, role):
    if plan_terms.kind == "constant":
        return plan_terms.q, plan_terms.lin
    if plan_terms.kind == "rate":
        lam = rates[plan_terms.rate][plan_terms.index]
        return np.zeros(lam.shape), np.ascontiguousarray(-lam)
    q, lin = external[role]
    return np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(lin, dtype=float)


def update_rate_blocks(plan, state, rates, update, rng):
    """Draw each rate block in ``update`` from its Gamma conditional (``rates`` in place).

    Block ``m`` has ``Gamma(alpha_m + n_m, beta_m + sum of the n_m entries with rate m)``.
    """
    for block in plan.rates:
        if block.name not in update:
            continue
        shape = block.alpha.copy()
        rate = block.beta.copy()
        for role, index in block.users:
            values = state.A if role == "A" else state.Wt
            shape += np.bincount(index.ravel(), minlength=shape.size)
            rate += np.bincount(index.ravel(), weights=values.ravel(), minlength=shape.size)
        rates[block.name] = np.asarray(_gamma(shape, rate, rng), dtype=float)


def prior_nmf_sweep(state, obs, plan, rng, *, rates, update, external=None, kernel="auto"):
    """One Gibbs sweep of the NMF with per-entry priors, in place.

    Order: Gamma rates (each in ``update``), ``A`` (row by row), ``W``, then ``tau``.

    Parameters
    ----------
    state : bnmfzoo.inference.gaussian.gibbs._core.NMFState
    obs : bnmfzoo.inference.gaussian.gibbs._core.ObservedEntries
    plan : NMFPriorPlan
    rng : numpy.random.Generator
    rates : dict
        Name -> current value (flattened float array) of every rate block; updated in place.
    update : set of str
        ``"A"``, ``"W"``, ``"tau"`` and the names of rate blocks to update.
    external : dict, optional
        ``{"A": (q, l), "W": (q, l), "tau": value}`` for the parts the plan marks external
        (parameters that depend on variables other step methods sample).
    kernel : {"auto", "gram", "residual"}

    Returns
    -------
    NMFState
    """
    external = external or {}
    update_rate_blocks(plan, state, rates, update, rng)
    if plan.noise == "fixed":
        tau = 1.0 / float(plan.sigma) ** 2
    elif plan.noise == "external":
        tau = float(external["tau"])
    else:
        tau = float(state.tau)
    if "A" in update or "W" in update:
        _check_positive_finite("the noise precision tau", tau, obs)
        if kernel == "auto":
            paths = obs.half_sweep_paths(state.A.shape[1])
        else:
            paths = (kernel, kernel)
        for role, path in zip(("A", "W"), paths, strict=True):
            if role not in update:
                continue
            q, lin = _terms(getattr(plan, role), rates, external, role)
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(lin)) and np.all(q >= 0)):
                raise FloatingPointError(f"the prior of {role} has non-finite or negative "
                                         "precision terms")
            if role == "A":
                U, V, patterns = state.A, state.Wt, obs.row_patterns if path == "gram" else None
            else:
                U, V, patterns = state.Wt, state.A, obs.col_patterns if path == "gram" else None
            if path == "gram":
                Vt = np.ascontiguousarray(V.T)
                state._gram_updated(_gram_prior_half(U, Vt, *patterns.arrays, tau, q, lin, rng))
            elif role == "A":
                _ = state.resid
                _prior_half_sweep(U, V, obs.row_ptr, obs.cols, state._resid, tau, q, lin, rng)
                state._residual_updated()
            else:
                _ = state.resid
                _csc_prior_half_sweep(U, V, obs.col_ptr, obs.csc_rows, obs.csr_perm,
                                      state._resid, tau, q, lin, rng)
                state._residual_updated()
            _check_halves(0 if all_finite(U) else 1, (role,), obs, tau)
    if "tau" in update and plan.noise == "precision":
        from bnmfzoo.models._spec import GaussianHyper

        _update_tau(state, obs, GaussianHyper(alpha_tau=plan.alpha_tau, beta_tau=plan.beta_tau),
                    rng)
    elif plan.noise != "precision":
        state.tau = tau
    return state
