"""Signature discovery on synthetic COSMIC cohorts: ours, SigProfilerExtractor, scikit-learn.

Run from the project root (after ``make bench-env-sigprofiler``)::

    nice -n 10 .venv/bin/python -m benchmarks.signatures.versus_sigprofiler [--quick]
        [--designs flat flat_nb correlated ...] [--seed 0] [--spe-replicates 10]
        [--spe-wall-limit SECONDS]

For each design (:data:`RUNS`: a design of :mod:`bnmfzoo.datasets.signature_cohorts`, a number
of genomes, Poisson or negative-binomial counts) it draws one cohort and gives the same
catalogue and the same candidate ranks (``K_true - 3 .. K_true + 3``; ``--quick``: +-1) to

* **ours**: the rank by the count family's own criterion (``--ours-rank``: the VB evidence
  bound of Poisson NMF, :func:`bnmfzoo.inference.select_rank_poisson`, or of negative-binomial
  NMF, :func:`bnmfzoo.inference.select_rank_nb`; 2 restarts), then
  ``BayesianNMF(K, beta_loss="kullback-leibler")`` with its defaults; the signatures are the
  posterior means ``components_``;
* **modes**: the same rank, then the Gibbs posterior of the signatures' model
  (:mod:`bnmfzoo.signatures.modes`) from several starts, the chain of highest mean log joint
  density kept (a choice made from the data, never from the truth);
* **scikit-learn** ``NMF(beta_loss="kullback-leibler", solver="mu", init="nndsvda",
  max_iter=1000, tol=1e-6)``, the rank by held-out Poisson log-likelihood: binomial data
  thinning (10 % of each count held out), fit on the rest, the rank with the best held-out
  log-likelihood, then refit on all counts at that rank;
* **SigProfilerExtractor** 1.4 (``benchmarks/.venv-sigprofiler``, run as a subprocess by
  ``_sigprofiler_run.py``): its own rank choice (stability and reconstruction error) over the
  same candidate ranks, ``cpu=1``, with fewer NMF replicates and iterations than its defaults
  (100 replicates, at least 10,000 iterations each: hours per design on 2 cores); the settings
  used are printed and stored with the results. Its suggested de novo signatures are scored.
  With ``--spe-wall-limit`` a run still going after that many seconds of wall time is stopped
  (its whole process group) and reported as "did not finish", with the CPU it had used (a lower
  bound) and no scores; a run that fails gets a row with its last line of output instead of
  stopping the benchmark. Neither row is cached.

Scores: precision, recall and F1 at cosine cutoffs 0.8, 0.9 and 0.95
(:func:`bnmfzoo.signatures.discovery_scores`: one-to-one Hungarian pairs), the number of
signatures found, and CPU seconds (this process's ``time.process_time`` for ours and
scikit-learn; ``resource.getrusage(RUSAGE_CHILDREN)`` user + system for SigProfilerExtractor,
which counts its worker processes too). One table per design, printed and written to
``benchmarks/results/signatures_versus_sigprofiler.json``.

Each method's row and signatures are also stored per design, seed, ranks and (for
SigProfilerExtractor) settings under ``--cache-dir`` (``benchmarks/results/signatures_cache``),
with a fingerprint of the counts; methods named in ``--reuse`` (default: SigProfilerExtractor
only) are read from there instead of re-run, so changing ours does not re-run
SigProfilerExtractor.
"""

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS, ROOT
from bnmfzoo.datasets.signature_cohorts import DESIGNS, signature_cohort

SPE_PYTHON = ROOT / "benchmarks" / ".venv-sigprofiler" / "bin" / "python"
SPE_RUNNER = Path(__file__).with_name("_sigprofiler_run.py")
CUTOFFS = (0.8, 0.9, 0.95)
#: negative-binomial shape of the overdispersed designs: variance mu + mu^2 / 20 (at mu = 100,
#: six times the Poisson variance; in the range of the ESCC catalogues' Pearson ratios)
PHI = 20.0
#: label -> (design, genomes, overdispersion)
RUNS = {
    "flat": ("flat", 300, None),
    "flat_nb": ("flat", 300, PHI),
    "correlated": ("correlated", 500, None),
    "correlated_nb": ("correlated", 500, PHI),
    "mixed12": ("mixed12", 1000, None),
    "mixed12_nb": ("mixed12", 1000, PHI),
    "pancancer21": ("pancancer21", 2700, None),
}


