"""Recognize the factorization in any ``pm.Model`` from its PyTensor graph.

:func:`recognize` reads a model - one of ours or one a user wrote in PyMC syntax - and returns a
frozen :class:`Factorization`: which observed variable is the Gaussian likelihood, which free
variables are ``A`` and ``W`` (or ``F``, ``S``, ``G`` of ``F S G^T``), the prior family of each
with its parameters (constants or expressions of other random variables), the noise (a Gamma
precision ``tau``, a fixed ``sigma``, or an ``sd`` depending on other random variables) and the
Gamma rates shared by exponential priors (ARD: per column, row, factor or scalar).

What is recognized
------------------
* Likelihood: an observed ``pm.Normal`` whose mean is ``A @ W`` (or ``F @ S @ G.T``; either
  factor may be stored transposed) on the observed entries, in any form that selects entries of
  the product: ``likelihoods.gaussian`` (flat index), ``(A @ W)[mask]``, ``(A @ W)[rows, cols]``
  or the whole product. The mean may depend on no other free variable.
* Factor priors: ``Exponential(lam)``, ``HalfNormal(sigma)``, ``TruncatedNormal(mu, sigma,
  lower=0)`` (no upper bound), ``Gamma(alpha, beta)`` with a constant ``alpha >= 1`` (its
  conditional is log-concave), with parameters that are constants (scalars or arrays
  broadcasting to the factor) or expressions of other random variables.
* ARD rates: a ``Gamma(alpha, beta)`` variable (constant ``alpha``, ``beta``) used only as
  exponential rates, each entry's rate being one element of it (``lam``, ``lam[None, :]``,
  ``lam[:, None]``, shared by ``A`` and ``W`` or not): its conditional is Gamma.
* Noise: ``tau ~ Gamma(alpha, beta)`` (constant, scalar) passed as ``tau=`` and used nowhere
  else (conjugate); one precision per row or per column (``tau ~ Gamma(alpha, beta,
  shape=N)`` used as ``tau[None, :]``, or ``shape=D`` as ``tau[:, None]``, on the entries the
  mean selects: kinds ``"col_precision"``/``"row_precision"``, conjugate too); a constant
  scalar ``sigma``; or any scalar sd that depends on other random variables (``sigma ~
  HalfNormal``...), which another step method must sample.
* Student-t noise: ``pm.StudentT(nu, mu=A @ W, sigma=...)`` with any of those noise forms as its
  scale and ``nu`` a positive scalar constant or an expression of other random variables
  (:attr:`Noise.nu`); our Gibbs steps sample it through its normal scale mixture.

The roles are found numerically, without matching the graph's exact form: the mean is evaluated
with row codes and column codes in place of the factors (products with 0 and 1 are exact), and
then checked against the product at a random point. The graph is evaluated with each op's
``perform`` (:func:`bnmfzoo.models._graph.evaluate`), so recognition compiles nothing.
"""

from dataclasses import dataclass, field, replace

import numpy as np
import xarray as xr

from bnmfzoo._base.entries import LongMatrix
from bnmfzoo.models._graph import depends_on, evaluate, reciprocal_of, rv_params, shape_of
from bnmfzoo.models._observed import (
    NotRecognized,
    _find_likelihood,
    _fingerprint,
    _names,
    observed_product,
)
from bnmfzoo.models._recognize_parts import (
    FactorPrior,
    Imputed,
    Parameter,
    _selection,
    _users,
)
from bnmfzoo.models._value_checks import check_recognized_values

__all__ = ["recognize", "try_recognize", "NotRecognized", "Factorization", "FactorPrior",
           "Parameter", "GammaRate", "Noise", "PRIOR_FAMILIES"]

#: PyMC random-variable op class name -> prior family recognized on a factor
PRIOR_FAMILIES = {"ExponentialRV": "exponential", "HalfNormalRV": "halfnormal",
                  "TruncatedNormalRV": "truncated_normal", "GammaRV": "gamma"}
_RECOGNIZED_PRIORS = ("Exponential(lam), HalfNormal(sigma), TruncatedNormal(mu, sigma, lower=0) "
                      "or Gamma(alpha, beta) with a constant alpha >= 1")
#: noise kinds whose precision variable our Gibbs steps draw (conjugate Gamma)
PRECISION_KINDS = ("precision", "row_precision", "col_precision")
_CACHE_ATTR = "_bnmfzoo_recognized"
#: likelihood ops read by another family's recognizer (:func:`_family_recognizer`)
OTHER_LIKELIHOODS = ("BernoulliRV", "UniformRV", "PoissonRV", "NegBinomialRV")


