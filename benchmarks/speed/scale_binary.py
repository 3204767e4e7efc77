"""Benchmark: memory and time of the binary samplers against observed entries (sparse input).

Run with ``nice -n 10 python -m benchmarks.speed.scale_binary`` (a few minutes on one core;
``--sizes 1e4 1e5`` for a quick run, ``--sizes 1e4 1e5 1e6 1e7`` for the largest).

Synthetic Beta-Dir data (rank 10, rows of ``A`` ~ Dir(1), ``W`` ~ Beta(1, 1), ``X ~
Bernoulli(A W)``; the generative model of :func:`bnmfzoo.datasets.bernoulli_mean`, drawn on the
observed cells only) at 1 % density, D = 5 N, passed as a :func:`bnmfzoo.long_format` matrix to
``models.beta_dir(rank=10)``. For each size, in a fresh process so the peak memory is its own:

* model build seconds (the constructor and the recognition of its graph, which the samplers
  read it through);
* the collapsed Beta-Dir sweep (:class:`~bnmfzoo.inference.binary._core.BetaDirChain`,
  Eq. 25) median seconds per sweep, and per sweep of ``fit_collapsed_gibbs`` (sweep, the
  Rao-Blackwellized means on the observed entries, stored draws);
* ``fit_cvb0`` median seconds per iteration (its responsibilities are n x K: O(observed K));
* the process's peak resident memory (``ru_maxrss``) after Gibbs and after CVB0.

Baseline in the same run: the same model and samplers given the **dense** matrix with NaN
for the missing cells (what the estimator and the samplers did before sparse input), for the
sizes whose dense copy is at most ``--dense-max-cells`` cells; the ratio of peak memory
dense / sparse is printed. The fitted log-log slope of sweep time against observed entries is
printed (1 = linear).
"""

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread)
from benchmarks._common import ROOT

RANK = 10
DENSITY = 0.01


