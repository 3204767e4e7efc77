"""On CI a missing data folder fails the run instead of skipping the real-data tests (#36)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_without_data_fails_with_a_clear_message(tmp_path):
    """``CI=true`` and ``BNMFZOO_DATA`` an empty folder: a tiny real-data test must not skip.

    One pytest subprocess that only collects a real-data test (collection stops the run before
    any data is read); a few CPU seconds for the imports.
    """
    env = dict(os.environ, CI="true", BNMFZOO_DATA=str(tmp_path))
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/datasets/test_datasets_loaders.py::test_gdsc"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "CI=true but real datasets not found at " + str(tmp_path) in out, out
