"""A small mutation harness: curated one-line bugs, each run against its named fast tests.

Why a curated catalog and not mutmut / cosmic-ray. Both tools mutate every operator of every
line and run the (selected) suite against each mutant. Here that is the wrong trade:

* the numeric cores are numba kernels compiled with ``cache=True``; every mutant of a kernel
  needs a fresh compile (10-60 s of CPU for the kernels a test touches) in a fresh cache
  directory (numba's cache is keyed by the source file's path and time stamp, so a stale kernel
  would silently hide the mutation). A few thousand blind mutants of ``_core.py`` alone would
  take days of the shared 2-core machine;
* the tests that can see a wrong conditional are statistical (SBC, exact enumeration, NUTS
  agreement): seconds to a minute each. Blind mutants mostly produce either crashes (caught by
  anything) or equivalent / numerically invisible changes (``<=`` vs ``<`` on a continuous
  variate), whose "survived" verdicts need a human to triage each time;
* what we want to know is whether the *realistic* bug classes of samplers (a conditional
  missing a term, an off-by-one count, a stale sufficient statistic, a wrong Gamma shape, a
  missing Jacobian, a tempered term at beta = 1, a wrong missing-data mask) are caught by a
  *fast* test, and by which one. A catalog entry names the bug, its class and the fast tests
  meant to catch it, so a survivor is an actionable finding, and its row in the report is a
  one-line command that reproduces it.

So each :class:`Mutation` is an exact text replacement (``old`` must occur exactly once in
``path``: an entry that no longer applies fails loudly, see
``benchmarks/mutation/test_harness.py``),
applied to a private copy of the repository (``bnmfzoo/``, ``tests/``, ``benchmarks/``,
``pyproject.toml``, conftest files) with its own ``NUMBA_CACHE_DIR``; the main work tree, its
index and HEAD are never touched. The copy's tests run with ``PYTHONPATH`` pointing at the copy;
a pytest plugin (:mod:`benchmarks.mutation._guard`) checks that ``import bnmfzoo`` really
resolves to the copy, so the editable install of the main tree cannot be tested by mistake.

Catalog format (one module per area, ``benchmarks/mutation/catalog_<area>.py``)::

    from benchmarks.mutation._harness import Mutation
    MUTATIONS = [
        Mutation(id="counts-gamma-shape-off-by-one", path="bnmfzoo/inference/counts/sweep.py",
                 old="exact text occurring exactly once", new="the mutated text",
                 tests=("tests/counts/test_counts_gibbs.py::test_sbc_tiny",),
                 why="conjugate Gamma shape misses the prior shape"),
    ]
"""

import importlib
import json
import os
import pkgutil
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what is copied for each mutant (directories and files, relative to the repository root)
COPY_DIRS = ("bnmfzoo", "tests", "benchmarks")
COPY_FILES = ("pyproject.toml", "conftest.py")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info", ".venv*")
#: pytest arguments of every run: the fast suite only, stop at the first failure, no cache
PYTEST_ARGS = ("-m", "not slow", "-x", "-q", "-p", "no:cacheprovider",
               "-p", "benchmarks.mutation._guard")
#: pytest exit codes: 0 all passed (mutant not caught), 1 some test failed (caught)
CAUGHT, NOT_CAUGHT, ERROR = "caught", "NOT CAUGHT", "error"


class MutationError(ValueError):
    """A catalog entry that cannot be applied (its ``old`` text is not there exactly once)."""


@dataclass(frozen=True)
class Mutation:
    """One realistic bug: replace ``old`` by ``new`` in ``path``; ``tests`` should catch it.

    Attributes
    ----------
    id : str
        Unique name (letters, digits, ``-``, ``_``, ``.``).
    path : str
        File relative to the repository root.
    old, new : str
        ``old`` must occur exactly once in ``path``; ``new`` must differ from it.
    tests : tuple of str
        Pytest node ids of the fast (not ``slow``) tests meant to catch it.
    why : str
        The bug and its class, in words.
    """

    id: str
    path: str
    old: str
    new: str
    tests: tuple
    why: str

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", self.id or ""):
            raise ValueError(f"Mutation id must be letters, digits, '-', '_' or '.': {self.id!r}")
        if isinstance(self.tests, str) or not self.tests:
            raise TypeError(f"{self.id}: tests must be a non-empty tuple of pytest node ids")
        object.__setattr__(self, "tests", tuple(self.tests))
        if self.old == self.new:
            raise ValueError(f"{self.id}: new must differ from old")


def apply_mutation(mutation, root):
    """Apply ``mutation`` to the tree at ``root`` in place; raise MutationError if it cannot."""
    path = Path(root) / mutation.path
    if not path.is_file():
        raise MutationError(f"{mutation.id}: {mutation.path} does not exist")
    text = path.read_text()
    count = text.count(mutation.old)
    if count != 1:
        raise MutationError(f"{mutation.id}: the old text occurs {count} times in "
                            f"{mutation.path} (must be exactly once): {mutation.old!r}")
    path.write_text(text.replace(mutation.old, mutation.new))


def check_applies(mutation, root=ROOT):
    """Raise MutationError unless ``mutation`` applies to ``root`` (nothing is written)."""
    path = Path(root) / mutation.path
    if not path.is_file():
        raise MutationError(f"{mutation.id}: {mutation.path} does not exist")
    count = path.read_text().count(mutation.old)
    if count != 1:
        raise MutationError(f"{mutation.id}: the old text occurs {count} times in "
                            f"{mutation.path} (must be exactly once): {mutation.old!r}")
    for test in mutation.tests:
        test_file = Path(root) / test.split("::")[0]
        if not test_file.is_file():
            raise MutationError(f"{mutation.id}: test file {test_file} does not exist")


