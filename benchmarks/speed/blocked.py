"""Benchmark: the row-blocked Gibbs sweep on a ``LocalCluster``, against the serial chain.

Run with, e.g.::

    nice -n 10 python -m benchmarks.speed.blocked --nnz 1000000 --rank 10 --workers 2 \
        --memory-limit 2000000000

It generates synthetic data block by block (UMI-like counts, ``--model poisson``, the default:
Gamma(0.3) programs and log-normal library sizes; or exponential-Gaussian data with missing
entries, ``--model exponential_gaussian``), runs the serial blocked chain in this process and
the same chain on a ``LocalCluster`` of ``--workers`` process workers (one thread each, each
with ``--memory-limit`` bytes; every worker generates its own blocks, so no process but the
serial one ever holds the whole matrix), optionally kills a worker after sweep ``--kill-at``,
and compares the draws bit for bit. With ``--baselines`` it also times hpfrec's VB (Poisson
only; ``pip install hpfrec``) and scikit-learn's KL-NMF (``solver="mu"``,
``beta_loss="kullback-leibler"``) per iteration on the same matrix in this process.

The last line printed is one JSON object::

    {"bitwise_equal": true, "sweep_s": t, "serial_sweep_s": t0, "worker_peak_bytes": m,
     "bytes_per_sweep": b, "whole_matrix_bytes": x, ...}

``sweep_s`` and ``serial_sweep_s`` are medians over the sweeps; ``worker_peak_bytes`` the
largest peak resident memory (``ru_maxrss``) of a worker process; ``bytes_per_sweep`` the
statistics gathered plus the column state sent to each worker.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np


def _peak():
    """Peak resident bytes of this process (``VmHWM``: unlike ``ru_maxrss``, not inherited
    from the parent a worker process was forked from before its exec)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _whole(src):
    return src.whole_matrix_bytes()


def _collect(src):
    """The whole matrix in this process (for the baselines only)."""
    import scipy.sparse as sp

    blocks = [src.load(b) for b in range(src.n_blocks)]
    rows = np.concatenate([b.row0 + np.repeat(np.arange(b.n_rows), np.diff(b.indptr))
                           for b in blocks])
    cols = np.concatenate([b.cols for b in blocks])
    vals = np.concatenate([b.values for b in blocks]).astype(np.float64)
    return sp.csr_matrix((vals, (rows, cols)), shape=src.shape)


