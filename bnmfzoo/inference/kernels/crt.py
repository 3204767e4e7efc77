"""Exact Chinese-restaurant-table draws ``CRT(n, r)`` at a cost far below ``n`` (numba).

``CRT(n, r) = sum_{i < n} B_i`` with independent ``B_i ~ Bernoulli(p_i)``, ``p_i = r / (r + i)``
(the number of tables ``n`` customers open in a Chinese restaurant process of concentration
``r``; Zhou & Carin 2015). The direct draw costs one uniform per customer. :func:`crt` covers
``[1, n)`` (customer 0 always opens a table) by blocks ``[a, a + m)`` on which ``p_i`` lies in
``[p_lo, p_hi] = [p_{a+m-1}, p_a]`` and draws the block's Bernoullis from the same uniforms
``U_i`` coarsely first:

* ``L = #{U_i < p_lo}`` (all successes) and ``C = #{p_lo <= U_i < p_hi}`` (the candidates) are
  multinomial ``(m; p_lo, p_hi - p_lo)``: two binomials
  (:func:`~bnmfzoo.inference.kernels.variates.binomial`, O(1) each);
* given ``C``, the candidates sit at a uniformly random ``C``-subset of the block (Floyd's
  algorithm, ``O(C^2)``) and each, with its ``U_i`` uniform on ``[p_lo, p_hi)``, succeeds when
  ``U_i < p_i``: with probability ``(p_i - p_lo) / (p_hi - p_lo)``.

The block's successes are ``L`` plus the candidates that succeed: the same law as the direct
sum. The block length ``m`` is the largest with ``m (p_hi - p_lo) <= 1`` (at most one candidate
expected per block): ``m (m - 1) r <= (r + a)(r + a + m - 1)``, i.e. ``m ~ (r + a) / sqrt(r)``.

**Cost.** ``O(B)`` expected for ``B`` blocks, each two binomials plus ``O(C^2)`` for its
``C`` candidates (``E[C] <= CANDIDATES``). The blocks grow geometrically, by a factor
``~1 + sqrt(CANDIDATES / r)`` (by ``~CANDIDATES / r`` for ``r < 1``), so ``B`` is about
``sqrt(r / CANDIDATES) log(1 + n / r)`` for ``1 < r < n^2``, ``O(log n / log(1 / r))`` for
small ``r`` and 1 for ``r >= n^2``: at most ~2e4 for 32-bit counts. Measured for
``n = 2**31 - 1`` (one core, ``crt_sample``): r = 1e-3: 3 blocks, 7 us per draw; r = 1: 12,
7 us; r = 1e3: 231, 46 us; r = 1e6: 3,837, 1.5 ms; r = 5e8: 18,635, 8.7 ms; r = 2e9: 16,309,
6.9 ms. The direct draw costs ~5 ns per customer: ~10 s at this ``n``.

References
----------
Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE TPAMI
37(2), 307-320.
Bentley, J. & Floyd, R. (1987). Programming pearls: a sample of brilliance. Communications of
the ACM 30(9), 754-757 (Floyd's sampling of a random subset).
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.kernels.streams import next_uniform, seed_state
from bnmfzoo.inference.kernels.variates import binomial

__all__ = ["crt", "crt_direct", "crt_sample", "block_length", "CANDIDATES"]

#: expected candidates per block at most (``m (p_hi - p_lo) <= CANDIDATES``): 4 measured
#: fastest (1 costs ~1.7x more blocks of two binomials each; 16 pays for the candidates)
CANDIDATES = 4.0


@numba.njit(cache=True)
def block_length(a, r, n):
    """The length of the block starting at customer ``a >= 1`` (at most ``n - a``)."""
    ra = r + a
    B = r + CANDIDATES * ra
    m = (B + math.sqrt(B * B + 4.0 * r * CANDIDATES * ra * (ra - 1.0))) / (2.0 * r)
    m = np.floor(m)  # a float: m is inf for r below ~1e-300
    if not (m >= 1.0):
        m = 1.0
    rest = float(n - a)
    return int(min(m, rest))


@numba.njit(cache=True)
def crt_direct(n, r, state):
    """``CRT(n, r)`` one Bernoulli per customer: O(n) (the small-count path)."""
    tables = 0
    for i in range(n):
        if next_uniform(state) * (r + i) < r:
            tables += 1
    return tables


@numba.njit(cache=True)
def crt(n, r, state, work):
    """One exact ``CRT(n, r)`` draw by blocks (module docstring); ``work[0] += blocks``.

    ``n >= 0``, ``r > 0`` finite, else -1.
    """
    if n < 0 or not (r > 0.0 and r < np.inf):
        return -1
    if n == 0:
        return 0
    tables = 1  # customer 0: p_0 = 1
    a = 1
    buf = np.empty(16, np.int64)
    blocks = 0
    while a < n:
        m = block_length(a, r, n)
        blocks += 1
        p_hi = r / (r + a)
        p_lo = r / (r + (a + m - 1))
        L = binomial(m, p_lo, state)
        tables += L
        width = p_hi - p_lo
        if L < m and width > 0.0 and p_lo < 1.0:
            C = binomial(m - L, min(width / (1.0 - p_lo), 1.0), state)
            if C > buf.size:
                buf = np.empty(2 * C, np.int64)
            for s in range(C):  # Floyd: a uniform C-subset of [0, m)
                j = m - C + s
                t = min(int(next_uniform(state) * (j + 1)), j)
                for q in range(s):
                    if buf[q] == t:
                        t = j
                        break
                buf[s] = t
            for s in range(C):
                i = a + buf[s]
                if next_uniform(state) * width < r / (r + i) - p_lo:
                    tables += 1
        a += m
    work[0] += blocks
    return tables


@numba.njit(cache=True)
def _crt_many(n, r, threshold, state, out, work):
    for i in range(out.size):
        if n <= threshold:
            out[i] = crt_direct(n, r, state)
        else:
            out[i] = crt(n, r, state, work)


def crt_sample(n, r, size, rng, *, threshold=-1):
    """``size`` draws of ``CRT(n, r)``: by blocks when ``n > threshold`` (default: always).

    Returns ``(draws, mean number of blocks per draw)``.

    Examples
    --------
    >>> import numpy as np
    >>> x, blocks = crt_sample(2**31 - 1, 1.0, 100, np.random.default_rng(0))
    >>> bool(abs(x.mean() - 22.0) < 1.5), blocks < 200   # mean sum 1 / (1 + i) ~ 22.0
    (True, True)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n < 2**62:
        raise ValueError(f"n must be an integer in [0, 2**62), got {n!r}")
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"r must be a finite positive number, got {r!r}")
    out = np.empty(int(size), np.int64)
    work = np.zeros(1, np.int64)
    _crt_many(int(n), float(r), int(threshold), seed_state(rng), out, work)
    return out, float(work[0]) / max(int(size), 1)
