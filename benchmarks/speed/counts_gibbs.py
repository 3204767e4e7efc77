"""One latent-count Gibbs sweep against one scikit-learn KL-NMF MU iteration, same run.

A synthetic UMI-sized sparse count matrix (default 3,774 x 16,791, 2.7 M nonzeros, about
2.8 counts per nonzero as in the UMI matrix DESIGN.md measured, K = 6). Times (CPU, one
thread, medians over repeats):

* ``sweep``: our full Gibbs sweep (split of every nonzero, A | Z, W | Z: the Gamma draws and
  exposures), :func:`bnmfzoo.inference.counts.sweep.sweep`;
* ``split``: the split alone;
* ``default GibbsPoisson kernel``: one call of
  :func:`bnmfzoo.inference.counts.gibbs._compiled.gibbs_sweeps` (the compiled sweep plus the
  rescaling and shear moves, what ``GibbsPoisson`` runs by default) on ``bz.models.poisson(X, K)``,
  and the per-draw ``loglik`` sample stat the step adds;
* ``sklearn``: one iteration of ``NMF(beta_loss="kullback-leibler", solver="mu")`` on the same
  CSR matrix (the time of ``max_iter=n + 1`` minus ``max_iter=1`` fits, divided by ``n``,
  with ``tol=0`` so every iteration runs).

Each of ``--repeats`` rounds times all of them one after the other (ours: median of 3 calls),
so a ratio compares times taken seconds apart; prints the median ratio sweep / sklearn
iteration over the rounds and every round's (target <= 0.2). Memory of the sweep: O(nonzeros +
(D + N) K) (the CSR arrays, 8 bytes per nonzero, the split's tiled copy, 12 bytes per nonzero, plus
four (D + N) x K tables).

Run: ``python -m benchmarks.speed.counts_gibbs [--rows 3774 --cols 16791 --nnz 2700000]``
"""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from benchmarks._common import Clock  # noqa: F401 - sets one BLAS thread first
from bnmfzoo.inference.counts._data import CountMatrix, Exposure
from bnmfzoo.inference.counts._problem import poisson_problem
from bnmfzoo.inference.counts.sweep import split_counts, sweep


def synthetic_umi(D, N, nnz, K, seed=0):
    """Sparse counts: random cells, 1 + NB-distributed counts (mean ~2.8), CSR."""
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, D * N, size=int(nnz * 1.02)))[:nnz]
    rng.shuffle(flat)
    flat = np.sort(flat[:nnz])
    rows, cols = np.divmod(flat, N)
    counts = 1 + rng.negative_binomial(0.6, 0.25, size=flat.size)
    return sp.csr_array((counts.astype(np.float64), (rows, cols)), shape=(D, N))


