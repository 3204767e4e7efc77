"""Chib's evidence against brute force and annealed importance sampling; P(K | data) calibrated.

Tolerances come from runs over seeds (each stated below). The relabelling average is checked in
``tests/counts/test_cemgil_chib.py`` (3 x 3, two factors: log 2).
"""

import numpy as np
import pytest

from bnmfzoo.signatures.checks import ais_log_evidence, exact_log_evidence
from bnmfzoo.signatures.evidence import chib_log_evidence, probabilities, rank_posterior

PRIOR = (1.0, 1.0, 1.0)
Y = np.array([[3, 0, 1, 4, 0], [0, 4, 2, 0, 1], [2, 1, 0, 3, 0], [0, 3, 1, 0, 2]])


@pytest.fixture(scope="module")
def exact():
    value, se = exact_log_evidence(Y, 2, prior=PRIOR, n_prior=20_000, random_seed=0)
    assert se < 0.08
    return value


def test_chib_matches_brute_force(exact):
    """Over 30 seeds Chib's estimate had sd 0.13 around -38.98 (exact: -38.96, se 0.05), the
    largest deviation 0.36; 0.5 is 3.6 combined sd: false-failure rate about 3e-4."""
    out = chib_log_evidence(Y, 2, prior=PRIOR, n_burn=200, n_keep=1000, random_seed=11)
    assert abs(out["log_evidence"] - exact) < 0.5
    assert out["min_ess"] > 100


def test_ais_matches_brute_force(exact):
    """AIS is the second, independent estimator (no augmentation, no Gibbs, no relabelling
    average): sd 0.13 over 5 seeds around -39.08; 0.5 is ~3.5 sd."""
    value, _ = ais_log_evidence(Y, 2, prior=PRIOR, n_particles=1000, n_temps=300,
                                random_seed=5)
    assert abs(value - exact) < 0.5


def test_same_seed_same_numbers():
    a = chib_log_evidence(Y, 2, prior=PRIOR, n_burn=20, n_keep=50, random_seed=3)
    b = chib_log_evidence(Y, 2, prior=PRIOR, n_burn=20, n_keep=50, random_seed=3)
    assert a["log_evidence"] == b["log_evidence"]
    np.testing.assert_array_equal(a["T_draws"], b["T_draws"])


def test_probabilities_and_their_intervals():
    p, lo, hi, best = probabilities([0.0, 0.0, -10.0], [0.01, 0.01, 0.01], df=2)
    np.testing.assert_allclose(p, [0.5, 0.5, 0.0000454 / 2], rtol=1e-3)
    assert (lo <= p + 1e-12).all() and (p <= hi + 1e-12).all()
    assert abs(best[0] - 0.5) < 0.05 and best[2] == 0.0
    # a large error widens the interval
    _, lo2, hi2, _ = probabilities([0.0, -1.0], [2.0, 2.0])
    assert hi2[0] - lo2[0] > 0.5


def _prior_dataset(rng, K, D=4, N=5, burden=6.0):
    T = rng.dirichlet(np.ones(D), size=K).T
    V = rng.gamma(1.0, burden / K, (K, N))
    return rng.poisson(T @ V)


def test_rank_probabilities_are_calibrated():
    """Data drawn from the model with K uniform on {1, 2}: the posterior probability of K = 2
    must average to the frequency of K = 2 (E[P(K=2 | Y)] = P(K=2) under the joint).

    The test statistic is the mean of ``1{K=2} - P(K=2 | Y)`` over 120 data sets, compared
    with 3.3 of its standard errors (normal: false-failure rate 1e-3). The prior is fixed
    (``b_V = K / burden``, the rule of ``default_prior`` with the expected burden) so that the
    simulation and the estimate use the same one. Chib's own noise (sd ~0.1 nats) enters the
    probabilities symmetrically."""
    rng = np.random.default_rng(2024)
    diffs = []
    for _ in range(120):
        K = int(rng.integers(1, 3))
        X = _prior_dataset(rng, K)
        z = [chib_log_evidence(X, k, prior=(1.0, 1.0, k / 6.0), n_burn=100, n_keep=300,
                               random_seed=int(rng.integers(2**31)))["log_evidence"]
             for k in (1, 2)]
        p2 = 1.0 / (1.0 + np.exp(z[0] - z[1]))
        diffs.append((K == 2) - p2)
    diffs = np.asarray(diffs)
    assert abs(diffs.mean()) < 3.3 * diffs.std(ddof=1) / np.sqrt(diffs.size)


def test_rank_posterior_table():
    """Two signatures over 6 channels, 12 samples. Under the default prior the data favour 3
    components slightly: annealed importance sampling (3 seeds, 400 particles, 3000
    temperatures) gave log evidences -270.9 +- 0.6 at K = 2 and -269.0 +- 0.4 at K = 3 (Chib:
    -270.5 and -267.4), so the check is that rank 1 is ruled out and the table is coherent."""
    rng = np.random.default_rng(0)
    T = rng.dirichlet(np.full(6, 0.3), size=2).T
    X = rng.poisson(T @ rng.gamma(2.0, 40.0, (2, 12))).T
    X[:, 0] += X.sum(axis=1) == 0
    table = rank_posterior(X, [1, 2, 3], n_runs=2, n_burn=100, n_keep=400, random_seed=1)
    assert list(table["rank"]) == [1, 2, 3]
    ok = table[table["reliable"]]
    assert ok["probability"].sum() == pytest.approx(1.0)
    assert table.loc[~table["reliable"], "probability"].isna().all()
    assert (ok["low"] <= ok["probability"] + 1e-12).all()
    assert (ok["probability"] <= ok["high"] + 1e-12).all()
    by_rank = table.set_index("rank")
    assert by_rank.loc[1, "reliable"] and by_rank.loc[1, "probability"] < 1e-6
    best = int(table["rank"][table["probability"].idxmax()])
    assert best in (2, 3) and f"most probable rank {best}" in table.attrs["note"]
    T_draws, V_draws = table.attrs["draws"]
    assert T_draws.shape[1:] == (6, best) and V_draws.shape[1:] == (best, 12)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"ranks": []}, "ranks must be distinct"),
    ({"ranks": [2, 2]}, "ranks must be distinct"),
    ({"n_runs": 0}, "n_runs must be a positive integer"),
    ({"window": (-1, 2)}, "window must be two non-negative integers"),
])
def test_rank_posterior_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rank_posterior(np.ones((3, 4)), **{"ranks": [1], **kwargs})


def test_chib_bad_input():
    with pytest.raises(ValueError, match="non-negative integer counts"):
        chib_log_evidence(np.array([[1.5, 2.0]]), 1)
    with pytest.raises(ValueError, match="rank must be a positive integer"):
        chib_log_evidence(Y, 0)
