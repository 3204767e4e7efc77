"""The numeric-kernel floor (``bnmfzoo/inference/kernels/``): each sampler against its exact law.

One test per kernel family, each drawing from the floor's own fronts (or a numba loop over its
kernel) and comparing with SciPy or an exact pmf: a KS test for continuous laws, a chi-square
test (bins pooled to an expected count of at least 5) for discrete ones. Each test combines its
p-values with a Bonferroni bound at ``ALPHA = 1e-3``, so its false-failure probability is at
most 1e-3 whatever the correlation of its p-values; every test was run once over seeds 0-99
(:func:`_pvalues` of each test at ``seed``), with the failure counts stated in the docstrings.
The seed of each test below is the first of that run, fixed before it was run.
"""

import math

import numba
import numpy as np
import pytest
from scipy import stats

from bnmfzoo.inference import kernels
from bnmfzoo.inference.kernels import streams

ALPHA = 1e-3


def _bonferroni_ok(pvals, alpha=ALPHA):
    pvals = np.asarray(pvals, float)
    return bool(np.all(pvals * pvals.size >= alpha))


def _chi2_pvalue(draws, pmf, top):
    """Chi-square p-value of integer ``draws`` on ``0..top`` against ``pmf(k)``.

    Bins are pooled left to right until each expected count is at least 5 (the rest joins the
    last bin).
    """
    draws = np.asarray(draws, np.int64)
    assert draws.min() >= 0 and draws.max() <= top
    ks = np.arange(top + 1)
    expected = draws.size * np.asarray(pmf(ks), float)
    observed = np.bincount(draws, minlength=top + 1).astype(float)
    obs_b, exp_b, o, e = [], [], 0.0, 0.0
    for oo, ee in zip(observed, expected):
        o, e = o + oo, e + ee
        if e >= 5.0:
            obs_b.append(o)
            exp_b.append(e)
            o, e = 0.0, 0.0
    obs_b[-1] += o
    exp_b[-1] += e
    assert len(exp_b) >= 2
    return float(stats.chisquare(obs_b, np.asarray(exp_b) * (sum(obs_b) / sum(exp_b))).pvalue)


# ------------------------------------------------------------------------------------ streams

@numba.njit(cache=True)
def _uniforms(state, n, out_open, out_normal):
    out = np.empty(n)
    for i in range(n):
        out[i] = streams.next_uniform(state)
        out_open[i] = streams.open_uniform(state)
        out_normal[i] = streams.std_normal(state)
    return out


@numba.njit(cache=True)
def _first_uniform(states):
    out = np.empty(states.shape[0])
    for i in range(states.shape[0]):
        out[i] = streams.next_uniform(states[i])
    return out


def _stream_pvalues(seed, n=100_000, fresh=5000):
    rng = np.random.default_rng(seed)
    op, nm = np.empty(n), np.empty(n)
    u = _uniforms(streams.seed_state(rng), n, op, nm)
    assert np.all((u >= 0) & (u < 1)) and np.all((op > 0) & (op <= 1))
    first = _first_uniform(np.array([streams.seed_state(rng) for _ in range(fresh)]))
    return [stats.kstest(u, "uniform").pvalue, stats.kstest(op, "uniform").pvalue,
            stats.kstest(nm, "norm").pvalue, stats.kstest(first, "uniform").pvalue,
            # pairs of consecutive uniforms: independent (chi-square on a 10 x 10 grid)
            stats.chisquare(np.bincount((10 * u[:-1:2]).astype(int) * 10
                                        + (10 * u[1::2]).astype(int), minlength=100)).pvalue]


def test_random_streams_are_uniform_and_normal():
    """xoshiro256+ stream: KS of ``next_uniform``, ``open_uniform`` (on (0, 1]) and
    ``std_normal`` (100,000 draws each), of the first uniform of 5,000 freshly seeded states
    (the words must take all 64 bits: 63-bit words made it triangular), and chi-square of
    consecutive pairs on a 10 x 10 grid; Bonferroni over 5 at 1e-3. Seeds 0-99: 0 failures."""
    assert _bonferroni_ok(_stream_pvalues(seed=0))
    s = streams.seed_state(np.random.default_rng(0))
    assert s.dtype == np.uint64 and s.shape == (4,) and s.any()


