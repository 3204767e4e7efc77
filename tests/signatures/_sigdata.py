"""Small synthetic SBS96 catalogues for the signature tests (SigProfiler layout)."""

import numpy as np
import pandas as pd

from bnmfzoo.signatures.formats import CHANNELS


def two_signatures(seed=0):
    """Two well separated signatures (C>A-heavy and T>C-heavy), (2, 96), rows sum to 1."""
    rng = np.random.default_rng(seed)
    W = rng.dirichlet(np.full(96, 2.0), size=2)
    W[0, [i for i, c in enumerate(CHANNELS) if c[2:5] == "C>A"]] *= 20
    W[1, [i for i, c in enumerate(CHANNELS) if c[2:5] == "T>C"]] *= 20
    return W / W.sum(axis=1, keepdims=True)


def catalog(n_samples=30, burden=400, seed=0, W=None):
    """A DataFrame in SigProfiler's layout (``MutationType`` + one column per sample)."""
    rng = np.random.default_rng(seed)
    W = two_signatures(seed) if W is None else W
    A = rng.dirichlet(np.full(W.shape[0], 0.7), size=n_samples) * burden
    X = rng.poisson(A @ W)
    X[:, 0] += (X.sum(axis=1) == 0)  # no empty sample
    df = pd.DataFrame(X.T, columns=[f"S{i}" for i in range(n_samples)])
    df.insert(0, "MutationType", list(CHANNELS))
    return df, W
