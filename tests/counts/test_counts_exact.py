"""Exact draws of bounded cost in the count wing (``bnmfzoo/inference/kernels/``).

Each sampler is compared with its exact law by a chi-square (discrete) or Kolmogorov-Smirnov
(Gamma) test at level ``ALPHA`` = 1e-4 per check. A run makes 29 checks (binomial 7, Gamma 5,
multinomial 4 marginals + 1 pair, Dirichlet-multinomial 4 + 1, CRT 5, the split's two paths
2), so correct samplers fail a run with probability about 29e-4 = 0.3 %. Run once over 50
seeds (``BNMFZOO_EXACT_SEEDS=50``: seeds 0..49 for the 27 seeded checks): 0 of 1,350 checks
failed. Chi-square bins are merged until each holds at least 25 expected draws, where the
chi-square law of the statistic is accurate far below the level.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest
from scipy import stats

from bnmfzoo.inference.counts._data import CountMatrix
from bnmfzoo.inference.counts.sweep import split_crt
from bnmfzoo.inference.kernels.crt import crt_sample
from bnmfzoo.inference.kernels.variates import (
    binomial_sample,
    dirmult_sample,
    gamma_sample,
    multinomial_sample,
)

ALPHA = 1e-4
SEEDS = range(int(os.environ.get("BNMFZOO_EXACT_SEEDS", "1")))
DRAWS = 20_000


def _chi2_pvalue(draws, cdf, support_max):
    """Chi-square p-value of integer ``draws`` against the law with cdf ``cdf`` on 0..max.

    Bins: consecutive integers merged until each holds >= 25 expected draws.
    """
    n = draws.size
    edges = [-1]
    last = 0.0
    grid = np.arange(0, support_max + 1)
    c = cdf(grid)
    for k in grid:
        if (c[k] - last) * n >= 25 and (1.0 - c[k]) * n >= 25:
            edges.append(k)
            last = c[k]
    edges.append(support_max)
    edges = np.array(edges)
    probs = np.diff(np.concatenate([[0.0], c[edges[1:-1]], [1.0]]))
    obs = np.histogram(draws, bins=edges + 0.5)[0]
    assert obs.sum() == n, "draws outside the support"
    if probs.size < 2:
        return 1.0
    return stats.chisquare(obs, probs * n).pvalue


def _chi2_vs_dist(draws, dist):
    """Chi-square p-value against a scipy discrete distribution on a possibly huge support.

    Quantile bins (about 40) through ``dist.ppf``; exact bin probabilities from ``dist.cdf``.
    """
    n = draws.size
    qs = np.unique(dist.ppf(np.linspace(0, 1, 41)[1:-1]))
    edges = np.concatenate([[-np.inf], qs, [np.inf]])
    probs = np.diff(np.concatenate([[0.0], dist.cdf(qs), [1.0]]))
    keep = probs * n >= 25
    obs = np.histogram(draws, bins=edges + 0.5)[0]
    # merge bins with too few expected draws into their right neighbour
    po, pp = [], []
    acc_o = acc_p = 0.0
    for o, p, _ in zip(obs, probs, keep):
        acc_o += o
        acc_p += p
        if acc_p * n >= 25:
            po.append(acc_o)
            pp.append(acc_p)
            acc_o = acc_p = 0.0
    if acc_p > 0 or acc_o > 0:
        po[-1] += acc_o
        pp[-1] += acc_p
    return stats.chisquare(np.array(po), np.array(pp) * n).pvalue


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n,p", [(20, 0.3), (1000, 0.004), (40, 0.3), (1000, 0.3), (100, 0.93),
                                 (2**31 - 1, 0.25), (2**31 - 1, 3e-9)])
def test_binomial_matches_scipy(n, p, seed):
    # inversion (n min(p, 1-p) < 10), BTRS, the p > 1/2 flip and 32-bit counts
    x = binomial_sample(n, p, DRAWS, np.random.default_rng(seed))
    assert x.min() >= 0 and x.max() <= n
    assert _chi2_vs_dist(x, stats.binom(n, p)) > ALPHA


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("a", [0.01, 0.5, 1.0, 3.7, 1e4])
def test_gamma_matches_scipy(a, seed):
    x = gamma_sample(a, DRAWS, np.random.default_rng(seed))
    assert stats.kstest(x, stats.gamma(a).cdf).pvalue > ALPHA


@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_marginals_and_pairs(seed):
    # every component is Bin(x, p_k) and every pair sum Bin(x, p_j + p_k)
    x, w = 500, np.array([0.1, 2.0, 0.9, 0.0, 1.0])
    p = w / w.sum()
    z = multinomial_sample(x, w, 5000, np.random.default_rng(seed))
    assert np.all(z.sum(axis=1) == x) and np.all(z[:, 3] == 0)
    for k in (0, 1, 2, 4):
        assert _chi2_pvalue(z[:, k].astype(int), stats.binom(x, p[k]).cdf, x) > ALPHA
    pair = (z[:, 0] + z[:, 2]).astype(int)
    assert _chi2_pvalue(pair, stats.binom(x, p[0] + p[2]).cdf, x) > ALPHA


@pytest.mark.parametrize("seed", SEEDS)
def test_dirichlet_multinomial_marginals_and_pairs(seed):
    # component k is BetaBinomial(x, r_k, R - r_k); a pair sum BetaBinomial(x, r_j + r_k, ...)
    x, r = 300, np.array([0.3, 1.5, 4.0, 0.05])
    R = r.sum()
    z = dirmult_sample(x, r, 5000, np.random.default_rng(seed))
    assert np.all(z.sum(axis=1) == x)
    for k in range(4):
        law = stats.betabinom(x, r[k], R - r[k])
        assert _chi2_pvalue(z[:, k].astype(int), law.cdf, x) > ALPHA
    law = stats.betabinom(x, r[0] + r[3], R - r[0] - r[3])
    assert _chi2_pvalue((z[:, 0] + z[:, 3]).astype(int), law.cdf, x) > ALPHA


def _crt_pmf(n, r):
    """The exact Poisson-binomial pmf of ``sum_{i<n} Bernoulli(r / (r + i))`` (convolution)."""
    pmf = np.zeros(n + 1)
    pmf[0] = 1.0
    for i in range(n):
        q = r / (r + i)
        pmf[1:i + 2] = pmf[1:i + 2] * (1 - q) + pmf[0:i + 1] * q
        pmf[0] *= 1 - q
    return pmf


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n,r", [(300, 0.05), (300, 1.0), (2000, 30.0), (1000, 1e4),
                                 (500, 1e7)])
def test_crt_blocks_match_exact_pmf(n, r, seed):
    # threshold -1: every draw by the block method
    x, blocks = crt_sample(n, r, DRAWS, np.random.default_rng(seed), threshold=-1)
    cdf = np.cumsum(_crt_pmf(n, r))
    assert _chi2_pvalue(x, lambda k: np.minimum(cdf[k], 1.0), n) > ALPHA
    assert blocks < n / 3  # far fewer blocks than customers


@pytest.mark.parametrize("r", [1e-3, 1.0, 1e3, 1e6, 2e9])
def test_crt_cost_is_bounded_for_32_bit_counts(r):
    # blocks ~ sqrt(r) log(1 + n / r); measured <= 1.9e4 blocks and <= 10 ms per draw
    rng = np.random.default_rng(0)
    crt_sample(100, 1.0, 1, rng)  # compile outside the clock
    t = time.perf_counter()
    x, blocks = crt_sample(2**31 - 1, r, 5, rng)
    dt = (time.perf_counter() - t) / 5
    assert blocks <= 2.5e4
    assert dt < 0.25, f"{dt:.3f} s per CRT draw at r={r}"
    mean = r * (np.log1p((2**31 - 1) / r)) if r > 1 else None
    if mean is not None:  # E = sum r / (r + i) ~ r log(1 + n / r); sd <= sqrt(E)
        assert abs(x.mean() - mean) < 6 * np.sqrt(mean) + 2 * r / (r + 1)


def _matrix(big):
    rng = np.random.default_rng(3)
    X = rng.poisson(3.0, size=(30, 20))
    X.flat[rng.choice(600, 25, replace=False)] = big
    return CountMatrix.from_entries(*np.nonzero(X), X[np.nonzero(X)], X.shape)


def test_split_is_exact_with_and_without_the_large_count_path():
    # one cell x = 120 split into K = 2 by both paths: component 0's tables, two-sample test
    data = CountMatrix.from_entries([0], [0], [120], (1, 1))
    A, W = np.array([[0.7, 2.5]]), np.ones((2, 1))
    scale = np.full(1, 1.3)
    rng = np.random.default_rng(0)
    reps = 4000
    small = np.array([split_crt(data, A, W, scale, rng, threshold=10**9)[0][0]
                      for _ in range(reps)])
    large = np.array([split_crt(data, A, W, scale, rng, threshold=0)[0][0]
                      for _ in range(reps)])
    for k in range(2):
        tab = np.stack([np.bincount(small[:, k].astype(int), minlength=60)[:60],
                        np.bincount(large[:, k].astype(int), minlength=60)[:60]])
        tab = tab[:, tab.sum(axis=0) >= 20]
        assert stats.chi2_contingency(tab).pvalue > ALPHA


def _single_cell(x, reps):
    """``reps`` rows, one column, each the count ``x``: row ``d`` of the tables is one draw."""
    return CountMatrix.from_entries(np.arange(reps), np.zeros(reps, int), np.full(reps, x),
                                    (reps, 1))


def _per_part_tables(x, r, reps, rng):
    """The route the sweep no longer takes, in numpy: ``p ~ Dirichlet(r)``, ``x_k ~
    Multinomial(x, p)``, then ``l_k ~ CRT(x_k, r_k)`` (one Bernoulli per customer)."""
    out = np.zeros((reps, r.size), int)
    for i in range(reps):
        parts = rng.multinomial(x, rng.dirichlet(r))
        for k, m in enumerate(parts):
            out[i, k] = int(np.sum(rng.uniform(size=m) * (r[k] + np.arange(m)) < r[k]))
    return out


@pytest.mark.parametrize("x, r", [(150, (0.4, 2.5, 9.0)), (12, (0.3, 1.0, 2.2))])
@pytest.mark.parametrize("threshold", [10**9, 0])
def test_tables_of_the_sum_have_the_law_of_the_tables_per_part(threshold, x, r):
    """``L ~ CRT(x, R)`` split ``Multinomial(L, r / R)`` (the kernel) against the split
    ``DirMult(x, r)`` with ``CRT(x_k, r_k)`` per part (an independent numpy draw), K = 3, by one
    Bernoulli per customer (``threshold`` 1e9) and by blocks (0); at x = 150 most draws have
    more than ``SMALL_TABLES`` tables (sequential binomials), at x = 12 none (one uniform per
    table). A chi-square test of each component's tables and of their sum, two samples of
    3,000, each at ``ALPHA / 4`` (Bonferroni: below 1e-4 per case). Measured over 100 seed
    pairs (/ 4 cases): 0 false failures in 400, smallest p 7e-4; the smallest of a case's four
    p-values fell below 0.05 in 17.5 % of cases (18.5 % for four independent uniforms)."""
    r = np.array(r)
    reps = 3000
    data = _single_cell(x, reps)
    A = np.tile(r, (reps, 1))
    ours, _ = split_crt(data, A, np.ones((3, 1)), np.ones(reps), np.random.default_rng(11),
                        threshold=threshold)
    ref = _per_part_tables(x, r, reps, np.random.default_rng(12))
    for a, b in [(ours[:, k], ref[:, k]) for k in range(3)] + [(ours.sum(1), ref.sum(1))]:
        top = int(max(a.max(), b.max())) + 1
        tab = np.stack([np.bincount(a.astype(int), minlength=top),
                        np.bincount(b.astype(int), minlength=top)])
        keep = tab.sum(axis=0) >= 20
        tab = np.concatenate([tab[:, keep], tab[:, ~keep].sum(1, keepdims=True)], axis=1)
        tab = tab[:, tab.sum(axis=0) > 0]
        assert stats.chi2_contingency(tab).pvalue > ALPHA / 4


def test_split_draws_do_not_depend_on_the_work_budget():
    data = _matrix(2**31 - 1)
    A = np.random.default_rng(1).gamma(1.0, 3.0, (30, 2))
    W = np.random.default_rng(2).gamma(1.0, 3.0, (2, 20))
    scale = np.full(data.nnz, 0.5)
    one = split_crt(data, A, W, scale, np.random.default_rng(5))
    many = split_crt(data, A, W, scale, np.random.default_rng(5), budget=1)
    assert np.array_equal(one[0], many[0]) and np.array_equal(one[1], many[1])


def test_nb_sweep_on_32_bit_counts_is_fast():
    # 25 cells at 2**31 - 1 in a 30 x 20 matrix: before, one sweep ran for hours
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.inference.counts.sweep import initial_state
    from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep
    from bnmfzoo.models import negative_binomial, recognize

    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(30, 20))
    X.flat[rng.choice(600, 25, replace=False)] = 2**31 - 1
    prob = problem_from_factorization(recognize(negative_binomial(X, 2)))
    s = gibbs_sweep(prob, initial_state(prob, rng), rng)  # compiles
    t = time.perf_counter()
    for _ in range(5):
        s = gibbs_sweep(prob, s, rng)
    assert (time.perf_counter() - t) / 5 < 2.0  # measured 1-150 ms per sweep
    assert np.all(np.isfinite(s["A"])) and np.all(s["A"] > 0)


def test_split_returns_to_python_between_rows():
    # a SIGINT raised while the split runs is seen between kernel calls: KeyboardInterrupt
    data = _matrix(2**31 - 1)
    A = np.full((30, 2), 3.0)
    W = np.full((2, 20), 3.0)
    scale = np.full(data.nnz, 1e6)  # large r: ~4e3 CRT blocks per big count
    rng = np.random.default_rng(0)
    split_crt(data, A, W, scale, rng)  # compile
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals need the main thread")
    # Python's own handler for the test's duration: a process started in the background
    # without job control inherits SIGINT ignored (then no Ctrl-C reaches it at all)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.05, signal.raise_signal, (signal.SIGINT,))
        timer.start()
        t = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(200):
                split_crt(data, A, W, scale, rng, budget=10_000)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - t < 2.0


def test_compiled_poisson_sweeps_do_not_depend_on_the_chunking(monkeypatch):
    # gibbs_sweeps runs its sweeps in calls of ~CALL_SECONDS (back to Python in between):
    # the same draws with one sweep per call as with all in one call
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.inference.counts.gibbs import _compiled as _sweeps
    from bnmfzoo.inference.counts.sweep import initial_state
    from bnmfzoo.models import poisson, recognize

    X = np.random.default_rng(0).poisson(40.0, size=(6, 5))
    prob = problem_from_factorization(recognize(poisson(X, 2, ard=True)))
    start = initial_state(prob, np.random.default_rng(1))
    one = _sweeps.gibbs_sweeps(prob, start, np.random.default_rng(2), 7)
    monkeypatch.setattr(_sweeps, "CALL_SECONDS", 1e-12)
    many = _sweeps.gibbs_sweeps(prob, start, np.random.default_rng(2), 7)
    assert np.array_equal(one["A"], many["A"]) and np.array_equal(one["W"], many["W"])
    assert np.array_equal(one["rates"]["lambda_"], many["rates"]["lambda_"])


def test_bad_arguments_are_refused_by_name():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^p must"):
        binomial_sample(5, float("nan"), 3, rng)
    with pytest.raises(ValueError, match="^n must"):
        binomial_sample(-1, 0.5, 3, rng)
    with pytest.raises(ValueError, match="^a must"):
        gamma_sample(float("inf"), 3, rng)
    with pytest.raises(ValueError, match="^r must"):
        crt_sample(10, float("nan"), 3, rng)
    with pytest.raises(ValueError, match="^r must"):
        dirmult_sample(10, [1.0, -1.0], 3, rng)
    with pytest.raises(ValueError, match="^w must"):
        multinomial_sample(10, [0.0, 0.0], 3, rng)
    # inside the sweep: a non-finite NB shape of a large count is an error, not a hang
    data = CountMatrix.from_entries([0], [0], [10**6], (1, 1))
    for bad in (np.nan, np.inf):
        with pytest.raises(FloatingPointError, match="NB shape"):
            split_crt(data, np.array([[1.0, bad]]), np.ones((2, 1)), np.ones(1), rng)
