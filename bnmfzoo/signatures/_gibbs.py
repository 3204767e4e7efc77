"""The latent-source Gibbs sweep of Poisson NMF that Chib's estimator runs (numba).

Model: each signature (column of ``T``) on the simplex, ``T_k ~ Dirichlet(alpha)``, exposures
``V_kn ~ Gamma(a_V, b_V[n])`` (shape, rate), ``Y_dn ~ Poisson((T V)_dn)``; augmented by the
sources ``S_dkn``, the multinomial split of ``Y_dn`` over the signatures (Cemgil 2009's
augmentation; with columns of ``T`` summing to 1, ``V_kn`` is the expected number of mutations
of signature ``k`` in sample ``n`` and the scale of ``T`` is no longer a free direction). One
sweep draws ``S | T, V`` (sequential binomials, cell by nonzero cell), then ``T_k | S``
(``Dirichlet(alpha + s_dk)``; with the rows before ``fixed_rows`` held fixed, the other rows
share the remaining mass as ``Dirichlet(alpha + s_dk)`` over them), then ``V_kn | S ~
Gamma(a_V + s_kn, b_V[n] + 1)``, and returns the source sums ``s_dk = sum_n S_dkn`` and
``s_kn = sum_d S_dkn``: the sufficient statistics of the full conditionals Chib's ordinates
average.

A plain kernel of its own (not the count wing's tiled sweep) because Chib needs these
statistics and runs with some rows of ``T`` held fixed. Random numbers come from numba's
generator, seeded from the caller's :class:`numpy.random.Generator` by :func:`seed`, so a
seed gives the same numbers every time.
"""

import numpy as np
from numba import njit

__all__ = ["seed", "sweeps"]


@njit(cache=True)
def _seed(value):
    np.random.seed(value)


def seed(rng):
    """Seed numba's generator from ``rng`` (a :class:`numpy.random.Generator`)."""
    _seed(int(rng.integers(2**31 - 1)))


@njit(cache=True)
def _split(rows, cols, counts, T, V, s_dk, s_kn):
    K = T.shape[1]
    s_dk[:] = 0.0
    s_kn[:] = 0.0
    p = np.empty(K)
    for e in range(counts.shape[0]):
        d, n, rem = rows[e], cols[e], counts[e]
        tot = 0.0
        for k in range(K):
            p[k] = T[d, k] * V[k, n]
            tot += p[k]
        for k in range(K - 1):
            if rem == 0:
                break
            q = p[k] / tot if tot > 0.0 else 1.0
            q = min(max(q, 0.0), 1.0)
            s = np.random.binomial(rem, q)
            s_dk[d, k] += s
            s_kn[k, n] += s
            rem -= s
            tot -= p[k]
        if rem > 0:
            s_dk[d, K - 1] += rem
            s_kn[K - 1, n] += rem


@njit(cache=True)
def _sweeps(rows, cols, counts, T, V, alpha, aV, bV, fixed_rows, n_sweeps, keep_every,
            out_sdk, out_skn, out_T, out_V):
    """``n_sweeps`` sweeps in place; the statistics of every sweep go to the ``out_*``."""
    D, K = T.shape
    N = V.shape[1]
    for e in range(counts.shape[0]):
        if not (counts[e] >= 0):
            raise ValueError("the Gibbs sweep got a negative or non-finite count")
    for d in range(D):
        for k in range(K):
            if not (np.isfinite(T[d, k]) and T[d, k] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive factor")
    for k in range(K):
        for n in range(N):
            if not (np.isfinite(V[k, n]) and V[k, n] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive factor")
    s_dk = np.empty((D, K))
    s_kn = np.empty((K, N))
    g = np.empty(D)
    for it in range(n_sweeps):
        _split(rows, cols, counts, T, V, s_dk, s_kn)
        if fixed_rows < D:
            for k in range(K):
                fixed = 0.0
                for d in range(fixed_rows):
                    fixed += T[d, k]
                tot = 0.0
                for d in range(fixed_rows, D):
                    g[d] = np.random.gamma(alpha + s_dk[d, k], 1.0)
                    tot += g[d]
                for d in range(fixed_rows, D):
                    T[d, k] = max((1.0 - fixed) * g[d] / tot, 1e-300)
        for k in range(K):
            for n in range(N):
                V[k, n] = max(np.random.gamma(aV + s_kn[k, n], 1.0 / (bV[n] + 1.0)), 1e-300)
        if keep_every > 0 and it % keep_every == 0:
            j = it // keep_every
            if j < out_sdk.shape[0]:
                out_sdk[j] = s_dk
            if j < out_skn.shape[0]:
                out_skn[j] = s_kn
            if j < out_T.shape[0]:
                out_T[j] = T
                out_V[j] = V


def sweeps(data, T, V, prior, n_sweeps, *, fixed_rows=0, keep=(), thin=1):
    """Run ``n_sweeps`` sweeps on ``T, V`` in place; return the kept statistics.

    Parameters
    ----------
    data : tuple
        ``(rows, cols, counts)`` of the nonzero cells of ``Y`` (int64, int64, int64).
    T, V : numpy.ndarray
        Current factors (D, K), columns summing to 1, and (K, N), float64, positive; updated
        in place.
    prior : tuple
        ``(alpha, a_V, b_V)`` with ``b_V`` an array of length N.
    n_sweeps : int
    fixed_rows : int
        Rows ``0 .. fixed_rows - 1`` of ``T`` stay fixed (``D``: only ``V`` moves).
    keep : tuple of str
        Which of ``"s_dk"``, ``"s_kn"``, ``"TV"`` to keep, every ``thin`` sweeps.

    Returns
    -------
    dict
        ``s_dk`` (G, D, K), ``s_kn`` (G, K, N), ``T`` (G, D, K), ``V`` (G, K, N) for the kinds
        kept (empty arrays otherwise).
    """
    rows, cols, counts = data
    D, K = T.shape
    N = V.shape[1]
    G = n_sweeps // thin if keep else 0
    out = {
        "s_dk": np.empty((G if "s_dk" in keep else 0, D, K)),
        "s_kn": np.empty((G if "s_kn" in keep else 0, K, N)),
        "T": np.empty((G if "TV" in keep else 0, D, K)),
        "V": np.empty((G if "TV" in keep else 0, K, N)),
    }
    alpha, aV, bV = prior
    _sweeps(rows, cols, counts, T, V, float(alpha), float(aV),
            np.ascontiguousarray(bV, dtype=float), int(fixed_rows), int(n_sweeps),
            int(thin) if keep else 0, out["s_dk"], out["s_kn"], out["T"], out["V"])
    return out