def catalog_names():
    """Names of the catalog modules ``benchmarks/mutation/catalog_<name>.py``."""
    here = Path(__file__).parent
    return sorted(m.name[len("catalog_"):] for m in pkgutil.iter_modules([str(here)])
                  if m.name.startswith("catalog_"))


def load_catalogs(names=None):
    """``{catalog name: [Mutation, ...]}``; ids must be unique across all catalogs."""
    out, seen = {}, {}
    for name in names or catalog_names():
        module = importlib.import_module(f"benchmarks.mutation.catalog_{name}")
        muts = list(module.MUTATIONS)
        for m in muts:
            if not isinstance(m, Mutation):
                raise TypeError(f"catalog_{name}: {m!r} is not a Mutation")
            if m.id in seen:
                raise ValueError(f"mutation id {m.id!r} in catalog_{name} already in "
                                 f"catalog_{seen[m.id]}")
            seen[m.id] = name
        out[name] = muts
    return out


def make_copy(dest, root=ROOT):
    """Copy the parts of the repository the tests need to ``dest`` (a new directory)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for d in COPY_DIRS:
        shutil.copytree(Path(root) / d, dest / d, ignore=_IGNORE, symlinks=True)
    for f in COPY_FILES:
        if (Path(root) / f).is_file():
            shutil.copy2(Path(root) / f, dest / f)
    return dest


@dataclass
class Outcome:
    """Result of one mutant's run (or of the unmutated baseline, ``id="baseline"``)."""

    id: str
    status: str  # CAUGHT, NOT_CAUGHT or ERROR
    failed: str  # first failing test (caught) or the error's cause
    cpu_s: float  # CPU seconds of the pytest subprocess and its children
    wall_s: float
    returncode: int
    tail: str  # last lines of pytest's output
    kind: str = ""  # what failed the first failing test: "assertion", "exception" or ""
    exception: str = ""  # its exception type name

    def to_dict(self):
        return asdict(self)


def _first_failure(output):
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0].split(" ", 1)[1]
    return ""


def run_tests(copy_root, tests, *, timeout=900, python=sys.executable):
    """Run ``tests`` (node ids) in the copy at ``copy_root``; ``(returncode, output, cpu, wall)``.

    A fresh ``NUMBA_CACHE_DIR`` inside the copy; ``PYTHONPATH`` is the copy (so ``bnmfzoo``,
    ``benchmarks`` and ``tests`` are the copy's); the guard plugin fails the run when not.
    """
    copy_root = Path(copy_root)
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(copy_root / ".numba_cache")
    env["PYTHONPATH"] = str(copy_root)
    env["BNMFZOO_MUTATION_ROOT"] = str(copy_root)
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [python, "-m", "pytest", *PYTEST_ARGS, *tests]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=copy_root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the pytest process group we started
        output, _ = proc.communicate()
        output += f"\n[mutation harness] timed out after {timeout} s"
        rc = -1
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, output, cpu, wall


def classify(rc, output):
    """``(status, detail)`` from pytest's exit code: 1 caught, 0 not caught, else error."""
    if rc == 1:
        return CAUGHT, _first_failure(output) or "(a test failed)"
    if rc == 0:
        return NOT_CAUGHT, ""
    reason = {-1: "timeout", 2: "interrupted or collection error", 3: "pytest internal error",
              4: "usage error", 5: "no tests collected (slow or wrong node id?)"}
    return ERROR, reason.get(rc, f"exit code {rc}")


def run_mutation(mutation, *, root=ROOT, timeout=900, keep=False, python=sys.executable):
    """Copy the tree, apply ``mutation`` (None: the unmutated baseline), run its tests."""
    tmp = Path(tempfile.mkdtemp(prefix="bnmfzoo-mutant-"))
    try:
        make_copy(tmp / "repo", root)
        if mutation is not None:
            apply_mutation(mutation, tmp / "repo")
            tests, mid = mutation.tests, mutation.id
        else:
            raise ValueError("run_mutation needs a Mutation (use run_baseline for none)")
        rc, output, cpu, wall = run_tests(tmp / "repo", tests, timeout=timeout, python=python)
        failure = read_failure(tmp / "repo")
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    status, detail = classify(rc, output)
    return Outcome(mid, status, detail, round(cpu, 1), round(wall, 1), rc,
                   "\n".join(output.strip().splitlines()[-15:]),
                   kind=failure.get("kind", "") if status == CAUGHT else "",
                   exception=failure.get("exception", "") if status == CAUGHT else "")


def read_failure(copy_root):
    """The first failure the guard plugin recorded in the copy (``{}`` when none).

    ``{"nodeid", "when", "kind", "exception"}``; ``kind`` is ``"assertion"`` (an assertion of
    the test failed: its statistical or exact check) or ``"exception"`` (the code crashed).
    """
    from benchmarks.mutation._guard import FAILURE_FILE

    path = Path(copy_root) / FAILURE_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError:
        return {}


def run_baseline(tests, *, root=ROOT, timeout=1800, python=sys.executable):
    """The named tests on an unmutated copy: they must all pass for a "caught" to mean much."""
    tmp = Path(tempfile.mkdtemp(prefix="bnmfzoo-baseline-"))
    try:
        make_copy(tmp / "repo", root)
        rc, output, cpu, wall = run_tests(tmp / "repo", sorted(set(tests)), timeout=timeout,
                                          python=python)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    status = "passed" if rc == 0 else ("FAILED" if rc == 1 else "error")
    return Outcome("baseline", status, _first_failure(output), round(cpu, 1), round(wall, 1), rc,
                   "\n".join(output.strip().splitlines()[-15:]))
