"""Rank-1 evidence problems with an exact log Z by quadrature (shared by the tempering tests).

Both problems are a 1 x 2 matrix at rank 1, so there is no label switching and the evidence is
a one- or two-dimensional integral that ``scipy.integrate.quad`` computes to near machine
precision:

* Poisson with ``Gamma(1, r)`` priors on ``a`` and ``w_j``: ``w_j`` integrates in closed form,
  ``Z = int r e^(-r a) prod_j r a^x_j / (r + a)^(x_j + 1) da``.
* Exponential-Gaussian with rates 1 and ``sigma`` fixed: ``Z = int e^-a prod_j int e^-w
  N(x_j; a w, sigma^2) dw da`` (nested quadrature).
"""

import math

import numpy as np
from scipy import integrate, stats

#: the Poisson problem of ``test_reference_path.py`` / ``test_reference_tempering.py``: counts
#: (12, 5) and rate 0.3 put the posterior far from the prior
POISSON_X, POISSON_RATE = np.array([12, 5]), 0.3
#: the exponential-Gaussian problem shared by the SMC, bridge and reference-path tests
GAUSSIAN_X, GAUSSIAN_SIGMA = np.array([1.2, 0.4]), 0.5


def poisson_rank1_log_z(x=POISSON_X, r=POISSON_RATE):
    """Exact log evidence of ``poisson(x[None, :], 1, a=1.0, b=r)`` (``x`` of length 2)."""
    x = np.asarray(x)
    f = lambda a: r * math.exp(-r * a) * np.prod(r * a**x / (r + a) ** (x + 1))  # noqa: E731
    return math.log(integrate.quad(f, 0, np.inf)[0])


def gaussian_rank1_log_z(x=GAUSSIAN_X, sig=GAUSSIAN_SIGMA):
    """Exact log evidence of ``exponential_gaussian(x[None, :], 1, sigma=sig, lambda_=1.0)``."""
    x = np.asarray(x)

    def inner(a, xj):
        return integrate.quad(lambda w: math.exp(-w) * stats.norm.pdf(xj, a * w, sig), 0,
                              np.inf)[0]

    return math.log(integrate.quad(lambda a: math.exp(-a) * inner(a, x[0]) * inner(a, x[1]),
                                   0, np.inf)[0])


def poisson_rung_grid(x, b, aA, rA, aW, rW, n=4000):
    """The exact marginal of ``A`` under a rank-1, 1 x 2 Poisson rung, on a log-spaced grid.

    The rung is ``Gamma(A; aA, rA) prod_j Gamma(W_j; aW_j, rW_j) * prod_j Poisson(x_j | A
    W_j)^b`` (scalars ``aA, rA``, length-2 ``aW, rW``); the ``W_j`` integrate out in closed form.
    Returns the grid and the probabilities of its cells.
    """
    x, aW, rW = np.asarray(x, float), np.asarray(aW, float), np.asarray(rW, float)
    g = np.exp(np.linspace(-14.0, 6.0, n))
    lp = ((aA - 1.0 + b * x.sum()) * np.log(g) - rA * g
          - np.sum((aW + b * x)[None, :] * np.log(rW[None, :] + b * g[:, None]), 1))
    w = np.exp(lp - lp.max()) * g  # density in log A
    return g, w / w.sum()


def poisson_rung_draws(rng, n, x, b, aA, rA, aW, rW):
    """``n`` exact draws ``(A (n,), W (n, 2))`` of the rung of :func:`poisson_rung_grid`."""
    x, aW, rW = np.asarray(x, float), np.asarray(aW, float), np.asarray(rW, float)
    g, w = poisson_rung_grid(x, b, aA, rA, aW, rW)
    A = np.exp(np.interp(rng.uniform(size=n), np.cumsum(w), np.log(g)))
    W = rng.gamma(aW[None, :] + b * x[None, :], 1.0 / (rW[None, :] + b * A[:, None]))
    return A, W


def poisson_rung_cdfs(x, b, aA, rA, aW, rW):
    """The exact marginal CDFs of ``A``, ``W_1`` and ``W_2`` under the rung."""
    x, aW, rW = np.asarray(x, float), np.asarray(aW, float), np.asarray(rW, float)
    g, w = poisson_rung_grid(x, b, aA, rA, aW, rW, 1500)
    cdf_a = lambda v: np.interp(np.log(v), np.log(g), np.cumsum(w))  # noqa: E731

    def cdf_w(j):
        sh, rt = aW[j] + b * x[j], rW[j] + b * g
        return lambda v: np.sum(w[None, :] * stats.gamma.cdf(
            np.asarray(v)[:, None], sh, scale=1.0 / rt[None, :]), 1)

    return cdf_a, cdf_w(0), cdf_w(1)


#: log Z of NB rank 1 on the 1 x 1 matrix [[6]], A, W ~ Gamma(2, 1), alpha ~ Gamma(4, 1):
#: quadrature on a 3-D log grid (140^3 on [-9, 4]^2 x [-4, 4], 200^3 and 260^3 on [-12, 6]^2
#: x [-6, 6] agree to 6e-10; :func:`nb_cell_log_z`)
NB_CELL_LOG_Z = -3.04184625


def nb_cell_log_z(x=6, a=2.0, b=1.0, a0=4.0, b0=1.0, n=140):
    """Log evidence of :data:`NB_CELL_LOG_Z`'s problem on a log grid of ``n^3`` points."""
    from scipy.special import gammaln, logsumexp

    g, h = np.linspace(-9.0, 4.0, n), np.linspace(-4.0, 4.0, n)
    u, v, w = np.meshgrid(g, g, h, indexing="ij")
    A, W, al = np.exp(u), np.exp(v), np.exp(w)
    r = al * A * W

    def lg(y, ly, s, t):  # log Gamma(s, t) density of y, times the Jacobian y of the log grid
        return s * math.log(t) - gammaln(s) + s * ly - t * y

    logd = (lg(A, u, a, b) + lg(W, v, a, b) + lg(al, w, a0, b0) + gammaln(x + r) - gammaln(r)
            - gammaln(x + 1.0) + r * np.log(al / (1 + al)) - x * np.log1p(al))
    return float(logsumexp(logd) + math.log((g[1] - g[0]) ** 2 * (h[1] - h[0])))
