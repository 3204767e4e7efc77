"""A mode reached twice is estimated once (the per-mode route's duplicate guard).

Two modes whose members each lie inside the other's basin (more than ``DUPLICATE_SHARE``, a
majority, of them, within the cut of one of the basin's clusters after the best column
permutation) are one mode
counted twice: their per-mode evidences are of one region, so keeping both splits its mass
between the copies and raises the total by ``log 2``. These tests pass one mode twice (same
start, and a column-permuted copy) and two genuinely distinct modes (40 degrees apart, no
member of one near the other) and check that only the first is flagged, and that dropping the
copy counts the evidence once.
"""

import math

import numpy as np
import pytest

from bnmfzoo.diagnostics._modes.basins import basin_shares, duplicate_modes
from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
from bnmfzoo.inference.reference_path import (
    DUPLICATE_SHARE,
    MAX_LEFT,
    drop_modes,
    reference_log_z,
)
from bnmfzoo.inference.smc_masses import family_of_model


def _members(B, n, rng, noise=0.02):
    return _unit_l2(np.abs(B[None] + noise * rng.standard_normal((n,) + B.shape)))


def _rotated(B, deg):
    """``B`` with column 0 turned ``deg`` degrees towards a unit direction orthogonal to it."""
    v = np.zeros(B.shape[0])
    v[-1] = 1.0
    v -= (v @ B[:, 0]) * B[:, 0]
    v /= np.linalg.norm(v)
    out = B.copy()
    t = math.radians(deg)
    out[:, 0] = math.cos(t) * B[:, 0] + math.sin(t) * v
    return out


def test_duplicates_on_constructed_modes():
    """Member noise 0.02 per entry puts members ~2 degrees from their centre, far inside the
    15-degree cut; the distinct mode is 40 degrees away, so none of its members is within the
    cut of the other basin (shares exactly 0 and 1, no tolerance involved)."""
    rng = np.random.default_rng(0)
    B0 = _unit_l2(np.array([[1.0, 0.1], [0.9, 0.2], [0.8, 0.1], [0.1, 1.0], [0.2, 0.9],
                            [0.0, 0.0]])[None])[0]
    B1 = _unit_l2(_rotated(B0, 40.0)[None])[0]
    cut = 15.0
    same = [_members(B0, 200, rng), _members(B0[:, ::-1], 200, rng)]  # a label copy too
    other = [_members(B0, 200, rng), _members(B1, 200, rng)]
    for members, dup in ((same, [(0, 1)]), (other, [])):
        refs = [m[:1] for m in members]
        s = np.stack([basin_shares(m, refs, cut) for m in members])
        assert duplicate_modes(s, max_share=DUPLICATE_SHARE) == dup, s
    s_other = np.stack([basin_shares(m, [m[:1] for m in other], cut) for m in other])
    np.testing.assert_array_equal(s_other, np.eye(2))
    # one direction alone (a mode whose members drifted into another's basin) is not a copy,
    # nor a minority each way (broad modes a little more than the cut apart)
    assert duplicate_modes(np.array([[1.0, 0.0], [0.9, 1.0]]), max_share=DUPLICATE_SHARE) == []
    assert duplicate_modes(np.array([[1.0, 0.3], [0.3, 1.0]]), max_share=DUPLICATE_SHARE) == []
    # either estimator's shares (path particles or fit draws) can show the copy
    assert duplicate_modes(np.eye(2), np.ones((2, 2)), max_share=DUPLICATE_SHARE) == [(0, 1)]
    with pytest.raises(ValueError, match="weights"):
        basin_shares(same[0], [B0[None]], cut, weights=-np.ones(200))


#: two far-apart components (rows 0-2 load on component 0, rows 3-5 on component 1)
_X2 = np.array([[40, 38, 2, 1, 39], [20, 22, 1, 0, 19], [30, 29, 0, 2, 31],
                [1, 2, 35, 41, 0], [0, 1, 18, 22, 2], [2, 0, 30, 28, 1]])


