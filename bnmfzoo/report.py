"""Self-contained HTML reports for a result file (``bnmfzoo report RESULT.nc``).

The report shows the model and method, the modes of the posterior (weights, sizes, spreads,
chains; :func:`bnmfzoo.diagnostics.modes`), a per-mode summary table with labels aligned within
each mode (:func:`bnmfzoo.diagnostics.summary`, whose warnings are shown), the Stein discrepancy
and coverage numbers of the ``diagnostics`` group, each mode's mean basis with its weight (basis
images for image data), the heaviest particles aligned within their modes, and traces or ELBO
curves. Figures are written
as PNGs beside the report and embedded in it (base64), so the HTML file stands alone.
"""

import base64
import html
import io
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

MAX_SUMMARY_VARS = 40


def write_report(result, *, out_dir=None):
    """Write ``report.html`` and its PNG figures for a result DataTree.

    Parameters
    ----------
    result : str, pathlib.Path or xarray.DataTree
        A netCDF file written by a bnmfzoo fit (or the DataTree itself).
    out_dir : str or pathlib.Path, optional
        Output folder; default: ``<result stem>-report`` beside the result file.

    Returns
    -------
    pathlib.Path
        The HTML file.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from bnmfzoo._base.results import build_datatree
    >>> dt = build_datatree({"A": np.random.default_rng(0).random((1, 20, 4, 2)),
    ...                      "tau": np.ones((1, 20))}, attrs={"method": "demo"})
    >>> path = write_report(dt, out_dir=tempfile.mkdtemp())
    >>> path.name
    'report.html'
    """
    import matplotlib

    matplotlib.use("Agg")
    if isinstance(result, xr.DataTree):
        dt, source = result, "(in memory)"
        out = Path(out_dir or "bnmfzoo-report")
    else:
        path = Path(result)
        if not path.exists():
            raise FileNotFoundError(f"result file {str(path)!r} does not exist")
        try:
            dt = xr.open_datatree(path, engine="h5netcdf")
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read {path} as a bnmfzoo result (netCDF DataTree): {err}")
        source = str(path)
        out = Path(out_dir) if out_dir else path.with_name(path.stem + "-report")
    out.mkdir(parents=True, exist_ok=True)
    modes_tree = _modes(dt)
    sections = [_header(dt, source), _modes_section(modes_tree), _summary_section(dt),
                _diagnostics_section(dt)]
    figures = _figures(dt, modes_tree)
    for name, fig in figures:
        fig.savefig(out / f"{name}.png", dpi=100)
    sections.append("".join(_figure_html(name, fig) for name, fig in figures))
    _close(figures)
    page = _PAGE.format(title=html.escape(f"bnmfzoo report — {source}"), body="\n".join(sections))
    target = out / "report.html"
    target.write_text(page, encoding="utf-8")
    return target


def _header(dt, source):
    attrs = {k: v for k, v in dt.attrs.items() if not k.startswith("creation_")}
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in attrs.items())
    groups = ", ".join(sorted(child for child in dt.children))
    shape = ""
    if "observed_data" in dt.children and "X" in dt["observed_data"]:
        X = dt["observed_data"]["X"].values
        if X.ndim == 2:
            shape = (f"<p>Data: {X.shape[0]} x {X.shape[1]}, "
                     f"{np.mean(~np.isnan(X)):.1%} observed.</p>")
        else:
            shape = f"<p>Data: {X.size} observed entries.</p>"
    return (f"<h1>bnmfzoo report</h1><p>Result: <code>{html.escape(source)}</code></p>"
            f"<table class='kv'>{rows}</table><p>Groups: {html.escape(groups)}</p>{shape}")


def _summary_section(dt):
    if "posterior" not in dt.children:
        return "<h2>Summary</h2><p>No posterior group.</p>"
    post = dt["posterior"].to_dataset()
    small = [v for v in post.data_vars if post[v].size / (post.sizes["chain"] *
                                                          post.sizes["draw"]) <= 12]
    if "particles" in dt.children and "weight" in dt["particles"]:
        parts = dt["particles"].to_dataset()  # the weighted summary reads the particles
        small = [v for v in parts.data_vars if v != "weight" and "particle" in parts[v].dims
                 and parts[v].size / parts.sizes["particle"] <= 12 and v in post]
    from bnmfzoo.diagnostics import summary

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = summary(dt, var_names=small[:MAX_SUMMARY_VARS] or None)
    notes = "".join(f"<p class='note'>{html.escape(str(w.message))}</p>" for w in caught
                    if issubclass(w.category, UserWarning))
    if len(table) > MAX_SUMMARY_VARS:
        table = table.iloc[:MAX_SUMMARY_VARS]
    return ("<h2>Posterior summary</h2>" + notes
            + table.to_html(classes="summary", float_format="%.4g"))


