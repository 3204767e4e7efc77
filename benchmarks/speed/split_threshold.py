"""CPU of the latent-count split by the threshold above which counts go to binomials.

The Poisson Gibbs sweep splits every nonzero count ``x`` over the K components
(:func:`bnmfzoo.inference.counts.sweep.split_into`): count by count (one uniform and K - 1
comparisons per unit) up to a threshold, by K - 1 sequential binomials (numba's sampler)
above it. Both give the same multinomial law; this times the split of one matrix's counts
(its tiled order, a KL-NMF fit's factors as the means) in one process at several thresholds,
the former fixed 32 and the library's rule ``big_count(K)`` among them, and prints the median
of ``--repeats`` timings of ``--splits`` splits each and the ratio to 32. With ``--beta`` the
counts are the power posterior's rounded-up ``ceil(beta x)`` (what a tempered rung splits)::

    python -m benchmarks.speed.split_threshold --data ESCC_SBS96.txt --ranks 3 6 10
"""

import argparse
import statistics
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)

OLD_THRESHOLD = 32


def _factors(X, K):
    from sklearn.decomposition import NMF

    nmf = NMF(K, beta_loss="kullback-leibler", solver="mu", max_iter=300, init="nndsvda",
              random_state=0).fit(X)
    return (np.ascontiguousarray(np.maximum(nmf.transform(X), 1e-3)),
            np.ascontiguousarray(np.maximum(nmf.components_, 1e-3).T))


def time_split(tiled, A, Wt, big, splits, repeats, rng):
    """Median seconds of one split at threshold ``big`` (``repeats`` timings of ``splits``)."""
    from bnmfzoo.inference.counts.sweep import split_with_threshold
    from bnmfzoo.inference.kernels.streams import seed_state

    ZA, ZWt, state = np.empty_like(A), np.empty_like(Wt), seed_state(rng)
    split_with_threshold(*tiled, A, Wt, state, ZA, ZWt, big)  # compile
    out = []
    for _ in range(repeats):
        t = time.process_time()
        for _ in range(splits):
            split_with_threshold(*tiled, A, Wt, state, ZA, ZWt, big)
        out.append((time.process_time() - t) / splits)
    return statistics.median(out)


def main(argv=None):
    from bnmfzoo._fitcli import read_matrix
    from bnmfzoo.inference.counts._data import CountMatrix, big_count

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a count matrix file bnmfzoo fit reads")
    p.add_argument("--ranks", type=int, nargs="+", default=[3, 6, 10])
    p.add_argument("--beta", type=float, default=1.0)
    p.add_argument("--splits", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    X = np.asarray(read_matrix(a.data), float)
    rows, cols = np.nonzero(X)
    counts = np.ceil(a.beta * X[rows, cols]).astype(np.int64)
    keep = counts > 0
    data = CountMatrix.from_entries(rows[keep], cols[keep], counts[keep], X.shape)
    print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, {data.nnz} nonzeros, median count "
          f"{np.median(data.counts):g}, beta {a.beta:g}")
    rng = np.random.default_rng(0)
    print("K   threshold  ms per split  ratio to 32")
    for K in a.ranks:
        A, Wt = _factors(X, K)
        rule = int(big_count(K))
        base = time_split(data.tiled, A, Wt, OLD_THRESHOLD, a.splits, a.repeats, rng)
        for big in sorted({OLD_THRESHOLD, rule // 2, rule, 2 * rule}):
            t = base if big == OLD_THRESHOLD else time_split(data.tiled, A, Wt, big, a.splits,
                                                             a.repeats, rng)
            mark = "  <- big_count(K)" if big == rule else ""
            print(f"{K:<3d} {big:9d}  {1e3 * t:12.3f}  {base / t:11.2f}{mark}", flush=True)


if __name__ == "__main__":
    main()
