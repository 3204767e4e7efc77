"""Benchmark: ``fit_vb``'s post-processing (draws from q and their training MSE) on sparse data.

Run with ``python -m benchmarks.speed.vb_draws``; for another checkout (e.g. the code before
a change), run the file from outside the worktree::

    cd /tmp && PYTHONPATH=<checkout> python <worktree>/benchmarks/speed/vb_draws.py

At 6000 x 4000 with 4 % observed (rank 10, dense input with NaN), the CPU seconds of
``fit_vb`` with 1 and with 6 iterations and ``--draws`` draws (default 200): the difference is
five iterations, the rest is set-up and post-processing. Issue 21 measured 86 s of
post-processing after a 1.3 s loop (1000 draws) when each draw formed a dense ``A @ W``.
"""

import argparse
import os
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    args = parser.parse_args()
    import bnmfzoo
    from bnmfzoo.inference import fit_vb
    from bnmfzoo.models import exponential_gaussian

    print(f"bnmfzoo from {bnmfzoo.__file__}")
    rng = np.random.default_rng(0)
    D, N = 6000, 4000
    X = rng.exponential(size=(D, 10)) @ rng.exponential(size=(10, N)) + rng.normal(size=(D, N))
    X[rng.random((D, N)) > 0.04] = np.nan
    model = exponential_gaussian(X, 10)
    cpu = {}
    for iters in (1, 6):
        c0 = time.process_time()
        fit_vb(model, max_iter=iters, n_draws=args.draws, random_seed=1, progressbar=False)
        cpu[iters] = time.process_time() - c0
        print(f"  max_iter={iters}, n_draws={args.draws}: CPU {cpu[iters]:.2f} s", flush=True)
    per_iter = (cpu[6] - cpu[1]) / 5
    print(f"  per iteration {per_iter:.3f} s CPU; set-up and post-processing "
          f"{cpu[1] - per_iter:.2f} s CPU")


if __name__ == "__main__":
    main()
