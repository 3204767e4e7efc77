"""Exact binomial, Gamma, multinomial and Dirichlet-multinomial draws of bounded cost (numba).

Every sampler here draws its uniforms from a xoshiro256+ stream
(:func:`~bnmfzoo.inference.kernels.streams.next_uniform` on a state array), so a chain stays a
function of its seed, and none of them loops over the count:

* :func:`binomial` (``Bin(n, p)``, ``n`` up to 2**62): inversion by geometric waiting times
  when ``n min(p, 1 - p) < 10`` (expected ``n min(p, 1 - p) + 1 <= 11`` uniforms), else
  Hörmann's (1993) transformed rejection with squeeze (BTRS: two uniforms per trial, acceptance
  above 0.79 in the limit, at least ~0.24 for small ``n p``; the acceptance test uses the exact
  log-pmf ratio through the Stirling series of ``log k!``, error below 1e-10). Expected cost
  O(1), whatever ``n``.
* :func:`log_gamma` (``log`` of a ``Gamma(a, 1)`` draw): Marsaglia & Tsang (2000), with
  ``Gamma(a) = Gamma(a + 1) U^(1 / a)`` for ``a < 1`` taken in logs, so shapes down to 1e-300
  do not underflow. Expected cost O(1) (acceptance above 0.95).
* :func:`multinomial_into`: ``Multinomial(x, w / sum w)`` by K sequential binomials, O(K).
* :func:`gamma_draws`: conjugate ``Gamma(shape, rate)`` draws from a ``numpy.random.Generator``
  (shape-rate, elementwise), floored at the smallest positive float.
* :func:`dirmult_into`: ``DirMult(x, r)`` as ``Multinomial(x, g / sum g)``, ``g_k ~ Gamma(r_k)``
  (the Dirichlet draw in logs, normalized by its maximum), O(K).

References
----------
Hörmann, W. (1993). The generation of binomial random variates. Journal of Statistical
Computation and Simulation 46, 101-110.
Marsaglia, G. & Tsang, W. W. (2000). A simple method for generating gamma variables. ACM
Transactions on Mathematical Software 26, 363-372.
Devroye, L. (1986). Non-Uniform Random Variate Generation. Springer (X.4: binomial by
geometric waiting times).
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.kernels.streams import next_uniform, open_uniform, seed_state, std_normal

__all__ = ["binomial", "log_gamma", "multinomial_into", "dirmult_into", "binomial_sample",
           "gamma_sample", "dirmult_sample", "multinomial_sample", "gamma_draws"]

_TINY = np.finfo(float).tiny
#: below this value of ``n min(p, 1 - p)`` :func:`binomial` inverts (geometric waiting times)
INVERSION_BELOW = 10.0


@numba.njit(cache=True)
def log_gamma(a, state):
    """``log G`` for ``G ~ Gamma(a, 1)``, ``a > 0`` (``-inf`` for ``a <= 0`` or NaN)."""
    if not (a > 0.0):
        return -math.inf
    boost = a < 1.0
    s = a + 1.0 if boost else a
    d = s - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = std_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        lu = math.log(open_uniform(state))
        if lu < 0.5 * x * x + d - d * v + d * math.log(v):
            out = math.log(d) + math.log(v)
            if boost:
                out += math.log(open_uniform(state)) / a
            return out


@numba.njit(cache=True)
def _stirling_tail(k):
    """``log k! - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2)``, ``k >= 0``."""
    if k <= 9.0:
        return _TAIL[int(k)]
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / (k + 1.0)


_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287])


@numba.njit(cache=True)
def _binomial_inversion(n, p, state):
    """``Bin(n, p)`` as the number of geometric waiting times that fit in ``n`` trials."""
    lq = math.log1p(-p)
    total = 0.0
    k = 0
    while True:
        g = np.ceil(math.log(open_uniform(state)) / lq)  # a float: huge waits overflow int64
        total += max(g, 1.0)
        if total > n:
            return k
        k += 1


@numba.njit(cache=True)
def _binomial_btrs(n, p, state):
    """Hörmann's (1993) BTRS for ``n p >= 10``, ``p <= 1/2``."""
    nf = float(n)
    spq = math.sqrt(nf * p * (1.0 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = nf * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1.0 - p)
    alpha = (2.83 + 5.1 / b) * spq
    m = np.floor((nf + 1.0) * p)
    lm = ((m + 0.5) * math.log((m + 1.0) / (r * (nf - m + 1.0)))
          + _stirling_tail(m) + _stirling_tail(nf - m))
    while True:
        u = next_uniform(state) - 0.5
        v = next_uniform(state)
        us = 0.5 - abs(u)
        k = np.floor((2.0 * a / us + b) * u + c)  # a float until checked
        if us >= 0.07 and v <= v_r:
            return int(k)
        if k < 0.0 or k > nf or us <= 0.0:
            continue
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = (lm + (nf + 1.0) * math.log((nf - m + 1.0) / (nf - k + 1.0))
                 + (k + 0.5) * math.log(r * (nf - k + 1.0) / (k + 1.0))
                 - _stirling_tail(k) - _stirling_tail(nf - k))
        if v <= bound:
            return int(k)


@numba.njit(cache=True)
def binomial(n, p, state):
    """One exact ``Bin(n, p)`` draw, O(1) expected cost (module docstring).

    ``n < 0`` or a ``p`` outside ``[0, 1]`` (NaN included) returns -1.
    """
    if n < 0 or not (p >= 0.0 and p <= 1.0):
        return -1
    if n == 0 or p == 0.0:
        return 0
    if p == 1.0:
        return n
    flip = p > 0.5
    q = 1.0 - p if flip else p
    if n * q < INVERSION_BELOW:
        k = _binomial_inversion(n, q, state)
    else:
        k = _binomial_btrs(n, q, state)
    return n - k if flip else k


@numba.njit(cache=True)
def multinomial_into(x, w, out, state):
    """``out += Multinomial(x, w / sum(w))`` by sequential binomials; returns a code.

    0 ok; 1 when the weights are not finite and non-negative with a positive sum.
    """
    K = w.size
    tail = 0.0
    for k in range(K):
        if not (w[k] >= 0.0 and w[k] < np.inf):
            return 1
        tail += w[k]
    if not (tail > 0.0 and tail < np.inf):
        return 1
    left = x
    for k in range(K):
        if left == 0:
            break
        if k == K - 1 or w[k] >= tail:
            z = left
        else:
            z = binomial(left, min(w[k] / tail, 1.0), state)
        out[k] += z
        left -= z
        # the rest of the weights, summed afresh (no cancellation in a running difference)
        tail = 0.0
        for j in range(k + 1, K):
            tail += w[j]
        if tail <= 0.0 and left > 0:  # round-off cannot leave counts on zero weights
            out[k] += left
            left = 0
    return 0


@numba.njit(cache=True)
def dirmult_into(x, r, g, out, state):
    """``out += DirMult(x, r)`` (``g``: scratch of size K); returns 0, or 1 on bad shapes.

    The Dirichlet weights are drawn in logs (:func:`log_gamma`); when every shape is so
    small (below ~1e-308) that all ``log g_k`` are ``-inf``, the limit of the distribution
    as the shapes go to 0 is drawn: the whole count on one component, chosen with
    probability ``r_k / sum(r)``.
    """
    K = r.size
    R = 0.0
    for k in range(K):
        if not (r[k] >= 0.0 and r[k] < np.inf):
            return 1
        R += r[k]
    if not (R > 0.0 and R < np.inf):
        return 1
    top = -math.inf
    for k in range(K):
        g[k] = log_gamma(r[k], state)
        top = max(top, g[k])
    if top == -math.inf:
        v = next_uniform(state) * R
        k = 0
        acc = r[0]
        while k < K - 1 and v >= acc:
            k += 1
            acc += r[k]
        out[k] += x
        return 0
    for k in range(K):
        g[k] = math.exp(g[k] - top)
    return multinomial_into(x, g, out, state)


# ----------------------------------------------------------------------------- test fronts

@numba.njit(cache=True)
def _binomial_many(n, p, state, out):
    for i in range(out.size):
        out[i] = binomial(n, p, state)


@numba.njit(cache=True)
def _gamma_many(a, state, out):
    for i in range(out.size):
        out[i] = math.exp(log_gamma(a, state))


@numba.njit(cache=True)
def _vector_many(x, w, dirichlet, state, out):
    g = np.empty(w.size)
    row = np.zeros(w.size)
    for i in range(out.shape[0]):
        row[:] = 0.0
        if dirichlet:
            code = dirmult_into(x, w, g, row, state)
        else:
            code = multinomial_into(x, w, row, state)
        if code:
            return code
        for k in range(w.size):
            out[i, k] = row[k]
    return 0


def _check_count(name, x):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < 2**62:
        raise ValueError(f"{name} must be an integer in [0, 2**62), got {x!r}")
    return int(x)


def _check_weights(name, w):
    w = np.ascontiguousarray(w, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) \
            or not w.sum() > 0:
        raise ValueError(f"{name} must be a non-empty vector of finite non-negative numbers "
                         f"with a positive sum")
    return w


def binomial_sample(n, p, size, rng):
    """``size`` draws of ``Bin(n, p)`` (:func:`binomial`; for tests and checks).

    Examples
    --------
    >>> import numpy as np
    >>> x = binomial_sample(2**31 - 1, 0.25, 1000, np.random.default_rng(0))
    >>> bool(abs(x.mean() / (2**31 - 1) - 0.25) < 1e-5)
    True
    """
    n = _check_count("n", n)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    out = np.empty(int(size), np.int64)
    _binomial_many(n, float(p), seed_state(rng), out)
    return out


def gamma_sample(a, size, rng):
    """``size`` draws of ``Gamma(a, 1)`` (:func:`log_gamma`; for tests and checks)."""
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"a must be a finite positive number, got {a!r}")
    out = np.empty(int(size))
    _gamma_many(float(a), seed_state(rng), out)
    return out