def test_a_mode_passed_twice_is_joined_by_the_reference_path():
    """Rank-2 Poisson with separated components has one mode up to labels. Passing it twice
    (the second time with its columns swapped, as a prior chain ending in a label copy would)
    makes both copies' draws and path particles lie in each other's basins: flagged, and
    dropping the copy removes exactly the ``log 2`` the double count added to the total."""
    from bnmfzoo.models import poisson

    fam = family_of_model(poisson(_X2, 2))
    rng = np.random.default_rng(3)
    s = fam.draw_prior(rng)
    for _ in range(200):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    refs = np.concatenate([ref, ref[:, :, ::-1]])
    out = reference_log_z(fam, refs, [[s], [s]], rng, cut=30.0, n_runs=2, n_particles=40,
                          n_moves=2, n_draws=40)
    assert out["duplicates"] == [(0, 1)], (out["cross_path"], out["cross_fit"])
    assert np.all(out["cross_fit"] > 1 - MAX_LEFT) and np.all(out["cross_path"] > 1 - MAX_LEFT)
    one = drop_modes(out, [1], 2)
    assert one["dropped"] == [1] and one["log_z"].shape == (1,) and one["mass"][0] == 1.0
    assert one["log_z_total"] == pytest.approx(math.log(2) + out["log_z"][0])
    lse = np.logaddexp(out["log_z"][0], out["log_z"][1])
    assert out["log_z_total"] - one["log_z_total"] == pytest.approx(lse - out["log_z"][0])


def _one_mode_and_its_label_copy():
    """A rank-2 Poisson family at a state inside its mode, the mode's unit-l2 reference and a
    stand-in for the plain chains from the prior that returns a label copy of that mode."""
    from bnmfzoo.models import poisson

    fam = family_of_model(poisson(_X2, 2))
    rng = np.random.default_rng(4)
    s = fam.draw_prior(rng)
    for _ in range(200):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])

    def copy_of_mode_0(family, refs, cut, rng, **kw):
        return refs[:, :, ::-1].copy(), [[s]], np.array([-1]), 0.0

    return fam, s, ref, rng, copy_of_mode_0


def test_per_mode_route_drops_a_prior_chain_copy(monkeypatch):
    """The plain chains from the prior return a label copy of the SMC's one mode as a "new"
    mode: the per-mode route drops it before the masses (the tempering is stopped at once by
    an exhausted budget; only the reference-path SMC's masses are checked here)."""
    from bnmfzoo.inference import mode_bridge, reference_tempering
    from bnmfzoo.inference._mass_budget import BudgetExhausted

    fam, s, ref, rng, copy_of_mode_0 = _one_mode_and_its_label_copy()

    def no_time(*a, **k):
        raise BudgetExhausted(1.0, 2.0)

    monkeypatch.setattr(mode_bridge, "prior_chain_modes", copy_of_mode_0)
    monkeypatch.setattr(reference_tempering, "reference_pt_log_z", no_time)
    clusters = {"reference": ref, "cut": 30.0}
    pm = reference_tempering.per_mode_check(
        fam, [s], np.array([0]), np.array([1.0]), clusters, -50.0, 1.0, rng, n_runs=2,
        n_particles=40, n_moves=2, n_draws=40, prior_chains=1)
    assert pm["duplicates"] == [(0, 1)] and pm["dropped"] == [1]
    assert pm["smc"]["log_z"].shape == (1,) and pm["smc"]["mass"][0] == 1.0
    assert pm["smc"]["log_z_total"] == pytest.approx(math.log(2) + pm["smc"]["log_z"][0])
    assert not any("counted twice" in r for r in pm["reasons"])


def _counted_smc(monkeypatch):
    """Count the reference-path SMC's runs (all modes together)."""
    from bnmfzoo.inference import reference_path

    calls = []
    real = reference_path.smc

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(reference_path, "smc", counted)
    return calls


