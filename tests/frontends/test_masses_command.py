"""Tests of ``bnmfzoo masses`` (:mod:`bnmfzoo._cli.masses`): every matrix format ``bnmfzoo fit``
reads, at tiny size, gives the JSON last line; bad input gives one error line and no mass."""

import json

import numpy as np
import pytest

from bnmfzoo._cli.masses import main

X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
FAST = ["--rank", "2", "--runs", "2", "--particles", "10", "--moves", "1",
        "--bridge-draws", "20", "--prior-chains", "2", "--check", "reference"]
KEYS = {"modes", "cpu_s", "established"}


def _write(tmp_path, fmt):
    if fmt == "csv_header":
        p = tmp_path / "x.csv"
        p.write_text("a,b,c,d,e\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    elif fmt == "csv":
        p = tmp_path / "x.csv"
        p.write_text("\n".join(",".join(map(str, r)) for r in X) + "\n")
    elif fmt == "npy":
        p = tmp_path / "x.npy"
        np.save(p, X)
    elif fmt == "txt":
        p = tmp_path / "x.txt"
        p.write_text("\n".join("  ".join(map(str, r)) for r in X) + "\n")
    else:  # whitespace with a header row and row labels
        p = tmp_path / "x.txt"
        p.write_text("a b c d e\n" + "\n".join(f"r{i} " + " ".join(map(str, r))
                                                 for i, r in enumerate(X)) + "\n")
    return p


def _last_json(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("fmt", ["csv_header", "csv", "npy", "txt", "txt_labels"])
def test_every_format_reads_the_matrix(tmp_path, fmt):
    from bnmfzoo._cli.masses import _read

    got = _read(str(_write(tmp_path, fmt)))
    assert got.shape == X.shape and np.array_equal(got, X)


def test_the_layout_options_the_readers_refusal_names_are_the_commands(tmp_path, capsys):
    """pandas' ``to_csv`` of a frame with a named index of IDs and numeric column names (a
    listening-count matrix, users by artist IDs): the reader refuses to guess, and the options
    its line names (``--header --index-col 0``) exist on this command and read the matrix."""
    import argparse

    import pandas as pd

    from bnmfzoo._cli.masses import _arguments, _read

    df = pd.DataFrame(X, index=pd.Index([2, 7, 12, 30, 31, 44], name="userID"),
                      columns=[51, 52, 53, 60, 61])
    path = str(tmp_path / "plays.csv")
    df.to_csv(path)
    assert main(["--data", path, *FAST]) == 2
    err = capsys.readouterr().out.strip().splitlines()[-2]
    assert "'userID' is not a number" in err and "--header --index-col 0" in err
    opts = _arguments(argparse.ArgumentParser()).parse_args(
        [*FAST, "--header", "--index-col", "0"])
    got = _read(path, opts.header, opts.index_col)
    assert got.shape == X.shape and np.array_equal(got, X)
    with pytest.raises(ValueError, match="is column 1 row IDs"):
        _read(path, True)  # a header, but the ID column left to a guess: refused


def test_the_whitespace_fallback_follows_explicit_layout_options(tmp_path):
    """R's ``write.table`` of a matrix with numeric row and column names: a header one field
    short, which the main reader refuses. Left to a guess, every cell is a number, so nothing
    is dropped and the rows differ in length; ``--header --index-col 0`` reads the matrix,
    and an index column past a row's end is refused."""
    from bnmfzoo._cli.masses import _read

    path = tmp_path / "x.txt"
    path.write_text(" ".join(str(51 + j) for j in range(X.shape[1])) + "\n" + "\n".join(
        f"{100 + i} " + " ".join(map(str, r)) for i, r in enumerate(X)) + "\n")
    with pytest.raises(ValueError, match="rows of different lengths"):
        _read(str(path))
    got = _read(str(path), True, 0)
    assert got.shape == X.shape and np.array_equal(got, X)
    body = tmp_path / "y.txt"
    body.write_text("\n".join(f"{100 + i} " + " ".join(map(str, r))
                              for i, r in enumerate(X)) + "\n")
    assert np.array_equal(_read(str(body), False, 0), X)
    with pytest.raises(ValueError, match="past the end"):
        _read(str(path), True, 9)


# every format reaches the same run through ``_read`` (above), so two formats run it: one
# through each entry point (about 7.5 s a run)
@pytest.mark.parametrize("fmt", ["npy", "txt_labels"])
def test_every_format_prints_the_json_line(tmp_path, capsys, fmt):
    """Whitespace text with labels goes through ``bnmfzoo masses FILE`` (the installed
    command), ``.npy`` through ``main(["--data", FILE])`` (the checkout's script)."""
    from bnmfzoo.cli import main as bnmfzoo

    path = str(_write(tmp_path, fmt))
    rc = bnmfzoo(["masses", path, *FAST]) if fmt == "txt_labels" else main(["--data", path,
                                                                             *FAST])
    out = _last_json(capsys)
    assert rc == 0 and KEYS <= set(out) <= KEYS | {"why_not"}
    assert ("why_not" in out) == (not out["established"])
    assert out["modes"] and abs(sum(m["mass"] for m in out["modes"]) - 1.0) < 1e-9
    for m in out["modes"]:
        assert set(m) == {"mass", "low", "high", "estimator", "mass_check", "check_se"}
        assert m["low"] <= m["mass"] <= m["high"]


@pytest.mark.parametrize("args, match", [
    (["--rank", "9"], "--rank 9 is not possible"),
    (["--rank", "2", "--budget", "0.001"], "too small"),
])
def test_bad_input_prints_one_error_and_no_mass(tmp_path, capsys, args, match):
    rc = main(["--data", str(_write(tmp_path, "npy")), *args])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 2 and lines[-2].startswith("error:") and match in lines[-2]
    assert json.loads(lines[-1])["modes"] == [] and not json.loads(lines[-1])["established"]


def test_an_all_missing_row_is_refused(tmp_path, capsys):
    p = tmp_path / "x.csv"
    rows = [",".join(map(str, r)) for r in X.astype(float)]
    rows[1] = ",".join(["nan"] * X.shape[1])
    p.write_text("\n".join(rows) + "\n")
    assert main(["--data", str(p), *FAST]) == 2
    assert "all-missing row" in capsys.readouterr().out


def test_a_budget_that_runs_out_prints_no_mass(tmp_path, capsys):
    """A budget the first tempering step fits in but the SMC from the prior does not: the
    budget is a cap on the whole call, the JSON holds no mode and says why, promptly."""
    big = np.random.default_rng(1).poisson(3.0, size=(40, 30))
    p = tmp_path / "big.npy"
    np.save(p, big)
    rc = main(["--data", str(p), "--rank", "3", "--runs", "2", "--particles", "200",
               "--moves", "5", "--budget", "4"])
    out = _last_json(capsys)
    assert rc == 0 and out["modes"] == [] and not out["established"]
    assert "ran out" in out["why_not"] and "Raise budget_s" in out["why_not"]
    assert out["cpu_s"] < 4.0 + 3.0  # the cap, the reading and the pilot's compile


def test_auto_picks_the_route_per_family(capsys):
    """``--check auto``: Poisson with constant rates -> reference_pt with the local moves;
    Gaussian -> the library's auto; NB with constant rates -> its reference_pt route, with
    rate variables the library's auto; Beta-Dir -> reference_pt with the plain sweep; options
    given on the command line are kept. The fit
    chains keep 1,000 draws on the Poisson route, 500 elsewhere."""
    from argparse import Namespace

    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import POISSON_ROUTE, _route

    def ns(**kw):
        return Namespace(**{"check": "auto", "pt_local": None, "pt_leap": None,
                            "pt_scans": None, "moves": None, "pt_trips": None, "runs": None,
                            "bridge_draws": None, **kw})

    a = ns()
    _route(_build(X.astype(float), 2, "poisson"), a)
    assert a.check == "reference_pt" and a.pt_local == POISSON_ROUTE["pt_local"]
    assert (a.pt_leap, a.pt_scans, a.moves, a.pt_trips, a.runs) == (20, 2500, 2, 15, 4)
    assert a.bridge_draws == 1000
    a = ns(pt_scans=300, moves=3, bridge_draws=40)
    _route(_build(X.astype(float), 2, "poisson"), a)
    assert (a.pt_scans, a.moves, a.bridge_draws) == (300, 3, 40)
    a = ns()
    _route(_build(X.astype(float) + 0.5, 2, "exponential_gaussian"), a)
    assert a.check == "auto" and (a.pt_local, a.pt_scans, a.moves) == ("sweep", 500, 10)
    assert (a.pt_trips, a.runs, a.bridge_draws) == (None, 4, 500)
    a = ns(moves=4)  # given: kept
    _route(_build(X.astype(float) + 0.5, 2, "exponential_gaussian"), a)
    assert a.moves == 4
    a = ns()
    _route(_build(X.astype(float), 2, "negative_binomial"), a)
    assert a.check == "reference_pt" and (a.pt_local, a.pt_leap) == ("sweep", 10)
    assert (a.pt_scans, a.moves, a.pt_trips, a.runs, a.bridge_draws) == (8000, 2, 15, 4, 500)
    a = ns()  # rate variables: no reference path, the library's auto (the bridge)
    from bnmfzoo.models import negative_binomial

    _route(negative_binomial(X.astype(float), 2, ard=True), a)
    assert a.check == "auto" and a.moves == 5  # not the reference check's 10
    a = ns()  # binary: the reference_pt route with the plain sweep
    _route(_build((X > 1).astype(float), 2, "beta_dir"), a)
    assert a.check == "reference_pt" and (a.pt_local, a.pt_leap) == ("sweep", 10)
    assert (a.pt_scans, a.moves, a.pt_trips, a.runs, a.bridge_draws) == (2500, 2, 15, 4, 500)


@pytest.mark.parametrize("fmt, content, args, match", [
    ("npy", np.array([[1.0, 2.0, np.inf], [3.0, 4.0, 5.0], [1.0, 1.0, 1.0]] * 3), ["--rank", "2"],
     "infinite entry (row 0, column 2"),
    ("npy", np.arange(10.0), ["--rank", "1"], "2-dimensional"),
    ("npy", X, ["--rank", "2", "--budget", "-5"], "--budget must be positive"),
    ("npy", X, ["--rank", "2", "--runs", "0"], "--runs must be positive"),
    ("npy", X / 7.0, ["--rank", "2", "--model", "beta_dir"], "needs binary data"),
])
def test_more_bad_input_is_one_clear_line(tmp_path, capsys, fmt, content, args, match):
    """Infinite entries (not taken for missing ones), a 1-D array (not read as text: no
    encoding error), a non-positive budget or count, non-binary data for Beta-Dir."""
    p = tmp_path / "x.npy"
    np.save(p, content)
    rc = main(["--data", str(p), *args])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 2 and lines[-2].startswith("error:") and match in lines[-2], lines
    assert "utf-8" not in lines[-2]
    out = json.loads(lines[-1])
    assert out["modes"] == [] and not out["established"] and match in out["error"]


def test_an_unexpected_failure_still_ends_with_the_json(tmp_path, capsys, monkeypatch):
    """A failure inside the estimators (here a planted RuntimeError) gives one error line
    and the JSON as the last line, no mode, not established; the traceback on stderr."""
    import bnmfzoo.inference.smc_masses as sm

    def boom(*a, **k):
        raise RuntimeError("planted")

    monkeypatch.setattr(sm, "smc_mode_masses", boom)
    rc = main(["--data", str(_write(tmp_path, "npy")), *FAST])
    cap = capsys.readouterr()
    lines = cap.out.strip().splitlines()
    out = json.loads(lines[-1])
    assert rc == 3 and lines[-2] == "error: unexpected failure: RuntimeError: planted"
    assert out["modes"] == [] and not out["established"] and "planted" in out["error"]
    assert "Traceback" in cap.err


def test_masses_in_the_json_lie_in_unit_interval(tmp_path, capsys, monkeypatch):
    """A sole mode's mass summed to 1 + 2e-16 (seen on an all-zero matrix) is printed as 1,
    within its interval; a NaN is null (strict JSON); a mode no SMC particle reached (only the
    check's plain chains from the prior found it; seen on a 50 x 30 Gaussian matrix with
    missing entries) has mass null, not 0, with a note."""
    import bnmfzoo.inference.smc_masses as sm

    mode = {"mass": 1.0 + 2e-16, "low": 0.98, "high": 1.0, "se": 0.01, "n_members": 10,
            "estimator": "smc", "mass_check": float("nan"), "check_se": float("nan"),
            "check_estimator": "none"}
    unreached = {"mass": 0.0, "low": 0.0, "high": 1.0, "se": float("nan"), "n_members": 0,
                 "estimator": "smc_not_reached", "mass_check": 0.002, "check_se": 0.002,
                 "check_estimator": "reference_path"}
    light = {"mass": 3e-21, "low": 0.0, "high": 1.6e-20, "se": 1e-21, "n_members": 0,
             "estimator": "reference_path", "bound": 1.6e-20, "mass_check": float("nan"),
             "check_se": float("nan"), "check_estimator": "none: below 1 %",
             "note": "below 1 %: no SMC particle from the prior reached it"}
    fake = {"modes": [mode, unreached, light], "log_z": -1.0, "log_z_se": 0.1,
            "settings": {"n_temperatures": []}, "estimator": "smc",
            "final_ess": 0.5, "statement": "Masses NOT established: planted.",
            "established": False}
    monkeypatch.setattr(sm, "smc_mode_masses", lambda *a, **k: fake)
    assert main(["--data", str(_write(tmp_path, "npy")), *FAST]) == 0
    printed = capsys.readouterr().out
    out = json.loads(printed.strip().splitlines()[-1])
    m, u, li = out["modes"]
    assert m["mass"] == 1.0 and m["low"] <= m["mass"] <= m["high"] and m["mass_check"] is None
    assert u["mass"] is None and (u["low"], u["high"]) == (0.0, 1.0) and "unknown" in u["note"]
    assert u["mass_check"] == 0.002
    # a mode the reference path bounds below 0.1 %: its estimate, its bound, no second estimate
    assert li["mass"] == 3e-21 and li["bound"] == 1.6e-20 and li["mass_check"] is None
    assert li["estimator"] == "reference_path" and "below 1 %" in li["note"]
    assert "mode 2: reached by no SMC particle; reference path 3.0e-21, bounded by 1.6e-20" \
        in printed


def test_the_pilot_measures_the_tempering_steps():
    """The pilot's steps (a 16-particle SMC, 1 sweep per step, times 1.25) against a full
    SMC from the prior (100 particles x 5 sweeps) on a 20 x 12 Gaussian matrix at rank 2:
    within a factor 1.5 either way (the guess from the dimension was 1.7 times too few on a
    60 x 40 one). Step counts do not depend on timings: seeded, deterministic."""
    import math

    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import _measured_steps
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering.smc import smc

    r = np.random.default_rng(5)
    G = r.gamma(2.0, 1.0, (20, 2)) @ r.gamma(2.0, 1.0, (2, 12)) + r.normal(0, 0.3, (20, 12))
    fam = family_of_model(_build(G, 2, "exponential_gaussian"))
    steps, cost, sweep = _measured_steps(fam, 1e-5, 5, 1e4,
                                        7.0 * math.sqrt(fam.tempered.dimension))
    full = len(smc(fam.tempered, fam.draw_prior, 100, np.random.default_rng(2), n_moves=5)
               .betas) - 1
    assert full / 1.5 <= steps <= 1.5 * full, (steps, full)
    assert cost >= sweep > 0.0  # the sweeps timed, the overhead added


def test_the_pilot_keeps_a_lower_bound_when_its_short_smc_runs_out():
    """A short SMC that runs past 5 % of the budget stops there (the cap) and its steps so far
    (x 1.25) are a lower bound on the steps, used instead of a smaller guess. The budget is
    0.01 CPU s (a cap of 0.5 ms): the whole 16-particle SMC from the prior takes about 60 ms on
    this matrix, so it runs out on any machine (with 2 s, a cap of 0.1 s, it finished on a fast
    one once its kernels were compiled, and the test failed)."""
    import time

    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import PILOT_STEP_FACTOR, _measured_steps
    from bnmfzoo.inference.smc_masses import family_of_model

    r = np.random.default_rng(6)
    G = r.gamma(2.0, 1.0, (20, 2)) @ r.gamma(2.0, 1.0, (2, 12)) + r.normal(0, 0.3, (20, 12))
    fam = family_of_model(_build(G, 2, "exponential_gaussian"))
    t0 = time.process_time()
    steps, cost, sweep = _measured_steps(fam, 1e-6, 5, 0.01, 1.0)  # 5 %: 0.5 ms
    assert time.process_time() - t0 < 0.0005 + 0.5
    assert steps > 1.0 and steps >= PILOT_STEP_FACTOR and cost > 1e-6
    assert sweep == 1e-6  # the sweeps done are the path's start: the timed sweep is kept


def test_the_pilots_short_smc_times_the_nb_path_through_its_batch(monkeypatch):
    """On the negative binomial's rounding path the pilot's short SMC (whose CPU per step sets
    the step's overhead, and so the particles) evaluates the log targets through
    ``log_target_batch``, as the SMC from the prior does: the per-state ``log_target`` is
    never called (it would cost about 3x the overhead measured). Its steps lie within 1.5x
    of a full SMC's (60 particles x 3 sweeps). Seeded, deterministic; no timing decides it."""
    import math

    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import _measured_steps
    from bnmfzoo.inference.counts.tempering._rounding import TemperedCounts
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering.smc import smc

    r = np.random.default_rng(8)
    X = r.poisson(r.gamma(0.6, 1.0, (8, 2)) @ r.gamma(0.6, 1.0, (2, 6)) * 6.0)
    fam = family_of_model(_build(X, 2, "negative_binomial"))

    def refuse(self, state, beta):
        raise AssertionError("the per-state log target was called")

    monkeypatch.setattr(TemperedCounts, "log_target", refuse)
    steps, cost, sweep = _measured_steps(fam, 1e-5, 5, 1e4,
                                        7.0 * math.sqrt(fam.tempered.dimension))
    full = len(smc(fam.tempered, fam.draw_prior, 60, np.random.default_rng(2), n_moves=3)
               .betas) - 1
    assert full / 1.5 <= steps <= 1.5 * full, (steps, full)
    assert cost >= sweep > 0.0  # the sweeps timed, the overhead added


def test_the_pilot_times_the_sweeps_its_short_smc_makes(monkeypatch):
    """The pilot's CPU per particle-sweep is the mean of the short SMC's own sweeps plus the
    step's overhead per sweep, not the sweep timed at ``beta = 0.7``: on the negative
    binomial's rounding path that one costs 1.6-2.3x the path's mean (the budget was
    under-filled by as much). Forced costs on a fake clock: a sweep at ``beta`` costs
    ``2 beta`` ms, each log-likelihood 0.1 ms, nothing else; a conjugate toy (``p0 = N(0, 1)``,
    ``l = -200 x^2``) whose path spends most steps at small ``beta``. Deterministic."""
    from types import SimpleNamespace

    import bnmfzoo._cli.masses_budget as cmd

    clock, visited = [0.0], []

    class Toy:
        dimension = 1

        def sweep(self, state, beta, rng):
            clock[0] += 2e-3 * beta
            visited.append(beta)
            state[0] = rng.normal() / np.sqrt(1.0 + 400.0 * beta)

        def loglik(self, state):
            clock[0] += 1e-4
            return -200.0 * state[0] ** 2

        def copy(self, state):
            return list(state)

    fam = SimpleNamespace(tempered=Toy(), draw_prior=lambda rng: [rng.normal()])
    monkeypatch.setattr(cmd, "time", SimpleNamespace(process_time=lambda: clock[0]))
    # the untimed compile run before it (test_the_pilot_smc_is_timed_after_its_compile) would
    # add its sweeps to the ones counted here
    monkeypatch.setattr(cmd, "_compile_smc", lambda fam, budget: None)
    steps, cost, sweep = cmd._measured_steps(fam, 1.4e-3, 5, 1e4, 10.0)
    n = len(visited)
    assert n % cmd.PILOT_PARTICLES == 0 and steps == cmd.PILOT_STEP_FACTOR * n / 16
    assert sweep == pytest.approx(2e-3 * np.mean(visited), rel=1e-9)
    assert sweep < 0.5 * 1.4e-3  # the path's mean sweep, well under the one at beta = 0.7
    # log-likelihoods: 16 at the start and 16 after each step, spread over 5 sweeps per step
    overhead = 1e-4 * (n + 16) / n
    assert cost == pytest.approx(sweep + overhead / 5, rel=1e-9)


def _nb_model():
    from bnmfzoo._cli.masses import _build

    r = np.random.default_rng(8)
    X = r.poisson(r.gamma(0.6, 1.0, (8, 2)) @ r.gamma(0.6, 1.0, (2, 6)) * 6.0)
    return _build(X, 2, "negative_binomial")


@pytest.mark.parametrize("log_z, refused", [
    ([0.0, 20.0, 40.0, 60.0], True),   # s^2 = 667: about 2,133 particles, at least 685 > 162
    ([0.0, 7.5, 15.0, 22.5], False),   # s^2 = 93.75: about 300 > 162, at least 96 <= 162
    ([0.0, 0.5, 1.0, 1.5], False),     # the 50 x 25 matrix's kind of spread
])
def test_the_nb_route_refuses_a_budget_its_runs_spread_says_is_too_small(monkeypatch,
                                                                         log_z, refused):
    """The negative binomial's bridge route (``--check bridge``; the default route is its
    reference path since 30 Nov 2026): four short SMC runs' log Z spread sets the
    particles a run needs (``16 s^2 / (moves x 1 nat^2)``, at a 97.5 % lower confidence bound
    of ``s^2``); below it the budget is refused in one line naming the budget it needs (breast
    SBS96 K = 4: its 4 runs at 16 particles were 29 nats apart, it then spent 440 CPU s to
    say "not established"). The middle case needs more than the budget gives by the point
    estimate but not by the bound: not refused. Steps, costs and log Z forced (200 steps, 1 ms
    per particle-sweep: 162 particles per run at 4 runs x 5 sweeps); deterministic."""
    import bnmfzoo._cli.masses_budget as cmd

    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-3, 1e-3))
    monkeypatch.setattr(cmd, "_spread_runs", lambda fam, budget: np.array(log_z))
    if not refused:
        particles, _, _, _, m = cmd._pilot(_nb_model(), 900.0, 4, 5, 32, "bridge")
        assert (particles, m) == (162, 5)
        return
    with pytest.raises(ValueError) as err:
        cmd._pilot(_nb_model(), 900.0, 4, 5, 32, "bridge")
    msg = str(err.value)
    # about 2,134 x 4 runs x 5 sweeps x 200 steps x 1 ms / (0.8 x 0.9): 11,852 s
    assert "about 2134 particles x 5 sweeps per step (at least 685)" in msg, msg
    assert "the budget gives 162" in msg and msg.endswith("run with --budget 11880"), msg


