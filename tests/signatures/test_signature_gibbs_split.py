"""The multinomial split of the signatures' Gibbs sweep: each of its three paths (a linear
search for a few counts, an alias table for medium cells, conditional binomials for large ones)
draws exactly ``Multinomial(c, p)`` with ``p_k ~ T_dk V_kn``."""

import numpy as np
import pytest

from bnmfzoo.signatures import _gibbs


def _split_many(count, T, V, n_rep, seed):
    """``n_rep`` splits of one cell (row 0, column 0) holding ``count``; returns (n_rep, K)."""
    K = T.shape[1]
    _gibbs.seed(np.random.default_rng(seed))
    rows, cols = np.zeros(1, np.int64), np.zeros(1, np.int64)
    counts = np.array([count], np.int64)
    Vt = np.ascontiguousarray(V.T)
    order = np.empty((V.shape[1], K), np.int64)
    _gibbs._orders(Vt, order)
    s_dk, s_nk = np.empty((T.shape[0], K)), np.empty((V.shape[1], K))
    out = np.empty((n_rep, K))
    for r in range(n_rep):
        _gibbs._split(rows, cols, counts, T, Vt, order, s_dk, s_nk, np.empty(K), np.empty(K),
                      np.empty((3, K), np.int64), _gibbs._STATE, _gibbs.TINY,
                      _gibbs.SMALL)
        assert s_dk[0].sum() == count and (s_nk[0] == s_dk[0]).all()
        out[r] = s_dk[0]
    return out


@pytest.mark.parametrize("count", [3, 40, 5 * _gibbs.SMALL])
def test_split_is_the_multinomial(count):
    """Mean and variance of every component against ``c p_k`` and ``c p_k (1 - p_k)``.

    K = 7 with rates spanning three orders of magnitude (the alias table's small and large
    columns both occur). 4,000 splits: the z-score of each mean is standard normal, that of
    each variance (sample variance against its expectation, standard error from the
    multinomial's fourth moment estimated by the sample; only components expecting at least
    100 counts over the splits) is asymptotically normal. At most 14 statistics at |z| < 4.5:
    over 40 other seeds per count (120 runs) none failed and the largest |z| was 3.97."""
    rng = np.random.default_rng(7)
    K = 7
    T = rng.dirichlet(np.ones(3), size=K).T
    V = np.array([[50.0], [0.05], [3.0], [10.0], [0.5], [20.0], [1.0]])
    rate = T[0] * V[:, 0]
    p = rate / rate.sum()
    n_rep = 4000
    s = _split_many(count, T, V, n_rep, seed=count)
    z_mean = (s.mean(axis=0) - count * p) / np.sqrt(count * p * (1 - p) / n_rep)
    # variances where the component gets at least 100 counts over the splits in expectation
    # (below, the sample fourth moment that scales the z-score is unstable)
    big = count * p * n_rep >= 100
    var = s.var(axis=0, ddof=1)[big]
    dev2 = ((s - s.mean(axis=0)) ** 2)[:, big]
    z_var = (var - (count * p * (1 - p))[big]) / (dev2.std(axis=0, ddof=1) / np.sqrt(n_rep))
    assert np.abs(z_mean).max() < 4.5, z_mean
    assert np.abs(z_var).max() < 4.5, z_var


def test_split_guards_non_finite_input():
    T, V = np.full((2, 2), 0.5), np.ones((2, 3))
    data = (np.array([0], np.int64), np.array([0], np.int64), np.array([-1], np.int64))
    with pytest.raises(ValueError, match="negative or non-finite count"):
        _gibbs.sweeps(data, T, V, (1.0, 1.0, np.ones(3)), 1)
    T[0, 0] = np.nan
    data = (data[0], data[1], np.array([2], np.int64))
    with pytest.raises(ValueError, match="non-finite or non-positive factor"):
        _gibbs.sweeps(data, T, V, (1.0, 1.0, np.ones(3)), 1)