def _no_tempering(monkeypatch):
    from bnmfzoo.inference import reference_tempering
    from bnmfzoo.inference._mass_budget import BudgetExhausted

    def no_time(*a, **k):
        raise BudgetExhausted(1.0, 2.0)

    monkeypatch.setattr(reference_tempering, "reference_pt_log_z", no_time)


def test_per_mode_route_spends_no_smc_run_on_a_prior_chain_copy(monkeypatch):
    """The label copy the plain chains from the prior return is found by the fit chains
    alone, before the reference-path SMC: its two runs are never made (2 runs, not 4)."""
    from bnmfzoo.inference import mode_bridge, reference_tempering

    fam, s, ref, rng, copy_of_mode_0 = _one_mode_and_its_label_copy()
    monkeypatch.setattr(mode_bridge, "prior_chain_modes", copy_of_mode_0)
    _no_tempering(monkeypatch)
    calls = _counted_smc(monkeypatch)
    pm = reference_tempering.per_mode_check(
        fam, [s], np.array([0]), np.array([1.0]), {"reference": ref, "cut": 30.0}, -50.0, 1.0,
        rng, n_runs=2, n_particles=40, n_moves=2, n_draws=40, prior_chains=1)
    assert len(calls) == 2 and pm["dropped"] == [1] and pm["merged"] == []


def test_per_mode_route_still_drops_a_copy_the_fit_chains_missed(monkeypatch):
    """Where the fit chains do not show the copy (here: their rule disabled), the path
    particles of the reference-path SMC still do, and the copy is dropped after it."""
    from bnmfzoo.inference import mode_bridge, reference_path, reference_tempering

    fam, s, ref, rng, copy_of_mode_0 = _one_mode_and_its_label_copy()
    monkeypatch.setattr(mode_bridge, "prior_chain_modes", copy_of_mode_0)
    monkeypatch.setattr(reference_path, "fit_copies", lambda fitted, cut: {})
    _no_tempering(monkeypatch)
    calls = _counted_smc(monkeypatch)
    pm = reference_tempering.per_mode_check(
        fam, [s], np.array([0]), np.array([1.0]), {"reference": ref, "cut": 30.0}, -50.0, 1.0,
        rng, n_runs=2, n_particles=40, n_moves=2, n_draws=40, prior_chains=1)
    assert len(calls) == 4 and pm["dropped"] == [1] and pm["smc"]["log_z"].shape == (1,)
    assert not any("counted twice" in r for r in pm["reasons"])


def test_two_smc_modes_that_are_one_are_merged_before_the_per_mode_estimates(monkeypatch):
    """The SMC from the prior split one mode into two clusters (here: the mode and its label
    copy as modes 0 and 1; breast SBS96 under the negative binomial split one mode into three,
    weights 0.992 / 0.006 / 0.003). The fit chains show it, so the per-mode route merges them
    before the estimators (one mode's SMC runs, not two) and the result is not refused as a
    mode counted twice; the route's result lists one mode holding every particle, its columns
    matched to the first mode's reference."""
    from bnmfzoo.inference import reference_tempering
    from bnmfzoo.inference._mass_result import merge_smc_modes

    fam, s, ref, rng, _ = _one_mode_and_its_label_copy()
    _no_tempering(monkeypatch)
    calls = _counted_smc(monkeypatch)
    refs = np.concatenate([ref, ref[:, :, ::-1]])
    pm = reference_tempering.per_mode_check(
        fam, [s, s], np.array([0, 1]), np.array([0.5, 0.5]), {"reference": refs, "cut": 30.0},
        -50.0, 1.0, rng, n_runs=2, n_particles=40, n_moves=2, n_draws=40, prior_chains=0)
    assert pm["merged"] == [(0, 1)] and len(calls) == 2
    assert pm["smc"]["log_z"].shape == (1,) and pm["smc"]["mass"][0] == 1.0
    assert not any("counted twice" in r for r in pm["reasons"]), pm["reasons"]
    A = np.stack([np.asarray(fam.factors(s)[0], float)] * 2)
    W = np.stack([np.asarray(fam.factors(s)[1], float)] * 2)
    label, mass, se, A_al, _ = merge_smc_modes(pm["merged"], np.array([0, 1]), A, W,
                                               np.array([[0, 1], [1, 0]]), refs,
                                               np.array([1.0, 1.0]), np.array([0, 1]), 2)
    assert label.tolist() == [0, 0] and mass.tolist() == [1.0] and se.tolist() == [0.0]
    np.testing.assert_array_equal(A_al[1], A_al[0])  # matched to mode 0's columns again


