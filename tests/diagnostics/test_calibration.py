"""The SBC harness: exact size, power, thinning by measured ESS, and the simultaneous ECDF band.

False-failure rates (a correct sampler failing ``passed(alpha=0.01)``), measured once with
``nice -n 10 python -m benchmarks.calibration.sbc_false_failure <case> --seeds 1000:<stop>``
(cases in ``_sbc_cases.py``):

* ``conjugate-exact`` (independent exact draws, 300 simulations, 2 scalars; nominal rate
  1 - 0.995^2 = 0.998%): 39 of 3000 seeds (1000..3999) = 1.3%, 95% CI 0.9-1.8% (one-sided
  binomial p = 0.062 for the excess); each scalar's p-values across the seeds are uniform
  (Bonferroni-adjusted KS p = 0.27). scipy's KS test itself has its size (180 of 40,000
  uniform samples of 300 below p = 0.005, 200 expected).
* ``conjugate-ar1`` (an exact-marginal AR(1) chain of 1000 draws, rho = 0.95, thinned by
  measured ESS, 200 simulations): 0 of 50 seeds (95% CI 0-7.1%); p-values across seeds
  uniform (adjusted KS p = 0.62); measured thinning median 45 (true autocorrelation time 39),
  kept draws median 23. (With rho = 0.99 and 500 draws, ESS about 2.5 per chain, thinning to
  2-3 draws left measurable dependence: 1 of 50 failed and the p-values across seeds were not
  uniform, adjusted KS p = 0.0086; that design was dropped.)

The raw records of these counts were not kept (written to a git-ignored folder at the time); the
benchmark now writes them to ``benchmarks/calibration/results/``.
"""

import numpy as np
import pytest
from _sbc_cases import CASES
from arviz_stats.base import array_stats
from scipy import stats

from bnmfzoo.diagnostics import sbc
from bnmfzoo.diagnostics.calibration import chain_ess, ecdf_band, ess_bulk_tail, run_to_ess

N_OBS = 5


def simulate(rng):
    mu = rng.normal(size=2)
    return {"mu": mu}, rng.normal(mu, 1.0, size=(N_OBS, 2))


def exact(y, rng):
    # prior N(0, 1), likelihood N(mu, 1): posterior N(sum y / (n+1), 1 / (n+1))
    post_var = 1 / (N_OBS + 1)
    return {"mu": rng.normal(y.sum(0) * post_var, np.sqrt(post_var), size=(99, 2))}


def too_wide(y, rng):
    post_var = 1 / (N_OBS + 1)
    return {"mu": rng.normal(y.sum(0) * post_var, np.sqrt(2 * post_var), size=(99, 2))}


def test_sbc_accepts_exact_sampler():
    result = CASES["conjugate-exact"].run(1)  # = sbc(simulate, exact, n_sims=300, seed 1)
    assert result.ranks["mu"].shape == (300, 2)
    assert result.ranks["mu"].min() >= 0 and result.ranks["mu"].max() <= 99
    assert (result.n_draws == 99).all() and (result.thin == 1).all() and result.ess is None
    # KS on the randomized PIT has exact size: at Bonferroni level 0.01 / 2 a correct sampler
    # fails with probability <= 1% (measured: see the module docstring)
    assert result.passed(alpha=0.01)


def test_sbc_rejects_sampler_with_wrong_variance():
    result = sbc(simulate, too_wide, n_sims=1000, random_seed=1, progressbar=False)
    # Posterior variance x2 piles ranks in the middle; with 1000 simulations the KS statistic is
    # far beyond the 1e-4 critical value.
    assert result.min_pvalue < 1e-4
    assert not result.passed()


def test_ess_estimator_equals_arviz_stats():
    rng = np.random.default_rng(1)
    for n in (50, 51, 1001):
        x = np.zeros((30, n))
        rho = rng.uniform(-0.5, 0.99, size=30)
        for t in range(1, n):
            x[:, t] = rho * x[:, t - 1] + rng.normal(size=30)
        x[0] = rng.integers(0, 3, size=n)  # ties
        x[1] = 2.0  # constant
        bulk, tail = ess_bulk_tail(x)
        np.testing.assert_allclose(
            bulk, array_stats.ess(x, chain_axis=None, method="bulk"), rtol=1e-12)
        np.testing.assert_allclose(
            tail, array_stats.ess(x, chain_axis=None, method="tail", prob=(0.05, 0.95)),
            rtol=1e-12)