# ------------------------------------------------------------------------------------ methods
def ours(X, ranks, *, seed, how="poisson"):
    """Rank by our VB evidence bound, then the KL (Poisson) posterior at that rank."""
    from bnmfzoo import BayesianNMF
    from bnmfzoo.inference import select_rank_nb, select_rank_poisson

    t0 = time.process_time()
    select = select_rank_poisson if how == "poisson" else select_rank_nb
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = select(X, ranks, restarts=2, random_seed=seed, progressbar=False)
        K = int(sel["rank"])
        est = BayesianNMF(n_components=K, beta_loss="kullback-leibler",
                          random_state=seed).fit(X)
    return dict(W=np.asarray(est.components_), K=K, cpu=time.process_time() - t0,
                detail={"criterion": f"select_rank_{how}",
                        "bound": {int(r): float(e) for r, e in zip(sel["ranks"], sel["elbo"])}})


def ours_modes(X, ranks, *, seed, how="poisson", n_starts=4):
    """Rank by our VB evidence bound, then the signatures' Gibbs posterior at that rank from
    several starts, keeping the chain of highest mean log joint density
    (:func:`bnmfzoo.signatures.modes.best_mode`)."""
    from bnmfzoo.inference import select_rank_nb, select_rank_poisson
    from bnmfzoo.signatures.assignment import align_draws, normalize_draws
    from bnmfzoo.signatures.modes import best_mode

    t0 = time.process_time()
    select = select_rank_poisson if how == "poisson" else select_rank_nb
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = select(X, ranks, restarts=2, random_seed=seed, progressbar=False)
    K = int(sel["rank"])
    r = best_mode(np.asarray(X, dtype=np.int64).T, K, n_starts=n_starts, random_seed=seed)
    sig, expo = normalize_draws(r["T_draws"], r["V_draws"])
    sig, expo, _ = align_draws(sig, expo)
    return dict(W=sig.mean(axis=0), K=K, cpu=time.process_time() - t0,
                detail={"criterion": f"select_rank_{how}", "n_starts": n_starts,
                        "log_joint": [float(v) for v in r["log_joint"]],
                        "chosen": int(r["chosen"])})


def ours_workflow(X, ranks, *, seed, genomes, channels, n_starts=0):
    """The signatures workflow with its defaults: P(K | data) by its default rank route (the
    compressive prior), signatures at the most probable rank (posterior means of its draws)."""
    import xarray as xr

    from bnmfzoo.signatures.workflow import extract

    t0 = time.process_time()
    cat = xr.DataArray(X, dims=("row", "col"), coords={"row": genomes, "col": channels})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = extract(cat, ranks, random_seed=seed, n_starts=n_starts)
    W = dt["signatures"]["mean"].transpose("signature", "channel")
    W = W.sel(channel=channels).values
    ranks_df = dt["ranks"].to_dataset().to_dataframe()
    return dict(W=W, K=int(dt.attrs["rank"]), cpu=time.process_time() - t0,
                detail={"criterion": dt["ranks"].attrs.get("rank_method", "chib"),
                        "note": dt.attrs["note"],
                        "probability": {int(k): float(v) for k, v in
                                        ranks_df["probability"].items()}})


def _poisson_ll(x, mu):
    from scipy.special import gammaln

    mu = np.maximum(mu, 1e-300)
    return float((x * np.log(mu) - mu - gammaln(x + 1)).sum())


