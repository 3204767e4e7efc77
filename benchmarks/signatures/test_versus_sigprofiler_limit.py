"""Self-test of the benchmark's wall-clock limit for SigProfilerExtractor (no method is run).

Not statistical; only the timing bounds (a 2 s limit must stop within 10 s) could fail on a
loaded machine: 0 failures in 10 runs of this file at load 6 on 2 cores (29 Nov 2026)."""

import os
import sys
import time

from benchmarks.signatures.versus_sigprofiler import run_limited

# A parent that starts a grandchild (as SigProfilerExtractor starts its worker pool), writes the
# grandchild's pid, then both sleep far past the limit.
SCRIPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (killed, not yet reaped by init) counts as gone
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_limit_stops_the_whole_process_group():
    t0 = time.perf_counter()
    r = run_limited([sys.executable, "-c", SCRIPT], wall_limit=2.0)
    assert r["timed_out"] and r["returncode"] != 0
    assert 2.0 <= r["wall"] < 10.0 and time.perf_counter() - t0 < 10.0
    grandchild = int(r["output"].split()[0])
    deadline = time.time() + 5
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)  # the worker was stopped with its parent


def test_no_limit_runs_to_the_end_and_counts_child_cpu():
    busy = "s = 0\nfor i in range(3_000_000):\n    s += i\nprint('done', s)"
    r = run_limited([sys.executable, "-c", busy], wall_limit=60.0)
    assert not r["timed_out"] and r["returncode"] == 0
    assert r["output"].startswith("done")
    assert r["cpu"] > 0.02  # the child's CPU is counted (RUSAGE_CHILDREN)


def test_a_failed_run_becomes_a_row_not_an_exception(tmp_path, monkeypatch):
    """SigProfilerExtractor crashed in its own rank selection on one design (IndexError): the
    benchmark must report that design's row as failed and go on."""
    import numpy as np

    from benchmarks.signatures import versus_sigprofiler as vs

    crash = tmp_path / "crash.py"
    crash.write_text("print('the minimum process stability is -0.19 for 11 signatures')\n"
                     "raise IndexError('list index out of range')\n")
    monkeypatch.setattr(vs, "SPE_PYTHON", type(vs.SPE_PYTHON)(sys.executable))
    monkeypatch.setattr(vs, "SPE_RUNNER", crash)
    settings = dict(replicates=1, min_iter=1, max_iter=1, test_conv=1)
    r = vs.sigprofiler(np.ones((2, 96)), [f"c{i}" for i in range(96)], ["g0", "g1"], [1, 2],
                       settings=settings, workdir=tmp_path, wall_limit=30.0)
    assert r["W"] is None and r["K"] is None
    assert r["detail"]["status"].startswith("failed (exit 1): IndexError: list index")
    assert r["detail"]["min_stability_of_finished_ranks"] == {11: -0.19}


def test_table_prints_an_unscored_row(capsys):
    from benchmarks.signatures.versus_sigprofiler import print_table

    s = {c: {"precision": 1.0, "recall": 1.0, "f1": 1.0} for c in ("0.8", "0.9", "0.95")}
    rows = [dict(method="ours", K=4, K_true=4, cpu=143.1, scores=s, detail={}),
            dict(method="SPE", K=None, K_true=4, cpu=1234.5, scores=None,
                 detail={"status": "did not finish in 3000 s of wall time"}),
            dict(method="SPE2", K=None, K_true=4, cpu=450.1, scores=None,
                 detail={"status": "failed (exit 1): IndexError"})]
    print_table("flat", "info", rows)
    out = capsys.readouterr().out
    assert "| ours | 4 | 1.000 | 1.000 | 1.000 | 1.00 / 1.00 | 143.1 |" in out
    # stopped: its CPU is a lower bound; failed: it ended by itself, its CPU is all counted
    assert "| SPE | did not finish in 3000 s of wall time | | | | | >= 1234.5 |" in out
    assert "| SPE2 | failed (exit 1): IndexError | | | | | 450.1 |" in out
