"""Time of one VB sweep on GDSC (NMF, K=20): ours vs plain vectorized NumPy in the same run.

* ours: ``bnmfzoo.inference.gaussian.variational._vb_core.sweep`` + tau update + ELBO, as run
inside ``fit_vb``
  (on GDSC the missing-data patterns' Gram matrices of the partner's means, O(n K^2) per
  half-sweep plus the pattern tree; on scattered missing data the sparse residual path,
  O(|observed| K));
* dense-rank1: the same updates in plain NumPy on dense D x N masked arrays, keeping the
  residual matrix and applying a rank-1 change per column (O(D N K));
* dense-authors: the authors' formulation, recomputing R - U V^T per column (O(D N K^2)).

The authors report 0.125 s per NMF VB iteration on GDSC (supplement Table 5; the repository's
timing files give 0.094 s) on a 2017 laptop, single-threaded NumPy.
Usage: python -m benchmarks.speed.vb [--repeats 7]
"""

import argparse
import os
import time

import numpy as np

from benchmarks._common import DATA
from bnmfzoo.datasets import load_gdsc
from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.inference.gaussian.variational.vb import _update_tau, elbo
from bnmfzoo.models import exponential_gaussian

PAPER_TABLE5 = 0.125
PAPER_CODE = 0.094


def dense_sweep(X, M, S, tau, lam, rank1=True):
    """One VB sweep (A columns, W columns, tau) on dense arrays; S holds the state."""
    EA, VA, EW, VW = S["EA"], S["VA"], S["EW"], S["VW"]
    R = EA.shape[1]
    E = M * (X - EA @ EW) if rank1 else None
    for k in range(R):
        prec = tau * (M @ (VW[k] + EW[k] ** 2))
        if rank1:
            E += M * np.outer(EA[:, k], EW[k])
            resid = E
        else:
            resid = M * (X - EA @ EW + np.outer(EA[:, k], EW[k]))
        mu = (-lam + tau * (resid @ EW[k])) / prec
        EA[:, k], VA[:, k] = core.tn_moments(mu, prec)
        if rank1:
            E -= M * np.outer(EA[:, k], EW[k])
    for k in range(R):
        prec = tau * ((VA[:, k] + EA[:, k] ** 2) @ M)
        if rank1:
            E += M * np.outer(EA[:, k], EW[k])
            resid = E
        else:
            resid = M * (X - EA @ EW + np.outer(EA[:, k], EW[k]))
        mu = (-lam + tau * (EA[:, k] @ resid)) / prec
        EW[k], VW[k] = core.tn_moments(mu, prec)
        if rank1:
            E -= M * np.outer(EA[:, k], EW[k])
    # expected squared error and q(tau)
    P = EA @ EW
    E2A, E2W = VA + EA**2, VW + EW**2
    sse = np.sum(M * ((X - P) ** 2 + E2A @ E2W - EA**2 @ EW**2))
    return 1.0 + M.sum() / 2, 1.0 + sse / 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rank", type=int, default=20)
    args = parser.parse_args()
    X = load_gdsc(data_home=DATA)
    model = exponential_gaussian(X, args.rank)
    problem = glue.problem_from_model(model, method="bench")
    rng = np.random.default_rng(0)
    mus = core.init_means(problem, "random", rng)
    state = core.MomentState(problem, mus)
    for role, mu in mus.items():
        state.mu[role], state.prec[role] = mu.copy(), np.ones_like(mu)
        state.E[role], state.V[role] = core.tn_moments(mu, state.prec[role])
    state.refresh()
    _update_tau(state, state.expected_sse())
    dense = {"EA": state.E["A"].T.copy(), "VA": state.V["A"].T.copy(),
             "EW": state.E["W"].copy(), "VW": state.V["W"].copy()}
    Xd = problem.spec.X_values
    M = problem.spec.mask.astype(float)
    tau0 = state.tau

    def ours():
        core.sweep(state, core.tn_moments_rule)
        sse = state.expected_sse()
        _update_tau(state, sse)
        elbo(state, sse)

    ours()  # numba compile / warm-up
    # wall time and CPU time of this process (the latter is robust on a shared, loaded machine)
    names = ("ours (bnmfzoo)", "dense-rank1 numpy", "dense-authors numpy")
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    runs = {
        names[0]: ours,
        names[1]: lambda: dense_sweep(Xd, M, dense, tau0, 0.1, rank1=True),
        names[2]: lambda: dense_sweep(Xd, M, dense, tau0, 0.1, rank1=False),
    }
    for _ in range(args.repeats):
        for name, run in runs.items():
            t, c = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
    print(f"GDSC {X.shape}, {problem.obs.n} observed, K={args.rank}; one VB sweep "
          f"(median of {args.repeats}); load average {os.getloadavg()[0]:.1f}")
    for label, times in (("wall", wall), ("cpu", cpu)):
        base = np.median(times[names[0]])
        for name in names:
            med = np.median(times[name])
            print(f"  {label:<5}{name:<24} {med * 1e3:8.1f} ms   ratio to ours {med / base:6.2f}")
    base = np.median(cpu[names[0]])
    print(f"  paper (authors' NumPy, 2017 laptop): {PAPER_TABLE5 * 1e3:.0f} ms (Table 5), "
          f"{PAPER_CODE * 1e3:.0f} ms (repository timings); ours (cpu) / paper = "
          f"{base / PAPER_TABLE5:.2f}")


if __name__ == "__main__":
    main()
