"""Normal scores of Gamma variables and the copula's surrogate gradient, compiled (numeric core).

:meth:`bnmfzoo.inference.kernels.gamma_copula.GammaCopula.surrogate_grad` in numba, for the
leapfrog of :mod:`bnmfzoo.inference.counts.tempering._hmc_copula`, which calls it at every step
(the NumPy form costs as much as the likelihood's gradient on ESCC SBS96 at K = 4, most of it
call overhead). The same field: Wilson-Hilferty scores ``z = ((r x / a)^(1/3) - 1 + 1 / (9 a))
3 sqrt(a)`` for shapes from :data:`~bnmfzoo.inference.kernels.gamma_copula.WH_MIN_SHAPE` on
(Wilson & Hilferty 1931), exact scores ``Phi^-1(F(x))`` below it, from whichever tail is smaller,
inside ``[-Z_MAX, Z_MAX]``, and the gradient ``-(C^-1 z - z)_i dz_i / d theta_i`` with ``C^-1``
by Woodbury's identity. The exact scores use the regularized incomplete gamma function by its
series and continued fraction (Press et al. 2007, Sec. 6.2) and the normal quantile by Acklam's
rational approximation refined by one Halley step on ``erfc`` (relative error near the double
precision); they agree with SciPy's ``gammainc``/``ndtri`` to about 1e-12
(``tests/tempering/test_copula_kernel.py``). The field is only the kicks' (the Metropolis test
uses the copula's exact density, SciPy's), so a difference in the last digits changes the
acceptance, never the target.

References
----------
Press, W. H., Teukolsky, S. A., Vetterling, W. T. & Flannery, B. P. (2007). Numerical Recipes,
3rd ed., Sec. 6.2 (incomplete gamma function). Cambridge University Press.
Acklam, P. J. (2003). An algorithm for computing the inverse normal cumulative distribution
function (rational approximation with a refinement step).
Wilson, E. B. & Hilferty, M. M. (1931). The distribution of chi-square. PNAS 17(12), 684-688.
"""

import math

import numba
import numpy as np

__all__ = ["gamma_p_q", "normal_quantile", "surrogate_field"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)
_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 1000
#: ``theta`` outside ``(log of the smallest normal double, log of the largest)``: ``exp`` is not
#: finite and positive
_LOG_TINY, _LOG_MAX = math.log(np.finfo(float).tiny), math.log(np.finfo(float).max)

_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)


@numba.njit(cache=True)
def gamma_p_q(a, x):
    """``(P(a, x), Q(a, x))``, the regularized lower and upper incomplete gamma functions.

    The series below ``x < a + 1``, the continued fraction (modified Lentz) above, each giving
    the smaller tail directly. NaN for ``a <= 0``, ``x < 0`` or non-finite input.

    Examples
    --------
    >>> p, q = gamma_p_q(2.5, 1.0)
    >>> from scipy.special import gammainc
    >>> bool(abs(p - gammainc(2.5, 1.0)) < 1e-14 and abs(p + q - 1.0) < 1e-14)
    True
    """
    if not (a > 0.0 and x >= 0.0 and math.isfinite(a) and x < math.inf):
        return math.nan, math.nan
    if x == 0.0:
        return 0.0, 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = 1.0 / a
        total = term
        ap = a
        for _ in range(_MAX_TERMS):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * _EPS:
                break
        p = total * math.exp(log_front)
        return p, 1.0 - p
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    q = math.exp(log_front) * h
    return 1.0 - q, q


@numba.njit(cache=True)
def normal_quantile(p):
    """``Phi^-1(p)`` for ``0 < p < 1`` (``-inf`` at 0, ``inf`` at 1, NaN outside).

    Examples
    --------
    >>> from scipy.special import ndtri
    >>> bool(abs(normal_quantile(1e-10) - ndtri(1e-10)) < 1e-12)
    True
    """
    if not (p >= 0.0 and p <= 1.0):
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    low = 0.02425
    if p < low:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
             / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    elif p <= 1.0 - low:
        q = p - 0.5
        r = q * q
        x = ((((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
             / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0))
    else:
        q = math.sqrt(-2.0 * math.log1p(-p))
        x = -((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
              / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    # one Halley step on Phi(x) - p (Phi from erfc, accurate in the lower tail)
    e = 0.5 * math.erfc(-x / _SQRT2) - p
    u = e * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    den = 1.0 + 0.5 * x * u
    if not (den != 0.0 and math.isfinite(u)):  # no division by zero in compiled code
        return x
    return x - u / den


@numba.njit(cache=True)
def _exact_score(a, rx, z_max):
    """``Phi^-1(F(x))`` of ``Gamma(a, 1)`` at ``rx``, from the smaller tail, clipped; 0 on NaN."""
    p, q = gamma_p_q(a, rx)
    if p > 0.5:
        z = -normal_quantile(q)
    else:
        z = normal_quantile(p)
    if math.isnan(z):
        return 0.0
    return min(max(z, -z_max), z_max)


@numba.njit(cache=True)
def surrogate_field(theta, a, r, log_norm_a, wilson_hilferty, log_ra, sqrt_a, blocks, binv,
                    H, G, z_max, out):
    """:meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.surrogate_grad` into ``out``.

    ``theta (d,)``: ``log x``; ``a, r, log_norm_a (d,)``: the marginals' shapes, rates and
    ``a log r - log Gamma(a)``; ``wilson_hilferty (d,)``: which entries take the
    Wilson-Hilferty score; ``log_ra, sqrt_a (d,)``: ``log(r / a)`` and ``sqrt(a)``;
    ``blocks (m, k)`` and ``binv (m, k, k)``: ``B^-1`` by block; ``H (d, s)`` = ``B^-1 U`` and
    ``G (d, s)`` = ``B^-1 U (I + U' B^-1 U)^-1``, so that ``C^-1 z = B^-1 z - G (H' z)``.
    Returns False (``out`` undefined) where ``exp(theta)`` is not a finite, positive normal
    double.
    """
    dim = theta.size
    z = np.empty(dim)
    dz = np.empty(dim)
    for i in range(dim):
        if not (theta[i] < _LOG_MAX and theta[i] > _LOG_TINY):
            return False
        if wilson_hilferty[i]:
            y = math.exp((theta[i] + log_ra[i]) / 3.0)  # (r x / a)^(1/3)
            z[i] = (y - 1.0 + 1.0 / (9.0 * a[i])) * 3.0 * sqrt_a[i]
            dz[i] = y * sqrt_a[i]
        else:
            x = math.exp(theta[i])
            zi = _exact_score(a[i], r[i] * x, z_max)
            z[i] = zi
            log_fx = log_norm_a[i] + a[i] * theta[i] - r[i] * x
            dz[i] = math.exp(min(log_fx + 0.5 * zi * zi + _HALF_LOG_2PI, 700.0))
    m, k = blocks.shape
    for b in range(m):  # out = B^-1 z, block by block
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += binv[b, i, j] * z[blocks[b, j]]
            out[blocks[b, i]] = acc
    s = H.shape[1]
    if s:
        u = np.zeros(s)
        for i in range(dim):
            for f in range(s):
                u[f] += H[i, f] * z[i]
        for i in range(dim):
            acc = 0.0
            for f in range(s):
                acc += G[i, f] * u[f]
            out[i] -= acc
    for i in range(dim):
        out[i] = -(out[i] - z[i]) * dz[i]
    return True
