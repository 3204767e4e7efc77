"""Several starts at one rank, kept by the log joint density (bnmfzoo.signatures.modes)."""

import numpy as np
import pytest
from _sigdata import two_signatures
from scipy import stats

from bnmfzoo.signatures.modes import best_mode, consensus_start, log_joint


def _three(seed=0, n=60, burden=600):
    """Three separated signatures (two from ``two_signatures`` and a T>A-heavy one), counts."""
    from bnmfzoo.signatures.formats import CHANNELS

    rng = np.random.default_rng(seed)
    third = rng.dirichlet(np.full(96, 2.0))
    third[[i for i, c in enumerate(CHANNELS) if c[2:5] == "T>A"]] *= 20
    W = np.vstack([two_signatures(seed), third / third.sum()])
    A = rng.dirichlet(np.full(3, 0.8), size=n) * burden
    return rng.poisson(A @ W).T.astype(np.int64), W  # (96, n), (3, 96)


def _cos(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return a @ b.T


def test_log_joint_is_the_sum_of_the_models_log_densities():
    rng = np.random.default_rng(1)
    D, K, N = 5, 2, 4
    T = rng.dirichlet(np.full(D, 1.0), size=K).T  # (D, K)
    V = rng.gamma(2.0, 10.0, size=(K, N))
    Y = rng.poisson(T @ V)
    alpha, aV, bV = 0.7, 1.3, np.array([0.1, 0.2, 0.3, 0.4])
    expect = stats.poisson.logpmf(Y, T @ V).sum()
    expect += sum(stats.dirichlet.logpdf(T[:, k], np.full(D, alpha)) for k in range(K))
    expect += stats.gamma.logpdf(V, aV, scale=1.0 / bV[None, :]).sum()
    got = log_joint(Y, T[None], V[None], (alpha, aV, bV))
    assert got.shape == (1,)
    assert got[0] == pytest.approx(expect, rel=1e-10)


def test_best_mode_keeps_the_chain_of_highest_log_joint():
    Y, W = _three()
    T_good = np.repeat(W.T[None], 3, axis=0)
    V_good = np.repeat(np.linalg.lstsq(W.T, Y, rcond=None)[0].clip(1e-3)[None], 3, axis=0)
    # a blend: the first two signatures averaged, the third split off
    Wb = np.vstack([(W[0] + W[1]) / 2, W[2], W[2]])
    T_bad = np.repeat(Wb.T[None], 3, axis=0)
    V_bad = np.repeat(np.full((3, Y.shape[1]), Y.sum(axis=0) / 3.0)[None], 3, axis=0)
    for chains, want in (([(T_bad, V_bad), (T_good, V_good)], 1),
                         ([(T_good, V_good), (T_bad, V_bad)], 0)):
        r = best_mode(Y, 3, n_starts=0, consensus=False, chains=chains)
        assert r["chosen"] == want
        assert r["log_joint"][want] > r["log_joint"][1 - want]
        np.testing.assert_array_equal(r["T_draws"], T_good)


def test_consensus_start_recovers_separated_signatures():
    Y, W = _three(seed=2)
    T, V = consensus_start(Y, 3, np.random.default_rng(0), n_replicates=6, n_iter=300)
    assert T.shape == (96, 3) and V.shape == (3, Y.shape[1])
    np.testing.assert_allclose(T.sum(axis=0), 1.0)
    # each true signature has its own start signature at cosine > 0.98 (Poisson noise of
    # ~36,000 mutations over 96 channels and 3 signatures: the fitted cosines are >= 0.995)
    from scipy.optimize import linear_sum_assignment

    C = _cos(W, T.T)
    rows, cols = linear_sum_assignment(C, maximize=True)
    assert C[rows, cols].min() > 0.98


def test_best_mode_same_seed_same_draws_and_sampled_chains_are_scored():
    Y, W = _three(seed=3, n=30)
    kw = dict(n_starts=1, n_replicates=3, n_init_iter=50, n_burn=20, n_keep=20, n_draws=10)
    a = best_mode(Y, 3, random_seed=7, **kw)
    b = best_mode(Y, 3, random_seed=7, **kw)
    np.testing.assert_array_equal(a["T_draws"], b["T_draws"])
    assert a["T_draws"].shape == (10, 96, 3) and a["V_draws"].shape == (10, 3, 30)
    assert a["log_joint"].shape == (2,) and np.isfinite(a["log_joint"]).all()
    assert a["chosen"] == int(np.argmax(a["log_joint"]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(Y=-np.ones((96, 3)), rank=2), "Y must be"),
    (dict(Y=np.full((96, 3), np.nan), rank=2), "Y must be"),
    (dict(Y=np.full((96, 3), 1.5), rank=2), "Y must be"),
    (dict(Y=np.ones((96, 3)), rank=0), "rank"),
    (dict(Y=np.ones((96, 3)), rank=2, n_starts=-1), "n_starts"),
    (dict(Y=np.ones((96, 3)), rank=2, n_starts=0, consensus=False), "no chain"),
])
def test_best_mode_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        best_mode(**kwargs)


def test_extract_with_starts_at_rank_one_is_the_pooled_profile_and_reproducible():
    from _sigdata import catalog

    from bnmfzoo.signatures import extract

    df, _ = catalog(n_samples=24, burden=300, seed=3)
    kw = dict(ranks=[1], rank_method="chib", n_runs=1, n_burn=20, n_keep=60, random_seed=0)
    dt = extract(df, n_starts=1, **kw)
    S = dt["signatures"]["mean"].transpose("signature", "channel").values
    pooled = df.drop(columns="MutationType").to_numpy().sum(axis=1)
    # one signature: its posterior mean is the pooled profile of 7,200 mutations (cosine of
    # the Dirichlet(1 + counts) mean with the counts > 0.999)
    assert _cos(S, pooled[None])[0, 0] > 0.99
    again = extract(df, n_starts=1, **kw)
    np.testing.assert_array_equal(S, again["signatures"]["mean"]
                                  .transpose("signature", "channel").values)


@pytest.mark.slow
def test_extract_with_starts_reports_the_kept_chains_signatures():
    from _sigdata import catalog

    from bnmfzoo.signatures import extract

    df, W = catalog(n_samples=24, burden=300, seed=3)
    kw = dict(ranks=[2], rank_method="chib", n_runs=1, n_burn=20, n_keep=60, random_seed=0)
    dt = extract(df, n_starts=2, **kw)
    assert int(dt.attrs["rank"]) == 2
    S = dt["signatures"]["mean"].transpose("signature", "channel").values
    C = _cos(W, S)
    # two well separated signatures from 7,200 mutations: each found at cosine > 0.95
    assert max(C[0, 0] + C[1, 1], C[0, 1] + C[1, 0]) > 2 * 0.95
