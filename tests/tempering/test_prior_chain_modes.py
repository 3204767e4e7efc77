"""Plain chains from the prior group into modes by their aligned means, not by end states.

A broad mode: every sweep of the toy draws the basis afresh, ``A = mu * exp(0.45 z)`` entry by
entry (``z`` standard normal), so one state lies a median 21 degrees (10th percentile 14) from
the mode's mean and two states about 28 degrees from each other. With the cut at 12 degrees the
end states of the chains are almost all "outside" the mode they are in, and grouped by end
states they made one mode look like several; the mean of a chain's 50 kept states lies about
``21 / sqrt(50) = 3`` degrees from the mode's mean, well inside the cut.

False failures, measured once over 40 seeds each (chain seeds 1000-1039 and 2000-2039, same
modes): 0 of 40 for both tests; the new mode's reference lay at most 2.75 degrees from B's mean
against the 6 allowed.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from bnmfzoo.diagnostics._modes.mode_clustering import _aligned_mean, _unit_l2, matched_angles
from bnmfzoo.inference.mode_bridge import prior_chain_modes

_MU = np.array([[4, 0.5], [3, 0.5], [2, 1], [1, 2], [0.5, 3], [0.5, 4.0]])
_SIGMA = 0.45
_CUT = 12.0


def _broad_mode_family(mu):
    def sweep(state, beta, rng):
        state[0] = mu * np.exp(_SIGMA * rng.standard_normal(mu.shape))

    return SimpleNamespace(
        tempered=SimpleNamespace(sweep=sweep),
        factors=lambda state: (state[0], None),
        draw_prior=lambda rng: [rng.gamma(1.0, 1.0, mu.shape)])


def _mode_mean(mu, seed):
    """The mode's mean direction from 4,000 independent states (error about 0.3 degrees)."""
    rng = np.random.default_rng(seed)
    U = _unit_l2(mu * np.exp(_SIGMA * rng.standard_normal((4000,) + mu.shape)))
    return _aligned_mean(U, np.ones(4000), _unit_l2(mu), 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_broad_mode_is_not_split_by_noisy_end_states(seed):
    """Refs hold the one mode: every chain is near it and no new mode is made, although the
    chains' end states lie beyond the cut (what the end-state rule split into new modes)."""
    ref = _mode_mean(_MU, 100 + seed)[None]
    fam = _broad_mode_family(_MU)
    ends_rng = np.random.default_rng(seed)
    new_refs, new_states, near, _ = prior_chain_modes(fam, ref, _CUT, ends_rng, n_chains=8,
                                                      n_sweeps=100)
    assert new_refs.shape == (0, 6, 2), (new_refs.shape, near)
    assert np.all(near == 0) and new_states == []
    # the situation of the old rule: the same chains' end states, compared one by one
    fam2 = _broad_mode_family(_MU)
    rng2 = np.random.default_rng(seed)
    end_states = []
    for _ in range(8):
        s = fam2.draw_prior(rng2)
        for _ in range(100):
            fam2.tempered.sweep(s, 1.0, rng2)
        end_states.append(s[0])
    d = matched_angles(_unit_l2(np.stack(end_states)), ref)[0][:, 0]
    assert np.sum(d > _CUT) >= 4, d


def test_a_mode_the_refs_lack_is_one_new_mode_whose_reference_is_its_mean():
    """Refs hold mode A only; chains in mode B (more than 36 degrees away) give exactly one
    new mode, represented within 6 degrees of B's mean."""
    mu_b = np.array([[1, 4], [1, 1], [4, 1], [4, 1], [1, 1], [1, 4.0]])
    ref_a = _mode_mean(_MU, 7)[None]
    mean_b = _mode_mean(mu_b, 8)
    assert matched_angles(mean_b[None], ref_a)[0][0, 0] > 3 * _CUT
    new_refs, new_states, near, _ = prior_chain_modes(
        _broad_mode_family(mu_b), ref_a, _CUT, np.random.default_rng(3), n_chains=6,
        n_sweeps=100)
    assert new_refs.shape == (1, 6, 2) and np.all(near == -1) and len(new_states[0]) == 6
    assert matched_angles(new_refs, mean_b[None])[0][0, 0] < 6.0
