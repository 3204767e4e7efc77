"""Shared set-up and helpers of the benchmark scripts.

The scripts are modules of the ``benchmarks`` package, run from the project root::

    python -m benchmarks.speed.gibbs
    python -m benchmarks.reproduce.brouwer2017.convergence --help

Importing any of them imports ``benchmarks/__init__.py`` first, which imports this module, so
the environment defaults below are in place before numpy loads:

* one BLAS thread (``OMP/OPENBLAS/MKL_NUM_THREADS``; oversubscription made NUTS about 19x
  slower on 2 cores), unless the caller set them;
* ``BNMFZOO_DATA`` = the shared data folder beside the project (``../shared/data``) when it
  exists and the variable is unset.

``DATA`` is that folder, ``RESULTS`` is ``benchmarks/results`` (git-ignored), and ``Clock`` times a
block in CPU and wall seconds. The library's fitters record their own CPU times
(``cpu_time`` entries of the ``diagnostics`` group, see :mod:`bnmfzoo._base.timing`); read those
rather than re-timing inside a call.
"""

import os
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
_SHARED = ROOT.parent / "shared" / "data"
if _SHARED.is_dir():
    os.environ.setdefault("BNMFZOO_DATA", str(_SHARED))
DATA = os.environ.get("BNMFZOO_DATA", str(_SHARED))
RESULTS = HERE / "results"


class Clock:
    """CPU (``time.process_time``) and wall (``time.perf_counter``) seconds of a block."""

    def __enter__(self):
        self.c0, self.w0 = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.cpu = time.process_time() - self.c0
        self.wall = time.perf_counter() - self.w0
