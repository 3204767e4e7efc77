"""Matching discovered signatures to true ones: Hungarian pairs, precision / recall / F1."""

import itertools

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bnmfzoo.signatures.matching import (
    cosine_matrix,
    discovery_scores,
    match_signatures,
)

BASES = "ACGT"
CHANNELS = [f"{a}[{m}]{b}" for m in ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
            for a in BASES for b in BASES]


def _truth(n=5, seed=0):
    return np.random.default_rng(seed).dirichlet(np.full(96, 0.3), size=n)


def test_identical_sets_score_one_whatever_the_order_and_scale():
    truth = _truth()
    found = truth[[3, 1, 4, 0, 2]] * np.array([[10.0], [2.0], [0.5], [1.0], [7.0]])
    scores = discovery_scores(found, truth)
    assert scores.index.tolist() == [0.8, 0.9, 0.95]
    assert (scores[["precision", "recall", "f1"]] == 1.0).all().all()
    assert (scores["n_found"] == 5).all() and (scores["n_true"] == 5).all()


def test_hand_computed_counts():
    """Two true signatures found, one missed, one spurious (random) found."""
    truth = _truth(3, seed=1)
    noise = np.random.default_rng(2).dirichlet(np.ones(96))
    found = np.vstack([truth[0], truth[1], noise])
    cos = cosine_matrix(found, truth)
    assert cos[2].max() < 0.8  # the spurious one matches nothing at any cutoff
    scores = discovery_scores(found, truth)
    for c in (0.8, 0.9, 0.95):
        assert scores.loc[c, "true_positives"] == 2
        assert scores.loc[c, "precision"] == pytest.approx(2 / 3)
        assert scores.loc[c, "recall"] == pytest.approx(2 / 3)
        assert scores.loc[c, "f1"] == pytest.approx(2 / 3)


def test_one_found_signature_never_counts_twice():
    """A blend of two near-identical true signatures matches one of them, not both."""
    truth = _truth(2, seed=3)
    truth[1] = 0.97 * truth[0] + 0.03 * truth[1]
    found = truth.mean(axis=0, keepdims=True)
    assert (cosine_matrix(found, truth) > 0.95).all()
    scores = discovery_scores(found, truth)
    assert (scores["true_positives"] == 1).all()
    assert (scores["precision"] == 1.0).all() and (scores["recall"] == 0.5).all()


@pytest.mark.parametrize("seed", range(5))
def test_hungarian_pairs_maximize_the_total_cosine(seed):
    """Against brute force over every one-to-one pairing (greedy would not always match)."""
    rng = np.random.default_rng(seed)
    found = rng.dirichlet(np.full(96, 0.5), size=4)
    truth = rng.dirichlet(np.full(96, 0.5), size=5)
    cos = cosine_matrix(found, truth)
    best = max(sum(cos[i, p[i]] for i in range(4)) for p in itertools.permutations(range(5), 4))
    pairs = match_signatures(found, truth)
    assert len(pairs) == 4 and pairs["found"].is_unique and pairs["truth"].is_unique
    assert pairs["cosine"].sum() == pytest.approx(best)


def test_hungarian_beats_greedy_on_a_crafted_case():
    """Greedy takes the 0.95 pair first and leaves 0.65; the optimum has two 0.9 pairs."""
    th = np.deg2rad(44.0)
    a = np.deg2rad(44.0 - np.rad2deg(np.arccos(0.9)))  # angle of found 0: cos to truth 1 = 0.9
    truth = np.array([[1.0, 0.0, 0.0], [np.cos(th), np.sin(th), 0.0]])
    found = np.array([[np.cos(a), np.sin(a), 0.0], [0.9, 0.0, np.sqrt(1 - 0.81)]])
    cos = cosine_matrix(found, truth)
    assert cos[0, 0] > 0.94 and cos[1, 1] < 0.85  # greedy: (0, 0), then (1, 1) below 0.85
    assert cos[0, 1] == pytest.approx(0.9) and cos[1, 0] == pytest.approx(0.9)
    scores = discovery_scores(found, truth, cutoffs=(0.85,))
    assert scores.loc[0.85, "true_positives"] == 2


def test_true_positives_fall_as_the_cutoff_rises():
    rng = np.random.default_rng(4)
    truth = _truth(6, seed=4)
    found = truth + rng.dirichlet(np.ones(96), size=6) * np.linspace(0.05, 2.0, 6)[:, None]
    scores = discovery_scores(found, truth, cutoffs=np.linspace(0.5, 1.0, 11))
    assert (np.diff(scores["true_positives"].to_numpy()) <= 0).all()
    assert scores["true_positives"].iloc[0] > scores["true_positives"].iloc[-1]


def test_labelled_tables_either_way_round_and_channels_by_name():
    truth = _truth(4, seed=5)
    found = truth[:3] + 0.002
    order = np.random.default_rng(6).permutation(96)
    # SigProfiler layout (MutationType column, one column per signature), rows shuffled
    df = pd.DataFrame(found.T[order], columns=["S1", "S2", "S3"])
    df.insert(0, "MutationType", np.array(CHANNELS)[order])
    da = xr.DataArray(truth, dims=("signature", "channel"),
                      coords={"signature": ["SBS1", "SBS2", "SBS3", "SBS4"],
                              "channel": CHANNELS})
    expected = discovery_scores(found, truth)
    pd.testing.assert_frame_equal(discovery_scores(df, da), expected)
    pairs = match_signatures(df, da)
    assert dict(zip(pairs["found"], pairs["truth"])) == {"S1": "SBS1", "S2": "SBS2",
                                                         "S3": "SBS3"}


def test_nothing_found_scores_zero():
    scores = discovery_scores(np.zeros((0, 96)), _truth(3))
    assert (scores[["precision", "recall", "f1", "true_positives"]] == 0).all().all()


@pytest.mark.parametrize(("found", "truth", "match"), [
    (np.ones(96), np.ones((2, 96)), "found must be a 2-D"),
    (np.ones((2, 96)), np.ones((2, 95)), "channels per signature"),
    (-np.ones((2, 96)), np.ones((2, 96)), "found holds negative"),
    (np.zeros((1, 96)), np.ones((2, 96)), "all zeros"),
])
def test_bad_input_one_clear_error(found, truth, match):
    with pytest.raises(ValueError, match=match):
        discovery_scores(found, truth)


def test_bad_cutoffs():
    with pytest.raises(ValueError, match="cutoffs"):
        discovery_scores(_truth(2), _truth(2), cutoffs=(0.9, 1.5))
