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
