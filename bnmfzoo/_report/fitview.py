"""The fit: observed vs predicted, residuals and a posterior predictive check.

Predictions are the posterior mean of ``A @ W`` on the observed entries: the
Rao-Blackwellized ``rao_blackwell/X_mean`` when the result has it (it averages every sweep and
every component, also those a compact result does not store), else the average of ``A @ W``
over at most :data:`MAX_DRAWS` evenly spaced posterior draws (or the weighted particles).

The posterior predictive check replicates the data from those draws: ``Bernoulli(A @ W)`` for
binary data, ``Normal(A @ W, 1 / tau)`` (or ``sigma``) for the Gaussian models, and compares
two statistics with the observed ones: each row's mean (plotted with its 5-95 % replicated
range; the share of rows inside is reported, about 90 % when the model fits) and the standard
deviation of all observed entries (posterior predictive p-value). Other likelihoods get no
check (the report says so).
"""

import numpy as np

#: posterior draws (or particles) used for predictions and replications
MAX_DRAWS = 60
#: points drawn in the scatter plot
MAX_POINTS = 20_000
#: observed entries used (a uniform random subset above this), which bounds time and memory
MAX_ENTRIES = 400_000


def _observed(dt, shape=None):
    """``(values, rows, cols, shape)`` of the observed entries, or None.

    Entries stored flat (a ``pm.sample`` result of our likelihood terms: dim ``X_obs`` whose
    coordinate is the row-major flat index) are placed with ``shape``, the factors' ``(D, N)``.
    """
    if "observed_data" not in dt.children or "X" not in dt["observed_data"]:
        return None
    obs = dt["observed_data"]
    X = obs["X"]
    if X.ndim == 2:
        values = X.values
        rows, cols = np.nonzero(~np.isnan(values))
        return values[rows, cols], rows, cols, values.shape
    if "row_index" in obs and "col_index" in obs:
        shape = tuple(int(s) for s in np.ravel(obs.attrs.get("shape", X.attrs.get("shape", ()))))
        if len(shape) != 2:
            shape = (int(obs["row_index"].max()) + 1, int(obs["col_index"].max()) + 1)
        return X.values, obs["row_index"].values, obs["col_index"].values, shape
    if X.ndim == 1 and shape is not None and X.dims[0] in obs.coords:
        idx = np.asarray(obs[X.dims[0]].values)
        if np.issubdtype(idx.dtype, np.integer) and (idx.size == 0 or (
                idx.min() >= 0 and idx.max() < shape[0] * shape[1])):
            rows, cols = np.divmod(idx, shape[1])
            return np.asarray(X.values, dtype=float), rows, cols, tuple(shape)
    return None


