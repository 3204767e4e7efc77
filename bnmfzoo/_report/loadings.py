"""Both sides' loadings per mode: top rows of ``A`` and top columns of ``W``, with uncertainty.

Members of a mode (MCMC draws or particles) are aligned to the mode's reference with the
permutation :func:`bnmfzoo.diagnostics.modes` found (``member_perm``); for each factor the
report lists the rows (``A[:, k]``) and columns (``W[k, :]``) with the largest weighted mean
over the members, with the weighted standard deviation and the 5-95 % range of the members.
At most :data:`MAX_MEMBERS` members per mode are read (evenly spaced), so the cost is bounded.
"""

import html

import numpy as np

#: members (draws or particles) per mode used for the loadings
MAX_MEMBERS = 200


def _weighted_stats(x, w):
    """Weighted mean, sd and 5 % / 95 % quantiles over axis 0 of ``x``."""
    w = w / w.sum()
    mean = np.tensordot(w, x, axes=1)
    sd = np.sqrt(np.maximum(np.tensordot(w, (x - mean) ** 2, axes=1), 0.0))
    order = np.argsort(x, axis=0)
    xs = np.take_along_axis(x, order, axis=0)
    cw = np.cumsum(w[order], axis=0)
    lo = np.take_along_axis(xs, np.argmax(cw >= 0.05, axis=0)[None], axis=0)[0]
    hi = np.take_along_axis(xs, np.argmax(cw >= 0.95, axis=0)[None], axis=0)[0]
    return mean, sd, lo, hi


