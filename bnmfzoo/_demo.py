"""``bnmfzoo demo``: a complete analysis on built-in data, in a few minutes on 2 cores.

1. The swimmer data (1024 pixels x 256 images, 16 limb parts; known answer), with a little
   Gaussian noise (clipped at 0) so that the posterior is not degenerate.
2. An exponential-Gaussian PyMC model, sampled with our Gibbs step through ``pm.sample``;
   factors aligned across draws; ``az.summary`` of the noise precision and the fit.
3. Stein-weighted Q-Transform particles on the SILF model: several distinct factorizations with
   their weights, shown side by side.
4. Everything written to ``./bnmfzoo-demo/``: DataTrees (netCDF), PNG plots and an HTML report
   for each fit. The DataTrees keep at most 100 evenly thinned posterior draws per chain, store
   the posterior as float32 and are zlib-compressed (h5netcdf): the Gibbs file shrinks from
   about 100 MB of float64 draws to under 20 MB.
"""

import time
from pathlib import Path

import numpy as np

IMAGE_SHAPE = (32, 32)
#: the written DataTrees keep at most this many posterior draws per chain (evenly thinned; the
#: summaries printed by the demo use all draws)
SAVE_DRAWS = 100


def _say(msg):
    print(f"[bnmfzoo demo] {msg}", flush=True)


def run_demo(out_dir="bnmfzoo-demo", *, quick=False, random_seed=2026, progressbar=True):
    """Run the demo and write its results to ``out_dir``.

    Parameters
    ----------
    out_dir : str or pathlib.Path
    quick : bool
        Fewer draws and particles (used by the test suite).
    random_seed : int
    progressbar : bool

    Returns
    -------
    dict
        Paths of the files written, by name.
    """
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pymc as pm
    from threadpoolctl import threadpool_limits

    from bnmfzoo.datasets import swimmer
    from bnmfzoo.diagnostics import align, reconstruction_error
    from bnmfzoo.diagnostics._modes.point_estimate import point_estimate
    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian
    from bnmfzoo.plots import plot_bases

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    t_start = time.perf_counter()

    data = swimmer(sigma=0.05, random_seed=random_seed)
    X = data.X.clip(min=0.0)
    X.attrs["image_shape"] = list(IMAGE_SHAPE)
    rank = data.A.shape[1]
    _say(f"swimmer data: {X.shape[0]} pixels x {X.shape[1]} images, true rank {rank}")
    fig = plot_bases(data.A, image_shape=IMAGE_SHAPE, title="true parts")
    written["true_parts"] = _save(fig, out / "true_parts.png", plt)

    # -- 1. exponential-Gaussian model, Gibbs through pm.sample --------------------------
    draws, tune = (60, 40) if quick else (300, 150)
    model = exponential_gaussian(X, rank)
    _say(f"Gibbs sampling ({tune} tune + {draws} draws, 2 chains) ...")
    t0 = time.perf_counter()
    with threadpool_limits(1), model:
        gibbs = pm.sample(
            step=GibbsNMF(), draws=draws, tune=tune, chains=2, cores=1,
            random_seed=random_seed, progressbar=progressbar, compute_convergence_checks=False,
        )
    _say(f"  done in {time.perf_counter() - t0:.1f} s")
    gibbs = align(gibbs)
    gibbs.attrs.update(method="gibbs", model="exponential_gaussian", data="swimmer",
                       image_shape=np.array(IMAGE_SHAPE))
    summary = az.summary(gibbs, var_names=["tau"])
    print(summary)
    chain_tau = gibbs["posterior"]["tau"].mean("draw").values
    _say("  mean tau per chain: " + ", ".join(f"{t:.0f}" for t in chain_tau))
    r_hat = float(np.asarray(summary["r_hat"])[0])
    if r_hat > 1.01:
        _say(f"  R-hat {r_hat:.2f} > 1.01: the chains disagree; each stays near its own local "
             "mode, a different factorization that fits almost as well (NMF is not "
             "identifiable); the particles below show several side by side")
    if chain_tau.max() > 1.2 * chain_tau.min():
        _say("  the chains sit in different modes (a higher tau is a better fit): NMF is not "
             "identifiable, which is why the particles below look for several solutions")
    err = reconstruction_error(X, gibbs)
    _say(f"  training reconstruction error: {_fmt_err(err)}")
    # the heaviest mode's aligned mean: never an average across chains in different modes
    A_mean, _, mode_info = point_estimate(gibbs)
    fig = plot_bases(A_mean, image_shape=IMAGE_SHAPE,
                     title=f"Gibbs posterior mean bases (heaviest of {mode_info['n_modes']} "
                           f"mode(s), {mode_info['weight_label']})")
    written["gibbs_bases"] = _save(fig, out / "gibbs_bases.png", plt)
    written["trace"] = _trace_plot(gibbs, out / "trace_tau.png", plt)
    written["gibbs"] = _write_compact(gibbs, out / "gibbs.nc")

    # -- 2. Stein-weighted Q-Transform particles on the SILF model -------------------------
    written.update(_particles_step(X, rank, out, quick, random_seed, progressbar, plt))

    # -- 3. self-contained HTML reports (what `bnmfzoo report RESULT.nc` writes) ------------
    from bnmfzoo.report import write_report

    for name in ("gibbs", "particles"):
        written[f"{name}_report"] = write_report(written[name], out_dir=out / f"{name}-report")
    _say("next: open the reports in a browser, or try `bnmfzoo fit your.csv --rank R "
         "--method gibbs --out fit.nc` and `bnmfzoo report fit.nc` on your own data")

    _say(f"finished in {time.perf_counter() - t_start:.0f} s; files in {out.resolve()}:")
    for name, path in written.items():
        print(f"    {name:14s} {path}")
    return written


