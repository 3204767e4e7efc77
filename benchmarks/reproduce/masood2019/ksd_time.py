"""Stein discrepancy against CPU time for M in {5, 25, 50} (Masood & Doshi-Velez 2019, Fig. 3-4,
29-32), both models: SILF (``silf(X, rank, epsilon=...)``) and exponential-Gaussian
(``exponential_gaussian(X, rank, sigma="reference", lambda_=1)``, Sec. 6.1).

Methods and time accounting (App. E; weighting always excluded; time = CPU seconds of this
process, ``time.process_time``, because the machine is shared; the wall time of every call is
recorded beside it):

* Q-Transform, random restarts, NNDSVDar: a pool of ``--pool`` particles with per-particle times;
  a collection of size M is a random subset (``--subsets`` of them, median reported) whose time is
  the sum of its particles' times (+ Q-bank and SVD time for Q-Transform) and whose KSD uses
  Stein-optimal weights on the sub-matrix of the pool's Stein kernel matrix.
* NUTS (``fit_nuts``) and Gibbs (``pm.sample(step=GibbsNMF())``, exponential-Gaussian only): one
  chain warm-started from a default NMF; at checkpoints (100, 300, 1000, ... draws) the draws so far
  are thinned evenly to M. Time = warm start + sampling from the first draw (tuning included,
  PyTensor compilation excluded: it is cached on disk and independent of the algorithm).
* ADVI (mean-field, ``fit_advi``): KSD of M = 50 draws at its checkpoints, and of the first M of
  the final 50 draws for M in {5, 25}; time includes the compilation of the ADVI objective.
* SVGD, SVGD-Q, DSGD: run with M particles (``--grad-Ms``), KSD at checkpoints; DSGD's graph
  compilation is measured and excluded.

Every row is appended to ``benchmarks/results/ksd_time_<dataset>_<model>.json`` as soon as it is
produced (a re-run of some methods replaces only their rows); ``--plot-only`` redraws the PNGs
(``ksd_time_<dataset>_<model>.png``: KSD against CPU seconds, log-log, one panel per M) and prints
the tables with the paper's findings checked.

Paper's findings (orderings only; no numbers are given): SILF - Q-Transform lowest KSD in the
least time; random restarts similar KSD but slower; gradient methods plateau far higher; HMC
particles not diverse (KSD flat from M = 5 to 50). Exponential-Gaussian - best is Q-Transform or
Gibbs.

Run: ``nice -n 10 python -m benchmarks.reproduce.masood2019.ksd_time --datasets ccle swimmer``.
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS, Clock
from benchmarks.reproduce.masood2019._shared import Store, cached_epsilon
from bnmfzoo._terms.silf import svd_energy_rank
from bnmfzoo.models._spec import find_spec

POOLS = ("qtransform", "random", "nndsvdar")
GRADIENT = ("svgd", "svgd_q", "dsgd")
ALL_METHODS = POOLS + ("nuts", "gibbs", "advi", "fullrank_advi") + GRADIENT
DEFAULT_METHODS = POOLS + ("nuts", "gibbs", "advi") + GRADIENT
LABELS = {"qtransform": "Q-Transform", "random": "random restarts", "nndsvdar": "NNDSVDar",
          "nuts": "NUTS", "gibbs": "Gibbs", "advi": "ADVI", "fullrank_advi": "full-rank ADVI",
          "svgd": "SVGD", "svgd_q": "SVGD-Q", "dsgd": "DSGD"}
STYLE = {"qtransform": ("tab:red", "o"), "random": ("tab:blue", "s"),
         "nndsvdar": ("tab:cyan", "D"), "nuts": ("tab:green", "^"), "gibbs": ("gold", "*"),
         "advi": ("tab:purple", "v"), "fullrank_advi": ("tab:pink", "v"),
         "svgd": ("tab:gray", "P"), "svgd_q": ("tab:brown", "X"), "dsgd": ("black", "h")}

def load(name, faces_size):
    """Data, rank and the cache name of its SILF threshold (None: computed by the model)."""
    from bnmfzoo import datasets

    if name == "faces":
        X = datasets.load_faces(tuple(faces_size))
        return X, 10, f"faces{faces_size[0]}" if tuple(faces_size) == (64, 64) else None
    if name == "swimmer":
        return datasets.swimmer().X, 16, "swimmer"
    if name == "ccle":
        X = datasets.load_ccle("ic50")
        # the 70%-variance rule gives rank 1 here (55% of entries sit at the 8 uM ceiling);
        # use 5 so that particles can differ
        return X, max(svd_energy_rank(X.values), 5), None
    raise ValueError(name)


def build_model(kind, X, rank, eps_name, args):
    from bnmfzoo.models import exponential_gaussian, silf

    if kind == "silf":
        if eps_name is not None:
            eps, _ = cached_epsilon(eps_name, X, rank)
            return silf(X, rank, epsilon=eps), {"epsilon": eps}
        model = silf(X, rank, random_seed=args.seed)
        return model, {"epsilon": float(find_spec(model).hyper.epsilon)}
    model = exponential_gaussian(X, rank, sigma="reference", lambda_=args.lam)
    return model, {"sigma": float(find_spec(model).hyper.sigma), "lambda": args.lam}


def _thin(n, M):
    return np.unique(np.round(np.linspace(0, n - 1, M)).astype(int))


def _checkpoints(total, M):
    return [c for c in (100, 300, 1000, 3000, 10000) if M <= c < total] + [total]


_POOL_CACHE = {}


def pool_particles(name, init, model, info, args, bank):
    """Raw solver particles of one initializer, generated once per dataset (both models share
    them: the NMF solves do not depend on the model; each model projects them onto its support).
    Returns (A, W, per-particle CPU s, setup CPU s (SVD for Q-Transform), wall/CPU, n_iter)."""
    from bnmfzoo.inference import fit_particles

    # fit_particles calls make_particle through weighted's namespace; wrapping it there keeps
    # the raw solver particles (before the model's projection), shared by both models
    from bnmfzoo.inference.particles import weighted as particles_mod

    key = (name, init, args.pool, args.seed)
    disk = (Path(args.pool_cache) / f"pool_{name}_{init}_{args.pool}_{args.seed}.npz"
            if args.pool_cache else None)
    if key not in _POOL_CACHE and disk is not None and disk.exists():
        with np.load(disk) as z:
            _POOL_CACHE[key] = (z["A"], z["W"], z["times"], float(z["setup"]),
                                float(z["wall_per_cpu"]), z["n_iter"])
    if key not in _POOL_CACHE:
        raw = []
        orig = particles_mod.make_particle

        def recording(*a, **kw):
            out = orig(*a, **kw)
            raw.append(out)
            return out

        particles_mod.make_particle = recording
        try:
            with Clock() as c:
                dt = fit_particles(model, n_particles=args.pool, init=init, q_bank=bank,
                                   random_seed=args.seed, progressbar=False,
                                   rejuvenate=None)  # the paper's Algorithm 1
        finally:
            particles_mod.make_particle = orig
        d = dt["diagnostics"]
        setup = float(d["svd_cpu_time"]) if "svd_cpu_time" in d else 0.0
        _POOL_CACHE[key] = (np.stack([r["A"] for r in raw]), np.stack([r["W"] for r in raw]),
                            dt["particles"]["cpu_time"].values, setup, c.wall / max(c.cpu, 1e-9),
                            dt["particles"]["n_iter"].values)
        if disk is not None:
            disk.parent.mkdir(parents=True, exist_ok=True)
            tmp = disk.with_suffix(f".{os.getpid()}.npz")
            A, W, times, setup, ratio, n_iter = _POOL_CACHE[key]
            np.savez(tmp, A=A, W=W, times=times, setup=setup, wall_per_cpu=ratio,
                     n_iter=n_iter)
            os.replace(tmp, disk)
    return _POOL_CACHE[key]


def run_pool(name, init, model, info, args, bank, bank_cpu, store, Ms, rng):
    from bnmfzoo._terms.silf import objective_value
    from bnmfzoo.diagnostics import stein_weights
    from bnmfzoo.inference.particles.weighted import weigh_particles

    A, W, times, setup, wall_per_cpu, n_iter = pool_particles(name, init, model, info, args,
                                                              bank)
    A, W = info.finalize_particles(A, W)  # as fit_particles
    if init == "qtransform":  # CPU time of the bank measured in this run (the cached bank
        # carries the wall time of the run that built it)
        setup = setup + bank_cpu
    objective = np.array([objective_value(info.X.values, a @ w, info.mask) for a, w in zip(A, W)])
    cpu_pool = float(times.sum() + setup)
    p = {"A": A, "W": W, "n_iter": n_iter, "objective": objective}
    K = weigh_particles(info, A, W, weights="uniform")["K"]
    store.run(init, pool=args.pool, subsets=args.subsets, cpu_pool=cpu_pool,
              wall_pool=cpu_pool * wall_per_cpu,
              setup_cpu=setup, particle_cpu_median=float(np.median(times)),
              n_iter_median=float(np.median(p["n_iter"])),
              objective_median=float(np.median(p["objective"])),
              objective_max=float(np.max(p["objective"])))
    for M in Ms:
        ks, ts = [], []
        for _ in range(args.subsets):
            idx = rng.choice(len(times), size=M, replace=False)
            Ks = K[np.ix_(idx, idx)]
            w = stein_weights(Ks)
            ks.append(float(w @ Ks @ w))
            ts.append(setup + float(times[idx].sum()))
        store.add(method=init, M=M, stage="final", cpu=float(np.median(ts)),
                  wall=float(np.median(ts)) * wall_per_cpu, ksd=float(np.median(ks)),
                  ksd_q25=float(np.percentile(ks, 25)), ksd_q75=float(np.percentile(ks, 75)),
                  budget=f"pool {args.pool}, {args.subsets} subsets")
        print(f"  {init:<14} M={M:<3} cpu {np.median(ts):9.2f} s  KSD {np.median(ks):.4g}",
              flush=True)


def run_mcmc(kind, model, info, args, store, Ms):
    import pymc as pm

    from bnmfzoo.inference.particles import baselines
    from bnmfzoo.inference.particles.weighted import weigh_particles

    draws, tune = (args.draws, args.tune) if kind == "nuts" else (args.gibbs_draws,
                                                                  args.gibbs_tune)
    cb_cpu, cb_wall = [], []

    def callback(trace, draw):
        cb_cpu.append(time.process_time())
        cb_wall.append(time.perf_counter())

    ws = {}
    orig = baselines.nmf_warm_start

    def timed_warm_start(info_, **kw):
        with Clock() as c:
            out = orig(info_, **kw)
        ws.update(cpu=c.cpu, wall=c.wall)
        return out

    with Clock() as call:
        if kind == "nuts":
            from bnmfzoo.inference import fit_nuts

            baselines.nmf_warm_start = timed_warm_start
            try:
                dt = fit_nuts(model, draws=draws, tune=tune, n_particles=min(Ms),
                              checkpoints=[draws], random_seed=args.seed, progressbar=False,
                              callback=callback)
            finally:
                baselines.nmf_warm_start = orig
            post = dt["posterior"]
            extra = {"divergences": int(dt["sample_stats"]["diverging"].sum()),
                     "mean_tree_depth": float(dt["sample_stats"]["tree_depth"].mean()),
                     "step_size": float(dt["sample_stats"]["step_size"].values[0, -1])}
        else:
            from bnmfzoo.inference import GibbsNMF

            A0, W0 = timed_warm_start(info, random_seed=args.seed)
            with model:
                dt = pm.sample(draws=draws, tune=tune, chains=1, cores=1, step=GibbsNMF(),
                               nuts_sampler="pymc", initvals={"A": A0, "W": W0},
                               random_seed=args.seed, progressbar=False,
                               compute_convergence_checks=False, callback=callback)
            post = dt["posterior"]
            extra = {}
    A_all = post[info.names["A"]].values[0]
    W_all = post[info.names["W"]].values[0]
    cb_cpu, cb_wall = np.array(cb_cpu), np.array(cb_wall)
    per_draw = float(np.median(np.diff(cb_cpu))) if len(cb_cpu) > 1 else 0.0
    store.run(kind, draws=draws, tune=tune, cpu_call=call.cpu, wall_call=call.wall,
              warm_start_cpu=ws["cpu"], compile_and_setup_cpu=float(cb_cpu[0] - call.c0
                                                                    - ws["cpu"] - per_draw),
              cpu_per_draw_median=per_draw, **extra)
    cps = _checkpoints(draws, min(Ms))
    for M in Ms:
        for c in cps:
            if c < M:
                continue
            i = tune + c - 1
            cpu = ws["cpu"] + per_draw + float(cb_cpu[i] - cb_cpu[0])
            wall = ws["wall"] + float(cb_wall[i] - cb_wall[0])
            A, W = info.project(A_all[_thin(c, M)], W_all[_thin(c, M)])
            res = weigh_particles(info, A, W)
            store.add(method=kind, M=M, stage="final" if c == cps[-1] else "checkpoint",
                      step=c, cpu=cpu, wall=wall, ksd=res["stein_discrepancy"],
                      ksd_uniform=res["stein_discrepancy_uniform"],
                      budget=f"{draws} draws after {tune} tuning")
        print(f"  {kind:<14} M={M:<3} cpu {cpu:9.2f} s  KSD {res['stein_discrepancy']:.4g}",
              flush=True)


def run_advi(method, model, info, args, store, Ms):
    from bnmfzoo.inference import fit_advi
    from bnmfzoo.inference.particles.weighted import weigh_particles

    with Clock() as call:
        dt = fit_advi(model, method=method, n=args.advi_steps, n_particles=max(Ms), n_draws=10,
                      random_seed=args.seed, progressbar=False)
    d = dt["diagnostics"]
    store.run(method, steps=args.advi_steps, cpu_call=call.cpu, wall_call=call.wall,
              final_loss=float(dt["variational"]["loss"].values[-1]))
    ratio = call.wall / max(call.cpu, 1e-9)
    for it, t, k in zip(d["checkpoint_iteration"].values, d["checkpoint_cpu_time"].values,
                        d["checkpoint_stein_discrepancy"].values):
        if it != d["checkpoint_iteration"].values[-1]:
            store.add(method=method, M=max(Ms), stage="checkpoint", step=int(it), cpu=float(t),
                      wall=float(t) * ratio, ksd=float(k), budget=f"{args.advi_steps} steps")
    t = float(d["total_cpu_time"])
    p = dt["particles"]
    for M in Ms:
        A, W = p["A"].values[:M], p["W"].values[:M]
        k = weigh_particles(info, A, W)["stein_discrepancy"]
        store.add(method=method, M=M, stage="final", step=args.advi_steps, cpu=t,
                  wall=t * ratio, ksd=k, budget=f"{args.advi_steps} steps")
        print(f"  {method:<14} M={M:<3} cpu {t:9.2f} s  KSD {k:.4g}", flush=True)


def run_gradient(label, model, info, args, bank, store, Ms):
    from bnmfzoo.inference import fit_dsgd, fit_svgd

    fn, init = {"svgd": (fit_svgd, "random"), "svgd_q": (fit_svgd, "qtransform"),
                "dsgd": (fit_dsgd, "random")}[label]
    Ms = args.dsgd_Ms if label == "dsgd" else args.grad_Ms
    for M in Ms:
        with Clock() as call:
            dt = fn(model, n_particles=M, n_steps=args.steps, init=init, q_bank=bank,
                    random_seed=args.seed, progressbar=False)
        d = dt["diagnostics"]
        # CPU seconds recorded by the fitter; DSGD's graph compilation is excluded
        sub = float(d["compile_cpu_time"]) if "compile_cpu_time" in d else 0.0
        times = d["checkpoint_cpu_time"].values - sub
        steps = d["checkpoint_step"].values
        per_step = float((times[-1] - times[0]) / max(steps[-1] - steps[0], 1))
        store.run(f"{label}_M{M}", steps=args.steps, cpu_call=call.cpu, wall_call=call.wall,
                  compile_cpu=sub, cpu_per_step=per_step)
        ratio = call.wall / max(call.cpu, 1e-9)
        for s, t, k in zip(steps, times, d["checkpoint_stein_discrepancy"].values):
            store.add(method=label, M=M, stage="final" if s == steps[-1] else "checkpoint",
                      step=int(s), cpu=float(t), wall=float(t) * ratio, ksd=float(k),
                      budget=f"{args.steps} steps")
        print(f"  {label:<14} M={M:<3} cpu {times[-1]:9.2f} s  KSD {k:.4g}  "
              f"({per_step * 1e3:.1f} ms/step, compile {sub:.0f} s)", flush=True)


def bank_generation_cpu():
    """CPU seconds to build the paper's 100 Q pairs (median of 3 uncached builds, warm)."""
    from bnmfzoo.inference.particles.qtransform import generate_q_bank

    generate_q_bank(cache=False)  # imports and first-call overheads
    out = []
    for _ in range(3):
        t = time.process_time()
        generate_q_bank(cache=False)
        out.append(time.process_time() - t)
    return float(np.median(out))


