"""Plots a person would rather look at than read: basis images, modes, particles, ELBO traces.

All functions return a :class:`matplotlib.figure.Figure` (save it with ``fig.savefig``).
"""

import numpy as np


def _as_numpy(A):
    return np.asarray(getattr(A, "values", A), dtype=float)


def _labels(da, dim):
    """The coordinate labels of ``dim`` as strings, or None."""
    coords = getattr(da, "coords", {})
    return [str(v) for v in da[dim].values] if dim in coords else None


def _factor_titles(dim, labels, R):
    """``"<factor dim> <label>"`` per factor (``"factor 0"``... for our own models)."""
    return [f"{dim} {labels[r] if labels else r}" for r in range(R)]


def _mode_dims(m):
    """The row and factor dims of a :func:`~bnmfzoo.diagnostics.modes` dataset."""
    return str(m.attrs.get("row_dim", "row")), str(m.attrs.get("factor_dim", "factor"))


def plot_bases(A, *, image_shape=None, titles=None, ncols=8, cmap="gray_r", title=None):
    """Show the columns of a basis matrix, as images when ``image_shape`` is given.

    Parameters
    ----------
    A : array-like or xarray.DataArray, shape (D, R)
        Basis matrix (rows x factors: ``row`` x ``factor`` in our models, whatever the dims
        are called in a DataArray, e.g. ``genome`` x ``signature``).
    image_shape : tuple of int, optional
        ``(height, width)`` with ``height * width == D``; without it each column is a bar chart
        of its top 10 rows (labelled with the DataArray's row coordinate when present).
    titles : list of str, optional
        One title per column (default: the factor dim and label, e.g. ``"signature SBS1"``).
    ncols : int
    cmap : str
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> fig = plot_bases(np.eye(16)[:, :4], image_shape=(4, 4))
    """
    import matplotlib.pyplot as plt

    values = _as_numpy(A)
    D, R = values.shape
    labels, fdim, flabels = None, "factor", None
    if hasattr(A, "dims") and len(A.dims) == 2:
        labels = _labels(A, A.dims[0])
        fdim, flabels = str(A.dims[1]), _labels(A, A.dims[1])
    titles = titles or _factor_titles(fdim, flabels, R)
    ncols = max(1, min(ncols, R))
    nrows = int(np.ceil(R / ncols))
    size = (1.6 * ncols, 1.7 * nrows) if image_shape else (2.6 * ncols, 2.4 * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= R:
            ax.set_visible(False)
            continue
        col = values[:, k]
        if image_shape is not None:
            if int(np.prod(image_shape)) != D:
                raise ValueError(f"image_shape {image_shape} does not match {D} rows")
            ax.imshow(col.reshape(image_shape), cmap=cmap, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        else:
            top = np.argsort(col)[::-1][:10]
            ax.barh(range(len(top))[::-1], col[top], color="C0")
            ax.set_yticks(range(len(top))[::-1])
            ax.set_yticklabels([labels[i] if labels else str(i) for i in top], fontsize=10)
            ax.tick_params(axis="x", labelsize=10)
        ax.set_title(titles[k], fontsize=11)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_particles(dt, *, image_shape=None, top=4, max_factors=8, cmap="gray_r"):
    """Show the bases of the ``top`` heaviest particles side by side with their weights.

    Parameters
    ----------
    dt : xarray.DataTree
        A particle fit (a ``particles`` group with ``A`` and ``weight``).
    image_shape : tuple of int, optional
        Reshape each basis column into an image.
    top : int
        Number of particles (rows of the figure), heaviest first.
    max_factors : int
        Number of factors per particle shown (columns of the figure).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    from bnmfzoo.diagnostics._modes._dims import factor_dims

    part = dt["particles"]
    weights = part["weight"].values
    order = np.argsort(weights)[::-1][:top]
    fd = factor_dims(part, member_dims=("particle",))
    A = part["A"].transpose("particle", *fd.basis).values
    mode_of = None
    if A.shape[0] > 1:
        # factors aligned within modes, so a column shows the same factor in every row
        from bnmfzoo.diagnostics._modes.mode_clustering import modes

        m = modes(dt, source="particles", warn=False)["modes"]
        A = np.take_along_axis(A, m["member_perm"].values[:, None, :], axis=-1)
        mode_of = m["member_mode"].values
    R = min(A.shape[2], max_factors)
    fig, axes = plt.subplots(len(order), R, figsize=(1.3 * R, 1.45 * len(order)), squeeze=False)
    for i, p in enumerate(order):
        for k in range(R):
            ax = axes[i, k]
            col = A[p, :, k]
            if image_shape is not None:
                ax.imshow(col.reshape(image_shape), cmap=cmap, interpolation="nearest")
            else:
                ax.plot(col, lw=0.8)
            ax.set_xticks([])
            ax.set_yticks([])
            if k == 0:
                mode = "" if mode_of is None else f"\nmode {mode_of[p]}"
                ax.set_ylabel(f"#{p}\nw={weights[p]:.3f}{mode}", fontsize=10)
    fig.suptitle(f"Top {len(order)} particles by weight (of {len(weights)}; factors aligned "
                 "within modes; w: particle weights, not posterior masses)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_elbo(elbo, *, ax=None, label=None):
    """Plot an ELBO (or objective) trace against iteration."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 3))
    else:
        fig = ax.figure
    values = _as_numpy(elbo).ravel()
    ax.plot(np.arange(1, values.size + 1), values, label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO")
    if label:
        ax.legend()
    fig.tight_layout()
    return fig


def _weight_label(m, k):
    """What the mode's weight is (a mass with its MCSE, or what it is instead), on two lines."""
    from bnmfzoo.diagnostics._modes.point_estimate import weight_label

    return weight_label(m, k).replace(" (not a mass)", "\n(not a mass)")


def plot_modes(result, *, image_shape=None, top=4, max_factors=8, cmap="gray_r", modes_tree=None):
    """Show each mode's aligned mean basis, one row per mode, labelled with its weight.

    Parameters
    ----------
    result : xarray.DataTree
        Any result :func:`bnmfzoo.diagnostics.modes` accepts.
    image_shape : tuple of int, optional
        Reshape each basis column into an image (else a line over rows).
    top : int
        Number of modes shown (heaviest first).
    max_factors : int
        Factors per mode shown.
    modes_tree : xarray.DataTree, optional
        A precomputed :func:`~bnmfzoo.diagnostics.modes` result.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> A = np.random.default_rng(0).random((2, 10, 16, 3))
    >>> fig = plot_modes(build_datatree({"A": A}), image_shape=(4, 4))
    """
    import matplotlib.pyplot as plt

    from bnmfzoo.diagnostics._modes.mode_clustering import modes

    m = (modes_tree if modes_tree is not None else modes(result, warn=False))["modes"]
    K = min(int(m.sizes["mode"]), top)
    rdim, fdim = _mode_dims(m)
    A = m["A_mean"].transpose("mode", rdim, fdim).values
    labels = _labels(m, rdim)
    R = min(A.shape[2], max_factors)
    titles = _factor_titles(fdim, _labels(m, fdim), R)
    size = (max(6.0, 1.6 * R), 1.9 * K) if image_shape else (max(6.0, 3.4 * R), 3.0 * K)
    fig, axes = plt.subplots(K, R, figsize=size, squeeze=False)
    for k in range(K):
        for r in range(R):
            ax = axes[k, r]
            col = A[k, :, r]
            if image_shape is not None:
                ax.imshow(col.reshape(image_shape), cmap=cmap, interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
            else:  # the 8 largest rows of the factor, labelled
                best = np.argsort(col)[::-1][:8]
                ax.barh(range(len(best))[::-1], col[best], color=f"C{k}")
                ax.set_yticks(range(len(best))[::-1])
                ax.set_yticklabels([labels[i] if labels else str(i) for i in best], fontsize=10)
                ax.tick_params(axis="x", labelsize=10)
            if k == 0:
                ax.set_title(titles[r], fontsize=11)
            if r == 0:
                ax.set_ylabel(f"mode {k}\n{_weight_label(m, k)}\n"
                              f"n={int(m['size'][k])}", fontsize=10)
    what = "" if image_shape is not None else f"; top {rdim} of each {fdim}"
    fig.suptitle(f"Mean basis per mode ({int(m.sizes['mode'])} modes of the "
                 f"{m.attrs['source']}; factors aligned{what})", fontsize=12)
    fig.tight_layout()
    return fig
