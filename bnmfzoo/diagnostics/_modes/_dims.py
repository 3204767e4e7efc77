"""The factor dims of a result, read from the result itself: the user's names, not ours.

A PyMC user names the dims of a hand-written model (``genome`` / ``channel`` / ``signature``,
``cell_line`` / ``drug`` / ``k``); our own models call them ``row`` / ``col`` / ``factor``.
:func:`factor_dims` tells the roles apart from the draws alone, so it works as well on a result
read back from a netCDF file as on one just sampled: the basis ``A`` has dims (<row>, <factor>)
and the weights ``W`` (<factor>, <col>) besides the member dims (``chain, draw``, ``particle`` or
``component``), and the factor dim is the one the two have in common. A model whose factors have
no shared dim (``shape=`` without ``dims=``), or a basis without weights whose dims are not ours,
cannot be read this way: then ``dims=`` names the roles, or a ``ValueError`` says so.
:func:`members` stacks the members of a result (draws, particles or mixture components) in the
order every diagnostic of this package computes with: ``A`` (n, D, R), ``W`` (n, R, N).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

#: member dims of each source group, besides the factor dims
MEMBER_DIMS = {"posterior": ("chain", "draw"), "particles": ("particle",),
               "variational": ("component",)}
#: our own names (what a model built by :mod:`bnmfzoo.models` uses)
DEFAULT = ("row", "factor", "col")
_ROLES = ("row", "factor", "col")
_HOW = ("pass dims=(row_dim, factor_dim, col_dim), e.g. dims=('genome', 'signature', "
        "'channel'), or name the model's dims so that A and W share the factor dim "
        "(dims=(row, factor) on A and (factor, col) on W)")


@dataclass(frozen=True)
class FactorDims:
    """The dims of a pair factorization ``X ~ A W`` as the result names them.

    Attributes
    ----------
    row, factor, col : str
        Dim of the data's rows (``A``'s other dim), of the factors, and of the data's columns
        (``W``'s other dim; None when the result has no ``W``).

    Examples
    --------
    >>> FactorDims("genome", "signature", "channel").basis
    ('genome', 'signature')
    """

    row: str
    factor: str
    col: str | None = None

    @property
    def basis(self):
        """``(row, factor)``: the dims of one draw of ``A``."""
        return (self.row, self.factor)

    @property
    def weights(self):
        """``(factor, col)``: the dims of one draw of ``W``."""
        return (self.factor, self.col)

    def as_dict(self):
        """``{"row": ..., "factor": ..., "col": ...}``."""
        return {"row": self.row, "factor": self.factor, "col": self.col}


def _explicit(dims):
    if isinstance(dims, FactorDims):
        return dims
    if isinstance(dims, Mapping):
        unknown = set(dims) - set(_ROLES)
        if unknown or "row" not in dims or "factor" not in dims:
            raise ValueError(f"dims must map 'row', 'factor' (and 'col') to dim names, got "
                             f"{dict(dims)!r}")
        values = (dims["row"], dims["factor"], dims.get("col"))
    elif isinstance(dims, (tuple, list)) and len(dims) in (2, 3):
        values = (*dims, None)[:3]
    else:
        raise ValueError(f"dims must be a tuple (row_dim, factor_dim, col_dim) or a dict with "
                         f"keys 'row', 'factor', 'col', got {dims!r}")
    if not all(isinstance(v, str) for v in values[:2]) or not (
            values[2] is None or isinstance(values[2], str)):
        raise ValueError(f"dims must name dims by strings, got {dims!r}")
    if len({v for v in values if v is not None}) != len([v for v in values if v is not None]):
        raise ValueError(f"dims must name three different dims, got {dims!r}")
    return FactorDims(*values)


def factor_dims(ds, *, dims=None, basis="A", weights="W", member_dims=("chain", "draw")):
    """Which dims of ``ds`` are the rows, the factors and the columns.

    Parameters
    ----------
    ds : xarray.Dataset or xarray.DataTree
        A group holding the basis (e.g. ``posterior``); a DataTree is read as its own dataset.
    dims : tuple, dict or FactorDims, optional
        The roles given explicitly: ``(row_dim, factor_dim, col_dim)`` or ``{"row": ...,
        "factor": ..., "col": ...}``; checked against the variables. Default: inferred (the
        factor dim is the dim ``basis`` and ``weights`` share).
    basis, weights : str
        The variables holding ``A`` (rows x factors) and ``W`` (factors x columns).
    member_dims : tuple of str
        Dims that index members (draws, particles, components), not factor entries.

    Returns
    -------
    FactorDims

    Raises
    ------
    ValueError
        When ``basis`` is missing, when ``dims`` does not match the variables, or when the roles
        cannot be inferred (the message says how to pass ``dims=``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"A": (("chain", "draw", "genome", "k"), np.ones((1, 2, 4, 2))),
    ...                  "W": (("chain", "draw", "k", "channel"), np.ones((1, 2, 2, 3)))})
    >>> factor_dims(ds)
    FactorDims(row='genome', factor='k', col='channel')
    """
    if hasattr(ds, "to_dataset"):
        ds = ds.to_dataset()
    if basis not in ds:
        raise ValueError(f"no basis {basis!r} to read the factor dims from (variables: "
                         f"{sorted(map(str, ds.data_vars))})")
    a = [d for d in ds[basis].dims if d not in member_dims]
    w = [d for d in ds[weights].dims if d not in member_dims] if weights in ds else None
    if dims is not None:
        fd = _explicit(dims)
        if set(a) != {fd.row, fd.factor}:
            raise ValueError(f"dims={dims!r} does not match {basis!r}, whose dims (besides "
                             f"{', '.join(member_dims)}) are {tuple(a)}")
        if w is not None:
            col = fd.col if fd.col is not None else next((d for d in w if d != fd.factor), None)
            if fd.factor not in w or col not in w or len(w) != 2:
                raise ValueError(f"dims={dims!r} does not match {weights!r}, whose dims (besides "
                                 f"{', '.join(member_dims)}) are {tuple(w)}")
            fd = FactorDims(fd.row, fd.factor, col)
        return fd
    if len(a) != 2:
        raise ValueError(f"{basis!r} must have two dims besides {', '.join(member_dims)} (rows "
                         f"and factors), got {tuple(a)}")
    if w is None:
        if DEFAULT[1] in a:  # our own names
            return FactorDims(a[1 - a.index(DEFAULT[1])], DEFAULT[1], None)
        raise ValueError(f"cannot tell the factor dim of {basis!r} (dims {tuple(a)}) without "
                         f"{weights!r}: {_HOW}")
    if len(w) != 2:
        raise ValueError(f"{weights!r} must have two dims besides {', '.join(member_dims)} "
                         f"(factors and columns), got {tuple(w)}")
    shared = [d for d in a if d in w]
    if len(shared) == 1:
        f = shared[0]
        return FactorDims(a[1 - a.index(f)], f, w[1 - w.index(f)])
    if len(shared) == 2 and a[1] == w[0] and a[0] != a[1]:
        return FactorDims(a[0], a[1], w[1])  # square data with one dim name for both sides
    if not shared:
        raise ValueError(f"cannot tell the factor dim: {basis!r} has dims {tuple(a)} and "
                         f"{weights!r} {tuple(w)}, which share none; name the model's dims so "
                         "that they share the factor dim: dims=(row, factor) on "
                         f"{basis!r} and (factor, col) on {weights!r}")
    raise ValueError(f"cannot tell the factor dim: {basis!r} has dims {tuple(a)} and "
                     f"{weights!r} {tuple(w)}, which share both; {_HOW}")


def members(dt, source, *, dims=None):
    """The members of a result as arrays, with the dims they were read with.

    Returns ``(A (n, D, R), W (n, R, N) or None, weights (n,), chain_of, draw_of, source,
    FactorDims)``; ``source="auto"`` prefers weighted particles, then mixture components, then
    posterior draws.
    """
    if source == "auto":
        if _has(dt, "particles", ("weight", "A")):
            source = "particles"
        elif _has(dt, "variational", ("weight", "A_mean")):
            source = "variational"
        else:
            source = "posterior"
    if source not in dt.children:
        raise ValueError(f"source={source!r}: the result has no {source!r} group "
                         f"(groups: {sorted(dt.children)})")
    ds = dt[source].to_dataset()
    lead = MEMBER_DIMS[source]
    a_name, w_name = ("A_mean", "W_mean") if source == "variational" else ("A", "W")
    if source == "posterior" and "A" not in ds:
        raise ValueError("the posterior has no basis 'A' (rows x factors) to find modes of")
    if source != "posterior" and (a_name not in ds or "weight" not in ds):
        raise ValueError(f"group {source!r} needs {a_name!r} and 'weight'")
    fd = factor_dims(ds, dims=dims, basis=a_name, weights=w_name, member_dims=lead)
    A = ds[a_name].transpose(*lead, *fd.basis).values
    W = ds[w_name].transpose(*lead, *fd.weights).values if w_name in ds else None
    lead_shape = A.shape[: len(lead)]
    n = int(np.prod(lead_shape))
    A = A.reshape(n, *A.shape[len(lead):])
    W = None if W is None else W.reshape(n, *W.shape[len(lead):])
    if source == "posterior":
        C, S = lead_shape
        chain_of, draw_of = np.repeat(np.arange(C), S), np.tile(np.arange(S), C)
        weights = np.full(n, 1.0 / n)
    else:
        chain_of, draw_of = np.zeros(n, dtype=int), np.arange(n)
        weights = np.asarray(ds["weight"].values, dtype=float)
    return A, W, weights, chain_of, draw_of, source, fd


def _has(dt, group, names):
    return group in dt.children and all(v in dt[group].to_dataset() for v in names)