def test_reference_check_drops_a_prior_chain_copy(monkeypatch):
    """The ``reference`` route (Gaussian, Beta-Dir, the library's Poisson default) does the
    same: a label copy of the SMC's one mode returned by the plain chains from the prior is
    dropped before the masses, so the result lists no extra mode, gives no copy as a reason
    and counts the mode's evidence once (before, it was refused: 60 x 40 Gaussian, rank 3).
    The fit chains already show it to be a copy, so it gets no path (the faces at rank 3: the
    copy's path took half the check's CPU before it was dropped): two SMC runs, mode 0's."""
    from bnmfzoo.inference import mode_bridge, reference_path
    from bnmfzoo.inference.reference_check import reference_check

    fam, s, ref, rng, copy_of_mode_0 = _one_mode_and_its_label_copy()
    real, calls = reference_path.smc, []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(reference_path, "smc", counted)
    monkeypatch.setattr(mode_bridge, "prior_chain_modes", copy_of_mode_0)
    mass, _, extra, reasons, details = reference_check(
        fam, [s], np.array([0]), np.array([1.0]), {"reference": ref, "cut": 30.0}, -50.0, 1.0,
        rng, n_runs=2, n_particles=40, n_moves=2, n_draws=40, prior_chains=1)
    assert details["dropped"] == [1] and extra == [] and mass.tolist() == [1.0]
    assert len(calls) == 2 and len(details["run_log_z"]) == 1
    assert details["log_z_total"] == pytest.approx(math.log(2) + details["log_z"][0])
    assert not any("counted twice" in r or "one mode" in r for r in reasons), reasons


def test_the_reference_check_stops_a_far_mode_after_two_runs(monkeypatch):
    """The exponential-Gaussian route's check (``reference_check``) stops a mode the modes
    before it bound below ``EARLY_STOP`` after two runs, as the per-mode route does (the faces
    at rank 3, seed 2: modes only the plain chains from the prior found took the check past the
    budget). The plain chains' mode (a label copy, its runs shifted 50 nats below mode 0's) gets
    two runs, not four (one of the two is then dropped as the other's copy). The fit chains'
    copy rule is switched off so that the copy gets a path at all."""
    import bnmfzoo.inference.reference_check as reference_check_module
    from bnmfzoo.inference import mode_bridge, reference_path
    from bnmfzoo.inference.reference_check import reference_check

    fam, s, ref, rng, copy_of_mode_0 = _one_mode_and_its_label_copy()
    real, calls = reference_path.smc, []

    def shifted(*args, **kwargs):
        run = real(*args, **kwargs)
        calls.append(1)
        if len(calls) > 4:  # the second mode's runs
            run.log_z -= 50.0
        return run

    monkeypatch.setattr(reference_path, "smc", shifted)
    monkeypatch.setattr(reference_check_module, "fit_copies", lambda *a: {})
    monkeypatch.setattr(mode_bridge, "prior_chain_modes", copy_of_mode_0)
    mass, _, extra, _, details = reference_check(
        fam, [s], np.array([0]), np.array([1.0]), {"reference": ref, "cut": 30.0}, -50.0, 1.0,
        rng, n_runs=4, n_particles=30, n_moves=1, n_draws=30, prior_chains=1)
    assert len(calls) == 6 and len(details["runs_done"]) == 1  # 4 + 2 runs; one mode kept
    assert mass.tolist() == [1.0] and extra == []


