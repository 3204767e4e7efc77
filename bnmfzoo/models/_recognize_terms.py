"""Recognize the SILF and uniform-noise likelihood terms in a ``pm.Model`` from its graph.

:func:`bnmfzoo.models.recognize` hands a model whose likelihood is an observed ``pm.Uniform``
(:func:`bnmfzoo.likelihoods.uniform`) to :func:`recognize_uniform`, and a model whose only
likelihood is a potential (:func:`bnmfzoo.likelihoods.silf`) to :func:`recognize_silf`. Both
return a frozen :class:`TermFactorization`: the data (read from the graph's constants), the
variables of ``A`` and ``W``, and the term's parameters as typed fields. Nothing is read from
attributes attached to the model.

What is recognized
------------------
* Uniform noise: an observed ``pm.Uniform(lower=mu - eps, upper=mu + eps)`` whose ``mu`` is
  ``A @ W`` on a selection of its entries and ``eps`` one constant (Masood & Doshi-Velez 2016).
* SILF (Masood & Doshi-Velez 2019, eq. 5): a potential ``-C SILF_{eps, beta}(f_X(A @ W))`` as
  :func:`bnmfzoo.likelihoods.silf` builds it, with ``f_X`` the squared Frobenius error, the KL
  or the Itakura-Saito divergence on the observed entries; ``X``, ``eps``, ``beta``, ``C`` and
  the objective are read from the graph's constants and its ops.
* Priors: any (they are reported, not required); constant scalar exponential rates of ``A``
  and ``W`` and the concentration of a column-Dirichlet ``A``
  (:func:`bnmfzoo.models.silf_dirichlet.column_dirichlet`) are read into typed fields.
"""

from dataclasses import dataclass

import numpy as np
import xarray as xr

from bnmfzoo.models._graph import depends_on, evaluate, reciprocal_of, rv_params, shape_of
from bnmfzoo.models._observed import (
    NotRecognized,
    _coords,
    _entries,
    _match_product,
    _names,
    long_matrix,
)
from bnmfzoo.models._recognize_parts import _users

__all__ = ["TermFactorization", "recognize_uniform", "recognize_silf", "silf_potential"]

_TINY = 1e-12  # bnmfzoo._terms.silf._TINY: floor of the model inside KL / Itakura-Saito


@dataclass(frozen=True, eq=False)
class TermFactorization:
    """A recognized model with one of our non-Gaussian terms (result of :func:`recognize`).

    Attributes
    ----------
    kind : str
        ``"silf"`` or ``"uniform"``.
    likelihood : str
        Name of the potential (SILF) or observed variable (uniform).
    X : xarray.DataArray
        D x N data (``row``, ``col``), NaN where not observed (always dense).
    mask : numpy.ndarray of bool
    rank : int
    factors : dict
        ``{"A": name, "W": name}`` of the free variables.
    entries : bnmfzoo._base.entries.LongMatrix
        The observed entries in long format.
    epsilon : float
        SILF threshold, or half-width of the uniform box.
    beta, C : float or None
        SILF smoothness and inverse temperature (None for uniform noise).
    objective : str or None
        The SILF objective (``"frobenius"``, ``"kl"``, ``"itakura_saito"``).
    lambda_A, lambda_W : float or None
        Constant scalar rate of an ``Exponential`` prior on ``A`` / ``W``, else None.
    simplex_columns : bool
        ``A``'s columns live on the simplex (a column-Dirichlet ``A``).
    alpha : float or None
        The symmetric concentration of a column-Dirichlet ``A``.
    others : tuple of str
        Free variables besides ``A`` and ``W``.
    """

    kind: str
    likelihood: str
    X: xr.DataArray
    mask: np.ndarray
    rank: int
    factors: dict
    entries: object
    epsilon: float
    beta: float | None = None
    C: float | None = None
    objective: str | None = None
    lambda_A: float | None = None
    lambda_W: float | None = None
    simplex_columns: bool = False
    alpha: float | None = None
    others: tuple = ()

    @property
    def family(self):
        """``"silf"`` or ``"uniform_noise"`` (the constructors' family names)."""
        return "silf" if self.kind == "silf" else "uniform_noise"

    @property
    def var_names(self):
        """Role -> variable name of the two factors."""
        return dict(self.factors)

    @property
    def X_values(self):
        """Data with zeros where unobserved."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)


def _op(var):
    """Name of the scalar op of an Elemwise node (``"Mul"``, ``"Switch"``...), else the op's."""
    if var is None or var.owner is None:
        return None
    op = var.owner.op
    if type(op).__name__ == "Elemwise":
        return type(op.scalar_op).__name__
    return type(op).__name__


