"""Mode masses on laurberg(0.5), sigma 0.05: replica exchange, SMC, stacking, Stein weights.

Run with ``python -m benchmarks.speed.mode_masses [--seeds 4] [--methods re smc stacking stein]``,
or ``python -m benchmarks.speed.mode_masses --default-path [--noise-seed 0] [--seeds 4]`` for
the documented default path (``ReplicaExchangeGibbs()`` defaults, 4 chains x (1000 + 20000)
steps, then ``bz.diagnostics.modes``), the AIS check beside it
(``bz.inference.mode_evidence``) and the old README recipe (4 plain Gibbs chains from
``fit_particles`` starts), per sampler seed 1..N (``benchmarks/RESULTS.md`` §3.7). Checks of
the default path's error (§3.7): ``--long-chains SEED ... --draws 200000`` (one long chain per
seed, each draw's nearest solution saved for the MCSE's calibration) and ``--ais-repeat N
--seeds S [--idata saved.nc]`` (``mode_evidence`` with AIS seeds 0..N-1 on one run's modes).

``laurberg(0.5)`` (6 x 6, rank 3, noise sd 0.05 fixed, exponential priors of rate 1) has two
exact factorizations 36.87 degrees apart. Its posterior puts almost all its mass near one of
them; the quantity compared is the **mass of the other** ("solution 1": the share of draws, or
of weight, whose basis ``A`` is nearer solution 1 by the maximum matched column angle). For each
seed (100, 101, ...) the script prints the estimate of each method:

* ``re``: ``ReplicaExchangeGibbs`` (16 rungs to 1e-3, 4 chains of 1000 + 8000 steps, the
  problem and budget of ``benchmarks/speed/replica.py --only-seeds --re-budget 1000 8000``),
  with its batch-means Monte-Carlo error: the reference, since its chains cross between the
  solutions (``excursions``) and it agrees with annealed importance sampling
  (``benchmarks/speed/ais_masses.py``; ``benchmarks/RESULTS.md`` §3.5);
* ``smc``: ``pm.sample_smc`` (1000 particles x 4 runs), the share of their pooled particles;
* ``stacking``: 8 ``GibbsNMF`` chains from random starts (1000 + 2000 sweeps) weighted by
  :func:`bnmfzoo.diagnostics.chain_weights` (Yao, Vehtari & Gelman 2022), the mass being
  ``sum_k w_k share_k``; beside it the pooled share of the same draws (equal chain weights);
* ``stein``: 50 Q-Transform particles of :func:`bnmfzoo.inference.fit_particles` with their
  valid Stein weights; beside it the uniform share of the same particles.

Stacking weighs chains by how well they predict held-out entries and Stein weights match the
local shape of the density; neither is an estimate of a mode's posterior mass, and where the
modes predict equally well (two exact factorizations) neither can tell them apart. The output
shows by how much they differ from the reference here.

Measured (24 Nov 2026, seeds 100-103; ``benchmarks/RESULTS.md`` §3.5): replica exchange 0.0049
(sd 0.0019 over seeds; the seeds agree within their errors, chi2 p = 0.17), SMC 0.25 (each
run collapses onto one solution), stacking 0.017 (nearly all weight on one chain), Stein
weights 0.62 (uniform 0.54).
"""

import argparse
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from benchmarks.speed.replica import (
    _mode_of_solutions,
    _problem,
    _starts,
    chi2_sf,
    mass_chi2,
    run_method,
)


def _nearest_sol1(A, data):
    idx, _ = _mode_of_solutions(A.reshape(-1, *A.shape[-2:]), data)
    return (idx == 0).reshape(A.shape[:-2])


def stacking_mass(prob, seed, n_chains=8):
    """Stacked and pooled mass of solution 1 from ``n_chains`` Gibbs chains."""
    import pymc as pm

    from bnmfzoo.diagnostics import add_log_likelihood, chain_weights
    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian

    model = exponential_gaussian(prob["X"], prob["R"], **prob["model_kw"])
    tune, draws = prob["budget"]["gibbs"][0], 2000
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        idata = pm.sample(draws=draws, tune=tune, step=GibbsNMF(), chains=n_chains, cores=1,
                          initvals=_starts(prob["X"], prob["R"], seed, n=n_chains),
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)
        idata = add_log_likelihood(idata, model)
        w = chain_weights(idata).values
        cpu = time.process_time() - c0
    share = _nearest_sol1(idata.posterior["A"].values, prob["data"]).mean(axis=1)
    return dict(mass=float(w @ share), pooled=float(share.mean()), cpu=cpu,
                detail=f"chain shares {np.round(share, 3).tolist()}, weights "
                       f"{np.round(w, 3).tolist()}")


