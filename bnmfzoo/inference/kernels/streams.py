"""Random streams inside numba: xoshiro256+ states seeded from a ``numpy.random.Generator``.

A state is four ``uint64`` words (an array, updated in place); :func:`seed_state` draws it from
the chain's generator, so a chain stays a function of its seed. :func:`next_uniform` gives a
float64 uniform on ``[0, 1)`` (the top 53 bits), :func:`open_uniform` one on ``(0, 1]`` (safe
under ``log``), :func:`std_normal` a standard normal (Box-Muller). A kernel that needs many
draws in a tight loop holds the state in four scalars and steps it with
:func:`xoshiro_step` (:func:`to_unit` turns an output into a uniform).

References
----------
Blackman, D. & Vigna, S. (2021). Scrambled linear pseudorandom number generators. ACM
Transactions on Mathematical Software 47(4), 36.
Box, G. E. P. & Muller, M. E. (1958). A note on the generation of random normal deviates.
Annals of Mathematical Statistics 29, 610-611.
"""

import math

import numba
import numpy as np

__all__ = ["seed_state", "next_uniform", "open_uniform", "std_normal", "xoshiro_step",
           "to_unit"]


@numba.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, inline="always")
def xoshiro_step(s0, s1, s2, s3):
    """One xoshiro256+ step on a state held in four scalars: ``(output, s0, s1, s2, s3)``.

    :func:`next_uniform` wraps it for a state array; a split loop keeps the scalars in
    registers.
    """
    result = s0 + s3
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@numba.njit(cache=True, inline="always")
def to_unit(result):
    """The top 53 bits of a xoshiro output as a float64 on ``[0, 1)``.

    Converted through int64 (exact below 2**53): the unsigned conversion costs a branch
    sequence on x86-64 without AVX-512.
    """
    return np.float64(np.int64(result >> np.uint64(11))) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, inline="always")
def next_uniform(s):
    """xoshiro256+ step on a state array (updated in place); a float64 uniform on ``[0, 1)``."""
    result, s[0], s[1], s[2], s[3] = xoshiro_step(s[0], s[1], s[2], s[3])
    return to_unit(result)


@numba.njit(cache=True, inline="always")
def open_uniform(state):
    """A uniform on ``(0, 1]`` (never 0: safe under ``log``)."""
    return 1.0 - next_uniform(state)


@numba.njit(cache=True)
def std_normal(state):
    """A standard normal (Box-Muller, one of the pair)."""
    u = open_uniform(state)
    v = next_uniform(state)
    return math.sqrt(-2.0 * math.log(u)) * math.cos(2.0 * math.pi * v)


def seed_state(rng):
    """A fresh xoshiro256+ state (4 uint64, not all zero) drawn from a numpy Generator.

    Every word takes all 64 bits: the generator's first output is ``s0 + s3``, which is uniform
    only when both words are; words below 2**63 made the first uniform of every fresh state
    the mean of two uniforms (triangular), which biased the first unit of each split.

    Examples
    --------
    >>> import numpy as np
    >>> s = seed_state(np.random.default_rng(0))
    >>> s.dtype.name, s.shape, bool(s.any())
    ('uint64', (4,), True)
    """
    while True:
        s = rng.integers(0, 2**64, size=4, dtype=np.uint64)
        if s.any():
            return s
