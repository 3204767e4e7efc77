"""Recognize mean-parameterized Bernoulli factorizations ``X ~ Bernoulli(A @ W)`` in a pm.Model.

:func:`bnmfzoo.models.recognize` hands a model whose likelihood is an observed ``pm.Bernoulli``
to :func:`recognize_bernoulli`, which returns a frozen :class:`BernoulliFactorization`: the
family (Lumbreras, Filstroff & Févotte 2020), the variables of ``A`` and ``W`` and the
hyperparameters of their priors as typed fields.

What is recognized
------------------
* Likelihood: an observed ``pm.Bernoulli(p=...)`` whose ``p`` is ``A @ W`` on a selection of its
  entries (``likelihoods.bernoulli_mean``, ``(A @ W)[mask]``, ``(A @ W)[rows, cols]`` or the
  whole product), optionally wrapped in ``pt.clip(., 0, 1)`` (a no-op on the support). Data 0/1.
* Priors, one factor holding probabilities and the other summing to one:

  ============  =================================  =================================
  family        ``A`` (D x K)                      ``W`` (K x N)
  ============  =================================  =================================
  ``beta_dir``  ``Dirichlet(gamma)``, D x K        ``Beta(alpha, beta)``, K x N
  ``dir_beta``  ``Beta(alpha, beta)``, D x K       ``Dirichlet(eta)``, an N x K variable
  ``dir_dir``   ``Dirichlet(gamma)``, D x K        ``Dirichlet(eta)``, an N x K variable
  ============  =================================  =================================

  The Dirichlet's simplex is its last axis, so the columns of ``W`` are a Dirichlet variable of
  shape N x K used as its transpose. The collapsed samplers need one concentration vector
  (K,) shared by all rows (columns) and Beta parameters that vary at most by factor: ``gamma``,
  ``eta``, ``alpha`` and ``beta`` are (K,) arrays. A parameter that depends on another random
  variable (a hyperprior) is recognized (its field is None and the factor's
  :class:`~bnmfzoo.models._recognize.Parameter` names the variables), but the collapsed
  samplers do not condition on it
  (:func:`bnmfzoo.inference.binary._recognized.spec_from_bernoulli` says so).
"""

from dataclasses import dataclass

import numpy as np
import xarray as xr
from pytensor.scalar.basic import Clip
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.op import RandomVariable

from bnmfzoo.models._graph import depends_on, evaluate, probe_env, rv_params
from bnmfzoo.models._observed import _coords, _match_product
from bnmfzoo.models._recognize import (
    FactorPrior,
    NotRecognized,
    Parameter,
    _names,
    _users,
)

__all__ = ["BernoulliFactorization", "recognize_bernoulli", "BERNOULLI_FAMILIES"]

#: (prior family of A, prior family of W) -> model family
BERNOULLI_FAMILIES = {("dirichlet", "beta"): "beta_dir", ("beta", "dirichlet"): "dir_beta",
                      ("dirichlet", "dirichlet"): "dir_dir"}
_WHAT = ("with a Bernoulli likelihood on A @ W the recognized priors are: rows of A on the "
         "simplex (A ~ Dirichlet, D x K) or Beta entries, and columns of W on the simplex "
         "(a Dirichlet variable of shape N x K, used transposed) or Beta entries (K x N), at "
         "least one factor a Dirichlet (Beta-Dir, Dir-Beta or Dir-Dir; Lumbreras et al. 2020)")
_PRIOR_OPS = {"DirichletRV": "dirichlet", "BetaRV": "beta"}


@dataclass(frozen=True, eq=False)
class BernoulliFactorization:
    """A recognized ``X ~ Bernoulli(A @ W)`` model (result of :func:`recognize` on it).

    Attributes
    ----------
    family : str
        ``"beta_dir"``, ``"dir_beta"`` or ``"dir_dir"``.
    likelihood : str
        Name of the observed Bernoulli variable.
    X : xarray.DataArray
        D x N data (``row``, ``col``), NaN where not observed.
    mask : numpy.ndarray of bool
    rank : int
        K.
    factors : dict
        ``"A"``, ``"W"`` -> :class:`~bnmfzoo.models._recognize.FactorPrior` with family
        ``"dirichlet"`` (params ``{"a"}``, in the variable's orientation) or ``"beta"``
        (``{"alpha", "beta"}``, in the role's orientation).
    gamma, eta : numpy.ndarray of shape (K,) or None
        Dirichlet concentration of the rows of ``A`` / of the columns of ``W`` (None when that
        factor is not a Dirichlet or its concentration depends on a random variable).
    alpha, beta : numpy.ndarray of shape (K,) or None
        Beta prior of the Beta factor (None for Dir-Dir, or when depending on a random
        variable).
    others : tuple of str
        Free variables besides ``A`` and ``W`` (sampled by other step methods).
    kind : str
        ``"bernoulli"`` (the Gaussian :class:`~bnmfzoo.models._recognize.Factorization` has
        ``"nmf"``/``"nmtf"``).
    """

    family: str
    likelihood: str
    X: xr.DataArray
    mask: np.ndarray
    rank: int
    factors: dict
    gamma: np.ndarray | None = None
    eta: np.ndarray | None = None
    alpha: np.ndarray | None = None
    beta: np.ndarray | None = None
    others: tuple = ()
    kind: str = "bernoulli"

    @property
    def var_names(self):
        """Role -> variable name of the two factors."""
        return {role: f.name for role, f in self.factors.items()}

    @property
    def X_values(self):
        """Data with zeros where unobserved."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)

    @property
    def hyperparameters(self):
        """``{name: (K,) array}`` of this family's hyperparameters (None if not constant)."""
        names = {"beta_dir": ("gamma", "alpha", "beta"), "dir_beta": ("eta", "alpha", "beta"),
                 "dir_dir": ("gamma", "eta")}[self.family]
        return {n: getattr(self, n) for n in names}


