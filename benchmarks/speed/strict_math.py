"""Cost of strict IEEE math in PyTensor's numba code (``bnmfzoo.inference.sample(strict_math=)``).

``sample`` compiles NUTS's log density and gradient with ``numba__fastmath=False`` so that a
fresh compile and a cached one give the same bits (see ``bnmfzoo/inference/chains.py``). This
times, in the same run, one ``logp_dlogp`` evaluation (the NUTS hot path) and a short NUTS run
with fast-math on (PyTensor's default) and off, and prints the medians and the ratio
strict / fast.

Usage: python -m benchmarks.speed.strict_math [--repeats 7] [--size 200 100]
"""

import argparse
import time

import numpy as np
import pymc as pm
import pytensor
from pymc.blocking import DictToArrayBijection

from benchmarks._common import Clock
from bnmfzoo.models import exponential_gaussian


def build(D, N, R=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(D, R)) @ rng.exponential(size=(R, N))
    X = np.abs(X + 0.5 * rng.normal(size=X.shape))
    X[rng.random(X.shape) < 0.2] = np.nan
    return exponential_gaussian(X, R)


def time_grad(model, fast, n_calls):
    """Median-ready seconds per logp+gradient call, compiled with fast-math ``fast``."""
    with pytensor.config.change_flags(numba__fastmath=fast):
        fn = model.logp_dlogp_function(ravel_inputs=True)
        fn.trust_input = True
        q = DictToArrayBijection.map(model.initial_point()).data
        fn([q], extra_vars={})  # compile / load from cache
        t0 = time.perf_counter()
        for _ in range(n_calls):
            fn([q], extra_vars={})
        return (time.perf_counter() - t0) / n_calls


def time_nuts(model, fast, draws):
    from bnmfzoo.inference import pymc_default_steps

    # NUTS, not the GibbsNMF that ``import bnmfzoo`` makes pm.sample() choose on this model
    with pytensor.config.change_flags(numba__fastmath=fast), model, pymc_default_steps(), \
            Clock() as clock:
        pm.sample(draws=draws, tune=draws, chains=1, cores=1, random_seed=1, progressbar=False,
                  nuts_sampler="pymc", compute_convergence_checks=False)
    return clock.wall


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, nargs=2, default=(200, 100))
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--draws", type=int, default=100)
    args = parser.parse_args(argv)
    model = build(*args.size)
    for fast in (True, False):  # warm both compiles (and caches) first
        time_grad(model, fast, 1)
        time_nuts(model, fast, 5)
    grad = {True: [], False: []}
    nuts = {True: [], False: []}
    for _ in range(args.repeats):  # interleaved, so load changes hit both
        for fast in (True, False):
            grad[fast].append(time_grad(model, fast, args.calls))
            nuts[fast].append(time_nuts(model, fast, args.draws))
    D, N = args.size
    print(f"exponential_gaussian {D} x {N}, rank 5, 20% missing; {args.repeats} repeats")
    for label, res, unit, scale in (("logp+grad call", grad, "ms", 1e3),
                                    (f"NUTS {args.draws}+{args.draws} draws", nuts, "s", 1.0)):
        fast, strict = np.median(res[True]), np.median(res[False])
        print(f"{label:>24}: fast-math {fast * scale:.3f} {unit}, strict {strict * scale:.3f} "
              f"{unit}, ratio strict/fast {strict / fast:.2f}")


if __name__ == "__main__":
    main()
