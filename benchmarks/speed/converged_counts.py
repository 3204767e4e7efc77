"""Converged count answers per CPU second: ours by default vs PyMC's NUTS and nutpie, one run.

The count version of :mod:`benchmarks.speed.converged`. Each data set is fitted with
:func:`bnmfzoo.models.poisson` (Gamma(1, 1) priors) three ways, each called explicitly:

* **ours**: ``pm.sample()`` with no ``step=`` (``import bnmfzoo`` makes it pick
  :class:`~bnmfzoo.inference.GibbsPoisson` with its defaults);
* **NUTS**: PyMC's own NUTS (``nuts_sampler="pymc"`` inside ``pymc_default_steps()``);
* **nutpie** (0.16): ``nutpie.compile_pymc_model`` + ``nutpie.sample`` (compile time printed
  apart, not counted).

Data (``--data``): ``breast4`` / ``breast8`` (21 breast SBS96 catalogues at K = 4 / 8),
``escc4`` / ``escc8`` (552 ESCC catalogues), ``reuters6`` (the Reuters word counts at K = 6:
the stored set has 395 documents, all used, so it stands in for the 1,000-document subset;
passed as a sparse matrix, so every sampler's model has the sparse likelihood of the
nonzeros plus the zero-mass term).

By default (``--init nmf``) every chain of every sampler starts at the same point, the
KL-NMF solution of scikit-learn, without jitter: the catalogues' posteriors at K = 4 and 8
have several modes, and the mixing within one is what is measured. Each run is 2 chains,
one process, one BLAS thread; the cost is the CPU seconds of the sampling call
(``time.process_time``). Each result is aligned (:func:`bnmfzoo.diagnostics.align`);
then the bulk ESS of every entry of ``A`` and ``W``, of the normalized signatures (rows of
``W`` divided by their sums), of the exposures (``A`` times those sums) and of up to
``--cells`` cells of ``A @ W`` (a fixed random set) is divided by the CPU seconds; the table
prints the minimum and the median over entries and the ratios
ours / NUTS and ours / nutpie. The machine may be shared: only the ratios, measured in the
same run, are meaningful.

``--umi`` adds the cost check at UMI size: the whole ``pm.sample`` call per draw of ours on
``bz.models.poisson(X, 6)`` of a synthetic 3,774 x 16,791 matrix of UMI-like sparsity
(:func:`benchmarks.speed.counts_gibbs.synthetic_umi`), against one scikit-learn KL-NMF MU
iteration on the same matrix in the same run (target <= 1/5). Run from the project root::

    python -m benchmarks.speed.converged_counts --nutpie-path DIR          # all five rows
    python -m benchmarks.speed.converged_counts --data breast4 --nuts-draws 300
    python -m benchmarks.speed.converged_counts --data --umi                # UMI cost only
    python -m benchmarks.speed.converged_counts --data breast4 --ours hmc   # ours = HMC moves

``--ours hmc`` runs ours as ``step=GibbsPoisson(moves="hmc")`` (HMC on the log factors,
:mod:`bnmfzoo.inference.counts.gibbs._hmc_moves`, trajectory lengths learned during tuning;
``--n-leap L`` fixes them) instead of ``pm.sample()``'s own choice; ``--shear on off`` runs
it with and without the exact shear move after each transition (one run each, same seed)::

    python -m benchmarks.speed.converged_counts --data breast4 --ours hmc --shear on off

nutpie is not a dependency; install it beside the environment (``pip install --target DIR
nutpie==0.16.11`` plus its pyarrow, arro3-core, obstore) and pass ``--nutpie-path DIR``.
"""

import argparse
import sys
import time

import numpy as np

import benchmarks  # noqa: F401 - environment defaults
from benchmarks.speed.converged import arrays, ess_table

DATA = {"breast4": ("breast", 4), "breast8": ("breast", 8), "escc4": ("escc", 4),
        "escc8": ("escc", 8), "reuters6": ("reuters", 6)}


