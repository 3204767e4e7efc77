"""The default route's cost rules: the CPU budget caps the whole call, negligible modes get no
second estimator, and the agreement multiple is the t quantile of the runs' spread.

* Budget (:mod:`bnmfzoo.inference._mass_budget`): a tiny budget stops the SMC from the prior
  promptly with no mode listed; a budget that runs out during the parallel tempering returns
  the reference-path SMC's masses with no check and the reason.
* Skip rule (:func:`bnmfzoo.inference._mass_verdict.mass_upper_bounds`): bounds on constructed
  runs, and the route: a mode bounded below 0.1 % gets no tempering and says so, a mode above
  still gets it.
* t quantile (:func:`bnmfzoo.inference._mass_verdict.agreement_factor`): exact values and the
  verdict on constructed runs. All deterministic: no statistical tolerance here (the rule's
  false-failure rate over seeds is measured in ``docs/results/masses_default_route.md``).
"""

import math
import time

import numpy as np
import pytest

from bnmfzoo.inference import _mass_verdict as verdict
from bnmfzoo.inference._mass_budget import (
    BudgetedSweep,
    BudgetExhausted,
    budget_scope,
    check_budget,
)
from bnmfzoo.inference._mass_verdict import (
    agreement_factor,
    mass_upper_bounds,
    per_mode_reasons,
    welch_dof,
)
from bnmfzoo.inference.smc_masses import family_of_model

X2 = np.array([[40, 38, 2, 1, 39], [20, 22, 1, 0, 19], [30, 29, 0, 2, 31],
               [1, 2, 35, 41, 0], [0, 1, 18, 22, 2], [2, 0, 30, 28, 1]])
PT_KW = dict(check="reference_pt", n_runs=2, n_particles=20, n_moves=1, bridge_draws=20,
             bridge_chains=2, reference_runs=2, reference_particles=20, prior_chains=0,
             pt_runs=2, pt_scans=40, random_seed=0)


# ------------------------------------------------------------------------------------------
# the t quantile
# ------------------------------------------------------------------------------------------


def test_agreement_factor_is_the_t_quantile_never_below_two():
    assert agreement_factor() == 2.0 and agreement_factor(math.inf) == 2.0
    assert agreement_factor(3) == pytest.approx(3.182446, abs=1e-6)  # t_0.975, 3 dof
    assert agreement_factor(6) == pytest.approx(2.446912, abs=1e-6)
    assert agreement_factor(1000) == 2.0  # 1.962 < 2: the normal rule is kept
    assert welch_dof(0.3, 3, 0.3, 3) == pytest.approx(6.0)
    assert welch_dof(0.3, 3, 0.0, math.inf) == pytest.approx(3.0)
    assert welch_dof(0.1, 3, 1.0, 3) == pytest.approx(3.06, abs=0.01)  # the larger error rules


def _runs(center, spread, n=4):
    return np.asarray(center, float)[:, None] + np.asarray(spread, float)[None, :n]


def _est(run_lz, mass, mse):
    r = np.asarray(run_lz, float)
    M, R = r.shape
    return {"log_z": r.mean(1), "log_z_se": r.std(1, ddof=1) / math.sqrt(R), "mass": mass,
            "se": mse, "run_log_z": r,
            "log_z_total": float(np.logaddexp.reduce(np.nan_to_num(r.mean(1), nan=-np.inf))),
            "log_z_total_se": 0.1, "left": [0.0] * M, "path_left": [0.0] * M,
            "pt_left": [0.0] * M, "round_trips": [[20] * R] * M}


