"""Coverage metrics: pairwise spreads, greedy covering numbers, curves, table and plot."""

import itertools

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from test_distances import continuum_A, laurberg_two_modes

from bnmfzoo._base.results import build_datatree
from bnmfzoo.diagnostics import (
    angle_distance,
    coverage_table,
    covering_curve,
    covering_number,
    l1_distance,
    pairwise_distances,
    weighted_angle_distance,
)
from bnmfzoo.diagnostics.coverage import persistent_covering_number, plot_covering_curves


@pytest.fixture(scope="module")
def two_mode_set():
    """All-Modes-like set: 15 jittered copies of each exact Laurberg (a = 0.5) basis."""
    rng = np.random.default_rng(7)
    A1, W1, A2, W2 = laurberg_two_modes()
    jitter = lambda M, n: M * np.exp(1e-3 * rng.standard_normal((n, *M.shape)))  # noqa: E731
    As = np.concatenate([jitter(A1 + 1e-3, 15), jitter(A2 + 1e-3, 15)])
    Ws = np.concatenate([jitter(W1 + 1e-3, 15), jitter(W2 + 1e-3, 15)])
    return As, Ws


def test_pairwise_matches_scalar_distances(two_mode_set):
    As, Ws = two_mode_set
    idx = [0, 3, 16, 29]
    for name, f in (("angle", angle_distance), ("l1", l1_distance)):
        dm = pairwise_distances(As[idx], distance=name)
        assert dm.shape == (4, 4) and np.allclose(dm, dm.T) and np.all(np.diag(dm) == 0)
        for i, j in itertools.combinations(range(4), 2):
            assert dm[i, j] == pytest.approx(f(As[idx[i]], As[idx[j]]), abs=1e-12)
    dm = pairwise_distances(As[idx], distance="wad", Ws=Ws[idx])
    assert dm[0, 2] == pytest.approx(
        weighted_angle_distance(As[0], As[16], Ws[0], Ws[16]), abs=1e-12
    )
    # a callable distance is used pair by pair
    dm_c = pairwise_distances(As[idx], distance=lambda a, b: angle_distance(a, b))
    assert np.allclose(dm_c, pairwise_distances(As[idx]))


def test_two_modes_spread_and_covering(two_mode_set):
    As, _ = two_mode_set
    dm = pairwise_distances(As)
    S = len(As)
    # cross-mode pairs sit at the exact 36.87 degrees up to the 1e-3 jitter (a relative jitter
    # of 1e-3 moves a column by at most ~0.2 degrees, see digest §4.5: 0.15-0.27 at sigma=1e-3)
    assert dm.max() == pytest.approx(36.87, abs=0.5)
    # mean over S^2 ordered pairs, half of which cross modes: ~ max / 2 (digest §5.4 check)
    assert dm.sum() / S**2 == pytest.approx(36.87 * (2 * 15 * 15) / S**2, abs=0.5)
    assert covering_number(As, 0.0) == S  # distinct points, closed balls
    assert covering_number(As, 5.0) == 2  # one ball per mode
    assert covering_number(As, 40.0) == 1  # beyond the diameter
    assert covering_number(dm, [0.0, 5.0, 40.0], distance="precomputed").tolist() == [S, 2, 1]
    curve = covering_curve(As)
    assert curve.sizes["eps"] == 100 and curve["eps"][-1] == pytest.approx(dm.max())
    assert curve[0] == S and curve[-1] == 1
    assert persistent_covering_number(curve) == 2


def test_greedy_cover_against_reference_and_optimum():
    rng = np.random.default_rng(3)
    for _ in range(15):
        pts = rng.random((8, 2))
        dm = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
        for eps in (0.1, 0.3, 0.6):
            greedy = covering_number(dm, eps, distance="precomputed")
            # reference greedy (digest §5.4 pseudo-code, same tie-breaking: lowest index)
            N = dm <= eps
            unc = np.ones(8, bool)
            ref = 0
            while unc.any():
                j = np.argmax(N[:, unc].sum(1))
                unc &= ~N[j]
                ref += 1
            assert greedy == ref
            # exact minimum cover by brute force: greedy >= opt and <= H(8) * opt
            opt = next(
                k
                for k in range(1, 9)
                for c in itertools.combinations(range(8), k)
                if N[list(c)].any(0).all()
            )
            assert opt <= greedy <= opt * sum(1 / i for i in range(1, 9))


