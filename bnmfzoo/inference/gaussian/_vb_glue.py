"""PyMC glue of :func:`fit_vb`, :func:`fit_icm` and :func:`fit_multiplicative`.

Reads the spec of an ``exponential_gaussian`` / ``tri_exponential_gaussian`` model
(:func:`bnmfzoo.models._spec.get_spec`) into a plain-array
:class:`~bnmfzoo.inference.gaussian._vb_problem.Problem`, and wraps the fitted arrays in a
DataTree named as in the model. The numeric core (:mod:`~bnmfzoo.inference.gaussian._vb_core`)
never sees the spec.
"""

import numpy as np

from bnmfzoo.inference.gaussian._vb_problem import Observed, Problem
from bnmfzoo.models._spec import get_spec

FAMILIES = ("exponential_gaussian", "tri_exponential_gaussian")


def _hyper(hyper, name, default):
    value = hyper.get(name, default)
    return default if value is None else value


def problem_from_model(model, *, method):
    """Read the spec of a Gaussian NMF / NMTF ``model`` into a :class:`Problem`."""
    spec = get_spec(model, families=FAMILIES, method=method)
    h = dict(spec.hyper)
    D, N = spec.mask.shape
    entries = getattr(spec, "entries", None)  # sparse data: no dense array
    obs = Observed(spec.X_values, spec.mask) if entries is None else Observed(entries)
    sigma = h.get("sigma")
    tau_fixed = None if sigma is None else 1.0 / float(sigma) ** 2
    ard = bool(h.get("ard", False))
    if spec.family == "exponential_gaussian":
        R = int(np.atleast_1d(spec.rank)[0])
        rank = (R,)
        lam = {
            "A": np.broadcast_to(np.asarray(_hyper(h, "lambda_A", 0.1), float), (D, R)).T.copy(),
            "W": np.broadcast_to(np.asarray(_hyper(h, "lambda_W", 0.1), float), (R, N)).copy(),
        }
    else:
        K, L = (int(v) for v in spec.rank)
        rank = (K, L)
        lam = {
            "F": np.broadcast_to(np.asarray(_hyper(h, "lambda_F", 0.1), float), (D, K)).T.copy(),
            "S": np.broadcast_to(np.asarray(_hyper(h, "lambda_S", 0.1), float), (K, L)).copy(),
            "G": np.broadcast_to(np.asarray(_hyper(h, "lambda_G", 0.1), float), (N, L)).T.copy(),
        }
    return Problem(
        family=spec.family, spec=spec, obs=obs, rank=rank, lam=lam,
        alpha_tau=float(_hyper(h, "alpha_tau", 1.0)), beta_tau=float(_hyper(h, "beta_tau", 1.0)),
        tau_fixed=tau_fixed, ard=ard,
        alpha0=float(_hyper(h, "alpha0", 1.0)), beta0=float(_hyper(h, "beta0", 1.0)),
    )


ROLE_DIMS = {
    "A": ["row", "factor"],
    "W": ["factor", "col"],
    "F": ["row", "factor_row"],
    "S": ["factor_row", "factor_col"],
    "G": ["col", "factor_col"],
    "tau": [],
    "lambda_": ["factor"],
    "lambda_F": ["factor_row"],
    "lambda_G": ["factor_col"],
}


def var_name(problem, role):
    """PyMC variable name the model uses for ``role`` (falls back to the role itself)."""
    return problem.spec.var_names.get(role) or role


def result_coords(problem):
    """Coordinates for the DataTree: the data's row/col labels and integer factor indices."""
    from bnmfzoo._results import data_coords

    coords = data_coords(problem.spec.X)
    if problem.tri:
        coords["factor_row"] = np.arange(problem.rank[0])
        coords["factor_col"] = np.arange(problem.rank[1])
    else:
        coords["factor"] = np.arange(problem.rank[0])
    return coords


def build_result(problem, draws, *, method, sample_stats=None, groups=None, attrs=None):
    """Wrap posterior ``draws`` ({role: (chain, draw, ...)} in public layout) in a DataTree.

    ``draws`` may hold the roles A/W (or F/S/G), ``tau`` and ``lambda_`` (``lambda_F``,
    ``lambda_G``). Variables are named as in the model's spec.
    """
    from bnmfzoo._results import build_datatree, observed_long

    posterior, dims = {}, {}
    for role, arr in draws.items():
        name = var_name(problem, role)
        posterior[name] = arr
        dims[name] = ROLE_DIMS[role]
    entries = getattr(problem.spec, "entries", None)
    if entries is None:
        dims["X"] = ["row", "col"]
        observed = {"X": np.asarray(problem.spec.X.values, dtype=float)}
    else:  # sparse data: long format, never a dense D x N array
        observed = observed_long(entries)
    return build_datatree(
        posterior,
        sample_stats=sample_stats,
        observed_data=observed,
        coords=result_coords(problem),
        dims=dims,
        groups=groups,
        attrs={"method": method, "model": problem.family, **(attrs or {})},
    )