def load(name):
    """``(X, K)``: the counts (dense int array or scipy CSR) and the rank of a data row."""
    import bnmfzoo as bz

    source, rank = DATA[name]
    if source == "reuters":
        X = bz.datasets.load_reuters(sparse=True).X
        return X.tocsr(), rank
    X = np.rint(np.asarray(bz.datasets.load_sbs96(source).values)).astype(np.int64)
    return X, rank


def nmf_start(X, rank):
    """A common start for every chain of every sampler: scikit-learn's KL-NMF (200 MU
    iterations from NNDSVDa), entries clipped at 1e-3 (the Gamma priors' support is > 0)."""
    import warnings

    from sklearn.decomposition import NMF

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = NMF(rank, beta_loss="kullback-leibler", solver="mu", init="nndsvda",
                  max_iter=200, random_state=0)
        A = est.fit_transform(X.astype(float))
    return np.maximum(A, 1e-3), np.maximum(est.components_, 1e-3)


def run(name, draws, tune, nuts_draws, seed, use_nutpie, n_cells, init="nmf", ours="default",
        n_leap=None, masses=(None,), shears=(None,)):
    import pymc as pm

    from bnmfzoo.inference import GibbsPoisson
    from bnmfzoo.inference._step_glue import pymc_default_steps
    from bnmfzoo.models import poisson

    X, rank = load(name)
    D, N = X.shape
    rng = np.random.default_rng(0)
    flat = np.sort(rng.choice(D * N, size=min(n_cells, D * N), replace=False))
    cells = np.divmod(flat, N)
    model = poisson(X, rank)
    runs = {}
    variants = [(m, sh) for m in masses for sh in shears]
    start, nuts_init, nutpie_kw = {}, {}, {}
    if init == "nmf":  # every chain of every sampler starts at the same point, not jittered
        A0, W0 = nmf_start(X, rank)
        start = {"initvals": [{"A": A0, "W": W0}] * 2}
        nuts_init = {"init": "adapt_diag"}
        nutpie_kw = {"initial_points": {"A": A0, "W": W0}, "jitter_rvs": set()}
    with model:
        # numba kernels load from (or fill) their on-disk cache once: not timed
        pm.sample(draws=2, tune=1, chains=1, cores=1, random_seed=seed, progressbar=False,
                  compute_convergence_checks=False)
        for mass, shear in variants if ours != "default" else ():
            pm.sample(draws=2, tune=1, chains=1, cores=1, random_seed=seed, progressbar=False,
                      compute_convergence_checks=False,
                      step=GibbsPoisson(moves="hmc", n_leap=n_leap, mass=mass, shear=shear))
        # ours: plain pm.sample(), or (--ours hmc) step=GibbsPoisson(moves="hmc"), one run per
        # --mass and --shear (the first is "ours", the others "ours <mass> <shear>")
        for i, (mass, shear) in enumerate(variants if ours != "default" else [(None, None)]):
            key = "ours" if i == 0 else "ours " + " ".join(
                str(v) for v in (mass, None if shear is None else f"shear={shear}")
                if v is not None)
            mine = {} if ours == "default" else {
                "step": GibbsPoisson(moves="hmc", n_leap=n_leap, mass=mass, shear=shear)}
            t = time.process_time()
            dt = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                           progressbar=False, compute_convergence_checks=False, **start, **mine)
            runs[key] = (arrays(dt["posterior"]), time.process_time() - t,
                         f"{draws}+{tune} x 2")
            if "step" in mine and mine["step"].hmc_state is not None:
                s = mine["step"].hmc_state  # the last chain's frozen tuning
                leaps = s["leaps"] if s["leaps"] is not None else [mine["step"]._hmc.n_leap]
                print(f"{key} (last chain, mass {mine['step']._hmc.mass}, rank "
                      f"{s.get('lam', np.zeros(0)).size}): step size {np.exp(s['log_eps']):.3f},"
                      f" leapfrog steps per transition mean {np.mean(leaps):.1f}, quartiles "
                      f"{np.percentile(leaps, [25, 50, 75])}, slow time "
                      f"{s.get('slow_time', float('nan')):.2f}, variances "
                      f"{np.round(s.get('lam', np.zeros(0)), 2)}")
            del dt
        t = time.process_time()
        with pymc_default_steps():
            dt = pm.sample(draws=nuts_draws, tune=nuts_draws, chains=2, cores=1,
                           nuts_sampler="pymc", random_seed=seed, progressbar=False,
                           compute_convergence_checks=False, **start, **nuts_init)
        runs["NUTS"] = (arrays(dt["posterior"]), time.process_time() - t,
                        f"{nuts_draws}+{nuts_draws} x 2")
    if use_nutpie:
        import nutpie

        t = time.process_time()
        compiled = nutpie.compile_pymc_model(model, **nutpie_kw)
        compile_s = time.process_time() - t
        t = time.process_time()
        tr = nutpie.sample(compiled, draws=nuts_draws, tune=nuts_draws, chains=2, cores=1,
                           seed=seed, progress_bar=False)
        post = tr.posterior if hasattr(tr, "posterior") else tr["posterior"]
        runs[f"nutpie {nutpie.__version__}"] = (arrays(post), time.process_time() - t,
                                                f"{nuts_draws}+{nuts_draws} x 2")
        print(f"nutpie compile: {compile_s:.1f} CPU s (not counted)")
    tables = {k: ess_table(*arr, sec, cells) for k, (arr, sec, _) in runs.items()}
    print(f"\n{name}: Poisson, K = {rank}, {D} x {N}: ESS per CPU second of the aligned "
          "quantities (min over entries / median)")
    for k, (_, sec, length) in runs.items():
        print(f"  {k:14s} {length:>16s} draws, {sec:7.1f} CPU s")
    print(f"  {'quantity':11s} {'sampler':14s} {'min ESS/s':>10s} {'median':>9s} "
          f"{'max R-hat':>9s} {'min ESS':>8s} {'ratio min':>10s} {'ratio med':>10s}")
    for q in ("A", "W", "signatures", "exposures", "A@W"):
        ours = tables["ours"][q]
        for k, tab in tables.items():
            mn, md, rh, me = tab[q]
            rmin = ours[0] / mn if k != "ours" and mn > 0 else float("nan")
            rmed = ours[1] / md if k != "ours" and md > 0 else float("nan")
            print(f"  {q:11s} {k:14s} {mn:10.3f} {md:9.2f} {rh:9.3f} {me:8.0f} "
                  f"{rmin:10.1f} {rmed:10.1f}")
    for mine in [k for k in tables if k.startswith("ours ")]:  # the other masses' ratios
        print(f"  {mine}: ratio min / median against " + "; ".join(
            f"{k} " + ", ".join(f"{q} {tables[mine][q][0] / tab[q][0]:.1f} / "
                                f"{tables[mine][q][1] / tab[q][1]:.1f}"
                                for q in ("A", "W", "signatures", "exposures", "A@W"))
            for k, tab in tables.items() if not k.startswith("ours")))
    print("  target: ours >= 10x NUTS and nutpie, min and median", flush=True)
    return tables


