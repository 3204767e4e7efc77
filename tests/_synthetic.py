"""Small noisy low-rank test matrices shared by the fitter tests."""

import numpy as np


def noisy_low_rank(seed, tri=False, missing=0.2, D=30, N=20):
    """A D x N non-negative matrix of rank 3 (or F S G^T with 3 x 2 core), NaN where missing."""
    rng = np.random.default_rng(seed)
    if tri:
        X = rng.exponential(size=(D, 3)) @ rng.exponential(size=(3, 2)) \
            @ rng.exponential(size=(2, N))
    else:
        X = rng.exponential(size=(D, 3)) @ rng.exponential(size=(3, N))
    X = np.abs(X + 0.5 * rng.normal(size=X.shape))
    X[rng.random(X.shape) < missing] = np.nan
    return X


def tiny_result(path):
    """A small saved Gibbs-like result (2 chains x 20 draws of a 6 x 5, rank-2 fit) at ``path``,
    written atomically as the command line writes its results; returns the path."""
    from bnmfzoo._base.results import build_datatree
    from bnmfzoo._fitcli import atomic_write

    rng = np.random.default_rng(0)
    dt = build_datatree({"A": rng.random((2, 20, 6, 2)), "W": rng.random((2, 20, 2, 5)),
                         "tau": rng.gamma(2.0, size=(2, 20))},
                        observed_data={"X": rng.random((6, 5))},
                        attrs={"method": "gibbs", "model": "exponential_gaussian"})
    return atomic_write(dt, path)