def _modes(dt):
    """The modes of the result (None when it has no basis A to cluster)."""
    from bnmfzoo.diagnostics._modes.mode_clustering import modes

    try:
        return modes(dt, warn=False)
    except ValueError:
        return None


def _modes_section(modes_tree):
    if modes_tree is None:
        return ""
    m = modes_tree["modes"]
    rows = []
    for k in range(m.sizes["mode"]):
        cells = [f"{k}", f"{float(m['weight'][k]):.4g}", f"{int(m['size'][k])}",
                 f"{float(m['spread'][k]):.3g}", f"{float(m['rel_error'][k]):.4g}"]
        if "chain_share" in m:
            share = m["chain_share"].values[k]
            cells.append(", ".join(f"{c}: {s:.0%}" for c, s in zip(m["chain"].values, share)
                                   if s > 0))
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    head = ["mode", "weight", "members", "spread (deg)", "rel. error of mean A@W"]
    if "chain_share" in m:
        head.append("chains (share of draws)")
    angles = m["angle"].values
    off = angles[~np.eye(angles.shape[0], dtype=bool)]
    note = (f"<p>{m.sizes['mode']} modes ({m.attrs['source']}, weights: {m.attrs['weighting']});"
            f" angles between modes {off.min():.1f}–{off.max():.1f} degrees (max matched angle)."
            "</p>" if off.size else f"<p>One mode ({m.attrs['source']}).</p>")
    return ("<h2>Modes</h2>" + note + "<table class='kv'><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def _diagnostics_section(dt):
    if "diagnostics" not in dt.children:
        return ""
    ds = dt["diagnostics"].to_dataset()
    rows = []
    for name, var in ds.data_vars.items():
        if var.size == 1:
            rows.append(f"<tr><th>{html.escape(name)}</th><td>{float(var.values):.6g}</td></tr>")
        elif var.size <= 20:
            vals = ", ".join(f"{v:.4g}" for v in np.ravel(var.values))
            rows.append(f"<tr><th>{html.escape(name)}</th><td>{vals}</td></tr>")
    return "<h2>Diagnostics</h2><table class='kv'>" + "".join(rows) + "</table>"


def _image_shape(dt):
    for source in (dt.attrs, dt["observed_data"].attrs if "observed_data" in dt.children else {},
                   dt["observed_data"]["X"].attrs if "observed_data" in dt.children
                   and "X" in dt["observed_data"] else {}):
        shape = source.get("image_shape") if hasattr(source, "get") else None
        if shape is not None:
            return tuple(int(s) for s in np.ravel(shape))
    return None


def _figures(dt, modes_tree=None):
    import matplotlib.pyplot as plt

    from bnmfzoo.plots import plot_elbo, plot_modes, plot_particles

    figures = []
    image_shape = _image_shape(dt)
    if modes_tree is not None:
        figures.append(("modes", plot_modes(dt, image_shape=image_shape, modes_tree=modes_tree)))
    if "particles" in dt.children and "weight" in dt["particles"] and "A" in dt["particles"]:
        figures.append(("particles", plot_particles(dt, image_shape=image_shape, top=5)))
    if "variational" in dt.children:
        var = dt["variational"]
        for name in ("elbo", "ELBO", "objective"):
            if name in var:
                figures.append(("elbo", plot_elbo(var[name])))
                break
    if "posterior" in dt.children:
        post = dt["posterior"]
        scalars = [v for v in post.data_vars if post[v].ndim == 2][:4]
        if scalars and post.sizes["draw"] > 1:
            fig, axes = plt.subplots(len(scalars), 1, figsize=(7, 1.8 * len(scalars)),
                                     squeeze=False)
            for ax, name in zip(axes[:, 0], scalars):
                for c in post["chain"].values:
                    ax.plot(post[name].sel(chain=c).values, lw=0.6)
                ax.set_ylabel(name)
            axes[-1, 0].set_xlabel("draw")
            fig.tight_layout()
            figures.append(("traces", fig))
    return figures


def _figure_html(name, fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (f"<h2>{html.escape(name.capitalize())}</h2>"
            f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'/>")


def _close(figures):
    import matplotlib.pyplot as plt

    for _, fig in figures:
        plt.close(fig)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}
table.kv th {{ text-align: left; background: #f4f4f4; }}
img {{ max-width: 100%; border: 1px solid #eee; }}
</style></head>
<body>
{body}
</body></html>
"""