def test_the_spread_rule_runs_on_the_nb_bridge_route_only(monkeypatch):
    """Only the negative binomial's bridge route, where the SMC from the prior gives the
    masses, runs the spread rule (the Poisson route's SMC from the prior only finds modes).
    Deterministic: the short runs are forced to fail if called."""
    import bnmfzoo._cli.masses_budget as cmd
    from bnmfzoo._cli.masses import _build

    def called(fam, budget):
        raise AssertionError("the spread rule ran")

    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-3, 1e-3))
    monkeypatch.setattr(cmd, "_spread_runs", called)
    cmd._pilot(_build(X.astype(float), 2, "poisson"), 900.0, 4, 2, 32, "reference_pt",
               sizes={})
    with pytest.raises(AssertionError, match="spread rule ran"):
        cmd._pilot(_nb_model(), 900.0, 4, 5, 32, "bridge")
    cmd._pilot(_nb_model(), 900.0, 4, 5, 32, "ais")


def test_the_spread_rules_refusal_is_one_line_and_no_mass(tmp_path, capsys, monkeypatch):
    """Through the command: the refusal is one ``error:`` line naming the budget, then the
    JSON with no mode and ``established: false`` (exit 2). Forced steps, costs and log Z."""
    import bnmfzoo._cli.masses_budget as cmd

    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-3, 1e-3))
    monkeypatch.setattr(cmd, "_spread_runs", lambda fam, budget: np.array([0.0, 20, 40, 60]))
    argv = ["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--model",
            "negative_binomial", "--check", "bridge"]
    assert main(argv) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    out = json.loads(lines[-1])
    assert lines[-2].startswith("error: --budget 900 CPU s is too small for this matrix: 4 "
                                "short SMC runs") and lines[-2].endswith("--budget 11880")
    assert out["modes"] == [] and out["established"] is False and "11880" in out["error"]


