"""Results sized for what a user needs: thinned draws, active components, float32, zlib.

``bnmfzoo fit`` stores by default (``--keep-all`` stores everything as the fitter returned it):

* **thinned draws** for MCMC methods: ``--thin auto`` keeps every ``ceil(draws / 100)``-th
  draw, so at most :data:`AUTO_DRAWS` draws per chain (``--thin N`` picks N). The collapsed
  Gibbs samplers of the binary models thin while sampling (their Rao-Blackwellized means in
  the ``rao_blackwell`` group still average every sweep); other samplers are thinned after.
* **active components** of truncated (nonparametric) models: component ``k`` is *active* when
  its posterior median share (over the draws of one chain; per chain because labels differ
  between chains) is at least :data:`ACTIVE_SHARE` (1 %) in at least one row of ``A`` (for
  beta_dir and dir_dir, whose rows of ``A`` are each row's shares of the components) or one
  column of ``W`` (dir_beta, dir_dir); :func:`component_shares`. Only those are stored; the
  ``factor`` coordinate keeps their original indices, and a ``truncation`` group keeps every
  component's share per chain (``share``) and
  whether it was kept (``kept``), so what was dropped and how much it weighed stays visible.
* **float32** posterior draws (7 significant digits, far below any Monte-Carlo error) when
  the posterior holds more than :data:`FLOAT32_BYTES` (64 MiB) as float64; the observed data,
  sample statistics and Rao-Blackwellized means keep their dtype.
* **zlib** compression (level 4) of every array.
"""

import math

import numpy as np
import xarray as xr

#: stored draws per chain under ``--thin auto``
AUTO_DRAWS = 100
#: share of the expected total of ``A @ W`` that makes a component of a truncated model active
ACTIVE_SHARE = 0.01
#: posterior draws are stored as float32 when the posterior holds more bytes than this as
#: float64 (a small result keeps the fitter's bits: the command's result equals the library's)
FLOAT32_BYTES = 64 * 2**20


def auto_thin(draws):
    """The thinning of ``--thin auto``: at most :data:`AUTO_DRAWS` stored draws per chain.

    Examples
    --------
    >>> auto_thin(500), auto_thin(100), auto_thin(1)
    (5, 1, 1)
    """
    return max(1, math.ceil(int(draws) / AUTO_DRAWS))


def component_shares(posterior):
    """Per-chain posterior share of each component, (chain, factor).

    When the rows of ``A`` (or the columns of ``W``) lie on the simplex, as in the binary
    models' Dirichlet factors, their entries are each row's (column's) shares of the
    components, and the share of component ``k`` is its largest posterior median share over
    the rows (columns): a component that a single row uses is kept like one every row uses.
    Otherwise it is the component's share of the expected total ``sum(A @ W)``.
    """
    A = posterior["A"].transpose("chain", "draw", "row", "factor").values
    W = posterior["W"].transpose("chain", "draw", "factor", "col").values
    simplex_A = np.allclose(A[:, :3].sum(-1), 1.0, atol=1e-4)
    simplex_W = np.allclose(W[:, :3].sum(-2), 1.0, atol=1e-4)
    C, K = A.shape[0], A.shape[3]
    shares = np.zeros((C, K))
    for c in range(C):
        # the median over draws: a Dirichlet draw with a tiny concentration puts its mass on
        # a random component now and then, so the mean of an unused one is not near 0
        if simplex_A:
            shares[c] = np.maximum(shares[c], np.median(A[c], axis=0).max(0))
        if simplex_W:  # column blocks bound the median's copy
            for j in range(0, W.shape[3], 512):
                block = np.median(W[c, :, :, j:j + 512], axis=0).max(1)
                shares[c] = np.maximum(shares[c], block)
        if not (simplex_A or simplex_W):
            mass = (A[c].sum(1, dtype=float) * W[c].sum(2, dtype=float)).T  # (factor, draw)
            shares[c] = (mass / np.maximum(mass.sum(0), 1e-300)).mean(1)
    return xr.DataArray(shares, dims=("chain", "factor"))