# ------------------------------------------------------------------------------- truncnorm

_TN_CASES = [(1.0, 1.0), (0.0, 2.0), (-0.2, 1.0), (-3.0, 1.0), (-40.0, 0.5)]


def _truncnorm_pvalues(seed, n=20_000):
    rng = np.random.default_rng(seed)
    out = []
    for mu, sd in _TN_CASES:
        x = kernels.sample_truncnorm(np.full(n, mu), sd, rng)
        law = stats.truncnorm(-mu / sd, np.inf, loc=mu, scale=sd)
        if mu / sd < -30:  # scipy's cdf loses precision this far out: compare the excess
            out.append(stats.kstest(x * (-mu / sd) / sd, stats.expon().cdf).pvalue)
        else:
            out.append(stats.kstest(x, law.cdf).pvalue)
    m, v = kernels.truncnorm_mean_var(np.array([m for m, _ in _TN_CASES[:4]]),
                                      np.array([s for _, s in _TN_CASES[:4]]))
    ref = [stats.truncnorm(-mu / sd, np.inf, loc=mu, scale=sd) for mu, sd in _TN_CASES[:4]]
    assert np.allclose(m, [r.mean() for r in ref]) and np.allclose(v, [r.var() for r in ref])
    return out


def test_truncated_normal_draws_match_scipy():
    """``sample_truncnorm`` on the three proposals (normal, half-normal, Robert's exponential)
    and 40 sd below zero (there the standardized excess tends to Exp(1): ``a * excess``,
    relative error ~1/a^2 = 6e-4, far below the KS resolution of 20,000 draws): KS, Bonferroni
    over 5 at 1e-3; moments against SciPy (``allclose``). Seeds 0-99: 1 failure (seed 33, the
    ``mu = 0`` case, adjusted p 2e-5, where the draws are numpy's own ``|N(0, 1)|`` bit for bit:
    checked by drawing both from the same generator)."""
    assert _bonferroni_ok(_truncnorm_pvalues(seed=0))


# -------------------------------------------------------------------------------------- GIG

_GIG_CASES = [(0.3, 0.2), (0.0, 0.05), (0.5, 0.6), (2.0, 3.0), (-1.5, 0.4), (-4.0, 2.0)]


_GIG_EDGES = {case: stats.geninvgauss(*case).ppf(np.linspace(0.0, 1.0, 21)[1:-1])
              for case in _GIG_CASES}  # SciPy's GIG cdf integrates numerically: 19 edges once


def _gig_pvalues(seed, n=10_000):
    rng = np.random.default_rng(seed)
    out = []
    for p, b in _GIG_CASES:
        edges = _GIG_EDGES[(p, b)]
        for x in (kernels.gig_draws(p, np.full(n, b), rng), kernels.gig_sample(p, b, n, rng)):
            assert np.all(x > 0) and np.all(np.isfinite(x))
            counts = np.bincount(np.searchsorted(edges, x), minlength=20)
            out.append(stats.chisquare(counts).pvalue)  # 20 equiprobable bins
    return out


def test_gig_draws_match_scipy_on_both_sources():
    """``gig_one`` on a numpy Generator (``gig_draws``) and on a xoshiro state
    (``gig_sample``), six ``(p, b)`` covering the three methods and ``p < 0``: chi-square on 20
    equiprobable bins of ``scipy.stats.geninvgauss``, 10,000 draws each, Bonferroni over 12 at
    1e-3. Seeds 0-99: 0 failures."""
    assert _bonferroni_ok(_gig_pvalues(seed=0))


