"""Multi-path Pathfinder (pymc-extras) in a side environment, on the gold-standard model.

pymc-extras 0.15.1 pins ``pymc < 6.4``, so it cannot be installed beside the project's PyMC 6.4.
This script runs in a separate venv (PyMC 6.3 + pymc-extras, no bnmfzoo), on the same model
written in plain PyMC: ``A, W ~ Exponential(lam)``, ``X_obs ~ Normal((A W)_obs, sigma)``.
Usage (what ``methods.py`` does)::

    /tmp/gold-pf-venv/bin/python benchmarks/reproduce/gold_standard/pathfinder_side.py IN OUT

``IN``: npz with ``X`` (NaN = held out), ``rank``, ``sigma``, ``lam``, ``num_paths``, ``seed``;
``OUT``: npz with draws ``A`` (S, D, R), ``W`` (S, R, N) and ``cpu`` (CPU seconds of the fit in
this process). Set-up of the venv::

    python3.13 -m venv /tmp/gold-pf-venv && /tmp/gold-pf-venv/bin/pip install pymc-extras==0.15.1
"""

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main(src, dst):
    import numpy as np
    import pymc as pm
    import pymc_extras as pmx

    z = np.load(src)
    X = z["X"]
    R, sigma, lam = int(z["rank"]), float(z["sigma"]), float(z["lam"])
    obs = np.isfinite(X)
    rows, cols = np.nonzero(obs)
    D, N = X.shape
    c0 = time.process_time()
    with pm.Model():
        A = pm.Exponential("A", lam, shape=(D, R))
        W = pm.Exponential("W", lam, shape=(R, N))
        mu = (A @ W).flatten()[rows * N + cols]
        pm.Normal("X", mu, sigma, observed=X[obs])
        idata = pmx.fit(method="pathfinder", num_paths=int(z["num_paths"]), num_draws=1000,
                        random_seed=int(z["seed"]), progressbar=False, parallel=False,
                        cores=1, blas_cores=1)
    post = idata["posterior"]
    A_d = post["A"].values.reshape(-1, D, R)
    W_d = post["W"].values.reshape(-1, R, N)
    np.savez(dst, A=A_d, W=W_d, cpu=time.process_time() - c0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