def test_the_spread_rules_short_runs_are_seeded_and_capped():
    """The short runs are seeded (same log Z twice) and return ``None`` when they do not fit
    in 10 % of the budget (then no rule). Deterministic on a tiny NB matrix."""
    from bnmfzoo._cli.masses_budget import SPREAD_RUNS, _spread_runs
    from bnmfzoo.inference.smc_masses import family_of_model

    fam = family_of_model(_nb_model())
    z = _spread_runs(fam, 1e4)
    assert z.shape == (SPREAD_RUNS,) and np.all(np.isfinite(z)) and np.ptp(z) > 0
    assert np.array_equal(z, _spread_runs(fam, 1e4))
    assert _spread_runs(fam, 1e-3) is None


def test_a_budget_too_small_for_the_large_route_is_one_line(tmp_path, capsys, monkeypatch):
    """Where the measured move costs choose the large route (forced here, so the test does not
    depend on timings), a budget that fits neither route is refused in one line naming the
    large route's need, before the route starts (it used to run and report nothing)."""
    from bnmfzoo.inference import large_route

    monkeypatch.setattr(large_route, "move_costs", lambda family, rng: {"sweep": 2e-4,
                                                                         "hmc": 2e-5})
    monkeypatch.setattr(large_route, "large_mode_masses", lambda *a, **k: pytest.fail(
        "the large route started on a budget too small for it"))
    rc = main(["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--budget", "0.001"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("route: large route"), lines[0]
    assert rc == 2 and lines[-2].startswith("error:") and "too small" in lines[-2], lines[-2:]
    assert "large route's move takes 0.02 ms" in lines[-2]
    assert json.loads(lines[-1])["modes"] == []


def _force_large(monkeypatch, hmc):
    """The sweep route's pilot says it cannot start (5 particles per run) and the move costs
    choose the large route (sweep 5x the HMC move): no timing decides the test."""
    from bnmfzoo._cli import masses as rdm
    from bnmfzoo.inference import large_route

    monkeypatch.setattr(rdm, "_pilot", lambda *a, **k: (5, 50, 1e-3, 10.0, 2))
    monkeypatch.setattr(large_route, "move_costs", lambda family, rng: {"sweep": 5 * hmc,
                                                                         "hmc": hmc})


class _Started(Exception):
    pass


def _refuse_start(*a, **k):
    raise _Started("the large route started")


def test_the_large_route_is_refused_from_its_full_predicted_cost(tmp_path, capsys, monkeypatch):
    """A budget above the large route's floor (20 particles per run) but below its full
    predicted cost for one mode (reference-path SMC plus ``pt_runs`` tempering runs of
    ``2 Lambda + 1`` rungs x enough scans for 10 round trips) is refused in one line naming
    that budget, before the route starts; a budget above it starts the route. The command's
    tempering pilots the copula by default, so its floor is the copula's; ``--no-pt-copula``
    names the product's, higher. Costs forced: no timing decides the test."""
    from bnmfzoo._cli.masses import _build
    from bnmfzoo.inference import large_route
    from bnmfzoo.inference.smc_masses import family_of_model

    hmc = 0.35  # s per move: 6 x 5 at rank 2 (dimension 22) then needs about 925 CPU s
    dim = family_of_model(_build(X.astype(float), 2, "poisson")).tempered.dimension
    full = large_route.large_route_need(dim, hmc, copula=True)
    product = large_route.large_route_need(dim, hmc)
    assert 900 < full["total_s"] < 1000 < product["total_s"], (full, product)
    assert full["pt_s"] > 0 and full["smc_s"] > 0
    _force_large(monkeypatch, hmc)
    monkeypatch.setattr(large_route, "large_mode_masses", lambda *a, **k: pytest.fail(
        "the large route started on a budget below its predicted cost"))
    rc = main(["--data", str(_write(tmp_path, "npy")), "--rank", "2"])  # default budget 900
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("route: large route"), lines[0]
    assert rc == 2 and lines[-2].startswith("error:") and "too small" in lines[-2], lines[-2:]
    need = int(lines[-2].split("needs at least --budget ")[1].split()[0])
    assert full["total_s"] <= need < full["total_s"] + 120, (need, full)
    assert f"{full['rungs']} rungs x {full['scans']} scans" in lines[-2]
    assert json.loads(lines[-1])["modes"] == []
    rc = main(["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--no-pt-copula"])
    lines = capsys.readouterr().out.strip().splitlines()
    need_product = int(lines[-2].split("needs at least --budget ")[1].split()[0])
    assert rc == 2 and product["total_s"] <= need_product < product["total_s"] + 120, lines[-2]
    # the same matrix with the budget it named: the route starts
    monkeypatch.setattr(large_route, "large_mode_masses", _refuse_start)
    rc = main(["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--budget", str(need)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 3 and "the large route started" in lines[-2], lines[-2:]


def test_large_route_need_grows_with_the_barrier_and_the_move():
    """The predicted cost: linear in the move's cost and the runs, and the tempering's rungs
    and scans both grow with the barrier (so its cost like the dimension)."""
    from bnmfzoo.inference.large_route import large_route_need

    a, b = large_route_need(400, 1e-3), large_route_need(1600, 1e-3)
    assert abs(large_route_need(400, 2e-3)["total_s"] - 2 * a["total_s"]) < 1e-9
    assert abs(large_route_need(400, 1e-3, pt_runs=8)["pt_s"] - 2 * a["pt_s"]) < 1e-9
    assert abs(b["barrier"] - 2 * a["barrier"]) < 1e-9
    assert b["rungs"] > 1.9 * a["rungs"] - 1 and b["scans"] > 1.5 * a["scans"]
    assert 3.0 * a["pt_s"] < b["pt_s"] < 4.5 * a["pt_s"]
    with pytest.raises(ValueError):
        large_route_need(400, 0.0)


@pytest.mark.parametrize("ref_cost, fewer, moves, enough", [
    (1e-6, True, 5, True),    # a cheap reference path: the SMC keeps 5 sweeps per step
    (7e-3, True, 2, True),    # a dear one: fewer sweeps per step, both estimators fit
    (7e-3, False, 5, False),  # --moves given: kept, and the budget is then too small
])
def test_the_pilot_reserves_the_reference_paths_predicted_cost(monkeypatch, ref_cost, fewer,
                                                               moves, enough):
    """The reference-path check gets its predicted cost (4 runs x 100 particles x moves x
    0.45 x the steps x its sweep), not a fixed 10 % (GDSC rank 5: the check ran out after the
    SMC from the prior had taken 542 of 900 s). Steps (200) and costs are fixed here, so the
    outcome does not depend on timings: at 7 ms per reference sweep the check alone needs more
    than the budget at 3-5 sweeps per step and 70 % of it at 2."""
    import bnmfzoo._cli.masses_budget as cmd
    from bnmfzoo._cli.masses import _build

    r = np.random.default_rng(5)
    G = r.gamma(2.0, 1.0, (20, 2)) @ r.gamma(2.0, 1.0, (2, 12)) + r.normal(0, 0.3, (20, 12))
    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-4, 1e-4))
    monkeypatch.setattr(cmd, "_reference_sweep_cost", lambda *a: ref_cost)
    particles, _, _, need, m = cmd._pilot(_build(G, 2, "exponential_gaussian"), 900.0, 4,
                                          5, 32, "auto", (4, 100), fewer_moves=fewer)
    assert m == moves
    assert (particles >= cmd.REF_MIN_PARTICLES) == enough, particles
    if not enough:
        assert particles < 20 and need > 900.0 / 0.8


def test_the_pilots_fall_stops_at_five_sweeps_while_both_estimators_fit(monkeypatch):
    """The sweeps per step fall towards 2 for :data:`REF_MIN_PARTICLES` only down to
    :data:`REF_MIN_MOVES` (5) while both estimators fit (the faces: 150 x 5 gave the runs' log
    Z sd 1.36 where 375 x 2 gave 3.26, at equal CPU). Steps and costs fixed as above: at 3.8 ms
    per reference sweep the check takes 684 of the 720 s at 5 sweeps per step, leaving 90
    particles per run; the fall stops there. With the floor at 2 (the rule before) it goes on
    to 4 sweeps and 540 particles; from 10 sweeps it also stops at 5."""
    import bnmfzoo._cli.masses_budget as cmd
    from bnmfzoo._cli.masses import _build

    r = np.random.default_rng(5)
    G = r.gamma(2.0, 1.0, (20, 2)) @ r.gamma(2.0, 1.0, (2, 12)) + r.normal(0, 0.3, (20, 12))
    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-4, 1e-4))
    monkeypatch.setattr(cmd, "_reference_sweep_cost", lambda *a: 3.8e-3)
    model = _build(G, 2, "exponential_gaussian")

    def pilot(moves):
        return cmd._pilot(model, 900.0, 4, moves, 32, "auto", (4, 100), fewer_moves=True)

    for start in (5, 10):
        particles, _, _, need, m = pilot(start)
        assert m == cmd.REF_MIN_MOVES == 5 and 20 <= particles < cmd.REF_MIN_PARTICLES
        assert need <= 900.0
    monkeypatch.setattr(cmd, "REF_MIN_MOVES", 2)
    particles, _, _, _, m = pilot(5)
    assert m == 4 and particles >= cmd.REF_MIN_PARTICLES