def test_continuum_mean_pairwise_matches_paper():
    # A_delta with delta on a 100-point midpoint grid of [0, 1]: the mean over all S^2 pairs
    # approximates E|d(A_delta, A_delta')| for delta, delta' ~ U[0, 1] with O(1/S) error
    # (d is Lipschitz in delta; the S diagonal zeros weigh 1/S). A 400-point grid gives
    # 16.5105 / 0.37197, so S = 100 is within 0.002 / 0.0001 of the limit.
    S = 100
    As = np.array([continuum_A((k + 0.5) / S) for k in range(S)])
    ang = pairwise_distances(As).mean()
    l1 = pairwise_distances(As, distance="l1").mean()
    assert ang == pytest.approx(16.5105, abs=0.01)
    assert l1 == pytest.approx(0.37197, abs=0.0005)
    # paper Table 4 (All Modes, infinite, mean of 10 reps of 1000 draws): 16.572 and 0.373.
    # MC error of one rep's mean pairwise distance ~ sd(d)/sqrt(1000) ~ 12/31 = 0.4 degrees,
    # /sqrt(10) over reps -> 0.12; 3 SE = 0.36 degrees (and ~0.01 for l1, sd(d) ~ 0.27).
    assert abs(ang - 16.572) < 0.36
    assert abs(l1 - 0.373) < 0.01
    # diameter: the endpoints (45 degrees and 1.0, digest §8.6) are approached on the grid
    assert pairwise_distances(As).max() == pytest.approx(
        angle_distance(continuum_A(0.005), continuum_A(0.995)), abs=1e-9
    )


def test_datatree_input_table_and_plot(two_mode_set):
    As, Ws = two_mode_set
    # chain 0 in mode 1, chain 1 in mode 2 (15 draws each)
    post = {"A": As.reshape(2, 15, 6, 3), "W": Ws.reshape(2, 15, 3, 6)}
    dt = build_datatree(post)
    assert np.allclose(pairwise_distances(dt), pairwise_distances(As))
    assert pairwise_distances(dt, n_first=5).shape == (10, 10)
    assert pairwise_distances(dt, thin=3).shape == (10, 10)
    one = build_datatree({"A": As[None, :15], "W": Ws[None, :15]})
    table = coverage_table(
        {"both": dt, "one mode": one},
        distances=("angle", "l1", "wad"),
        eps={"angle": [5.0]},
        per_chain=True,
    )
    assert isinstance(table, pd.DataFrame)
    assert table.loc[("both", "angle"), "n"] == 30
    assert table.loc[("both", "angle"), "persistent_C"] == 2
    assert table.loc[("both", "angle"), "C(5)"] == 2
    assert table.loc[("both/chain 0", "angle"), "C(5)"] == 1
    assert table.loc[("one mode", "angle"), "persistent_C"] == 1
    assert table.loc[("both", "l1"), "max"] == pytest.approx(2 / 3, abs=0.01)
    assert table.loc[("both", "wad"), "max"] == pytest.approx(36.87, abs=0.5)
    curves = covering_curve({"both": dt, "one mode": As[:15]}, n_eps=20)
    assert curves.dims == ("set", "eps")
    # the single-mode set collapses to one ball far earlier than the two-mode set
    assert (curves.sel(set="one mode") <= curves.sel(set="both")).all()
    fig = plot_covering_curves(curves, logx=True)
    import matplotlib.figure

    assert isinstance(fig, matplotlib.figure.Figure)
    assert len(fig.axes[0].lines) == 2
    # particles group (no chain/draw dims)
    dt["particles"] = xr.DataTree(
        xr.Dataset({"A": (("particle", "row", "factor"), As[::5])})
    )
    assert pairwise_distances(dt, group="particles").shape == (6, 6)


def test_bad_input():
    with pytest.raises(ValueError, match="distance"):
        pairwise_distances(np.ones((3, 2, 2)), distance="cosine")
    with pytest.raises(ValueError, match="Ws"):
        pairwise_distances(np.ones((3, 2, 2)), distance="wad")
    with pytest.raises(ValueError, match="eps"):
        covering_number(np.ones((3, 2, 2)), -1.0)
    with pytest.raises(ValueError, match="square"):
        covering_number(np.ones((3, 2)), 1.0, distance="precomputed")
    with pytest.raises(ValueError, match="group"):
        pairwise_distances(build_datatree({"A": np.ones((1, 3, 2, 2))}), group="particles")
    with pytest.raises(ValueError, match="var_name"):
        pairwise_distances(build_datatree({"A": np.ones((1, 3, 2, 2))}), var_name="F")