def _median_cpu(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times)), times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=3774)
    p.add_argument("--cols", type=int, default=16791)
    p.add_argument("--nnz", type=int, default=2_700_000)
    p.add_argument("--rank", type=int, default=6)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--sk-iters", type=int, default=5)
    args = p.parse_args(argv)
    D, N, K = args.rows, args.cols, args.rank
    X = synthetic_umi(D, N, args.nnz, K)
    coo = X.tocoo()
    data = CountMatrix.from_entries(coo.row, coo.col, coo.data, (D, N))
    expo = Exposure.full(D, N)
    rng = np.random.default_rng(1)
    A = rng.gamma(1.0, 1.0, size=(D, K))
    W = rng.gamma(1.0, 1.0, size=(K, N))
    plain = poisson_problem(data, expo, np.full((D, K), 0.3), np.full((D, K), 1.0),
                            np.full((K, N), 0.3), np.full((K, N), 1.0))
    print(f"data: {D} x {N}, {data.nnz} nonzeros, {int(data.counts.sum())} counts, K = {K}")
    state = sweep(plain, {"A": A, "W": W, "rates": {}, "alpha": None}, rng)  # compile

    def one_sweep():
        state.update(sweep(plain, state, rng))

    # the default path of GibbsPoisson: the compiled multi-sweep kernel with the group moves,
    # on the problem read from bz.models.poisson (its own Gamma priors)
    import bnmfzoo as bz
    from bnmfzoo.inference.counts._problem import counts_spec, log_likelihood
    from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
    from bnmfzoo.inference.counts.sweep import initial_state

    _, prob = counts_spec(bz.models.poisson(X, K), method="benchmark")
    kstate = {"s": gibbs_sweeps(prob, initial_state(prob, rng), rng, 1)}  # compile

    def kernel_sweep():
        kstate["s"] = gibbs_sweeps(prob, kstate["s"], rng, 1)

    from sklearn.decomposition import NMF

    def fit(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            NMF(K, beta_loss="kullback-leibler", solver="mu", max_iter=n, tol=0.0,
                init="random", random_state=0).fit(X)

    # Rounds interleave ours and sklearn's, so both see the same machine state (on the shared
    # 2-core machine the speed of either moves by up to 1.5x between seconds); each round
    # gives one ratio, and the medians over rounds are reported.
    rounds = {"sweep": [], "split": [], "kernel": [], "stat": [], "sk": []}
    for _ in range(args.repeats):
        rounds["sweep"].append(_median_cpu(one_sweep, 3)[0])
        rounds["split"].append(_median_cpu(
            lambda: split_counts(data, state["A"], state["W"], rng), 3)[0])
        rounds["kernel"].append(_median_cpu(kernel_sweep, 3)[0])
        # the per-draw ``loglik`` sample stat GibbsPoisson adds (loglik_stat=True)
        rounds["stat"].append(_median_cpu(lambda: log_likelihood(prob, kstate["s"]), 3)[0])
        t1, _ = _median_cpu(lambda: fit(1), 1)
        tn, _ = _median_cpu(lambda: fit(1 + args.sk_iters), 1)
        rounds["sk"].append((tn - t1) / args.sk_iters)
    r = {k: np.array(v) for k, v in rounds.items()}
    med = {k: float(np.median(v)) for k, v in r.items()}
    ratio_sweep = r["sweep"] / r["sk"]
    ratio_kernel = r["kernel"] / r["sk"]

    def _all(v, scale=1e3, fmt=".0f"):
        return ", ".join(f"{scale * t:{fmt}}" for t in v)

    print(f"our Gibbs sweep : {1e3 * med['sweep']:8.1f} ms CPU (median of {args.repeats} "
          f"rounds, each the median of 3; all: {_all(r['sweep'])})")
    print(f"  of which split: {1e3 * med['split']:8.1f} ms CPU "
          f"({1e9 * med['split'] / data.nnz:.1f} ns per nonzero)")
    print(f"sklearn KL-MU it: {1e3 * med['sk']:8.1f} ms CPU (per round: {args.sk_iters} its; "
          f"all: {_all(r['sk'])})")
    print(f"ratio sweep / sklearn iteration: median {np.median(ratio_sweep):.3f} over rounds "
          f"(all: {_all(ratio_sweep, 1, '.3f')}) (target <= 0.2)")
    print(f"default GibbsPoisson kernel (gibbs_sweeps + moves): {1e3 * med['kernel']:.1f} ms "
          f"CPU, ratio / sklearn iteration: median {np.median(ratio_kernel):.3f} "
          f"(all: {_all(ratio_kernel, 1, '.3f')})")
    print(f"per-draw loglik stat: {1e3 * med['stat']:.1f} ms CPU "
          f"({med['stat'] / med['kernel']:.2f} of a kernel sweep)")
    nbytes = data.indptr.nbytes + data.cols.nbytes + data.counts.nbytes
    tiled = sum(a.nbytes for a in data.tiled)
    print(f"sweep data memory: {nbytes / 1e6:.1f} MB CSR + {tiled / 1e6:.1f} MB tiled copy + "
          f"{4 * (D + N) * K * 8 / 1e6:.1f} MB tables (O(nonzeros + (D + N) K))")


if __name__ == "__main__":
    main()