def test_a_rank_with_empty_components_is_refused_in_one_line(monkeypatch):
    """Rank-2 counts fitted at K = 4: the two components the data do not support point
    anywhere. Read over 2 sweeps (the width's floor set to 1), the within-mode angle is small,
    the particles scatter into more modes than a quarter of them, and the call refuses the rank
    at once (before any check, no mode listed) and names rank 3. Read over
    :data:`~bnmfzoo.inference.smc_masses.WIDTH_SWEEPS` (the default) the particles form
    one mode, whose check finds its label copies overlapping and runs again along the label
    orbit's path (:mod:`bnmfzoo.inference.tempering._label_orbit`); at these two runs of 30
    particles the SMC from the prior's runs disagree, so it is not established either, and says
    why. At K = 2 the same particles form a few modes and nothing is refused. Deterministic
    (fixed seeds)."""
    import bnmfzoo.inference.smc_masses as sm
    from bnmfzoo.inference._mass_result import MAX_MODE_SHARE
    from bnmfzoo.inference.smc_masses import smc_mode_masses
    from bnmfzoo.models import poisson

    rng = np.random.default_rng(31)
    X = rng.poisson(rng.gamma(2, 3, (24, 2)) @ rng.gamma(2, 1, (2, 12)))
    kw = dict(n_runs=2, n_particles=30, n_moves=1, random_seed=0)
    default = smc_mode_masses(poisson(X, 4), **kw)
    assert "unsupported_rank" not in default and not default["established"]
    assert "another label copy" in default["statement"]
    assert "ran again along a path symmetrized over the label copies" in default["statement"]
    assert "Run more SMC runs or particles" in default["statement"]
    monkeypatch.setattr(sm, "WIDTH_SWEEPS", 1)
    out = smc_mode_masses(poisson(X, 4), **kw)
    u = out["unsupported_rank"]
    assert u["n_modes"] > MAX_MODE_SHARE * u["n_particles"] and u["suggested_rank"] == 3
    assert out["modes"] == [] and not out["established"]
    assert "rank 4 has components the data do not support" in out["statement"]
    assert "fit rank 3" in out["statement"]
    two = smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=30, n_moves=1, check=None,
                          random_seed=0)
    assert "unsupported_rank" not in two and len(two["modes"]) <= 0.25 * 60


@pytest.mark.parametrize("below, runs", [(50.0, 2), (3.0, 4)])
def test_a_mode_far_below_an_earlier_one_stops_after_two_runs(monkeypatch, below, runs):
    """The reference-path SMC's early stop: with mode 1's runs shifted ``below`` nats under
    mode 0's (the real runs, their log Z moved), 50 nats bound its mass below
    ``EARLY_STOP`` after two runs, so its other two are not made and its estimate comes from
    two; 3 nats do not (bound ~e^-2), so it gets all four."""
    from bnmfzoo.inference import reference_path
    from bnmfzoo.inference._mass_verdict import EARLY_STOP

    fam, s, ref, rng, _ = _one_mode_and_its_label_copy()
    real, calls = reference_path.smc, []

    def shifted(*args, **kwargs):
        run = real(*args, **kwargs)
        calls.append(1)
        if len(calls) > 4:  # mode 1's runs
            run.log_z -= below
        return run

    monkeypatch.setattr(reference_path, "smc", shifted)
    refs = np.concatenate([ref, ref[:, :, ::-1]])
    out = reference_log_z(fam, refs, [[s], [s]], rng, cut=30.0, n_runs=4, n_particles=30,
                          n_moves=1, n_draws=30, early_stop=EARLY_STOP)
    first, second = out["order"]  # one mode twice: either may look heavier
    assert len(calls) == 4 + runs and out["runs_done"][[first, second]].tolist() == [4, runs]
    assert np.isfinite(out["run_log_z"][second, :runs]).all()
    assert np.isnan(out["run_log_z"][second, runs:]).all()
    assert out["log_z"][second] == pytest.approx(out["run_log_z"][second, :runs].mean())


