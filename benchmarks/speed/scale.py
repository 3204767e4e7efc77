"""Benchmark: MovieLens-10M-sized sparse data end to end, scaling, path choice, and smurff.

Run with ``nice -n 10 python -m benchmarks.speed.scale`` (about 5-8 minutes on one core;
``--quick`` runs a 7,200 x 1,000 / 100,000-entry version in under a minute).

On synthetic exponential-Gaussian data of MovieLens-10M size (72,000 x 10,000, 10 million
observed entries scattered at random, rank 10, passed as a :func:`bnmfzoo.long_format` matrix)
it prints:

1. in a fresh process: the time to build the long-format matrix and the model
   (``models.exponential_gaussian``), the median seconds per Gibbs sweep (``GibbsNMF.step``
   through PyMC's value space, and the numeric kernel alone), the set-up and per-draw time of
   a short ``pm.sample``, the median seconds per VB iteration (``fit_vb``) and its
   post-processing, and the process's **peak resident memory** (``ru_maxrss``);
2. the median time per sweep of ``smurff`` 1.1 (BPMF, C++, one thread) on the same entries and
   the ratio of ours to it. smurff ships wheels for CPython 3.11 only, so it runs in a side
   virtual environment: the interpreter in ``$SMURFF_PYTHON``, else
   ``benchmarks/.smurff-venv/bin/python``, else ``../smurff-venv/bin/python`` beside the
   project; made with ``python3.11 -m venv benchmarks/.smurff-venv &&
   benchmarks/.smurff-venv/bin/pip install smurff==1.1``. Without it the comparison is skipped
   with a message;
3. the time per Gibbs sweep against the number of observed entries from 10^4 to 10^7 (same
   density as MovieLens-10M, 1.39 %) and the fitted log-log slope (1 = linear);
4. for scattered and block-missing masks (``benchmarks.speed.gibbs_paths.make_data``), the
   sweep time of the path the cost model chooses (``_gram.choose_half_sweep``) divided by the
   other path's.

The targets of issue 21 are printed beside the numbers: peak memory <= 4 GB, Gibbs <= 0.5 s per
sweep, VB <= 1.5 s per iteration, model build <= 10 s.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

import benchmarks._common  # noqa: F401  (one BLAS thread)
from benchmarks._common import ROOT
from bnmfzoo.models._spec import GaussianHyper

FULL = dict(D=72_000, N=10_000, n=10_000_000)
QUICK = dict(D=7_200, N=1_000, n=100_000)
RANK = 10
HYPER = GaussianHyper(lambda_A=0.1, lambda_W=0.1)


def synthetic_entries(D, N, n, rank, seed=0):
    """``(rows, cols, values)`` of exponential-Gaussian data at ``n`` random cells, row-major.

    ``X = A W + noise`` with ``A, W ~ Exponential(1)`` and noise sd 1, formed on the chosen
    cells only (never D x N).
    """
    from bnmfzoo._terms._pairs import _product

    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, D * N, size=int(n * 1.05) + 100))
    flat = np.sort(flat[rng.permutation(flat.size)[:n]])
    rows, cols = np.divmod(flat, np.int64(N))
    A, W = rng.exponential(size=(D, rank)), rng.exponential(size=(rank, N))
    values = np.empty(n)
    _product(A, np.ascontiguousarray(W.T), rows, cols, values)
    values += rng.normal(size=n)
    return rows, cols, values


def _median_time(fn, repeats, cpu=None):
    """Median wall seconds of ``fn()``; the median CPU seconds go into ``cpu`` (a list)."""
    times, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    if cpu is not None:
        cpu.append(float(np.median(cpus)))
    return float(np.median(times))


def big_run(D, N, n, sweeps, vb_iters, out_path):
    """Stage 1 (run in its own process so its peak memory is its own)."""
    import pymc as pm

    import bnmfzoo as bz
    from bnmfzoo.inference import GibbsNMF, fit_vb
    from bnmfzoo.inference.gaussian.gibbs import _core as gc
    from bnmfzoo.models import exponential_gaussian

    res = {}
    t0 = time.perf_counter()
    rows, cols, values = synthetic_entries(D, N, n, RANK)
    res["generate_s"] = time.perf_counter() - t0
    np.savez(out_path, rows=rows, cols=cols, values=values, shape=np.array([D, N]))
    t0 = time.perf_counter()
    entries = bz.long_format(rows, cols, values, shape=(D, N))
    res["long_format_s"] = time.perf_counter() - t0
    del rows, cols, values
    t0, c0 = time.perf_counter(), time.process_time()
    model = exponential_gaussian(entries, RANK)
    res["build_s"], res["build_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    print(f"  built the long-format matrix in {res['long_format_s']:.2f} s and the model in "
          f"{res['build_s']:.2f} s (CPU {res['build_cpu_s']:.2f} s; target <= 10 s)", flush=True)

    step = GibbsNMF(model=model, rng=1)
    t0 = time.perf_counter()
    point = model.initial_point(random_seed=1)
    point, _ = step.step(point)  # first sweep: numba dispatch, residual set-up
    res["first_sweep_s"] = time.perf_counter() - t0
    box = [point]

    def one_step():
        box[0], _ = step.step(box[0])

    cpu = []
    res["gibbs_step_s"] = _median_time(one_step, sweeps, cpu)
    state, obs = step.chain[0], step.obs
    rng = np.random.default_rng(2)
    res["gibbs_kernel_s"] = _median_time(lambda: gc.nmf_sweep(state, obs, HYPER, rng), sweeps,
                                         cpu)
    res["gibbs_step_cpu_s"], res["gibbs_kernel_cpu_s"] = cpu
    res["gibbs_paths"] = list(obs.half_sweep_paths(RANK))
    print(f"  Gibbs: {res['gibbs_step_s']:.3f} s per sweep through GibbsNMF.step (CPU "
          f"{cpu[0]:.3f} s), {res['gibbs_kernel_s']:.3f} s in the numeric kernel (CPU "
          f"{cpu[1]:.3f} s; paths {'/'.join(res['gibbs_paths'])}; target <= 0.5 s)",
          flush=True)
    box.clear()
    step.chain = state = None  # free the chain's residual before pm.sample

    with model:
        t0 = time.perf_counter()
        pm.sample(draws=1, tune=0, chains=1, step=GibbsNMF(), random_seed=1,
                  progressbar=False, compute_convergence_checks=False)
        t1 = time.perf_counter()
        pm.sample(draws=1 + sweeps, tune=0, chains=1, step=GibbsNMF(), random_seed=1,
                  progressbar=False, compute_convergence_checks=False)
        t2 = time.perf_counter()
    res["pm_sample_per_draw_s"] = ((t2 - t1) - (t1 - t0)) / sweeps
    res["pm_sample_setup_s"] = (t1 - t0) - res["pm_sample_per_draw_s"]
    print(f"  pm.sample: {res['pm_sample_setup_s']:.2f} s fixed set-up, "
          f"{res['pm_sample_per_draw_s']:.3f} s per draw", flush=True)

    n_draws = 20
    runs = []
    for iters in (1, 1 + vb_iters):  # the difference is the cost of vb_iters iterations
        t0, c0 = time.perf_counter(), time.process_time()
        dt = fit_vb(model, max_iter=iters, n_draws=n_draws, random_seed=1, progressbar=False)
        runs.append((time.perf_counter() - t0, time.process_time() - c0, dt))
    (w1, c1, _), (w2, c2, dt) = runs
    res["vb_iter_s"], res["vb_iter_cpu_s"] = (w2 - w1) / vb_iters, (c2 - c1) / vb_iters
    res["vb_rest_cpu_s"] = c1 - res["vb_iter_cpu_s"]
    assert dt["observed_data"]["X"].dims == ("X_obs",)
    print(f"  VB: {res['vb_iter_s']:.3f} s per iteration (CPU {res['vb_iter_cpu_s']:.3f} s; "
          f"target <= 1.5 s); set-up, {n_draws} draws from q and their training MSE: CPU "
          f"{res['vb_rest_cpu_s']:.1f} s", flush=True)
    res["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"  peak resident memory of this process: {res['peak_rss_gb']:.2f} GB "
          "(target <= 4 GB)", flush=True)
    return res


SMURFF_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np, scipy.sparse as sp, smurff
    d = np.load(sys.argv[1])
    Y = sp.coo_matrix((d["values"], (d["rows"], d["cols"])), shape=tuple(d["shape"]))
    sweeps = int(sys.argv[2])
    s = smurff.BPMFSession(Ytrain=Y, num_latent=int(sys.argv[3]), burnin=sweeps + 1,
                           nsamples=1, num_threads=1, verbose=0, seed=1)
    t0 = time.perf_counter()
    s.init()
    init = time.perf_counter() - t0
    times, cpus = [], []
    for _ in range(sweeps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        s.step()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print(json.dumps({"init_s": init, "sweep_s": float(np.median(times[1:])),
                      "sweep_cpu_s": float(np.median(cpus[1:]))}))
""")


