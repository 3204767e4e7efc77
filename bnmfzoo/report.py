"""Self-contained HTML reports for a result file (``bnmfzoo report RESULT.nc``).

The report shows the model and method; the modes of the posterior with every column
:func:`bnmfzoo.diagnostics.modes` gives (weight with its Monte-Carlo error and what the weight
estimates, shares, sizes, spreads, chains); **both sides' loadings per mode** (the top rows of
``A`` and top columns of ``W`` of each factor by name, with sd and 5-95 % range over the mode's
members, :mod:`bnmfzoo._report.loadings`); **the fit** (observed vs predicted, residuals and a
posterior predictive check, :mod:`bnmfzoo._report.fitview`); a summary table of the small
variables (:func:`bnmfzoo.diagnostics.summary`, never over every entry of ``A`` or ``W``); the
Stein discrepancy and coverage numbers of the ``diagnostics`` group; each mode's mean basis,
the heaviest particles and traces or ELBO curves. Figures are written as PNGs beside the report
and embedded in it (base64), so the HTML file stands alone; every file is written through a
temporary file and a rename, never through a symlink, and all of them or none (a full disk
leaves no file behind). The result file is sized from its metadata before it is read
(:func:`bnmfzoo._cli.declared.check_netcdf`).

Time and memory are bounded whatever the result's size: at most :data:`MAX_REPORT_DRAWS`
evenly spaced draws per chain are read, only the active components of a truncated model with
more than :data:`MAX_FACTORS` components (:func:`bnmfzoo._cli.sizing.active_components`), and
the fit view uses at most 60 draws and 400,000 entries.
"""

import base64
import html
import io
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

MAX_SUMMARY_VARS = 40
#: draws per chain the report reads (evenly spaced) from a longer posterior
MAX_REPORT_DRAWS = 200
#: a truncated model with more components is reported on its active ones only
MAX_FACTORS = 20
#: groups of which a result has at least one
RESULT_GROUPS = ("posterior", "particles", "variational")


