"""The compressive route says when its chains have not forgotten their starts.

At a weak compression (``strength`` of the order of ``1 / N``) the extra signatures of the
KL-NMF start are compressed slowly: ``mu_k``'s conditional is then held by the exposures alone,
and on synthetic cohorts of 100 genomes the number of active signatures still falls after the
workflow's 2,000 burn-in sweeps (``docs/results/signatures_calibration.md``). The rank table then
reads as a confident overcount. :func:`counts_rhat` (split rank R-hat of the active counts,
Vehtari et al. 2021) catches the drift, and the note says so.

False-failure rates, measured once over seeds 0-99 with this file's helpers: the short weak run
is flagged in 100 of 100 (R-hat 1.28-2.67); the converged default run (300 + 600 sweeps) in 1
of 100 (seed 80, R-hat 1.11: its chains put 0.03 to 0.25 on a third signature, a real
disagreement; with 200 kept sweeps instead of 600 it was 6 of 100, so the test keeps 600);
i.i.d. chains of counts (4 x 200 draws, P(5) from 0.02 to 0.3) exceed the limit in 0 of 1,000
each.
"""

import math
import warnings

import numpy as np
import pytest

from bnmfzoo.signatures.compressive import RHAT_LIMIT, compressive_rank_posterior, counts_rhat


def _catalog(seed, n=30):
    rng = np.random.default_rng(seed)
    W = rng.dirichlet(np.full(96, 0.3), 2)
    return rng.poisson(rng.gamma(1.0, 100.0, (n, 2)) @ W)


def _run(seed, strength, n_burn, n_keep=200):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compressive_rank_posterior(_catalog(seed), [1, 2, 3], k_max=6, n_chains=4,
                                          n_burn=n_burn, n_keep=n_keep, thin=5, strength=strength,
                                          random_seed=seed)


def test_counts_rhat_cases():
    assert counts_rhat(np.full((4, 40), 3)) == 1.0
    assert counts_rhat(np.array([[5] * 40, [7] * 40])) == math.inf  # stuck apart
    assert math.isnan(counts_rhat(np.full((1, 40), 3)))  # one chain: nothing to compare
    drift = np.repeat(np.arange(8, 4, -1), 10)[None, :].repeat(4, axis=0)  # all fall 8 -> 5
    assert counts_rhat(drift) > RHAT_LIMIT
    rng = np.random.default_rng(0)
    iid = 4 + (rng.uniform(size=(4, 200)) < 0.1)
    assert counts_rhat(iid) < RHAT_LIMIT


def test_a_weak_compression_still_compressing_is_flagged():
    """``strength="unit"`` after 30 sweeps: the counts still fall (R-hat about 1.9)."""
    table = _run(0, "unit", 30)
    assert table.attrs["rhat"] > RHAT_LIMIT
    assert "have not converged" in table.attrs["note"]


def test_a_converged_run_is_not_flagged():
    """The default compression after 300 + 600 sweeps sits at the true 2 (R-hat about 1.0)."""
    table = _run(0, None, 300, 600)
    assert table.attrs["rhat"] < RHAT_LIMIT
    assert "have not converged" not in table.attrs["note"]
    assert "most probable rank 2" in table.attrs["note"]


@pytest.mark.parametrize("bad", [np.zeros(5), np.zeros((2, 2))])
def test_counts_rhat_needs_chains_and_draws(bad):
    assert math.isnan(counts_rhat(bad))