def test_the_poisson_routes_pilot_measures_its_steps(monkeypatch):
    """On the Poisson (``reference_pt``) route the pilot measures the SMC from the prior's
    steps as the other routes do (ALL/AML 100 x 38: 142 guessed from the dimension, 898-910
    run, so the "12 %" SMC took a third of the budget). Steps and cost forced (1,000 steps,
    0.1 ms per particle-sweep): 80 % of 900 s buys 7,200 particle-sweeps per step, 12 % of
    them is 108 per run at 4 runs x 2 sweeps, under the floor of 200, so 2 runs x 216."""
    import bnmfzoo._cli.masses_budget as cmd
    from bnmfzoo._cli.masses import _build

    calls = []

    def measured(fam, per_sweep, moves, budget, guess):
        calls.append(guess)
        return 1000.0, 1e-4, 1e-4

    monkeypatch.setattr(cmd, "_measured_steps", measured)
    sizes = {"fewer_runs": True}
    particles, _, _, need, m = cmd._pilot(_build(X.astype(float), 2, "poisson"), 900.0, 4,
                                          2, 32, "reference_pt", sizes=sizes)
    assert len(calls) == 1 and sizes["steps"] == 1000.0 and m == 2
    assert (particles, sizes["runs"], sizes["share"]) == (216, 2, 0.12)
    assert need == pytest.approx(900.0 * 20 * 2 * 2 / (cmd.PT_PRIOR_MAX_SHARE * 7200.0))


