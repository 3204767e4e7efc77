"""Does overrelaxing the Gaussian reference-path sweep give the tempering round trips? (experiment)

Run with::

    python -m benchmarks.investigations.gaussian_overrelaxed_reference_sweep \
        --data drug_sensitivity/ccle/ic50.txt --rank 3 --check reference_pt \
        --pt-trips 15 --pt-scans 2500 --moves 2

``bnmfzoo masses`` with the compiled Gram halves of the exponential-Gaussian reference-path
sweep replaced by the same updates overrelaxed (``alpha`` = ``OVERRELAX`` = -0.9, the
within-mode move of :func:`~bnmfzoo.inference.gaussian.gibbs._mixing.overrelaxed_scaled`; each
update still leaves its truncated-normal conditional invariant). Everything else is the command
as shipped. On CCLE IC50 at rank 3 the tempering made 1, 0, 0 and 1 round trips in 2,500 kept
scans (5, 2, 4 and 1 with the plain sweep), so overrelaxation is not what the Gaussian
tempering lacks (``docs/results/masses_copula_reference_3.md`` section 41).
"""

import sys

import numba
import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo.inference.gaussian.gibbs._mixing import OVERRELAX, overrelaxed_scaled
from bnmfzoo.inference.gaussian.priors._prior_core import _pattern_grams


@numba.njit(cache=False)
def _rows(U, C, G, pattern_of, tau, Q, Lin, rng, alpha):
    n, R = U.shape
    t = np.empty(R)
    total = 0.0
    for i in range(n):
        g = G[pattern_of[i]]
        u = U[i]
        c = C[i]
        for k in range(R):
            s = 0.0
            for m in range(R):
                s += g[k, m] * u[m]
            t[k] = s
        for k in range(R):
            old = u[k]
            prec = tau * g[k, k] + Q[i, k]
            inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (np.inf if prec <= 0.0 else np.nan)
            lin = tau * (c[k] - t[k] + old * g[k, k]) + Lin[i, k]
            new = overrelaxed_scaled(old, lin, inv_sd, -Lin[i, k], alpha, rng)
            d = new - old
            if d != 0.0:
                for m in range(R):
                    t[m] += d * g[k, m]
                u[k] = new
        for k in range(R):
            total += u[k] * (t[k] - 2.0 * c[k])
    return total


@numba.njit(cache=False)
def _half(U, V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign,
          pattern_of, xm, tau, Q, Lin, rng, alpha):
    G = _pattern_grams(V, varying, always, order, parent, delta_ptr, delta_pos, delta_sign)
    C = xm @ V.T
    return _rows(U, C, G, pattern_of, tau, Q, Lin, rng, alpha)


def _gram_halves(A, Wt, row_arrays, col_arrays, tau, QA, LA, QW, LW, rng):
    out = _half(A, np.ascontiguousarray(Wt.T), *row_arrays, tau, QA, LA, rng, OVERRELAX)
    if not np.all(np.isfinite(A)):
        return 1, out
    out = _half(Wt, np.ascontiguousarray(A.T), *col_arrays, tau, QW, LW, rng, OVERRELAX)
    if not np.all(np.isfinite(Wt)):
        return 2, out
    return 0, out


def main(argv=None):
    """The command with the overrelaxed reference-path sweep."""
    from bnmfzoo._cli.masses import main as masses_main
    from bnmfzoo.inference.gaussian.modes import _reference_gaussian as rg

    plain, rg._gram_halves = rg._gram_halves, _gram_halves
    try:
        return masses_main(argv)
    finally:
        rg._gram_halves = plain


if __name__ == "__main__":
    sys.exit(main())