def sklearn_heldout(X, ranks, *, seed, frac=0.1):
    """scikit-learn KL-NMF, rank by held-out Poisson log-likelihood (binomial thinning)."""
    from sklearn.decomposition import NMF

    t0 = time.process_time()
    rng = np.random.default_rng(seed)
    test = rng.binomial(X.astype(np.int64), frac).astype(float)
    train = X - test

    def fit(Y, K):
        m = NMF(n_components=K, beta_loss="kullback-leibler", solver="mu", init="nndsvda",
                max_iter=1000, tol=1e-6, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            A = m.fit_transform(Y)
        return A, m.components_

    ll = {}
    for K in ranks:
        A, W = fit(train, K)
        ll[int(K)] = _poisson_ll(test, (frac / (1 - frac)) * (A @ W))
    K = max(ll, key=ll.get)
    _, W = fit(X, K)
    return dict(W=W, K=K, cpu=time.process_time() - t0,
                detail={"criterion": "held-out Poisson log-likelihood (10 % thinning)",
                        "heldout_ll": ll})


def write_catalog(path, X, channels, genomes):
    """SigProfiler's matrix layout: a ``MutationType`` column, one column per genome."""
    with open(path, "w") as fh:
        fh.write("MutationType\t" + "\t".join(genomes) + "\n")
        for ch, row in zip(channels, X.T.astype(np.int64)):
            fh.write(ch + "\t" + "\t".join(map(str, row)) + "\n")


def read_signatures(path):
    """Signatures (K x 96) and channel labels from a SigProfiler signatures file."""
    with open(path) as fh:
        lines = [ln.rstrip("\n").split("\t") for ln in fh if ln.strip()]
    channels = [r[0] for r in lines[1:]]
    W = np.array([[float(v) for v in r[1:]] for r in lines[1:]]).T
    return W, channels


def run_limited(cmd, *, env=None, wall_limit=None):
    """Run ``cmd`` in its own process group; stop the whole group after ``wall_limit`` s.

    Returns ``returncode``, combined ``output``, ``wall`` seconds, ``timed_out`` and ``cpu``: the
    user + system CPU of the reaped child processes (``RUSAGE_CHILDREN``), which counts the
    workers the child itself waited for. When the group is killed, workers still running are
    not reaped by us and their CPU is missing: ``cpu`` is then a lower bound.
    """
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=wall_limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the process started above
            proc.wait()
        log.seek(0)
        output = log.read()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dict(returncode=proc.returncode, output=output, wall=time.perf_counter() - w0,
                timed_out=timed_out,
                cpu=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))


def sigprofiler(X, channels, genomes, ranks, *, settings, workdir, wall_limit=None):
    """SigProfilerExtractor in its own venv; CPU of the child processes. With ``wall_limit``
    (seconds) a run still going then is stopped and returned with ``W = K = None``."""
    if not SPE_PYTHON.exists():
        raise SystemExit(f"{SPE_PYTHON} is missing: run `make bench-env-sigprofiler` first")
    catalog = Path(workdir) / "catalog.txt"
    out = Path(workdir) / "spe"
    write_catalog(catalog, X, channels, genomes)
    cmd = [str(SPE_PYTHON), str(SPE_RUNNER), str(catalog), str(out), "--min", str(min(ranks)),
           "--max", str(max(ranks)), "--replicates", str(settings["replicates"]),
           "--min-iter", str(settings["min_iter"]), "--max-iter", str(settings["max_iter"]),
           "--test-conv", str(settings["test_conv"]), "--cpu", "1"]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    proc = run_limited(cmd, env=env, wall_limit=wall_limit)
    (Path(workdir) / "spe.log").write_text(proc["output"])
    # ranks it finished: "... the minimum process stability is S for K signatures" in its log
    done = {int(k): float(v) for v, k in re.findall(
        r"minimum process stability is (\S+) for (\d+) signatures", proc["output"])}
    if proc["timed_out"]:
        print(f"  sigprofiler: did not finish in {wall_limit:g} s of wall time (stopped)",
              flush=True)
        return dict(W=None, K=None, cpu=proc["cpu"],
                    detail={"wall": proc["wall"], "settings": settings,
                            "status": f"did not finish in {wall_limit:g} s of wall time",
                            "min_stability_of_finished_ranks": done,
                            "log_tail": proc["output"][-2000:]})
    if proc["returncode"] != 0:  # a row saying how it failed, rather than no table at all
        last = [ln for ln in proc["output"].splitlines() if ln.strip()][-1:] or [""]
        print(f"  sigprofiler: failed ({proc['returncode']}): {last[0]}", flush=True)
        return dict(W=None, K=None, cpu=proc["cpu"],
                    detail={"wall": proc["wall"], "settings": settings,
                            "status": f"failed (exit {proc['returncode']}): {last[0]}",
                            "min_stability_of_finished_ranks": done,
                            "log_tail": proc["output"][-3000:]})
    res = json.loads((out / "result.json").read_text())
    W, chans = read_signatures(res["signatures"])
    order = [chans.index(c) for c in channels]
    return dict(W=W[:, order], K=W.shape[0], cpu=proc["cpu"],
                detail={"wall": proc["wall"], "settings": settings,
                        "solutions_stat": res.get("stats"),
                        "min_stability_of_finished_ranks": done})


# ---------------------------------------------------------------------------------- scoring
def score(W, truth):
    from bnmfzoo.signatures import discovery_scores

    s = discovery_scores(W, truth, cutoffs=CUTOFFS)
    return {f"{c:g}": {k: float(s.loc[c, k]) for k in ("precision", "recall", "f1")}
            for c in s.index}