def smurff_python():
    """The smurff side venv's interpreter, or None."""
    candidates = [os.environ.get("SMURFF_PYTHON"), ROOT / "benchmarks" / ".smurff-venv/bin/python",
                  ROOT.parent / "smurff-venv" / "bin" / "python"]
    for c in candidates:
        if c and Path(c).is_file():
            return str(c)
    return None


def run_smurff(data_path, sweeps):
    py = smurff_python()
    if py is None:
        print("  smurff skipped: no side venv (set SMURFF_PYTHON or create "
              "benchmarks/.smurff-venv, see this module's docstring)")
        return None
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    out = subprocess.run([py, "-c", SMURFF_SCRIPT, str(data_path), str(sweeps), str(RANK)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        print(f"  smurff skipped: it failed ({out.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling(sizes, density, repeats=3):
    """Median kernel seconds per sweep at each number of observed entries; fitted slope."""
    from bnmfzoo._base.entries import long_format
    from bnmfzoo.inference.gaussian.gibbs import _core as gc

    ns, ts, factor_entries = [], [], []
    for n in sizes:
        cells = n / density
        N = max(int(round(np.sqrt(cells / 7.2))), 20)
        D = int(round(cells / N))
        rows, cols, values = synthetic_entries(D, N, n, RANK, seed=3)
        obs = gc.observed_entries(long_format(rows, cols, values, shape=(D, N)))
        rng = np.random.default_rng(0)
        st = gc.nmf_state(rng.exponential(size=(D, RANK)), rng.exponential(size=(RANK, N)),
                          1.0, None, obs)
        gc.nmf_sweep(st, obs, HYPER, rng)
        cpu = []
        t = _median_time(lambda: gc.nmf_sweep(st, obs, HYPER, rng), repeats, cpu)
        ns.append(obs.n_observed)
        ts.append(cpu[0])
        factor_entries.append((D + N) * RANK)
        print(f"  {D:>6} x {N:<6} {obs.n_observed:>9} observed: {t * 1e3:9.2f} ms per sweep "
              f"(CPU {cpu[0] * 1e3:9.2f} ms, {cpu[0] / obs.n_observed * 1e9:5.1f} ns per "
              "entry)", flush=True)
    if len(ns) > 1:
        ns, ts, fe = np.asarray(ns, float), np.asarray(ts), np.asarray(factor_entries, float)
        slope = np.polyfit(np.log(ns), np.log(ts), 1)[0]
        print(f"  log-log slope of CPU time per sweep against observed entries: {slope:.3f} "
              f"from {int(ns[0])} to {int(ns[-1])} entries (1 = linear; below 1 while the "
              "(D + N) x R truncated-normal draws, which grow like sqrt(n) at fixed density, "
              "still weigh)")
        # t = a n + b (D + N) R, fitted on relative error (non-negative least squares)
        F = np.column_stack([ns, fe]) / ts[:, None]
        (a, b), _ = nnls(F, np.ones_like(ts))
        rel = np.abs((a * ns + b * fe) / ts - 1)
        print(f"  fit t = a n + b (D + N) R: a = {a * 1e9:.1f} ns per observed entry, "
              f"b = {b * 1e9:.1f} ns per factor entry; largest relative error {rel.max():.2f}")


def sweep_cpu_time(X, rank, kernel, repeats):
    """Median CPU seconds of one sweep on ``kernel`` (``gibbs_paths.sweep_time`` in CPU time).

    CPU time, not wall time: on a shared machine the wall time of a 10 ms sweep varied by a
    factor of 3 between runs, enough to flip a ratio.
    """
    from bnmfzoo.inference.gaussian.gibbs import _core as gc

    obs = gc.observed_entries(X)
    rng = np.random.default_rng(0)
    st = gc.nmf_state(np.ones((X.shape[0], rank)), np.ones((rank, X.shape[1])), 1.0, None, obs)
    gc.nmf_sweep(st, obs, HYPER, rng, kernel=kernel)
    cpu = []
    _median_time(lambda: gc.nmf_sweep(st, obs, HYPER, rng, kernel=kernel), repeats, cpu)
    return cpu[0], obs


def path_ratios():
    from benchmarks.speed.gibbs_paths import make_data

    sweep_time = sweep_cpu_time

    rng = np.random.default_rng(1)
    print(f"  {'shape':>10} {'mask':>9} {'obs':>5} {'gram ms':>9} {'resid ms':>9} "
          f"{'chosen':>18} {'chosen/other':>12}   (median CPU ms of 7 sweeps)")
    ratios = []
    for D, N in ((1000, 500), (4000, 1000)):
        for frac in (0.2, 0.5, 0.9):
            for kind in ("scattered", "block"):
                X = make_data(D, N, frac, kind, rng)
                t_gram, obs = sweep_time(X, RANK, "gram", 7)
                t_res, _ = sweep_time(X, RANK, "residual", 7)
                auto = obs.half_sweep_paths(RANK)
                if auto[0] != auto[1]:
                    t_mixed, _ = sweep_time(X, RANK, "auto", 7)
                    other = max(t_gram, t_res)  # both single paths are the alternatives
                    ratio, label = t_mixed / min(t_gram, t_res), "/".join(auto)
                else:
                    chosen = t_gram if auto[0] == "gram" else t_res
                    other = t_res if auto[0] == "gram" else t_gram
                    ratio, label = chosen / other, auto[0]
                ratios.append(ratio)
                print(f"  {D:>5}x{N:<4} {kind:>9} {frac:>5.1f} {t_gram * 1e3:>9.2f} "
                      f"{t_res * 1e3:>9.2f} {label:>18} {ratio:>12.2f}", flush=True)
    ratios = np.asarray(ratios)
    print(f"  chosen / other path: median {np.median(ratios):.2f}, worst {ratios.max():.2f}; "
          f"{int((ratios > 1.1).sum())} of {ratios.size} cases more than 10 % slower")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="7,200 x 1,000, 100,000 entries")
    parser.add_argument("--sweeps", type=int, default=5)
    parser.add_argument("--vb-iters", type=int, default=5)
    parser.add_argument("--paths-only", action="store_true", help="only part 4")
    parser.add_argument("--big-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    if args.paths_only:
        print("4. chosen / other Gram-residual path, scattered and block-missing masks, rank 10")
        path_ratios()
        return
    if args.big_only:
        res = big_run(size["D"], size["N"], size["n"], args.sweeps, args.vb_iters, args.out)
        print("RESULT " + json.dumps(res), flush=True)
        return
    print(f"1. {size['D']} x {size['N']}, {size['n']} observed, rank {RANK} (fresh process)")
    with tempfile.TemporaryDirectory() as tmp:
        data_path = Path(tmp) / "entries.npz"
        cmd = [sys.executable, "-m", "benchmarks.speed.scale", "--big-only", "--out",
               str(data_path), "--sweeps", str(args.sweeps), "--vb-iters", str(args.vb_iters)]
        if args.quick:
            cmd.append("--quick")
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        lines = out.stdout.strip().splitlines()
        print("\n".join(line for line in lines if not line.startswith("RESULT ")), flush=True)
        if out.returncode != 0:
            raise SystemExit("the large run failed")
        res = json.loads(lines[-1][len("RESULT "):])
        print("2. smurff 1.1 (BPMF, C++, one thread) on the same entries")
        sm = run_smurff(data_path, args.sweeps)
        if sm is not None:
            print(f"  smurff: {sm['sweep_s']:.3f} s per sweep (CPU {sm['sweep_cpu_s']:.3f} s; "
                  f"init {sm['init_s']:.2f} s). Ours / smurff per sweep: wall "
                  f"{res['gibbs_step_s'] / sm['sweep_s']:.2f}, CPU "
                  f"{res['gibbs_step_cpu_s'] / sm['sweep_cpu_s']:.2f} (GibbsNMF.step; numeric "
                  f"kernel {res['gibbs_kernel_cpu_s'] / sm['sweep_cpu_s']:.2f})")
    print("3. Gibbs sweep time against observed entries (density 1.39 %)")
    top = size["n"]
    sizes = [s for s in (10**4, 10**5, 10**6, 10**7) if s <= top]
    scaling(sizes, size["n"] / (size["D"] * size["N"]))
    print("4. chosen / other Gram-residual path, scattered and block-missing masks, rank 10")
    path_ratios()


if __name__ == "__main__":
    main()