def test_gig_refuses_bad_parameters():
    with pytest.raises(ValueError, match="b > 0"):
        kernels.gig_draws(0.5, np.array([1.0, 0.0]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite p"):
        kernels.gig_sample(np.nan, 1.0, 3, np.random.default_rng(0))
    state = kernels.seed_state(np.random.default_rng(0))
    assert math.isnan(kernels.gig_one(0.5, np.inf, state))
    assert math.isnan(kernels.gig_one(np.nan, 1.0, state))


# -------------------------------------------------------------------------------------- CRT

def _crt_pmf(n, r):
    """Exact pmf of ``CRT(n, r)``: the convolution of ``Bernoulli(r / (r + i))``, i < n."""
    pmf = np.array([1.0])
    for i in range(n):
        p = r / (r + i)
        pmf = np.concatenate([pmf * (1 - p), [0.0]]) + np.concatenate([[0.0], pmf * p])
    return pmf


_CRT_CASES = [(40, 0.5), (300, 3.0), (2000, 30.0)]


def _crt_pvalues(seed, size=4000):
    rng = np.random.default_rng(seed)
    out = []
    for n, r in _CRT_CASES:
        pmf = _crt_pmf(n, r)
        blocks, _ = kernels.crt_sample(n, r, size, rng)
        direct, _ = kernels.crt_sample(n, r, size, rng, threshold=n)
        out += [_chi2_pvalue(blocks, pmf.__getitem__, n), _chi2_pvalue(direct, pmf.__getitem__, n)]
    return out


def test_crt_matches_its_exact_pmf():
    """``crt`` (by blocks) and ``crt_direct`` (one Bernoulli per customer): chi-square against
    the exact pmf (a convolution of Bernoullis) for three ``(n, r)``, 4,000 draws each,
    Bonferroni over 6 at 1e-3. Seeds 0-99: 0 failures."""
    assert _bonferroni_ok(_crt_pvalues(seed=0))


# ----------------------------------------------------------- Gamma, binomial, multinomial

def _variate_pvalues(seed, n=20_000):
    rng = np.random.default_rng(seed)
    out = []
    for a in (0.05, 0.7, 3.0):  # the boost below 1, Marsaglia-Tsang above
        out.append(stats.kstest(kernels.gamma_sample(a, n, rng), stats.gamma(a).cdf).pvalue)
    shape, rate = np.full(n, 2.5), 4.0
    out.append(stats.kstest(kernels.gamma_draws(rng, shape, rate),
                            stats.gamma(2.5, scale=0.25).cdf).pvalue)
    for bn, bp in ((20, 0.3), (1000, 0.004), (1000, 0.3), (2**40, 0.7)):
        x = kernels.binomial_sample(bn, bp, 5000, rng)
        if bn > 10**6:  # normal limit: the exact pmf is out of reach of float bins
            z = (x - bn * bp) / math.sqrt(bn * bp * (1 - bp))
            out.append(stats.kstest(z, "norm").pvalue)
        else:
            out.append(_chi2_pvalue(x, stats.binom(bn, bp).pmf, bn))
    w = np.array([1.0, 2.0, 0.5])
    m = kernels.multinomial_sample(60, w, 5000, rng)
    assert np.all(m.sum(axis=1) == 60)
    for k in range(3):
        out.append(_chi2_pvalue(m[:, k], stats.binom(60, w[k] / w.sum()).pmf, 60))
    d = kernels.dirmult_sample(60, w, 5000, rng)
    assert np.all(d.sum(axis=1) == 60)
    for k in range(3):
        law = stats.betabinom(60, w[k], w.sum() - w[k])
        out.append(_chi2_pvalue(d[:, k], law.pmf, 60))
    return out


def test_gamma_binomial_and_multinomial_draws_match_their_laws():
    """``gamma_sample`` (shapes 0.05, 0.7, 3; KS), ``gamma_draws`` (shape-rate; KS),
    ``binomial_sample`` (inversion at n p < 10, BTRS above; chi-square against the exact pmf,
    and a normal-limit KS at n = 2**40, where the standardized error is ~1e-6),
    ``multinomial_sample`` and ``dirmult_sample`` (each component's exact binomial /
    beta-binomial marginal; chi-square): 14 tests, Bonferroni at 1e-3. Seeds 0-99: 1 failure
    (seed 84, ``Bin(1000, 0.004)``, p = 5.6e-5); over those 100 seeds each of the 14 p-values
    fell below 0.1 in 6-13 % of the seeds and below 0.01 in 0-3 %, as uniform p-values do."""
    assert _bonferroni_ok(_variate_pvalues(seed=0))
