"""Exactness checks with power against small bugs in HMC rejuvenation and resampling (#36).

* HMC at a large step size (1.8 on N(0, 1), one leapfrog step): the unadjusted leapfrog map
  there has stationary variance 1 / (1 - 1.8^2 / 4) = 5.3, so an acceptance ratio that drops
  the final kinetic energy (and accepts nearly everything) is far from invariant, while a
  correct Metropolis correction keeps exact draws exact. ``test_rejuvenate.py``'s invariance
  test (step 0.7) did not see that bug.
* Systematic resampling: every particle's count is ``floor(n w)`` or ``ceil(n w)`` (its
  defining property), on many weight vectors and small ``n``; the 1000-draw frequency test of
  ``test_particles.py`` could not see a grid off by one draw.
"""

import numpy as np

from bnmfzoo.inference.particles.rejuvenate import hmc_rejuvenate
from bnmfzoo.inference.particles.weighted import systematic_resample


def _normal(q):
    return -0.5 * float(q @ q), -q


def test_hmc_keeps_exact_draws_exact_at_a_large_step():
    """2000 chains from exact N(0, 1) draws, 5 transitions: the variance of the final states.

    Under an invariant kernel they are iid N(0, 1): the sample variance has sd sqrt(2 / 1999) =
    0.032; the bound is 5 sd (false-failure probability < 1e-6 by the normal approximation of
    the variance of 2000 draws); the bug above is caught (``benchmarks/mutation/REPORT.md``,
    ``particles-hmc-no-kinetic-energy``).
    """
    rng = np.random.default_rng(0)
    q0 = rng.standard_normal((2000, 1))
    out = np.array([hmc_rejuvenate(_normal, q, n_steps=5, n_leapfrog=1, step_size=1.8,
                                   n_adapt=0, rng=rng)[0] for q in q0])
    assert abs(out.var(ddof=1) - 1.0) < 5 * np.sqrt(2 / 1999), out.var(ddof=1)
    assert abs(out.mean()) < 5 / np.sqrt(2000)
    assert np.abs(out - q0).max() > 0.5  # the chains moved


def test_systematic_resampling_counts_are_floor_or_ceil():
    rng = np.random.default_rng(1)
    for _ in range(500):
        m = rng.integers(2, 8)
        w = rng.dirichlet(np.full(m, 0.5))
        n = int(rng.integers(1, 12))
        counts = np.bincount(systematic_resample(w, n, rng), minlength=m)
        assert counts.sum() == n
        assert np.all(counts >= np.floor(n * w) - 1e-9) and np.all(counts <= np.ceil(n * w)), (
            w, n, counts)
