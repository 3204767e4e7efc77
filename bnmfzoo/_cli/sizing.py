"""Results sized for what a user needs: thinned draws, active components, float32, zlib.

``bnmfzoo fit`` stores by default (``--keep-all`` stores everything as the fitter returned it):

* **thinned draws** for MCMC methods: ``--thin auto`` keeps every ``ceil(draws / 100)``-th
  draw, so at most :data:`AUTO_DRAWS` draws per chain (``--thin N`` picks N). The collapsed
  Gibbs samplers of the binary models thin while sampling (their Rao-Blackwellized means in
  the ``rao_blackwell`` group still average every sweep); other samplers are thinned after.
* **active components** of truncated (nonparametric) models: component ``k`` is *active* when
  its posterior mean share of the expected total ``sum(A @ W)``, i.e.
  ``mean over draws of A[:, k].sum() * W[k, :].sum() / sum_j A[:, j].sum() * W[j, :].sum()``,
  is at least :data:`ACTIVE_SHARE` (1 %) in at least one chain (per chain, because labels
  differ between chains). Only those are stored; the ``factor`` coordinate keeps their original
  indices, and a ``truncation`` group keeps every component's share per chain (``share``) and
  whether it was kept (``kept``), so what was dropped and how much it weighed stays visible.
* **float32** posterior draws (7 significant digits, far below any Monte-Carlo error); the
  observed data, sample statistics and Rao-Blackwellized means keep their dtype.
* **zlib** compression (level 4) of every array.
"""

import math

import numpy as np
import xarray as xr

#: stored draws per chain under ``--thin auto``
AUTO_DRAWS = 100
#: share of the expected total of ``A @ W`` that makes a component of a truncated model active
ACTIVE_SHARE = 0.01


def auto_thin(draws):
    """The thinning of ``--thin auto``: at most :data:`AUTO_DRAWS` stored draws per chain.

    Examples
    --------
    >>> auto_thin(500), auto_thin(100), auto_thin(1)
    (5, 1, 1)
    """
    return max(1, math.ceil(int(draws) / AUTO_DRAWS))


def component_shares(posterior):
    """Per-chain posterior mean share of each component in ``sum(A @ W)``: (chain, factor)."""
    A, W = posterior["A"], posterior["W"]
    mass = A.sum("row") * W.sum("col")  # (chain, draw, factor): sum over cells of A[:,k] W[k,:]
    total = mass.sum("factor")
    return (mass / total.where(total > 0)).mean("draw")


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
    >>> small["posterior"].sizes["draw"], str(small["posterior"]["A"].dtype)
    (2, 'float32')
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
                attrs={"rule": f"kept: posterior mean share of sum(A @ W) >= {share:g} in at "
                               "least one chain"})
            attrs["active_components"] = (
                f"{int(kept.sum())} of {kept.size} components stored (posterior mean share of "
                f"sum(A @ W) >= {share:g} in a chain; original indices in coord 'factor'; "
                "all shares in group 'truncation'); the rao_blackwell means use all of them")
    for node in dt.subtree:
        ds = node.to_dataset(inherit=False)
        if thin > 1 and "draw" in ds.dims:
            ds = ds.isel(draw=slice(None, None, thin))
        if node.name == "posterior" and kept is not None:
            ds = ds.isel(factor=np.flatnonzero(kept))
        if float32 and node.name in ("posterior", "log_likelihood", "posterior_predictive"):
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
    if float32:
        out.attrs["posterior_dtype"] = "float32"
    return out, encoding
