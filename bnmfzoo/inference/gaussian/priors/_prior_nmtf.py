"""Gibbs sweeps of the Gaussian tri-factorization ``X ~ F S G^T`` with per-entry priors.

The NMTF counterpart of :func:`bnmfzoo.inference.gaussian.priors._prior_core.prior_nmf_sweep` (no
PyMC here). Every prior the recognizer accepts on a factor entry ``u`` has log-density
``-q u^2 / 2 + l u`` on ``u >= 0`` (``Exponential(lam)``: ``q = 0, l = -lam``;
``HalfNormal(sigma)``: ``q = 1 / sigma^2, l = 0``; ``TruncatedNormal(mu, sigma, lower=0)``:
``q = 1 / sigma^2, l = mu / sigma^2``), so with the Gaussian likelihood the conditional of
each entry of ``F``, ``S`` and ``G`` is a normal truncated to ``[0, inf)`` with precision
``tau sum c^2 + q`` and linear term ``tau sum r c + l`` (``c`` the entry's coefficient in the
observed ``x_ij``, ``r`` the residual without the entry). Exponential rates that are elements of
a Gamma random variable are drawn from their Gamma conditionals first.

Order (as :func:`bnmfzoo.inference.gaussian.gibbs._core.nmtf_sweep`): Gamma rates, ``F`` (row by
row: the rows are conditionally independent), ``S`` (entry by entry, row-major), ``G`` (row by
row, on a column-major copy of the residual), then ``tau``.

Examples
--------
>>> import numpy as np
>>> from bnmfzoo.inference.gaussian.gibbs._core import nmtf_state, observed_entries
>>> from bnmfzoo.inference.gaussian.priors._prior_core import PriorTerms, prior_terms
>>> X = np.random.default_rng(0).exponential(size=(6, 5))
>>> obs = observed_entries(X)
>>> hn = PriorTerms("constant", *prior_terms("halfnormal", {"sigma": 1.0}, (6, 2)))
>>> plan = NMTFPriorPlan(F=hn, S=PriorTerms("constant", *prior_terms(
...     "exponential", {"lam": 1.0}, (2, 2))), G=PriorTerms("constant", *prior_terms(
...     "halfnormal", {"sigma": 1.0}, (5, 2))))
>>> state = nmtf_state(np.ones((6, 2)), np.ones((2, 2)), np.ones((5, 2)), 1.0, None, None,
...                    obs)
>>> _ = prior_nmtf_sweep(state, obs, plan, np.random.default_rng(1), rates={},
...                      update={"F", "S", "G", "tau"})
>>> bool(np.all(state.S >= 0))
True
"""

from dataclasses import dataclass

import numba
import numpy as np

from bnmfzoo.inference.gaussian.gibbs._core import (
    _check_halves,
    _check_positive_finite,
    _gamma,
    _update_tau,
)
from bnmfzoo.inference.gaussian.gibbs._gram import all_finite, conditional_scaled
from bnmfzoo.inference.gaussian.priors._prior_core import (
    PriorTerms,
    _csc_prior_half_sweep,
    _prior_half_sweep,
)

__all__ = ["NMTFPriorPlan", "prior_nmtf_sweep"]

ROLES = ("F", "S", "G")


@dataclass(frozen=True)
class NMTFPriorPlan:
    """What :func:`prior_nmtf_sweep` needs besides the state: priors, rates and noise.

    Priors are :class:`PriorTerms` in the roles' layout (F D x K, S K x L, G N x L), Gamma
    rates :class:`~bnmfzoo.inference.gaussian.priors._prior_core.RateBlock` (indices in the same
    layout), and the noise ``"precision"`` (``alpha_tau``, ``beta_tau``) or ``"fixed"``
    (``sigma``).
    """

    F: PriorTerms
    S: PriorTerms
    G: PriorTerms
    rates: tuple = ()
    noise: str = "precision"
    alpha_tau: float = 1.0
    beta_tau: float = 1.0
    sigma: float | None = None