@pytest.mark.parametrize("sweeps, runs, fewer, expect", [
    (20000.0, 4, True, (300, 4, 0.12)),   # plenty: 12 % at 4 runs
    (7200.0, 4, True, (216, 2, 0.12)),    # fewer runs reach the floor
    (4000.0, 4, True, (200, 2, 0.2)),     # and the share rises to it
    (2000.0, 4, True, (175, 2, 0.35)),    # capped at 35 %
    (4000.0, 4, False, (175, 4, 0.35)),   # --runs given: kept, the share rises to its cap
])
def test_the_smc_from_the_prior_keeps_its_particle_floor(sweeps, runs, fewer, expect):
    """The SMC from the prior on the Poisson route (it only finds modes) keeps 200 particles
    per run where it can: its runs fall to 2 before its share of the pilot's sweeps rises
    from 12 % (up to 35 %). Reuters 200 x 100 at rank 3 had 64 per run x 4 runs and each run
    ended in a "mode" of its own. Pure arithmetic: no timing."""
    from bnmfzoo._cli.masses_budget import _prior_smc_size

    p, r, s = _prior_smc_size(sweeps, 2, runs, fewer)
    assert (p, r, round(s, 6)) == expect


def test_the_command_runs_the_smc_from_the_prior_with_the_pilots_runs(tmp_path, capsys,
                                                                       monkeypatch):
    """The runs the pilot chose (``sizes["runs"]``) reach ``smc_mode_masses``, with the
    Poisson route's round-trip stop (15); ``--runs`` given is not lowered by the pilot."""
    import bnmfzoo._cli.masses as cmd
    from bnmfzoo.inference import smc_masses

    seen = {}

    def pilot(*a, sizes=None, **k):
        seen["fewer_runs"] = sizes["fewer_runs"]
        sizes.update(runs=2 if sizes["fewer_runs"] else a[2], share=0.2, steps=500.0)
        return 300, 50, 1e-3, 10.0, 2

    def stop(model, **kw):
        seen.update(kw)
        raise _Started("smc_mode_masses called")

    monkeypatch.setattr(cmd, "_pilot", pilot)
    monkeypatch.setattr(smc_masses, "smc_mode_masses", stop)
    assert main(["--data", str(_write(tmp_path, "npy")), "--rank", "2"]) == 3
    assert seen["fewer_runs"] and seen["n_runs"] == 2 and seen["n_particles"] == 300
    assert seen["pt_trips"] == 15 and seen["pt_scans"] == 2500 and seen["check"] == "reference_pt"
    assert "20% of the pilot's sweeps" in capsys.readouterr().out
    assert main(["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--runs", "4"]) == 3
    assert not seen["fewer_runs"] and seen["n_runs"] == 4
    assert seen["prior_sweeps"] == 300  # the library's default, unless given
    capsys.readouterr()
    assert main(["--data", str(_write(tmp_path, "npy")), "--rank", "2",
                 "--prior-sweeps", "3000"]) == 3
    assert seen["prior_sweeps"] == 3000 and "chains of 3000 sweeps" in capsys.readouterr().out


