"""Cache of SILF thresholds for the benchmarks (the 50 reference NMF fits of the full faces take
~15 minutes; every particle benchmark on the same data and rank reuses the value).

``cached_epsilon(name, X, rank, n=50, factor=1.2, random_seed=0)`` computes
:func:`bnmfzoo.likelihoods.epsilon_from_reference` once and stores it in
``benchmarks/results/epsilon_cache.json`` keyed by a name, the shape, the rank, the settings
and a hash of the data (so a different missing-data mask gets its own entry).
"""

import hashlib
import json
import os
import time

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "results", "epsilon_cache.json")


def _key(name, X, rank, n, factor, random_seed):
    values = np.ascontiguousarray(np.asarray(getattr(X, "values", X), dtype=float))
    digest = hashlib.sha1(values.tobytes()).hexdigest()[:12]
    return f"{name}|{values.shape[0]}x{values.shape[1]}|rank={rank}|n={n}|factor={factor}|" \
           f"seed={random_seed}|{digest}"


def cached_epsilon(name, X, rank, *, n=50, factor=1.2, random_seed=0):
    """Return ``(epsilon, seconds)``: the cached SILF threshold and the time it took to compute."""
    from bnmfzoo.likelihoods import epsilon_from_reference

    key = _key(name, X, rank, n, factor, random_seed)
    cache = {}
    if os.path.exists(PATH):
        with open(PATH) as f:
            cache = json.load(f)
    if key in cache:
        return cache[key]["epsilon"], cache[key]["seconds"]
    t = time.process_time()
    eps = epsilon_from_reference(X, rank, n=n, factor=factor, random_seed=random_seed)
    seconds = time.process_time() - t
    if os.path.exists(PATH):  # another process may have written meanwhile
        with open(PATH) as f:
            cache = json.load(f)
    cache[key] = {"epsilon": float(eps), "seconds": seconds, "cpu": True}
    os.makedirs(os.path.dirname(PATH), exist_ok=True)
    tmp = PATH + f".{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(cache, f, indent=1)
    os.replace(tmp, PATH)
    return float(eps), seconds


if __name__ == "__main__":  # precompute the thresholds the particle benchmarks use
    from bnmfzoo import datasets

    jobs = [("swimmer", datasets.swimmer().X, 16), ("faces64", datasets.load_faces((64, 64)), 10)]
    for name, X, rank in jobs:
        eps, sec = cached_epsilon(name, X, rank)
        print(f"{name}: epsilon {eps:.6g} ({sec:.0f} CPU s)", flush=True)
