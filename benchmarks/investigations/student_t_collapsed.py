"""Investigation: does the collapsed Student-t precision update pay on CCLE IC50 (rank 3)?

Run with ``python -m benchmarks.investigations.student_t_collapsed [--sweeps 6000] [--reps 3]``.

The model is ``benchmarks.speed.user_model``'s ``student``. After 3,000 sweeps from a random
start, the numeric sweep (``weighted_nmf_sweep``) runs ``--sweeps`` sweeps from that state
``--reps`` times with and without ``collapsed_tau=True`` (alternating, fresh generators), and
then the same with ``A`` and ``W`` held fixed (only ``lambda`` and ``tau`` updated).
``--burn-collapsed`` burns in with the collapsed update, which from the same seed ends in
another mode (squared error about 52,000 instead of 43,600), where the answer differs. Printed:
effective draws of tau per sweep, lag-1 autocorrelation, milliseconds per sweep, ESS per CPU
second, and the medians over the repeats.
"""

import argparse
import copy
import time

import numpy as np

from benchmarks._common import DATA


def main():
    import arviz as az

    from benchmarks.speed.user_model import user_model
    from bnmfzoo.datasets import load_ccle
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    from bnmfzoo.inference.gaussian.priors._gibbs_prior import plan_from_factorization
    from bnmfzoo.inference.gaussian.priors._weighted_core import weighted_nmf_sweep
    from bnmfzoo.models._recognize import try_recognize

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=6000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--burn-collapsed", action="store_true",
                        help="burn in with collapsed_tau=True (lands in another mode)")
    parser.add_argument("--only-full", action="store_true", help="skip the fixed-A, W case")
    args = parser.parse_args()
    X = load_ccle("ic50", data_home=DATA)
    f, _ = try_recognize(user_model(X, 3, "student"))
    plan, obs = plan_from_factorization(f), observed_entries(f.entries)
    rng = np.random.default_rng(2)
    D, N = X.shape
    st0 = nmf_state(rng.gamma(2, 1, (D, 3)) * 0.3, rng.gamma(2, 1, (3, N)) * 0.3, 1.0, None, obs)
    for _ in range(3000):
        weighted_nmf_sweep(st0, obs, plan, rng, rates={}, update={"A", "W", "tau"},
                           collapsed_tau=args.burn_collapsed)
    print(f"start: tau {st0.tau:.4f}, squared error {float((st0.resid ** 2).sum()):.0f}")
    for update in ({"A", "W", "tau"},) + (() if args.only_full else ({"tau"},)):
        res = {False: [], True: []}
        for rep in range(args.reps):
            for flag in (False, True):
                st, r = copy.deepcopy(st0), np.random.default_rng(100 + rep)
                taus = np.empty(args.sweeps)
                c = time.process_time()
                for s in range(args.sweeps):
                    weighted_nmf_sweep(st, obs, plan, r, rates={}, update=update,
                                       collapsed_tau=flag)
                    taus[s] = st.tau
                cpu = time.process_time() - c
                ess = float(az.ess(taus[None]))
                lag1 = float(np.corrcoef(taus[1:], taus[:-1])[0, 1])
                res[flag].append((ess / args.sweeps, lag1, 1e3 * cpu / args.sweeps, ess / cpu))
                print(f"update {sorted(update)} rep {rep} collapsed={flag}: ESS/sweep "
                      f"{ess / args.sweeps:.3f}, lag-1 {lag1:.2f}, {1e3 * cpu / args.sweeps:.2f} "
                      f"ms/sweep, ESS/CPU-s {ess / cpu:.1f}, mean tau {taus.mean():.4f}",
                      flush=True)
        med = {k: np.median(np.array(v), axis=0) for k, v in res.items()}
        for k, m in med.items():
            print(f"  median, collapsed={k}: ESS/sweep {m[0]:.3f}, lag-1 {m[1]:.2f}, "
                  f"{m[2]:.2f} ms/sweep, ESS/CPU-s {m[3]:.1f}")
        print(f"  ESS per CPU second of tau, collapsed / plain: {med[True][3] / med[False][3]:.2f}")


if __name__ == "__main__":
    main()