def _baselines(src, rank, iters):
    """Seconds per iteration of hpfrec (VB) and scikit-learn KL-NMF on the same matrix."""
    out = {}
    X = _collect(src)
    try:
        import hpfrec
        import pandas as pd

        coo = X.tocoo()
        df = pd.DataFrame({"UserId": coo.row, "ItemId": coo.col, "Count": coo.data})
        model = hpfrec.HPF(k=rank, maxiter=iters, stop_crit="maxiter", check_every=iters,
                           verbose=False, random_seed=0, ncores=1, reindex=False,
                           produce_dicts=False, keep_data=False)
        t0 = time.perf_counter()
        model.fit(df)
        out["hpfrec_iter_s"] = (time.perf_counter() - t0) / iters
    except ImportError as err:
        out["hpfrec_iter_s"] = None
        print(f"hpfrec skipped: {err}")
    from sklearn.decomposition import NMF

    try:
        t0 = time.perf_counter()
        NMF(rank, solver="mu", beta_loss="kullback-leibler", max_iter=iters, tol=0.0,
            init="random", random_state=0).fit(X)
        out["sklearn_kl_iter_s"] = (time.perf_counter() - t0) / iters
    except MemoryError as err:
        out["sklearn_kl_iter_s"] = None
        print(f"scikit-learn KL-NMF did not fit: {err}")
    del X
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nnz", type=int, default=200_000, help="stored entries (target)")
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", type=int, default=2_000_000_000, help="bytes per worker")
    p.add_argument("--model", choices=("poisson", "exponential_gaussian"), default="poisson")
    p.add_argument("--rows", type=int, default=None, help="cells (default: nnz / 100)")
    p.add_argument("--cols", type=int, default=2000, help="genes")
    p.add_argument("--block-rows", type=int, default=None)
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--kill-at", type=int, default=None, help="kill a worker after this sweep")
    p.add_argument("--baselines", action="store_true", help="time hpfrec and sklearn KL-NMF")
    p.add_argument("--baseline-iters", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    from distributed import Client, LocalCluster

    from bnmfzoo.inference.blocked import fit_blocked_gibbs
    from bnmfzoo.inference.blocked._blocks import (
        SyntheticCountSource,
        SyntheticGaussianSource,
        default_block_rows,
    )

    rows = args.rows or max(args.nnz // 100, 4 * args.rank)
    block_rows = args.block_rows or default_block_rows(rows, args.nnz)
    cls = SyntheticCountSource if args.model == "poisson" else SyntheticGaussianSource
    src = cls(rows, args.cols, args.nnz, args.rank, block_rows, seed=args.seed)
    kw = {"model": args.model, "draws": args.sweeps, "tune": 0, "random_seed": args.seed,
          "checkpoint_every": 2, "timeout": 3600.0}
    print(f"{args.model}: {rows} x {args.cols}, ~{args.nnz} stored entries, rank {args.rank},"
          f" {src.n_blocks} blocks of {block_rows} rows; whole matrix ~{_whole(src)} bytes; "
          f"{args.workers} workers x {args.memory_limit} bytes", flush=True)
    t0 = time.perf_counter()
    serial = fit_blocked_gibbs(src, args.rank, **kw)
    print(f"serial: {time.perf_counter() - t0:.1f} s, median sweep "
          f"{serial.attrs['sweep_seconds']:.3f} s, driver peak {_peak()} bytes", flush=True)
    import dask

    # our blocks live outside Dask's managed memory (they are never spilled): pausing a worker
    # at 80% of its limit would only stall the sweep, so a worker runs until the nanny's 95%
    dask.config.set({"distributed.worker.memory.pause": False,
                     "distributed.worker.memory.spill": False,
                     "distributed.worker.memory.target": False})
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        killed = []

        def after(sweep):
            if args.kill_at is not None and sweep == args.kill_at and not killed:
                target = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
                try:
                    client.run(os._exit, 1, workers=[target])
                except Exception:  # noqa: BLE001 - the worker dies while answering
                    pass
                killed.append(target)
                print(f"killed worker {target} after sweep {sweep}", flush=True)

        t0 = time.perf_counter()
        dist = fit_blocked_gibbs(src, args.rank, client=client, _after_sweep=after, **kw)
        print(f"blocked: {time.perf_counter() - t0:.1f} s, median sweep "
              f"{dist.attrs['sweep_seconds']:.3f} s, restarts {dist.attrs['restarts']}",
              flush=True)
        peaks = client.run(_peak)
    equal = all(np.array_equal(serial.posterior[v].values, dist.posterior[v].values)
                for v in serial.posterior.data_vars) and all(
        np.array_equal(serial["rows"][v].values, dist["rows"][v].values)
        for v in ("A_mean", "A_last"))
    out = {"bitwise_equal": bool(equal), "sweep_s": dist.attrs["sweep_seconds"],
           "serial_sweep_s": serial.attrs["sweep_seconds"],
           "worker_peak_bytes": int(max(peaks.values())),
           "bytes_per_sweep": int(dist.attrs["bytes_per_sweep"]),
           "whole_matrix_bytes": int(_whole(src)), "model": args.model, "nnz_target": args.nnz,
           "rows": rows, "cols": args.cols, "rank": args.rank, "workers": args.workers,
           "memory_limit": args.memory_limit, "n_blocks": src.n_blocks,
           "restarts": int(dist.attrs["restarts"]), "killed": bool(killed)}
    if args.baselines and args.model == "poisson":
        out.update(_baselines(src, args.rank, args.baseline_iters))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