def stein_mass(prob, seed, n_particles=50):
    """Stein-weighted and uniform mass of solution 1 of Q-Transform particles."""
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import exponential_gaussian

    model = exponential_gaussian(prob["X"], prob["R"], **prob["model_kw"])
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit_particles(model, n_particles=n_particles, random_seed=seed, progressbar=False)
    cpu = time.process_time() - c0
    part = res["particles"]
    near = _nearest_sol1(part["A"].values, prob["data"])
    w = part["weight"].values
    return dict(mass=float(w @ near), pooled=float(near.mean()), cpu=cpu,
                detail=f"n_eff {float(res['diagnostics']['n_eff']):.1f}")


def default_path(noise_seed, sampler_seed, draws=20000, ais=True):
    """The documented default path and the checks beside it, on ``laurberg(0.5)``, sigma 0.05.

    ``pm.sample(step=ReplicaExchangeGibbs(), draws=draws, tune=1000, chains=4)`` then
    ``bz.diagnostics.modes(idata)`` (defaults): each mode's weight and MCSE, the estimator, the
    number of visits, and the share of the mode's draws nearest its factorization; then
    ``bz.inference.mode_evidence(idata, model)`` (AIS, defaults) on the same modes.
    """
    import pymc as pm

    from bnmfzoo.datasets import laurberg
    from bnmfzoo.diagnostics import angle_distance, modes
    from bnmfzoo.inference import ReplicaExchangeGibbs, mode_evidence
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=noise_seed)
    model = exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0)
    c0 = time.process_time()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(step=ReplicaExchangeGibbs(), draws=draws, tune=1000, chains=4,
                          cores=1, random_seed=sampler_seed, progressbar=False,
                          compute_convergence_checks=False)
    cpu_re = time.process_time() - c0
    tree = modes(idata, warn=False)
    m = tree["modes"]
    sol = [int(np.argmin([angle_distance(r, s[0]) for s in d.solutions]))
           for r in m["reference"].values]
    near = _nearest_sol1(idata.posterior["A"].values, d).ravel()
    label = m["member_mode"].values.ravel()
    pure = [float(np.mean(near[label == k] == (sol[k] == 0))) for k in range(len(sol))]
    out = dict(sol=sol, weight=m["weight"].values, mcse=m["weight_mcse"].values,
               low=m["weight_low"].values, high=m["weight_high"].values,
               visits=m["n_visits"].values, estimator=m.attrs["estimator"], pure=pure,
               cpu_re=cpu_re)
    if ais:
        c0 = time.process_time()
        ev = mode_evidence(idata, model, modes_tree=tree, random_seed=sampler_seed,
                           progressbar=False)
        out.update(ais=ev["weight"].values, ais_se=ev["weight_se"].values,
                   ais_stay=ev["stay"].values, cpu_ais=time.process_time() - c0)
    return out