def print_table(label, info, rows):
    print(f"\n## {label}: {info}")
    print(f"| method | K found (true {rows[0]['K_true']}) | F1 0.8 | F1 0.9 | F1 0.95 | "
          "precision / recall 0.9 | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["scores"]
        if s is None:
            bound = ">= " if r["detail"]["status"].startswith("did not finish") else ""
            print(f"| {r['method']} | {r['detail']['status']} | | | | | {bound}{r['cpu']:.1f} |",
                  flush=True)
            continue
        print(f"| {r['method']} | {r['K']} | {s['0.8']['f1']:.3f} | {s['0.9']['f1']:.3f} | "
              f"{s['0.95']['f1']:.3f} | {s['0.9']['precision']:.2f} / "
              f"{s['0.9']['recall']:.2f} | {r['cpu']:.1f} |", flush=True)


# ------------------------------------------------------------------------------------ cache
def _cache_key(label, seed, method, n, ranks, settings):
    """File stem of one method's result on one cohort (design, size, seed, ranks, settings)."""
    key = f"{label}_n{n}_seed{seed}_r{ranks[0]}-{ranks[-1]}_{method}"
    if settings:
        key += "_rep{replicates}_it{min_iter}-{max_iter}_conv{test_conv}".format(**settings)
    return key


def _cache_path(cache_dir, key):
    return Path(cache_dir) / f"{key}.json"


def _fingerprint(X):
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(X, dtype=np.int64).tobytes()).hexdigest()[:16]


def _cache_load(cache_dir, key, X):
    """A cached row for this exact catalogue (same counts fingerprint), or ``None``."""
    path = _cache_path(cache_dir, key)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("fingerprint") != _fingerprint(X):
        print(f"  cache {path} is for another catalogue: recomputing", flush=True)
        return None
    return data


def _cache_store(cache_dir, key, X, row, W):
    """Write one method's row and its signatures (for re-scoring) as JSON."""
    path = _cache_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fingerprint": _fingerprint(X), "row": row,
                                "W": np.asarray(W).tolist()}, indent=1))


