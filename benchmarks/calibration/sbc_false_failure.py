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

Cases: every case of ``tests/_sbc_cases.py`` (the tests that run them: ``test_gibbs_sbc.py``,
``test_calibration.py``, ``test_bernoulli_gibbs.py``), and the SBC tests whose problems are
defined in their own test modules: ``recognize-<config>`` (``test_recognize_sbc.py``),
``re+moves``, ``gibbs+moves``, ``re``, ``re-ard+rescale`` and ``re-long``,
``re-long+moves`` (``test_replica_exchange.py``), all thinned by measured ESS, and
``compound-sigma`` (``test_recognize_sbc.py``, ``pm.sample()``'s compound step GibbsNMF +
GibbsNoiseSD, driven directly on a model compiled once) and ``compound-sigma-nuts`` (the same
with NUTS on sigma),
each built by the test module's own ``make_sbc`` so the statistic is exactly the test's.

Run (one process, niced; results are appended to
``benchmarks/calibration/results/sbc_<case>.jsonl`` (committed) so a measurement can be split
over several runs, and the summary covers every stored seed)::

    nice -n 10 python -m benchmarks.calibration.sbc_false_failure nmtf-ard --seeds 1000:1100
    python -m benchmarks.calibration.sbc_false_failure nmtf-ard --summary
    nice -n 10 python -m benchmarks.calibration.sbc_false_failure nmtf-ard --iat
    nice -n 10 python -m benchmarks.calibration.sbc_false_failure re+moves --iat  # fixed thin

For a fixed-thinning case ``--iat`` runs the test's chain unthinned (``--iat-sweeps`` draws after
its burn-in) and reports each chain's autocorrelation time in sweeps, ``n / ESS`` (smallest
bulk/tail ESS over the tested scalars), and the worst scalar, to set against the thinning.
"""

import argparse
import importlib
import inspect
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks._common import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from _sbc_cases import CASES  # noqa: E402

from bnmfzoo.diagnostics import sbc  # noqa: E402
from bnmfzoo.diagnostics.calibration import chain_ess, ess_bulk_tail  # noqa: E402

RESULTS = Path(__file__).parent / "results"


@dataclass(frozen=True)
class TestModuleCase:
    """An SBC test whose problem is defined in its test module (``thin=None``: ``infer`` thins
    by a fixed number of sweeps; ``"ess"``: by the measured ESS of each chain).

    ``make(**kw)`` is the module's ``make_sbc`` with the test's arguments; ``chain_kw`` turns its
    ``infer`` into an unthinned chain for ``--iat``.
    """

    module: str
    make: str
    kwargs: dict
    n_sims: int = 100
    thin: object = None
    ess_target: float = None
    chain_kw: dict = None

    def build(self, _ess_target=None, **over):
        mod = importlib.import_module(self.module)
        return getattr(mod, self.make)(**{**self.kwargs, **over})

    @property
    def inner_thin(self):
        """The thinning the test's ``infer`` applies (its ``thin`` argument; None: by ESS)."""
        mod = importlib.import_module(self.module)
        par = inspect.signature(getattr(mod, self.make)).parameters
        return self.kwargs.get("thin", par["thin"].default if "thin" in par else None)

    def run(self, seed, n_sims=None, *, ess_target=None, thin=None):
        simulate, infer = self.build()[:2]
        return sbc(simulate, infer, n_sims=n_sims or self.n_sims, thin=thin or self.thin,
                   random_seed=seed, progressbar=False)


def _recognize(config):
    return TestModuleCase("test_recognize_sbc", "make_sbc", dict(config=config), thin="ess",
                          ess_target=30, chain_kw=dict(thin=1))


def _replica(betas, moves, ard=False, n_sims=100, **kw):
    return TestModuleCase("test_replica_exchange", "make_sbc",
                          dict(betas=betas, moves=moves, ard=ard, **kw), n_sims, thin="ess",
                          ess_target=30, chain_kw=dict(thin=1))


