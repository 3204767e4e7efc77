"""Run the mutation catalogs against their named fast tests and write ``REPORT.md``.

Each mutant is applied to a private copy of the repository (see :mod:`._harness` for why a
curated catalog and not mutmut / cosmic-ray) and its named tests run with
``-m "not slow" -x -q -p no:cacheprovider`` and a fresh ``NUMBA_CACHE_DIR``. Results are kept
in ``benchmarks/mutation/results.json`` (one record per mutation id, replaced when re-run), so a
run can be split (``--only``, ``--catalog``); ``REPORT.md`` is rebuilt from every stored record
and lists the catalog entries not yet run. CPU heavy: run it niced, one job at a time::

    nice -n 15 python -m benchmarks.mutation.run                       # everything (make mutate)
    nice -n 15 python -m benchmarks.mutation.run --catalog binary      # one catalog
    nice -n 15 python -m benchmarks.mutation.run --only binary-betadir-stale-ratio-after-remove
    python -m benchmarks.mutation.run --check                          # entries apply? (no tests)
    python -m benchmarks.mutation.run --report                         # rebuild REPORT.md only

``--report`` also sorts every entry into three columns from its recorded result: **caught by a
statistical or exact test** (a test's assertion failed), **caught only by a golden hash, a
doctest's digits or a crash** (the first failing test is a golden-number test such as
``tests/house/test_same_numbers.py`` or ``tests/binary/test_binary_fingerprints.py``, a doctest, or
the
failure was an exception other than an assertion), and **not caught** (including errors and
entries not run). Only the first column counts as caught. The failure kind is recorded by the
harness's pytest plugin (:mod:`._guard`); for results recorded before that, it is read from the
stored end of pytest's output (``path:line: ExceptionType``) when there, else the entry is
classified by the test's name and marked "kind not recorded".
"""

import argparse
import fcntl
import json
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.mutation._harness import (
    CAUGHT,
    NOT_CAUGHT,
    MutationError,
    check_applies,
    load_catalogs,
    run_baseline,
    run_mutation,
)
from benchmarks.mutation.kernels import render_kernels

HERE = Path(__file__).parent
RESULTS = HERE / "results.json"
REPORT = HERE / "REPORT.md"
COMMAND = "nice -n 15 .venv/bin/python -m benchmarks.mutation.run"