def test_verdict_uses_the_t_quantile_of_four_runs():
    """Two estimators of 4 runs each (se 0.5 each from their spread: Welch 6 dof, t = 2.447).
    A gap of 2.6 combined se (+ the 0.5 nat slack) is within the t rule and outside the
    normal rule's 2; a gap of 2.6 se with errors known (no runs) fails."""
    dev = np.array([-0.5, 0.5, -0.5, 0.5]) * math.sqrt(3.0)  # sd 1, se 0.5 over 4 runs
    comb = math.hypot(0.5, 0.5)
    a = _est(_runs([-10.0], dev), [1.0], [0.0])
    b = _est(_runs([-10.0 - 2.3 * comb - 0.5], dev), [1.0], [0.0])
    assert per_mode_reasons(a, b, -50.0, 1.0, 1) == []
    for d in (a, b):
        del d["run_log_z"]  # the same errors, now taken as known: the normal rule
    assert any("log Z" in r for r in per_mode_reasons(a, b, -50.0, 1.0, 1))
    c = _est(_runs([-10.0 - 2.6 * comb - 0.5], dev), [1.0], [0.0])
    assert any("log Z" in r for r in per_mode_reasons(_est(_runs([-10.0], dev), [1.0], [0.0]),
                                                      c, -50.0, 1.0, 1))


# ------------------------------------------------------------------------------------------
# the skip rule
# ------------------------------------------------------------------------------------------


def test_mass_upper_bounds_on_constructed_runs():
    tight = np.array([-0.05, 0.05, -0.05, 0.05])
    wide = np.array([-3.0, 3.0, -3.0, 3.0])  # sd 3.46: Jensen allowance sd^2 / 2 = 6 nats
    b = mass_upper_bounds(np.stack([-100.0 + tight, -152.0 + tight, -104.0 + tight,
                                    -114.0 + tight, -114.0 + wide]))
    assert b[0] == 1.0  # the heaviest mode
    assert b[1] < 1e-20  # e^-52: bounded far below the cut
    assert 1e-3 < b[2] < 0.05  # e^-4 (1.8 %): not negligible, still checked
    assert b[3] < 1e-3  # e^-14 with tight runs: negligible
    assert b[4] > 1e-3  # e^-14 with wide runs: the t margin and Jensen's bias keep it
    assert np.isnan(mass_upper_bounds([[-1.0, -1.1], [np.nan, -3.0]])[1])  # failed: unbounded
    # a mode thousands of nats below (ESCC SBS96's restart groups): 0, not an overflow
    assert mass_upper_bounds(np.stack([-100.0 + tight, -2230.0 + tight]))[1] == 0.0


def test_mass_upper_bounds_of_a_mode_whose_runs_stopped_early():
    """A mode with two of four runs (the early stop) is bounded from those two alone, with the
    t quantile of their one degree of freedom: looser than from four such runs; with one run,
    or runs not done read as data, it is not bounded."""
    tight = np.array([-0.05, 0.05, -0.05, 0.05])
    four = np.stack([-100.0 + tight, -120.0 + tight])
    two = four.copy()
    two[1, 2:] = np.nan
    b4 = mass_upper_bounds(four)[1]
    b2 = mass_upper_bounds(two, n_done=[4, 2])[1]
    # 20 nats below; margin t_0.975(Welch dof 1.71) = 5.07 x hypot(se 0.05, 0.029) + sd^2 / 2
    # + 0.5 = 0.80 nats: e^-19.20 (four runs: 2.45 x 0.041 + 0.5 = 0.60 nats, e^-19.40)
    assert b4 < b2 < 1e-8 and b2 == pytest.approx(math.exp(-19.205), rel=1e-3)
    assert np.isnan(mass_upper_bounds(two, n_done=[4, 1])[1])
    assert np.isnan(mass_upper_bounds(two)[1])  # the NaN runs count as failed without n_done


def test_skipped_mode_needs_no_tempering_but_an_unskipped_one_does():
    tight = np.array([-0.05, 0.05, -0.05, 0.05])
    smc = _est(np.stack([-10.0 + tight, -80.0 + tight]), [1.0, 0.0], [0.0, 0.0])
    pt = _est(np.stack([-10.0 + tight, np.full(4, np.nan)]), [1.0, 0.0], [0.0, np.nan])
    pt["log_z"][1], pt["pt_left"], pt["round_trips"] = -np.inf, [0.0, np.nan], [[20] * 4,
                                                                                 [np.nan] * 4]
    assert per_mode_reasons(smc, pt, -50.0, 1.0, 2, skipped=[1]) == []
    reasons = per_mode_reasons(smc, pt, -50.0, 1.0, 2)
    assert any("mode 1: the reference-path tempering failed" in r for r in reasons)


