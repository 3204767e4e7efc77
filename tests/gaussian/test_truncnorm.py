"""Truncated-normal draws and moments against scipy and exact tail limits."""

import numpy as np
import pytest
from scipy import integrate, stats

from bnmfzoo.inference.kernels.truncnorm import (
    sample_truncnorm,
    truncnorm_entropy,
    truncnorm_log_normalizer,
    truncnorm_mean_var,
)

# KS tests at 11 settings: Bonferroni level 0.01 / 11 for the family (false alarm < 1%, and the
# seed is fixed, so the outcome is deterministic)
ALPHA = 0.01 / 11


@pytest.mark.parametrize(
    "mu, sigma",
    # standardized bounds a = -mu / sigma on every sampler's side of its switch: normal proposal
    # (a < 0), half-normal (0 <= a < HALF_NORMAL_MAX = 0.3: a = 0, 0.15, 0.29), exponential
    # (a = 0.31, 1, 4, 33)
    [(0.0, 1.0), (2.0, 0.5), (-1.0, 1.0), (-0.3, 2.0), (5.0, 1.0), (-4.0, 1.0), (-10.0, 0.3),
     (-0.29, 1.0), (-0.31, 1.0)],
)
def test_draws_match_scipy(mu, sigma):
    x = sample_truncnorm(np.full(20000, mu), sigma, rng=np.random.default_rng(7))
    assert np.isfinite(x).all() and (x > 0).all()
    ref = stats.truncnorm(-mu / sigma, np.inf, loc=mu, scale=sigma)
    assert stats.kstest(x, ref.cdf).pvalue > ALPHA


@pytest.mark.parametrize("a", [50.0, 1e4])
def test_far_tail_draws(a):
    # mu = -a sigma: the excess over 0 has density prop. to exp(-a y - y^2/2) (y = x / sigma),
    # which is Exp(rate a) up to a relative correction O(1/a^2) (2e-4 at a = 50), invisible to
    # a KS test with 20000 draws (resolution ~ 1e-2)
    sigma = 0.7
    x = sample_truncnorm(np.full(20000, -a * sigma), sigma, rng=np.random.default_rng(8))
    assert np.isfinite(x).all() and (x > 0).all()
    assert stats.kstest(x / sigma, stats.expon(scale=1 / a).cdf).pvalue > ALPHA


def test_draws_reproducible_and_vectorized():
    mu = np.array([[-50.0, 0.0, 3.0], [1.0, -2.0, 20.0]])
    x1 = sample_truncnorm(mu, 1.0, rng=np.random.default_rng(3))
    x2 = sample_truncnorm(mu, 1.0, rng=np.random.default_rng(3))
    assert x1.shape == (2, 3) and np.array_equal(x1, x2)
    with pytest.raises(ValueError, match="sigma"):
        sample_truncnorm(mu, 0.0)
    with pytest.raises(ValueError, match="mu"):
        sample_truncnorm(np.nan, 1.0)


@pytest.mark.parametrize("mu", [-20.0, -3.0, -0.5, 0.0, 1.0, 4.0])
def test_moments_match_scipy(mu):
    sigma = 1.3
    ref = stats.truncnorm(-mu / sigma, np.inf, loc=mu, scale=sigma)
    mean, var = truncnorm_mean_var(mu, sigma)
    assert mean == pytest.approx(ref.mean(), rel=1e-8)
    assert var == pytest.approx(ref.var(), rel=1e-6)
    # scipy's truncnorm entropy is nan for an infinite upper bound: use quadrature
    h = _excess_moments_by_quadrature(-mu / sigma)[2] + np.log(sigma)
    assert truncnorm_entropy(mu, sigma) == pytest.approx(h, rel=1e-8, abs=1e-10)
    assert truncnorm_log_normalizer(mu, sigma) == pytest.approx(stats.norm.logcdf(mu / sigma))


def _excess_moments_by_quadrature(a):
    f = lambda y, n: y**n * np.exp(-a * y - y * y / 2)  # noqa: E731
    up, brk = 50 / max(a, 1.0) + max(-a, 0.0), [1 / max(a, 1.0) + max(-a, 0.0)]
    c = [integrate.quad(f, 0, up, args=(n,), epsabs=0, epsrel=1e-13, points=brk)[0]
         for n in range(3)]
    m1, m2 = c[1] / c[0], c[2] / c[0]
    return m1, m2 - m1**2, a * m1 + m2 / 2 + np.log(c[0])


@pytest.mark.parametrize("a", [7.9, 8.1, 29.9, 30.1, 50.0, 300.0])
def test_tail_moments_exact(a):
    # both sides of the moments' continued-fraction switch (a = 8) and of the entropy's tail
    # form (a = 30); quadrature of the unnormalized excess density is accurate to ~1e-12 here
    sigma = 2.0
    m, v, h = _excess_moments_by_quadrature(a)
    mean, var = truncnorm_mean_var(-a * sigma, sigma)
    assert mean == pytest.approx(sigma * m, rel=1e-9)
    assert var == pytest.approx(sigma**2 * v, rel=1e-8)
    assert truncnorm_entropy(-a * sigma, sigma) == pytest.approx(h + np.log(sigma), abs=1e-9)


def test_moments_extreme_finite():
    mu = np.array([-1e8, -1e3, 0.0, 1e3, 1e8])
    mean, var = truncnorm_mean_var(mu, 1.0)
    assert np.isfinite(mean).all() and np.isfinite(var).all()
    assert (mean > 0).all() and (var > 0).all()
    # exponential limit sigma^2/|mu| far below zero, plain normal far above
    assert mean[0] == pytest.approx(1e-8, rel=1e-12)
    assert var[0] == pytest.approx(1e-16, rel=1e-12)
    assert mean[-1] == 1e8 and var[-1] == pytest.approx(1.0)
