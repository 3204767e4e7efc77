"""Converged answers per CPU second: ours by default vs PyMC's NUTS and nutpie, in one run.

For each data set (GDSC at rank 5, CCLE IC50 at rank 3, the Gaussian model of
:func:`bnmfzoo.models.exponential_gaussian`) the same model is sampled three ways, each called
explicitly (PyMC may silently switch ``pm.sample`` to nutpie when nutpie is importable):

* **ours**: ``pm.sample()`` with no ``step=``: ``import bnmfzoo`` makes it pick
  :class:`~bnmfzoo.inference.GibbsNMF` with its defaults;
* **NUTS**: PyMC's own NUTS (``nuts_sampler="pymc"`` inside ``pymc_default_steps()``);
* **nutpie** (0.16): ``nutpie.compile_pymc_model`` + ``nutpie.sample`` (compile time printed
  apart, not counted).

Each run is 2 chains, one process, one BLAS thread; the cost is the CPU seconds of the
sampling call (``time.process_time``, all threads). Each result is aligned
(:func:`bnmfzoo.diagnostics.align`), then the bulk ESS of every entry of ``A`` and ``W``, of the
normalized signatures (rows of ``W`` divided by their sums) and of the exposures (``A`` times
those sums) is divided by the CPU seconds; the table prints the minimum and the median over
entries and the ratios ours / NUTS and ours / nutpie. The machine may be shared: only the
ratios, measured in the same run, are meaningful. Run from the project root::

    python -m benchmarks.speed.converged                       # both data sets
    python -m benchmarks.speed.converged --data gdsc --nuts-draws 300

nutpie is not a dependency; install it beside the environment (``pip install --target DIR
nutpie==0.16.11`` plus its pyarrow, arro3-core, obstore) and pass ``--nutpie-path DIR``.
"""

import argparse
import sys
import time

import numpy as np

import benchmarks  # noqa: F401 - environment defaults

DATA = {"gdsc": ("load_gdsc", {}, 5), "ccle": ("load_ccle", {"measure": "ic50"}, 3)}


def _load(name):
    import bnmfzoo as bz

    fn, kw, rank = DATA[name]
    X = getattr(bz.datasets, fn)(*kw.values())
    return X, rank


def quantities(A, W):
    """The read quantities: (chain, draw, ...) arrays of A, W, signatures, exposures."""
    s = W.sum(axis=-1, keepdims=True)  # (c, d, K, 1)
    return {"A": A, "W": W, "signatures": W / s, "exposures": A * np.swapaxes(s, -1, -2)}


def ess_table(A, W, seconds, cells=None):
    """Per quantity: (min ESS/s, median ESS/s, max R-hat, min ESS) after ``align``; with
    ``cells = (rows, cols)`` also those cells of ``A @ W``."""
    import arviz as az
    import xarray as xr

    import bnmfzoo as bz

    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({
        "A": (("chain", "draw", "row", "factor"), A),
        "W": (("chain", "draw", "factor", "col"), W)})})
    al = bz.diagnostics.align(dt, warn=False)["posterior"]
    Aa, Wa = al["A"].values, al["W"].values
    q = quantities(Aa, Wa)
    if cells is not None:
        i, j = cells
        q["A@W"] = np.einsum("cdik,cdki->cdi", Aa[:, :, i, :], Wa[:, :, :, j])
    out = {}
    for name, arr in q.items():
        dims = ("chain", "draw") + tuple(f"d{i}" for i in range(arr.ndim - 2))
        ds = xr.Dataset({name: (dims, arr)})
        ess = az.ess(ds, method="bulk")[name].values.ravel()
        rhat = az.rhat(ds)[name].values.ravel()
        out[name] = (float(np.nanmin(ess)) / seconds, float(np.nanmedian(ess)) / seconds,
                     float(np.nanmax(rhat)), float(np.nanmin(ess)))
    return out


def arrays(posterior):
    return np.asarray(posterior["A"].values), np.asarray(posterior["W"].values)


def run(name, draws, tune, nuts_draws, seed, use_nutpie):
    import pymc as pm

    from bnmfzoo.inference._step_glue import pymc_default_steps
    from bnmfzoo.models import exponential_gaussian

    X, rank = _load(name)
    model = exponential_gaussian(X, rank)
    runs = {}
    with model:
        t = time.process_time()
        dt = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                       progressbar=False, compute_convergence_checks=False)
        runs["ours"] = (arrays(dt["posterior"]), time.process_time() - t,
                        f"{draws}+{tune} x 2")
        t = time.process_time()
        with pymc_default_steps():
            dt = pm.sample(draws=nuts_draws, tune=nuts_draws, chains=2, cores=1,
                           nuts_sampler="pymc", random_seed=seed, progressbar=False,
                           compute_convergence_checks=False)
        runs["NUTS"] = (arrays(dt["posterior"]), time.process_time() - t,
                        f"{nuts_draws}+{nuts_draws} x 2")
    if use_nutpie:
        import nutpie

        t = time.process_time()
        compiled = nutpie.compile_pymc_model(model)
        compile_s = time.process_time() - t
        t = time.process_time()
        tr = nutpie.sample(compiled, draws=nuts_draws, tune=nuts_draws, chains=2, cores=1,
                           seed=seed, progress_bar=False)
        post = tr.posterior if hasattr(tr, "posterior") else tr["posterior"]
        runs[f"nutpie {nutpie.__version__}"] = (arrays(post), time.process_time() - t,
                                                f"{nuts_draws}+{nuts_draws} x 2")
        print(f"nutpie compile: {compile_s:.1f} CPU s (not counted)")
    tables = {k: ess_table(*arr, sec) for k, (arr, sec, _) in runs.items()}
    print(f"\n{name}, rank {rank}, {X.shape[0]} x {X.shape[1]}: ESS per CPU second of the "
          "aligned quantities (min over entries / median)")
    for k, (_, sec, length) in runs.items():
        print(f"  {k:14s} {length:>16s} draws, {sec:7.1f} CPU s")
    head = f"  {'quantity':11s} {'sampler':14s} {'min ESS/s':>10s} {'median':>9s} " \
           f"{'max R-hat':>9s} {'min ESS':>8s} {'ratio min':>10s} {'ratio med':>10s}"
    print(head)
    for q in ("A", "W", "signatures", "exposures"):
        ours = tables["ours"][q]
        for k, tab in tables.items():
            mn, md, rh, me = tab[q]
            rmin = ours[0] / mn if k != "ours" and mn > 0 else float("nan")
            rmed = ours[1] / md if k != "ours" and md > 0 else float("nan")
            print(f"  {q:11s} {k:14s} {mn:10.3f} {md:9.2f} {rh:9.3f} {me:8.0f} "
                  f"{rmin:10.1f} {rmed:10.1f}")
    print("  target: ours >= 20x NUTS and nutpie, min and median")
    return tables


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=list(DATA), nargs="+", default=list(DATA))
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--nuts-draws", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nutpie-path", default=None,
                        help="a folder holding nutpie and its dependencies (appended to sys.path)")
    args = parser.parse_args()
    if args.nutpie_path:
        sys.path.append(args.nutpie_path)
    try:
        import nutpie  # noqa: F401
        use_nutpie = True
    except ImportError:
        print("(nutpie is not importable: skipped)")
        use_nutpie = False
    for name in args.data:
        run(name, args.draws, args.tune, args.nuts_draws, args.seed, use_nutpie)


if __name__ == "__main__":
    main()