_L2, _L3, _L4 = (1.0, 0.4), (1.0, 0.5, 0.25), (1.0, 0.6, 0.3, 0.15)
_MOVES = ("rescale", "qtransform")
TEST_MODULE_CASES = {
    **{f"recognize-{c}": _recognize(c)
       for c in ("halfnormal_ard", "truncnormal_entry_rates", "row_rates_fixed_sigma",
                 "shared_scalar_transposed")},
    "re+moves": _replica(_L2, _MOVES),  # test_sbc_replica_exchange, seed 32
    "gibbs+moves": _replica((1.0,), _MOVES),  # seed 33
    "re": _replica(_L3, ()),  # test_sbc_replica_exchange_more (slow), seed 31
    "re-ard+rescale": _replica(_L3, ("rescale",), True),  # seed 34
    # test_sbc_replica_exchange_long (slow), 1000 sims, seed 41
    "re-long": _replica(_L4, (), n_sims=1000, burn=300),
    "re-long+moves": _replica(_L4, _MOVES, n_sims=1000, burn=300),
    # test_nmtf_priors.py::test_sbc_nmtf_priors (GibbsNMTF with user priors), seeds 51, 52
    # (no --iat: its make_sbc has no fixed-thinning mode)
    **{f"nmtf-priors-{c}": TestModuleCase("test_nmtf_priors", "make_sbc", dict(config=c),
                                          thin="ess", ess_target=30)
       for c in ("mixed", "rates_fixed_sigma")},
    # test_mode_jump.py::test_sbc_gibbs_with_mode_jumps (slow), seed 35: a Gibbs sweep and an
    # annealed mode jump per iteration (no --iat: its make_sbc has no fixed-thinning mode)
    "gibbs+jumps": TestModuleCase("test_mode_jump", "make_jump_sbc", {}, thin="ess",
                                  ess_target=30),
    # test_sbc_sigma_halfnormal_compound_step (slow), seed 41: pm.sample()'s assignment
    # (GibbsNMF + GibbsNoiseSD), model and steps compiled once, chains run to ESS 30
    "compound-sigma": TestModuleCase("test_recognize_sbc", "make_sigma_sbc", {}, thin="ess",
                                     ess_target=30, chain_kw=dict(thin=1)),
    # the same with PyMC's NUTS on sigma (GibbsNMF + NUTS, pm.sample's choice before
    # GibbsNoiseSD was registered)
    "compound-sigma-nuts": TestModuleCase("test_recognize_sbc", "make_sigma_sbc",
                                          {"steps": "nuts"}, thin="ess", ess_target=30,
                                          chain_kw=dict(thin=1)),
}
ALL_CASES = {**CASES, **TEST_MODULE_CASES}


def _path(case, tag=""):
    return RESULTS / f"sbc_{case}{tag}.jsonl"


def _scalar_names(r):
    return [f"{name}{list(ix) if ix else ''}" for name, p in r.pvalues.items()
            for ix in np.ndindex(p.shape)]


def measure(case, seeds, n_sims=None, ess_target=None, thin=None, tag=""):
    c = ALL_CASES[case]
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(_path(case, tag), "a") as fh:
        for seed in seeds:
            t0 = time.perf_counter()
            r = c.run(seed, n_sims, ess_target=ess_target, thin=thin)
            rec = dict(case=case, seed=seed, n_sims=r.n_sims, ess_target=ess_target or c.ess_target,
                       thin_arg=thin or c.thin or f"fixed {getattr(c, 'inner_thin', '?')}",
                       min_p=r.min_pvalue, n_tests=r.n_tests,
                       passed=bool(r.passed(0.01)),
                       pvalues=np.concatenate([p.ravel() for p in r.pvalues.values()]).tolist(),
                       scalars=_scalar_names(r),
                       thin_median=float(np.median(r.thin)), thin_max=int(r.thin.max()),
                       kept_min=int(r.n_draws.min()), kept_median=float(np.median(r.n_draws)),
                       reached=None if r.ess is None
                       else float(np.mean(r.ess >= (ess_target or c.ess_target))),
                       seconds=time.perf_counter() - t0)
            if not rec["passed"]:  # keep what a failure needs to be looked at
                rec["pit"] = np.concatenate([u.reshape(r.n_sims, -1) for u in r.pit.values()],
                                            axis=1).tolist()
                rec["thin"] = r.thin.tolist()
                rec["ess"] = None if r.ess is None else r.ess.tolist()
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
    for r in recs:
        if not r["passed"]:
            j = int(np.argmin(r["pvalues"]))
            name = r["scalars"][j] if "scalars" in r else f"scalar {j}"
            print(f"  failed: seed {r['seed']}, {name} p = {r['pvalues'][j]:.2g}")
    reached = [r["reached"] for r in recs if r.get("reached") is not None]
    if reached:
        print(f"  simulations whose chain reached the ESS target: median {np.median(reached):.2f},"
              f" min {min(reached):.2f} per seed")


