"""``sweeps`` runs in chunks (so Ctrl-C acts within one), with the draws of one compiled call.

Chunking only splits the loop: the factors, ``mu`` and both random streams carry over between
the compiled calls, so every kept statistic is bit for bit that of a single call of the kernel
over all sweeps (``np.array_equal``), whatever the chunk length and thinning.
"""

import numpy as np
import pytest
from _sigdata import catalog

from bnmfzoo.signatures import _gibbs


def _problem():
    df, _ = catalog(n_samples=12, burden=300, seed=1)
    Y = df.iloc[:, 1:].to_numpy()
    r, c = np.nonzero(Y)
    return (r.astype(np.int64), c.astype(np.int64), Y[r, c].astype(np.int64)), Y.shape


def _start(D, N, K):
    rng = np.random.default_rng(0)
    _gibbs.seed(np.random.default_rng(5))
    return rng.dirichlet(np.ones(D), K).T.copy(), rng.gamma(1.0, 100.0, (K, N)), np.ones(K)


def _one_call(data, T, V, mu, n, thin, keep, comp):
    D, K = T.shape
    N = V.shape[1]
    G = n // thin
    out = {"s_dk": np.empty((G if "s_dk" in keep else 0, D, K)), "s_kn": np.empty((0, K, N)),
           "T": np.empty((G if "TV" in keep else 0, D, K)),
           "V": np.empty((G if "TV" in keep else 0, K, N)),
           "mu": np.empty((G if comp and "TV" in keep else 0, K))}
    _gibbs._sweeps(*data, T, V, np.ones((D, K)), 1.0, np.zeros(N), 0, n, thin if keep else 0,
                   out["s_dk"], out["s_kn"], out["T"], out["V"], _gibbs._STATE, _gibbs.TINY,
                   _gibbs.SMALL, mu, np.array([1.0, 1.0, 1.0, 1.0]) if comp else np.zeros(4),
                   out["mu"])
    return out


@pytest.mark.parametrize("keep,thin,n,comp", [(("s_dk", "TV"), 3, 20, False),
                                              ((), 1, 9, False), (("TV",), 4, 17, True)])
@pytest.mark.parametrize("chunk", [0.0, 1e9])
def test_chunked_sweeps_equal_one_compiled_call(monkeypatch, keep, thin, n, comp, chunk):
    data, (D, N) = _problem()
    T0, V0, mu0 = _start(D, N, 3)
    ref = _one_call(data, T0, V0, mu0, n, thin, keep, comp)
    T1, V1, mu1 = _start(D, N, 3)
    monkeypatch.setattr(_gibbs, "CHUNK_SECONDS", chunk)  # 0: one chunk of `thin` sweeps each
    got = _gibbs.sweeps(data, T1, V1, (1.0, 1.0, np.zeros(N)), n, keep=keep, thin=thin,
                        compressive=(1.0, 1.0, 1.0, mu1) if comp else None)
    for a, b in ((T0, T1), (V0, V1), (mu0, mu1)):
        assert np.array_equal(a, b)
    for k in ref:
        assert np.array_equal(ref[k], got[k]), k
