"""Pytest plugin of the mutation harness: the tests must import the mutated copy's ``bnmfzoo``.

Loaded with ``-p benchmarks.mutation._guard`` by :func:`benchmarks.mutation._harness.run_tests`;
``BNMFZOO_MUTATION_ROOT`` is the copy. Without the variable it does nothing.
"""

import os
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    """Abort the session when ``bnmfzoo`` or this plugin resolve outside the copy."""
    root = os.environ.get("BNMFZOO_MUTATION_ROOT")
    if not root:
        return
    import bnmfzoo

    root = Path(root).resolve()
    for what, where in (("bnmfzoo", Path(bnmfzoo.__file__)), ("the guard", Path(__file__))):
        if root not in where.resolve().parents:
            raise pytest.UsageError(f"mutation harness: {what} imported from {where}, not from "
                                    f"the mutated copy {root}")


#: file (in the copy's root) where the first failure's node id and kind are written
FAILURE_FILE = ".mutation-failure.json"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Record the first failing test and what failed it: an assertion or another exception.

    ``kind`` is ``"assertion"`` for an ``AssertionError`` (or ``pytest.fail``) raised by the
    test body, ``"exception"`` for anything else (a crash: ``ValueError``, ``FloatingPointError``,
    a numba typing error, a fixture that raised in setup). The harness reads it to tell a
    statistical or exact test's verdict from a crash (:mod:`benchmarks.mutation.run`).
    """
    report = yield
    root = os.environ.get("BNMFZOO_MUTATION_ROOT")
    if not root or not report.failed or call.excinfo is None:
        return report
    path = Path(root) / FAILURE_FILE
    if path.exists():
        return report
    typename = call.excinfo.typename
    assertion = call.when == "call" and (call.excinfo.errisinstance(AssertionError)
                                         or typename == "Failed")
    import json

    path.write_text(json.dumps({"nodeid": item.nodeid, "when": call.when,
                                "kind": "assertion" if assertion else "exception",
                                "exception": typename}))
    return report