@dataclass(frozen=True, eq=False)
class GammaRate:
    """A Gamma random variable whose elements are exponential rates of factor entries (ARD).

    Attributes
    ----------
    name : str
    alpha, beta : numpy.ndarray
        Shape and rate of its prior, broadcast to its (flattened) size.
    users : tuple of (str, numpy.ndarray)
        ``(role, index)``: entry ``[i, k]`` of the role has rate ``value.ravel()[index[i, k]]``.
    """

    name: str
    alpha: np.ndarray
    beta: np.ndarray
    users: tuple
    shape: tuple = ()


@dataclass(frozen=True, eq=False)
class Noise:
    """Noise of the Gaussian likelihood.

    Attributes
    ----------
    kind : str
        ``"precision"`` (``tau ~ Gamma(alpha, beta)``, sampled by our steps),
        ``"row_precision"`` / ``"col_precision"`` (one Gamma precision per row / column, also
        ours), ``"fixed"`` (a constant ``sigma``) or ``"other"`` (an sd depending on
        ``depends_on``, sampled by other step methods).
    name : str or None
        The precision variable (``kind`` in :data:`PRECISION_KINDS`).
    alpha, beta : float, numpy.ndarray or None
        The precision's Gamma prior (arrays of length D / N for the per-row / per-column kinds).
    sigma : float or None
        The fixed sd.
    graph : pytensor variable
        The likelihood's sd expression.
    depends_on : tuple of str
    nu : Parameter or None
        Student-t degrees of freedom (a scalar; None for a Normal likelihood).
    """

    kind: str
    name: str | None = None
    alpha: object = None
    beta: object = None
    sigma: float | None = None
    graph: object = None
    depends_on: tuple = ()
    nu: Parameter | None = None

    @property
    def student(self):
        """True for a Student-t likelihood."""
        return self.nu is not None


@dataclass(frozen=True, eq=False)
class Factorization:
    """The factorization structure of a model (result of :func:`recognize`).

    Attributes
    ----------
    kind : str
        ``"nmf"`` (``X ~ A W``) or ``"nmtf"`` (``X ~ F S G^T``).
    likelihood : str
        Name of the observed variable.
    X : xarray.DataArray
        D x N data (``row``, ``col``), NaN where not observed.
    mask : numpy.ndarray of bool
    rank : int or tuple of int
    factors : dict
        Role -> :class:`FactorPrior`.
    noise : Noise
    rates : dict
        Name -> :class:`GammaRate`.
    others : tuple of str
        Free variables outside the recognized structure (sampled by other step methods).
    entries : bnmfzoo._base.entries.LongMatrix
        The observed entries in long format (row-major), read from the likelihood's data and
        the entries its mean selects; recognition never forms a D x N array from them. ``X``
        and ``mask`` are dense when at least ``DENSE_MIN_FRACTION`` (1/8) of the entries are
        observed, else :class:`~bnmfzoo._base.entries.DenseOnDemand` views (:attr:`on_demand`).
    imputed : Imputed or None
        PyMC's automatic imputation of NaN entries in the likelihood's data (a free
        ``X_unobserved``), drawn exactly by :class:`~bnmfzoo.inference.GibbsNMF`.
    """

    kind: str
    likelihood: str
    X: xr.DataArray
    mask: np.ndarray
    rank: object
    factors: dict
    noise: Noise
    rates: dict = field(default_factory=dict)
    others: tuple = ()
    entries: LongMatrix | None = None
    imputed: Imputed | None = None

    @property
    def on_demand(self):
        """True when ``X`` and ``mask`` are views built densely only if read (few observed)."""
        return not isinstance(self.mask, np.ndarray)

    @property
    def var_names(self):
        """Role -> variable name of everything our Gibbs steps update (factors, tau, rates)."""
        names = {role: f.name for role, f in self.factors.items()}
        if self.noise.kind in PRECISION_KINDS:
            names["tau"] = self.noise.name
        for name in self.rates:
            names[f"rate:{name}"] = name
        if self.imputed is not None:
            names["imputed"] = self.imputed.name
        return names

    @property
    def X_values(self):
        """Data with zeros where unobserved (a dense D x N array)."""
        return self.entries.to_dense(fill=0.0)


# ----------------------------------------------------------------------------- recognition


