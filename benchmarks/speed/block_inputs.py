"""Benchmark: reading one row block of a matrix file, per format, against the whole matrix.

Run with, e.g.::

    nice -n 10 python -m benchmarks.speed.block_inputs --nnz 10000000 --rows 100000 \
        --cols 2000 --block-rows 5000

It writes synthetic UMI-like counts (:class:`bnmfzoo.inference.blocked.SyntheticCountSource`)
as AnnData ``.h5ad`` with ``X`` in CSR and in CSC, an AnnData ``.zarr`` (CSR), and (when
``--mtx`` is given) a 10x ``matrix.mtx.gz`` folder, then for each file times
:class:`~bnmfzoo.inference.blocked.FileSource` (the driver's per-row entry counts), reads one
block in the middle (wall seconds, ``tracemalloc`` peak bytes), checks it equals the in-memory
block, and reads the block of the transposed view (column blocks). Printed: a Markdown table,
then one JSON object per format.
"""

import argparse
import json
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def _matrix(args):
    from bnmfzoo.inference.blocked import SyntheticCountSource

    src = SyntheticCountSource(args.rows, args.cols, args.nnz, 10, 10_000, seed=0)
    parts = []
    for b in range(src.n_blocks):
        blk = src.load(b)
        parts.append(sp.csr_matrix((blk.values, blk.cols, blk.indptr),
                                   shape=(blk.n_rows, args.cols)))
    return sp.vstack(parts, format="csr")


def _peak(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
        return out, time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv=None):
    import anndata

    from bnmfzoo.datasets.counts import SparseCounts
    from bnmfzoo.datasets.matrixfiles import open_matrix
    from bnmfzoo.datasets.singlecell import write_10x_mtx
    from bnmfzoo.inference.blocked import ArraySource, FileSource

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nnz", type=int, default=10_000_000)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--cols", type=int, default=2_000)
    p.add_argument("--block-rows", type=int, default=5_000)
    p.add_argument("--mtx", action="store_true", help="also a 10x matrix.mtx.gz folder")
    args = p.parse_args(argv)
    X = _matrix(args)
    whole = X.nnz * 12 + 8 * (X.shape[0] + 1)
    d = Path(tempfile.mkdtemp(prefix="bnmfzoo-inputs-"))
    ad = anndata.AnnData(X)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(d / "csr.h5ad")
        ad.write_zarr(d / "csr.zarr")
        ad.X = X.tocsc()
        ad.write_h5ad(d / "csc.h5ad")
    files = ["csr.h5ad", "csc.h5ad", "csr.zarr"]
    if args.mtx:
        write_10x_mtx(SparseCounts(sp.csr_array(X), np.arange(X.shape[0]).astype(str),
                                   np.arange(X.shape[1]).astype(str), {}, {}, {}), d / "tenx")
        files.append("tenx")
    write_s = time.perf_counter() - t0
    ref = ArraySource(X, args.block_rows)
    refT = ArraySource(X.T.tocsr(), max(1, args.cols // 20))
    b = ref.n_blocks // 2
    rows = []
    for name in files:
        t0 = time.perf_counter()
        src = FileSource(d / name, block_rows=args.block_rows)
        open_s = time.perf_counter() - t0
        blk, load_s, peak = _peak(lambda: src.load(b))
        want = ref.load(b)
        same = all(np.array_equal(getattr(blk, f), getattr(want, f))
                   for f in ("indptr", "cols", "values"))
        srcT = FileSource(open_matrix(d / name).T, block_rows=max(1, args.cols // 20))
        blkT, loadT_s, peakT = _peak(lambda: srcT.load(1))
        sameT = all(np.array_equal(getattr(blkT, f), getattr(refT.load(1), f))
                    for f in ("indptr", "cols", "values"))
        rows.append(dict(file=name, layout=src.matrix.layout, open_s=round(open_s, 3),
                         block_nnz=blk.nnz, block_s=round(load_s, 3), block_peak_bytes=peak,
                         same_block=same, col_block_s=round(loadT_s, 3),
                         col_block_peak_bytes=peakT, same_col_block=sameT,
                         whole_matrix_bytes=whole))
    print(f"nnz {X.nnz}, {X.shape[0]} x {X.shape[1]}, CSR {whole / 1e6:.1f} MB, block "
          f"{args.block_rows} rows, files written in {write_s:.1f} s")
    print("| file | layout | open (s) | row block (s) | row block peak (MB) | column block (s) "
          "| column block peak (MB) | blocks equal |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        same = r["same_block"] and r["same_col_block"]
        print(f"| {r['file']} | {r['layout']} | {r['open_s']} | {r['block_s']} | "
              f"{r['block_peak_bytes'] / 1e6:.1f} | {r['col_block_s']} | "
              f"{r['col_block_peak_bytes'] / 1e6:.1f} | {same} |")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