def _strip(var):
    """``var`` without DimShuffles (broadcasting of constants)."""
    while var.owner is not None and type(var.owner.op).__name__ == "DimShuffle":
        var = var.owner.inputs[0]
    return var


def _constant(var, free):
    """The scalar value of a constant expression, else None."""
    if depends_on(var, free):
        return None
    value = np.asarray(evaluate(var), dtype=float).ravel()
    if value.size == 0 or not np.all(value == value[0]):
        return None
    return float(value[0])


def _factors(model, mean, free, what):
    factor_rvs = depends_on(mean, free)
    if len(factor_rvs) != 2:
        raise NotRecognized(f"the {what} depends on {_names(factor_rvs)}; recognized: A @ W "
                            "(two factors) and nothing else")
    shapes = {rv: shape_of(rv, {}) for rv in factor_rvs}
    kind, assignment, rows, cols, (D, N), rank = _match_product(mean, factor_rvs, shapes)
    for role, (rv, transposed) in assignment.items():
        if transposed:
            raise NotRecognized(f"{role} ({rv.name!r}) is used transposed in the {what}")
    return assignment, rows, cols, (D, N), int(rank)


def _prior_fields(model, assignment, free):
    """``lambda_A``, ``lambda_W``, ``simplex_columns`` and ``alpha`` read from the priors."""
    out = {"lambda_A": None, "lambda_W": None, "simplex_columns": False, "alpha": None}
    for role, (rv, _) in assignment.items():
        if type(rv.owner.op).__name__ == "ExponentialRV":
            scale = rv_params(rv)[0]
            rate = reciprocal_of(scale)
            value = _constant(rate, free) if rate is not None else None
            if value is None and rate is None:
                s = _constant(scale, free)
                value = None if s is None else 1.0 / s
            out[f"lambda_{role}"] = value
    A = assignment["A"][0]
    from bnmfzoo.models.silf_dirichlet import ColumnSimplexTransform

    if isinstance(model.rvs_to_transforms.get(A), ColumnSimplexTransform):
        out["simplex_columns"] = True
        for inp in A.owner.inputs:
            if getattr(inp.type, "dtype", "").startswith("float"):
                out["alpha"] = _constant(inp, free)
                break
    return out


def _check_users(model, assignment, likelihood):
    for role, (rv, _) in assignment.items():
        users = [u for u in _users(model, rv) if u is not likelihood]
        if users:
            raise NotRecognized(f"{role} ({rv.name!r}) is also used by {_names(users)}; "
                                "recognized: the factors appear only in the likelihood")


def _dense(entries, name):
    D, N = entries.shape
    coords = {"row": entries.row_labels, "col": entries.col_labels}
    X = xr.DataArray(entries.to_dense(), dims=("row", "col"), coords=coords, name=name)
    return X, np.asarray(entries.dense_mask(), dtype=bool)


