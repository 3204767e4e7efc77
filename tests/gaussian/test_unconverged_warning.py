"""The warning of a fit whose aligned chains still disagree
(:func:`bnmfzoo.diagnostics.align`): it names the slowest entries with their R-hat and bulk
ESS, and what to run next.

Deterministic draws built here (no sampler): two chains in the same mode, the second moved
along the scale ridge (``A c``, ``W / c``, ``c = 1.02``: one sd of the draws, so every entry
disagrees after alignment while the chains' 90% intervals still overlap; a larger move, with
disjoint intervals, gets the "chains sit apart" warning instead,
``tests/diagnostics/test_alignment.py``); the same kind of draws with both chains alike (and
enough of them) raise no warning.
False-failure rate 0 (fixed draws).
"""

import re
import warnings

import numpy as np
import pytest

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import align

D, N, R = 6, 5, 2


def _draws(shift, S=200):
    rng = np.random.default_rng(0)
    A0, W0 = rng.gamma(2.0, 1.0, (D, R)), rng.gamma(2.0, 1.0, (R, N))
    A = A0[None, None] * np.exp(0.02 * rng.standard_normal((2, S, D, R)))
    W = W0[None, None] * np.exp(0.02 * rng.standard_normal((2, S, R, N)))
    A[1] *= shift
    W[1] /= shift
    return build_datatree({"A": A, "W": W})


def test_warning_names_the_slowest_entries_and_the_next_run():
    with pytest.warns(UserWarning, match="still disagree") as rec:
        out = align(_draws(1.02))
    msg = str(rec[0].message)
    # the slowest entries, worst first, with R-hat and bulk ESS
    slow = re.findall(r"([AW])\[(\d+), (\d+)\]: R-hat (\d\.\d+), bulk ESS (\d+)", msg)
    assert len(slow) == 5
    rhats = [float(r[3]) for r in slow]
    assert rhats == sorted(rhats, reverse=True) and min(rhats) > 1.01
    assert all(int(e) < 400 for *_, e in slow)
    assert "12 of 12 entries of A" in msg and "10 of 10 entries of W" in msg
    # what to run next: more draws per chain, sized from the smallest ESS, then tempering
    more = int(re.search(r"run about (\d+) draws per chain \(2 chains; now 200", msg).group(1))
    assert more > 200 and more % 100 == 0
    assert "ReplicaExchangeGibbs" in msg and "bnmfzoo.diagnostics.summary" in msg
    assert "chains sit apart" not in msg
    assert int(out["diagnostics"]["n_rhat_above_A"]) == 12


def test_no_warning_when_the_chains_agree():
    # independent draws: 2000 per chain keep the split R-hat of all 22 entries below 1.01
    # (its spread is about 1 / (number of draws) here; 200 draws per chain do not)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = align(_draws(1.0, S=2000))
    assert int(out["diagnostics"]["n_rhat_above_A"]) == 0
