"""CPU of one SMC run from the prior along the negative binomial's rounding path: now and as before.

Run with::

    nice -n 10 python -m benchmarks.speed.nb_smc_step --data FILE --rank K \\
        [--particles 16] [--moves 5] [--seed 1]

Both runs in one process, same data, seed and settings:

* **before**: every trial ``beta`` of the search for the next step evaluates each particle's
  :meth:`~bnmfzoo.inference.counts.tempering._rounding.TemperedCounts.log_target` (its means
  at the nonzeros recomputed, O(nonzeros K)), the search bisects ``[beta, 1]`` to 1e-10
  (about 35 trials a step), and every sweep and evaluation rebuilds the rung's arrays;
* **now**: ``log_target_batch`` (means computed once per step, each trial O(nonzeros) per
  particle), the search starts from the previous step's size and stops at 2 % of the step
  (:func:`~bnmfzoo.inference.tempering.smc.next_beta_near`, about 11 trials), the last rung
  kept.

Prints each run's CPU seconds, steps, trial evaluations per step, log Z, and the ratio. The
target and the sweep are the same, so both log Z estimate the same evidence (their runs differ
only through the schedule).
"""

import argparse
import importlib
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


class _Before:
    """The rounding path as it was: per-state log targets, a fresh rung at every call."""

    def __init__(self, tempered, counter):
        self.t, self.n, self.dimension = tempered, counter, tempered.dimension

    def sweep(self, state, beta, rng):
        self.t._last_rung = None
        self.t.sweep(state, beta, rng)

    def loglik(self, state):
        return self.t.loglik(state)

    def copy(self, state):
        return self.t.copy(state)

    def log_target(self, state, beta):
        self.t._last_rung = None
        self.n[0] += 1
        return self.t.log_target(state, beta)


class _Now(_Before):
    def sweep(self, state, beta, rng):
        self.t.sweep(state, beta, rng)

    def log_target(self, state, beta):
        self.n[0] += 1
        return self.t.log_target(state, beta)

    def log_target_batch(self, states):
        f = self.t.log_target_batch(states)

        def at(beta):
            self.n[0] += len(states)
            return f(beta)

        return at


def _run(family, wrapper, particles, moves, seed):
    from bnmfzoo.inference.tempering import smc

    n = [0]
    t0 = time.process_time()
    run = smc(wrapper(family.tempered, n), family.draw_prior, particles,
              np.random.default_rng(seed), n_moves=moves)
    return time.process_time() - t0, len(run.betas) - 1, n[0] / particles, run.log_z


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--particles", type=int, default=16)
    p.add_argument("--moves", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    from benchmarks.speed.real_data_masses import _build, _read
    from bnmfzoo.inference.smc_masses import family_of_model

    smc_module = importlib.import_module("bnmfzoo.inference.tempering.smc")

    X = _read(a.data)
    out = {}
    near = smc_module.next_beta_near
    for name, wrapper in (("before", _Before), ("now", _Now)):
        family = family_of_model(_build(X, a.rank, "negative_binomial"))
        if name == "before":  # the plain bisection of every step
            smc_module.next_beta_near = (lambda lw, inc, beta, cess, step:
                                         smc_module.next_beta(lw, inc, beta, cess))
        try:
            out[name] = _run(family, wrapper, a.particles, a.moves, a.seed)
        finally:
            smc_module.next_beta_near = near
        cpu, steps, evals, log_z = out[name]
        print(f"{name}: {cpu:.1f} CPU s, {steps} steps, {evals / steps:.1f} log-target "
              f"evaluations per particle-step, log Z {log_z:.2f}", flush=True)
    print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, rank {a.rank}, {a.particles} particles x "
          f"{a.moves} sweeps: before / now = {out['before'][0] / out['now'][0]:.2f}")


if __name__ == "__main__":
    main()