def test_masses_are_compared_among_the_modes_the_tempering_estimated():
    """A skipped mode's share is left out of the SMC's masses before they meet the
    tempering's (shares among the tempered modes): an SMC mass of 0.9999975 +- 1e-7 agrees
    with the tempering's 1 +- 0 when the other 2.5e-6 is a skipped mode's."""
    tight = np.array([-0.05, 0.05, -0.05, 0.05])
    smc = _est(np.stack([-10.0 + tight, -22.9 + tight]), [1.0 - 2.5e-6, 2.5e-6], [1e-7, 1e-7])
    pt = _est(np.stack([-10.0 + tight, np.full(4, np.nan)]), [1.0, 0.0], [0.0, np.nan])
    pt["log_z"][1], pt["pt_left"], pt["round_trips"] = -np.inf, [0.0, np.nan], [[20] * 4,
                                                                                 [np.nan] * 4]
    assert per_mode_reasons(smc, pt, -50.0, 1.0, 2, skipped=[1]) == []
    smc["mass"] = [0.97, 0.03]  # a real disagreement among the tempered modes still fails
    smc["se"] = [1e-3, 1e-3]
    pt2 = dict(pt, mass=[0.5, 0.0], se=[1e-3, np.nan])
    assert any("mode 0: mass" in r for r in per_mode_reasons(smc, pt2, -50.0, 1.0, 2,
                                                              skipped=[1]))


@pytest.fixture(scope="module")
def route_results():
    """The reference_pt route with the bound forced below / above the cut (the same seed)."""
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    mp = pytest.MonkeyPatch()
    real = verdict.mass_upper_bounds
    out = {}
    try:
        for name, value in (("below", 1e-6), ("above", 0.5)):
            mp.setattr(verdict, "mass_upper_bounds",
                       lambda r, n_done=None, v=value: np.full(np.shape(r)[0], v))
            out[name] = smc_mode_masses(poisson(X2, 2), **PT_KW)
    finally:
        mp.undo()
    assert verdict.mass_upper_bounds is real
    return out


def test_route_skips_the_second_estimator_of_a_bounded_mode(route_results):
    below, above = route_results["below"], route_results["above"]
    m = below["modes"][0]
    assert math.isnan(m["mass_check"]) and math.isnan(m["check_se"])
    assert m["check_estimator"] == "none: below 1 %" and "below 1 %" in m["note"]
    assert m["bound"] == 1e-6 and m["mass"] > 0  # its estimate is kept, never 0
    assert np.all(np.isnan(below["per_mode"]["pt"]["run_log_z"]))
    assert below["per_mode"]["skipped"] == list(range(len(below["modes"])))
    a = above["modes"][0]
    assert np.isfinite(a["mass_check"]) and a["check_estimator"] == "reference_tempering"
    assert a["note"] == "" and np.all(np.isfinite(above["per_mode"]["pt"]["run_log_z"]))
    # the reference-path SMC is the same draws either way: only the tempering was skipped
    assert a["mass"] == m["mass"]


def _unreached(gap, runs_done=(4, 4), check="reference", tight=(-0.05, 0.05, -0.05, 0.05)):
    """One found mode at log Z 0 and one only plain chains found at ``gap`` nats from it."""
    from bnmfzoo.inference._mass_result import unreached_modes

    run_lz = np.stack([np.asarray(tight), gap + np.asarray(tight)])
    mk = 1.0 / (1.0 + math.exp(-gap))
    return unreached_modes([(mk, 0.1 * mk)], {"run_log_z": run_lz.tolist(),
                                              "runs_done": list(runs_done)},
                           1, (6, 2, 5), check)


