"""``report.html`` of the signature workflow: ranks, signatures (96-channel bars), assignment."""

import html
import io

import numpy as np
import pandas as pd

from bnmfzoo.report import _PAGE, _figure_html

__all__ = ["report_html"]

#: SigProfiler's colours of the six substitution classes
_COLOURS = {"C>A": "#1ebff0", "C>G": "#050708", "C>T": "#e62725", "T>A": "#cbcacb",
            "T>C": "#a1cf64", "T>G": "#edc8c5"}


def _table(df, *, digits=3):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, row in df.iterrows():
        cells = []
        for v in row:
            text = f"{v:.{digits}g}" if isinstance(v, (float, np.floating)) else str(v)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def _signature_figure(sig):
    import matplotlib.pyplot as plt

    channels = [str(c) for c in sig["channel"].values]
    # SigProfiler's plotting order: by substitution class, then context
    order = sorted(range(len(channels)), key=lambda i: (channels[i][2:5], channels[i]))
    colours = [_COLOURS[channels[i][2:5]] for i in order]
    labels = sig["signature"].values
    fig, axes = plt.subplots(len(labels), 1, figsize=(12, 1.6 * len(labels) + 0.4),
                             squeeze=False, sharex=True)
    for ax, k in zip(axes[:, 0], labels):
        m = sig["mean"].sel(signature=k).values[order]
        lo = sig["low"].sel(signature=k).values[order]
        hi = sig["high"].sel(signature=k).values[order]
        x = np.arange(len(order))
        ax.bar(x, m, color=colours, width=0.8)
        # a skewed channel's mean can lie outside its central interval (a reference-centred
        # prior's near-zero channels): no negative bar
        ax.errorbar(x, m, yerr=[np.maximum(m - lo, 0), np.maximum(hi - m, 0)], fmt="none",
                    ecolor="#555", lw=0.6)
        ax.set_ylabel(str(k), fontsize=10)
        ax.tick_params(labelsize=8)
    axes[-1, 0].set_xticks(np.arange(len(order)))
    axes[-1, 0].set_xticklabels([channels[i] for i in order], rotation=90, fontsize=5)
    fig.tight_layout()
    return fig


def _ranks_figure(ranks):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    r, p = ranks["rank"].values, ranks["probability"].values
    lo, hi = ranks["low"].values, ranks["high"].values
    ax.bar(r, p, color="#4c72b0")
    ax.errorbar(r, p, yerr=[np.maximum(p - lo, 0), np.maximum(hi - p, 0)], fmt="none",
                ecolor="k", lw=1)
    ax.set_xlabel("number of signatures K")
    ax.set_ylabel("P(K | data)")
    ax.set_xticks(r)
    fig.tight_layout()
    return fig


def _alternatives_html(alt):
    """The report's section on alternative signature sets (one line per set)."""
    rows = []
    for name in alt["alternative"].values:
        d = alt.sel(alternative=name)
        if "best_match" in alt and bool(np.isfinite(d["mutations"].values).any()):
            sigs = ", ".join(f"{m} ({c:.2f})" if call != "novel" else f"novel (nearest {m}, "
                             f"{c:.2f})" for m, c, call in zip(
                                 d["best_match"].values, d["cosine"].values, d["call"].values))
        elif bool(np.isfinite(d["mutations"].values).any()):
            sigs = f"{alt.sizes['signature']} signatures (no reference given)"
        else:
            sigs = "-"
        mass, check = float(d["mass"]), float(d["mass_check"])
        first = d["cosine_to_first"].values
        rows.append({"alternative": str(name),
                     "posterior mass": "unknown" if not np.isfinite(mass) else f"{mass:.3f}",
                     "95% interval": ("-" if not np.isfinite(mass) or not np.isfinite(
                         float(d["mass_low"])) else
                                  f"{float(d['mass_low']):.3f}-{float(d['mass_high']):.3f}"),
                     "check's mass": (f"{check:.3f}" if np.isfinite(check) else "not run"
                                      if "no check" in alt.attrs["statement"] else "-"),
                     "signatures: best reference match (cosine)": sigs,
                     "lowest cosine to Alt1": (f"{np.nanmin(first):.2f}"
                                               if np.isfinite(first).any() else "-")})
    a = alt.attrs
    return ["<h2>Alternative signature sets</h2>",
            f"<p class='note'>{html.escape(a['model'])}. Each row is one set of "
            f"{alt.sizes['signature']} signatures that explains the catalogue; its mass is "
            "the posterior probability of that set among the sets found. Established: "
            f"{'yes' if a['established'] else 'no'}. {html.escape(a['statement'])} "
            f"{html.escape(a['unknown'])}. {html.escape(a.get('tried', '')[:1].upper())}"
            f"{html.escape(a.get('tried', '')[1:])}. "
            f"{html.escape(a.get('next', ''))}</p>",
            _table(pd.DataFrame(rows))]


def report_html(dt):
    """The HTML page of a :func:`~bnmfzoo.signatures.extract` result (figures inline)."""
    import matplotlib.pyplot as plt

    a = dt.attrs
    ranks = dt["ranks"].to_dataset()
    parts = [f"<h1>Mutational signatures: {a['n_samples']} samples, "
             f"{a['n_mutations']:,} mutations</h1>",
             f"<p>{html.escape(a['method'])}. Intervals: central {a['level']:.0%}.</p>",
             "<h2>How many signatures</h2>",
             f"<p class='note'>{html.escape(a['note'])}.</p>",
             _table(ranks.to_dataframe().reset_index()[
                 ["rank"] + [c for c in ranks.data_vars]])]
    figs = [("P(K | data)", _ranks_figure(ranks))]
    sig = dt["signatures"].to_dataset()
    figs.append((f"signatures at K = {a['rank']}", _signature_figure(sig)))
    try:
        parts.append(_figure_html(figs[0][0], _png(figs[0][1])))
        parts.append(_figure_html(figs[1][0], _png(figs[1][1])))
    finally:
        for _, f in figs:
            plt.close(f)
    if "assignment" in dt:
        from bnmfzoo.signatures.assignment import assignment_table

        t = assignment_table(dt)
        parts += ["<h2>Which known signatures</h2>",
                  f"<p class='note'>For each signature, the posterior probability that each "
                  f"reference signature is its best match (by cosine), the cosine to the most "
                  f"probable one, and <code>p_novel</code>, the probability that no reference "
                  f"reaches cosine {a['cutoff']}; <code>novel</code> when above 0.5.</p>",
                  _table(t)]
    if "alternatives" in dt:
        parts += _alternatives_html(dt["alternatives"].to_dataset())
    e = dt["exposures"].to_dataset()
    tot = e["mean"].sum("sample").values
    parts += ["<h2>Exposures</h2>",
              "<p class='note'>Mutations attributed to each signature (all samples; per "
              "sample with intervals in <code>exposures.tsv</code>).</p>",
              _table(pd.DataFrame(
                  {"signature": e["signature"].values, "mutations": tot,
                   "share": tot / max(tot.sum(), 1e-300)}))]
    return _PAGE.format(title="bnmfzoo signatures", body="\n".join(parts))
