"""Moves along NMF's symmetries: rescaling and Q-Transform (numeric core, no PyMC).

``A W = (A Q)(Q^-1 W)`` for every invertible ``Q``, so the likelihood of an NMF is constant on
the orbits ``(A Q, Q^-1 W)`` that keep both factors non-negative; only the priors (and the
volume the map distorts) decide where along an orbit the posterior puts its mass. Two moves
use this:

* **Rescaling** (a generalized Gibbs step, Liu & Wu 1999; Liu & Sabatti 2000): for each
  factor ``k``, ``A[:, k] c`` and ``W[k, :] / c`` with ``c`` drawn from its exact conditional
  w.r.t. the Haar measure ``dc / c`` of the multiplicative group. With Exponential priors of
  rates ``lam_A[k]``, ``lam_W[k]`` and the map's Jacobian ``c^(D - N)``, that conditional is
  ``c^(D - N - 1) exp(-a c - b / c)`` with ``a = lam_A[k] sum_i A_ik`` and
  ``b = lam_W[k] sum_j W_kj``: a generalized inverse Gaussian GIG(p = D - N, 2a, 2b).
* **Q-Transform** (Masood & Doshi-Velez 2019 use ``A Q, Q^-1 W`` to generate particles):
  ``Q = expm(eps Z)`` with ``Z`` standard normal (R x R), so ``Q`` and ``Q^-1 = expm(-eps Z)``
  have the same law, and the move is accepted by Metropolis-Hastings with the prior ratio and
  the Jacobian ``|det Q|^(D - N) = exp((D - N) eps tr Z)`` (zero prior, i.e. rejection, when
  a factor turns negative).

Both moves change ``A W`` only by rounding, so the residual of an
:class:`~bnmfzoo.inference.gaussian.gibbs._core.NMFState` is recomputed after them and the
likelihood (at any temperature) is treated as unchanged.
"""

import math

import numpy as np
from scipy.linalg import expm

from bnmfzoo.inference.kernels.gig import gig_draws

__all__ = ["MOVES", "draw_scales", "rescale", "qtransform", "prior_rates", "apply_moves"]

MOVES = ("rescale", "qtransform")


def prior_rates(state, hyper):
    """``(lam_A, lam_W)`` of the state's Exponential priors (the ARD rates when ``ard``)."""
    R = state.A.shape[1]
    if hyper.ard:
        lam = np.asarray(state.lambda_, dtype=float)
        return lam, lam
    return np.full(R, float(hyper.lambda_A)), np.full(R, float(hyper.lambda_W))


def draw_scales(a, b, p, rng):
    """Draw ``c_k ~ c^(p - 1) exp(-a_k c - b_k / c)`` (GIG(p, 2a, 2b)), all ``k`` in one call.

    Examples
    --------
    >>> c = draw_scales(np.array([1.0, 4.0]), np.array([1.0, 1.0]), 0, np.random.default_rng(0))
    >>> c.shape, bool((c > 0).all())
    ((2,), True)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if not (np.all(a > 0) and np.all(b > 0) and np.all(np.isfinite(a * b))):
        raise FloatingPointError(f"rescaling move: column sums must be finite and > 0 "
                                 f"(got a={a!r}, b={b!r})")
    y = gig_draws(float(p), 2.0 * np.sqrt(a * b), rng).reshape(a.shape)
    return np.sqrt(b / a) * y


def rescale(A, Wt, lam_A, lam_W, rng):
    """Rescaling move in place on ``A`` (D x R) and ``Wt`` (= ``W.T``, N x R); returns ``c``."""
    D, N = A.shape[0], Wt.shape[0]
    c = draw_scales(lam_A * A.sum(axis=0), lam_W * Wt.sum(axis=0), D - N, rng)
    A *= c[None, :]
    Wt /= c[None, :]
    return c


def qtransform(A, Wt, lam_A, lam_W, rng, eps, *, jacobian_power=None):
    """Q-Transform Metropolis-Hastings move in place; returns ``(probability, accepted)``.

    Always draws ``R * R`` normals and one uniform, accepted or not. ``jacobian_power``
    (default ``D - N``, the correct one) exists so tests can show a wrong Jacobian is caught.
    """
    D, R = A.shape
    N = Wt.shape[0]
    Z = rng.standard_normal((R, R))
    u = rng.random()
    Q = expm(eps * Z)
    Qinv = expm(-eps * Z)
    A_new = A @ Q
    Wt_new = Wt @ Qinv.T  # (Q^-1 W)^T = W^T Q^-T
    if (A_new < 0).any() or (Wt_new < 0).any():
        return 0.0, False
    log_ratio = (-(lam_A * (A_new.sum(axis=0) - A.sum(axis=0))).sum()
                 - (lam_W * (Wt_new.sum(axis=0) - Wt.sum(axis=0))).sum()
                 + (D - N if jacobian_power is None else jacobian_power) * eps * np.trace(Z))
    prob = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
    if u < prob:
        A[...] = A_new
        Wt[...] = Wt_new
        return prob, True
    return prob, False


def apply_moves(state, hyper, rng, moves, eps=0.05):
    """Apply ``moves`` (a subset of :data:`MOVES`, in that order) to an ``NMFState``.

    Returns the Q-Transform acceptance probability (NaN without that move). The residual is
    recomputed when a move changed the factors.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> obs = observed_entries(X)
    >>> st = nmf_state(np.ones((5, 2)), np.ones((2, 4)), 1.0, None, obs)
    >>> from bnmfzoo.models._spec import GaussianHyper
    >>> hyper = GaussianHyper(lambda_A=1.0, lambda_W=1.0)
    >>> p = apply_moves(st, hyper, np.random.default_rng(1), ("rescale",))
    >>> bool(np.allclose(st.A @ st.W, 1.0 * 2))
    True
    """
    unknown = set(moves) - set(MOVES)
    if unknown:
        raise ValueError(f"unknown symmetry moves {sorted(unknown)}; choose from {MOVES}")
    lam_A, lam_W = prior_rates(state, hyper)
    prob = math.nan
    changed = False
    if "rescale" in moves:
        rescale(state.A, state.Wt, lam_A, lam_W, rng)
        changed = True
    if "qtransform" in moves:
        prob, accepted = qtransform(state.A, state.Wt, lam_A, lam_W, rng, eps)
        changed = changed or accepted
    if changed:
        state._resid = None
        state._sse = None
    return prob