def run_design(label, *, seed, quick, settings, ours_rank, methods, cache_dir=None,
               reuse=(), workflow_starts=0, spe_wall_limit=None):
    design, n, phi = RUNS[label]
    if quick:
        n = min(n, 200)
    c = signature_cohort(design, n_genomes=n, overdispersion=phi, random_seed=seed)
    X = c.counts.values
    truth = c.signatures.values
    K_true = c.rank
    span = 1 if quick else 3
    ranks = list(range(max(1, K_true - span), K_true + span + 1))
    info = (f"{DESIGNS[design].description}; {n} genomes x 96, K = {K_true} "
            f"({', '.join(c.signatures.signature.values)}), "
            f"{'NB phi = %g' % phi if phi else 'Poisson'}, {int(X.sum()):,} mutations, "
            f"seed {seed}, candidate ranks {ranks[0]}-{ranks[-1]}")
    print(f"\n# {label}: {info}", flush=True)
    cache_dir = RESULTS / "signatures_cache" if cache_dir is None else cache_dir
    rows = []
    for m in methods:
        key = _cache_key(label, seed, m, n, ranks, settings if m == "sigprofiler" else None)
        cached = _cache_load(cache_dir, key, X) if m in reuse else None
        if cached is not None:
            row = dict(cached["row"], cached=str(_cache_path(cache_dir, key)))
            print(f"  {m}: cached ({row['cached']}): K = {row['K']}, "
                  f"F1@0.9 = {row['scores']['0.9']['f1']:.3f}, CPU {row['cpu']:.1f} s",
                  flush=True)
            rows.append(row)
            continue
        if m == "ours":
            r = ours(X, ranks, seed=seed, how=ours_rank)
            name = f"ours (BayesianNMF KL, rank by {r['detail']['criterion']})"
        elif m == "modes":
            r = ours_modes(X, ranks, seed=seed, how=ours_rank)
            name = (f"ours (rank by {r['detail']['criterion']}, Gibbs from a consensus and "
                    f"{r['detail']['n_starts']} random starts, best log joint)")
        elif m == "workflow":
            r = ours_workflow(X, ranks, seed=seed, genomes=[str(v) for v in c.counts.row.values],
                              channels=[str(v) for v in c.counts.col.values],
                              n_starts=workflow_starts)
            name = (f"ours (signatures.extract defaults, n_starts={workflow_starts}: "
                    f"{r['detail']['criterion']})")
        elif m == "sklearn":
            r = sklearn_heldout(X, ranks, seed=seed)
            name = "scikit-learn KL-NMF (rank by held-out likelihood)"
        else:
            with tempfile.TemporaryDirectory(prefix="spe_") as tmp:
                r = sigprofiler(X, [str(v) for v in c.counts.col.values],
                                [str(v) for v in c.counts.row.values], ranks,
                                settings=settings, workdir=tmp, wall_limit=spe_wall_limit)
            name = (f"SigProfilerExtractor 1.4.1 ({settings['replicates']} replicates, "
                    f">= {settings['min_iter']} it)")
        if r["W"] is None:  # stopped at its wall-clock limit, or failed: no scores, not cached
            row = dict(method=name, key=m, K=None, K_true=K_true, cpu=r["cpu"], scores=None,
                       detail=r["detail"])
            rows.append(row)
            continue
        row = dict(method=name, key=m, K=r["K"], K_true=K_true, cpu=r["cpu"],
                   scores=score(r["W"], truth), detail=r["detail"])
        _cache_store(cache_dir, key, X, row, r["W"])
        print(f"  {m}: K = {r['K']}, F1@0.9 = {row['scores']['0.9']['f1']:.3f}, "
              f"CPU {r['cpu']:.1f} s", flush=True)
        rows.append(row)
    print_table(label, info, rows)
    return dict(label=label, info=info, design=design, n_genomes=n, overdispersion=phi,
                seed=seed, K_true=K_true, ranks=ranks, rows=rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="flat design, 200 genomes, ranks K +- 1, 3 SPE replicates")
    p.add_argument("--designs", nargs="+", choices=sorted(RUNS),
                   default=["flat", "flat_nb", "correlated", "correlated_nb", "mixed12"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--methods", nargs="+",
                   choices=["workflow", "ours", "modes", "sklearn", "sigprofiler"],
                   default=["workflow", "ours", "modes", "sklearn", "sigprofiler"])
    p.add_argument("--ours-rank", choices=["poisson", "nb"], default="poisson")
    p.add_argument("--workflow-starts", type=int, default=0,
                   help="n_starts of signatures.extract (the workflow method)")
    p.add_argument("--spe-replicates", type=int, default=10)
    p.add_argument("--spe-min-iter", type=int, default=2000)
    p.add_argument("--spe-max-iter", type=int, default=10000)
    p.add_argument("--spe-test-conv", type=int, default=1000)
    p.add_argument("--spe-wall-limit", type=float, default=None,
                   help="seconds of wall time after which a SigProfilerExtractor run is stopped "
                        "and reported as not finished (default: no limit)")
    p.add_argument("--out", default=str(RESULTS / "signatures_versus_sigprofiler.json"))
    p.add_argument("--cache-dir", default=str(RESULTS / "signatures_cache"),
                   help="each method's result per design and seed is stored here as JSON")
    p.add_argument("--reuse", nargs="*", default=["sigprofiler"],
                   choices=["workflow", "ours", "modes", "sklearn", "sigprofiler"],
                   help="methods whose cached result (same catalogue, ranks and settings) is "
                        "read instead of re-run (default: sigprofiler only)")
    a = p.parse_args(argv)
    designs = ["flat"] if a.quick else a.designs
    settings = dict(replicates=3 if a.quick else a.spe_replicates, min_iter=a.spe_min_iter,
                    max_iter=a.spe_max_iter, test_conv=a.spe_test_conv, cpu=1,
                    defaults="replicates 100, min_nmf_iterations 10000, max 1,000,000, "
                             "nmf_test_conv 10000, cpu all")
    cmd = [Path(sys.executable).name, "-m", __spec__.name] + (argv or sys.argv[1:])
    print(f"command: {' '.join(cmd)}")
    print(f"SigProfilerExtractor settings: {settings}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = []
    for label in designs:
        results.append(run_design(label, seed=a.seed, quick=a.quick, settings=settings,
                                  ours_rank=a.ours_rank, methods=a.methods,
                                  cache_dir=a.cache_dir, reuse=set(a.reuse),
                                  workflow_starts=a.workflow_starts,
                                  spe_wall_limit=a.spe_wall_limit))
        out.write_text(json.dumps({"settings": settings, "spe_wall_limit": a.spe_wall_limit,
                                   "command": " ".join(cmd), "results": results}, indent=1))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