@numba.njit(cache=True)
def _prior_core_sweep(F, S, G, rows, cols, resid, tau, Q, Lin, rng):
    """Update every ``S[k, m]`` (row-major) with per-entry prior terms ``Q``, ``Lin``."""
    K, L = S.shape
    n = rows.size
    for k in range(K):
        for m in range(L):
            s1 = 0.0
            s2 = 0.0
            for e in range(n):
                c = F[rows[e], k] * G[cols[e], m]
                s1 += resid[e] * c
                s2 += c * c
            old = S[k, m]
            prec = tau * s2 + Q[k, m]
            lin = tau * (s1 + old * s2) + Lin[k, m]
            inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (np.inf if prec <= 0.0 else np.nan)
            new = conditional_scaled(lin, inv_sd, -Lin[k, m], rng)
            d = new - old
            if d != 0.0:
                for e in range(n):
                    resid[e] -= d * F[rows[e], k] * G[cols[e], m]
                S[k, m] = new


def _terms(terms, rates):
    if terms.kind == "constant":
        return terms.q, terms.lin
    if terms.kind == "rate":
        lam = rates[terms.rate][terms.index]
        return np.zeros(lam.shape), np.ascontiguousarray(-lam)
    raise ValueError(f"prior terms of kind {terms.kind!r} are not supported for the NMTF")


def _draw_rates(state, plan, rates, rng, update):
    for block in plan.rates:
        if block.name not in update:
            continue
        shape, rate = block.alpha.copy(), block.beta.copy()
        for role, index in block.users:
            values = getattr(state, role)
            shape += np.bincount(index.ravel(), minlength=shape.size)
            rate += np.bincount(index.ravel(), weights=values.ravel(), minlength=shape.size)
        rates[block.name] = np.asarray(_gamma(shape, rate, rng), dtype=float)


def prior_nmtf_sweep(state, obs, plan, rng, *, rates, update):
    """One Gibbs sweep of the tri-factorization with per-entry priors, in place.

    Parameters
    ----------
    state : bnmfzoo.inference.gaussian.gibbs._core.NMTFState
    obs : bnmfzoo.inference.gaussian.gibbs._core.ObservedEntries
    plan : NMTFPriorPlan
    rng : numpy.random.Generator
    rates : dict
        Name -> current value (flattened) of every Gamma rate block; updated in place.
    update : set of str
        ``"F"``, ``"S"``, ``"G"``, ``"tau"`` and the names of rate blocks to update.

    Returns
    -------
    NMTFState
    """
    update = frozenset(update)
    _draw_rates(state, plan, rates, rng, update)
    tau = 1.0 / float(plan.sigma) ** 2 if plan.noise == "fixed" else float(state.tau)
    if update & set(ROLES):
        _check_positive_finite("the noise precision tau", tau, obs)
        terms = {}
        for role in ROLES:
            q, lin = _terms(getattr(plan, role), rates)
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(lin)) and np.all(q >= 0)):
                raise FloatingPointError(f"the prior of {role} has non-finite or negative "
                                         "precision terms")
            terms[role] = (q, lin)
        F, S, G = state.F, state.S, state.G
        if "F" in update:
            partner = G @ np.ascontiguousarray(S.T)  # N x K: coefficient of F[i, k] in x_ij
            _prior_half_sweep(F, partner, obs.row_ptr, obs.cols, state.resid, tau,
                              *terms["F"], rng)
            _check_halves(0 if all_finite(F) else 1, ("F",), obs, tau)
        if "S" in update:
            _prior_core_sweep(F, S, G, obs.rows, obs.cols, state.resid, tau, *terms["S"], rng)
            _check_halves(0 if all_finite(S) else 1, ("S",), obs, tau)
        if "G" in update:
            partner = F @ S  # D x L: coefficient of G[j, l] in x_ij
            _csc_prior_half_sweep(G, partner, obs.col_ptr, obs.csc_rows, obs.csr_perm,
                                  state.resid, tau, *terms["G"], rng)
            _check_halves(0 if all_finite(G) else 1, ("G",), obs, tau)
    if "tau" in update and plan.noise == "precision":
        from bnmfzoo.models._spec import GaussianHyper

        _update_tau(state, obs, GaussianHyper(alpha_tau=plan.alpha_tau, beta_tau=plan.beta_tau),
                    rng)
    elif plan.noise == "fixed":
        state.tau = tau
    return state