def try_recognize(model):
    """``(Factorization, None)`` or ``(None, reason)``; memoized on the model."""
    key = _fingerprint(model)
    cached = getattr(model, _CACHE_ATTR, None)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        result = (_recognize(model), None)
    except NotRecognized as err:
        result = (None, str(err))
    except Exception as err:  # noqa: BLE001 - a graph this reader does not know: not ours
        result = (None, f"its graph could not be read ({type(err).__name__}: {err})")
    if result[0] is not None:  # recognized, but data or constants out of range: a clear
        check_recognized_values(result[0])  # ValueError now, not overflow in a kernel later
    try:
        setattr(model, _CACHE_ATTR, (key, result))
    except AttributeError:  # pragma: no cover - a model without __dict__
        pass
    return result


def recognize(model=None):
    """Recognize the factorization of ``model`` (default: the model in context).

    Parameters
    ----------
    model : pymc.Model, optional

    Returns
    -------
    Factorization

    Raises
    ------
    NotRecognized
        (a ``TypeError``) naming the likelihood, prior or dependency that made the difference
        and what would be recognized.
    ValueError
        When the model is recognized but its data or constant hyperparameters are outside the
        range our samplers compute with (:mod:`bnmfzoo.models._value_checks`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with pm.Model() as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(6, 2))
    ...     lam = pm.Gamma("lam", 2.0, 2.0, shape=2)
    ...     W = pm.Exponential("W", lam[:, None], shape=(2, 5))
    ...     tau = pm.Gamma("tau", 1.0, 1.0)
    ...     _ = likelihoods.gaussian("X", A, W, observed=X, tau=tau)
    >>> f = recognize(model)
    >>> f.factors["A"].family, f.factors["W"].rate, f.noise.kind
    ('halfnormal', 'lam', 'precision')
    """
    import pymc as pm

    model = pm.modelcontext(model)
    result, reason = try_recognize(model)
    if result is None:
        raise NotRecognized(reason)
    return result


def _param(graph, shape, free, transposed, memo):
    deps = depends_on(graph, free)
    if deps:
        return Parameter(graph=graph, value=None, depends_on=tuple(d.name for d in deps))
    value = np.asarray(evaluate(graph), dtype=float)
    rv_shape = shape[::-1] if transposed else shape
    try:
        value = np.broadcast_to(value, rv_shape)
    except ValueError as err:
        raise NotRecognized(f"a prior parameter of shape {value.shape} does not broadcast to "
                            f"the factor's shape {rv_shape}") from err
    value = value.T if transposed else value
    return Parameter(graph=graph, value=np.ascontiguousarray(value, dtype=float), depends_on=())


def _factor_prior(role, rv, transposed, shape, free, memo):
    op = type(rv.owner.op).__name__
    family = PRIOR_FAMILIES.get(op)
    if family is None:
        raise NotRecognized(
            f"the prior of {role} ({rv.name!r}) is {op.removesuffix('RV')}; recognized priors "
            f"on factors: {_RECOGNIZED_PRIORS}")
    params = rv_params(rv)
    if family == "exponential":
        rate = reciprocal_of(params[0])
        if rate is None:
            rate = 1.0 / params[0]
        out = {"lam": _param(rate, shape, free, transposed, memo)}
    elif family == "halfnormal":
        loc, sigma = params
        if depends_on(loc, free) or np.any(np.asarray(evaluate(loc)) != 0.0):
            raise NotRecognized(f"the HalfNormal prior of {role} ({rv.name!r}) has a non-zero "
                                "loc; recognized: HalfNormal(sigma) with loc 0")
        out = {"sigma": _param(sigma, shape, free, transposed, memo)}
    elif family == "gamma":
        alpha, beta = _gamma_params(rv)
        if depends_on(alpha, free):
            raise NotRecognized(f"the shape alpha of the Gamma prior of {role} ({rv.name!r}) "
                                "depends on random variables; recognized: a constant alpha >= 1")
        a = _param(alpha, shape, free, transposed, memo)
        if not np.all(a.value >= 1.0):
            raise NotRecognized(
                f"the Gamma prior of {role} ({rv.name!r}) has shape alpha < 1 (min "
                f"{float(a.value.min()):.3g}): its conditional is not log-concave; recognized: "
                "alpha >= 1 (alpha = 1 is an Exponential prior)")
        out = {"alpha": a, "beta": _param(beta, shape, free, transposed, memo)}
    else:
        mu, sigma, lower, upper = params
        bad = depends_on(lower, free) or depends_on(upper, free)
        if bad or np.any(np.asarray(evaluate(lower)) != 0.0) or np.any(
                np.isfinite(np.asarray(evaluate(upper)))):
            raise NotRecognized(f"the TruncatedNormal prior of {role} ({rv.name!r}) is not "
                                "truncated to [0, inf); recognized: lower=0 and no upper bound")
        out = {"mu": _param(mu, shape, free, transposed, memo),
               "sigma": _param(sigma, shape, free, transposed, memo)}
    return FactorPrior(role=role, name=rv.name, family=family, shape=shape,
                       transposed=transposed, params=out)