def run(name, kind, args):
    from bnmfzoo.inference.particles.qtransform import generate_q_bank
    from bnmfzoo.inference.particles.weighted import resolve_nmf_model

    X, rank = load(name, args.faces_size)[:2]
    eps_name = load(name, args.faces_size)[2]
    with Clock() as c:
        model, hyper = build_model(kind, X, rank, eps_name, args)
    info = resolve_nmf_model(model)
    methods = [m for m in args.methods if not (m == "gibbs" and kind != "gaussian")]
    Ms = [m for m in (5, 25, 50) if m <= args.pool]
    store = Store(name, kind, {"shape": list(X.shape), "rank": rank,
                               "observed": float(info.mask.mean()), **hyper,
                               "model_build_cpu": c.cpu}, set(methods),
                  {m: (set(args.dsgd_Ms) if m == "dsgd" else set(args.grad_Ms)) for m in GRADIENT},
                  path=RESULTS / f"ksd_time_{name}_{kind}.json")
    print(f"\n=== {name} / {kind}: {X.shape[0]} x {X.shape[1]}, rank {rank}, observed "
          f"{info.mask.mean():.3f}, {hyper} ===", flush=True)
    bank = generate_q_bank()
    bank_cpu = bank_generation_cpu() if "qtransform" in methods else None
    if bank_cpu is not None:
        store.meta["qbank_cpu"] = bank_cpu
    rng = np.random.default_rng(args.seed)
    for method in methods:
        t = time.perf_counter()
        try:
            if method in POOLS:
                run_pool(name, method, model, info, args, bank, bank_cpu, store, Ms, rng)
            elif method in ("nuts", "gibbs"):
                run_mcmc(method, model, info, args, store, Ms)
            elif method in ("advi", "fullrank_advi"):
                run_advi(method, model, info, args, store, Ms)
            else:
                run_gradient(method, model, info, args, bank, store, Ms)
        except Exception as err:  # noqa: BLE001 - report, keep the other methods
            print(f"  {method} failed: {type(err).__name__}: {err}", flush=True)
            store.run(method, error=f"{type(err).__name__}: {err}")
        print(f"  [{method} done in {time.perf_counter() - t:.0f} s wall]", flush=True)
    report(store.path)