def test_an_unreached_mode_blocks_unless_the_reference_path_bounds_it_below_the_cut():
    """The faces (400 x 256, rank 3): a mode 46 nats below the found one, which no SMC
    particle from the prior reached (as a correct run would not), is listed with its bound and
    does not block; a mode the bound cannot put below 0.1 % blocks, whatever its estimate."""
    (e,), why, notes = _unreached(-46.0)
    assert why == [] and len(notes) == 1 and "bounded below" in notes[0]
    assert e["estimator"] == "reference_path" and e["check_estimator"] == "none: below 1 %"
    assert e["bound"] < 1e-15 and e["low"] == 0.0 and e["high"] == e["bound"]
    assert 0 < e["mass"] < 1e-15 and math.isnan(e["mass_check"]) and "below 1 %" in e["note"]
    assert e["A"].shape == (0, 6, 2) and e["W"].shape == (0, 2, 5)
    for gap in (0.0, -4.0, math.log(0.005)):  # equal; 1.8 %; 0.5 %: between 0.1 % and 1 %
        (e,), why, notes = _unreached(gap)
        assert e["estimator"] == "smc_not_reached" and notes == []
        assert len(why) == 1 and "no SMC particle reached" in why[0] and "bounded by" in why[0]
    # -14 nats with wide runs: the t margin and Jensen's allowance keep it above the cut
    assert _unreached(-14.0, tight=(-3.0, 3.0, -3.0, 3.0))[1]
    assert _unreached(-14.0)[1] == []  # the same gap from tight runs is bounded
    # one run of the light mode (no spread), or the bridge (no runs): nothing is bounded
    (e,), why, _ = _unreached(-46.0, runs_done=(4, 1))
    assert e["estimator"] == "smc_not_reached" and len(why) == 1 and "bounded" not in why[0]
    assert len(_unreached(-46.0, check="bridge")[1]) == 1


@pytest.mark.parametrize("gap, established", [(-46.0, True), (math.log(0.005), False)])
def test_the_reference_route_establishes_past_a_negligible_unreached_mode(monkeypatch, gap,
                                                                          established):
    """``smc_mode_masses(check="reference")`` with the check's output constructed (its own
    masses the SMC's, agreeing): the only thing left to decide is the mode no SMC particle
    reached, light (established, listed with its bound, noted) or not (not established)."""
    import bnmfzoo.inference.reference_check as reference_check_module
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    def check(family, states, label, weights, clusters, log_z, log_z_se, rng, **kw):
        K = clusters["reference"].shape[0]
        mass = np.array([weights[label == k].sum() for k in range(K)]) / weights.sum()
        run_lz = np.log(np.maximum(mass, 1e-300))[:, None] + np.array([-0.05, 0.05, -0.05, 0.05])
        run_lz = np.vstack([run_lz, run_lz.max() + gap + run_lz[:1] * 0])
        return (mass, np.full(K, 1e-3), [(math.exp(gap), 0.1 * math.exp(gap))], [],
                {"run_log_z": run_lz.tolist(), "runs_done": [4] * (K + 1)})

    monkeypatch.setattr(reference_check_module, "reference_check", check)
    out = smc_mode_masses(poisson(X2, 2), check="reference", n_runs=2, n_particles=20,
                          n_moves=1, random_seed=0)
    last = out["modes"][-1]
    assert out["established"] is established, out["statement"]
    if established:
        assert last["estimator"] == "reference_path" and last["bound"] < 1e-3
        assert "Note:" in out["statement"] and "bounded below" in out["statement"]
    else:
        assert last["estimator"] == "smc_not_reached"
        assert "no SMC particle reached" in out["statement"]


# ------------------------------------------------------------------------------------------
# the budget
# ------------------------------------------------------------------------------------------


def test_budget_scope_and_budgeted_sweep():
    from bnmfzoo.models import poisson

    fam = family_of_model(poisson(X2, 2))
    wrapped = BudgetedSweep(fam.tempered)
    assert wrapped.dimension == fam.tempered.dimension and wrapped.problem is fam.tempered.problem
    rng = np.random.default_rng(0)
    s = fam.draw_prior(rng)
    check_budget()  # no scope: no cap
    with budget_scope(None):
        wrapped.sweep(s, 1.0, rng)
    with budget_scope(1e-9, start=time.process_time() - 1.0):
        for call in (lambda: wrapped.sweep(s, 1.0, rng), lambda: wrapped.loglik(s),
                     lambda: wrapped.copy(s)):
            with pytest.raises(BudgetExhausted, match="ran out"):
                call()
    assert issubclass(BudgetExhausted, BaseException)
    assert not issubclass(BudgetExhausted, Exception)  # no `except Exception` swallows it


