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
