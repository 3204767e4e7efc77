"""Variational Bayes for Poisson NMF (Cemgil 2009): numba kernel and updates, no PyMC.

Mean field ``q(A) q(W) q(Z) q(rates)`` with Gamma factors. Given ``L_A = exp E[log A]`` and
``L_W = exp E[log W]``, the optimal ``q(Z)`` splits each count with probabilities
``∝ L_A[d, k] L_W[k, n]``; one pass over the nonzeros (:func:`vb_pass`) gives the expected
count tables and ``sum x log sum_k L_A L_W``, from which the bound with ``q(Z)`` at its optimum
is exact:

``B = sum_nz [x log(o sum_k L_A L_W) - log x!] - sum_obs o E[A] E[W]
+ sum (E log p(A) - E log q(A)) + (same for W and the rates)``.

Each update is the exact coordinate maximizer (``q(Z)``, then ``q(A)``, ``q(W)``, the rates),
so ``B`` never decreases (checked in the tests).

Reference: Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation
models. Computational Intelligence and Neuroscience, 785152.
"""

import math

import numpy as np
from scipy.special import digamma

from bnmfzoo.inference.counts._data import exposures
from bnmfzoo.inference.counts._problem import rate_conditionals
from bnmfzoo.inference.kernels.countvb import gamma_kl_elements
from bnmfzoo.inference.kernels.countvb import poisson_vb_pass as _vb_kernel

__all__ = ["vb_pass", "gamma_entropy_terms", "VBState", "vb_iteration", "vb_bound", "kl_terms",
           "factor_updates"]


def vb_pass(data, LA, LW):
    """``(SA (D, K), SW (K, N), sum_nz x log sum_k L_A L_W - log x!)``: expected count tables."""
    D, N = data.shape
    K = LA.shape[1]
    SA = np.empty((D, K))
    SWt = np.empty((N, K))
    ll = _vb_kernel(data.indptr, data.cols, data.counts, np.ascontiguousarray(LA),
                    np.ascontiguousarray(LW.T), SA, SWt)
    if not np.isfinite(ll):
        raise FloatingPointError("VB: a nonzero count has a zero or non-finite mean")
    return SA, np.ascontiguousarray(SWt.T), float(ll)


def gamma_entropy_terms(a, Eb, Elogb, alpha, beta):
    """``sum E_q[log Gamma(x; a, b)] - E_q[log q(x)]`` for ``q(x) = Gamma(alpha, beta)``.

    ``Eb`` and ``Elogb`` are the expectations of the prior rate under its own ``q`` (the
    constant rate and its log when it is fixed).
    """
    return float(np.sum(gamma_kl_elements(a, Eb, Elogb, alpha, beta)))


class VBState:
    """Variational parameters: Gamma (shape, rate) of A, W and of each rate variable."""

    def __init__(self, aA, bA, aW, bW, rates):
        self.aA, self.bA, self.aW, self.bW = aA, bA, aW, bW
        self.rates = rates  # name -> (shape, rate) arrays

    def EA(self):
        """E[A]."""
        return self.aA / self.bA

    def EW(self):
        """E[W]."""
        return self.aW / self.bW


def _prior_rate_moments(problem, state):
    """``(E bA, E log bA, E bW, E log bW)`` under q of the rate variables (or constants)."""
    out = []
    for role, const in (("A", problem.bA), ("W", problem.bW)):
        if const is not None:
            out += [const, np.log(const)]
        else:
            name, idx = problem.rate_of[role]
            sh, rt = state.rates[name]
            out += [(sh / rt).ravel()[idx], (digamma(sh) - np.log(rt)).ravel()[idx]]
    return out


def vb_bound(problem, state, ll_nz):
    """The bound ``B`` at ``state`` given ``ll_nz`` from :func:`vb_pass` at the same state."""
    EA, EW = state.EA(), state.EW()
    B = ll_nz + float(np.sum(np.log(problem.offsets_nz) * problem.data.counts))
    B -= float(np.sum(EA * exposures(problem.expo, EW)))
    return kl_terms(problem, state, B)


def kl_terms(problem, state, B=0.0):
    """``B`` plus ``E_q[log p] - E_q[log q]`` of ``A``, ``W`` and the rate variables."""
    EbA, ElbA, EbW, ElbW = _prior_rate_moments(problem, state)
    B += gamma_entropy_terms(problem.aA, EbA, ElbA, state.aA, state.bA)
    B += gamma_entropy_terms(problem.aW, EbW, ElbW, state.aW, state.bW)
    for name, (alpha0, beta0, shape) in problem.rates.items():
        sh, rt = state.rates[name]
        B += gamma_entropy_terms(np.reshape(alpha0, shape), np.reshape(beta0, shape),
                                 np.log(np.reshape(beta0, shape)), sh, rt)
    return B


def _L(alpha, beta):
    return np.exp(digamma(alpha) - np.log(beta))


def vb_iteration(problem, state):
    """One round of coordinate ascent; returns ``(new state, bound at the old state)``."""
    SA, SW, ll = vb_pass(problem.data, _L(state.aA, state.bA), _L(state.aW, state.bW))
    bound = vb_bound(problem, state, ll)
    return factor_updates(problem, state, SA, SW), bound


def factor_updates(problem, state, SA, SW, scale=1.0):
    """``q(A)``, then ``q(W)``, then the rate variables, given the expected tables ``SA, SW``.

    ``q(A) = Gamma(a + SA, E[b] + scale sum_n o E[W])`` and ``W`` alike with the new ``q(A)``
    (``scale``: 1 for the Poisson, the tables' rate factor ``alpha log(1 + 1 / alpha)`` for the
    NB); the rates ``Gamma(alpha0 + sum of shapes, beta0 + sum of E[values])``.
    """
    EbA, _, _, _ = _prior_rate_moments(problem, state)
    aA = problem.aA + SA
    bA = EbA + scale * exposures(problem.expo, state.EW())
    state = VBState(aA, bA, state.aW, state.bW, state.rates)
    _, _, EbW, _ = _prior_rate_moments(problem, state)
    aW = problem.aW + SW
    bW = EbW + scale * exposures(problem.expo, state.EA().T, transpose=True).T
    state = VBState(aA, bA, aW, bW, state.rates)
    if problem.rates:
        state = VBState(aA, bA, aW, bW, rate_conditionals(problem, state.EA(), state.EW()))
    return state


def vb_init(problem, rng):
    """A random start: ``E[A]``, ``E[W]`` at the data's scale, shapes ``a + 1``."""
    D, N = problem.shape
    K = problem.rank
    total = float(problem.data.counts.sum())
    cells = float(np.sum(exposures(problem.expo, np.ones((1, N)))))
    scale = math.sqrt(max(total / max(cells, 1.0), 1e-12) / K)
    EA = scale * rng.gamma(2.0, 0.5, size=(D, K))
    EW = scale * rng.gamma(2.0, 0.5, size=(K, N))
    aA, aW = problem.aA + 1.0, problem.aW + 1.0
    rates = {n: (np.reshape(a, s).astype(float) + 1.0, np.reshape(b, s).astype(float) + 1.0)
             for n, (a, b, s) in problem.rates.items()}
    return VBState(aA, aA / EA, aW, aW / EW, rates)
