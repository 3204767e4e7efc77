"""A learned compression shape ``a``: its exact update inside the signatures' Gibbs sweep (numba).

The compressive prior of Zito & Miller (2024) has exposures ``V_kn | mu_k ~ Gamma(a, a / mu_k)``
and scales ``mu_k ~ InvGamma(a N + 1, epsilon a N)`` (shape, scale); the shape ``a`` sets both
how spread the exposures of a signature are and how hard an unused signature is compressed.
With ``a`` random, ``a ~ Gamma(c0, d0)`` (shape, rate; the authors' package uses ``c0 = d0 =
1``: ``CompressiveNMF_randa`` in ``CompressiveNMF/R/CompressiveNMF_random_a.R``, which draws
``a`` given ``mu`` and ``V`` by a ratio-of-uniforms step). Here ``a`` is drawn jointly with the
exposures, ``V`` integrated out: given the latent sources' sums ``s_kn = sum_d S_dkn`` and the
exposures' other rate ``c_kn`` (``b_V[n] + 1`` under the Poisson likelihood, whose signatures
sum to 1; ``b_V[n] + sum_d theta_dn T_dk`` under the negative binomial),

    p(a | S, mu) ∝ Gamma(a; c0, d0) prod_k InvGamma(mu_k; a N + 1, epsilon a N)
                   prod_kn Gamma(a + s_kn) / Gamma(a) r_k^a / (r_k + c_kn)^(a + s_kn),

with ``r_k = a / mu_k`` (the Gamma-Poisson marginal of ``s_kn``), and then ``V | a`` from its
Gamma conditional as before. Drawing ``a`` with ``V`` held fixed (the authors' order) is exact
too but slow to mix: the ``N (K_max - K)`` exposures of the compressed signatures, which the
data do not inform, pin ``a`` to within about ``1 / sqrt(N K_max)`` of its last value; with
them integrated out (their ``s_kn`` are 0) they weigh almost nothing.

**A fixed compression strength.** With ``strength=c`` (:func:`shape_comp`) the scales' prior is
``mu_k ~ InvGamma(c N + 1, epsilon c N)`` whatever ``a`` is (:mod:`bnmfzoo.signatures.compressive`
explains why and what ``c`` charges): ``a`` then only sets the exposures' shape, the factor
``prod_k InvGamma(mu_k; ...)`` above no longer depends on ``a`` and drops out of its conditional,
and ``mu_k``'s prior is not refreshed after ``a`` is drawn.

``a`` is updated by slice sampling on ``log a`` (Neal 2003: stepping out, then shrinkage),
which leaves this conditional invariant exactly; ``a`` is restricted to ``(1e-6, 1e4)`` (the
authors' lower bound is 1e-6; the ``Gamma(1, 1)`` prior puts 1e-6 of its mass below and
``e^-10000`` above).

References
----------
Zito, A. and Miller, J. W. (2024). Compressive Bayesian non-negative matrix factorization for
mutational signatures analysis. arXiv:2404.10974.
Neal, R. M. (2003). Slice sampling. Annals of Statistics 31, 705-767.
"""

import math

import numpy as np
from numba import njit

__all__ = ["shape_state", "SHAPE_PRIOR", "LOG_A_RANGE"]

#: the prior of a random compression shape, ``a ~ Gamma(1, 1)`` (shape, rate): the authors'
SHAPE_PRIOR = (1.0, 1.0)
#: ``log a`` is restricted to this range (a in (1e-6, 1e4))
LOG_A_RANGE = (math.log(1e-6), math.log(1e4))


def shape_state(a=1.0, epsilon=1e-3, prior=SHAPE_PRIOR):
    """The state of a random compression shape: ``[a, c0, d0, epsilon]`` (float64).

    ``a`` (the first entry) is updated in place by the sweeps; ``mu_k``'s prior is then
    ``InvGamma(a N + 1, epsilon a N)`` at the current ``a``.

    Examples
    --------
    >>> shape_state(0.5)
    array([0.5  , 1.   , 1.   , 0.001])
    """
    c0, d0 = prior
    for name, v in (("a", a), ("epsilon", epsilon), ("prior shape", c0),
                    ("prior rate", d0)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"shape_state: {name} must be positive and finite, got {v!r}")
    if not LOG_A_RANGE[0] < math.log(a) < LOG_A_RANGE[1]:
        raise ValueError(f"shape_state: a must be in (1e-6, 1e4), got {a!r}")
    return np.array([float(a), float(c0), float(d0), float(epsilon)])


def shape_comp(shape, N, strength=None):
    """The kernels' compressive state ``(1, a, a0, b0, 1, c0, d0, epsilon, c)``.

    ``shape`` is ``[a, c0, d0, epsilon]`` from :func:`shape_state`. Without ``strength``,
    ``a0 = a N + 1``, ``b0 = epsilon a N`` (following ``a``) and ``c = 0``; with ``strength=c``
    (positive), ``a0 = c N + 1``, ``b0 = epsilon c N``, fixed. With a fixed ``a`` (``shape``
    None) a strength is refused: it goes in the compressive step's ``a0`` and ``b0``.
    """
    if shape is None:
        raise ValueError("strength= goes with a random shape (shape=); with a fixed a, pass "
                         "a0 = c N + 1 and b0 = epsilon c N in compressive=")
    if not (isinstance(shape, np.ndarray) and shape.dtype == np.float64 and shape.shape == (4,)):
        raise TypeError("shape must be [a, c0, d0, epsilon] from _shape.shape_state")
    a, eps = float(shape[0]), float(shape[3])
    if strength is None:
        return np.array([1.0, a, a * N + 1.0, eps * a * N, 1.0, shape[1], shape[2], eps, 0.0])
    c = float(strength)
    if not (np.isfinite(c) and c > 0.0):
        raise ValueError(f"strength must be positive and finite, got {strength!r}")
    return np.array([1.0, a, c * N + 1.0, eps * c * N, 1.0, shape[1], shape[2], eps, c])