def _gamma_params(rv):
    alpha, scale = rv_params(rv)
    beta = reciprocal_of(scale)
    return alpha, (1.0 / scale if beta is None else beta)


def _is_constant(graph, free):
    return not depends_on(graph, free)


def _family_recognizer(op_name):
    """The recognizer of the family whose likelihood op is ``op_name``.

    Imported when first needed: the count recognizer loads PyMC, whose import hook registers the
    step methods, which read this module (it must be fully initialized by then).
    """
    if op_name == "BernoulliRV":
        from bnmfzoo.models._recognize_binary import recognize_bernoulli

        return recognize_bernoulli
    if op_name == "UniformRV":
        from bnmfzoo.models._recognize_terms import recognize_uniform

        return recognize_uniform
    from bnmfzoo.models._recognize_counts import recognize_counts

    return recognize_counts


def _recognize(model):
    free = list(model.free_RVs)
    if not any(depends_on(o, free) for o in model.observed_RVs):
        # no observed likelihood: our SILF term is a potential (bnmfzoo.likelihoods.silf)
        from bnmfzoo.models._recognize_terms import recognize_silf, silf_potential

        pot = silf_potential(model)
        if pot is not None:
            return recognize_silf(model, pot)
    obs = _find_likelihood(model, extra_ops=tuple(OTHER_LIKELIHOODS))
    op_name = type(obs.owner.op).__name__
    if op_name in OTHER_LIKELIHOODS:  # e.g. Bernoulli: bnmfzoo.models._recognize_binary
        return _family_recognizer(op_name)(model, obs)
    memo = {}
    part = observed_product(model, memo=memo)
    obs, sd, kind, assignment, rank = part.obs, part.sd, part.kind, part.assignment, part.rank
    D, N = part.entries.shape

    ours = {rv for rv, _ in assignment.values()}
    imputed = _imputation(part, free, memo)
    skip = {obs} | ({imputed.rv} if imputed is not None else set())
    # factors: used only by the likelihood's mean (and PyMC's imputation of missing entries)
    for role, (rv, _) in assignment.items():
        users = [u for u in _users(model, rv) if u not in skip]
        if users:
            raise NotRecognized(f"{role} ({rv.name!r}) is also used by {_names(users)}; "
                                "recognized: the factors appear only in the likelihood's mean")
    role_shapes = {"nmf": {"A": (D, rank), "W": (rank, N)}}
    if kind == "nmtf":
        K, L = rank
        role_shapes["nmtf"] = {"F": (D, K), "S": (K, L), "G": (N, L)}
    factors = {}
    for role, (rv, transposed) in assignment.items():
        prior = _factor_prior(role, rv, transposed, role_shapes[kind][role], free, memo)
        for p in prior.params.values():
            bad = set(p.depends_on) & {r.name for r in ours}
            if bad:
                raise NotRecognized(f"the prior of {role} depends on the factors {sorted(bad)}")
        factors[role] = prior

    # ARD rates: Gamma variables used only as element-wise exponential rates of the factors
    rates = {}
    by_name = {rv.name: rv for rv in free}
    for prior in factors.values():
        if prior.family != "exponential" or prior.params["lam"].constant:
            continue
        deps = prior.params["lam"].depends_on
        if len(deps) != 1 or deps[0] in rates:
            continue
        g = by_name[deps[0]]
        if type(g.owner.op).__name__ != "GammaRV":
            continue
        alpha, beta = _gamma_params(g)
        if not (_is_constant(alpha, free) and _is_constant(beta, free)):
            continue
        users = _users(model, g)
        idx = {}
        for u in users:
            p = next((q for q in factors.values() if by_name.get(q.name) is u), None)
            if p is None or p.family != "exponential":
                idx = None
                break
            sel = _selection(p.params["lam"].graph, g, p.shape, p.transposed, memo)
            if sel is None:
                idx = None
                break
            idx[p.role] = sel
        if not idx:
            continue
        size = int(np.prod(shape_of(g, memo), dtype=np.int64))
        a = np.broadcast_to(np.asarray(evaluate(alpha), float), shape_of(g, memo)).ravel()
        b = np.broadcast_to(np.asarray(evaluate(beta), float), shape_of(g, memo)).ravel()
        rates[g.name] = GammaRate(name=g.name, alpha=a.copy(), beta=b.copy(),
                                  users=tuple(idx.items()), shape=shape_of(g, memo))
        assert a.size == size
    factors = {role: (FactorPrior(**{**p.__dict__, "rate": next(
        (n for n, r in rates.items() if role in dict(r.users)), None)}))
        for role, p in factors.items()}

    noise = _noise(model, obs, sd, free, ours, skip, part, memo)
    structure = ours | {by_name[n] for n in rates} | (skip - {obs})
    if noise.kind in PRECISION_KINDS:
        structure.add(by_name[noise.name])
    others = tuple(sorted(rv.name for rv in free if rv not in structure))
    for pot in model.potentials:
        hit = depends_on(pot, list(structure))
        if hit:
            raise NotRecognized(f"the potential {pot.name!r} depends on {_names(hit)}; "
                                "recognized: no potential on the factorization's variables")

    return Factorization(kind=kind, likelihood=obs.name, X=part.X, mask=part.mask, rank=rank,
                         factors=factors, noise=noise, rates=rates, others=others,
                         entries=part.entries, imputed=imputed)


