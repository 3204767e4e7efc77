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
and compares the draws bit for bit. Counts only: ``--vb-iters`` iterations of the blocked
Poisson VB run the same way (serial, then on the workers, the same kill) and are compared bit
for bit. ``--hpfrec`` times hpfrec's VB and ``--sklearn`` scikit-learn's KL-NMF
(``solver="mu"``, ``beta_loss="kullback-leibler"``) per iteration on the same matrix in this
process (``--baselines``: both); they hold the whole matrix, so they come last.

The last line printed is one JSON object::

    {"bitwise_equal": true, "sweep_s": t, "serial_sweep_s": t0, "worker_peak_bytes": m,
     "bytes_per_sweep": b, "whole_matrix_bytes": x, ...}

``sweep_s`` and ``serial_sweep_s`` are medians over the sweeps; ``worker_peak_bytes`` the
largest peak resident memory (``VmHWM``) of a worker process; ``bytes_per_sweep`` the
statistics gathered plus the column state sent to each worker; ``vb_iter_s``,
``serial_vb_iter_s``, ``vb_bytes_per_iter`` and ``vb_bitwise_equal`` the same for VB;
``hpfrec_iter_s`` and ``sklearn_kl_iter_s`` the baselines' wall seconds per iteration (their
setup included: ``*_fit_s`` is the whole call).
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def _peak():
    """Peak resident bytes of this process (:func:`bnmfzoo._base.memory.peak_resident_bytes`)."""
    from bnmfzoo._base.memory import peak_resident_bytes

    return peak_resident_bytes()


def _whole(src):
    return src.whole_matrix_bytes()


class _Cached:
    """``src`` with its blocks kept once generated: the serial runs and the baselines in this
    process share one copy instead of generating the matrix again (the workers generate their
    own blocks from ``src``)."""

    in_memory = False

    def __init__(self, src):
        self.src = src
        self.shape, self.bounds, self.n_blocks = src.shape, src.bounds, src.n_blocks
        self.blocks = {}

    def load(self, b):
        if b not in self.blocks:
            self.blocks[b] = self.src.load(b)
        return self.blocks[b]

    def block_nbytes(self, b):
        return self.src.block_nbytes(b)

    def whole_matrix_bytes(self):
        return self.src.whole_matrix_bytes()


def _collect(src):
    """The whole matrix in this process (for the baselines only)."""
    import scipy.sparse as sp

    blocks = [src.load(b) for b in range(src.n_blocks)]
    indptr = np.zeros(src.shape[0] + 1, dtype=np.int64)
    for b in blocks:  # the blocks are consecutive row ranges in CSR form: no sort needed
        indptr[b.row0 + 1:b.row0 + b.n_rows + 1] = b.indptr[1:] + indptr[b.row0]
    cols = np.concatenate([b.cols for b in blocks])
    vals = np.concatenate([b.values for b in blocks]).astype(np.float64)
    return sp.csr_matrix((vals, cols, indptr), shape=src.shape)


def _baselines(src, rank, iters, hpf=True, sk=True, ncores=1):
    """Seconds per iteration of hpfrec (VB) and scikit-learn KL-NMF on the same matrix."""
    out = {}
    X = _collect(src)
    print(f"whole matrix collected for the baselines: driver peak {_peak()} bytes", flush=True)
    if hpf:
        try:
            import hpfrec
            import pandas as pd

            coo = X.tocoo()
            df = pd.DataFrame({"UserId": coo.row.astype(np.int32),
                               "ItemId": coo.col.astype(np.int32),
                               "Count": coo.data.astype(np.float32)})
            del coo
            model = hpfrec.HPF(k=rank, maxiter=iters, stop_crit="maxiter", check_every=iters,
                               verbose=False, random_seed=0, ncores=ncores, reindex=False,
                               produce_dicts=False, keep_data=False)
            t0 = time.perf_counter()
            model.fit(df)
            fit_s = time.perf_counter() - t0
            out.update(hpfrec_iter_s=fit_s / iters, hpfrec_fit_s=fit_s, hpfrec_iters=iters,
                       hpfrec_ncores=ncores)
            print(f"hpfrec: {fit_s:.1f} s for {iters} iterations ({ncores} cores), driver peak "
                  f"{_peak()} bytes", flush=True)
            del df, model
        except ImportError as err:
            out["hpfrec_iter_s"] = None
            print(f"hpfrec skipped: {err}")
    if sk:
        from sklearn.decomposition import NMF

        try:
            t0 = time.perf_counter()
            NMF(rank, solver="mu", beta_loss="kullback-leibler", max_iter=iters, tol=0.0,
                init="random", random_state=0).fit(X)
            fit_s = time.perf_counter() - t0
            out.update(sklearn_kl_iter_s=fit_s / iters, sklearn_kl_fit_s=fit_s,
                       sklearn_kl_iters=iters)
            print(f"scikit-learn KL-NMF: {fit_s:.1f} s for {iters} iterations, driver peak "
                  f"{_peak()} bytes", flush=True)
        except MemoryError as err:
            out["sklearn_kl_iter_s"] = None
            print(f"scikit-learn KL-NMF did not fit: {err}")
    del X
    return out


def _killer(client, kill_at, label):
    """An ``after`` callback that kills the first worker once, after iteration ``kill_at``."""
    killed = []

    def after(sweep):
        if kill_at is not None and sweep == kill_at and not killed:
            target = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
            try:
                client.run(os._exit, 1, workers=[target])
            except Exception:  # noqa: BLE001 - the worker dies while answering
                pass
            killed.append(target)
            print(f"{label}: killed worker {target} after iteration {sweep}", flush=True)

    return after, killed