@njit(cache=True)
def check_shape_prior(comp):
    """Refuse a bad prior of a random ``a`` (``comp[5:8]``) or strength (``comp[8]``).

    The prior's entries must be positive and finite, the strength finite and non-negative (0:
    ``mu``'s prior follows ``a``).
    """
    if comp.shape[0] >= 8 and comp[4] > 0.0:
        for i in range(5, 8):
            if not (np.isfinite(comp[i]) and comp[i] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive prior of "
                                 "the shape a")
        if comp.shape[0] >= 9 and not (np.isfinite(comp[8]) and comp[8] >= 0.0):
            raise ValueError("the Gibbs sweep got a non-finite or negative strength")


@njit(cache=True)
def shape_logpost(eta, s_nk, mu, cr, epsilon, c0, d0, follow=True):
    """``log p(log a | S, mu)`` up to a constant, the exposures integrated out (module docstring).

    ``s_nk`` (N, K) the sources' sums per sample and signature, ``mu`` (K,), ``cr`` (N, K) the
    exposures' rate besides ``a / mu_k``; the ``Gamma(c0, d0)`` prior of ``a`` and the Jacobian
    of ``eta = log a`` included. ``follow``: ``mu``'s prior ``InvGamma(a N + 1, epsilon a N)``
    depends on ``a`` (False with a fixed strength: that factor is constant in ``a``).
    """
    if not (-13.815510557964274 < eta < 9.210340371976184):  # a outside (1e-6, 1e4)
        return -np.inf
    a = math.exp(eta)
    N, K = s_nk.shape
    lga = math.lgamma(a)
    aN = a * N
    lp = c0 * eta - d0 * a
    if follow:
        lp += K * ((aN + 1.0) * math.log(epsilon * aN) - math.lgamma(aN + 1.0))
    for k in range(K):
        r = a / mu[k]
        lr = math.log(r)
        if follow:
            lp -= (aN + 2.0) * math.log(mu[k]) + epsilon * aN / mu[k]
        for n in range(N):
            s = s_nk[n, k]
            lp += a * lr - (a + s) * math.log(r + cr[n, k])
            if s > 0.0:
                lp += math.lgamma(a + s) - lga
    return lp


@njit(cache=True)
def shape_slice(a, s_nk, mu, cr, epsilon, c0, d0, width, follow=True):
    """One slice-sampling update of ``log a`` (Neal 2003: stepping out, then shrinkage)."""
    eta0 = math.log(a)
    logy = (shape_logpost(eta0, s_nk, mu, cr, epsilon, c0, d0, follow)
            + math.log(1.0 - np.random.random()))
    left = eta0 - width * np.random.random()
    right = left + width
    for _ in range(60):
        if shape_logpost(left, s_nk, mu, cr, epsilon, c0, d0, follow) <= logy:
            break
        left -= width
    for _ in range(60):
        if shape_logpost(right, s_nk, mu, cr, epsilon, c0, d0, follow) <= logy:
            break
        right += width
    for _ in range(200):
        eta = left + (right - left) * np.random.random()
        if shape_logpost(eta, s_nk, mu, cr, epsilon, c0, d0, follow) > logy:
            return math.exp(eta)
        if eta < eta0:
            left = eta
        else:
            right = eta
    return a


@njit(cache=True)
def shape_step(comp, s_nk, mu, cr, rk, N):
    """Draw ``a`` (exposures integrated out) and refresh what follows it; return ``a``.

    ``comp = (1, a, a0, b0, 1, c0, d0, epsilon[, c])`` (the compressive state of
    :mod:`bnmfzoo.signatures._gibbs`): ``a``, ``a0 = a N + 1`` and ``b0 = epsilon a N`` are
    updated in place, as are the exposures' rates ``rk = a / mu``; with a fixed strength
    (``c > 0``) ``a0`` and ``b0`` stay.
    """
    follow = not (comp.shape[0] >= 9 and comp[8] > 0.0)
    a_c = shape_slice(comp[1], s_nk, mu, cr, comp[7], comp[5], comp[6], 0.5, follow)
    comp[1] = a_c
    if follow:
        comp[2], comp[3] = a_c * N + 1.0, comp[7] * a_c * N
    for k in range(mu.shape[0]):
        rk[k] = a_c / mu[k]
    return a_c


@njit(cache=True)
def poisson_rates(bV, K, on):
    """``cr[n, k] = b_V[n] + 1``, the exposures' rate besides ``a / mu_k`` (Poisson).

    Under the Poisson likelihood the signatures sum to 1; an empty array when ``on`` is false.
    """
    cr = np.empty((bV.shape[0] if on else 0, K))
    for n in range(cr.shape[0]):
        for k in range(K):
            cr[n, k] = bV[n] + 1.0
    return cr
