"""Shared set-up of the benchmark scripts: one BLAS thread, the shared data folder, results dir.

Import it before numpy (``import _env`` from a script in ``benchmarks/``).
"""

import os
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

HERE = Path(__file__).resolve().parent
_SHARED = HERE.parents[1] / "shared" / "data"
if _SHARED.is_dir():
    os.environ.setdefault("BNMFZOO_DATA", str(_SHARED))
RESULTS = HERE / "results"