def active_components(posterior, share=ACTIVE_SHARE):
    """``(kept, shares)``: boolean mask over ``factor`` and the per-chain shares.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> A = np.ones((1, 2, 3, 3)); W = np.ones((1, 2, 3, 4)); W[..., 2, :] = 1e-4
    >>> post = xr.Dataset({"A": (("chain", "draw", "row", "factor"), A),
    ...                    "W": (("chain", "draw", "factor", "col"), W)})
    >>> active_components(post)[0].tolist()
    [True, True, False]
    """
    shares = component_shares(posterior)
    kept = (shares >= share).any("chain").values
    if not kept.any():  # keep the heaviest one rather than nothing
        kept[int(shares.mean("chain").argmax())] = True
    return kept, shares


def compact(dt, *, thin=1, truncated=False, float32=True, share=ACTIVE_SHARE):
    """Return ``(dt, encoding)``: the result as ``bnmfzoo fit`` stores it (module docstring).

    ``thin`` thins every group with a ``draw`` dim; ``truncated`` keeps only the active
    components of ``posterior`` (needs ``A`` and ``W`` with a ``factor`` dim).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> dt = build_datatree({"A": np.ones((1, 10, 3, 2)), "W": np.ones((1, 10, 2, 4))})
    >>> small, enc = compact(dt, thin=5)
    >>> small["posterior"].sizes["draw"], str(small["posterior"]["A"].dtype)  # small: float64
    (2, 'float64')
    """
    nodes, encoding = {}, {}
    attrs = dict(dt.attrs)
    kept = None
    if truncated and "posterior" in dt.children and {"A", "W"} <= set(dt["posterior"].data_vars):
        post = dt["posterior"].to_dataset(inherit=False)
        if "factor" in post["A"].dims:
            kept, shares = active_components(post, share)
            factor = post["factor"].values if "factor" in post.coords else np.arange(kept.size)
            nodes["/truncation"] = xr.Dataset(
                {"share": (("chain", "component"), shares.values),
                 "kept": ("component", kept)},
                coords={"component": factor, "chain": post["chain"].values},
                attrs={"rule": f"kept: posterior median share >= {share:g} in a row of A or a "
                               "column of W (the Dirichlet side), in at least one chain"})
            attrs["active_components"] = (
                f"{int(kept.sum())} of {kept.size} components stored (posterior median share >= "
                f"{share:g} in a row of A or a column of W in a chain; original indices "
                "in coord 'factor'; "
                "all shares in group 'truncation'); the rao_blackwell means use all of them")
    for node in dt.subtree:
        ds = node.to_dataset(inherit=False)
        if thin > 1 and "draw" in ds.dims:
            ds = ds.isel(draw=slice(None, None, thin))
        if node.name == "posterior" and kept is not None:
            ds = ds.isel(factor=np.flatnonzero(kept))
        if float32 and node.name in ("posterior", "log_likelihood", "posterior_predictive") \
                and ds.nbytes > FLOAT32_BYTES:
            ds = ds.map(lambda v: v.astype(np.float32) if v.dtype == np.float64 else v)
        nodes[node.path] = ds
    for path, ds in nodes.items():
        encoding[path] = {name: {"zlib": True, "complevel": 4}
                          for name, var in ds.data_vars.items()
                          if var.ndim > 0 and var.dtype.kind in "fiub"}
    out = xr.DataTree.from_dict(nodes)
    out.attrs.update(attrs)
    if thin > 1:
        out.attrs["thinned_by"] = int(thin) * int(attrs.get("thinned_by", 1))
    if "posterior" in nodes and any(v.dtype == np.float32
                                    for v in nodes["/posterior"].data_vars.values()):
        out.attrs["posterior_dtype"] = "float32"
    return out, encoding