def shape_for(n):
    """``(D, N)`` with ``D = 5 N`` and ``n`` observed entries at 1 % density."""
    cells = n / DENSITY
    N = max(int(np.sqrt(cells / 5)), RANK)
    return int(cells // N), N


def synthetic_entries(D, N, n, seed=0):
    """Row-major ``(rows, cols, values)`` of Beta-Dir binary data on ``n`` random cells.

    Every row and column gets at least one entry (cells ``(i, i mod N)`` and ``(j mod D, j)``).
    """
    from bnmfzoo.inference.binary._core import entry_means

    rng = np.random.default_rng(seed)
    forced = np.concatenate([np.arange(D) * np.int64(N) + np.arange(D) % N,
                             (np.arange(N) % D) * np.int64(N) + np.arange(N)])
    flat = np.unique(np.concatenate([forced, rng.integers(0, D * N, size=n)]))
    rows, cols = np.divmod(flat, np.int64(N))
    A = rng.dirichlet(np.ones(RANK), size=D)
    W = rng.beta(1.0, 1.0, size=(RANK, N))
    p = np.clip(entry_means(rows, cols, A, W), 0.0, 1.0)
    return rows, cols, (rng.random(rows.size) < p).astype(float)


def _median(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def one_size(n, dense, sweeps):
    """Run in a fresh process: build, sweeps, CVB0; print a JSON line."""
    import warnings

    import bnmfzoo as bz
    from bnmfzoo.inference import fit_collapsed_gibbs, fit_cvb0
    from bnmfzoo.inference.binary._core import BetaDirChain
    from bnmfzoo.inference.binary.collapsed_gibbs import spec_entries
    from bnmfzoo.models import beta_dir
    from bnmfzoo.models._spec import find_spec

    warnings.simplefilter("ignore")
    D, N = shape_for(n)
    rows, cols, values = synthetic_entries(D, N, n)
    if dense:
        X = np.full((D, N), np.nan)
        X[rows, cols] = values
    else:
        X = bz.long_format(rows, cols, values, shape=(D, N))
    del rows, cols, values
    res = {"n": int(X.n_observed if not dense else np.count_nonzero(~np.isnan(X))),
           "D": D, "N": N, "dense": dense}
    t0 = time.process_time()
    model = beta_dir(X, rank=RANK)
    spec = find_spec(model)  # recognition of the graph (memoized on the model), part of the build
    res["build_s"] = time.process_time() - t0
    r, c, v, (Dc, Nc) = spec_entries(spec)
    h = spec.hyper
    rng = np.random.default_rng(1)
    chain = BetaDirChain(r, c, v, Dc, Nc, h.gamma, h.alpha, h.beta, rng)
    chain.sweep(rng)  # compile / warm
    sweep = chain.sweep
    res["sweep_s"] = _median(lambda: sweep(rng), sweeps)
    chain = sweep = None  # free the chain before the next measurement
    t0 = time.process_time()
    fit_collapsed_gibbs(model, draws=sweeps, tune=0, thin=sweeps, init="prior", random_seed=1,
                        progressbar=False)
    res["fit_sweep_s"] = (time.process_time() - t0) / sweeps
    res["rss_gibbs_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.process_time()
    dt = fit_cvb0(model, max_iter=3, tol=0.0, n_draws=2, random_seed=1, progressbar=False)
    res["cvb0_iter_s"] = (time.process_time() - t0) / dt.attrs["n_iter"]
    res["rss_cvb0_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res), flush=True)


def run(n, dense, sweeps):
    code = (f"from benchmarks.speed.scale_binary import one_size; "
            f"one_size({int(n)}, {dense}, {sweeps})")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-2000:])
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", nargs="+", type=float, default=[1e4, 1e5, 1e6, 1e7])
    p.add_argument("--sweeps", type=int, default=5)
    p.add_argument("--dense-max-cells", type=float, default=2e7,
                   help="run the dense baseline up to this many cells (default 2e7, 160 MB)")
    args = p.parse_args(argv)
    print(f"Beta-Dir, rank {RANK}, density {DENSITY:.0%}, CPU seconds, peak RSS in MiB")
    print(f"{'observed':>10} {'D x N':>15} {'input':>6} {'build':>7} {'sweep':>8} "
          f"{'fit/swp':>8} {'cvb0/it':>8} {'RSS gibbs':>10} {'RSS cvb0':>9} {'dense/sparse':>12}")
    sparse_res = []
    for n in args.sizes:
        D, N = shape_for(n)
        rows = [("sparse", run(n, False, args.sweeps))]
        if D * N <= args.dense_max_cells:
            rows.append(("dense", run(n, True, args.sweeps)))
        for form, res in rows:
            if res is None:
                print(f"{int(n):>10} {form}: failed")
                continue
            ratio = ""
            if form == "dense" and rows[0][1] is not None:
                ratio = f"{res['rss_cvb0_mib'] / rows[0][1]['rss_cvb0_mib']:.2f}x"
            print(f"{res['n']:>10} {f'{D} x {N}':>15} {form:>6} {res['build_s']:7.2f} "
                  f"{res['sweep_s']:8.4f} {res['fit_sweep_s']:8.4f} {res['cvb0_iter_s']:8.4f} "
                  f"{res['rss_gibbs_mib']:10.0f} {res['rss_cvb0_mib']:9.0f} {ratio:>12}",
                  flush=True)
        if rows[0][1] is not None:
            sparse_res.append(rows[0][1])
    if len(sparse_res) >= 2:
        n = np.log([r["n"] for r in sparse_res])
        for key in ("sweep_s", "fit_sweep_s", "cvb0_iter_s"):
            slope = np.polyfit(n, np.log([r[key] for r in sparse_res]), 1)[0]
            print(f"log-log slope of {key} against observed entries: {slope:.2f} (1 = linear)")
        per = [r["sweep_s"] / r["n"] * 1e9 for r in sparse_res]
        print("sweep ns per observed entry: " + ", ".join(f"{x:.0f}" for x in per))


if __name__ == "__main__":
    main()
