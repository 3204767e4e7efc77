"""Exact arithmetic of the Monte-Carlo error estimators behind the mode masses.

:func:`~bnmfzoo.diagnostics._modes.masses.batch_means_mcse` (Flegal, Haran & Jones 2008) and
:func:`~bnmfzoo.diagnostics._modes.masses.mass_interval` (Korn & Graubard 1998) are
closed-form: these tests compare them with hand-computed cases to ~1e-12, where the reference
is computed by another route than the library's (the two-batch error ``|m1 - m2| / 2``; the
Clopper-Pearson bounds as roots of the binomial tail equations, not ``beta.ppf``; the zero-count
bound ``1 - (alpha / 2)^(1 / n)``), check that the interval widens as its degrees of freedom
or its effective sample size fall, and measure the interval's coverage with a floor set by the
coverage estimate's own Monte-Carlo error (a 10 % narrower interval fails; see
:func:`test_mass_interval_coverage_floor_set_by_its_own_error`). A batch-means error 2.5 %
too small or an interval 13 % too narrow fail here (``benchmarks/mutation/catalog_modes.py``),
not only a doctest's printed digits.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from bnmfzoo.diagnostics._modes.masses import (
    batch_means_mcse,
    mass_interval,
    mode_masses,
    n_batches_of,
)

# ------------------------------------------------------------------------------ batch means


def test_two_batches_give_half_the_difference_of_their_means():
    """One chain cut into two batches: sd(m1, m2) / sqrt(2) = |m1 - m2| / 2 exactly."""
    x = np.array([[0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 7.0]])  # last draw left out
    m1, m2 = x[0, :4].mean(), x[0, 4:8].mean()
    assert batch_means_mcse(x, n_batches=2) == pytest.approx(abs(m1 - m2) / 2, abs=1e-15)
    rng = np.random.default_rng(1)
    for _ in range(20):
        S = int(rng.integers(4, 60))
        y = rng.normal(size=(1, S))
        L = S // 2
        want = abs(y[0, :L].mean() - y[0, L:2 * L].mean()) / 2
        assert abs(batch_means_mcse(y, n_batches=2) - want) <= 1e-12 * max(1.0, want)


def test_batch_means_pool_the_batches_of_every_chain():
    """C chains, b = max(2, ceil(n_batches / C)) batches each: sd(all C b means, ddof 1) /
    sqrt(C b), by hand for 3 chains and 20 batches (7 per chain, 21 means)."""
    rng = np.random.default_rng(2)
    x = rng.random((3, 150))
    b = 7
    assert n_batches_of(3, 20) == b
    L = 150 // b  # 21 draws per batch, the last 3 draws of each chain left out
    means = [x[c, j * L:(j + 1) * L].mean() for c in range(3) for j in range(b)]
    mu = sum(means) / len(means)
    sd = math.sqrt(sum((m - mu) ** 2 for m in means) / (len(means) - 1))
    assert batch_means_mcse(x) == pytest.approx(sd / math.sqrt(len(means)), rel=1e-12)
    # a constant series has no error; fewer than 2 draws per batch: NaN
    assert batch_means_mcse(np.ones((2, 40))) == 0.0
    assert math.isnan(batch_means_mcse(np.ones((1, 3)), n_batches=2))


# ------------------------------------------------------------------------------ the interval


def _clopper_pearson_by_tails(x, n, alpha):
    """Clopper-Pearson bounds for x of n (integers) as the roots of the binomial tail equations
    P(Bin(n, lo) >= x) = alpha / 2 and P(Bin(n, hi) <= x) = alpha / 2 (no beta quantiles)."""
    lo = optimize.brentq(lambda q: stats.binom.sf(x - 1, n, q) - alpha / 2, 1e-12, x / n,
                         xtol=1e-15, rtol=1e-15)
    hi = optimize.brentq(lambda q: stats.binom.cdf(x, n, q) - alpha / 2, x / n, 1 - 1e-12,
                         xtol=1e-15, rtol=1e-15)
    return lo, hi


@pytest.mark.parametrize("p, n_eff, level", [(0.25, 48, 0.95), (0.1, 200, 0.9),
                                             (0.5, 10, 0.99)])
def test_interval_is_clopper_pearson_of_the_effective_sample(p, n_eff, level):
    """With ``se`` chosen so that ``p (1 - p) / se^2`` is the integer ``n_eff`` and ``df = 0``
    (no t correction), the interval is Clopper-Pearson's for ``n_eff p`` successes of
    ``n_eff``, computed here from the binomial tails."""
    se = math.sqrt(p * (1 - p) / n_eff)
    lo, hi = mass_interval(p, se, 10**6, 0, level=level)
    want = _clopper_pearson_by_tails(round(n_eff * p), n_eff, 1 - level)
    assert lo == pytest.approx(want[0], abs=1e-12)
    assert hi == pytest.approx(want[1], abs=1e-12)


def test_t_correction_shrinks_the_effective_sample_by_z_over_t_squared():
    """df = 19: n_eff = 48 (z_{0.975} / t_{19, 0.975})^2 = 41.90..., the Clopper-Pearson
    interval of 0.25 n_eff successes (beta quantiles at the non-integer sample)."""
    p, n0 = 0.25, 48
    se = math.sqrt(p * (1 - p) / n0)
    z, t = 1.959963984540054, stats.t.isf(0.025, 19)
    n_eff = n0 * (z / t) ** 2
    x = p * n_eff
    lo, hi = mass_interval(p, se, 10**6, 19)
    # the beta(x, n - x + 1) cdf at lo is the binomial tail continued to real x: solve it
    want_lo = optimize.brentq(lambda q: stats.beta.cdf(q, x, n_eff - x + 1) - 0.025, 1e-9, p,
                              xtol=1e-15, rtol=1e-15)
    want_hi = optimize.brentq(lambda q: stats.beta.sf(q, x + 1, n_eff - x) - 0.025, p,
                              1 - 1e-9, xtol=1e-15, rtol=1e-15)
    assert lo == pytest.approx(want_lo, abs=1e-12) and hi == pytest.approx(want_hi, abs=1e-12)


def test_edges_zero_mass_and_the_draw_cap():
    """p = 0: [0, 1 - (alpha / 2)^(1 / n)] with n the draws (no error to shrink by); an MCSE
    smaller than the binomial one is capped at the number of draws; NaN in, NaN out."""
    lo, hi = mass_interval(0.0, 0.0, 400, 0)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 400), abs=1e-14)
    lo1, hi1 = mass_interval(0.3, 1e-9, 100, 0)
    want = _clopper_pearson_by_tails(30, 100, 0.05)
    assert (lo1, hi1) == pytest.approx(want, abs=1e-12)
    assert all(math.isnan(v) for v in mass_interval(np.nan, 0.01, 100, 19))
    with pytest.raises(ValueError, match="level"):
        mass_interval(0.3, 0.01, 100, 19, level=1.0)


def test_interval_widens_as_degrees_of_freedom_or_effective_sample_fall():
    """Nested intervals: fewer degrees of freedom (a less certain MCSE) or a larger MCSE (a
    smaller effective sample) give a strictly wider interval containing the narrower one."""
    p = 0.2
    prev = None
    for df in (1000, 100, 19, 9, 4, 2, 1):
        lo, hi = mass_interval(p, 0.01, 10**6, df)
        if prev is not None:
            assert lo < prev[0] and hi > prev[1]
        prev = (lo, hi)
    prev = None
    for se in (0.001, 0.003, 0.01, 0.03, 0.08):
        lo, hi = mass_interval(p, se, 10**6, 19)
        if prev is not None:
            assert lo < prev[0] and hi > prev[1]
        prev = (lo, hi)


def test_mode_masses_reports_these_estimators_with_pooled_degrees_of_freedom():
    """``mode_masses``' ``weight_mcse`` is the batch-means error of the mode indicator and its
    interval is :func:`mass_interval` at ``df = C b - 1`` (4 chains x 5 batches: 19)."""
    rng = np.random.default_rng(3)
    label = (rng.random((4, 500)) < 0.3).astype(int)
    out = mode_masses(label, 2)
    ind = (label == 1).astype(float)
    se = batch_means_mcse(ind)
    assert out["weight_mcse"][1] == se
    lo, hi = mass_interval(ind.mean(), se, label.size, 4 * 5 - 1)
    assert (out["weight_low"][1], out["weight_high"][1]) == (lo, hi)


# ------------------------------------------------------------------------------ coverage

#: replications of the coverage test; nominal level and the floor's distance in sd
COVER_REPS, COVER_LEVEL, COVER_SDS = 4000, 0.95, 3.0


def _coverage(seed, reps=COVER_REPS, narrow=1.0, a=0.15, b=0.35, C=4, S=4000):
    """Share of ``reps`` runs whose interval covers the mass ``a / (a + b)``: each run is C
    stationary two-state Markov chains of S draws (P(0 -> 1) = a, P(1 -> 0) = b), with the
    library's batch-means error and interval of the share of state 1. ``narrow`` < 1 shrinks
    every interval about its estimate (to measure the test's power; the test uses 1)."""
    rng = np.random.default_rng(seed)
    p = a / (a + b)
    x = np.empty((reps, C, S), dtype=bool)
    x[..., 0] = rng.random((reps, C)) < p
    for s in range(1, S):
        u = rng.random((reps, C))
        x[..., s] = np.where(x[..., s - 1], u >= b, u < a)
    df = C * n_batches_of(C) - 1
    hits = 0
    for r in range(reps):
        est = x[r].mean()
        lo, hi = mass_interval(est, batch_means_mcse(x[r]), x[r].size, df)
        lo, hi = est - narrow * (est - lo), est + narrow * (hi - est)
        hits += lo <= p <= hi
    return hits / reps


def test_mass_interval_coverage_floor_set_by_its_own_error():
    """Coverage of the 95 % interval over 4000 runs of 4 stationary two-state chains x 4000
    draws (mass 0.3, lag-1 autocorrelation 0.5, so the effective sample is ~1/3 of the draws
    and the cap at the number of draws never binds; 20 batch means of 800 draws, df 19). The
    interval is then the t interval ``p +- t_19 se`` up to its skew and Clopper-Pearson's
    slight excess, so its coverage is the nominal 0.95 or a little above (measured 0.9514 over
    200,000 runs). The floor is 0.95 - 3 sd, sd = sqrt(0.95 0.05 / 4000) = 0.0034: 0.9397,
    false-failure rate 0.13 % at exactly 0.95 (1e-4 at 0.9514). An interval 10 % narrower
    covers about P(|t_19| < 0.9 t_19,0.975) = 0.925 (measured 0.9275), 2.9 of its own sd
    (0.0041) below the floor: it fails with probability 0.998. Seeds 0-49: the correct
    interval 0 failures (lowest 0.9435), the 10 % narrower one 50 failures (highest 0.9355).
    With 3000 runs the narrower one passed 1 seed in 50, hence 4000. About 2 CPU s."""
    sd = math.sqrt(COVER_LEVEL * (1 - COVER_LEVEL) / COVER_REPS)
    floor = COVER_LEVEL - COVER_SDS * sd
    cover = _coverage(seed=4)
    assert cover >= floor, (cover, floor)