def test_tiny_budget_stops_the_smc_from_the_prior_promptly_with_no_mass():
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    model = poisson(np.random.default_rng(1).poisson(3.0, size=(40, 30)), 3)
    fam = family_of_model(model)  # compiled before the clock starts
    fam.tempered.sweep(fam.draw_prior(np.random.default_rng(0)), 0.5, np.random.default_rng(0))
    t0 = time.process_time()
    out = smc_mode_masses(model, n_runs=2, n_particles=100, n_moves=2, budget_s=1.0,
                          random_seed=0)
    used = time.process_time() - t0
    assert out["modes"] == [] and not out["established"]
    assert "ran out" in out["statement"] and "the SMC from the prior" in out["statement"]
    assert "unknown, not zero" in out["statement"]
    assert used < 1.0 + 0.5 and out["cpu_s"] < 1.5  # one sweep past the cap at most


def test_the_budget_precheck_times_a_warm_sweep_not_the_first(monkeypatch):
    """The precheck "one tempering step fits the budget" times sweeps after the first: a
    first sweep that compiles (here it burns 0.3 CPU s; on laurberg 6 x 6 it took 2 ms against
    0.06 ms warm) refused the default command's 900 s for a step predicted at 938 s."""
    import bnmfzoo.inference.smc_masses as sm
    from bnmfzoo.models import poisson

    real = sm.family_of_model

    def slow_first_sweep(model, *a, **k):
        fam = real(model, *a, **k)
        inner, calls = fam.tempered.sweep, []

        def sweep(state, beta, rng):
            calls.append(1)
            if len(calls) == 1:
                t = time.process_time()
                while time.process_time() - t < 0.3:
                    pass
            return inner(state, beta, rng)

        fam.tempered.sweep = sweep
        return fam

    monkeypatch.setattr(sm, "family_of_model", slow_first_sweep)
    # 2 runs x 20 particles x 1 sweep: 40 warm sweeps are milliseconds, 40 first ones 12 s
    out = sm.smc_mode_masses(poisson(X2, 2), n_runs=2, n_particles=20, n_moves=1, check=None,
                             budget_s=5.0, random_seed=0)
    assert out["modes"] and "no check was run" in out["statement"]


def test_budget_running_out_in_the_tempering_returns_unchecked_masses(monkeypatch):
    """The budget cap inside the per-mode parallel tempering (the runs' scans check it
    through the reference path's sweep): masses of the reference-path SMC, no check, why."""
    from bnmfzoo.inference import reference_tempering, smc_mode_masses
    from bnmfzoo.models import poisson

    real = reference_tempering.run_together

    def slow_pt(*args, **kwargs):  # the tempering finds the budget used up at its first scan
        with budget_scope(1e-9, start=time.process_time() - 1.0):
            return real(*args, **kwargs)

    monkeypatch.setattr(reference_tempering, "run_together", slow_pt)
    out = smc_mode_masses(poisson(X2, 2), **PT_KW)
    assert not out["established"] and out["per_mode"]["pt"] is None
    assert "ran out" in out["statement"] and "parallel tempering" in out["statement"]
    m = out["modes"][0]
    assert m["estimator"] == "reference_path" and math.isnan(m["mass_check"])
    assert abs(sum(x["mass"] for x in out["modes"]) - 1.0) < 1e-9


