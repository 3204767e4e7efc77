"""Self-test of ``benchmarks.speed.masses_calibration``: the symmetric problem's exact answer
(its posterior is invariant under a map that exchanges the two factorizations, so each holds
exactly half the mass) and the exact binomial interval of the coverage."""

import math

import numpy as np
import pytest

from benchmarks.speed.masses_calibration import (
    SWAP,
    _mass_of,
    clopper_pearson,
    symmetric_laurberg,
)


@pytest.mark.parametrize("tiles", [(1, 1), (33, 6)])
def test_symmetric_problem_is_invariant_and_swaps_the_factorizations(tiles):
    X, (A0, A1), rows, cols = symmetric_laurberg(tiles, random_seed=3)
    assert X.shape == (6 * tiles[0], 6 * tiles[1])
    assert np.array_equal(X, X[np.ix_(rows, cols)])  # the data: exactly invariant
    assert np.array_equal(A0[rows], A1) and np.array_equal(A1[rows], A0)  # swapped
    assert np.array_equal(rows[rows], np.arange(rows.size))  # an involution, no fixed point
    assert np.all(rows != np.arange(rows.size)) and np.all(cols != np.arange(cols.size))
    noise = X - np.tile(A0[:6] @ A0[:6].T, tiles)
    assert 0.03 < noise.std() < 0.07  # sd 0.05 per entry kept by the averaging
    assert np.array_equal(SWAP[SWAP], np.arange(6))


def test_symmetric_problem_posterior_density_is_invariant():
    """The model's log density (priors, likelihood and log-transform Jacobian) is the same at
    ``(A, W)`` and at its image ``(A[rows], W[:, cols])``, at random points: the posterior is
    invariant, so the two factorizations' masses are equal."""
    from bnmfzoo.models import exponential_gaussian

    X, _, rows, cols = symmetric_laurberg((2, 1), random_seed=0)
    model = exponential_gaussian(X, 3, sigma=0.2, lambda_=1.0)
    logp = model.compile_logp()
    rng = np.random.default_rng(1)
    for _ in range(5):
        A, W = rng.exponential(size=(12, 3)), rng.exponential(size=(3, 6))
        a = logp({"A_log__": np.log(A), "W_log__": np.log(W)})
        b = logp({"A_log__": np.log(A[rows]), "W_log__": np.log(W[:, cols])})
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    # and a map that is not a symmetry of the data changes it (the check can fail)
    A, W = rng.exponential(size=(12, 3)), rng.exponential(size=(3, 6))
    c = logp({"A_log__": np.log(A[::-1]), "W_log__": np.log(W)})
    assert not math.isclose(logp({"A_log__": np.log(A), "W_log__": np.log(W)}), c)


def test_clopper_pearson_matches_the_binomial_tails():
    from scipy.stats import binom

    lo, hi = clopper_pearson(17, 20)
    assert math.isclose(binom.sf(16, 20, lo), 0.025, rel_tol=1e-6)
    assert math.isclose(binom.cdf(17, 20, hi), 0.025, rel_tol=1e-6)
    assert clopper_pearson(20, 20)[1] == 1.0 and clopper_pearson(0, 20)[0] == 0.0


def test_mass_of_takes_the_heaviest_mode_nearest_the_solution():
    _, (A0, A1), _, _ = symmetric_laurberg((1, 1))
    W = np.ones((3, 6))

    def mode(A, mass):
        return {"A": A[None], "W": W[None], "member_weight": np.ones(1), "mass": mass,
                "low": mass / 2, "high": min(1.0, 2 * mass)}

    out = {"modes": [mode(A1, 0.6), mode(A0, 0.3), mode(A0 + 0.01, 0.1)]}
    assert _mass_of(out, [A0, A1], 0) == (0.3, 0.15, 0.6)
    assert _mass_of(out, [A0, A1], 1) == (0.6, 0.3, 1.0)
    m, lo, hi = _mass_of({"modes": [mode(A1, 1.0)]}, [A0, A1], 0)
    assert m == 0.0 and math.isnan(lo) and math.isnan(hi)  # never reached: a miss