def umi_cost(rank, draws, sk_iters, repeats):
    """Whole ``pm.sample`` CPU per draw of ours vs one sklearn KL-MU iteration (same run)."""
    import warnings

    import pymc as pm
    from sklearn.decomposition import NMF

    import bnmfzoo as bz
    from benchmarks.speed.counts_gibbs import synthetic_umi

    X = synthetic_umi(3774, 16791, 2_700_000, rank)
    model = bz.models.poisson(X, rank)

    def ours(n):
        with model:
            t = time.process_time()
            pm.sample(draws=n, tune=1, chains=1, cores=1, random_seed=1, progressbar=False,
                      compute_convergence_checks=False)
            return time.process_time() - t

    def sk(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            NMF(rank, beta_loss="kullback-leibler", solver="mu", max_iter=n, tol=0.0,
                init="random", random_state=0).fit(X)
            return time.process_time() - t

    ours(1)  # numba's cache, PyTensor's compilation
    rows = []
    for _ in range(repeats):  # interleaved rounds: both see the same machine state
        t_small, t_big = ours(1), ours(1 + draws)
        s_small, s_big = sk(1), sk(1 + sk_iters)
        rows.append(((t_big - t_small) / draws, t_big / (2 + draws),
                     (s_big - s_small) / sk_iters))
    r = np.array(rows)
    print(f"\nUMI size: {X.shape[0]} x {X.shape[1]}, {X.nnz} nonzeros, "
          f"{int(X.sum())} counts, K = {rank}")
    for i, (a, b, c) in enumerate(r):
        print(f"  round {i}: pm.sample per draw {1e3 * a:.1f} ms (whole call / draws "
              f"{1e3 * b:.1f} ms), sklearn MU iteration {1e3 * c:.1f} ms")
    med = np.median(r, axis=0)
    print(f"  median: pm.sample per draw {1e3 * med[0]:.1f} ms, whole call / draws "
          f"{1e3 * med[1]:.1f} ms, sklearn iteration {1e3 * med[2]:.1f} ms; ratios "
          f"{np.median(r[:, 0] / r[:, 2]):.3f} (per draw) and "
          f"{np.median(r[:, 1] / r[:, 2]):.3f} (whole call incl. setup) (target <= 0.2)")
    return r


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=list(DATA), nargs="*", default=list(DATA))
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--nuts-draws", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cells", type=int, default=500,
                        help="cells of A @ W whose ESS is measured (a fixed random set)")
    parser.add_argument("--nutpie-path", default=None,
                        help="a folder holding nutpie and its dependencies (appended to sys.path)")
    parser.add_argument("--init", choices=("nmf", "default"), default="nmf",
                        help="nmf: every chain starts at scikit-learn's KL-NMF solution (the "
                             "mixing within one mode is measured); default: each sampler's own")
    parser.add_argument("--ours", choices=("default", "hmc"), default="default",
                        help="default: plain pm.sample() (the cost model's choice); hmc: "
                             "step=GibbsPoisson(moves='hmc')")
    parser.add_argument("--n-leap", type=int, default=None,
                        help="with --ours hmc: a fixed number of leapfrog steps (default: "
                             "learned during tuning)")
    parser.add_argument("--mass", nargs="+", default=[None],
                        choices=("diag", "exposures", "krylov", "span"),
                        help="with --ours hmc: HMC's mass, one run of ours per value (default: "
                             "HmcAdapter's); ratios against the first")
    parser.add_argument("--shear", nargs="+", default=[None], choices=("on", "off"),
                        help="with --ours hmc: the exact shear move after each transition on or "
                             "off, one run of ours per value (default: GibbsPoisson's); ratios "
                             "against the first")
    parser.add_argument("--umi", action="store_true", help="also the UMI-size cost check")
    parser.add_argument("--umi-draws", type=int, default=10)
    parser.add_argument("--umi-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.nutpie_path:
        sys.path.append(args.nutpie_path)
    try:
        import nutpie  # noqa: F401
        use_nutpie = True
    except ImportError:
        print("(nutpie is not importable: skipped)")
        use_nutpie = False
    for name in args.data:
        run(name, args.draws, args.tune, args.nuts_draws, args.seed, use_nutpie, args.cells,
            args.init, args.ours, args.n_leap, tuple(args.mass),
            tuple(None if v is None else v == "on" for v in args.shear))
    if args.umi:
        umi_cost(6, args.umi_draws, 3, args.umi_repeats)


if __name__ == "__main__":
    main()
