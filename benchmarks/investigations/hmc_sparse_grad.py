"""Which form of ``HmcPoisson``'s gradient is fastest on which counts (measurement).

``HmcPoisson`` (:mod:`bnmfzoo.inference.counts.gibbs._hmc_moves`) evaluates its gradient in one
of three forms: ``dense`` (three ``D x K x N`` matrix products on dense arrays), ``cells`` (a
loop over every observed cell, zeros included) and ``sparse`` (the nonzero and missing cells
plus O((D + N) K) for the total mean,
:func:`bnmfzoo.inference.counts._hmc_kernels.grad_sparse`). This
prints the CPU ms per gradient of each (median of 5 repeats of a loop of at least 0.2 s,
``time.process_time``, one BLAS thread; the three agree to 1e-9 relative, checked), the fastest
and the form ``hmc_cells`` chooses, on the breast and ESCC SBS96 catalogues, the Reuters word
counts, synthetic 400 x 2,000 and 2,000 x 400 matrices at nonzero shares 0.02-0.7, and a
synthetic 3,774 x 16,791 matrix at UMI sparsity (2.7 M nonzeros; the loop over every cell,
63 M cells, is not run there). Results: ``docs/results/counts_core.md``. From the project root::

    nice -n 10 .venv/bin/python -m benchmarks.investigations.hmc_sparse_grad [real] [synth] [umi]
"""

import sys
import time

import numpy as np
import scipy.sparse as sp

import benchmarks  # noqa: F401 - environment defaults
from benchmarks.speed.counts_gibbs import synthetic_umi


def problem(X, K):
    """A Poisson problem of ``X`` (every cell observed, unit offsets, Gamma(1, 1) priors)."""
    from bnmfzoo.inference.counts._data import CountMatrix, Exposure
    from bnmfzoo.inference.counts._problem import poisson_problem

    coo = sp.coo_array(X)
    D, N = X.shape
    data = CountMatrix.from_entries(coo.row, coo.col, coo.data, (D, N))
    e = np.zeros(0, np.int64)
    return poisson_problem(data, Exposure("separable", np.ones(D), np.ones(N), e, e),
                           np.ones((D, K)), np.ones((D, K)), np.ones((K, N)), np.ones((K, N)))


def bench(name, X, K, forms=("dense", "cells", "sparse")):
    """Print one table row: ms per gradient of each form, the fastest, the chosen one."""
    from bnmfzoo.inference.counts.gibbs import _hmc_moves as h

    prob = problem(X, K)
    D, N = prob.shape
    rng = np.random.default_rng(0)
    scale = np.sqrt(prob.data.counts.sum() / (D * N * K))
    tA = np.log(rng.gamma(2, 0.5 * scale, (D, K)))
    tWt = np.log(rng.gamma(2, 0.5 * scale, (N, K)))
    pr = (np.ones((D, K)), np.ones((D, K)), np.ones((N, K)), np.ones((N, K)))
    res, ref = {}, None
    for f in forms:
        cells = h.hmc_cells(prob, dense=f == "dense", sparse=f == "sparse")
        gA, gW, A, W = (np.empty(s) for s in ((D, K), (N, K), (D, K), (N, K)))
        lp = h._grad(tA, tWt, *cells, *pr, A, W, gA, gW, True)
        if ref is None:
            ref = (lp, gA.copy())
        elif not (abs(lp - ref[0]) <= 1e-9 * abs(ref[0])
                  and np.allclose(gA, ref[1], rtol=1e-8, atol=1e-8 * np.abs(ref[1]).max())):
            raise AssertionError(f"{name}: the {f} gradient differs from the {forms[0]} one")
        t0, n = time.process_time(), 0
        while time.process_time() - t0 < 0.2:
            h._grad(tA, tWt, *cells, *pr, A, W, gA, gW, False)
            n += 1
        reps = []
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(n):
                h._grad(tA, tWt, *cells, *pr, A, W, gA, gW, False)
            reps.append((time.process_time() - t0) / n)
        res[f] = float(np.median(reps))
        del cells
    auto = h.hmc_cells(prob)
    kind = "dense" if auto[4].size else "sparse" if auto[5].size else "cells"
    ms = " / ".join(f"{1e3 * res[f]:.3f}" if f in res else "-"
                    for f in ("dense", "cells", "sparse"))
    print(f"| {name} | {D} x {N}, K = {K} | {prob.data.nnz / (D * N):.3f} | {ms} | "
          f"{min(res, key=res.get)} | {kind} |", flush=True)


def main(argv=None):
    import bnmfzoo as bz

    which = (sys.argv[1:] if argv is None else argv) or ["real", "synth", "umi"]
    print("| data | shape | nonzero share | ms per gradient: dense / all cells / nonzero cells "
          "| fastest | chosen |\n|---|---|---|---|---|---|")
    if "real" in which:
        for src, K in (("breast", 4), ("escc", 8)):
            bench(src, np.rint(np.asarray(bz.datasets.load_sbs96(src).values)), K)
        bench("reuters", bz.datasets.load_reuters(sparse=True).X, 6)
    if "synth" in which:
        for D, N in ((400, 2000), (2000, 400)):
            for share in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7):
                bench("synthetic", synthetic_umi(D, N, int(share * D * N), 6, seed=1), 6)
    if "umi" in which:
        bench("UMI-like", synthetic_umi(3774, 16791, 2_700_000, 6), 6, forms=("sparse", "dense"))


if __name__ == "__main__":
    main()