def test_budget_running_out_in_the_reference_check_keeps_the_prior_masses_unchecked(
        monkeypatch):
    """check="reference" (the library's auto for Poisson): the budget runs out in the check;
    the SMC from the prior's masses are returned with no check, named so, not established."""
    import bnmfzoo.inference.reference_check as reference_check_module
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    def out_of_budget(*args, **kwargs):
        raise BudgetExhausted(10.0, 10.5)

    monkeypatch.setattr(reference_check_module, "reference_log_z", out_of_budget)
    try:
        out = smc_mode_masses(poisson(X2, 2), n_runs=2, n_particles=20, n_moves=1,
                              bridge_draws=20, bridge_chains=2, prior_chains=0, random_seed=0)
    except BudgetExhausted:
        out = None
    assert out is not None, "the budget's exception escaped the call: no result at all"
    assert not out["established"] and "ran out" in out["statement"]
    assert "during the reference check" in out["statement"]
    for m in out["modes"]:
        assert m["estimator"] == "smc" and math.isnan(m["mass_check"])
        assert m["check_estimator"] == "none: the budget ran out"


def test_budget_is_checked_between_the_basin_rule_and_the_basin_shares(monkeypatch):
    """The basin rule and the modes' basin shares take seconds when a rank has empty
    components (about a hundred modes): the budget is checked right after the basin rule and
    before each mode's shares, so a budget that ran out there stops the call, not the shares."""
    from bnmfzoo.inference import reference_path, smc_mode_masses
    from bnmfzoo.models import poisson

    state = {"basins_done": False, "shares": 0}
    import bnmfzoo.diagnostics._modes.basins as bs

    real_basins, real_shares = bs.mode_basins, reference_path.basin_shares

    def basins(*args, **kwargs):
        out = real_basins(*args, **kwargs)
        state["basins_done"] = True
        return out

    def shares(*args, **kwargs):
        state["shares"] += 1
        return real_shares(*args, **kwargs)

    def check():  # the budget runs out while the basin rule runs
        if state["basins_done"]:
            raise BudgetExhausted(10.0, 10.5)

    monkeypatch.setattr(bs, "mode_basins", basins)  # what fit_basins calls
    monkeypatch.setattr(reference_path, "basin_shares", shares)
    monkeypatch.setattr(reference_path, "check_budget", check)
    out = smc_mode_masses(poisson(X2, 2), **PT_KW)
    assert state["basins_done"] and state["shares"] == 0
    assert not out["established"] and "ran out" in out["statement"]


