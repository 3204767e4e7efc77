"""Which mode does a chain start in: quenched random starts against annealed ones (CCLE rank 3).

Run with ``python -m benchmarks.investigations.annealed_start [--trials 100] [--sweeps 2000]
[--beta-min 0.05] [--rungs 8]``.

``ReplicaExchangeGibbs`` starts its replicas, while PyMC tunes, from one annealed trajectory
(``anneal_start`` sweeps at inverse temperatures rising geometrically from ``beta_min`` to 1;
:func:`bnmfzoo.inference.tempering._ladder.annealed_start`). This script measures what that start
does on the problem it was made for, CCLE IC50 at rank 3, whose posterior has a broad mode (L, most
of the mass) and a narrow one of higher likelihood (H; ``benchmarks/RESULTS.md`` §3.5). Each trial
starts from the same random factors (the replica benchmark's start scale) three times and runs
``--sweeps`` sweeps:

* **quenched**: all at ``beta = 1`` (a replica started at the chain's initial point);
* **annealed**: the annealed start's path (``annealed_start``, the library's default);
* **stepwise**: ``sweeps / rungs`` sweeps at each rung of a geometric ladder of ``rungs``
  temperatures from ``beta_min`` (the first version of the annealed start),

then 200 sweeps at ``beta = 1`` whose mean log-likelihood is recorded. The end states are put in
modes by the angle between the rows of ``W`` (matched by permutation,
:func:`bnmfzoo.diagnostics.angle_distance` on ``W.T``): the representative of H is the end state
of highest mean log-likelihood, that of L the one of lowest, and each state goes to the nearer.
The script prints each state's distances and the share of each start kind in H.

Measured (24 Nov 2026, defaults): see ``benchmarks/RESULTS.md`` §3.5.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def _run(trials, sweeps, beta_min, rungs, seed):
    from bnmfzoo import datasets
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    from bnmfzoo.inference.gaussian.modes._tempering import log_likelihood, tempered_sweep
    from bnmfzoo.inference.tempering._ladder import annealed_start, geometric_ladder
    from bnmfzoo.models import exponential_gaussian
    from bnmfzoo.models._spec import get_spec

    X = datasets.load_ccle("ic50")
    R = 3
    spec = get_spec(exponential_gaussian(X, R), families="exponential_gaussian",
                    method="annealed_start")
    hyper, obs = spec.hyper, observed_entries(spec.X, spec.mask)
    D, N = X.shape
    scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
    ladder = geometric_ladder(rungs, beta_min)
    ends = []
    for t in range(trials):
        for kind in ("quenched", "annealed", "stepwise"):
            rng = np.random.default_rng([seed, t])
            st = nmf_state(rng.exponential(scale, (D, R)), rng.exponential(scale, (R, N)), 1.0,
                           None, obs)

            def sweep(s, b, rng=rng):
                tempered_sweep(s, obs, hyper, rng, b)

            t0 = time.process_time()
            if kind == "annealed":
                annealed_start(st, ladder, sweeps, sweep, lambda s: None)
            elif kind == "stepwise":
                for b in ladder[::-1]:
                    for _ in range(sweeps // rungs):
                        sweep(st, b)
            else:
                for _ in range(sweeps):
                    sweep(st, 1.0)
            ll = []
            for _ in range(200):
                sweep(st, 1.0)
                ll.append(log_likelihood(st, obs, hyper))
            ends.append(dict(trial=t, kind=kind, W=st.Wt.copy(), ll=float(np.mean(ll)),
                             cpu=time.process_time() - t0))
    return ends


def main(argv=None):
    from bnmfzoo.diagnostics import angle_distance

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--sweeps", type=int, default=2000)
    ap.add_argument("--beta-min", type=float, default=0.05)
    ap.add_argument("--rungs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    ends = _run(a.trials, a.sweeps, a.beta_min, a.rungs, a.seed)
    lls = np.array([e["ll"] for e in ends])
    rep_h, rep_l = ends[int(lls.argmax())]["W"], ends[int(lls.argmin())]["W"]
    print(f"representatives: H mean log-lik {lls.max():.0f}, L {lls.min():.0f}, "
          f"{angle_distance(rep_h, rep_l):.1f} degrees apart (max matched angle of W's rows)")
    print("trial kind      deg-to-H deg-to-L mean-loglik mode cpu_s")
    share = {"quenched": [], "annealed": [], "stepwise": []}
    for e in ends:
        dh, dl = angle_distance(e["W"], rep_h), angle_distance(e["W"], rep_l)
        mode = "H" if dh < dl else "L"
        share[e["kind"]].append(mode == "H")
        print(f"{e['trial']:5d} {e['kind']:9s} {dh:8.1f} {dl:8.1f} {e['ll']:11.0f} {mode:>4s} "
              f"{e['cpu']:5.1f}")
    for kind, h in share.items():
        print(f"{kind}: {sum(h)} of {len(h)} end in H ({np.mean(h):.2f})")


if __name__ == "__main__":
    main()