def _final(rows):
    return {(r["method"], r["M"]): r for r in rows if r["stage"] == "final"}


def report(path):
    """Print the table and the paper's findings checked; draw the PNG."""
    with open(path) as f:
        data = json.load(f)
    rows = data["rows"]
    if not rows:
        return
    fin = _final(rows)
    Ms = sorted({r["M"] for r in rows})
    print(f"\n--- {data['dataset']} / {data['model']}: {data['meta']} ---")
    print(f"  {'method':<16}{'M':>4}{'CPU [s]':>11}{'wall [s]':>11}{'KSD':>13}  budget")
    for (m, M), r in sorted(fin.items(), key=lambda kv: (kv[0][1], kv[1]["ksd"])):
        print(f"  {LABELS[m]:<16}{M:>4}{r['cpu']:>11.2f}{r['wall']:>11.2f}{r['ksd']:>13.4g}  "
              f"{r.get('budget', '')}")
    for method, info in data.get("runs", {}).items():
        if "error" in info:
            print(f"  {method}: FAILED {info['error']}")
    print("  paper's findings checked:")
    for M in Ms:
        at = {m: r for (m, MM), r in fin.items() if MM == M}
        if "qtransform" not in at:
            continue
        q = at["qtransform"]
        others = {m: r for m, r in at.items() if m != "qtransform"}
        if others:
            best = min(others, key=lambda m: others[m]["ksd"])
            yes = "yes" if q["ksd"] <= others[best]["ksd"] else "no"
            print(f"   M={M}: Q-Transform lowest KSD: {yes} (Q {q['ksd']:.4g}; best other "
                  f"{LABELS[best]} {others[best]['ksd']:.4g})")
        faster = [r for r in rows if r["M"] == M and r["method"] != "qtransform"
                  and r["ksd"] <= q["ksd"] and r["cpu"] < q["cpu"]]
        names = ", ".join(sorted({LABELS[r["method"]] for r in faster}))
        print(f"   M={M}: no other method reaches Q-Transform's KSD in less CPU time: "
              f"{'yes' if not faster else 'no (' + names + ')'}")
        by_time = sorted(at, key=lambda m: at[m]["cpu"])
        print(f"   M={M}: Q-Transform CPU-time rank {by_time.index('qtransform') + 1} of "
              f"{len(by_time)} (fastest: {LABELS[by_time[0]]} {at[by_time[0]]['cpu']:.3g} s, "
              f"Q {q['cpu']:.3g} s)")
        if "random" in at:
            r = at["random"]
            print(f"   M={M}: random restarts KSD/Q {r['ksd'] / q['ksd']:.3g}, "
                  f"CPU time/Q {r['cpu'] / q['cpu']:.3g} (paper: similar KSD, slower)")
        grad = {m: at[m] for m in GRADIENT if m in at}
        if grad:
            g = min(grad, key=lambda m: grad[m]["ksd"])
            print(f"   M={M}: best gradient method {LABELS[g]} KSD/Q "
                  f"{grad[g]['ksd'] / q['ksd']:.3g} (paper: plateau far higher)")
        if data["model"] == "gaussian" and others:
            order = sorted(at, key=lambda m: at[m]["ksd"])
            print(f"   M={M}: two lowest KSD: {', '.join(LABELS[m] for m in order[:2])} "
                  f"(paper, exp.-Gaussian: best is Q-Transform or Gibbs)")
    for m in ("nuts", "gibbs", "qtransform", "random", "advi"):
        if (m, 5) in fin and (m, 50) in fin:
            ratio = fin[(m, 5)]["ksd"] / fin[(m, 50)]["ksd"]
            print(f"   KSD ratio M=5/M=50 for {LABELS[m]}: {ratio:.3g}"
                  f"{'  (paper: HMC flat in M, i.e. near 1)' if m == 'nuts' else ''}")
    for m in GRADIENT:
        for M in Ms:
            cur = sorted((r for r in rows if r["method"] == m and r["M"] == M),
                         key=lambda r: r["step"])
            if len(cur) >= 2:
                half = min(cur, key=lambda r: abs(r["step"] - cur[-1]["step"] / 2))
                print(f"   {LABELS[m]} M={M}: KSD at step {half['step']} / final step "
                      f"{cur[-1]['step']}: {half['ksd'] / cur[-1]['ksd']:.3g} (near 1 = plateau)")
    plot(data, path.with_suffix(".png"))