def _draws(dt, dims=None):
    """``(A, W, noise_sd or None, weights)`` for at most MAX_DRAWS members, or None."""
    from bnmfzoo.diagnostics._modes._dims import factor_dims

    if "particles" in dt.children and {"A", "W", "weight"} <= set(dt["particles"].data_vars):
        p = dt["particles"]
        w = np.asarray(p["weight"].values, float)
        order = np.argsort(w)[::-1][:MAX_DRAWS]
        fd = factor_dims(p, dims=dims, member_dims=("particle",))
        A = p["A"].transpose("particle", *fd.basis).values[order]
        W = p["W"].transpose("particle", *fd.weights).values[order]
        return A, W, None, w[order] / w[order].sum()
    if "posterior" not in dt.children or not {"A", "W"} <= set(dt["posterior"].data_vars):
        return None
    post = dt["posterior"]
    C, S = post.sizes["chain"], post.sizes["draw"]
    per = max(1, MAX_DRAWS // C)
    idx = np.unique(np.linspace(0, S - 1, min(S, per)).astype(int))
    sub = post.isel(draw=idx)
    fd = factor_dims(sub, dims=dims)
    A = sub["A"].transpose("chain", "draw", *fd.basis).values
    W = sub["W"].transpose("chain", "draw", *fd.weights).values
    A = A.reshape(-1, *A.shape[2:]).astype(float)
    W = W.reshape(-1, *W.shape[2:]).astype(float)
    sd = None
    if "tau" in sub and sub["tau"].ndim == 2:
        sd = 1.0 / np.sqrt(sub["tau"].values.ravel().astype(float))
    elif "sigma" in sub and sub["sigma"].ndim == 2:
        sd = sub["sigma"].values.ravel().astype(float)
    elif "sigma" in dt.attrs:
        sd = np.full(A.shape[0], float(dt.attrs["sigma"]))
    return A, W, sd, np.full(A.shape[0], 1.0 / A.shape[0])


def fit_data(dt, *, random_seed=0, dims=None):
    """Everything the fit view shows, or None when the result has no data or no factors."""
    try:
        draws = _draws(dt, dims)
    except ValueError:  # factor dims the result does not tell (the modes section says why)
        draws = None
    observed = _observed(dt, None if draws is None else (draws[0].shape[1], draws[1].shape[2]))
    if observed is None or draws is None:
        return None
    y, rows, cols, shape = observed
    A, W, sd, w = draws
    if shape[0] > A.shape[1] or shape[1] > W.shape[2]:  # data stored in another orientation
        return None
    rng = np.random.default_rng(random_seed)
    subset = None
    if y.size > MAX_ENTRIES:
        subset = np.sort(rng.choice(y.size, size=MAX_ENTRIES, replace=False))
        y, rows, cols = y[subset], rows[subset], cols[subset]
    if A.shape[1] != shape[0] or W.shape[2] != shape[1]:
        return None
    mu = np.stack([np.einsum("ek,ke->e", a[rows], wm[:, cols]) for a, wm in zip(A, W)])
    if "rao_blackwell" in dt.children and "X_mean" in dt["rao_blackwell"]:
        xm = dt["rao_blackwell"]["X_mean"].values
        xm = xm[rows, cols] if xm.ndim == 2 else (xm if subset is None else xm[subset])
        pred, source = xm, "Rao-Blackwellized X_mean"
    else:
        pred, source = np.tensordot(w, mu, axes=1), f"mean of A @ W over {len(w)} draws"
    binary = bool(np.isin(y, (0.0, 1.0)).all()) and str(dt.attrs.get("model", "")) in (
        "beta_dir", "dir_beta", "dir_dir")
    rep = None
    if binary:
        rep = (rng.random(mu.shape) < np.clip(mu, 0, 1)).astype(float)
    elif sd is not None:
        rep = mu + rng.standard_normal(mu.shape) * sd[:, None]
    if subset is not None:
        source += f" (a random {MAX_ENTRIES:,} of the observed entries)"
    out = {"y": y, "pred": pred, "source": source, "binary": binary, "rows": rows,
           "n_rows": shape[0]}
    if rep is not None:
        counts = np.bincount(rows, minlength=shape[0])
        ok = counts > 0
        row_obs = np.bincount(rows, weights=y, minlength=shape[0])[ok] / counts[ok]
        row_rep = np.stack([np.bincount(rows, weights=r, minlength=shape[0])[ok] / counts[ok]
                            for r in rep])
        lo, hi = np.quantile(row_rep, [0.05, 0.95], axis=0)
        sd_rep = rep.std(axis=1)
        out.update(row_obs=row_obs, row_lo=lo, row_hi=hi, row_mid=row_rep.mean(0),
                   inside=float(np.mean((row_obs >= lo) & (row_obs <= hi))),
                   sd_obs=float(y.std()), sd_rep=sd_rep,
                   p_sd=float(np.mean(sd_rep >= y.std())))
    return out


def fit_html(fd):
    """Text of the fit section (numbers; the figure comes separately)."""
    if fd is None:
        return ("<h2>Fit</h2><p>No fit view: the result has no observed data or no posterior "
                "draws of A and W.</p>")
    resid = fd["y"] - fd["pred"]
    parts = [f"<h2>Fit</h2><p>Predictions: {fd['source']}, on the {fd['y'].size:,} observed "
             f"entries. Residual (observed − predicted): mean {resid.mean():.3g}, sd "
             f"{resid.std():.3g}; RMSE {np.sqrt(np.mean(resid ** 2)):.3g}."]
    if fd["binary"]:
        p = np.clip(fd["pred"], 1e-12, 1 - 1e-12)
        ll = np.mean(fd["y"] * np.log(p) + (1 - fd["y"]) * np.log1p(-p))
        parts.append(f" Log-likelihood per observed entry {ll:.4f}.")
    parts.append("</p>")
    if "inside" in fd:
        parts.append(
            f"<p>Posterior predictive check ({len(fd['sd_rep'])} replications): "
            f"{fd['inside']:.0%} of the rows have their observed mean inside the 5–95 % range "
            f"of the replicated ones (about 90 % when the model fits); sd of the observed "
            f"entries {fd['sd_obs']:.3g}, replicated {np.median(fd['sd_rep']):.3g} (median), "
            f"posterior predictive p-value {fd['p_sd']:.2f}.</p>")
    else:
        parts.append("<p>No posterior predictive check for this likelihood.</p>")
    return "".join(parts)


def plot_fit(fd, *, random_seed=0):
    """Figure: observed vs predicted, residuals, and the predictive checks."""
    import matplotlib.pyplot as plt

    n_panels = 4 if "inside" in fd else 2
    fig, axes = plt.subplots(1, n_panels, figsize=(4.3 * n_panels, 4.0), squeeze=False)
    axes = axes[0]
    y, pred = fd["y"], fd["pred"]
    if fd["binary"]:
        bins = np.linspace(0, 1, 11)
        which = np.clip(np.digitize(pred, bins) - 1, 0, 9)
        n = np.bincount(which, minlength=10)
        freq = np.bincount(which, weights=y, minlength=10) / np.maximum(n, 1)
        mid = np.bincount(which, weights=pred, minlength=10) / np.maximum(n, 1)
        axes[0].plot([0, 1], [0, 1], color="0.6", lw=1)
        axes[0].plot(mid[n > 0], freq[n > 0], "o-", color="C0")
        axes[0].set_xlabel("predicted probability (binned)", fontsize=11)
        axes[0].set_ylabel("observed frequency of 1", fontsize=11)
        axes[0].set_title("Calibration", fontsize=12)
    else:
        rng = np.random.default_rng(random_seed)
        pick = rng.choice(y.size, size=min(y.size, MAX_POINTS), replace=False)
        axes[0].scatter(pred[pick], y[pick], s=4, alpha=0.3, color="C0")
        lim = [min(pred.min(), y.min()), max(pred.max(), y.max())]
        axes[0].plot(lim, lim, color="0.4", lw=1)
        axes[0].set_xlabel("predicted (posterior mean)", fontsize=11)
        axes[0].set_ylabel("observed", fontsize=11)
        axes[0].set_title("Observed vs predicted", fontsize=12)
    axes[1].hist(y - pred, bins=60, color="C1")
    axes[1].set_xlabel("residual (observed − predicted)", fontsize=11)
    axes[1].set_ylabel("entries", fontsize=11)
    axes[1].set_title("Residuals", fontsize=12)
    if n_panels == 4:
        order = np.argsort(fd["row_mid"])
        x = np.arange(order.size)
        axes[2].fill_between(x, fd["row_lo"][order], fd["row_hi"][order], color="C2", alpha=0.3,
                             label="replicated 5–95 %")
        axes[2].plot(x, fd["row_obs"][order], ".", ms=3, color="k", label="observed")
        axes[2].set_xlabel("rows (sorted by replicated mean)", fontsize=11)
        axes[2].set_ylabel("row mean", fontsize=11)
        axes[2].set_title(f"PPC: row means ({fd['inside']:.0%} inside)", fontsize=12)
        axes[2].legend(fontsize=10)
        axes[3].hist(fd["sd_rep"], bins=20, color="C2", alpha=0.7, label="replicated")
        axes[3].axvline(fd["sd_obs"], color="k", lw=2, label="observed")
        axes[3].set_xlabel("sd of the entries", fontsize=11)
        axes[3].xaxis.set_major_locator(plt.MaxNLocator(3))
        axes[3].set_title(f"PPC: sd (p = {fd['p_sd']:.2f})", fontsize=12)
        axes[3].legend(fontsize=10)
    for ax in axes:
        ax.tick_params(labelsize=10)
    fig.tight_layout()
    return fig
