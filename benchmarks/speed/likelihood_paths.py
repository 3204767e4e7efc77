"""Benchmark: the Gaussian likelihood's two ways to form the observed means (NUTS gradients).

Run with ``python -m benchmarks.speed.likelihood_paths``.

For an exponential-Gaussian model (``A, W ~ Exponential``, ``tau ~ Gamma``) on scattered
masks from 80 % down to 0.5 % observed, the median CPU time of one log-density-and-gradient
evaluation (``model.logp_dlogp_function``, what NUTS calls every leapfrog step) with the means
formed by the ``"flat"`` path (dense ``A @ W``, one flat index) and the ``"pairs"`` path (row
gathers, O(observed x R)) of ``bnmfzoo._terms.gaussian.observed_mean``, their ratio, and the
path that ``mean_path`` picks (``PAIRS_BELOW_DENSITY``). The first row is GDSC-sized
(705 x 139, 80 % observed, R = 20), where DESIGN.md measured 0.55 ms for the flat path.

``--models`` instead times ``models.exponential_gaussian`` as built by the importable
``bnmfzoo`` (build time and one log-density + gradient). For the code before a change, run
the file from outside the worktree (``python -m`` would put the worktree first on the path)::

    cd /tmp && PYTHONPATH=<checkout> python <worktree>/benchmarks/speed/likelihood_paths.py \
        --models
"""

import argparse
import time

import numpy as np
import pymc as pm

import benchmarks._common  # noqa: F401  (one BLAS thread)

CASES = [(705, 139, 0.8, 20), (705, 139, 0.3, 20), (1000, 500, 0.5, 10), (1000, 500, 0.3, 10),
         (1000, 500, 0.2, 10), (1000, 500, 0.1, 10),
         (1000, 500, 0.05, 10), (1000, 500, 0.02, 10), (2000, 1000, 0.01, 10),
         (2000, 1000, 0.005, 10)]
MODEL_CASES = [(705, 139, 0.8, 20), (1000, 500, 0.3, 10), (1000, 500, 0.1, 10),
               (2000, 1000, 0.02, 10)]


def gradient_time(D, N, frac, R, path, repeats, seed=0):
    """Median seconds of one logp + gradient evaluation with the means formed by ``path``."""
    from bnmfzoo._terms.gaussian import observed_mean

    rng = np.random.default_rng(seed)
    observed = rng.random((D, N)) < frac
    rows, cols = np.nonzero(observed)
    values = rng.exponential(size=rows.size)
    with pm.Model() as model:
        A = pm.Exponential("A", 0.1, shape=(D, R))
        W = pm.Exponential("W", 0.1, shape=(R, N))
        tau = pm.Gamma("tau", 1.0, 1.0)
        pm.Normal("X", mu=observed_mean(A, W, rows, cols, (D, N), path=path), tau=tau,
                  observed=values)
    f = model.logp_dlogp_function(ravel_inputs=True)
    f.set_extra_values({})
    size = sum(v.size for v in model.initial_point().values())
    x = rng.normal(size=size) * 0.1
    f(x)
    times = []
    for _ in range(repeats):  # CPU seconds: robust to other processes on a shared machine
        t0 = time.process_time()
        f(x)
        times.append(time.process_time() - t0)
    return float(np.median(times)), rows.size


def model_times(repeats):
    """Build time and logp + gradient CPU time of ``models.exponential_gaussian`` as it is.

    Runs on whatever ``bnmfzoo`` is importable, so the same command with
    ``PYTHONPATH=<another checkout>`` measures the code before a change.
    """
    import bnmfzoo
    from bnmfzoo.models import exponential_gaussian

    print(f"models.exponential_gaussian from {bnmfzoo.__file__}")
    for D, N, frac, R in MODEL_CASES:
        rng = np.random.default_rng(0)
        X = rng.exponential(size=(D, N))
        X[rng.random((D, N)) > frac] = np.nan
        t0 = time.process_time()
        model = exponential_gaussian(X, R)
        build = time.process_time() - t0
        f = model.logp_dlogp_function(ravel_inputs=True)
        f.set_extra_values({})
        x = rng.normal(size=sum(v.size for v in model.initial_point().values())) * 0.1
        f(x)
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            f(x)
            times.append(time.process_time() - t0)
        print(f"  {D:>5}x{N:<5} {frac:>5.2f} R={R:<3} build {build:6.2f} s CPU, logp + gradient "
              f"{np.median(times) * 1e3:7.3f} ms CPU", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--models", action="store_true",
                        help="time models.exponential_gaussian as it is (any checkout)")
    args = parser.parse_args()
    if args.models:
        model_times(args.repeats)
        return
    from bnmfzoo._terms.gaussian import mean_path

    print(f"{'shape':>10} {'obs':>6} {'R':>3} {'n_obs':>8} {'flat ms':>8} {'pairs ms':>9} "
          f"{'pairs/flat':>10} {'auto':>6}")
    for D, N, frac, R in CASES:
        t_flat, n = gradient_time(D, N, frac, R, "flat", args.repeats)
        t_pairs, _ = gradient_time(D, N, frac, R, "pairs", args.repeats)
        print(f"{D:>5}x{N:<4} {frac:>6.3f} {R:>3} {n:>8} {t_flat * 1e3:>8.3f} "
              f"{t_pairs * 1e3:>9.3f} {t_pairs / t_flat:>10.2f} {mean_path(n, (D, N)):>6}",
              flush=True)


if __name__ == "__main__":
    main()