def test_the_heaviest_looking_mode_is_estimated_first_so_a_far_mode_listed_first_stops(
        monkeypatch):
    """The modes are estimated in the order of their fit draws' mean log joint (``mode_order``):
    mode 0's fit draws are made to look 100 nats lighter, so mode 1 goes first, and mode 0's
    runs (shifted 50 nats below, as above) stop after two. Listed first and estimated first,
    nothing before it could bound it, and it would have had all four (the Reuters run of
    ``masses_nb_route_2.md`` section 18)."""
    from bnmfzoo.inference import reference_path
    from bnmfzoo.inference._mass_verdict import EARLY_STOP

    fam, s, ref, rng, _ = _one_mode_and_its_label_copy()
    real_smc, real_draws, calls, seen = reference_path.smc, reference_path._aligned_draws, [], []

    def shifted(*args, **kwargs):
        run = real_smc(*args, **kwargs)
        calls.append(1)
        if len(calls) > 4:
            run.log_z -= 50.0
        return run

    def lighter_first(*args, **kwargs):
        rows, bases, chain, joint = real_draws(*args, **kwargs)
        seen.append(joint)
        return rows, bases, chain, joint - (100.0 if len(seen) == 1 else 0.0)

    monkeypatch.setattr(reference_path, "smc", shifted)
    monkeypatch.setattr(reference_path, "_aligned_draws", lighter_first)
    refs = np.concatenate([ref, ref[:, :, ::-1]])
    out = reference_log_z(fam, refs, [[s], [s]], rng, cut=30.0, n_runs=4, n_particles=30,
                          n_moves=1, n_draws=30, early_stop=EARLY_STOP)
    assert out["order"] == [1, 0] and out["runs_done"].tolist() == [2, 4] and len(calls) == 6
    assert np.isnan(out["run_log_z"][0, 2:]).all() and np.isfinite(out["run_log_z"][1]).all()
    # the log joint is the log-likelihood plus log prior of the draws (about equal: one mode)
    assert len(seen) == 2 and seen[0].size == seen[1].size == 4 * 30
    assert abs(seen[0].mean() - seen[1].mean()) < 5.0


def test_the_route_reports_a_split_mode_once_with_all_its_particles(monkeypatch):
    """End to end through ``smc_mode_masses``: the SMC from the prior's clustering is made to
    split its heaviest mode in two (every other particle moved to a label copy of it, as the
    negative binomial's split on breast SBS96 did). The result lists that mode once, holding
    every particle the split took from it, with the merge in the statement."""
    from bnmfzoo.inference import smc_masses, smc_mode_masses
    from bnmfzoo.models import poisson

    real = smc_masses.cluster_members

    def split(A, **kw):
        cl = dict(real(A, **kw))
        K = cl["reference"].shape[0]
        move = (cl["label"] == 0) & (np.arange(cl["label"].size) % 2 == 1)
        cl["label"] = np.where(move, K, cl["label"])
        cl["perm"] = np.where(move[:, None], cl["perm"][:, ::-1], cl["perm"])
        cl["reference"] = np.concatenate([cl["reference"], cl["reference"][:1, :, ::-1]])
        return cl

    monkeypatch.setattr(smc_masses, "cluster_members", split)
    kw = dict(check="reference_pt", n_runs=2, n_particles=20, n_moves=1, bridge_draws=20,
              bridge_chains=2, reference_runs=2, reference_particles=20, prior_chains=0,
              pt_runs=2, pt_scans=40, random_seed=0)
    out = smc_mode_masses(poisson(_X2, 2), **kw)
    merged = out["per_mode"]["merged"]
    assert merged and merged[0][0] == 0, merged
    assert "one mode" in out["statement"] and "merged" in out["statement"]
    assert sum(m["n_members"] for m in out["modes"]) == 2 * 20
    assert "counted twice" not in out["statement"]
    A0 = out["modes"][0]["A"]
    U = _unit_l2(A0)
    assert np.all(np.einsum("ndk,dk->nk", U, U[0]) > 0.9)  # one labelling: columns agree
