"""Weighted particle summaries against hand computation, and deferral to az.summary."""

import arviz_stats as azs
import numpy as np
import pytest

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import summary


@pytest.fixture(scope="module")
def weighted_tree():
    rng = np.random.default_rng(9)
    M = 7
    A = rng.gamma(2.0, size=(M, 3, 2))
    tau = rng.gamma(3.0, size=M)
    w = rng.random(M)
    w /= w.sum()
    post = {"A": rng.gamma(2.0, size=(2, 50, 3, 2)), "tau": rng.gamma(3.0, size=(2, 50))}
    parts = {
        "A": (("particle", "row", "factor"), A),
        "tau": (("particle",), tau),
        "weight": (("particle",), w * 3.0),  # unnormalised on purpose
    }
    return build_datatree(post, groups={"particles": parts}), A, tau, w


def hand_quantile(x, w, q):
    """Smallest x with weighted CDF >= q (inverse of the weighted empirical CDF)."""
    order = np.argsort(x)
    cdf = np.cumsum(w[order])
    return x[order][np.searchsorted(cdf, q - 1e-12)]


def test_weighted_stats_by_hand(weighted_tree):
    dt, A, tau, w = weighted_tree
    table = summary(dt, ci_prob=0.9, by_mode=False)  # raw weighted statistics, no alignment
    assert list(table.columns) == [
        "mean", "sd", "eti90_lb", "eti90_ub", "n_particles", "ess_particles"
    ]
    row = table.loc["tau"]
    m = sum(wi * ti for wi, ti in zip(w, tau))
    assert row["mean"] == pytest.approx(m, rel=1e-12)
    assert row["sd"] == pytest.approx(np.sqrt(sum(wi * (ti - m) ** 2 for wi, ti in zip(w, tau))))
    assert row["eti90_lb"] == hand_quantile(tau, w, 0.05)
    assert row["eti90_ub"] == hand_quantile(tau, w, 0.95)
    # numpy's weighted quantile (inverted_cdf) is the same estimator
    assert row["eti90_ub"] == np.quantile(tau, 0.95, weights=w, method="inverted_cdf")
    assert row["n_particles"] == 7
    assert row["ess_particles"] == pytest.approx(1 / np.sum(w**2))
    x = A[:, 2, 1]
    assert table.loc["A[2, 1]", "mean"] == pytest.approx(np.dot(w, x))
    assert table.loc["A[2, 1]", "eti90_lb"] == hand_quantile(x, w, 0.05)
    # equal weights reduce to the plain (population) statistics
    dt_eq = build_datatree({"tau": tau[None]}, groups={
        "particles": {"tau": (("particle",), tau), "weight": (("particle",), np.ones(7))}})
    t = summary(dt_eq)
    assert t.loc["tau", "mean"] == pytest.approx(tau.mean())
    assert t.loc["tau", "sd"] == pytest.approx(tau.std())
    assert t.loc["tau", "ess_particles"] == pytest.approx(7.0)


def test_var_names_and_rounding(weighted_tree):
    dt = weighted_tree[0]
    t = summary(dt, var_names="tau", round_to=2, by_mode=False)
    assert list(t.index) == ["tau"]
    assert t.loc["tau", "mean"] == round(t.loc["tau", "mean"], 2)
    with pytest.raises(ValueError, match="var_names"):
        summary(dt, var_names=["lambda_"])
    with pytest.raises(TypeError, match="unexpected"):
        summary(dt, kind="diagnostics")


def test_defers_to_az_summary(weighted_tree):
    dt = weighted_tree[0]
    # the posterior of a particle fit is resampled: ESS / R-hat are omitted with a warning
    with pytest.warns(UserWarning, match="resampl"):
        ours = summary(dt, group="posterior", round_to="none", by_mode=False)
    ref = azs.summary(dt, round_to="none", kind="stats")
    assert "r_hat" not in ours.columns and "ess_bulk" not in ours.columns
    assert np.allclose(ours.values.astype(float), ref.values.astype(float))
    # no particles group -> az.summary of the posterior (with r_hat etc.)
    plain = build_datatree({"tau": dt.posterior["tau"].values})
    t = summary(plain, round_to="none")
    assert "r_hat" in t.columns and t.loc["tau", "mean"] == pytest.approx(
        float(dt.posterior["tau"].mean())
    )


def test_bad_weights():
    tau = np.arange(3.0)
    bad = build_datatree({"tau": tau[None]}, groups={
        "particles": {"tau": (("particle",), tau), "weight": (("particle",), [1.0, -1.0, 1.0])}})
    with pytest.raises(ValueError, match="weight"):
        summary(bad)
    with pytest.raises(TypeError, match="DataTree"):
        summary({"tau": tau})


def test_particle_summary_per_mode_with_labels_aligned():
    """Particles at two exact factorizations, each stored with random factor orders: the
    summary has one block per mode, with the mode's own values (sd 0), not a blend."""
    from bnmfzoo.datasets import laurberg

    rng = np.random.default_rng(4)
    sols = laurberg(0.5).solutions
    A, W, which = [], [], []
    for m in range(12):
        k = m % 3 == 0  # 4 particles in solution 1, 8 in solution 0
        p = rng.permutation(3)
        A.append(sols[k][0][:, p])
        W.append(sols[k][1][p])
        which.append(int(k))
    A, W = np.array(A), np.array(W)
    w = np.full(12, 1 / 12)
    dt = build_datatree({"A": A[None]}, groups={"particles": {
        "A": (("particle", "row", "factor"), A), "W": (("particle", "factor", "col"), W),
        "weight": (("particle",), w)}})
    table = summary(dt, var_names=["A"])
    assert table.index.names == ["mode", "name"]
    assert np.allclose(table.groupby(level="mode")["mode_weight"].first(), [8 / 12, 4 / 12])
    # exact copies up to relabelling: aligned, every entry has sd 0 within its mode
    assert np.allclose(table["sd"], 0.0, atol=1e-12)
    for mode, k in ((0, 0), (1, 1)):
        block = table.xs(mode, level="mode")
        means = np.array([[block.loc[f"A[{i}, {r}]", "mean"] for r in range(3)]
                          for i in range(6)])
        # the mode's mean is its solution with the columns in some order
        assert np.allclose(np.sort(means, 1), np.sort(sols[k][0], 1))
    # without alignment the same table mixes factors (sd far from 0)
    raw = summary(dt, var_names=["A"], by_mode=False)
    assert raw["sd"].max() > 0.1