def write_report(result, *, out_dir=None, dims=None):
    """Write ``report.html`` and its PNG figures for a result DataTree.

    Rows, columns and factors are called what the result calls them (a hand-written model's
    ``genome`` / ``channel`` / ``signature``, with their coordinates), in every table and figure.

    Parameters
    ----------
    result : str, pathlib.Path or xarray.DataTree
        A netCDF file written by a bnmfzoo fit or by ``pm.sample`` (or the DataTree itself).
    out_dir : str or pathlib.Path, optional
        Output folder; default: ``<result stem>-report`` beside the result file.
    dims : tuple or dict, optional
        The result's ``(row, factor, col)`` dims; default: read from the result (the dim ``A``
        and ``W`` share is the factor dim; :func:`bnmfzoo.diagnostics.modes`). When they cannot
        be read, the report says so and leaves out the modes and loadings.

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
        from bnmfzoo._cli.declared import REPORT_COPIES, check_netcdf

        # sized from its metadata first: what the report reads must fit in memory
        check_netcdf(path, what="the report of", copies=REPORT_COPIES,
                     max_draws=MAX_REPORT_DRAWS)
        try:
            dt = xr.open_datatree(path, engine="h5netcdf")
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read {path} as a bnmfzoo result (netCDF DataTree): "
                             f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
                             ) from None
        source = str(path)
        out = Path(out_dir) if out_dir else path.with_name(path.stem + "-report")
    if not any(g in dt.children for g in RESULT_GROUPS):
        raise ValueError(f"{source} is not a bnmfzoo result: it has none of the groups "
                         f"{', '.join(RESULT_GROUPS)} (groups: {sorted(dt.children) or 'none'})")
    dt, notes = _bounded(dt)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _write_report(dt, out, source, notes, dims)
    except BaseException:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # nothing was written: leave no empty folder either
        raise


def _write_report(dt, out, source, notes, dims):
    """Render the report of ``dt`` and write it into ``out`` (every file, or none)."""
    from bnmfzoo._cli.safeio import write_files

    modes_tree, why = _modes(dt, dims)
    loadings = _loadings(dt, modes_tree)
    from bnmfzoo._report.fitview import fit_data, fit_html
    from bnmfzoo._report.loadings import loadings_html

    fd = fit_data(dt, dims=dims)
    row_name, col_name, factor_name = _axis_names(dt, modes_tree)
    sections = [_header(dt, source), notes, why, _modes_section(modes_tree),
                loadings_html(loadings, row_name=row_name, col_name=col_name,
                              factor_name=factor_name), fit_html(fd)]
    figures = _figures(dt, modes_tree, loadings, fd, names=(row_name, col_name, factor_name))
    sections += [_summary_section(dt, dims), _diagnostics_section(dt)]
    files = []
    for name, fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        files.append((f"{name}.png", buf.getvalue()))
        sections.append(_figure_html(name, buf.getvalue()))
    _close(figures)
    page = _PAGE.format(title=html.escape(f"bnmfzoo report — {source}"), body="\n".join(sections))
    files.append(("report.html", page.encode("utf-8")))
    return write_files(out, files)[-1]  # all or none (a full disk leaves nothing behind)


def _axis_names(dt, modes_tree=None):
    """What rows, columns and factors are called, for the tables and figures.

    The ``row_name`` / ``col_name`` attrs when the result has them, else the result's own dims
    when they are not ours (a hand-written model's ``genome`` / ``channel`` / ``signature``).
    """
    attrs = dict(dt.attrs)
    if "observed_data" in dt.children:
        attrs.update(dt["observed_data"].attrs)
    m = {} if modes_tree is None else modes_tree["modes"].attrs
    own = {role: str(m.get(f"{role}_dim") or role) for role in ("row", "col", "factor")}
    default = {"row": "row", "col": "column", "factor": "factor"}
    names = {role: own[role] if own[role] != role else default[role] for role in default}
    return (str(attrs.get("row_name", names["row"])), str(attrs.get("col_name", names["col"])),
            names["factor"])


def _bounded(dt):
    """The result as the report reads it (bounded size).

    At most MAX_REPORT_DRAWS draws per chain, and only the active components of a truncated
    model with more than MAX_FACTORS components.
    """
    notes = []
    if "posterior" not in dt.children:
        return dt, ""
    post = dt["posterior"].to_dataset(inherit=False)
    changed = False
    if post.sizes.get("draw", 0) > MAX_REPORT_DRAWS:
        S = post.sizes["draw"]
        post = post.isel(draw=np.unique(np.linspace(0, S - 1, MAX_REPORT_DRAWS).astype(int)))
        notes.append(f"{MAX_REPORT_DRAWS} of the {S} draws per chain (evenly spaced) are read.")
        changed = True
    if {"A", "W"} <= set(post.data_vars) and post.sizes.get("factor", 0) > MAX_FACTORS \
            and str(dt.attrs.get("model", "")) in ("beta_dir", "dir_beta", "dir_dir"):
        from bnmfzoo._cli.sizing import active_components

        kept, _ = active_components(post)
        notes.append(f"Truncated model: the {int(kept.sum())} active of its "
                     f"{kept.size} components are reported (posterior median share at least "
                     "1 % in a row of A or a column of W, in a chain).")
        post = post.isel(factor=np.flatnonzero(kept))
        changed = True
    if not changed:
        return dt, ""
    nodes = {node.path: node.to_dataset(inherit=False) for node in dt.subtree}
    nodes["/posterior"] = post
    new = xr.DataTree.from_dict(nodes)
    new.attrs.update(dt.attrs)
    return new, "<p class='note'>" + " ".join(notes) + "</p>"


def _loadings(dt, modes_tree):
    from bnmfzoo._report.loadings import mode_loadings

    if modes_tree is None:
        return []
    try:
        return mode_loadings(dt, modes_tree)
    except (ValueError, KeyError):
        return []


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


def _summary_section(dt, dims=None):
    if "posterior" not in dt.children:
        return "<h2>Summary</h2><p>No posterior group.</p>"
    post = dt["posterior"].to_dataset()
    small = [v for v in post.data_vars if post[v].size / (post.sizes["chain"] *
                                                          post.sizes["draw"]) <= 12]
    if "particles" in dt.children and "weight" in dt["particles"]:
        parts = dt["particles"].to_dataset()  # the weighted summary reads the particles
        small = [v for v in parts.data_vars if v != "weight" and "particle" in parts[v].dims
                 and parts[v].size / parts.sizes["particle"] <= 12 and v in post]
    if not small:
        return ("<h2>Posterior summary</h2><p>No small variables to summarize (A and W are "
                "summarized per mode above, on what matters, not entry by entry).</p>")
    from bnmfzoo.diagnostics import summary

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = summary(dt, var_names=small[:MAX_SUMMARY_VARS], dims=dims)
    notes = "".join(f"<p class='note'>{html.escape(str(w.message))}</p>" for w in caught
                    if issubclass(w.category, UserWarning))
    if len(table) > MAX_SUMMARY_VARS:
        table = table.iloc[:MAX_SUMMARY_VARS]
    return ("<h2>Posterior summary</h2>" + notes
            + table.to_html(classes="summary", float_format="%.4g"))


def _modes(dt, dims=None):
    """``(modes DataTree or None, note)``: None when there is no basis A to cluster.

    The note (HTML, else empty) says why there are no modes when the result has ``A`` and
    ``W`` whose factor dim cannot be told.
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import modes

    try:
        return modes(dt, warn=False, dims=dims), ""
    except ValueError as err:
        if "dims=" not in str(err):
            return None, ""
        return None, (f"<p class='note'>No modes or loadings: {html.escape(str(err))}"
                      "</p>")


#: labels of the per-mode columns :func:`bnmfzoo.diagnostics.modes` may give (others are shown
#: under their own name, or their ``long_name`` / ``label`` attribute)
MODE_COLUMNS = {
    "weight": "weight", "weight_mcse": "MCSE of weight", "weight_low": "95 % interval, low",
    "weight_high": "95 % interval, high", "share": "share of members",
    "size": "members", "spread": "spread (deg)", "max_spread": "max spread (deg)",
    "rel_error": "rel. error of mean A@W", "n_visits": "visits", "indicator_rhat":
    "indicator R-hat",
}


def _cell(value):
    if isinstance(value, (float, np.floating)):
        return "–" if np.isnan(value) else f"{value:.4g}"
    return str(value.item() if isinstance(value, np.generic) else value)


def _modes_section(modes_tree):
    if modes_tree is None:
        return ""
    m = modes_tree["modes"]
    columns = [name for name, var in m.data_vars.items() if var.dims == ("mode",)]
    order = [c for c in MODE_COLUMNS if c in columns] + [c for c in columns
                                                         if c not in MODE_COLUMNS]
    head = ["mode"] + [MODE_COLUMNS.get(c) or str(m[c].attrs.get("long_name",
                                                                 m[c].attrs.get("label", c)))
                       for c in order]
    if "chain_share" in m:
        head.append("chains (share of draws)")
    rows = []
    for k in range(m.sizes["mode"]):
        cells = [str(k)] + [_cell(m[c].values[k]) for c in order]
        if "chain_share" in m:
            share = m["chain_share"].values[k]
            cells.append(", ".join(f"{c}: {s:.0%}" for c, s in zip(m["chain"].values, share)
                                   if s > 0))
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    angles = m["angle"].values if "angle" in m else np.zeros((1, 1))
    off = angles[~np.eye(angles.shape[0], dtype=bool)]
    what = "; ".join(f"{k}: {html.escape(str(m.attrs[k]))}" for k in ("weighting", "estimator")
                     if k in m.attrs)
    note = (f"<p>{m.sizes['mode']} modes ({m.attrs.get('source', '')}; {what}); angles between "
            f"modes {off.min():.1f}–{off.max():.1f} degrees (max matched angle).</p>"
            if off.size else f"<p>One mode ({m.attrs.get('source', '')}; {what}).</p>")
    if m.attrs.get("note"):
        note += f"<p class='note'>{html.escape(str(m.attrs['note']))}</p>"
    return ("<h2>Modes</h2>" + note + "<table class='kv'><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>" + "".join(rows)
            + "</table>")


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


def _figures(dt, modes_tree=None, loadings=None, fit=None, names=("row", "column", "factor")):
    import matplotlib.pyplot as plt

    from bnmfzoo._report.fitview import plot_fit
    from bnmfzoo._report.loadings import plot_loadings
    from bnmfzoo.plots import plot_elbo, plot_modes, plot_particles

    figures = []
    if loadings:
        figures.append(("loadings", plot_loadings(loadings, names=names)))
    if fit is not None:
        figures.append(("fit", plot_fit(fit)))
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
                ax.set_ylabel(name, fontsize=11)
                ax.tick_params(labelsize=10)
            axes[-1, 0].set_xlabel("draw", fontsize=11)
            fig.tight_layout()
            figures.append(("traces", fig))
    return figures


def _figure_html(name, png):
    data = base64.b64encode(png).decode("ascii")
    return (f"<h2>{html.escape(name.capitalize())}</h2>"
            f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'/>")


def _close(figures):
    import matplotlib.pyplot as plt

    for _, fig in figures:
        plt.close(fig)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; font-size: 16px; max-width: 1400px; margin: 2em auto;
       color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}
table.kv th {{ text-align: left; background: #f4f4f4; }}
img {{ max-width: 100%; border: 1px solid #eee; }}
.loadings {{ display: flex; flex-wrap: wrap; gap: 1em; }}
.factor h4 {{ margin: 0.4em 0 0.2em 0; }}
table.load td.name {{ text-align: left; }}
table.load {{ margin-bottom: 0.4em; }}
p.note {{ color: #555; }}
</style></head>
<body>
{body}
</body></html>
"""