def _rv_shape(rv):
    """Shape of ``rv``, core dimensions included (a Dirichlet's ``size`` omits its simplex)."""
    if all(s is not None for s in rv.type.shape):
        return tuple(int(s) for s in rv.type.shape)
    return tuple(int(s) for s in np.shape(evaluate(rv, probe_env(rv_params(rv), {}))))


def _is_unit_clip(node, free):
    """True when ``node`` is ``clip(x, 0, 1)`` with constant bounds; raise for other bounds."""
    if node is None or not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op,
                                                                           Clip):
        return False
    _, lo, hi = node.inputs
    if (not depends_on(lo, free) and not depends_on(hi, free)
            and np.all(np.asarray(evaluate(lo)) == 0.0)
            and np.all(np.asarray(evaluate(hi)) == 1.0)):
        return True
    raise NotRecognized("the Bernoulli mean is clipped to bounds other than [0, 1]; recognized: "
                        "A @ W, or pt.clip(A @ W, 0, 1)")


def _strip_clip(var, free, memo=None):
    """``var`` with every ``clip(x, 0, 1)`` above the free variables replaced by ``x``.

    The clip is a no-op on a product of a simplex row and probabilities, but it would clip the
    probe values recognition evaluates the mean with. Nodes are rebuilt (``make_node``) only on
    the paths to a clip, so the random variables stay the model's own.
    """
    memo = {} if memo is None else memo
    if var in memo:
        return memo[var]
    node = var.owner
    if node is None or var in free or isinstance(node.op, RandomVariable):
        out = var
    elif _is_unit_clip(node, free):
        out = _strip_clip(node.inputs[0], free, memo)
    else:
        inputs = [_strip_clip(i, free, memo) for i in node.inputs]
        if all(a is b for a, b in zip(inputs, node.inputs, strict=True)):
            out = var
        else:
            out = node.op.make_node(*inputs).outputs[node.outputs.index(var)]
    memo[var] = out
    return out


def _per_factor(value, axis, what):
    """The (K,) vector of ``value`` (an array with the factor on ``axis``), else raise."""
    v = np.moveaxis(np.asarray(value, dtype=float), axis, -1)
    flat = v.reshape(-1, v.shape[-1])
    if not np.all(flat == flat[0]):
        raise NotRecognized(f"{what} varies along the other axis; the collapsed samplers need "
                            "one value per factor (shape (K,))")
    return flat[0].copy()


def _factor(role, rv, transposed, free, ours):
    op = type(rv.owner.op).__name__
    family = _PRIOR_OPS.get(op)
    if family is None:
        raise NotRecognized(f"the prior of {role} ({rv.name!r}) is {op.removesuffix('RV')}; "
                            f"{_WHAT}")
    shape = _rv_shape(rv)
    params = rv_params(rv)
    deps = {n for p in params for n in (d.name for d in depends_on(p, free))}
    if deps & {r.name for r in ours}:
        raise NotRecognized(f"the prior of {role} depends on the factors")
    out, hyper = {}, {}
    role_shape = shape[::-1] if transposed else shape
    if family == "dirichlet":
        simplex_ok = transposed == (role == "W")  # A: rows (D x K); W: columns (N x K)
        if not simplex_ok:
            which = "columns of A" if role == "A" else "rows of W"
            raise NotRecognized(
                f"the Dirichlet prior of {role} ({rv.name!r}) puts the {which} on the simplex "
                f"(its last axis); {_WHAT}")
        keys = ("a",)
    else:
        if transposed:
            raise NotRecognized(f"the Beta prior of {role} ({rv.name!r}) is on a variable "
                                f"stored transposed ({shape}); recognized: {role} as a "
                                f"{role_shape} variable")
        keys = ("alpha", "beta")
    for key, graph in zip(keys, params):
        d = depends_on(graph, free)
        if d:
            out[key] = Parameter(graph=graph, value=None, depends_on=tuple(x.name for x in d))
            hyper[key] = None
            continue
        value = np.broadcast_to(np.asarray(evaluate(graph), dtype=float), shape)
        out[key] = Parameter(graph=graph, value=np.ascontiguousarray(value), depends_on=())
        factor_axis = 1 if role == "A" or transposed else 0
        what = (f"the Dirichlet concentration of {role} ({rv.name!r})" if family == "dirichlet"
                else f"the Beta {key} of {role} ({rv.name!r})")
        hyper[key] = _per_factor(value, factor_axis, what)
    prior = FactorPrior(role=role, name=rv.name, family=family, shape=role_shape,
                        transposed=transposed, params=out)
    return prior, hyper


