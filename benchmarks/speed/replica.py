"""Benchmark: crossing NMF's modes — Gibbs, replica exchange (+ symmetry moves), NUTS, SMC.

Run with ``python -m benchmarks.speed.replica [--problems ccle3 laurberg05 ...] [--full]``.

For each problem, every method runs 4 chains from the same 4 random starts (``A``, ``W``
exponential with mean ``sqrt(mean(X) / R)``; NUTS and SMC start as PyMC starts them) in one
process, one BLAS thread, and the script prints per method: CPU seconds, the largest R-hat
over ``tau`` and three ``A @ W`` entries, the bulk ESS per CPU second of each, the ESS per
CPU second of the column sum ``A[:, 0].sum()`` (``scale``: a direction only the symmetry
moves act on directly), and the posterior mass of each mode (``bnmfzoo.diagnostics.modes``);
for ``laurberg`` also the share of draws nearer the first known factorization, with the larger
of two Monte-Carlo errors (ESS of the indicator; Poisson error on the number of excursions
into the rarer mode).

Methods (budgets per chain, stated in the table):

* ``gibbs``: ``GibbsNMF``;
* ``gibbs+sym``: ``[GibbsNMF(), SymmetryMoves(moves=("rescale", "qtransform"))]``;
* ``re``: ``ReplicaExchangeGibbs`` with the problem's ladder (``n_replicas``, ``beta_min``);
* ``re+sym``: the same with ``symmetry=("rescale", "qtransform")``;
* ``nuts``: ``pm.sample(nuts_sampler="pymc")`` under ``pymc_default_steps()``, smaller budget;
* ``smc``: ``pm.sample_smc`` (4 independent SMC runs as chains), ``draws`` particles.
* ``jumps``: ``ReplicaExchangeGibbs(n_replicas=1, mode_jumps=True)``: Gibbs sweeps and an
  annealed mode jump every 10 steps (:mod:`bnmfzoo.inference.gaussian.modes._mode_jump`);
* ``re+jumps``: the problem's ladder with the same jumps on the cold replica;
* ``gibbs+jumps``: ``[GibbsNMF(), ModeJumps()]`` (the same jumps as a step of their own);
  ``gibbs+jumps+rescale`` with ``ModeJumps(rescale=True)``.

Measured (23 Nov 2026, 2 shared cores, CPU seconds, seed 11 unless stated; the outputs of the
second round are in ``benchmarks/investigations/logs/`` with their exact commands):

* ccle3: gibbs max R-hat 1.089, ESS/s of tau 8.7 (4 s); re (48 replicas, beta_min 0.15)
  max R-hat 1.0041, ESS/s of tau 39 (74 s); re+sym 1.056, 0.4 (188 s); nuts (500 + 500)
  1.086, 1.3 (31 s); smc (500 particles x 4 runs) did not finish in 407 CPU s, nor did
  smc with 100 particles x 4 runs in 600 s of wall time (``--smc-draws 100``).
  **Not robust across seeds**: re with seeds 11, 12, 13, 14 gives max R-hat 1.0041, 1.0906,
  1.0133, 1.0034 (75-81 CPU s each); ``modes`` puts all four chains in one mode for 11, 13,
  14 and two chains each in two modes 22 degrees apart for 12. Why (seed 12, tracked replica
  by replica in ``logs/ccle3_diagnosis/``): swaps are accepted at 0.45, the
  beta 0.15 replica is diffuse (48 degrees from both modes), but only ~1 replica per 800
  steps travels from the hottest rung to beta = 1, so the cold chains change mode about once
  per several thousand steps; R-hat <= 1.01 needs ~100 switches per chain (~2.5 CPU hours).
  24 rungs to beta 0.25 and 4 sweeps per swap were both worse per CPU second.
* ccle3, mode jumps (24 Nov 2026; ``--methods gibbs re gibbs+jumps nuts --seed 11``, then
  ``--methods gibbs+jumps --seed S``): ``gibbs+jumps`` max R-hat 1.0092 / 1.0055 / 1.0079 /
  1.0026 for seeds 11-14 (287-301 CPU s each; ESS/s of tau 14-17; ``modes`` one mode in
  each), where ``re`` gave 1.0041 / 1.0906 / 1.0133 / 1.0034. Same run, seed 11: gibbs
  1.0887 (2.9 s), re 1.0041 (63.5 s), nuts 1.0858 (26.3 s). The posterior's broad mode holds
  most of the mass and tempering condenses only into it (``benchmarks/RESULTS.md`` §3.5), so a
  chain started in the narrow mode needs the jumps.
* ccle3, replica exchange with the annealed start (``anneal_start=2000``, 24 Nov 2026,
  ``--methods re --seed S`` for S = 11-18, the same with ``--ladder 8 0.05`` (the step's
  default until 26 Nov 2026), then ``--methods gibbs re nuts --seed 11``): max R-hat 1.0014 /
  1.0008 / 1.0021 / 1.0016 / 1.0013 / 1.0018 / 1.0013 / 1.0014 (67-74 CPU s, ESS/s of tau
  61-80) and, that ladder, 1.0040 / 1.0024 / 1.0035 / 1.0026 / 1.0039 / 1.0038 / 1.0024 / 1.0036
  (14-19 CPU s, swap rate 0.00: the annealed start does the work); ``modes`` one mode in
  each. Same run: gibbs 1.0887 (2.9 s), nuts 1.0858 (33.4 s); smc (``--smc-draws 100``) did
  not finish in 60 minutes of wall time. Without it seed 12 gave 1.0906 (above): its replicas
  all started at the random point and one quenched into the narrow mode.
* laurberg05: gibbs 1.286 (chains stay in their mode); re 1.0004, mass of solution 1
  0.003; smc (1000 particles) 2.03. Mass of solution 1, four re seeds (100-103), 4 x (1000 +
  4000) steps, batch-means errors (5 batches per chain): 0.0046 +- 0.0029, 0.0011 +- 0.0009,
  0.0051 +- 0.0016, 0.0073 +- 0.0021; chi2 6.48 on 3 dof (p = 0.09) with the errors at the
  common mass (:func:`mass_chi2`), 10.6 (p = 0.014) with each run's own error. Twice as
  long (``--re-budget 1000 8000``, same seeds, ~32 CPU s each): 0.0044 +- 0.0017, 0.0019 +-
  0.0008, 0.0052 +- 0.0013, 0.0059 +- 0.0014; chi2 6.27 (p = 0.099) at the common mass, 8.76
  (p = 0.033) with own errors: only marginal agreement (seed 101 stays low). Earlier
  errors (indicator ESS / excursion count): chi2 12.7. ``modes(keep_rare=True)`` finds the
  rare mode (weights 0.995 / 0.005 etc., matching the nearest-solution share). Four smc seeds
  (1000 particles): 0.476, 0.001, 0.033, 0.487 (each SMC run collapses onto one mode).
* gdsc5 (16 replicas to beta 0.3, 4 x (200 + 400)): gibbs 1.0056, ESS/s of tau 452 (6.5 s);
  re 1.0218, 54 (19.9 s) with swap rate 0.01: this ladder is far too coarse (79k observed
  entries), so re only costs more here. nuts (100 + 100, 24 Nov 2026) 1.0142, ESS/s of tau
  2.2 (165 s); smc (100 particles x 4) did not finish in 900 s of wall time on the loaded
  machine (``logs/gdsc5_swimmer_nuts_smc.txt``).
* swimmer (138 active pixels x 256, rank 16; 16 replicas to beta 0.05, 4 x (300 + 600)):
  gibbs 1.0043, ESS/s of tau 373 (7.2 s); re 1.0028, 44 (39.4 s), swap rate 0.00 (no
  exchange at all). nuts (200 + 200, 24 Nov 2026) 1.4818, ESS/s of tau 0.1 (150 s); smc (200
  particles x 4) did not finish in 900 s of wall time on the loaded machine.
* laurberg05_1e3: gibbs 1.292; re (40 replicas, beta_min 1e-6) 1.0006, mass 0.0077 +- 0.0020
  (30 excursions); smc 2.84 (each run on one mode, 199 s); nuts did not finish in time.

Problems: ``ccle3`` (CCLE IC50, rank 3), ``gdsc5`` (GDSC IC50, rank 5; ``--full`` only; a
short 16-rung ladder to beta 0.3 and short budgets so that a run fits in 10 minutes: it does
not cross GDSC's modes, which need ~100 replicas), ``laurberg05`` / ``laurberg05_1e3``
(``laurberg(0.5)`` with sigma 0.05 / 1e-3, rank 3), ``swimmer`` (``--full`` only; the 138
pixels non-zero in some image, all 256 images, rank 16: a subset, see ``_problem``).
``--seeds 4`` reruns ``re`` and ``smc`` on ``laurberg05`` with 4 seeds and prints the
mode-mass estimates with their errors.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks._common import Clock  # noqa: F401  (sets one BLAS thread before numpy work)

ENTRIES = ((400, 20), (0, 0), (100, 10))


def _problem(name):
    from bnmfzoo import datasets

    if name == "ccle3":
        X = datasets.load_ccle("ic50")
        return dict(X=X, R=3, entries=ENTRIES, ladder=(48, 0.15), data=None,
                    budget=dict(gibbs=(1000, 2000), re=(1000, 2000), nuts=(500, 500),
                                smc=500))
    if name == "gdsc5":
        # a short ladder and budget: a 4-chain run must stay under 10 minutes on this machine
        # (the ladder to cross GDSC's modes needs ~100 replicas, Nov 2026 measurement)
        X = datasets.load_gdsc()
        return dict(X=X, R=5, entries=((400, 20), (0, 0), (100, 10)), ladder=(16, 0.3),
                    data=None, budget=dict(gibbs=(500, 1000), re=(200, 400), nuts=(100, 100),
                                           smc=100))
    if name.startswith("laurberg05"):
        sigma = 1e-3 if name.endswith("1e3") else 0.05
        data = datasets.laurberg(0.5, sigma=sigma, random_seed=0)
        ladder = (40, 1e-6) if sigma < 0.01 else (16, 1e-3)
        # the noise is known (sigma fixed) and the priors are on the data's scale: with a
        # Gamma(1, 1) prior on tau the posterior of these 36 entries prefers poor fits
        # (tau ~ 5) that are near neither factorization
        return dict(X=data.X, R=3, entries=((0, 0), (2, 3), (5, 5)), ladder=ladder, data=data,
                    model_kw=dict(sigma=sigma, lambda_=1.0),
                    budget=dict(gibbs=(1000, 4000), re=(1000, 4000), nuts=(500, 500),
                                smc=1000))
    if name == "swimmer":
        # the 138 pixels that are non-zero in some noiseless image, all 256 images, R = 16: the
        # other 886 pixels are zero in every image (their rows of A only shrink to zero), and
        # the full 1024 x 256 matrix makes a 4-chain replica-exchange run far longer than the
        # 10 minutes a measurement here may take
        clean = np.asarray(datasets.swimmer(sigma=0.0).X)
        data = datasets.swimmer(sigma=0.05, random_seed=0)
        X = np.asarray(data.X)[clean.max(axis=1) > 0]
        return dict(X=X, R=int(data.A.shape[1]), entries=((0, 0), (50, 10), (100, 100)),
                    ladder=(16, 0.05), data=None,
                    budget=dict(gibbs=(500, 1000), re=(300, 600), nuts=(200, 200), smc=200))
    raise ValueError(f"unknown problem {name!r}")


def _starts(X, R, seed, n=4):
    rng = np.random.default_rng(seed)
    D, N = X.shape
    scale = np.sqrt(np.nanmean(np.asarray(X)) / R)
    return [{"A": rng.exponential(scale, (D, R)), "W": rng.exponential(scale, (R, N))}
            for _ in range(n)]


def _mode_of_solutions(A, data):
    """Index of the nearest known factorization (max matched angle) for each draw."""
    from bnmfzoo.diagnostics import angle_distance

    sols = [s[0] for s in data.solutions]
    d = np.array([[angle_distance(a, s) for s in sols] for a in A])
    return d.argmin(axis=1), d.min(axis=1)


def batch_means_se(ind, n_batches=5):
    """Monte-Carlo standard error of the mean of ``ind`` (chain, draw): batch means.

    Each chain is cut into ``n_batches`` contiguous batches; the error is the standard deviation
    of all ``C * n_batches`` batch means over ``sqrt(C * n_batches)``. With batches much longer
    than the time between visits to the rarer mode the batch means are nearly independent, so
    the error does not rest on the ESS of a rare, bursty indicator series or on counting
    excursions as independent events (with those errors four laurberg seeds gave a chi2 of
    12.7 on 3 dof). With only a handful of visits the error is itself uncertain (a run's own
    error shrinks with its own visit count: :func:`mass_chi2` evaluates it at the common
    mass). Also returns the error from the spread of the chain means
    (independent chains, ``C - 1`` dof).
    """
    C, S = ind.shape
    B = int(n_batches)
    L = S // B
    means = ind[:, :B * L].reshape(C, B, L).mean(axis=-1).ravel()
    se_b = float(means.std(ddof=1) / np.sqrt(means.size))
    se_c = float(ind.mean(axis=1).std(ddof=1) / np.sqrt(C)) if C > 1 else float("nan")
    return se_b, se_c


def _metrics(idata, prob, cpu):
    import arviz as az

    post = idata.posterior
    A, W = post["A"].values, post["W"].values
    qs = {"tau": post["tau"].values} if "tau" in post else {}
    for i, j in prob["entries"]:
        qs[f"AW[{i},{j}]"] = np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j])
    rhat = {k: float(az.rhat(v)) for k, v in qs.items()}
    ess = {k: float(az.ess(v)) for k, v in qs.items()}
    # a direction only the symmetry moves change directly: the scale of A's first column
    # (not identified; within-mode mixing along the scale ridge), not part of max R-hat
    scale = A[:, :, :, 0].sum(axis=-1)
    out_scale = float(az.ess(scale)) / cpu
    out = dict(cpu=cpu, rhat=rhat, ess_per_s={k: e / cpu for k, e in ess.items()},
               ess=ess, scale_ess_per_s=out_scale)
    try:
        from bnmfzoo.diagnostics import modes

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = modes(idata, warn=False, keep_rare=True)["modes"]
        out["modes"] = np.round(m["weight"].values, 3).tolist()
    except Exception as err:  # report, do not hide
        out["modes"] = f"modes() failed: {err}"
    if prob["data"] is not None and prob["data"].solutions and len(prob["data"].solutions) > 1:
        C, S = A.shape[:2]
        idx, _ = _mode_of_solutions(A.reshape(C * S, *A.shape[2:]), prob["data"])
        ind = (idx == 0).astype(float).reshape(C, S)
        p = ind.mean()
        out["mass_sol1"] = p
        out["mcse_sol1"], out["mcse_chains"] = batch_means_se(ind)
        rare = ind if p <= 0.5 else 1.0 - ind
        out["excursions"] = int((np.diff(rare, axis=1) > 0).sum() + rare[:, 0].sum())
        out["chain_mass_sol1"] = ind.mean(axis=1).round(3).tolist()
    return out


def run_method(method, prob, seed, *, progressbar=False):
    import pymc as pm

    from bnmfzoo.inference import GibbsNMF, ModeJumps, ReplicaExchangeGibbs, SymmetryMoves
    from bnmfzoo.models import exponential_gaussian

    model = exponential_gaussian(prob["X"], prob["R"], **prob.get("model_kw", {}))
    budget = prob["budget"]
    starts = _starts(prob["X"], prob["R"], seed)
    kw = dict(chains=4, cores=1, random_seed=seed, progressbar=progressbar,
              compute_convergence_checks=False)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        if method == "gibbs":
            tune, draws = budget["gibbs"]
            idata = pm.sample(draws=draws, tune=tune, step=GibbsNMF(), initvals=starts, **kw)
        elif method == "gibbs+sym":
            tune, draws = budget["gibbs"]
            step = [GibbsNMF(), SymmetryMoves(moves=("rescale", "qtransform"))]
            idata = pm.sample(draws=draws, tune=tune, step=step, initvals=starts, **kw)
        elif method in ("re", "re+sym"):
            tune, draws = budget["re"]
            n, bmin = prob["ladder"]
            sym = ("rescale", "qtransform") if method == "re+sym" else ()
            step = ReplicaExchangeGibbs(n_replicas=n, beta_min=bmin, symmetry=sym)
            idata = pm.sample(draws=draws, tune=tune, step=step, initvals=starts, **kw)
        elif method in ("gibbs+jumps", "gibbs+jumps+rescale"):
            tune, draws = budget["re"]
            step = [GibbsNMF(), ModeJumps(rescale=method.endswith("rescale"))]
            idata = pm.sample(draws=draws, tune=tune, step=step, initvals=starts, **kw)
            ss = idata.sample_stats
            out_jumps = dict(jump_rate=float(np.nanmean(ss["jump_accept"].values)),
                             n_refs=ss["n_references"].values[:, -1].tolist())
        elif method in ("re+jumps", "jumps"):
            # annealed mode jumps on the cold replica (with the problem's ladder, or alone)
            tune, draws = budget["re"]
            n, bmin = prob["ladder"] if method == "re+jumps" else (1, 0.5)
            step = ReplicaExchangeGibbs(n_replicas=n, beta_min=bmin, mode_jumps=True)
            idata = pm.sample(draws=draws, tune=tune, step=step, initvals=starts, **kw)
            ss = idata.sample_stats
            out_jumps = dict(jump_rate=float(np.nanmean(ss["jump_accept"].values)),
                             n_refs=ss["n_references"].values[:, -1].tolist())
        elif method == "nuts":
            tune, draws = budget["nuts"]
            from bnmfzoo.inference import pymc_default_steps

            with pymc_default_steps():  # NUTS, not the GibbsNMF pm.sample() would choose
                idata = pm.sample(draws=draws, tune=tune, nuts_sampler="pymc", **kw)
        elif method == "smc":
            draws = budget["smc"]
            tune = 0
            idata = pm.sample_smc(draws=draws, chains=4, cores=1, random_seed=seed,
                                  progressbar=progressbar, compute_convergence_checks=False)
        else:
            raise ValueError(method)
        cpu = time.process_time() - c0
    out = _metrics(idata, prob, cpu)
    out["budget"] = f"{tune}+{draws}" if method != "smc" else f"{draws} particles"
    if method.endswith("jumps"):
        out.update(out_jumps)
    if method.startswith("re"):
        from bnmfzoo.inference.gaussian.modes.replica_exchange import ladder_stats

        betas, rate = ladder_stats(idata.sample_stats)
        out["swap_rate"] = float(np.nanmean(rate))
        lab = idata.sample_stats["cold_label"].values
        out["label_changes"] = int((np.diff(lab, axis=1) != 0).sum())
    return out


def _print_row(name, method, r):
    rh = max(r["rhat"].values())
    ess = " ".join(f"{v:8.1f}" for v in r["ess_per_s"].values())
    extra = ""
    if "mass_sol1" in r:
        extra += (f" mass(sol1)={r['mass_sol1']:.4f}±{r['mcse_sol1']:.4f}"
                  f" (chains: ±{r['mcse_chains']:.4f})"
                  f" ({r['excursions']} excursions) chains={r['chain_mass_sol1']}")
    if "swap_rate" in r:
        extra += f" swap={r['swap_rate']:.2f}"
    if "jump_rate" in r:
        extra += f" jump accept={r['jump_rate']:.3f} references={r['n_refs']}"
    print(f"{name:16s} {method:9s} {r['budget']:>15s} {r['cpu']:8.1f} {rh:7.4f} {ess} "
          f"scale {r['scale_ess_per_s']:7.1f} modes={r['modes']}{extra}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+",
                        default=["ccle3", "laurberg05", "laurberg05_1e3"])
    parser.add_argument("--methods", nargs="+",
                        default=["gibbs", "gibbs+sym", "re", "re+sym", "nuts", "smc"])
    parser.add_argument("--full", action="store_true",
                        help="add gdsc5 and swimmer (tens of minutes)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--ladder", nargs=2, type=float, metavar=("N", "BETA_MIN"),
                        help="override the problem's ladder (n_replicas, beta_min)")
    parser.add_argument("--smc-draws", type=int,
                        help="override the problem's number of SMC particles")
    parser.add_argument("--re-budget", nargs=2, type=int, metavar=("TUNE", "DRAWS"),
                        help="override the problem's replica-exchange budget per chain")
    parser.add_argument("--only-seeds", action="store_true",
                        help="skip the method table, run only the --seeds comparison")
    parser.add_argument("--seed-methods", nargs="+", default=["re", "smc"])
    parser.add_argument("--seeds", type=int, default=0,
                        help="rerun re and smc on laurberg05 with this many seeds")
    args = parser.parse_args()
    problems = list(args.problems) + (["gdsc5", "swimmer"] if args.full else [])
    print("problem          method           budget   cpu_s  max_rhat  ESS/s: tau (when "
          "sampled), three A@W entries")
    for name in problems:
        prob = _problem(name)
        if args.ladder:
            prob["ladder"] = (int(args.ladder[0]), float(args.ladder[1]))
        if args.smc_draws:
            prob["budget"]["smc"] = args.smc_draws
        if args.re_budget:
            prob["budget"]["re"] = tuple(args.re_budget)
        for method in ([] if args.only_seeds else args.methods):
            _print_row(name, method, run_method(method, prob, args.seed))
        if args.seeds and name == "laurberg05":
            for method in args.seed_methods:
                ests = []
                for s in range(args.seeds):
                    r = run_method(method, prob, 100 + s)
                    ests.append((r["mass_sol1"], r["mcse_sol1"]))
                    print(f"  {name} {method} seed {100 + s}: mass(sol1) = {r['mass_sol1']:.4f}"
                          f" ± {r['mcse_sol1']:.4f} (chain spread ± {r['mcse_chains']:.4f}; "
                          f"{r['excursions']} excursions; modes {r['modes']}; "
                          f"cpu {r['cpu']:.1f} s)", flush=True)
                p = np.array([e[0] for e in ests])
                se = np.array([e[1] for e in ests])
                chi2_own, chi2_null, pbar = mass_chi2(p, se)
                print(f"  {name} {method}: mean {pbar:.4f}; chi2 = {chi2_null:.2f} on "
                      f"{args.seeds - 1} dof with the errors at the common mass (p = "
                      f"{chi2_sf(chi2_null, args.seeds - 1):.3f}); {chi2_own:.2f} with each "
                      f"run's own error (p = {chi2_sf(chi2_own, args.seeds - 1):.3f})",
                      flush=True)


def chi2_sf(x, dof):
    """Upper tail of the chi2 distribution."""
    from scipy.stats import chi2

    return float(chi2.sf(x, dof))


def mass_chi2(p, se):
    """Agreement of mode-mass estimates ``p`` (one per seed) with errors ``se``.

    Returns ``(chi2_own, chi2_null, mean)``. ``chi2_own`` uses each run's own error around the
    inverse-variance mean. ``chi2_null`` tests the hypothesis that all runs sample the same
    mass, with each run's variance evaluated *under* that hypothesis (as Pearson's chi2 uses
    expected, not observed, counts): the variance of the share of draws in a rare mode is
    proportional to the share (the number of visits is count-like), so run ``i``'s variance at
    the common mass ``m`` (plain mean) is ``se_i^2 m / p_i``. A run that by chance visits the
    rare mode less often also states a smaller error; weighting by its own error pulls the
    mean towards it and inflates ``chi2_own``.
    """
    p, se = np.asarray(p, float), np.asarray(se, float)
    w = 1 / np.maximum(se, 1e-12) ** 2
    pooled = float((w * p).sum() / w.sum())
    chi2_own = float((((p - pooled) / np.maximum(se, 1e-12)) ** 2).sum())
    m = float(p.mean())
    var_null = se**2 * m / np.maximum(p, 1e-12)
    chi2_null = float(((p - m) ** 2 / np.maximum(var_null, 1e-24)).sum())
    return chi2_own, chi2_null, m

if __name__ == "__main__":
    main()
