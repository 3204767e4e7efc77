"""Shared test configuration.

* Real data: ``data_home`` points at ``$BNMFZOO_DATA`` or ``../shared/data`` beside the project;
  tests that need it skip with a reason when it is absent.
* PyTensor: a persistent compile cache (set by the Makefile; defaulted here for bare ``pytest``)
  and one BLAS thread, so NUTS runs are not oversubscribed on 2 cores.
"""

import os
from pathlib import Path

os.environ.setdefault(
    "PYTENSOR_FLAGS", f"base_compiledir={Path.home() / '.cache' / 'bnmfzoo' / 'pytensor'}"
)
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "bnmfzoo" / "numba"))
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _data_dir():
    env = os.environ.get("BNMFZOO_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "data")
    for path in candidates:
        if path.is_dir() and (path / "SHA256SUMS").exists():
            return path
    return None


@pytest.fixture(scope="session")
def data_home():
    """Directory holding the real datasets; skips the test when it is absent."""
    path = _data_dir()
    if path is None:
        pytest.skip("real datasets not found: set BNMFZOO_DATA or put them in ../shared/data")
    return path


@pytest.fixture
def rng():
    """A fixed-seed generator for tests."""
    import numpy as np

    return np.random.default_rng(20261122)
