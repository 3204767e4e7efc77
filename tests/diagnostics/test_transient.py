"""The MSER truncation point (bnmfzoo.diagnostics._transient): little cut from exact stationary
draws, the cut at the end of a planted start-up transient, each chain on its own."""

import numpy as np
import pytest

from bnmfzoo.diagnostics._transient import transient_end, trim_transients


def test_a_stationary_chain_loses_few_draws():
    """Exact iid draws (n = 400) have no transient: over 20,000 seeds the cut's 99th percentile
    was 11 draws and its largest 41 (measured once, seed 123); here 300 seeds must stay below
    60 draws each and average below 8 (measured mean 1.4)."""
    rng = np.random.default_rng(7)
    cuts = np.array([transient_end(rng.normal(size=400)) for _ in range(300)])
    assert cuts.max() < 60 and cuts.mean() < 8.0


def test_the_cut_lands_at_the_end_of_a_planted_transient():
    """A trace climbing 50 sds with time constant 20 draws (below 1 sd after ~80 draws) plus
    unit noise: over 2,000 seeds every cut fell in 59-109 draws (measured once); 200 seeds here
    must fall in 50-120. A rule that cut nothing, or half the chain, fails."""
    rng = np.random.default_rng(11)
    climb = -50.0 * np.exp(-np.arange(400) / 20.0)
    cuts = np.array([transient_end(climb + rng.normal(size=400)) for _ in range(200)])
    assert cuts.min() >= 50 and cuts.max() <= 120


def test_each_chain_is_cut_at_its_own_transient_and_at_most_half():
    """Chain 0 climbs for ~80 draws, chain 1 is stationary, chain 2 never settles (a straight
    climb): the cuts are ~80, ~0 and the cap ``ceil(n / 2) - 1``; only the cut draws go."""
    rng = np.random.default_rng(3)
    n = 300
    x = np.concatenate([-50.0 * np.exp(-np.arange(n) / 20.0) + rng.normal(size=n),
                        rng.normal(size=n), np.linspace(-100.0, 0.0, n)])
    chain = np.repeat([2, 0, 1], n)  # labels need not be in order
    keep, cut = trim_transients(x, chain)
    assert 50 <= cut[2] <= 120 and cut[0] < 30 and cut[1] == (n + 1) // 2 - 1
    for c, start in ((2, 0), (0, n), (1, 2 * n)):
        assert not keep[start:start + cut[c]].any() and keep[start + cut[c]:start + n].all()


def test_bad_traces_are_refused():
    with pytest.raises(ValueError, match="non-finite"):
        transient_end(np.r_[np.zeros(10), np.nan])
    with pytest.raises(ValueError, match="one chain"):
        transient_end(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="one length"):
        trim_transients(np.zeros(5), np.zeros(4))
    assert transient_end([5.0, 1.0, 2.0]) == 0  # too short to cut