def recognize_uniform(model, obs):
    """:class:`TermFactorization` of a uniform-noise likelihood ``obs``; else raise.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> from bnmfzoo.models import recognize
    >>> with pm.Model() as model:
    ...     A = pm.Exponential("A", 2.0, shape=(3, 1))
    ...     W = pm.Exponential("W", 1.0, shape=(1, 4))
    ...     _ = likelihoods.uniform("X", A, W, observed=np.ones((3, 4)), epsilon=0.5)
    >>> f = recognize(model)
    >>> f.family, f.epsilon, f.lambda_A, f.rank
    ('uniform_noise', 0.5, 2.0, 1)
    """
    free = list(model.free_RVs)
    lower, upper = rv_params(obs)
    what = ("recognized: pm.Uniform(lower=mu - epsilon, upper=mu + epsilon) with mu = A @ W on "
            "the observed entries and epsilon one constant (bnmfzoo.likelihoods.uniform)")
    if _op(lower) != "Sub" or _op(upper) != "Add":
        raise NotRecognized(f"the uniform likelihood {obs.name!r} is not a box around its mean; "
                            + what)
    mu, e_lo = lower.owner.inputs
    mu2, e_hi = upper.owner.inputs
    eps = _constant(_strip(e_lo), free)
    if mu is not mu2 or eps is None or _constant(_strip(e_hi), free) != eps or eps <= 0:
        raise NotRecognized(f"the uniform likelihood {obs.name!r} is not a box of one constant "
                            "half-width around its mean; " + what)
    assignment, rows, cols, (D, N), rank = _factors(model, mu, free, f"mean of {obs.name!r}")
    _check_users(model, assignment, obs)
    entries = _entries(model, obs, rows, cols, (D, N), _coords(model, assignment, "nmf", D, N))
    X, mask = _dense(entries, obs.name)
    ours = {rv for rv, _ in assignment.values()}
    return TermFactorization(
        kind="uniform", likelihood=obs.name, X=X, mask=mask, rank=rank,
        factors={role: rv.name for role, (rv, _) in assignment.items()}, entries=entries,
        epsilon=eps, others=tuple(sorted(rv.name for rv in free if rv not in ours)),
        **_prior_fields(model, assignment, free))


# ----------------------------------------------------------------------------- SILF


def silf_potential(model):
    """The one potential that reads as a SILF term, or None."""
    free = list(model.free_RVs)
    found = [p for p in model.potentials if depends_on(p, free) and _silf_parts(p, free)]
    return found[0] if len(found) == 1 else None


def _silf_parts(pot, free):
    """``(y, C, epsilon, lo, hi, quad_denominator)`` of a SILF potential, else None."""
    try:
        if _op(pot) != "Mul":
            return None
        c, s = pot.owner.inputs
        if _op(s) != "Switch":
            c, s = s, c
        C = _constant(_strip(c), free)
        if C is None or _op(s) != "Switch":
            return None
        cond, zero, s2 = s.owner.inputs
        if _op(cond) != "LE" or _constant(_strip(zero), free) != 0.0 or _op(s2) != "Switch":
            return None
        y, lo = cond.owner.inputs
        cond2, quad, lin = s2.owner.inputs
        if _op(cond2) != "LE" or cond2.owner.inputs[0] is not y or _op(lin) != "Sub":
            return None
        if lin.owner.inputs[0] is not y or _op(quad) != "TrueDiv":
            return None
        eps = _constant(_strip(lin.owner.inputs[1]), free)
        lo, hi = _constant(_strip(lo), free), _constant(_strip(cond2.owner.inputs[1]), free)
        denom = _constant(_strip(quad.owner.inputs[1]), free)
        if None in (eps, lo, hi, denom) or y.ndim != 0:
            return None
        return y, -C, eps, lo, hi, denom
    except Exception:  # noqa: BLE001 - not this term's graph
        return None


def _silf_beta(eps, lo, hi, denom):
    """The ``beta`` that reproduces the term's constants exactly (bit for bit)."""
    b0 = hi / eps - 1.0
    candidates = [float(f"{b0:.{p}g}") for p in range(1, 18)] + [b0]
    x = b0
    for _ in range(4):
        x = np.nextafter(x, np.inf)
        candidates.append(float(x))
    x = b0
    for _ in range(4):
        x = np.nextafter(x, -np.inf)
        candidates.append(float(x))
    for b in candidates:
        if (1.0 - b) * eps == lo and (1.0 + b) * eps == hi and 4.0 * b * eps == denom:
            return b
    return None