def report_repeats(dirs, datasets, kinds):
    """Repeats of the pool methods (paper: 3): each method's KSD relative to Q-Transform's in the
    same repeat (geometric mean over repeats, with min and max), and its CPU time relative to
    Q-Transform's (geometric mean)."""
    print("\n--- repeats: KSD / Q-Transform's KSD in the same repeat (geometric mean [min, max]) "
          f"over {len(dirs)} result folders ---")
    for name in datasets:
        for kind in kinds:
            finals = []
            for d in dirs:
                path = Path(d) / f"ksd_time_{name}_{kind}.json"
                if path.exists():
                    with open(path) as f:
                        finals.append(_final(json.load(f)["rows"]))
            if not finals:
                continue
            print(f"  {name} / {kind}: {len(finals)} repeats")
            for M in (5, 25, 50):
                q = [f[("qtransform", M)]["ksd"] for f in finals if ("qtransform", M) in f]
                if not q:
                    continue
                cells = [f"Q {np.exp(np.mean(np.log(q))):.4g}"]
                for m in POOLS[1:]:
                    both = [f for f in finals if (m, M) in f and ("qtransform", M) in f]
                    r = [f[(m, M)]["ksd"] / f[("qtransform", M)]["ksd"] for f in both]
                    t = [f[(m, M)]["cpu"] / f[("qtransform", M)]["cpu"] for f in both]
                    if r:
                        cells.append(f"{LABELS[m]} x{np.exp(np.mean(np.log(r))):.3g} "
                                     f"[{min(r):.3g}, {max(r):.3g}] in CPU "
                                     f"x{np.exp(np.mean(np.log(t))):.2g}")
                print(f"    M={M:<3} " + "; ".join(cells))


