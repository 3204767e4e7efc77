"""False-failure rate of every SBC test, and the autocorrelation times its thinning meets.

Each SBC test in ``tests/`` runs one case of ``tests/_sbc_cases.py`` (a correct sampler on a tiny
model) at one fixed seed and asserts ``SBCResult.passed(alpha=0.01)``. This script runs the same
statistic over many seeds and reports

* the **false-failure rate**: the fraction of seeds a correct sampler fails, with its exact
  (Clopper-Pearson) 95% interval; the test's nominal rate is at most 1% (Bonferroni over the
  scalars of exact-size KS tests);
* a **second-level check**: per tested scalar, the KS test of its p-values across seeds against
  U(0, 1), Bonferroni-adjusted over scalars. A miscalibrated sampler or a too-small thinning
  shows here long before the failure count moves;
* the measured thinning (``ceil(n / ESS)``) and kept draws per simulation.

``--iat`` instead runs chains on simulated data sets as the test does (to the ESS target, or
``--ess-target``) and reports their autocorrelation times ``n / ESS`` (smallest bulk/tail ESS
over the tested scalars) and lengths.

Run (one process, niced; results are appended to ``benchmarks/results/sbc_<case>.jsonl`` so a
measurement can be split over several runs, and the summary covers every stored seed)::

    nice -n 10 python -m benchmarks.calibration.sbc_false_failure nmtf-ard --seeds 1000:1100
    python -m benchmarks.calibration.sbc_false_failure nmtf-ard --summary
    nice -n 10 python -m benchmarks.calibration.sbc_false_failure nmtf-ard --iat
"""

import argparse
import json
import sys
import time

import numpy as np
from scipy import stats

from benchmarks._common import RESULTS, ROOT

sys.path.insert(0, str(ROOT / "tests"))
from _sbc_cases import CASES  # noqa: E402

from bnmfzoo.diagnostics.calibration import chain_ess  # noqa: E402


def _path(case, tag=""):
    return RESULTS / f"sbc_{case}{tag}.jsonl"


def measure(case, seeds, n_sims=None, ess_target=None, thin=None, tag=""):
    c = CASES[case]
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(_path(case, tag), "a") as fh:
        for seed in seeds:
            t0 = time.perf_counter()
            r = c.run(seed, n_sims, ess_target=ess_target, thin=thin)
            rec = dict(case=case, seed=seed, n_sims=r.n_sims, ess_target=ess_target or c.ess_target,
                       thin_arg=thin or c.thin, min_p=r.min_pvalue, n_tests=r.n_tests,
                       passed=bool(r.passed(0.01)),
                       pvalues=np.concatenate([p.ravel() for p in r.pvalues.values()]).tolist(),
                       thin_median=float(np.median(r.thin)), thin_max=int(r.thin.max()),
                       kept_min=int(r.n_draws.min()), kept_median=float(np.median(r.n_draws)),
                       reached=None if r.ess is None
                       else float(np.mean(r.ess >= (ess_target or c.ess_target))),
                       seconds=time.perf_counter() - t0)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            print(f"{case} seed {seed}: min p {rec['min_p']:.3g} ({rec['n_tests']} tests) "
                  f"{'pass' if rec['passed'] else 'FAIL'}; thin median {rec['thin_median']:.0f} "
                  f"max {rec['thin_max']}; kept min {rec['kept_min']}; {rec['seconds']:.1f} s",
                  flush=True)


def summary(case, tag=""):
    recs = [json.loads(line) for line in open(_path(case, tag))]
    seeds = sorted({r["seed"] for r in recs})
    recs = list({r["seed"]: r for r in recs}.values())  # last record per seed
    n, k = len(recs), sum(not r["passed"] for r in recs)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact") if n else (np.nan, np.nan)
    P = np.array([r["pvalues"] for r in recs])  # (seeds, scalars)
    ks = np.array([stats.kstest(P[:, j], "uniform").pvalue for j in range(P.shape[1])])
    adj = min(1.0, ks.min() * P.shape[1])
    r0 = recs[0]
    print(f"{case}{tag}: {n} seeds ({seeds[0]}..{seeds[-1]}), {r0['n_sims']} simulations, "
          f"ESS target {r0['ess_target']}, thin={r0['thin_arg']}")
    print(f"  false failures {k}/{n} = {k / n:.3f} (95% CI {ci[0]:.3f}-{ci[1]:.3f}); "
          "nominal <= 0.01")
    print(f"  second level: KS of each scalar's p-values across seeds, Bonferroni-adjusted "
          f"min p = {adj:.3g} ({P.shape[1]} scalars)")
    print(f"  thinning: median {np.median([r['thin_median'] for r in recs]):.0f}, "
          f"max {max(r['thin_max'] for r in recs)}; kept draws: median "
          f"{np.median([r['kept_median'] for r in recs]):.0f}, min "
          f"{min(r['kept_min'] for r in recs)}; {np.median([r['seconds'] for r in recs]):.1f} s "
          f"per seed")
    reached = [r["reached"] for r in recs if r.get("reached") is not None]
    if reached:
        print(f"  simulations whose chain reached the ESS target: median {np.median(reached):.2f},"
              f" min {min(reached):.2f} per seed")


def iat(case, n_chains, ess_target=None, seed=0):
    c = CASES[case]
    simulate, infer = c.build(ess_target or c.ess_target)
    rng = np.random.default_rng(seed)
    taus, lengths = [], []
    for _ in range(n_chains):
        truth, data = simulate(rng)
        draws = infer(data, rng)
        n = len(next(iter(draws.values())))
        taus.append(n / chain_ess(draws, truth))
        lengths.append(n)
    taus = np.array(taus)
    print(f"{case}: n / ESS over {n_chains} chains run to ESS {ess_target or c.ess_target}: "
          f"median {np.median(taus):.1f}, quartiles {np.quantile(taus, 0.25):.1f}-"
          f"{np.quantile(taus, 0.75):.1f}, max {taus.max():.1f}; chain lengths median "
          f"{np.median(lengths):.0f}, max {max(lengths)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--seeds", default="1000:1100", help="start:stop")
    ap.add_argument("--n-sims", type=int, default=None)
    ap.add_argument("--ess-target", type=float, default=None)
    ap.add_argument("--thin", default=None, help='"ess" or a fixed integer (default: the test\'s)')
    ap.add_argument("--tag", default="", help="suffix of the results file")
    ap.add_argument("--summary", action="store_true", help="only summarize stored results")
    ap.add_argument("--iat", action="store_true", help="measure autocorrelation times")
    ap.add_argument("--chains", type=int, default=20)
    a = ap.parse_args(argv)
    if a.iat:
        iat(a.case, a.chains, a.ess_target)
        return
    if not a.summary:
        lo, hi = map(int, a.seeds.split(":"))
        thin = a.thin if a.thin in (None, "ess") else int(a.thin)
        measure(a.case, range(lo, hi), a.n_sims, a.ess_target, thin, a.tag)
    summary(a.case, a.tag)


if __name__ == "__main__":
    main()