def _same_vb(a, b):
    return all(np.array_equal(a["variational"][v].values, b["variational"][v].values)
               for v in ("A_shape", "A_rate", "W_shape", "W_rate", "elbo"))


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
    p.add_argument("--vb-iters", type=int, default=5, help="blocked VB iterations (counts; 0: "
                   "no VB)")
    p.add_argument("--kill-at", type=int, default=None,
                   help="kill a worker after this sweep (and VB iteration)")
    p.add_argument("--baselines", action="store_true", help="--hpfrec and --sklearn")
    p.add_argument("--hpfrec", action="store_true", help="time hpfrec's VB (counts)")
    p.add_argument("--sklearn", action="store_true", help="time scikit-learn's KL-NMF (counts)")
    p.add_argument("--baseline-iters", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    from distributed import Client, LocalCluster

    from bnmfzoo.inference.blocked import fit_blocked_gibbs, fit_blocked_vb
    from bnmfzoo.inference.blocked._blocks import (
        SyntheticCountSource,
        SyntheticGaussianSource,
        default_block_rows,
    )

    counts = args.model == "poisson"
    vb_iters = args.vb_iters if counts else 0
    rows = args.rows or max(args.nnz // 100, 4 * args.rank)
    block_rows = args.block_rows or default_block_rows(rows, args.nnz)
    cls = SyntheticCountSource if counts else SyntheticGaussianSource
    src = cls(rows, args.cols, args.nnz, args.rank, block_rows, seed=args.seed)
    kw = {"model": args.model, "draws": args.sweeps, "tune": 0, "random_seed": args.seed,
          "checkpoint_every": 2, "timeout": 3600.0}
    vkw = {"max_iter": vb_iters, "tol": 0.0, "random_seed": args.seed, "checkpoint_every": 2,
           "timeout": 3600.0}
    print(f"{args.model}: {rows} x {args.cols}, ~{args.nnz} stored entries, rank {args.rank},"
          f" {src.n_blocks} blocks of {block_rows} rows; whole matrix ~{_whole(src)} bytes; "
          f"{args.workers} workers x {args.memory_limit} bytes", flush=True)
    local = _Cached(src)
    t0 = time.perf_counter()
    serial = fit_blocked_gibbs(local, args.rank, **kw)
    print(f"serial: {time.perf_counter() - t0:.1f} s, median sweep "
          f"{serial.attrs['sweep_seconds']:.3f} s, driver peak {_peak()} bytes", flush=True)
    serial_vb = None
    if vb_iters:
        t0 = time.perf_counter()
        serial_vb = fit_blocked_vb(local, args.rank, **vkw)
        print(f"serial VB: {time.perf_counter() - t0:.1f} s, median iteration "
              f"{serial_vb.attrs['iter_seconds']:.3f} s", flush=True)
    if not (args.hpfrec or args.sklearn or args.baselines):
        local.blocks.clear()
    import dask

    # our blocks live outside Dask's managed memory (they are never spilled): pausing a worker
    # at 80% of its limit would only stall the sweep, so a worker runs until the nanny's 95%
    dask.config.set({"distributed.worker.memory.pause": False,
                     "distributed.worker.memory.spill": False,
                     "distributed.worker.memory.target": False})
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        after, killed = _killer(client, args.kill_at, "Gibbs")
        t0 = time.perf_counter()
        dist = fit_blocked_gibbs(src, args.rank, client=client, _after_sweep=after, **kw)
        print(f"blocked: {time.perf_counter() - t0:.1f} s, median sweep "
              f"{dist.attrs['sweep_seconds']:.3f} s, restarts {dist.attrs['restarts']}",
              flush=True)
        peaks = client.run(_peak)
        dist_vb = None
        if vb_iters:
            # fresh worker processes: the memory check counts what a process holds now
            client.restart(wait_for_workers=False)
            client.wait_for_workers(args.workers, timeout=300)
            after, killed_vb = _killer(client, args.kill_at, "VB")
            t0 = time.perf_counter()
            dist_vb = fit_blocked_vb(src, args.rank, client=client, _after_iteration=after,
                                     **vkw)
            print(f"blocked VB: {time.perf_counter() - t0:.1f} s, median iteration "
                  f"{dist_vb.attrs['iter_seconds']:.3f} s, restarts "
                  f"{dist_vb.attrs['restarts']}", flush=True)
            for w, v in client.run(_peak).items():
                peaks[w] = max(peaks.get(w, 0), v)
        loaded = client.run(lambda: sorted(m for m in ("pymc", "pytensor", "arviz")
                                           if m in sys.modules))
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
           "restarts": int(dist.attrs["restarts"]), "killed": bool(killed),
           "worker_imports_pymc": any(bool(v) for v in loaded.values())}
    if vb_iters:
        out.update(vb_bitwise_equal=bool(_same_vb(serial_vb, dist_vb)),
                   vb_iter_s=dist_vb.attrs["iter_seconds"],
                   serial_vb_iter_s=serial_vb.attrs["iter_seconds"],
                   vb_bytes_per_iter=int(dist_vb.attrs["bytes_per_iteration"]),
                   vb_restarts=int(dist_vb.attrs["restarts"]), vb_killed=bool(killed_vb),
                   vb_elbo=float(dist_vb.attrs["elbo"]))
    hpf, sk = args.hpfrec or args.baselines, args.sklearn or args.baselines
    if counts and (hpf or sk):
        out.update(_baselines(local, args.rank, args.baseline_iters, hpf=hpf, sk=sk,
                              ncores=args.workers))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