def test_the_header_states_the_nb_bridges_draws_from_its_own_dimension():
    """The header's NB bridge size comes from the bridge's parametrisation: (D + N) K log
    factor entries plus the learned dispersion, so 226 at 50 x 25, rank 3; the other families
    keep the plain draws."""
    from bnmfzoo._cli.masses import _bridge_draws_text, _build

    X = np.random.default_rng(0).poisson(5.0, size=(50, 25)).astype(float)
    nb = _bridge_draws_text("negative_binomial", _build(X, 3, "negative_binomial"), 500)
    assert "sized to 226 parameters" in nb and "about 1604 draws" in nb, nb
    assert _bridge_draws_text("poisson", _build(X, 3, "poisson"), 500) == (
        "4 chains x 500 draws per mode")


def test_the_reference_sweep_is_timed_after_its_compile(monkeypatch):
    """The first reference-path sweep compiles its kernels on a cold cache; timed, it made one
    sweep of a 30 x 12 Gaussian matrix 326 ms instead of 0.09 and the route refused the default
    budget. Here the first sweep burns 0.5 CPU s: timed, the cost would be at least 0.5 / 3 s."""
    import time

    import bnmfzoo.inference.reference_path as rp
    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import _reference_sweep_cost
    from bnmfzoo.inference.smc_masses import family_of_model

    real, calls = rp.reference_adapter, []

    def first_sweep_dear(fam, *args):
        ad = real(fam, *args)
        sweep = ad.sweep

        def dear(*a):
            if not calls:
                t = time.process_time()
                while time.process_time() - t < 0.5:
                    pass
            calls.append(1)
            return sweep(*a)

        ad.sweep = dear
        return ad

    monkeypatch.setattr(rp, "reference_adapter", first_sweep_dear)
    fam = family_of_model(_build(np.random.default_rng(1).gamma(2.0, 1.0, (12, 8)), 2,
                                 "exponential_gaussian"))
    rng = np.random.default_rng(0)
    cost = _reference_sweep_cost(fam, fam.draw_prior(rng), rng)
    assert cost < 0.02 and len(calls) > 3  # a sweep here takes well under a millisecond