def mode_loadings(dt, modes_tree, *, top=10, max_modes=3):
    """Per mode and factor: the top rows of A and columns of W with mean, sd and 90 % range.

    Returns a list of dicts ``{"mode", "weight", "factors": [{"factor", "rows": [...],
    "cols": [...]}]}``, each entry of ``rows`` / ``cols`` a tuple ``(label, mean, sd, lo, hi)``;
    labels are the result's coordinates of its own row, factor and column dims (attrs
    ``row_dim``, ``factor_dim``, ``col_dim`` of the modes; ``row`` / ``factor`` / ``col`` in our
    models).
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import _members

    m = modes_tree["modes"]
    rdim, fdim, cdim = (str(m.attrs.get(f"{r}_dim", r)) for r in ("row", "factor", "col"))
    A, W, w, _, _, _ = _members(dt, m.attrs["source"],
                                dims=(rdim, fdim, cdim) if cdim else (rdim, fdim))
    label = m["member_mode"].values.ravel()
    perm = m["member_perm"].values.reshape(label.size, -1)
    rows = [_plain(v) for v in m[rdim].values] if rdim in m.coords else list(range(A.shape[1]))
    cols = ([_plain(v) for v in m[cdim].values] if cdim in m.coords and W is not None
            else list(range(W.shape[2])) if W is not None else [])
    factor_names = m[fdim].values if fdim in m.coords else np.arange(A.shape[2])
    weight = m["weight"].values if "weight" in m else np.full(m.sizes["mode"], np.nan)
    out = []
    for k in range(min(int(m.sizes["mode"]), max_modes)):
        sel = np.flatnonzero(label == k)
        if sel.size == 0:
            continue
        sel = sel[np.linspace(0, sel.size - 1, min(sel.size, MAX_MEMBERS)).astype(int)]
        wk = w[sel]
        Ak = np.take_along_axis(A[sel], perm[sel][:, None, :], axis=-1)
        statsA = _weighted_stats(Ak, wk)
        statsW = None
        if W is not None:
            Wk = np.take_along_axis(W[sel], perm[sel][:, :, None], axis=-2)
            statsW = _weighted_stats(Wk, wk)
        factors = []
        # factors ordered by their share of the mode's mean A @ W
        mass = statsA[0].sum(0) * (statsW[0].sum(1) if statsW is not None else 1.0)
        for r in np.argsort(mass)[::-1]:
            entry = {"factor": _plain(factor_names[r]), "share": float(mass[r] / mass.sum()),
                     "rows": _top([s[:, r] for s in statsA], rows, top)}
            entry["cols"] = _top([s[r] for s in statsW], cols, top) if statsW is not None else []
            factors.append(entry)
        out.append({"mode": k, "weight": float(weight[k]), "members": int(sel.size),
                    "factors": factors})
    return out


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _top(stats, labels, top):
    mean, sd, lo, hi = stats
    best = np.argsort(mean)[::-1][:top]
    return [(labels[i], float(mean[i]), float(sd[i]), float(lo[i]), float(hi[i])) for i in best]


def loadings_html(loadings, *, row_name="row", col_name="column", factor_name="factor"):
    """HTML tables: for each mode, one block per factor with its top rows and columns."""
    if not loadings:
        return ""
    parts = ["<h2>Loadings per mode</h2><p class='note'>For each mode (members aligned within "
             "the mode) and factor, the rows with the largest <code>A[:, k]</code> and the "
             "columns with the largest <code>W[k, :]</code>: posterior mean ± sd over the "
             "mode's members, and their 5–95 % range. Factors in order of their share of the "
             "mode's mean <code>sum(A @ W)</code>.</p>"]
    for mode in loadings:
        weight = "" if np.isnan(mode["weight"]) else f", weight {mode['weight']:.3g}"
        parts.append(f"<h3>Mode {mode['mode']}{weight} ({mode['members']} members read)</h3>"
                     "<div class='loadings'>")
        for f in mode["factors"]:
            parts.append(f"<div class='factor'><h4>{html.escape(factor_name)} "
                         f"{html.escape(str(f['factor']))} "
                         f"({f['share']:.0%})</h4>")
            for side, name in (("rows", row_name), ("cols", col_name)):
                if not f[side]:
                    continue
                body = "".join(
                    f"<tr><td class='name'>{html.escape(str(lab))}</td><td>{mu:.3g} ± {sd:.2g}"
                    f"</td><td>{lo:.3g}–{hi:.3g}</td></tr>" for lab, mu, sd, lo, hi in f[side])
                parts.append(f"<table class='load'><tr><th>{html.escape(name)}</th><th>mean ± "
                             f"sd</th><th>5–95 %</th></tr>{body}</table>")
            parts.append("</div>")
        parts.append("</div>")
    return "".join(parts)


def plot_loadings(loadings, *, n_show=8, max_factors=6, names=("row", "column", "factor")):
    """Figure: per factor of the heaviest mode, top rows and columns with 5-95 % bars.

    ``names`` are what rows, columns and factors are called (the result's dims).
    """
    import matplotlib.pyplot as plt

    mode = loadings[0]
    factors = mode["factors"][:max_factors]
    sides = [s for s in ("rows", "cols") if any(f[s] for f in factors)]
    fig, axes = plt.subplots(len(sides), len(factors),
                             figsize=(3.4 * len(factors), 3.2 * len(sides)), squeeze=False)
    for j, f in enumerate(factors):
        for i, side in enumerate(sides):
            ax = axes[i, j]
            items = f[side][:n_show]
            y = np.arange(len(items))[::-1]
            mean = np.array([t[1] for t in items])
            err = np.array([[t[1] - t[3] for t in items], [t[4] - t[1] for t in items]])
            ax.barh(y, mean, xerr=np.maximum(err, 0), color=f"C{i}", alpha=0.8,
                    error_kw={"lw": 1})
            ax.set_yticks(y)
            ax.set_yticklabels([_short(t[0]) for t in items], fontsize=10)
            ax.tick_params(axis="x", labelsize=10)
            what = f"{names[0]} (A)" if side == "rows" else f"{names[1]} (W)"
            ax.set_title(f"{names[2]} {f['factor']}: top {what}", fontsize=11)
    fig.suptitle(f"Mode {mode['mode']}: loadings, mean with 5–95 % range over its members",
                 fontsize=12)
    fig.tight_layout()
    return fig


def _short(label, n=18):
    text = str(label)
    return text if len(text) <= n else text[: n - 1] + "…"
