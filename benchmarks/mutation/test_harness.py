"""The mutation harness (``benchmarks/mutation``): fast checks, no pytest subprocess.

Running the mutants themselves is ``make mutate`` (minutes to hours of CPU); here: a mutation
applies to exactly one occurrence or fails loudly, and every catalog entry still applies to the
current tree and names test functions that exist (so a refactoring that moves the mutated code
or renames a test is noticed at once, not when the mutation run reports an error).
"""

import re
from pathlib import Path

import pytest

from benchmarks.mutation._harness import (
    CAUGHT,
    ERROR,
    NOT_CAUGHT,
    ROOT,
    Mutation,
    MutationError,
    apply_mutation,
    catalog_names,
    check_applies,
    classify,
    load_catalogs,
)


def _toy(tmp_path, text):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(text)
    (tmp_path / "tests" / "test_mod.py").write_text("def test_it():\n    pass\n")
    return Mutation(id="toy", path="pkg/mod.py", old="x + 1", new="x + 2",
                    tests=("tests/test_mod.py::test_it",), why="toy")


def test_mutation_applies_exactly_once(tmp_path):
    m = _toy(tmp_path, "def f(x):\n    return x + 1\n")
    check_applies(m, tmp_path)
    assert (tmp_path / "pkg" / "mod.py").read_text().count("x + 1") == 1  # check writes nothing
    apply_mutation(m, tmp_path)
    assert (tmp_path / "pkg" / "mod.py").read_text() == "def f(x):\n    return x + 2\n"
    with pytest.raises(MutationError, match="occurs 0 times"):  # applying twice fails loudly
        apply_mutation(m, tmp_path)


@pytest.mark.parametrize("text, count", [("y = 0\n", 0), ("a = x + 1\nb = x + 1\n", 2)])
def test_mutation_fails_loudly_unless_unique(tmp_path, text, count):
    m = _toy(tmp_path, text)
    with pytest.raises(MutationError, match=f"occurs {count} times"):
        check_applies(m, tmp_path)
    with pytest.raises(MutationError, match=f"occurs {count} times"):
        apply_mutation(m, tmp_path)
    assert (tmp_path / "pkg" / "mod.py").read_text() == text


def test_mutation_fields_are_checked(tmp_path):
    with pytest.raises(ValueError, match="must differ"):
        Mutation(id="a", path="p", old="x", new="x", tests=("t",), why="")
    with pytest.raises(TypeError, match="tuple of pytest node ids"):
        Mutation(id="a", path="p", old="x", new="y", tests="tests/t.py::f", why="")
    with pytest.raises(ValueError, match="id"):
        Mutation(id="a b", path="p", old="x", new="y", tests=("t",), why="")
    m = Mutation(id="a", path="missing.py", old="x", new="y", tests=("t",), why="")
    with pytest.raises(MutationError, match="does not exist"):
        check_applies(m, tmp_path)


def test_exit_codes_are_classified():
    assert classify(1, "FAILED tests/t.py::f - assert 0\n")[0] == CAUGHT
    assert classify(1, "FAILED tests/t.py::f - assert 0\n")[1] == "tests/t.py::f"
    assert classify(0, "")[0] == NOT_CAUGHT
    for rc in (-1, 2, 3, 4, 5):
        assert classify(rc, "")[0] == ERROR


def test_every_catalog_entry_applies_to_the_current_tree():
    """Each entry's ``old`` occurs once in its file, and its tests' functions exist."""
    catalogs = load_catalogs()  # also checks that ids are unique across catalogs
    assert {"gaussian", "binary", "particles"} <= set(catalog_names())
    n = 0
    for muts in catalogs.values():
        for m in muts:
            check_applies(m, ROOT)
            for test in m.tests:
                file, _, name = test.partition("::")
                func = re.split(r"[\[:]", name)[0]
                assert re.search(rf"^\s*def {re.escape(func)}\(",
                                 (ROOT / file).read_text(), flags=re.M), (m.id, test)
            n += 1
    assert n >= 20, n


def test_report_lists_every_entry():
    from benchmarks.mutation.run import render_report

    catalogs = load_catalogs()
    text = render_report(catalogs, {})
    for muts in catalogs.values():
        for m in muts:
            assert f"`{m.id}`" in text and f"--only {m.id}`" in text
    assert Path(ROOT / "benchmarks" / "mutation" / "_harness.py").is_file()


def test_report_columns_come_from_the_recorded_failure():
    """``--report``'s three columns: an assertion of a test of a law; a golden hash, a doctest
    or an exception; not caught / error / not run. Old records without the recorded kind are
    read from pytest's last traceback line, else marked "kind not recorded"."""
    from benchmarks.mutation.run import MISSED, STAT, WEAK, classify_result

    m = Mutation(id="a", path="p.py", old="x", new="y", tests=("tests/t.py::f",), why="w")
    rec = dict(status=CAUGHT, failed="tests/t.py::f", old="x", new="y", tail="")
    assert classify_result(m, dict(rec, kind="assertion"))[0] == STAT
    assert classify_result(m, dict(rec, kind="exception", exception="KeyError")) == (
        WEAK, "crash: KeyError")
    assert classify_result(m, dict(rec, failed="tests/house/test_same_numbers.py::test_x",
                                   kind="assertion")) == (WEAK, "golden hash")
    assert classify_result(m, dict(rec, failed="tests/house/test_doctests.py::test_doctest[a.b]",
                                   kind="assertion")) == (WEAK, "doctest digits")
    assert classify_result(m, dict(rec, tail="tests/t.py:9: FloatingPointError"))[0] == WEAK
    assert classify_result(m, dict(rec, tail="tests/t.py:9: AssertionError"))[0] == STAT
    assert "kind not recorded" in classify_result(m, rec)[1]
    assert classify_result(m, dict(rec, status=NOT_CAUGHT))[0] == MISSED
    assert classify_result(m, None) == (MISSED, "not run")
    assert "earlier version" in classify_result(m, dict(rec, kind="assertion", old="z"))[1]


def test_kernel_list_names_existing_tests():
    from benchmarks.mutation.kernels import KERNELS

    for _, kind, tests in KERNELS:
        assert kind in ("exact conditional", "enumeration", "invariance", "exact update",
                        "SBC only")
        for test in tests.split(", "):
            file, _, name = test.partition("::")
            assert re.search(rf"^def {re.escape(name)}\(", (ROOT / file).read_text(),
                             flags=re.M), test
