"""Helpers shared by the Masood & Doshi-Velez (2019) reproductions.

* ``cached_epsilon``: SILF thresholds cached in ``benchmarks/results/epsilon_cache.json`` (the 50
  reference NMF fits of the full faces take ~15 minutes; every particle benchmark on the same
  data and rank reuses the value). The key holds a name, the shape, the rank, the settings and a
  hash of the data (so a different missing-data mask gets its own entry). Precompute them with
  ``python -m benchmarks.reproduce.masood2019.epsilon_cache``.
* ``Store``: the locked JSON table of ``ksd_time`` (``vs_nuts --ksd-table`` writes into it too).
* ``warm_up_stein``: compile the Stein score function before any method's clock starts.
"""

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS

EPSILON_CACHE = RESULTS / "epsilon_cache.json"


def epsilon_key(name, X, rank, n, factor, random_seed):
    values = np.ascontiguousarray(np.asarray(getattr(X, "values", X), dtype=float))
    digest = hashlib.sha1(values.tobytes()).hexdigest()[:12]
    return f"{name}|{values.shape[0]}x{values.shape[1]}|rank={rank}|n={n}|factor={factor}|" \
           f"seed={random_seed}|{digest}"


def cached_epsilon(name, X, rank, *, n=50, factor=1.2, random_seed=0):
    """Return ``(epsilon, seconds)``: the cached SILF threshold and the time it took to compute."""
    from bnmfzoo.likelihoods import epsilon_from_reference

    key = epsilon_key(name, X, rank, n, factor, random_seed)
    cache = {}
    if EPSILON_CACHE.exists():
        with open(EPSILON_CACHE) as f:
            cache = json.load(f)
    if key in cache:
        return cache[key]["epsilon"], cache[key]["seconds"]
    t = time.process_time()
    eps = epsilon_from_reference(X, rank, n=n, factor=factor, random_seed=random_seed)
    seconds = time.process_time() - t
    if EPSILON_CACHE.exists():  # another process may have written meanwhile
        with open(EPSILON_CACHE) as f:
            cache = json.load(f)
    cache[key] = {"epsilon": float(eps), "seconds": seconds, "cpu": True}
    EPSILON_CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = EPSILON_CACHE.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(cache, f, indent=1)
    os.replace(tmp, EPSILON_CACHE)
    return float(eps), seconds


class Store:
    """Rows of one dataset/model, written to JSON after every addition.

    Several runs may write the same table at once (different methods, or different M of one
    gradient method): each write re-reads the file under a lock and keeps the rows other runs
    have added since, replacing only this run's methods (at this run's M).
    """

    def __init__(self, dataset, model, meta, rerun, gradient_Ms=None, path=None):
        """``rerun``: methods whose rows are replaced; ``gradient_Ms``: ``{method: Ms}`` for the
        gradient methods, whose rows at other M are kept (each M is a separate run); ``path``:
        the table (default ``benchmarks/results/ksd_time_<dataset>_<model>.json``)."""
        self.path = Path(path) if path else RESULTS / f"ksd_time_{dataset}_{model}.json"
        self.dataset, self.model = dataset, model
        self.rerun, self.gradient_Ms = set(rerun), gradient_Ms or {}
        self.meta, self.rows, self.runs = meta, [], {}
        self.flush()

    def _mine(self, row):
        m = row["method"]
        return m in self.rerun and (m not in self.gradient_Ms or row["M"] in self.gradient_Ms[m])

    def add(self, **row):
        self.rows.append(row)
        self.flush()

    def run(self, method, **info):
        self.runs[method] = info
        self.flush()

    def flush(self):
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            old = {"rows": [], "runs": {}}
            if self.path.exists():
                with open(self.path) as f:
                    old = json.load(f)
            runs = {k: v for k, v in old.get("runs", {}).items()
                    if k not in self.rerun or k in self.gradient_Ms}
            self.data = {"dataset": self.dataset, "model": self.model,
                         "meta": {**old.get("meta", {}), **self.meta},
                         "runs": {**runs, **self.runs},
                         "rows": [r for r in old["rows"] if not self._mine(r)] + self.rows}
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "w") as f:
                json.dump(self.data, f, indent=1)
            os.replace(tmp, self.path)


def warm_up_stein(model):
    """Compile (and cache on the model) the score function and load the QP solver, untimed.

    Weighting is excluded from the paper's timings (App. E); the score's one-off compilation is
    kept out of every method's clock this way.
    """
    from bnmfzoo.inference.particles._init import random_init
    from bnmfzoo.inference.particles.weighted import resolve_nmf_model, weigh_particles

    info = resolve_nmf_model(model, method="bench")
    rng = np.random.default_rng(0)
    AW = [random_init(info.X_values, info.rank, rng, mask=info.mask) for _ in range(2)]
    A, W = info.project(np.stack([a for a, _ in AW]), np.stack([w for _, w in AW]))
    weigh_particles(info, A, W)
