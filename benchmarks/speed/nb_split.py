"""CPU of the negative binomial's table draws and of its whole tempered sweep: now and as before.

Run with::

    nice -n 10 python -m benchmarks.speed.nb_split --data FILE --rank K [--rounds 7]

Both kernels in one process, on the same counts and the same state (the end of 60 sweeps of the
tempered sweep at ``beta = 1`` from a prior draw), interleaved round by round:

* **before**: each nonzero's count split over the K components by a Dirichlet-multinomial (a
  Polya urn up to ``BIG_NB_COUNT``, else a Dirichlet draw and sequential binomials), then
  ``CRT(x_k, r_k)`` per part (K table draws per nonzero; the kernel as it was, kept here,
  with its threshold of 64 between one Bernoulli per customer and the blocks);
* **now**: ``L ~ CRT(x, R)`` once per nonzero, ``R = sum_k r_k``, split ``Multinomial(L, r /
  R)`` (the same law: Zhou & Carin 2015, Theorem 1), blocks above ``BIG_NB_COUNT`` (256).

Prints the medians over rounds of one split of all nonzeros and of one tempered sweep at
``beta = 0.7`` (the pilot's temperature), and the ratios before / now.
"""

import argparse
import time

import numba
import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo.inference.kernels.crt import crt, crt_direct
from bnmfzoo.inference.kernels.streams import next_uniform
from bnmfzoo.inference.kernels.variates import dirmult_into

#: the count above which the kernel before drew by blocks (and split by a Dirichlet draw)
BEFORE_THRESHOLD = 64


@numba.njit(cache=True)
def _per_part_kernel(indptr, cols, counts, A, Wt, scale_nz, state, LA, LWt, d0, budget,
                     threshold):
    """The split kernel before: DirMult split, then the tables of each part (same signature)."""
    D, K = A.shape
    r = np.empty(K)
    cum = np.empty(K)
    n = np.zeros(K)
    g = np.empty(K)
    work = np.zeros(1, np.int64)
    d = d0
    while d < D and work[0] < budget:
        for k in range(K):
            LA[d, k] = 0.0
        for e in range(indptr[d], indptr[d + 1]):
            j = cols[e]
            x = counts[e]
            R = 0.0
            for k in range(K):
                r[k] = scale_nz[e] * A[d, k] * Wt[j, k]
                R += r[k]
                n[k] = 0.0
            if not (R > 0.0 and R < np.inf):
                return 1, d
            if x > threshold:
                if dirmult_into(x, r, g, n, state):
                    return 1, d
                work[0] += 4 * K
            else:
                work[0] += x * K
                for _ in range(x):  # Polya urn
                    tot = 0.0
                    for k in range(K):
                        tot += r[k] + n[k]
                        cum[k] = tot
                    v = next_uniform(state) * tot
                    k = 0
                    while k < K - 1 and v >= cum[k]:
                        k += 1
                    n[k] += 1.0
            for k in range(K):
                m = int(n[k])
                if m > threshold:
                    tables = float(crt(m, r[k], state, work))
                else:
                    work[0] += m
                    tables = float(crt_direct(m, r[k], state))
                LA[d, k] += tables
                LWt[j, k] += tables
        d += 1
    return 0, d


def _state(path, rank, seed):
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.inference.smc_masses import family_of_model

    X = _read(path)
    X = np.asarray(X[0] if isinstance(X, tuple) else X, float)
    fam = family_of_model(_build(X, rank, "negative_binomial"))
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(60):
        fam.tempered.sweep(s, 1.0, rng)
    return X, fam, s, rng


def _median_s(fn, reps):
    t = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t) / reps


def main(argv=None):
    from bnmfzoo.inference.counts import sweep as sweep_module

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    X, fam, s, rng = _state(a.data, a.rank, a.seed)
    prob = fam.tempered.problem
    alpha = float(s["alpha"]) if "alpha" in s else float(s.get("alpha", 1.0))
    A, W = np.asarray(s["A"], float), np.asarray(s["W"], float)
    scale = alpha * prob.offsets_nz
    new, split_now = sweep_module._split_crt_kernel, sweep_module.split_crt

    def split_before(*args, **kw):  # the threshold of before: 64
        return split_now(*args, **dict(kw, threshold=BEFORE_THRESHOLD))

    kernels = {"before": (_per_part_kernel, split_before), "now": (new, split_now)}
    counts = prob.data.counts
    print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, rank {a.rank}, {prob.data.nnz} nonzeros, "
          f"counts median {np.median(counts):.0f}, max {counts.max():.0f}, "
          f"above {sweep_module.BIG_NB_COUNT}: {np.mean(counts > sweep_module.BIG_NB_COUNT):.0%}; "
          f"NB shape alpha {alpha:.3g}")
    split = {k: [] for k in kernels}
    whole = {k: [] for k in kernels}
    try:
        for name, (kern, fn) in kernels.items():  # compile outside the clock
            sweep_module._split_crt_kernel, sweep_module.split_crt = kern, fn
            sweep_module.split_crt(prob.data, A, W, scale, rng)
            fam.tempered.sweep(fam.tempered.copy(s), 0.7, rng)
        reps = max(3, int(0.3 / max(_median_s(lambda: sweep_module.split_crt(
            prob.data, A, W, scale, rng), 3), 1e-6)))
        for _ in range(a.rounds):
            for name, (kern, fn) in kernels.items():
                sweep_module._split_crt_kernel, sweep_module.split_crt = kern, fn
                split[name].append(_median_s(
                    lambda: sweep_module.split_crt(prob.data, A, W, scale, rng), reps))
                st = fam.tempered.copy(s)
                whole[name].append(_median_s(lambda: fam.tempered.sweep(st, 0.7, rng), reps))
    finally:
        sweep_module._split_crt_kernel, sweep_module.split_crt = new, split_now
    for label, tab in (("table draws (one split)", split), ("tempered sweep at beta 0.7", whole)):
        b, n = np.median(tab["before"]), np.median(tab["now"])
        print(f"{label}: before {b * 1e3:.3f} ms, now {n * 1e3:.3f} ms, before / now "
              f"{b / n:.2f} (median of {a.rounds} rounds x {reps})")


if __name__ == "__main__":
    main()