def _vector_sample(x, weights, name, dirichlet, size, rng):
    x = _check_count("x", x)
    weights = _check_weights(name, weights)
    out = np.empty((int(size), weights.size))
    _vector_many(x, weights, dirichlet, seed_state(rng), out)
    return out


def multinomial_sample(x, w, size, rng):
    """``size`` draws (rows) of ``Multinomial(x, w / sum(w))`` (:func:`multinomial_into`)."""
    return _vector_sample(x, w, "w", False, size, rng)


def dirmult_sample(x, r, size, rng):
    """``size`` draws (rows) of ``DirMult(x, r)`` (:func:`dirmult_into`)."""
    return _vector_sample(x, r, "r", True, size, rng)


def gamma_draws(rng, shape, rate):
    """Draws of ``Gamma(shape, rate)`` (elementwise, shape-rate) from a numpy Generator.

    A draw with a small shape can underflow to 0, which would make a count (or a rate)
    impossible: draws are floored at the smallest positive float.

    Examples
    --------
    >>> import numpy as np
    >>> x = gamma_draws(np.random.default_rng(0), np.full(20000, 3.0), 2.0)
    >>> bool(abs(x.mean() - 1.5) < 0.03)
    True
    """
    return np.maximum(rng.gamma(shape, 1.0 / rate), _TINY)