def test_the_pilot_smc_is_timed_after_its_compile(monkeypatch):
    """The pilot SMC's first run compiles its kernels on a cold cache (1.4 times the warm
    per-step overhead measured; a Gaussian matrix got 805 particles where a warm cache gave
    1,331). Here the first SMC burns 2 CPU s: timed, the cost per particle-sweep would rise by
    2 / (16 particles x the pilot's steps x 5 moves), about 0.4-1.3 ms, against 0.07-0.4 ms
    measured (machine-dependent); the bound is the same measurement without the burn plus half
    of that rise."""
    import importlib
    import time

    from bnmfzoo._cli.masses import _build
    from bnmfzoo._cli.masses_budget import PILOT_PARTICLES, PILOT_STEP_FACTOR, _measured_steps
    from bnmfzoo.inference.smc_masses import family_of_model

    smc_module = importlib.import_module("bnmfzoo.inference.tempering.smc")  # the module
    real, calls = smc_module.smc, []

    def first_dear(*args, **kwargs):
        if burn and not calls:
            t = time.process_time()
            while time.process_time() - t < 2.0:
                pass
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(smc_module, "smc", first_dear)
    fam = family_of_model(_build(np.random.default_rng(1).gamma(2.0, 1.0, (12, 8)), 2,
                                 "exponential_gaussian"))
    burn = False
    _, plain, _ = _measured_steps(fam, 3e-5, 5, 900.0, 60)
    calls.clear()
    burn = True
    steps, cost, sweep = _measured_steps(fam, 3e-5, 5, 900.0, 60)
    assert calls == [2, 16]  # the untimed compile run, then the timed pilot
    rise = 2.0 / (PILOT_PARTICLES * steps / PILOT_STEP_FACTOR) / 5
    assert cost < plain + 0.5 * rise, (steps, cost, plain, rise)