def test_thinning_by_measured_ess():
    # an exact-marginal AR(1) chain (rho = 0.95, autocorrelation time 39) of 1000 draws
    result = CASES["conjugate-ar1"].run(3)
    assert result.ess.shape == (200,)
    # thinning = ceil(n / ESS) and the kept draws are ceil(n / thinning)
    np.testing.assert_array_equal(result.thin, np.ceil(1000 / result.ess).astype(int))
    np.testing.assert_array_equal(result.n_draws, np.ceil(1000 / result.thin).astype(int))
    # the measured autocorrelation times scatter around the true 39
    assert 25 < np.median(1000 / result.ess) < 60
    assert result.passed(alpha=0.01)  # false-failure rate: module docstring


def test_run_to_ess_doubles_until_target():
    rng = np.random.default_rng(0)
    x = np.zeros(1)

    def step():
        x[:] = 0.95 * x + rng.normal()
        return {"x": x}

    draws = run_to_ess(step, ess_target=40, min_draws=100)
    n = len(draws["x"])
    assert n in {100 * 2**k for k in range(10)} and chain_ess(draws) >= 40
    assert chain_ess({"x": draws["x"][: n // 2]}) < 40 or n == 100
    capped = run_to_ess(step, ess_target=1e9, min_draws=100, max_draws=400)
    assert len(capped["x"]) == 400


def test_sbc_errors():
    with pytest.raises(ValueError, match="n_sims"):
        sbc(simulate, exact, n_sims=1)
    with pytest.raises(ValueError, match="shape"):
        sbc(simulate, lambda y, rng: {"mu": np.zeros((10, 3))}, n_sims=3, progressbar=False)
    with pytest.raises(ValueError, match="thin"):
        sbc(simulate, exact, n_sims=3, thin=0)
    with pytest.raises(ValueError, match="at least"):
        sbc(simulate, lambda y, rng: {"mu": np.zeros((20, 2))}, n_sims=3, thin="ess",
            progressbar=False)
    with pytest.raises(ValueError, match="no draws"):
        sbc(simulate, lambda y, rng: {}, n_sims=3, progressbar=False)


def test_sbc_plot_shows_simultaneous_band():
    result = sbc(simulate, exact, n_sims=20, random_seed=0, progressbar=False)
    pc = result.plot(prob=0.95)
    fig = pc.viz["figure"].item()
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2
    band = pc.viz["sbc_band"]["mu"].values[0]
    x, lo, hi = ecdf_band(20, 0.95)
    path = band.get_paths()[0].vertices
    # the shaded region spans the simultaneous band of ECDF - x
    assert path[:, 1].max() == pytest.approx((hi - x).max())
    assert path[:, 1].min() == pytest.approx((lo - x).min())


@pytest.mark.parametrize("prob", [0.95, 0.99])
def test_ecdf_band_is_simultaneous(prob):
    """Coverage of the whole ECDF of n = 100 uniforms over 4000 replications is ~ prob.

    Tolerance: the band's adjusted level is a quantile of 1000 simulations (sd of its coverage
    about sqrt(prob (1 - prob) / 1000)) and 4000 replications add sqrt(prob (1 - prob) / 4000);
    3.5 sd of the sum is 0.027 (prob 0.95) or 0.012 (0.99). A pointwise band at the same level
    covers the whole curve far less often (about 0.59 and 0.89 measured).
    """
    n = 100
    x, lo, hi = ecdf_band(n, prob)
    u = np.sort(np.random.default_rng(1).uniform(size=(4000, n)), axis=1)
    ecdf = np.stack([np.searchsorted(row, x, side="right") / n for row in u])
    coverage = ((ecdf >= lo - 1e-12) & (ecdf <= hi + 1e-12)).all(axis=1).mean()
    sd = np.sqrt(prob * (1 - prob) * (1 / 1000 + 1 / 4000))
    assert abs(coverage - prob) < 3.5 * sd
    q = np.array([(1 - prob) / 2, (1 + prob) / 2])[:, None]
    plo, phi = stats.binom.ppf(q, n, x[1:-1]) / n
    pointwise = ((ecdf[:, 1:-1] >= plo) & (ecdf[:, 1:-1] <= phi)).all(axis=1).mean()
    assert pointwise < prob - 0.05