def plot(data, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    rows = data["rows"]
    Ms = sorted({r["M"] for r in rows})
    fig, axes = plt.subplots(1, len(Ms), figsize=(5 * len(Ms), 4.2), sharey=True, squeeze=False)
    for ax, M in zip(axes[0], Ms):
        for m in ALL_METHODS:
            cur = sorted((r for r in rows if r["method"] == m and r["M"] == M),
                         key=lambda r: r["cpu"])
            if not cur:
                continue
            color, marker = STYLE[m]
            x = [max(r["cpu"], 1e-3) for r in cur]
            y = [r["ksd"] for r in cur]
            if len(cur) > 1:
                ax.plot(x, y, "-", color=color, lw=1, alpha=0.7)
            fin = [r for r in cur if r["stage"] == "final"]
            ax.plot([max(r["cpu"], 1e-3) for r in fin], [r["ksd"] for r in fin], marker,
                    color=color, ms=9, mec="k", label=LABELS[m], ls="none")
            for r in cur:
                if "ksd_q25" in r:
                    ax.plot([r["cpu"]] * 2, [r["ksd_q25"], r["ksd_q75"]], "-", color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # narrow ranges crowd minor labels
        ax.set_xlabel("CPU seconds (particle generation; weighting excluded)")
        ax.set_title(f"M = {M}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("kernelized Stein discrepancy")
    handles = {}  # one legend for all panels, outside them (a method may miss some M)
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    meta = data["meta"]
    fig.suptitle(f"{data['dataset']} ({meta['shape'][0]} x {meta['shape'][1]}, rank "
                 f"{meta['rank']}), {data['model']} model", fontsize=11)
    fig.tight_layout()
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="center left",
               bbox_to_anchor=(1.0, 0.5))
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"  plot: {out}")


def main():
    global RESULTS
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["ccle", "swimmer", "faces"])
    p.add_argument("--model", choices=("silf", "gaussian", "both"), default="both")
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS),
                   choices=ALL_METHODS)
    p.add_argument("--faces-size", type=int, nargs=2, default=(64, 64))
    p.add_argument("--pool", type=int, default=100)
    p.add_argument("--subsets", type=int, default=10)
    p.add_argument("--draws", type=int, default=1000, help="NUTS draws")
    p.add_argument("--tune", type=int, default=500, help="NUTS tuning draws")
    p.add_argument("--gibbs-draws", type=int, default=10000, help="paper: 10,000")
    p.add_argument("--gibbs-tune", type=int, default=0,
                   help="Gibbs starts warm, so no burn-in is needed by default")
    p.add_argument("--advi-steps", type=int, default=3000)
    p.add_argument("--steps", type=int, default=2000, help="SVGD/DSGD steps (paper: 2000)")
    p.add_argument("--grad-Ms", type=int, nargs="+", default=[5, 25, 50])
    p.add_argument("--dsgd-Ms", type=int, nargs="+", default=[5, 25, 50])
    p.add_argument("--lam", type=float, default=1.0,
                   help="exponential prior rate of the Gaussian model (paper: 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pool-cache", default=None,
                   help="folder where raw pools are saved/reused across processes and models")
    p.add_argument("--plot-only", action="store_true")
    p.add_argument("--repeats", nargs="+", default=None, metavar="DIR",
                   help="print the pool methods' KSD over repeats stored in these result folders "
                        "(one --seed and --results-dir per repeat) and exit")
    p.add_argument("--results-dir", default=str(RESULTS))
    args = p.parse_args()
    RESULTS = Path(args.results_dir)
    kinds = ("silf", "gaussian") if args.model == "both" else (args.model,)
    if args.repeats:
        report_repeats(args.repeats, args.datasets, kinds)
        return
    if args.plot_only:
        for name in args.datasets:
            for kind in kinds:
                path = RESULTS / f"ksd_time_{name}_{kind}.json"
                if path.exists():
                    report(path)
        return
    for name in args.datasets:
        for kind in kinds:
            t = time.perf_counter()
            run(name, kind, args)
            print(f"  ({name}/{kind} wall time {time.perf_counter() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
