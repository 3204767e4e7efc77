"""Moves that speed mixing within a mode: overrelaxed conditionals and exact rescaling.

Measured on GDSC at rank 5 (``docs/results/gaussian.md``), the slow quantities of the plain
Gibbs sweep are collective directions of ``(A, W)`` jointly: exact draws of a whole factor
given the other (the limit of block updates of each row) left the smallest effective sample
size of the aligned entries unchanged, while the slowest direction was the scale of one factor
(``A[:, k] c``, ``W[k, :] / c``) and the next ones spread over many entries. Two exact moves
act on them:

* **Overrelaxation** (Adler 1981; Neal 1998). A factor entry's conditional is a normal
  ``N(m, s^2)`` truncated to ``[0, inf)``. Instead of a fresh draw, propose
  ``x' = m + alpha (x - m) + s sqrt(1 - alpha^2) z`` with ``z ~ N(0, 1)`` and ``-1 < alpha < 0``:
  this autoregressive kernel is reversible with respect to ``N(m, s^2)``, so rejecting
  ``x' < 0`` (keeping ``x``) makes it reversible with respect to the truncated normal. With
  ``alpha`` near -1 successive updates overshoot the conditional mean, which suppresses the
  random walk of coordinate updates along correlated directions. Where the truncation matters
  (``m < OVERRELAX_MIN_Z * s``: most proposals would be rejected) the entry gets a fresh
  exact draw instead; the choice depends on ``m`` and ``s`` only, which do not involve ``x``,
  so each update still leaves its conditional invariant.
* **Rescaling** (a generalized Gibbs step, Liu & Sabatti 2000): for each factor ``k``, scale
  ``A[:, k]`` by ``c`` and ``W[k, :]`` by ``1 / c`` with ``c`` drawn from its exact conditional
  along that orbit, ``c^(D - N - 1) exp(-a c - b / c)`` with ``a = lam_A[k] sum_i A_ik``,
  ``b = lam_W[k] sum_j W_kj`` (a generalized inverse Gaussian; the product ``A W``, hence the
  likelihood, does not change).

Both are numeric cores without PyMC, used by
:func:`~bnmfzoo.inference.gaussian.gibbs._core.nmf_sweep` (``overrelax=``, ``rescale=``) and
so by :class:`~bnmfzoo.inference.GibbsNMF` by default.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.kernels.gig import gig_draws
from bnmfzoo.inference.kernels.truncnorm import truncnorm_excess

__all__ = ["overrelaxed_scaled", "rescale_factors", "OVERRELAX", "OVERRELAX_MIN_Z",
           "check_overrelax"]

#: default ``alpha`` of :class:`~bnmfzoo.inference.GibbsNMF` (measured on GDSC and CCLE:
#: -0.9 gave the largest smallest-ESS per CPU second of -0.5, -0.75, -0.9, -0.95, -0.98)
OVERRELAX = -0.9
#: overrelax only when the conditional mean is at least this many sd above 0 (standardized
#: truncation point below ``-OVERRELAX_MIN_Z``); elsewhere a fresh exact draw
OVERRELAX_MIN_Z = 1.0


def check_overrelax(alpha):
    """Return ``alpha`` as a float in ``(-1, 0]``, else raise ``ValueError`` naming it."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"overrelax must be a number in (-1, 0], got {alpha!r}") from None
    if not (-1.0 < a <= 0.0):
        raise ValueError(f"overrelax must be in (-1, 0] (0: plain Gibbs draws), got {alpha!r}")
    return a


@numba.njit(cache=True, inline="always")
def overrelaxed_scaled(old, lin, inv_sd, lam, alpha, rng):
    """Overrelaxed update of one factor entry from its truncated-normal conditional.

    The conditional is ``TN(lin / prec, 1 / prec)`` on ``[0, inf)`` with
    ``prec = inv_sd**-2`` (``inv_sd = inf``: nothing observed, the Exponential(``lam``) prior,
    drawn afresh). ``old`` is the entry's current value. Non-finite ``old``, ``lin`` or a NaN
    ``inv_sd`` give NaN, which the sweeps' finite checks report.
    """
    if not (math.isfinite(old) and math.isfinite(lin)) or inv_sd != inv_sd:
        return np.nan
    if inv_sd == np.inf:
        return rng.standard_exponential() / lam
    a = -lin * inv_sd  # standardized truncation point: (0 - m) / s
    if a > -OVERRELAX_MIN_Z:  # the truncation matters: an exact fresh draw
        return inv_sd * truncnorm_excess(a, rng)
    m = lin * inv_sd * inv_sd
    new = m + alpha * (old - m) + inv_sd * math.sqrt(1.0 - alpha * alpha) * rng.standard_normal()
    if new < 0.0:  # outside the support: rejected
        return old
    return new


def rescale_factors(A, Wt, lam_A, lam_W, rng):
    """Exact rescaling move of every factor, in place on ``A`` (D x R) and ``Wt`` (N x R).

    ``Wt`` is ``W`` transposed. A factor whose column of ``A`` or row of ``W`` sums to 0 is
    left alone (its scale is then not defined by a proper conditional; the condition is
    invariant under the move, so skipping keeps the move exact). Returns the scales ``c``
    (1 where skipped).

    Raises
    ------
    FloatingPointError
        When a factor or rate is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> A, Wt = np.ones((4, 2)), np.ones((3, 2))
    >>> P = A @ Wt.T
    >>> c = rescale_factors(A, Wt, np.ones(2), np.ones(2), np.random.default_rng(0))
    >>> bool(np.allclose(A @ Wt.T, P)), bool((c > 0).all())
    (True, True)
    """
    D, N = A.shape[0], Wt.shape[0]
    a = np.asarray(lam_A, dtype=float) * A.sum(axis=0)
    b = np.asarray(lam_W, dtype=float) * Wt.sum(axis=0)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise FloatingPointError(f"rescaling move: factor sums times rates must be finite "
                                 f"(got {a!r} and {b!r})")
    c = np.ones(a.shape)
    ok = (a > 0) & (b > 0)
    if ok.any():
        y = gig_draws(float(D - N), 2.0 * np.sqrt(a[ok] * b[ok]), rng).reshape(-1)
        c[ok] = np.sqrt(b[ok] / a[ok]) * y
    A *= c[None, :]
    Wt /= c[None, :]
    return c
