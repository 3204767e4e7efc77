"""CPU per sweep of the exponential-Gaussian reference path: compiled Gram halves vs interpreted.

The per-mode check of :func:`bnmfzoo.smc_mode_masses` (the README's "how much posterior mass"
example) spends most of its time in
:meth:`bnmfzoo.inference.gaussian.modes._reference_gaussian.GaussianReferenceAdapter.sweep`,
one call per particle and move on a small matrix. The sweep now takes its two Gram halves in one
compiled call (``_gram_halves``); the interpreted route (``prior_nmf_sweep``, one numba call
per half and the Python checks around them) is still taken when the prior terms are invalid,
and this script forces it for the baseline. In one process, from the same states and random
streams, it checks that both give the same factors bit for bit, and prints the medians of
``--repeats`` timings of ``--sweeps`` sweeps at an intermediate rung and their ratio; then the
whole README example once (``--readme``, ours only: its CPU seconds). 2 Dec 2026, 2 cores, one
process alone: 69 against 137 us a sweep at 6 x 6, rank 3 (ratio 1.97); 91 against 156 at
30 x 20, rank 5 (1.72); the README example 24 CPU s (the code before this change: 47, median
of three alternating runs each, ``docs/results/masses_copula_reference_2.md`` section 36).

    python -m benchmarks.speed.reference_sweep                     # the README's 6 x 6, rank 3
    python -m benchmarks.speed.reference_sweep --rows 30 --cols 20 --rank 5
"""

import argparse
import statistics
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def _adapter_and_reference(rows, cols, rank, seed):
    """A reference adapter of ``exponential_gaussian`` on a synthetic matrix, its reference
    fitted to 40 states near the truth, and a start state."""
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state
    from bnmfzoo.inference.reference_path import reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import exponential_gaussian

    rng = np.random.default_rng(seed)
    A0, W0 = rng.gamma(2.0, 1.0, (rows, rank)), rng.gamma(2.0, 1.0, (rank, cols))
    X = np.abs(A0 @ W0 + rng.normal(0.0, 0.05, (rows, cols)))
    ad = reference_adapter(family_of_model(exponential_gaussian(X, rank, sigma=0.05,
                                                                lambda_=1.0)))
    states = [nmf_state(A0 * rng.uniform(0.9, 1.1, A0.shape),
                        W0 * rng.uniform(0.9, 1.1, W0.shape), 400.0, None, ad.obs)
              for _ in range(40)]
    for s in states:
        for _ in range(5):
            ad.tempered.sweep(s, 1.0, rng)
    q = ad.fit(np.array([ad.draws(s, np.arange(rank)) for s in states]), 2.0)
    return ad, q, states[0]


def _run(ad, q, start, n, seed, beta):
    s, rng = ad.copy(start), np.random.default_rng(seed)
    t0 = time.process_time()
    for _ in range(n):
        ad.sweep(q, s, beta, rng)
    return time.process_time() - t0, s


def main(argv=None):
    from bnmfzoo.inference.gaussian.modes._reference_gaussian import GaussianReferenceAdapter

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=6)
    ap.add_argument("--cols", type=int, default=6)
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--sweeps", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--beta", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--readme", action="store_true",
                    help="also time the README's smc_mode_masses example once")
    a = ap.parse_args(argv)

    ad, q, start = _adapter_and_reference(a.rows, a.cols, a.rank, a.seed)
    print(f"{a.rows} x {a.cols}, rank {a.rank}, b = {a.beta}: half-sweep paths "
          f"{ad.obs.half_sweep_paths(a.rank)}")
    interpreted = GaussianReferenceAdapter(ad.tempered, ad.inner)
    interpreted._terms = lambda q, b: (GaussianReferenceAdapter._terms(interpreted, q, b)[0],
                                       False)
    _run(ad, q, start, 10, 1, a.beta)  # compile / load both routes' kernels
    _run(interpreted, q, start, 10, 1, a.beta)
    _, s1 = _run(ad, q, start, 200, 2, a.beta)
    _, s2 = _run(interpreted, q, start, 200, 2, a.beta)
    same = (np.array_equal(s1.A, s2.A) and np.array_equal(s1.Wt, s2.Wt)
            and s1.tau == s2.tau and s1.sse == s2.sse)
    print(f"same bits after 200 sweeps: {same}")
    if not same:
        raise SystemExit("the compiled sweep's draws differ from the interpreted sweep's")
    ours, base = [], []
    for r in range(a.repeats):  # alternate, so a change of machine load hits both
        ours.append(_run(ad, q, start, a.sweeps, 10 + r, a.beta)[0])
        base.append(_run(interpreted, q, start, a.sweeps, 10 + r, a.beta)[0])
    m_ours, m_base = statistics.median(ours), statistics.median(base)
    print(f"CPU us per sweep, median of {a.repeats} x {a.sweeps}: compiled halves "
          f"{1e6 * m_ours / a.sweeps:.1f}, interpreted {1e6 * m_base / a.sweeps:.1f}; "
          f"ratio {m_base / m_ours:.2f}")
    if a.readme:
        import bnmfzoo as bz

        d = bz.datasets.laurberg(0.5, sigma=0.05, random_seed=0)
        model = bz.models.exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0)
        t0 = time.process_time()
        out = bz.inference.smc_mode_masses(model, n_particles=50, random_seed=1)
        print(f"README example: {time.process_time() - t0:.1f} CPU s, "
              f"{len(out['modes'])} modes, established {out['established']}")


if __name__ == "__main__":
    main()