def _particles_step(X, rank, out, quick, random_seed, progressbar, plt):
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import silf
    from bnmfzoo.plots import plot_particles

    n_particles = 10 if quick else 25
    _say(f"Q-Transform particles with Stein weights (M={n_particles}) on the SILF model ...")
    t0 = time.perf_counter()
    model = silf(X, rank, n_reference=10, random_seed=random_seed)
    dt = fit_particles(model, n_particles=n_particles, init="qtransform",
                       random_seed=random_seed, progressbar=progressbar)
    dt.attrs.update(data="swimmer", image_shape=np.array(IMAGE_SHAPE))
    _say(f"  done in {time.perf_counter() - t0:.1f} s")
    w = dt["particles"]["weight"].values
    ksd = float(dt["diagnostics"]["stein_discrepancy"].values)
    _say(f"  Stein discrepancy {ksd:.4g}; {int((w > 1e-3).sum())} particles with weight > 0.001; "
         f"effective number 1/sum(w^2) = {1 / np.sum(w**2):.1f}")
    if np.allclose(w, 1.0 / w.size, rtol=0.05):
        _say("  (near-)uniform weights: every particle sits inside the SILF band with the same "
             "score, so the Stein-optimal weighting treats them as equally good, distinct "
             "explanations")
    fig = plot_particles(dt, image_shape=IMAGE_SHAPE, top=4)
    return {
        "particles_png": _save(fig, out / "particles.png", plt),
        "particles": _write_compact(dt, out / "particles.nc"),
    }


def _write_compact(dt, path):
    """Write ``dt`` compactly (see :func:`_compact`) and say how big the file is."""
    draws = dt["posterior"].sizes["draw"]
    thin = max(1, -(-draws // SAVE_DRAWS))
    saved, encoding = _compact(dt, thin=thin)
    _write(saved, path, encoding)
    kept = len(range(0, draws, thin))
    _say(f"  {path.name}: {kept} of {draws} draws per chain (evenly thinned), posterior as "
         f"float32, zlib-compressed ({path.stat().st_size / 1e6:.1f} MB)")
    return path


def _compact(dt, *, thin):
    """Return ``(dt, encoding)``: every ``thin``-th draw, float32 posterior, zlib for all arrays.

    float32 keeps 7 significant digits, far below the Monte-Carlo error of any posterior
    summary; the observed data and sample statistics keep their dtype.
    """
    import xarray as xr

    nodes = {}
    encoding = {}
    for node in dt.subtree:
        ds = node.to_dataset(inherit=False)
        if "draw" in ds.dims:
            ds = ds.isel(draw=slice(None, None, thin))
        if node.name == "posterior":
            ds = ds.map(lambda v: v.astype(np.float32) if v.dtype == np.float64 else v)
        nodes[node.path] = ds
        encoding[node.path] = {name: {"zlib": True, "complevel": 4}
                               for name, var in ds.data_vars.items() if var.ndim > 0}
    out = xr.DataTree.from_dict(nodes)
    out.attrs.update(dt.attrs)
    out.attrs["thinned_by"] = thin
    return out, encoding


def _write(dt, path, encoding):
    """Write ``dt`` atomically, with the user's usual file mode (see ``atomic_write``)."""
    from bnmfzoo._fitcli import atomic_write

    return atomic_write(dt, path, encoding=encoding)


def _fmt_err(err):
    if isinstance(err, dict):
        return ", ".join(f"{k}={v:.4g}" for k, v in err.items())
    return f"{float(err):.4g}"


def _trace_plot(dt, path, plt):
    fig, axes = plt.subplots(1, 2, figsize=(8, 2.6))
    tau = dt["posterior"]["tau"]
    for c in tau["chain"].values:
        axes[0].plot(tau.sel(chain=c).values, lw=0.7, label=f"chain {c}")
        axes[1].hist(tau.sel(chain=c).values, bins=30, alpha=0.6)
    axes[0].set_title("tau trace")
    axes[0].legend(fontsize=7)
    axes[1].set_title("tau posterior")
    fig.tight_layout()
    return _save(fig, path, plt)


def _save(fig, path, plt):
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