def iat_fixed(case, n_chains, sweeps, seed=0):
    """Autocorrelation times (sweeps) of a fixed-thinning test's chain, unthinned."""
    c = TEST_MODULE_CASES[case]
    simulate, infer = c.build(**c.chain_kw, n_draws=sweeps)[:2]
    rng = np.random.default_rng(seed)
    taus, worst = [], {}
    for _ in range(n_chains):
        truth, data = simulate(rng)
        draws = infer(data, rng)
        per = {}
        for name in truth:
            x = np.asarray(draws[name], float).reshape(sweeps, -1).T
            bulk, tail = ess_bulk_tail(x)
            per[name] = sweeps / np.minimum(bulk, tail).min()
        taus.append(max(per.values()))
        for name, t in per.items():
            worst.setdefault(name, []).append(t)
    taus = np.array(taus)
    print(f"{case}: n / ESS (sweeps) over {n_chains} chains of {sweeps} sweeps after burn-in: "
          f"median {np.median(taus):.1f}, quartiles {np.quantile(taus, 0.25):.1f}-"
          f"{np.quantile(taus, 0.75):.1f}, max {taus.max():.1f}; test thinning "
          f"{c.thin if c.thin == 'ess' else c.inner_thin}")
    print("  per quantity, median (max) over chains: " + ", ".join(
        f"{k} {np.median(v):.1f} ({max(v):.1f})" for k, v in worst.items()))


def compare_paths(n_data=3000, n_sweeps=3, seed=123):
    """Gram against residual NMF-ARD path: same start, same generator, ``n_sweeps`` sweeps on
    each of ``n_data`` simulated data sets of the SBC case (half started from the truth, half
    from a prior draw); prints the largest relative difference of any drawn value."""
    import _sbc_cases as sc

    from bnmfzoo.inference.gaussian.gibbs import _core as gc

    hyper = {**sc.NMF_HYPER, "ard": True}
    rng = np.random.default_rng(seed)
    worst = 0.0
    for s in range(n_data):
        p = sc._nmf_prior(rng, hyper)
        X = p["A"] @ p["W"] + rng.normal(size=(sc.D, sc.N)) / np.sqrt(p["tau"])
        X[~sc.MASK] = np.nan
        obs = gc.observed_entries(X)
        p0 = sc._nmf_prior(rng, hyper) if s % 2 else p
        out = []
        for kernel in ("gram", "residual"):
            st = gc.nmf_state(p0["A"].copy(), p0["W"].copy(), p0["tau"], p0["lambda_"].copy(),
                              obs)
            r = np.random.default_rng(s)
            for _ in range(n_sweeps):
                gc.nmf_sweep(st, obs, hyper, r, kernel=kernel)
            out.append(np.r_[st.A.ravel(), st.W.ravel(), st.tau, st.lambda_])
        worst = max(worst, float(np.max(np.abs(out[0] - out[1]) / np.abs(out[0]))))
    print(f"NMF-ARD Gram vs residual path, {n_sweeps} sweeps from the same state and generator "
          f"on {n_data} simulated data sets: largest relative difference {worst:.2g}")


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
    ap.add_argument("case", choices=sorted(ALL_CASES))
    ap.add_argument("--seeds", default="1000:1100", help="start:stop")
    ap.add_argument("--n-sims", type=int, default=None)
    ap.add_argument("--ess-target", type=float, default=None)
    ap.add_argument("--thin", default=None, help='"ess" or a fixed integer (default: the test\'s)')
    ap.add_argument("--tag", default="", help="suffix of the results file")
    ap.add_argument("--summary", action="store_true", help="only summarize stored results")
    ap.add_argument("--iat", action="store_true", help="measure autocorrelation times")
    ap.add_argument("--chains", type=int, default=20)
    ap.add_argument("--iat-sweeps", type=int, default=2000)
    ap.add_argument("--compare-paths", action="store_true",
                    help="NMF-ARD: Gram and residual paths on the same generator")
    a = ap.parse_args(argv)
    if a.compare_paths:
        compare_paths()
        return
    if a.iat and a.case in TEST_MODULE_CASES:
        iat_fixed(a.case, a.chains, a.iat_sweeps)
        return
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
