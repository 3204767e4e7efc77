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
  samplers do not condition on it (:meth:`BernoulliFactorization.spec` says so).

Our constructors (:func:`bnmfzoo.models.beta_dir`, ``dir_beta``, ``dir_dir``) attach nothing:
the collapsed samplers, CVB0, the estimator and the CLI read their models through this
recognition, as a user's own. The data come from the likelihood's observed values at the
entries its mean selects, in long format (:class:`~bnmfzoo._base.entries.LongMatrix`); ``X`` and
``mask`` are dense only when at least
:data:`~bnmfzoo.models._observed.DENSE_MIN_FRACTION` (1/8) of the entries are observed, else
:class:`~bnmfzoo._base.entries.DenseOnDemand` views, so a model of sparse data never forms a D x N
array here.
"""

from dataclasses import dataclass

import numpy as np
import xarray as xr
from pytensor.scalar.basic import Clip
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.random.op import RandomVariable

from bnmfzoo.models._graph import depends_on, evaluate, probe_env, rv_params
from bnmfzoo.models._observed import (
    NotRecognized,
    _coords,
    _entries,
    _match_product,
    _names,
    _views,
)
from bnmfzoo.models._recognize_parts import FactorPrior, ModelSpec, Parameter, _users

__all__ = ["BernoulliFactorization", "BinaryPriors", "recognize_bernoulli", "BERNOULLI_FAMILIES",
           "NONPARAMETRIC_MEAN_CONCENTRATION"]

#: (prior family of A, prior family of W) -> model family
BERNOULLI_FAMILIES = {("dirichlet", "beta"): "beta_dir", ("beta", "dirichlet"): "dir_beta",
                      ("dirichlet", "dirichlet"): "dir_dir"}
_WHAT = ("with a Bernoulli likelihood on A @ W the recognized priors are: rows of A on the "
         "simplex (A ~ Dirichlet, D x K) or Beta entries, and columns of W on the simplex "
         "(a Dirichlet variable of shape N x K, used transposed) or Beta entries (K x N), at "
         "least one factor a Dirichlet (Beta-Dir, Dir-Beta or Dir-Dir; Lumbreras et al. 2020)")
_PRIOR_OPS = {"DirichletRV": "dirichlet", "BetaRV": "beta"}
_NAMES = {"beta_dir": ("gamma", "alpha", "beta"), "dir_beta": ("eta", "alpha", "beta"),
          "dir_dir": ("gamma", "eta")}

#: a prior is read as the truncated nonparametric one when the mean of the concentration the
#: components compete under is below this (see :attr:`BinaryPriors.nonparametric`)
NONPARAMETRIC_MEAN_CONCENTRATION = 0.5


@dataclass(frozen=True, eq=False)
class BinaryPriors:
    """Hyperparameters of a Bernoulli-mean model (``ModelSpec.hyper`` of the binary families).

    Attributes
    ----------
    gamma : numpy.ndarray of shape (K,) or None
        Dirichlet concentration of the rows of ``A`` (Beta-Dir, Dir-Dir).
    eta : numpy.ndarray of shape (K,) or None
        Dirichlet concentration of the columns of ``W`` (Dir-Beta, Dir-Dir).
    alpha, beta : numpy.ndarray of shape (K,) or None
        Beta prior of the Beta factor (``W`` for Beta-Dir, ``A`` for Dir-Beta).

    Examples
    --------
    >>> import numpy as np
    >>> p = BinaryPriors(gamma=np.full(100, 0.01), alpha=np.ones(100), beta=np.ones(100))
    >>> p.nonparametric, p.names
    (True, ('gamma', 'alpha', 'beta'))
    """

    gamma: np.ndarray | None = None
    eta: np.ndarray | None = None
    alpha: np.ndarray | None = None
    beta: np.ndarray | None = None

    @property
    def names(self):
        """Names of the hyperparameters this family has (the fields that are not None)."""
        return tuple(n for n in ("gamma", "eta", "alpha", "beta") if getattr(self, n) is not None)

    @property
    def concentration(self):
        """The Dirichlet concentration the components compete under: ``gamma``, else ``eta``.

        The rows of ``A`` for Beta-Dir and Dir-Dir, the columns of ``W`` for Dir-Beta (whose
        collapsed chain runs Beta-Dir on the transposed data).
        """
        return self.gamma if self.gamma is not None else self.eta

    @property
    def nonparametric(self):
        """True when the model's concentration is that of a truncated nonparametric prior.

        Read from the model itself, not from how it was built: a concentration whose mean over
        the K components is below :data:`NONPARAMETRIC_MEAN_CONCENTRATION` (1/2), i.e. fewer
        than K / 2 prior pseudo-counts in all. The constructors' ``truncation=K`` prior has
        ``gamma_k = gamma / K`` (mean ``gamma / K``, below 1/2 for every ``gamma < K / 2``) and
        their parametric ``rank=K`` prior ``gamma_k = gamma`` (mean ``gamma``, 1 by default).
        The two spellings give the same model when ``gamma_truncation = K gamma_rank``; the
        model decides then. This flag only silences the collapsed samplers' warning about a
        spread-out parametric fit (``bnmfzoo.inference.binary.collapsed_gibbs.spread_warning``),
        which concerns priors of about one pseudo-count per component.
        """
        g = self.concentration
        return bool(g is not None and np.mean(g) < NONPARAMETRIC_MEAN_CONCENTRATION)


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
        D x N data (``row``, ``col``), NaN where not observed: dense when at least 1/8 of the
        entries are observed, else a :class:`~bnmfzoo._base.entries.DenseOnDemand` view.
    mask : numpy.ndarray of bool or DenseOnDemand
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
    entries : bnmfzoo._base.entries.LongMatrix
        The observed entries (row-major), always; read instead of ``X`` and ``mask`` when
        :attr:`on_demand`.
    W_view : str or None
        Name of a ``pm.Deterministic`` that is exactly the transpose of a transposed ``W``
        variable (our constructors' ``W = Wt.T``), else None.
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
    entries: object = None
    W_view: str | None = None

    @property
    def var_names(self):
        """Role -> variable name of the two factors."""
        return {role: f.name for role, f in self.factors.items()}

    @property
    def X_values(self):
        """Data with zeros where unobserved."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)

    @property
    def on_demand(self):
        """True when ``X`` and ``mask`` are views built densely only if read (few observed)."""
        return not isinstance(self.mask, np.ndarray)

    @property
    def priors(self):
        """The :class:`BinaryPriors` of this family (a field is None when not constant)."""
        names = _NAMES[self.family]
        return BinaryPriors(**{n: getattr(self, n) for n in names})

    def spec(self):
        """``(ModelSpec, None)`` for the collapsed samplers and CVB0, else ``(None, reason)``.

        The spec's ``hyper`` is the typed :class:`BinaryPriors` (copies); its ``var_names``
        are ``{"A", "W", "X"}`` plus ``"Wt"`` (the N x K Dirichlet variable of W's columns)
        when W is a Dirichlet (``"W"`` then names the Deterministic :attr:`W_view` if the
        model has one, else the N x K variable too); ``entries`` is the long-format data when
        few entries are observed (:attr:`on_demand`), else None (dense ``X`` and ``mask``).
        Hyperparameters that depend on a random variable are refused: the collapsed chains
        integrate A and W out given fixed hyperparameters, and conditioning on a hyperprior is
        not implemented.

        Examples
        --------
        >>> import numpy as np
        >>> from bnmfzoo.models import beta_dir, recognize
        >>> spec, _ = recognize(beta_dir(np.eye(3, 2), truncation=10)).spec()
        >>> spec.family, spec.hyper.names, spec.hyper.nonparametric
        ('beta_dir', ('gamma', 'alpha', 'beta'), True)
        """
        for role, prior in self.factors.items():
            deps = sorted({d for p in prior.params.values() for d in p.depends_on})
            if deps:
                return None, (f"the {prior.family.capitalize()} prior of {role} "
                              f"({prior.name!r}) has parameters depending on {deps}; the "
                              "collapsed samplers need constant hyperparameters (they do not "
                              "condition on a hyperprior; PyMC's default samplers can sample "
                              "this model)")
        hyper = BinaryPriors(**{n: getattr(self, n).copy() for n in _NAMES[self.family]})
        var_names = {"A": self.factors["A"].name, "W": self.W_view or self.factors["W"].name,
                     "X": self.likelihood}
        if self.factors["W"].family == "dirichlet":
            var_names["Wt"] = self.factors["W"].name
        spec = ModelSpec(family=self.family, X=self.X, mask=self.mask, rank=self.rank,
                         hyper=hyper, var_names=var_names,
                         entries=self.entries if self.on_demand else None)
        return spec, None


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
    coords = _coords(model, assignment, "nmf", D, N)
    # the observed entries in long format (NaN-free, row-major); no D x N array unless dense
    entries = _entries(model, obs, rows, cols, (D, N), coords)
    if not np.isin(entries.values, (0.0, 1.0)).all():
        raise NotRecognized(f"the observed data of {obs.name!r} are not all 0 or 1")
    Xda, mask = _views(entries, obs.name)

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
    return BernoulliFactorization(family=family, likelihood=obs.name, X=Xda, mask=mask,
                                  rank=int(K), factors=factors, others=others, entries=entries,
                                  W_view=_transpose_view(model, *assignment["W"]), **fields)


def _transpose_view(model, rv, transposed):
    """Name of a Deterministic that is exactly ``rv.T`` (when ``transposed``), else None."""
    if not transposed:
        return None
    for det in model.deterministics:
        node = det.owner
        # pm.Deterministic wraps its graph in an identity op (a ViewOp)
        while node is not None and len(node.inputs) == 1 and type(node.op).__name__ in (
                "ViewOp", "DeterministicWrapper"):
            node = node.inputs[0].owner
        if node is None or len(node.inputs) != 1 or node.inputs[0] is not rv:
            continue
        op = node.op
        if ((isinstance(op, DimShuffle) and tuple(op.new_order) == (1, 0))
                or (type(op).__name__ == "MatrixTranspose" and rv.ndim == 2)):
            return det.name
    return None