def _imputation(part, free, memo):
    """PyMC's automatic imputation of the likelihood's NaN entries, as an :class:`Imputed`.

    ``pm.Normal("X", mu=A @ W, ..., observed=X_with_nan)`` makes the observed entries
    ``X_observed`` and a free ``X_unobserved ~ Normal((A @ W)[missing], sd)`` with the same
    sd: given the factors and the noise its conditional is that Normal, which our Gibbs steps
    draw exactly. Recognized when a free Normal's mean selects entries of the same product
    (probed as the likelihood's) and its sd equals the likelihood's.
    """
    from bnmfzoo.models._graph import probe_env
    from bnmfzoo.models._observed import _probe

    roles = list(part.assignment)
    ours = {rv for rv, _ in part.assignment.values()}
    D, N = part.entries.shape
    for u in free:
        if u in ours or type(u.owner.op).__name__ != "NormalRV":
            continue
        mu_u, sd_u = rv_params(u)
        if set(depends_on(mu_u, free)) != ours or set(depends_on(sd_u, free)) & ours:
            continue

        def run(values, mu_u=mu_u):
            env = {part.assignment[r][0]: (v.T if part.assignment[r][1] else v)
                   for r, v in zip(roles, values)}
            return np.asarray(evaluate(mu_u, env), dtype=float)

        try:
            found = _probe(run, D, N, part.rank)
            same_sd = all(np.allclose(evaluate(sd_u, probe_env([sd_u], memo, fill)),
                                      evaluate(part.sd, probe_env([part.sd], memo, fill)),
                                      rtol=1e-12) for fill in (0.7, 2.3))
        except Exception:  # noqa: BLE001 - not a selection of the product
            continue
        if found is not None and same_sd:
            rows, cols = (np.ascontiguousarray(a.ravel()) for a in found)
            return Imputed(name=u.name, rv=u, rows=rows, cols=cols)
    return None


def _noise(model, obs, sd, free, ours, skip, part=None, memo=None):
    noise = _noise_scale(model, obs, sd, free, ours, skip, part, memo)
    nu = getattr(part, "nu", None)
    return noise if nu is None else replace(noise, nu=_student_nu(obs, nu, free, ours))


def _student_nu(obs, nu, free, ours):
    """The degrees of freedom of a Student-t likelihood: one positive scalar."""
    deps = depends_on(nu, free)
    if set(deps) & set(ours):
        raise NotRecognized(f"the degrees of freedom nu of {obs.name!r} depend on the factors")
    if deps:
        if not all(nu.type.broadcastable):
            raise NotRecognized(f"the degrees of freedom nu of {obs.name!r} vary by entry; "
                                "recognized: one scalar nu")
        return Parameter(graph=nu, value=None, depends_on=tuple(d.name for d in deps))
    values = np.unique(np.asarray(evaluate(nu), dtype=float))
    if values.size != 1 or not 0.0 < values[0] < np.inf:
        raise NotRecognized(f"the degrees of freedom nu of {obs.name!r} are not one positive "
                            f"constant (got {values[:3].tolist()}); recognized: one scalar nu")
    return Parameter(graph=nu, value=np.asarray(float(values[0])), depends_on=())