def test_a_tempering_its_share_cannot_hold_is_not_started(monkeypatch):
    """Before a mode's tempering runs start, the floor of their CPU from the pilot ladder
    (``tempering_start_floor``: tuning plus 10 round trips per run at the pilot's barrier) is
    compared with the mode's share of the budget left. With the budget left forced to 1 ms
    (share 0.95 ms; the tuning alone is 2 runs x 41 scans of at least 8 rungs) the runs are not
    started: no ``run_together``, the mode's ``stopped`` says ``"dear"`` and ``too_dear`` holds
    the floor above the share. Through ``smc_mode_masses`` (the share forced the same way) the
    result is not established, its reason says the tempering was not started and names the
    CPU, and the mode's missing tempering is not called a failure."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference import _mass_budget, smc_mode_masses
    from bnmfzoo.inference import reference_tempering as rt
    from bnmfzoo.models import poisson

    started, real = [], rt.run_together

    def spy(runs, **k):
        started.append(len(runs))
        return real(runs, **k)

    monkeypatch.setattr(rt, "run_together", spy)
    fam = family_of_model(poisson(X2, 2))
    rng = np.random.default_rng(0)
    s = fam.draw_prior(rng)
    for _ in range(200):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    kw = dict(cut=180.0, n_runs=2, n_scans=250, n_tune_rounds=1, n_draws=40, stop_trips=5)
    monkeypatch.setattr(_mass_budget, "budget_left", lambda: 1e-3)
    out = rt.reference_pt_log_z(fam, ref, [[s]], np.random.default_rng(1), **kw)
    floor, share = out["too_dear"][0]
    assert started == [] and list(out["stopped"][0]) == ["dear", "dear"]
    assert share == pytest.approx(0.95e-3) and floor > share
    assert out["log_z"][0] == -math.inf and np.isnan(out["round_trips"][0]).all()
    monkeypatch.setattr(_mass_budget, "budget_left", lambda: 1e6)
    out = rt.reference_pt_log_z(fam, ref, [[s]], np.random.default_rng(1), **kw)
    assert started == [2] and np.isnan(out["too_dear"]).all() and np.isfinite(out["log_z"][0])
    assert 0.0 < out["start_floor"][0, 0] < out["start_floor"][0, 1] == pytest.approx(0.95e6)
    # a floor: below what the runs used for more than its 10 trips (measured in three runs:
    # floor 0.20-0.21 s, the runs 0.69-0.71 s for 18-21 trips in 200 kept scans; the pilot
    # SMC's CPU per sweep, used first, put the floor at 1.2 times a 20 x 12 matrix's runs)
    assert out["round_trips"][0].min() >= 10
    assert out["start_floor"][0, 0] < out["cpu_s_mode"][0], (out["start_floor"], out["cpu_s_mode"])

    monkeypatch.setattr(rt, "run_allowance", lambda left, n: 1e-6)
    res = smc_mode_masses(poisson(X2, 2), **dict(PT_KW, pt_trips=15))
    assert not res["established"] and "was not started" in res["statement"]
    assert all(math.isnan(m["mass_check"]) for m in res["modes"])  # no check, not a 0
    assert "raise the budget by at least" in res["statement"]
    assert "Raise the budget (budget_s" in res["statement"] and "pt_scans" not in res["statement"]
    assert "tempering failed" not in res["statement"]


def test_the_start_floor_is_the_rejection_floor_at_an_even_spread_plus_the_tuning():
    """``tempering_start_floor`` is ``tempering_floor`` (Syed et al.'s scans per trip from the
    rejections, start-up included) with the pilot's barrier spread evenly over the pairs, plus
    the tuning scans: 25 rungs, barrier 12 (r = 0.5 per pair), 1 ms per rung-scan, 4 runs. For
    a given barrier the even spread needs the fewest scans (``r / (1 - r)`` is convex), so an
    uneven ladder of the same barrier needs more: the start floor is a floor."""
    from bnmfzoo.inference._mass_budget import tempering_floor, tempering_start_floor

    even, uneven = [0.5] * 24, [0.3, 0.7] * 12
    kept = [1000.0] * 4
    cpu = 4 * 1000 * 25 * 1e-3  # four runs of 1,000 scans of 25 rungs at 1 ms
    start = tempering_start_floor(12.0, 25, 1e-3, n_runs=4, target=10, tune_scans=0)
    assert start == pytest.approx(tempering_floor(even, kept, cpu, 10), rel=1e-12)
    assert start == pytest.approx(4 * (12.5 + 10) * 50 * 25 * 1e-3)  # 50 scans per trip
    assert tempering_floor(uneven, kept, cpu, 10) > 1.1 * start
    tuned = tempering_start_floor(12.0, 25, 1e-3, n_runs=4, target=10, tune_scans=340)
    assert tuned - start == pytest.approx(4 * 340 * 25 * 1e-3)


def test_sweep_seconds_on_every_rung_sees_moves_the_median_misses():
    """A path whose top rungs (``b >= 0.7``, 3 of 9) cost 20 times the others, as the Poisson
    route's HMC at the top rungs: the median of 5 rungs sees only the cheap sweep, the mean over
    every rung (what one scan costs per rung) about 7 times more. CPU-time busy loops of 2 and
    0.1 ms; the bounds leave a factor of 2 either way for the timer."""
    from bnmfzoo.inference._mass_budget import sweep_seconds

    class Path:
        def draw(self, rng):
            return {}

        def sweep(self, state, b, rng):
            t = time.process_time()
            while time.process_time() - t < (2e-3 if b >= 0.7 else 1e-4):
                pass

    betas = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 1.0])
    median = sweep_seconds(Path(), betas)
    every = sweep_seconds(Path(), betas, n_sweeps=2, every=True)
    assert median < 2e-4 * 2, median
    assert 0.73e-3 / 2 < every < 0.73e-3 * 2 and every > 3 * median, (every, median)
