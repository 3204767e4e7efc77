"""The label orbit's sum and draw: the subset recursion against enumerating the ``K!`` orderings.

:mod:`bnmfzoo.inference.tempering._label_orbit` sums ``exp(w sum_k C[k, t(k)])`` over the
permutations ``t`` of ``K`` labels (the log permanent of ``exp(w C)``) and draws one, for every
particle at every temperature. Enumeration costs ``K! K``; the recursion over subsets of
components ``2^K K``. One run times both on the same random ``K x K`` matrices (median of 7
repeats of 200 calls), checks they agree, and prints the ratio::

    python -m benchmarks.investigations.label_orbit_recursion
"""

import math
import time

import numpy as np
from scipy.special import logsumexp

from bnmfzoo.inference.binary._reference_symmetric import label_permutations
from bnmfzoo.inference.tempering._label_orbit import log_pairing_sum, pairing_draw


def _median_us(fn, calls=200, repeats=7):
    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return float(np.median(times))


def main():
    """Print per-K microseconds of both ways and their ratio."""
    rng = np.random.default_rng(0)
    print("K  orderings  enumerate us  recursion sum us  recursion draw us  ratio (sum)")
    for K in range(3, 9):
        C = rng.normal(0.0, 1.0, (K, K))
        P = label_permutations(K, most=math.factorial(K))
        rows = np.arange(K)[None, :]

        def enumerate_sum():
            return float(logsumexp(0.5 * C[rows, P].sum(1)))

        got, want = log_pairing_sum(C, 0.5), enumerate_sum()
        assert abs(got - want) < 1e-9, (K, got, want)
        e = _median_us(enumerate_sum, calls=20 if K == 8 else 200)
        r = _median_us(lambda: log_pairing_sum(C, 0.5))
        d = _median_us(lambda: pairing_draw(C, 0.5, rng))
        print(f"{K}  {P.shape[0]:9d}  {e:12.1f}  {r:16.1f}  {d:17.1f}  {e / r:10.1f}")


if __name__ == "__main__":
    main()