def _noise_scale(model, obs, sd, free, ours, skip, part=None, memo=None):
    deps = depends_on(sd, free)
    if any(d in ours for d in deps):
        raise NotRecognized("the noise of the likelihood depends on the factors")
    if not all(sd.type.broadcastable):
        grouped = None if part is None else _grouped_precision(model, sd, deps, free, skip,
                                                               part, memo)
        if grouped is not None:
            return grouped
        raise NotRecognized(f"the noise sd of {obs.name!r} varies by entry; recognized: one "
                            "scalar sd or precision, or one Gamma precision per row or per "
                            "column (tau[:, None] or tau[None, :] on the product's entries, "
                            "tau ~ Gamma with constant parameters, used nowhere else)")
    if not deps:
        sigma = float(np.ravel(evaluate(sd))[0])
        return Noise(kind="fixed", sigma=sigma, graph=sd)
    if len(deps) == 1 and type(deps[0].owner.op).__name__ == "GammaRV" and deps[0].ndim == 0:
        t = deps[0]
        alpha, beta = _gamma_params(t)
        only_here = [u for u in _users(model, t) if u not in skip] == []
        is_precision = all(
            np.isclose(float(np.ravel(evaluate(sd, {t: np.asarray(v)}))[0]), v ** -0.5,
                       rtol=1e-12) for v in (0.7, 2.3))
        if (only_here and is_precision and _is_constant(alpha, free)
                and _is_constant(beta, free)):
            return Noise(kind="precision", name=t.name, alpha=float(evaluate(alpha)),
                         beta=float(evaluate(beta)), graph=sd, depends_on=(t.name,))
    return Noise(kind="other", graph=sd, depends_on=tuple(d.name for d in deps))


def _grouped_precision(model, sd, deps, free, skip, part, memo):
    """A :class:`Noise` of kind ``"row_precision"``/``"col_precision"``, or None.

    Recognized when the sd is ``tau[g]^-1/2`` for a 1-D ``tau ~ Gamma`` (constant parameters,
    used only here), ``g`` being the row (or column) of every entry the mean selects: found by
    evaluating the sd with ``tau = 1 / codes^2`` (sd = the codes) and checking the precision
    form at a random point.
    """
    from bnmfzoo.models._observed import _probe

    if len(deps) != 1 or type(deps[0].owner.op).__name__ != "GammaRV" or deps[0].ndim != 1:
        return None
    t = deps[0]
    alpha, beta = _gamma_params(t)
    if not (_is_constant(alpha, free) and _is_constant(beta, free)):
        return None
    if [u for u in _users(model, t) if u not in skip]:
        return None
    (n,) = shape_of(t, memo)
    D, N = part.entries.shape
    roles = list(part.assignment)

    def run(values):
        env = {part.assignment[r][0]: (v.T if part.assignment[r][1] else v)
               for r, v in zip(roles, values)}
        return np.asarray(evaluate(part.mu, env), dtype=float)

    try:
        found = _probe(run, D, N, part.rank)
        if found is None:
            return None
        rows, cols = found
        codes = np.arange(1.0, n + 1)
        got = np.broadcast_to(np.asarray(evaluate(sd, {t: codes ** -2.0}), float), rows.shape)
        idx = np.rint(got).astype(np.int64) - 1
        if not np.allclose(got, idx + 1.0, rtol=1e-9) or idx.min() < 0 or idx.max() >= n:
            return None
        test = np.random.default_rng(2).uniform(0.5, 2.0, size=n)
        got = np.broadcast_to(np.asarray(evaluate(sd, {t: test}), float), rows.shape)
        if not np.allclose(got, test[idx] ** -0.5, rtol=1e-12):
            return None
    except Exception:  # noqa: BLE001 - not a per-row/column precision
        return None
    kind = ("col_precision" if n == N and np.array_equal(idx, cols) else "row_precision"
            if n == D and np.array_equal(idx, rows) else None)
    a, b = (np.broadcast_to(np.asarray(evaluate(v), float), (n,)).copy() for v in (alpha, beta))
    return kind and Noise(kind=kind, name=t.name, alpha=a, beta=b, graph=sd,
                          depends_on=(t.name,))
