"""CPU per rescaling move of an exponential-Gaussian state: compiled slice draws vs interpreted.

Every sweep of the exponential-Gaussian reference path (the per-mode check of
:func:`bnmfzoo.smc_mode_masses`, the README's "how much posterior mass" example) ends with
:func:`bnmfzoo.inference.gaussian.modes._reference_gaussian.rescale_components`, one slice draw
of each component's log scale. This times it against the same move with the slice draws in
interpreted Python (the kernel's own ``py_func`` over NumPy coefficients: the loop it
replaced), in one process, on the same states and random streams, checks that both give the
same factors bit for bit, and prints the medians of ``--repeats`` timings of ``--moves`` moves
and their ratio (2 Dec 2026, 2 cores: 2.5-3.1 at rank 3, 5.4-5.9 at rank 8; the compiled move's
floor is numba's unboxing of the ``numpy.random.Generator``, about 20 us a call)::

    python -m benchmarks.speed.rescale_slice --rows 30 --cols 20 --rank 3
"""

import argparse
import statistics
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def _rescale_interpreted(s, QA, LA, QW, LW, rng):
    from bnmfzoo.inference.gaussian.modes._reference_gaussian import _log_scale_slice

    A, Wt = s.A, s.Wt
    cs = np.stack([np.sum(QA * A * A, 0), np.sum(LA * A, 0), np.sum(QW * Wt * Wt, 0),
                   np.sum(LW * Wt, 0)])
    d = float(A.shape[0] - Wt.shape[0])
    draw = _log_scale_slice.py_func  # the same slice sampler, interpreted
    c = np.exp([draw(*cs[:, k], d, rng) for k in range(A.shape[1])])
    A *= c
    Wt /= c


class _State:
    def __init__(self, A, Wt):
        self.A, self.Wt = A.copy(), Wt.copy()


def main(argv=None):
    from bnmfzoo.inference.gaussian.modes._reference_gaussian import rescale_components

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--cols", type=int, default=20)
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--moves", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    g = np.random.default_rng(a.seed)
    D, N, K = a.rows, a.cols, a.rank
    A, Wt = g.gamma(2.0, 1.0, (D, K)), g.gamma(2.0, 1.0, (N, K))
    QA, QW = g.gamma(2.0, 1.0, (D, K)), g.gamma(2.0, 1.0, (N, K))
    LA, LW = g.normal(size=(D, K)), g.normal(size=(N, K))
    moves = {"compiled": rescale_components, "interpreted": _rescale_interpreted}
    rescale_components(_State(A, Wt), QA, LA, QW, LW, np.random.default_rng(0))  # compile
    times = {name: [] for name in moves}
    for r in range(a.repeats):
        ends = {}
        for name, move in moves.items():
            s, rng = _State(A, Wt), np.random.default_rng([a.seed, r])
            t = time.process_time()
            for _ in range(a.moves):
                move(s, QA, LA, QW, LW, rng)
            times[name].append(time.process_time() - t)
            ends[name] = (s.A, s.Wt)
        same = all(np.array_equal(x, y) for x, y in zip(*ends.values(), strict=True))
        if not same:
            raise SystemExit("the compiled and interpreted moves drew different factors")
    med = {name: statistics.median(v) / a.moves * 1e6 for name, v in times.items()}
    print(f"{D} x {N}, rank {K}: {a.moves} moves x {a.repeats} repeats, identical factors")
    for name, m in med.items():
        print(f"  {name:12s} {m:8.1f} CPU us per move (median)")
    print(f"  ratio interpreted / compiled: {med['interpreted'] / med['compiled']:.2f}")


if __name__ == "__main__":
    main()