def nearest_solution(A, data):
    """Index of the exact factorization nearest each basis of ``A`` (..., D, R), vectorized."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    flat = _unit_l2(np.asarray(A, dtype=float).reshape(-1, *A.shape[-2:]))
    sols = _unit_l2(np.stack([s[0] for s in data.solutions]))
    d, _ = matched_angles(flat, sols)
    return d.argmin(1).reshape(A.shape[:-2]).astype(np.int8), d.min(1).reshape(A.shape[:-2])


def long_chain(noise_seed, sampler_seed, draws, out):
    """One default-path chain of ``1000 + draws`` steps; saves its draws' nearest solution.

    The same kernel as the default path (``ReplicaExchangeGibbs()`` defaults, ladder tuned
    over 1000 steps, then frozen); each draw is labelled by its nearest exact factorization
    (max matched angle). Saved to ``out`` (npz: ``label`` (draws,), ``dist``, ``round_trips``,
    ``cpu``): pieces of such a chain stand in for independent default-path runs when checking
    the Monte-Carlo error's calibration, and the whole chain estimates the sampler's own
    stationary mass far more precisely than one run.
    """
    import pymc as pm

    from bnmfzoo.datasets import laurberg
    from bnmfzoo.inference import ReplicaExchangeGibbs
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=noise_seed)
    model = exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0)
    c0 = time.process_time()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(step=ReplicaExchangeGibbs(), draws=draws, tune=1000, chains=1,
                          cores=1, random_seed=sampler_seed, progressbar=False,
                          compute_convergence_checks=False)
    cpu = time.process_time() - c0
    label, dist = nearest_solution(idata.posterior["A"].values[0], d)
    ss = idata.sample_stats
    np.savez_compressed(out, label=label, dist=dist, cpu=cpu,
                        round_trips=int(ss["round_trips"].values[0, -1]),
                        n_rungs=int(np.isfinite([ss[v].values[0, -1] for v in ss.data_vars
                                                 if str(v).startswith("beta_")]).sum()))
    return label, cpu


def analyze_long(paths):
    """Mass, autocorrelation, visits and MCSE/interval calibration from saved long chains.

    ``paths``: npz files of :func:`long_chain` (chains of any lengths). Prints the pooled share
    of solution 0 with its batch-means error (batches of 4000 draws), the integrated
    autocorrelation time of the indicator estimated from batch means of several lengths (it
    should not grow with the length once the batches are long enough), the share in the first
    draws (burn-in), the lengths of and gaps between visits, and, over pieces of 20000 / 10000
    / 5000 draws of the chains (stand-ins for independent runs), the spread of the estimates
    against their root-mean-square MCSE and the coverage of +-1 and +-2 MCSE and of the
    reported 95 % interval, all against the pooled share.
    """
    from bnmfzoo.diagnostics._modes.masses import batch_means_mcse, mass_interval

    xs = [(np.load(f)["label"] == 0).astype(float) for f in paths]
    p = float(np.concatenate(xs).mean())

    def batch_means(L):
        return np.concatenate([x[: (x.size // L) * L].reshape(-1, L).mean(1) for x in xs])

    m = batch_means(4000)
    print(f"{len(xs)} chains ({[x.size for x in xs]} draws): share of solution 0 per chain "
          f"{[round(float(x.mean()), 5) for x in xs]}, pooled {p:.5f} ± "
          f"{m.std(ddof=1) / np.sqrt(m.size):.5f}")
    for L in (500, 2000, 4000, 20000, 50000):
        m = batch_means(L)
        print(f"  batches of {L}: autocorrelation time {L * m.var(ddof=1) / (p * (1 - p)):.1f}")
    print(f"  first 1000 draws {np.mean([x[:1000] for x in xs]):.5f}, the rest "
          f"{np.concatenate([x[1000:] for x in xs]).mean():.5f}")
    lens, gaps = [], []
    for x in xs:
        d = np.diff(np.concatenate([[0.0], x, [0.0]]))
        st = np.flatnonzero(d == 1)
        lens.append(np.flatnonzero(d == -1) - st)
        gaps.append(np.diff(st))
    lens, gaps = np.concatenate(lens), np.concatenate(gaps)
    print(f"  {lens.size} visits, mean length {lens.mean():.2f} draws; gaps between visits: "
          f"mean {gaps.mean():.0f}, median {np.median(gaps):.0f}, {np.mean(gaps < 50):.2f} "
          "below 50 draws")
    for P in (20000, 10000, 5000):
        pieces = np.concatenate([x[: (x.size // P) * P].reshape(-1, P) for x in xs])
        est = pieces.mean(1)
        se = np.array([batch_means_mcse(x[None]) for x in pieces])
        lim = np.array([mass_interval(a, b, P, 19) for a, b in zip(est, se, strict=True)])
        z = np.abs(est - p) / se
        cover = np.mean((lim[:, 0] <= p) & (p <= lim[:, 1]))
        print(f"  {len(est)} pieces of {P}: sd of estimates {est.std(ddof=1):.5f}, rms MCSE "
              f"{np.sqrt(np.mean(se**2)):.5f}; within 1 MCSE {np.mean(z <= 1):.2f}, 2 MCSE "
              f"{np.mean(z <= 2):.2f}, 95 % interval {cover:.2f}")


def ais_repeat(noise_seed, sampler_seed, draws, ais_seeds, n_runs=40, n_anneal=1000,
               idata_path=None):
    """``mode_evidence`` repeated with AIS seeds ``ais_seeds`` on one default-path run.

    Prints each repeat's minor-mode mass, its delta-method error, the log-weight sd and the
    Pareto k-hat of each mode's weights, then the mass from all repeats' runs pooled (an
    estimate with ``len(ais_seeds)`` times the runs): whether single estimates scatter around
    the pooled one as their errors say, and whether the pooled one agrees with the truth.
    ``idata_path``: a saved default-path run (netCDF) to use instead of sampling one.
    """
    import pymc as pm

    from bnmfzoo.datasets import laurberg
    from bnmfzoo.diagnostics import angle_distance, modes
    from bnmfzoo.inference import ReplicaExchangeGibbs, mode_evidence
    from bnmfzoo.inference.gaussian.modes.mode_evidence import (
        _log_mean_exp_indicator,
        masses_from_log_evidence,
        pareto_k,
    )
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=noise_seed)
    model = exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0)
    if idata_path:
        import xarray as xr

        idata = xr.open_datatree(idata_path, engine="h5netcdf")
    else:
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(step=ReplicaExchangeGibbs(), draws=draws, tune=1000, chains=4,
                              cores=1, random_seed=sampler_seed, progressbar=False,
                              compute_convergence_checks=False)
    tree = modes(idata, warn=False)
    m = tree["modes"]
    sol = [int(np.argmin([angle_distance(r, s[0]) for s in d.solutions]))
           for r in m["reference"].values]
    k0 = sol.index(0) if 0 in sol else None
    print(f"noise {noise_seed} seed {sampler_seed}: modes on solutions {sol}, replica exchange "
          f"{np.round(m['weight'].values, 4).tolist()} ± "
          f"{np.round(m['weight_mcse'].values, 4).tolist()}", flush=True)
    lw, ends = [], []
    for s in ais_seeds:
        ev = mode_evidence(idata, model, modes_tree=tree, n_runs=n_runs, n_anneal=n_anneal,
                           random_seed=s, progressbar=False)
        lw.append(ev["log_weight"].values)
        ends.append(ev["end_mode"].values)
        khat = ev["pareto_k"].values if "pareto_k" in ev else [np.nan] * len(sol)
        print(f"  ais seed {s}: sol0 {float(ev['weight'][k0]):.4f} ± "
              f"{float(ev['weight_se'][k0]):.4f}; log-weight sd "
              f"{np.round(ev['log_weight_sd'].values, 2).tolist()}, k-hat "
              f"{np.round(khat, 2).tolist()}, stay {np.round(ev['stay'].values, 2).tolist()}, "
              f"log Z {np.round(ev['log_evidence'].values, 3).tolist()} ± "
              f"{np.round(ev['log_evidence_se'].values, 3).tolist()}; "
              f"cpu {ev.attrs['cpu_seconds']:.1f} s", flush=True)
    lw, ends = np.concatenate(lw, axis=1), np.concatenate(ends, axis=1)
    K = lw.shape[0]
    lz, se = zip(*[_log_mean_exp_indicator(lw[k], ends[k] == k) for k in range(K)], strict=True)
    p, dp = masses_from_log_evidence(lz, se)
    khat = [pareto_k(lw[k], ends[k] == k) for k in range(K)]
    print(f"  pooled k-hat per mode {np.round(khat, 2).tolist()}", flush=True)
    print(f"  pooled over {len(ais_seeds)} AIS seeds ({lw.shape[1]} runs per mode): sol0 "
          f"{p[k0]:.4f} ± {dp[k0]:.4f}; log Z {np.round(lz, 3).tolist()} ± "
          f"{np.round(se, 3).tolist()} (modes on solutions {sol}); max weight share per mode "
          f"{[float(np.exp(w.max() - np.logaddexp.reduce(w))) for w in lw]}", flush=True)


def plain_chains(noise_seed, sampler_seed):
    """The old README recipe: ``fit_particles`` starts, 4 Gibbs chains, ``modes``."""
    import pymc as pm

    from bnmfzoo.datasets import laurberg
    from bnmfzoo.diagnostics import angle_distance, modes
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=noise_seed)
    model = exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        starts = fit_particles(model, n_particles=4, random_seed=sampler_seed,
                               progressbar=False)["particles"]
        init = [{"A": a, "W": w} for a, w in zip(starts["A"].values, starts["W"].values,
                                                  strict=True)]
        with model:
            idata = pm.sample(draws=500, tune=200, chains=4, cores=1, initvals=init,
                              random_seed=sampler_seed, progressbar=False,
                              compute_convergence_checks=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = modes(idata)["modes"]
    sol = [int(np.argmin([angle_distance(r, s[0]) for s in d.solutions]))
           for r in m["reference"].values]
    return dict(sol=sol, weight=m["weight"].values, share=m["share"].values,
                estimator=m.attrs["estimator"],
                warned=any("NOT" in str(w.message) for w in caught))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--methods", nargs="+", default=["re", "smc", "stacking", "stein"])
    ap.add_argument("--default-path", action="store_true",
                    help="run the documented default path (replica exchange + modes, AIS "
                         "beside it) and the old README recipe instead")
    ap.add_argument("--noise-seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--long-chains", nargs="+", type=int, default=None, metavar="SEED",
                    help="run one default-path chain of 1000 + --draws steps per sampler seed "
                         "and save its draws' nearest solution to --out-dir")
    ap.add_argument("--out-dir", default="benchmarks/results/mode_masses")
    ap.add_argument("--ais-repeat", type=int, default=0, metavar="N",
                    help="one default-path run (sampler seed --seeds), then mode_evidence "
                         "with AIS seeds 0..N-1 and all their runs pooled")
    ap.add_argument("--idata", default=None, help="with --ais-repeat: a saved run (netCDF)")
    ap.add_argument("--analyze-long", nargs="+", default=None, metavar="NPZ",
                    help="analyze saved --long-chains files")
    a = ap.parse_args(argv)
    if a.analyze_long:
        analyze_long(a.analyze_long)
        return
    if a.ais_repeat:
        ais_repeat(a.noise_seed, a.seeds, a.draws, range(a.ais_repeat), idata_path=a.idata)
        return
    if a.long_chains:
        from pathlib import Path

        Path(a.out_dir).mkdir(parents=True, exist_ok=True)
        for s in a.long_chains:
            out = Path(a.out_dir) / f"long_noise{a.noise_seed}_seed{s}_{a.draws}.npz"
            label, cpu = long_chain(a.noise_seed, s, a.draws, out)
            print(f"noise {a.noise_seed} seed {s}: {a.draws} draws, share of solution 0 "
                  f"{np.mean(label == 0):.5f}, cpu {cpu:.0f} s -> {out}", flush=True)
        return
    if a.default_path:
        for s in range(1, a.seeds + 1):
            r = default_path(a.noise_seed, s, a.draws)
            line = "; ".join(
                f"sol{r['sol'][k]} {r['weight'][k]:.4f} ± {r['mcse'][k]:.4f} [95 % "
                f"{r['low'][k]:.4f}-{r['high'][k]:.4f}] ({r['visits'][k]} "
                f"visits, {r['pure'][k]:.3f} pure) AIS {r['ais'][k]:.4f} ± {r['ais_se'][k]:.4f}"
                for k in range(len(r["sol"])))
            print(f"noise {a.noise_seed} seed {s} [{r['estimator']}] {line}; cpu re "
                  f"{r['cpu_re']:.0f} s, ais {r['cpu_ais']:.0f} s", flush=True)
            p = plain_chains(a.noise_seed, s)
            print(f"  plain Gibbs (old README recipe): modes on {p['sol']}, weight "
                  f"{np.round(p['weight'], 3).tolist()}, share {np.round(p['share'], 3).tolist()}"
                  f" [{p['estimator']}], warned {p['warned']}", flush=True)
        return
    prob = _problem("laurberg05")
    prob["budget"]["re"] = (1000, 8000)
    rows = {m: [] for m in a.methods}
    re_se = []
    for s in range(a.seeds):
        seed = 100 + s
        for m in a.methods:
            if m in ("re", "smc"):
                r = run_method(m, prob, seed)
                mass = r["mass_sol1"]
                extra = (f"± {r['mcse_sol1']:.4f} ({r['excursions']} excursions)" if m == "re"
                         else f"(chain masses {r['chain_mass_sol1']})")
                cpu = r["cpu"]
                if m == "re":
                    re_se.append(r["mcse_sol1"])
            elif m == "stacking":
                r = stacking_mass(prob, seed)
                mass, cpu = r["mass"], r["cpu"]
                extra = f"pooled {r['pooled']:.4f}; {r['detail']}"
            elif m == "stein":
                r = stein_mass(prob, seed)
                mass, cpu = r["mass"], r["cpu"]
                extra = f"uniform {r['pooled']:.4f}; {r['detail']}"
            else:
                raise ValueError(f"unknown method {m!r}")
            rows[m].append(mass)
            print(f"seed {seed} {m:9s} mass(sol1) {mass:.4f} {extra} cpu {cpu:.1f} s",
                  flush=True)
    print("method    mean    sd over seeds   per seed")
    for m, v in rows.items():
        v = np.array(v)
        sd = v.std(ddof=1) if v.size > 1 else float("nan")
        print(f"{m:9s} {v.mean():.4f} {sd:.4f}   {np.round(v, 4).tolist()}")
    if len(re_se) > 1:  # do the replica-exchange seeds agree within their stated errors?
        own, null, _ = mass_chi2(rows["re"], re_se)
        k = len(re_se) - 1
        print(f"re across seeds: chi2 {null:.2f} on {k} dof with the errors at the common mass "
              f"(p = {chi2_sf(null, k):.3f}), {own:.2f} with each run's own (p = "
              f"{chi2_sf(own, k):.3f})")


if __name__ == "__main__":
    main()
