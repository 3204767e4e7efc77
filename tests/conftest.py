"""Shared test configuration.

* Real data: ``data_home`` points at ``$BNMFZOO_DATA`` (when set, it is the only place looked
  at) or else ``../shared/data`` beside the project; tests that need it skip with a reason when
  it is absent -- except on CI (``CI`` set to ``true``/``1``/``yes``), where a run that selects
  a real-data test stops at collection with a clear error instead of going green with skips
  (issue #36; checked by ``tests/house/test_ci_data.py``).
* PyTensor: a persistent compile cache (set by the Makefile; defaulted here for bare ``pytest``)
  and one BLAS thread, so NUTS runs are not oversubscribed on 2 cores.
"""

import os
import sys
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
# Test files live in one folder per wing or front end; the shared helpers (``_synthetic``,
# ``_sbc_cases``, ...) stay in ``tests/`` and are imported by name from any of them.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))


def _data_dir():
    env = os.environ.get("BNMFZOO_DATA")
    path = Path(env) if env else ROOT.parent / "shared" / "data"
    if path.is_dir() and (path / "SHA256SUMS").exists():
        return path
    return None


def _on_ci():
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _missing_data_message():
    where = os.environ.get("BNMFZOO_DATA") or str(ROOT.parent / "shared" / "data")
    return (f"real datasets not found at {where} (no SHA256SUMS there): set BNMFZOO_DATA to the "
            "data folder or put it in ../shared/data")


@pytest.hookimpl(trylast=True)  # after -m / -k deselection: only the tests that would run
def pytest_collection_modifyitems(config, items):
    """On CI, refuse to run real-data tests without the data (they would skip: a green run)."""
    if not _on_ci() or _data_dir() is not None:
        return
    if hasattr(config, "workerinput"):
        # a pytest-xdist worker: an error raised at its collection crashes the run with an
        # internal error, so there the data_home fixture fails each such test instead (same
        # message, the run still fails)
        return
    needing = [item.nodeid for item in items if "data_home" in getattr(item, "fixturenames", ())]
    if needing:
        raise pytest.UsageError(
            f"CI=true but {_missing_data_message()}. {len(needing)} selected tests need the "
            f"real data (e.g. {needing[0]}); on CI they must run, not skip.")


@pytest.fixture(scope="session")
def data_home():
    """Directory holding the real datasets; skips the test when it is absent (fails on CI)."""
    path = _data_dir()
    if path is None:
        if _on_ci():
            pytest.fail(f"CI=true but {_missing_data_message()}")
        pytest.skip(_missing_data_message())
    return path


@pytest.fixture
def rng():
    """A fixed-seed generator for tests."""
    import numpy as np

    return np.random.default_rng(20261122)
