"""How far is a large-route mode's copula from the posterior, and do the fit chains' transients
cause it? The large route (:func:`bnmfzoo.inference.large_route.large_mode_masses`, copula on)
is run up to its reference-path SMC and stopped there; for each mode, with the copula fitted to
the fit chains' draws as the route fits it (``--whole``: to every draw, each chain's start-up
transient included, as before the MSER cut), it prints

* ``log w = log pi - log q`` (up to a constant) under every 4th fit draw and under 300 exact
  draws of ``q``: their standard deviations and the Jeffreys divergence (mean under the draws
  minus mean under ``q``), the quantities that set the adaptive SMC's temperatures;
* per chain, the MSER cut of its log joint and block means (100 draws) of the mean squared
  normal score of its draws against the Gamma marginals fitted to all chains' second halves (1
  at stationarity, far above it in a start-up transient).

    nice -n 10 .venv/bin/python -m benchmarks.investigations.copula_fit_transient \\
        --data counts/sbs96_escc/ESCC_SBS96.txt --rank 4 --seed 1 [--whole]

Results: ``docs/results/masses_copula_reference_2.md`` section 31.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def _report(hfam, fitted, whole, rng):
    import bnmfzoo.inference.reference_path as rp
    from bnmfzoo.diagnostics._transient import transient_end
    from bnmfzoo.inference.kernels.gamma_copula import _scores
    from bnmfzoo.inference.kernels.gamma_fit import gamma_moment_fit

    fits, _, inside, _ = fitted
    cop = rp.reference_adapter(hfam, "hmc", rp.COPULA_LEAPFROG)
    for k, fit in enumerate(fits):
        X, chain, joint = fit[0][inside[k]], fit[2][inside[k]], fit[3][inside[k]]
        if X.shape[0] < 8:
            continue
        t = time.process_time()
        path = rp.ReferencePath(cop, cop.fit_copula(X, cop.copula_widen[0]))
        l_pi = np.array([path.loglik(cop._state(r)) for r in X[::4]])
        l_q = np.array([path.loglik(path.draw(rng)) for _ in range(300)])
        print(f"mode {k}: {X.shape[0]} draws ({'whole chains' if whole else 'after the MSER cuts'})"
              f"; sd of log w under the draws {l_pi.std():.1f}, under q {l_q.std():.1f}; Jeffreys "
              f"divergence {l_pi.mean() - l_q.mean():.1f}; {time.process_time() - t:.1f} CPU s",
              flush=True)
        second = np.concatenate([np.flatnonzero(chain == c)[np.sum(chain == c) // 2:]
                                 for c in np.unique(chain)])
        a, r = gamma_moment_fit(X[second], 1.0)
        sq = (_scores(X, a, r) ** 2).mean(1)
        for c in np.unique(chain):
            m = chain == c
            blocks = sq[m][:m.sum() // 100 * 100].reshape(-1, 100).mean(1)
            print(f"  chain {c}: MSER cut {transient_end(joint[m])} of {int(m.sum())}; mean z^2 "
                  f"per 100 draws {np.round(blocks, 2).tolist()}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="counts/sbs96_escc/ESCC_SBS96.txt",
                   help="a count matrix (a path, or one relative to the shared data folder)")
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=900.0)
    p.add_argument("--whole", action="store_true",
                   help="fit the copula to whole chains (no MSER cut), as before")
    a = p.parse_args(argv)
    from benchmarks.investigations._route_stop import run_to_the_smc

    def fit_chains(*args, real, **kw):
        if a.whole:
            kw["trim"] = False
        return real(*args, **kw)

    family, fitted, cpu = run_to_the_smc(a.data, a.rank, a.seed, budget=a.budget,
                                         fit_chains=fit_chains)
    _report(family, fitted, a.whole, np.random.default_rng(5))
    print(f"stopped at the SMC after {cpu:.0f} CPU s", flush=True)

if __name__ == "__main__":
    main()