def _silf_objective(y, free):
    """``(objective, model-mean graph, observed values)`` of the SILF objective ``y``."""
    if _op(y) != "Sum":
        raise NotRecognized("the SILF potential's objective is not a sum over the entries")
    body = y.owner.inputs[0]
    if _op(body) == "Sqr" and _op(body.owner.inputs[0]) == "Sub":  # sum((x - m)^2)
        x, m = body.owner.inputs[0].owner.inputs
        return "frobenius", m, np.asarray(evaluate(x), dtype=float)
    if _op(body) == "Add":  # KL: ((xlogx - x log m) - x) + m
        left, m_floor = body.owner.inputs
        if _op(left) == "Sub" and _op(m_floor) == "Maximum":
            _, x = left.owner.inputs
            return "kl", m_floor.owner.inputs[0], np.asarray(evaluate(x), dtype=float)
    if _op(body) == "Sub":  # Itakura-Saito: ((xs / m - log xs) + log m) - 1
        left = body.owner.inputs[0]
        if _op(left) == "Add" and _op(left.owner.inputs[0]) == "Sub":
            ratio = left.owner.inputs[0].owner.inputs[0]
            if _op(ratio) == "TrueDiv" and _op(ratio.owner.inputs[1]) == "Maximum":
                xs = np.asarray(evaluate(ratio.owner.inputs[0]), dtype=float)
                # the term floors the data at _TINY: entries at the floor were zeros
                x = np.where(xs == _TINY, 0.0, xs)
                return "itakura_saito", ratio.owner.inputs[1].owner.inputs[0], x
    raise NotRecognized("the SILF potential's objective is not the squared error, KL or "
                        "Itakura-Saito divergence of bnmfzoo.likelihoods.silf")


def recognize_silf(model, pot):
    """:class:`TermFactorization` of the SILF potential ``pot``; else raise.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> from bnmfzoo.models import recognize
    >>> X = np.abs(np.random.default_rng(0).normal(size=(6, 5)))
    >>> with pm.Model() as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(6, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 5))
    ...     _ = likelihoods.silf("X", A, W, observed=X, epsilon=1.0)
    >>> f = recognize(model)
    >>> f.family, f.epsilon, f.beta, f.C, f.objective, f.lambda_W
    ('silf', 1.0, 0.1, 2.0, 'frobenius', 1.0)
    """
    free = list(model.free_RVs)
    parts = _silf_parts(pot, free)
    if parts is None:
        raise NotRecognized(f"the potential {pot.name!r} is not a SILF term")
    y, C, eps, lo, hi, denom = parts
    beta = _silf_beta(eps, lo, hi, denom)
    if beta is None:
        raise NotRecognized(f"the SILF potential {pot.name!r} has inconsistent knots")
    objective, m_obs, x_obs = _silf_objective(y, free)
    assignment, rows, cols, (D, N), rank = _factors(model, m_obs, free,
                                                    f"SILF potential {pot.name!r}")
    rows, cols = rows.ravel(), cols.ravel()
    if x_obs.shape != rows.shape:
        raise NotRecognized(f"the SILF potential {pot.name!r} compares {x_obs.size} data with "
                            f"{rows.size} entries of A @ W")
    _check_users(model, assignment, pot)
    coords = _coords(model, assignment, "nmf", D, N)
    entries = long_matrix(rows, cols, x_obs, (D, N), coords, pot.name)
    X, mask = _dense(entries, pot.name)
    ours = {rv for rv, _ in assignment.values()}
    return TermFactorization(
        kind="silf", likelihood=pot.name, X=X, mask=mask, rank=rank,
        factors={role: rv.name for role, (rv, _) in assignment.items()}, entries=entries,
        epsilon=eps, beta=beta, C=C, objective=objective,
        others=tuple(sorted(rv.name for rv in free if rv not in ours)),
        **_prior_fields(model, assignment, free))