@pytest.mark.parametrize("sized", [True, False])
def test_a_refusal_is_said_in_the_commands_flags_with_the_budget_to_run_next(
        tmp_path, capsys, monkeypatch, sized):
    """The library's advice names Python arguments (``n_runs, n_particles``); the command
    prints its flags instead, and when the SMC from the prior's runs disagreed (sd 2.4 nats
    from ``log_z_se`` 1.2 over 4 runs) with particles sized from ``--budget``, the budget to
    run next: ``(2.4 / 1.2)^2 = 4`` times 600 s. With ``--particles`` given there is no budget
    to scale, so none is suggested. The sized run's pilot times a reference-path sweep of this
    Poisson model (``--check reference``), which crashed on the count adapters (no ``K``)."""
    import bnmfzoo._cli.masses_budget as cmd
    import bnmfzoo.inference.smc_masses as sm
    from bnmfzoo.inference._mass_verdict import advice

    why = "the runs' log Z disagree (sd 2.40 nats)"
    fake = {"modes": [], "log_z": -1.0, "log_z_se": 1.2,
            "settings": {"n_temperatures": [], "n_runs": 4}, "estimator": "smc",
            "final_ess": 0.5, "established": False,
            "statement": f"Masses NOT established: {why}. {advice([why], 'reference')}"}
    monkeypatch.setattr(sm, "smc_mode_masses", lambda *a, **k: fake)
    monkeypatch.setattr(cmd, "_measured_steps", lambda *a: (200.0, 1e-3, 1e-3))
    args = ["--data", str(_write(tmp_path, "npy")), "--rank", "2", "--budget", "600",
            "--check", "reference", "--prior-chains", "2"]
    assert main(args + ([] if sized else ["--particles", "10"])) == 0
    printed = capsys.readouterr().out
    why_not = json.loads(printed.strip().splitlines()[-1])["why_not"]
    assert "n_runs" not in printed and "(--runs, --particles;" in why_not
    assert "(--moves)" in why_not and "a higher --cess" in why_not
    nxt = f"Next: bnmfzoo masses {args[1]} --rank 2 --budget 2400 (the SMC"
    assert (nxt in why_not) == sized and (nxt in printed) == sized