def recognize_bernoulli(model, obs):
    """:class:`BernoulliFactorization` of ``model``, whose likelihood is ``obs``; else raise.

    Called by :func:`bnmfzoo.models.recognize` for an observed ``pm.Bernoulli``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import recognize
    >>> V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> with pm.Model() as model:
    ...     A = pm.Dirichlet("A", a=np.full(2, 0.5), shape=(4, 2))
    ...     W = pm.Beta("W", alpha=2.0, beta=1.0, shape=(2, 3))
    ...     _ = pm.Bernoulli("X", p=A @ W, observed=V)
    >>> f = recognize(model)
    >>> f.family, f.gamma.tolist(), f.alpha.tolist()
    ('beta_dir', [0.5, 0.5], [2.0, 2.0])
    """
    free = list(model.free_RVs)
    (p,) = rv_params(obs)
    p = _strip_clip(p, free)
    factor_rvs = depends_on(p, free)
    if len(factor_rvs) != 2:
        raise NotRecognized(f"the Bernoulli mean of {obs.name!r} depends on "
                            f"{_names(factor_rvs)}; recognized: A @ W (two factors) and "
                            "nothing else (use p=, not logit_p=)")
    shapes = {rv: _rv_shape(rv) for rv in factor_rvs}
    kind, assignment, rows, cols, (D, N), K = _match_product(p, factor_rvs, shapes)
    data = model.rvs_to_values[obs]
    values = np.asarray(data.get_value() if hasattr(data, "get_value") else data.data,
                        dtype=float)
    if values.shape != rows.shape:
        raise NotRecognized(f"the observed data of {obs.name!r} have shape {values.shape}, the "
                            f"mean {rows.shape}")
    flat = rows.ravel() * N + cols.ravel()
    if np.unique(flat).size != flat.size:
        raise NotRecognized(f"the likelihood {obs.name!r} observes some entry of the product "
                            "twice")
    if not np.isin(values, (0.0, 1.0)).all():
        raise NotRecognized(f"the observed data of {obs.name!r} are not all 0 or 1")
    X = np.full((D, N), np.nan)
    X[rows.ravel(), cols.ravel()] = values.ravel()
    mask = ~np.isnan(X)

    ours = [rv for rv, _ in assignment.values()]
    for role, (rv, _) in assignment.items():
        users = [u for u in _users(model, rv) if u is not obs]
        if users:
            raise NotRecognized(f"{role} ({rv.name!r}) is also used by {_names(users)}; "
                                "recognized: the factors appear only in the likelihood's mean")
    for pot in model.potentials:
        hit = depends_on(pot, ours)
        if hit:
            raise NotRecognized(f"the potential {pot.name!r} depends on {_names(hit)}")
    factors, hyper = {}, {}
    for role, (rv, transposed) in assignment.items():
        factors[role], h = _factor(role, rv, transposed, free, ours)
        hyper[role] = h
    fams = (factors["A"].family, factors["W"].family)
    family = BERNOULLI_FAMILIES.get(fams)
    if family is None:
        raise NotRecognized(f"A ({factors['A'].name!r}) and W ({factors['W'].name!r}) both have "
                            f"Beta priors, so A @ W is not a probability; {_WHAT}")
    beta_role = {"beta_dir": "W", "dir_beta": "A"}.get(family)
    fields = {
        "gamma": hyper["A"].get("a"), "eta": hyper["W"].get("a"),
        "alpha": hyper[beta_role]["alpha"] if beta_role else None,
        "beta": hyper[beta_role]["beta"] if beta_role else None,
    }
    others = tuple(sorted(rv.name for rv in free if rv not in ours))
    coords = _coords(model, assignment, "nmf", D, N)
    Xda = xr.DataArray(X, dims=("row", "col"), coords=coords, name=obs.name)
    return BernoulliFactorization(family=family, likelihood=obs.name, X=Xda, mask=mask,
                                  rank=int(K), factors=factors, others=others, **fields)