def _load_results():
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def _record(key, record, catalogs):
    """Store one result, merged into the file under a lock (several runs may share it)."""
    with open(Path(tempfile.gettempdir()) / "bnmfzoo-mutation-results.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = _load_results()
        results[key] = record
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        REPORT.write_text(render_report(catalogs, results))
    return results


#: test files whose failures are golden numbers (hashes of seeded draws), not checks of a law
GOLDEN_FILES = ("tests/house/test_same_numbers.py", "tests/binary/test_binary_fingerprints.py")
#: the three columns of ``--report``
STAT, WEAK, MISSED = ("caught by a statistical or exact test",
                      "caught only by a golden hash, a doctest's digits or a crash", "not caught")
#: pytest's last traceback line, ``path.py:123: ExceptionType``
_TAIL_EXC = re.compile(r"^\S+\.py:\d+: ([A-Za-z_][\w.]*)\s*$", re.M)
_ASSERTIONS = ("AssertionError", "Failed")


def _weak_test(nodeid):
    """Why a failing test only shows that numbers changed (``""`` for a test of a law)."""
    path = nodeid.split("::")[0]
    if path in GOLDEN_FILES or "fingerprint" in nodeid or "same_numbers" in nodeid:
        return "golden hash"
    if path == "tests/house/test_doctests.py" or path.startswith("bnmfzoo/") or "doctest" in nodeid:
        return "doctest digits"
    return ""


def classify_result(mutation, record):
    """``(column, note)`` of one catalog entry from its recorded result (None: not run)."""
    if record is None:
        return MISSED, "not run"
    stale = (" (recorded for an earlier version of the entry)"
             if record.get("old", mutation.old) != mutation.old
             or record.get("new", mutation.new) != mutation.new else "")
    if record["status"] == NOT_CAUGHT:
        return MISSED, "every named test passed" + stale
    if record["status"] != CAUGHT:
        return MISSED, f"{record['status']}: {record.get('failed', '')}" + stale
    weak = _weak_test(record.get("failed", ""))
    if weak:
        return WEAK, weak + stale
    kind = record.get("kind", "")
    if kind == "exception":
        return WEAK, f"crash: {record.get('exception', '')}" + stale
    if kind == "assertion":
        return STAT, "assertion" + stale
    found = _TAIL_EXC.findall(record.get("tail", ""))
    if found:
        exc = found[-1].rsplit(".", 1)[-1]
        if exc in _ASSERTIONS:
            return STAT, "assertion (kind read from the log tail)" + stale
        return WEAK, f"crash: {exc} (kind read from the log tail)" + stale
    return STAT, "kind not recorded (classified by the test's name)" + stale


def classify_all(catalogs, results):
    """``[(catalog, mutation, column, note)]`` for every catalog entry."""
    return [(name, m, *classify_result(m, results.get(m.id)))
            for name, muts in catalogs.items() for m in muts]


def column_summary(classified):
    """Counts of the three columns and the share caught by a statistical or exact test."""
    counts = {c: sum(col == c for *_, col, _ in classified) for c in (STAT, WEAK, MISSED)}
    total = len(classified)
    share = counts[STAT] / total if total else float("nan")
    return counts, share


def render_columns(classified):
    """The three-column Markdown section of the report."""
    counts, share = column_summary(classified)
    lines = ["## Caught by what", "",
             f"| {STAT} | {WEAK} | {MISSED} | total |", "|---|---|---|---|",
             f"| {counts[STAT]} ({100 * share:.1f} %) | {counts[WEAK]} | {counts[MISSED]} | "
             f"{len(classified)} |", "",
             "Only the first column counts as caught. Entries outside it, and why:", ""]
    rest = [(n, m, col, note) for n, m, col, note in classified if col != STAT]
    lines += [f"- `{m.id}` ({n}): **{col}**, {note}. {m.why}" for n, m, col, note in rest]
    if not rest:
        lines.append("- none")
    lines.append("")
    return "\n".join(lines)


def render_report(catalogs, results):
    """The Markdown report: one row per catalog entry (results of its last run, if any)."""
    rows, counts = [], {}
    classified = {m.id: (col, note) for _, m, col, note in classify_all(catalogs, results)}
    for name, muts in catalogs.items():
        for m in muts:
            r = results.get(m.id)
            status = r["status"] if r else "not run"
            counts[status] = counts.get(status, 0) + 1
            by = f"`{r['failed']}`" if r and r["failed"] else ""
            cpu = f"{r['cpu_s']:.0f}" if r else ""
            when = r.get("date", "") if r else ""
            why = m.why.replace("|", "\\|")
            col, note = classified[m.id]
            rows.append(f"| {name} | `{m.id}` | {why} | **{status}** | {col}; {note} | {by} | "
                        f"{cpu} | {when} | `{COMMAND} --only {m.id}` |")
    base = results.get("baseline")
    lines = [
        "# Mutation check of the fast test suite (issue #36)",
        "",
        "Generated by `python -m benchmarks.mutation.run` (`make mutate`); do not edit by hand.",
        "Each row: one realistic one-line bug applied to a copy of the repository, its named fast",
        "tests run with `-m \"not slow\" -x -q -p no:cacheprovider` and a fresh `NUMBA_CACHE_DIR`.",
        "**caught**: a named test failed; **NOT CAUGHT**: all passed; **error**: the run did not",
        "complete (timeout, collection error, or only slow tests named). CPU s: the pytest",
        "subprocess's CPU time (includes numba compilation into the empty cache, ~10-40 s).",
        "The mutation (path, old, new, tests) is in `benchmarks/mutation/catalog_<catalog>.py`.",
        "Why a curated catalog with named fast tests rather than mutmut / cosmic-ray (numba",
        "kernels recompiled per mutant, statistical tests of seconds to a minute, blind operator",
        "mutants mostly crashes or equivalents): see the docstring of",
        "`benchmarks/mutation/_harness.py`.",
        "",
        "Summary: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ".",
        "",
    ]
    if base:
        lines += [f"Baseline (the named tests of catalog(s) {', '.join(base.get('catalogs', []))}"
                  f" on the unmutated tree, {base.get('date', '')}): "
                  f"**{base['status']}** ({base['cpu_s']:.0f} CPU s)"
                  + (f", first failure `{base['failed']}`" if base["failed"] else "") + ".", ""]
    lines += [render_columns(classify_all(catalogs, results)), render_kernels()]
    lines += ["| catalog | id | bug (class) | result | caught by | first failing test | CPU s | "
              "run on | reproduce |", "|---|---|---|---|---|---|---|---|---|", *rows, ""]
    return "\n".join(lines)


def main(argv=None):
    """Command-line entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", default=[], metavar="ID",
                   help="run only this mutation id (repeatable)")
    p.add_argument("--catalog", action="append", default=[], metavar="NAME",
                   help="run only this catalog (catalog_NAME.py; repeatable)")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per mutant (900)")
    p.add_argument("--baseline", action="store_true",
                   help="also run all selected named tests on the unmutated tree first")
    p.add_argument("--check", action="store_true",
                   help="only check that every entry applies to the current tree")
    p.add_argument("--report", action="store_true",
                   help="only rebuild REPORT.md and print its three columns (caught by a "
                        "statistical or exact test / only by a golden hash, a doctest or a "
                        "crash / not caught)")
    p.add_argument("--skip-done", action="store_true",
                   help="skip ids that already have a caught result for the current old/new")
    args = p.parse_args(argv)

    catalogs = load_catalogs(args.catalog or None)
    selected = [(name, m) for name, muts in catalogs.items() for m in muts
                if not args.only or m.id in args.only]
    unknown = set(args.only) - {m.id for _, m in selected}
    if unknown:
        p.error(f"unknown mutation id(s): {sorted(unknown)}")
    bad = []
    for _, m in selected:
        try:
            check_applies(m)
        except MutationError as err:
            bad.append(str(err))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(selected)} mutations apply to the current tree")
        return 0
    results = _load_results()
    all_catalogs = load_catalogs()
    if args.report:
        REPORT.write_text(render_report(all_catalogs, results))
        print(render_columns(classify_all(all_catalogs, results)))
        return 0
    if args.skip_done:
        selected = [(n, m) for n, m in selected
                    if not (m.id in results and results[m.id]["status"] == CAUGHT
                            and results[m.id].get("old") == m.old
                            and results[m.id].get("new") == m.new)]
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    if args.baseline:
        base = run_baseline([t for _, m in selected for t in m.tests], timeout=4 * args.timeout)
        results = _record("baseline", dict(base.to_dict(), date=stamp,
                                           catalogs=sorted({n for n, _ in selected})),
                          all_catalogs)
        print(f"baseline: {base.status} ({base.cpu_s:.0f} CPU s) {base.failed}", flush=True)

    def one(item):
        return run_mutation(item[1], timeout=args.timeout)

    n_missed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (name, m), out in zip(selected, pool.map(one, selected)):
            results = _record(m.id, dict(out.to_dict(), date=stamp, catalog=name, old=m.old,
                                         new=m.new), all_catalogs)
            n_missed += out.status != CAUGHT
            print(f"{out.status:>10}  {m.id}  ({out.cpu_s:.0f} CPU s, {out.wall_s:.0f} s)  "
                  f"{out.failed}", flush=True)
            if out.status != CAUGHT:
                print("    " + out.tail.replace("\n", "\n    "), flush=True)
    print(f"{len(selected) - n_missed} of {len(selected)} caught; report: {REPORT}")
    return 1 if n_missed and any(results[m.id]["status"] == NOT_CAUGHT for _, m in selected) \
        else 0


if __name__ == "__main__":
    sys.exit(main())
