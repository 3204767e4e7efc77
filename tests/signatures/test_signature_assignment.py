"""Posterior signatures and exposures on the field's scale; assignment to a reference."""

import numpy as np
import pytest
import xarray as xr
from _sigdata import two_signatures

from bnmfzoo.signatures.assignment import align_draws, assign, normalize_draws


def _reference(W, extra=3, seed=0):
    rng = np.random.default_rng(seed)
    ref = np.vstack([W, rng.dirichlet(np.ones(96), size=extra)])
    names = ["SBSa", "SBSb"] + [f"R{i}" for i in range(extra)]
    return xr.DataArray(ref, dims=("signature", "channel"), coords={"signature": names})


def test_normalized_signatures_and_exposures_keep_the_product():
    rng = np.random.default_rng(0)
    T = rng.gamma(1.0, 1.0, (5, 96, 3))
    V = rng.gamma(1.0, 1.0, (5, 3, 7))
    sig, expo = normalize_draws(T, V)
    np.testing.assert_allclose(sig.sum(axis=2), 1.0)
    # the reconstruction T V is unchanged: expo (G, N, K) @ sig (G, K, D) = (T V)^T
    np.testing.assert_allclose(expo @ sig, np.transpose(T @ V, (0, 2, 1)))


def test_alignment_undoes_label_switches():
    W = two_signatures()
    rng = np.random.default_rng(1)
    sig = np.tile(W, (20, 1, 1)) * rng.uniform(0.95, 1.05, (20, 2, 96))
    sig /= sig.sum(axis=2, keepdims=True)
    expo = rng.gamma(5.0, 10.0, (20, 4, 2))
    swapped = sig.copy(), expo.copy()
    swapped[0][::3] = sig[::3, ::-1]
    swapped[1][::3] = expo[::3, :, ::-1]
    s2, e2, moved = align_draws(*swapped)
    assert moved == 7
    np.testing.assert_array_equal(s2, sig)
    np.testing.assert_array_equal(e2, expo)


def test_assignment_probabilities_cosines_and_novel():
    W = two_signatures()
    ref = _reference(W)
    rng = np.random.default_rng(2)
    novel = rng.dirichlet(np.ones(96))
    # draw-level noise: signature 1 near SBSa, signature 2 a 50/50 blend of SBSa and SBSb
    # (ambiguous), signature 3 unlike any reference
    G = 400
    sig = np.empty((G, 3, 96))
    sig[:, 0] = W[0] * rng.gamma(200.0, 1 / 200.0, (G, 96))
    mix = rng.uniform(0.3, 0.7, G)[:, None]
    sig[:, 1] = mix * W[0] + (1 - mix) * W[1]
    sig[:, 2] = novel * rng.gamma(200.0, 1 / 200.0, (G, 96))
    sig /= sig.sum(axis=2, keepdims=True)
    table, probs = assign(sig, ref, cutoff=0.9)
    np.testing.assert_allclose(probs.sum("reference"), 1.0)
    row = table.set_index("signature")
    assert row.loc["Sig1", "call"] == "SBSa" and row.loc["Sig1", "probability"] == 1.0
    assert row.loc["Sig1", "cosine_low"] > 0.95
    assert row.loc["Sig1", "cosine_low"] <= row.loc["Sig1", "cosine"] <= row.loc["Sig1",
                                                                                 "cosine_high"]
    # the blend: the probability of each match is the share of draws leaning to it
    lean = (mix[:, 0] > 0.5).mean()
    assert {row.loc["Sig2", "best_match"], row.loc["Sig2", "second_match"]} == {"SBSa", "SBSb"}
    assert probs.sel(signature="Sig2", reference="SBSa").item() == pytest.approx(lean, abs=0.05)
    assert row.loc["Sig3", "call"] == "novel" and row.loc["Sig3", "p_novel"] == 1.0


def test_assignment_refuses_other_channels():
    ref = _reference(two_signatures())
    with pytest.raises(ValueError, match="sig must have shape"):
        assign(np.ones((3, 2, 95)), ref)


def test_second_match_never_a_bare_zero():
    """A signature whose draws all pick one reference: the second match is the reference of
    next highest cosine (not the first name in the catalogue), and its probability, zero draws
    of 200, is written as below 1/200 rather than 0."""
    from bnmfzoo.signatures.assignment import probability_text

    W = two_signatures()
    ref = _reference(W)  # SBSa, SBSb, R0, R1, R2
    rng = np.random.default_rng(3)
    # close to SBSb, leaning towards R1 enough that R1 (not SBSa, the first name among the
    # references no draw picks) has the next highest cosine
    target = 0.7 * W[1] + 0.3 * ref.sel(signature="R1").values
    unit = ref.values / np.linalg.norm(ref.values, axis=1, keepdims=True)
    cos = unit @ (target / np.linalg.norm(target))
    assert np.argsort(-cos)[:2].tolist() == [1, 3]  # SBSb, then R1
    sig = target[None, None, :] * rng.gamma(400.0, 1 / 400.0, (200, 1, 96))
    sig /= sig.sum(axis=2, keepdims=True)
    table, _ = assign(sig, ref, cutoff=0.9)
    row = table.iloc[0]
    assert row["best_match"] == "SBSb" and row["probability"] == 1.0
    assert row["second_match"] == "R1" and row["second_probability"] == 0.0
    assert table.attrs["n_draws"] == 200
    assert probability_text(row["second_probability"], 200) == "<0.005"
    assert probability_text(row["probability"], 200) == ">0.995"
    assert probability_text(0.25, 200) == "0.250"
