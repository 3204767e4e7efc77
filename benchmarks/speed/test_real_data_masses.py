"""Self-test of ``benchmarks.speed.real_data_masses``: every matrix format ``bnmfzoo fit``
reads, at tiny size, gives the JSON last line; bad input gives one error line and no mass."""

import json

import numpy as np
import pytest

from benchmarks.speed.real_data_masses import main

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
def test_every_format_prints_the_json_line(tmp_path, capsys, fmt):
    rc = main(["--data", str(_write(tmp_path, fmt)), *FAST])
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
    Gaussian -> the library's auto; options given on the command line are kept."""
    from argparse import Namespace

    from benchmarks.speed.real_data_masses import POISSON_ROUTE, _build, _route

    def ns(**kw):
        return Namespace(**{"check": "auto", "pt_local": None, "pt_leap": None,
                            "pt_scans": None, "moves": None, **kw})

    a = ns()
    _route(_build(X.astype(float), 2, "poisson"), a)
    assert a.check == "reference_pt" and a.pt_local == POISSON_ROUTE["pt_local"]
    assert (a.pt_leap, a.pt_scans, a.moves) == (20, 2500, 2)
    a = ns(pt_scans=300, moves=3)
    _route(_build(X.astype(float), 2, "poisson"), a)
    assert (a.pt_scans, a.moves) == (300, 3)
    a = ns()
    _route(_build(X.astype(float) + 0.5, 2, "exponential_gaussian"), a)
    assert a.check == "auto" and (a.pt_local, a.pt_scans, a.moves) == ("sweep", 500, 5)
    a = ns()
    _route(_build(X.astype(float), 2, "negative_binomial"), a)
    assert a.check == "auto"
