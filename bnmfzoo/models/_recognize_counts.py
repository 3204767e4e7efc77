"""Recognize Poisson and Gamma-Poisson factorizations of counts in any ``pm.Model``.

:func:`bnmfzoo.models.recognize` hands a model whose likelihood is an observed ``pm.Poisson``
or ``pm.NegativeBinomial`` here; the result is a frozen :class:`CountFactorization` that the
latent-count samplers (:mod:`bnmfzoo.inference.counts`) read.

What is recognized
------------------
* Likelihood: ``pm.Poisson(mu=o * (A @ W)[sel])`` where ``sel`` selects entries of the product
  (the whole product, ``[mask]``, ``[rows, cols]``, the flat index of
  :func:`bnmfzoo.likelihoods.poisson`) and ``o`` is any constant positive offset per entry
  (e.g. ``s[:, None] * (A @ W)`` or ``(A @ W) * c``). Or ``pm.NegativeBinomial(n=alpha * mu,
  p=alpha / (1 + alpha))`` with ``mu`` as above and ``alpha`` a positive constant or a scalar
  ``Gamma`` variable (:func:`bnmfzoo.likelihoods.negative_binomial`).
* The zero entries of sparse data written by our terms (a potential ``X_zeros``, checked
  numerically against the data it claims to stand for).
* Priors of the factors: ``Gamma(alpha, beta)`` or ``Exponential(lam)`` with a constant shape
  and a rate that is a constant or one element of a ``Gamma`` variable per entry (ARD per factor,
  per row / per column rates of hierarchical Poisson factorization, a shared scalar), whose own
  parameters are constant; that rate variable may be used only as such rates.

Anything else raises :class:`~bnmfzoo.models._observed.NotRecognized` saying what differed.
"""

from dataclasses import dataclass, field

import numpy as np

from bnmfzoo._terms._pairs import _product
from bnmfzoo._terms.poisson import ZERO_MASS_ATTR
from bnmfzoo.models._graph import (
    depends_on,
    evaluate,
    observed_data,
    reciprocal_of,
    rv_params,
    shape_of,
)
from bnmfzoo.models._observed import NotRecognized, _coords, _names, _probe
from bnmfzoo.models._recognize_parts import Imputed, _selection, _users

__all__ = ["CountFactorization", "CountPrior", "RateVariable", "recognize_counts",
           "recognize_poisson", "recognize_negative_binomial"]

_WHAT = ("recognized count models: pm.Poisson(mu=o * (A @ W)), pm.NegativeBinomial(n=alpha * "
         "mu, p=alpha / (1 + alpha)) or pm.NegativeBinomial(mu=mu, alpha=alpha) with Gamma or "
         "Exponential priors on A and W (constant shape; rate constant or elements of a Gamma "
         "variable)")


@dataclass(frozen=True, eq=False)
class CountPrior:
    """Gamma prior of one factor, in the role's orientation.

    Attributes
    ----------
    role, name : str
    transposed : bool
        The variable holds the role's transpose.
    shape : numpy.ndarray
        Gamma shape per entry (role shape).
    rate : numpy.ndarray or None
        Constant rate per entry, else None.
    rate_var : str or None
        The Gamma variable whose element ``rate_index[i, j]`` (flattened) is entry ``(i, j)``'s
        rate.
    rate_index : numpy.ndarray or None
    """

    role: str
    name: str
    transposed: bool
    shape: np.ndarray
    rate: np.ndarray | None = None
    rate_var: str | None = None
    rate_index: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class RateVariable:
    """A Gamma variable whose elements are factor rates: prior and flattened shape."""

    name: str
    alpha: np.ndarray
    beta: np.ndarray
    shape: tuple
    transposed_users: tuple = ()


@dataclass(frozen=True, eq=False)
class CountFactorization:
    """A recognized Poisson or negative-binomial factorization of counts.

    Attributes
    ----------
    family : str
        ``"poisson"``, ``"negative_binomial"`` (``n = alpha * mu``, ``p = alpha / (1 + alpha)``;
        variance ``mu (1 + alpha) / alpha``) or ``"nb2"`` (PyMC's ``NegativeBinomial(mu=mu,
        alpha=alpha)``; variance ``mu + mu^2 / alpha``).
    likelihood : str
    shape : tuple of int
        (D, N).
    rank : int
    nz_rows, nz_cols, nz_counts : numpy.ndarray
        The observed nonzero counts.
    exposure : dict
        ``{"kind": "separable", "row_offset", "col_offset", "rows", "cols"}`` (every cell
        observed but the listed missing ones, offsets ``s_d c_n``) or ``{"kind": "entries",
        "rows", "cols", "offsets"}`` (the observed cells and their offsets).
    factors : dict
        ``"A"``, ``"W"`` -> :class:`CountPrior`.
    rates : dict
        Name -> :class:`RateVariable`.
    alpha : float or None
        Constant NB dispersion.
    alpha_var : tuple or None
        ``(name, shape, rate)`` of a Gamma-distributed NB dispersion.
    others : tuple of str
    row_labels, col_labels : numpy.ndarray
    kind : str
        ``"counts"``.
    imputed : bnmfzoo.models._recognize.Imputed or None
        PyMC's automatic imputation of NaN counts (a free ``X_unobserved`` of the likelihood's
        family; its ``offsets`` are those of its cells). The count samplers draw it exactly.
    """

    family: str
    likelihood: str
    shape: tuple
    rank: int
    nz_rows: np.ndarray
    nz_cols: np.ndarray
    nz_counts: np.ndarray
    exposure: dict
    factors: dict
    rates: dict = field(default_factory=dict)
    alpha: float | None = None
    alpha_var: tuple | None = None
    others: tuple = ()
    row_labels: np.ndarray | None = None
    col_labels: np.ndarray | None = None
    kind: str = "counts"
    imputed: Imputed | None = None

    @property
    def var_names(self):
        """Role -> variable name of everything the count samplers update."""
        names = {role: f.name for role, f in self.factors.items()}
        for name in self.rates:
            names[f"rate:{name}"] = name
        if self.alpha_var is not None:
            names["alpha"] = self.alpha_var[0]
        if self.imputed is not None:
            names["imputed"] = self.imputed.name
        return names


def _gamma_params(rv):
    alpha, scale = rv_params(rv)
    beta = reciprocal_of(scale)
    return alpha, (1.0 / scale if beta is None else beta)


def _scalar_gamma(g, free, what):
    if type(g.owner.op).__name__ != "GammaRV" or g.ndim != 0:
        raise NotRecognized(f"{what} depends on {g.name!r}, which is not a scalar Gamma variable")
    a, b = _gamma_params(g)
    if depends_on(a, free) or depends_on(b, free):
        raise NotRecognized(f"the Gamma prior of {g.name!r} has non-constant parameters")
    return float(np.ravel(evaluate(a))[0]), float(np.ravel(evaluate(b))[0])


def _match(run, factor_rvs, memo):
    """Roles, entries and per-entry offsets of a mean ``o * (A @ W)[sel]`` evaluated by ``run``."""
    import itertools

    rng = np.random.default_rng(0)
    shapes = {rv: shape_of(rv, memo) for rv in factor_rvs}
    for perm in itertools.permutations(factor_rvs):
        for flips in itertools.product((False, True), repeat=2):
            dims = [shapes[rv][::-1] if f else shapes[rv] for rv, f in zip(perm, flips)]
            if any(len(d) != 2 for d in dims) or dims[0][1] != dims[1][0]:
                continue
            (D, K), (_, N) = dims

            def ev(values, perm=perm, flips=flips):
                env = {rv: (v.T if f else v) for rv, f, v in zip(perm, flips, values)}
                return np.asarray(run(env), dtype=float)

            try:
                o = ev([np.ones((D, K)), np.ones((K, N))]) / K
                if not (np.all(np.isfinite(o)) and np.all(o > 0)):
                    continue
                found = _probe(lambda vals, o=o, ev=ev: _snap(ev(vals) / o), D, N, K)
                if found is None:
                    continue
                r, c = found
                test = [rng.uniform(0.5, 1.5, size=(D, K)), rng.uniform(0.5, 1.5, size=(K, N))]
                got = ev(test).ravel()
            except Exception:  # noqa: BLE001 - a wrong orientation fails in the graph's ops
                continue
            if got.shape != r.ravel().shape:
                continue
            expected = np.empty(r.size)
            _product(np.ascontiguousarray(test[0]), np.ascontiguousarray(test[1].T),
                     r.ravel(), c.ravel(), expected)
            expected *= o.ravel()
            if not np.all(np.abs(got - expected) <= 1e-12 + 1e-10 * np.abs(expected)):
                continue
            assignment = {"A": (perm[0], flips[0]), "W": (perm[1], flips[1])}
            return assignment, r.ravel(), c.ravel(), o.ravel(), (D, N), K
    raise NotRecognized(f"the mean of the likelihood depends on {_names(factor_rvs)} but is not "
                        "a constant offset times A @ W on a selection of its entries; " + _WHAT)


def _snap(x):
    """Round values within 1e-9 (relative) of an integer to it (offsets divided out)."""
    r = np.rint(x)
    return np.where(np.abs(x - r) <= 1e-9 * np.maximum(np.abs(r), 1.0), r, x)


def _prior(role, rv, transposed, role_shape, free, memo, rates_seen):
    op = type(rv.owner.op).__name__
    params = rv_params(rv)
    if op == "GammaRV":
        shape_g, rate_g = _gamma_params(rv)
    elif op == "ExponentialRV":
        shape_g = None
        rate_g = reciprocal_of(params[0])
        rate_g = 1.0 / params[0] if rate_g is None else rate_g
    else:
        raise NotRecognized(f"the prior of {role} ({rv.name!r}) is {op.removesuffix('RV')}; "
                            + _WHAT)
    rv_shape = role_shape[::-1] if transposed else role_shape
    if shape_g is None:
        a = np.ones(role_shape)
    else:
        if depends_on(shape_g, free):
            raise NotRecognized(f"the Gamma shape of {role} ({rv.name!r}) depends on a random "
                                "variable; recognized: a constant shape")
        a = np.broadcast_to(np.asarray(evaluate(shape_g), float), rv_shape)
        a = np.ascontiguousarray(a.T if transposed else a)
    deps = depends_on(rate_g, free)
    if not deps:
        b = np.broadcast_to(np.asarray(evaluate(rate_g), float), rv_shape)
        return CountPrior(role, rv.name, transposed, a, np.ascontiguousarray(
            b.T if transposed else b)), None
    if len(deps) != 1 or type(deps[0].owner.op).__name__ != "GammaRV":
        raise NotRecognized(f"the rate of {role} ({rv.name!r}) depends on {_names(deps)}; "
                            "recognized: a constant or elements of one Gamma variable")
    g = deps[0]
    idx = _selection(rate_g, g, role_shape, transposed, memo)
    if idx is None:
        raise NotRecognized(f"the rate of {role} ({rv.name!r}) is not one element of "
                            f"{g.name!r} per entry (e.g. lam[None, :]); recognized: a selection")
    ga, gb = _gamma_params(g)
    if depends_on(ga, free) or depends_on(gb, free):
        raise NotRecognized(f"the Gamma prior of the rate {g.name!r} has non-constant "
                            "parameters")
    gshape = shape_of(g, memo)
    if g.name not in rates_seen:
        rates_seen[g.name] = RateVariable(
            g.name, np.broadcast_to(np.asarray(evaluate(ga), float), gshape).ravel().copy(),
            np.broadcast_to(np.asarray(evaluate(gb), float), gshape).ravel().copy(), gshape)
    return CountPrior(role, rv.name, transposed, a, None, g.name, idx), g


def _separable(o, rows, cols, D, N):
    """``(s, c)`` with ``o_e = s[r_e] c[c_e]`` when every cell is observed (or o = 1), else None."""
    if np.all(o == 1.0):
        return np.ones(D), np.ones(N)
    if o.size != D * N:
        return None
    full = np.empty((D, N))
    full[rows, cols] = o
    s, c = full[:, 0].copy(), full[0, :] / full[0, 0]
    if np.allclose(full, s[:, None] * c[None, :], rtol=1e-12, atol=0.0):
        return s, c
    return None


def _zero_potential(model, obs_name, free, assignment, alpha_env):
    """The registered zero-mass potential of ``obs_name`` (checked numerically), or None."""
    registry = getattr(model, ZERO_MASS_ATTR, {})
    for pot in model.potentials:
        info = registry.get(pot.name)
        if info is None or info["likelihood"] != obs_name:
            continue
        return pot, info
    return None


@dataclass(frozen=True, eq=False)
class _Mean:
    """How a count likelihood's mean reads: ``run(env)`` is ``o * (A @ W)[sel]``."""

    run: object
    graph: object
    alpha: float | None
    alpha_var: tuple | None
    alpha_rv: object
    family: str = "poisson"


def _mean_of(rv, family, free):
    """The :class:`_Mean` of the Poisson or NB variable ``rv`` (observed or PyMC's imputed).

    NB variables come in two forms: ``n = alpha * mu, p = alpha / (1 + alpha)`` (family
    ``"negative_binomial"``, variance ``mu (1 + alpha) / alpha``) and PyMC's
    ``NegativeBinomial(mu=mu, alpha=alpha)``, stored as ``n = alpha, p = alpha / (mu + alpha)``
    (family ``"nb2"``, variance ``mu + mu^2 / alpha``).
    """
    if family == "poisson":
        (mu,) = rv_params(rv)
        return _Mean(lambda env: evaluate(mu, env), mu, None, None, None)
    n_g, p_g = rv_params(rv)
    ndeps, pdeps = depends_on(n_g, free), depends_on(p_g, free)
    if len(ndeps) <= 1 and set(pdeps) - set(ndeps):
        return _nb2_mean_of(n_g, p_g, ndeps, free)
    alpha = alpha_var = alpha_rv = None
    if not pdeps:
        p = np.asarray(evaluate(p_g), float)
        if p.size != 1 and not np.all(p == p.ravel()[0]):
            raise NotRecognized("the NB probability varies by entry; recognized: "
                                "p = alpha / (1 + alpha), one alpha")
        p = float(p.ravel()[0])
        alpha = p / (1.0 - p)
        env0 = {}
    else:
        if len(pdeps) != 1:
            raise NotRecognized(f"the NB probability depends on {_names(pdeps)}; recognized: "
                                "pm.NegativeBinomial(n=alpha * mu, p=alpha / (1 + alpha)) or "
                                "pm.NegativeBinomial(mu=mu, alpha=alpha)")
        alpha_rv = pdeps[0]
        shape_a, rate_a = _scalar_gamma(alpha_rv, free, "the NB probability")
        for v in (0.7, 2.3):
            got = float(np.ravel(evaluate(p_g, {alpha_rv: np.asarray(v)}))[0])
            if not np.isclose(got, v / (1 + v), rtol=1e-12):
                raise NotRecognized("the NB probability is not alpha / (1 + alpha)")
        alpha_var = (alpha_rv.name, shape_a, rate_a)
        env0 = {alpha_rv: np.asarray(1.0)}

    def run(env):
        out = evaluate(n_g, {**env0, **env})
        return out if alpha is None else out / alpha
    return _Mean(run, n_g, alpha, alpha_var, alpha_rv, "negative_binomial")


def _nb2_mean_of(n_g, p_g, ndeps, free):
    """:class:`_Mean` of ``NegativeBinomial(mu=mu, alpha=alpha)``.

    ``n = alpha`` (one constant or one scalar Gamma variable) and ``mu = n (1 - p) / p``.
    """
    alpha = alpha_var = alpha_rv = None
    if ndeps:
        alpha_rv = ndeps[0]
        shape_a, rate_a = _scalar_gamma(alpha_rv, free, "the NB dispersion alpha")
        for v in (0.7, 2.3):
            got = np.ravel(evaluate(n_g, {alpha_rv: np.asarray(v)}))
            if not np.allclose(got, v, rtol=1e-12):
                raise NotRecognized("the NB shape n is not the dispersion alpha itself")
        alpha_var = (alpha_rv.name, shape_a, rate_a)
        env0 = {alpha_rv: np.asarray(1.0)}
    else:
        n = np.ravel(np.asarray(evaluate(n_g), float))
        if not np.all(n == n[0]) or not 0.0 < n[0] < np.inf:
            raise NotRecognized("the NB dispersion alpha varies by entry; recognized: one "
                                "alpha (a positive constant or a scalar Gamma variable)")
        alpha = float(n[0])
        env0 = {}
    mu_graph = n_g * (1.0 - p_g) / p_g

    def run(env):
        return evaluate(mu_graph, {**env0, **env})
    return _Mean(run, mu_graph, alpha, alpha_var, alpha_rv, "nb2")


def _check_mean_free_of_alpha(mean_graph, alpha_rv, ours, memo):
    """NB2: the mean ``n (1 - p) / p`` must not change with the dispersion."""
    env = {rv: np.full(shape_of(rv, memo), 1.0) for rv in ours}
    a, b = (np.asarray(evaluate(mean_graph, {**env, alpha_rv: np.asarray(v)}), float)
            for v in (0.7, 2.3))
    if not np.allclose(a, b, rtol=1e-9):
        raise NotRecognized("the NB mean n (1 - p) / p depends on the dispersion alpha")


def _check_alpha_enters_n(n_graph, alpha_rv, ours, memo, o, K):
    """Check that the NB shape ``n`` holds alpha only as a factor (``n / alpha`` is the mean)."""
    for v in (0.7, 2.3):
        env = {ours[0]: np.full(shape_of(ours[0], memo), 1.0),
               ours[1]: np.full(shape_of(ours[1], memo), 1.0), alpha_rv: np.asarray(v)}
        got = np.asarray(evaluate(n_graph, env), float).ravel()
        if not np.allclose(got, v * o * K, rtol=1e-10):
            raise NotRecognized("the NB shape n is not alpha * mu")


def _count_imputation(model, obs, family, mean, assignment, memo):
    """PyMC's automatic imputation of the likelihood's NaN counts, as an :class:`Imputed`.

    ``pm.Poisson("X", mu=A @ W, observed=counts_with_nan)`` makes the observed cells
    ``X_observed`` and a free ``X_unobserved ~ Poisson((A @ W)[missing])``. Given the factors
    (and the NB dispersion) its conditional is that distribution, so the count samplers draw it
    exactly after each sweep of the factors, which see only the observed cells. Recognized
    when a free variable of the likelihood's family has a mean ``o * (A @ W)[sel]`` of the same
    factors in the same roles (and, for the NB, the same dispersion).
    """
    free = list(model.free_RVs)
    ours = [rv for rv, _ in assignment.values()]
    op = type(obs.owner.op)
    for u in free:
        if u in ours or type(u.owner.op) is not op or u is mean.alpha_rv:
            continue
        try:
            m_u = _mean_of(u, family, free)
        except NotRecognized:
            continue
        if (m_u.alpha_rv is not mean.alpha_rv or m_u.alpha != mean.alpha
                or set(depends_on(m_u.graph, free)) - {mean.alpha_rv} != set(ours)):
            continue
        try:
            found = _match(m_u.run, ours, memo)
        except NotRecognized:
            continue
        got, rows, cols, o, shape, K = found
        if got != assignment:
            continue
        if m_u.family != mean.family:
            continue
        if mean.alpha_rv is not None and mean.family == "negative_binomial":
            _check_alpha_enters_n(m_u.graph, mean.alpha_rv, ours, memo, o, K)
        return Imputed(name=u.name, rv=u, rows=rows.astype(np.int64),
                       cols=cols.astype(np.int64), offsets=o.copy())
    return None


#: data already warned about by :func:`_warn_floored` (identities of the float arrays)
_FLOORED_WARNED = set()


def _warn_floored(model, obs):
    """Warn once when PyMC floored non-integer observed data to a count likelihood's integers.

    ``pm.Poisson(..., observed=pm.Data("X", floats))`` casts the floats to int64 (1.7 -> 1)
    without a word; the floats are still in the graph, behind the cast. (A plain NumPy array of
    floats is converted by PyMC before the model holds it: no reader of the model can see it.)
    """
    import warnings

    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors

    value = model.rvs_to_values[obs]
    for var in ancestors([value]):
        if var is value or not isinstance(var, (SharedVariable, Constant)) \
                or getattr(var, "dtype", "")[:5] != "float":
            continue
        data = np.asarray(var.get_value(borrow=True) if isinstance(var, SharedVariable)
                          else var.data, dtype=float)
        if data.size == 0 or id(data) in _FLOORED_WARNED:
            continue
        bad = np.isfinite(data) & (data != np.floor(data))
        if bad.any():
            _FLOORED_WARNED.add(id(data))
            first = np.unravel_index(int(np.flatnonzero(bad)[0]), data.shape)
            x = float(data[first])
            warnings.warn(
                f"the observed data of {obs.name!r} ({var.name or 'a float array'}) hold "
                f"{int(bad.sum())} non-integer values, e.g. {x:g} at {list(map(int, first))}, "
                f"which PyMC floors to integers for a count likelihood ({x:g} -> "
                f"{int(np.floor(x))}): counts must be integers; round them yourself, or use a "
                "likelihood for real values", UserWarning, stacklevel=4)


def _recognize_counts(model, obs, family):
    free = list(model.free_RVs)
    memo = {}
    mean = _mean_of(obs, family, free)
    run, mean_graph = mean.run, mean.graph
    alpha, alpha_var, alpha_rv = mean.alpha, mean.alpha_var, mean.alpha_rv
    factor_rvs = [rv for rv in depends_on(mean_graph, free) if rv is not alpha_rv]
    if len(factor_rvs) != 2:
        raise NotRecognized(f"the mean of {obs.name!r} depends on {_names(factor_rvs)}; "
                            "recognized: A @ W (two factors) times constant offsets")
    assignment, rows, cols, o, (D, N), K = _match(run, factor_rvs, memo)
    ours = [rv for rv, _ in assignment.values()]
    family = mean.family
    if alpha_rv is not None and family == "negative_binomial":
        _check_alpha_enters_n(mean_graph, alpha_rv, ours, memo, o, K)
    elif alpha_rv is not None:
        _check_mean_free_of_alpha(mean_graph, alpha_rv, ours, memo)
    imputed = _count_imputation(model, obs, family, mean, assignment, memo)
    values = np.asarray(observed_data(model, obs), dtype=float).ravel()
    if values.shape != rows.shape:
        raise NotRecognized(f"the observed data of {obs.name!r} have {values.size} entries, "
                            f"the mean {rows.size}")
    if np.isnan(values).any():
        raise NotRecognized(f"the observed data of {obs.name!r} hold NaN (PyMC would impute "
                            "them); mark missing cells with likelihoods.poisson(..., mask=)")
    if (values < 0).any() or (values != np.round(values)).any():
        raise NotRecognized(f"the observed data of {obs.name!r} are not non-negative integers")
    _warn_floored(model, obs)
    flat = rows * np.int64(N) + cols
    if np.unique(flat).size != flat.size:
        raise NotRecognized(f"the likelihood {obs.name!r} observes some entry twice")

    zero = _zero_potential(model, obs.name, free, assignment, None)
    if zero is not None and family == "nb2":
        raise NotRecognized(f"the zero-count potential {zero[0].name!r} belongs to the other NB "
                            "form (n = alpha * mu)")
    skip = ({obs} | ({zero[0]} if zero is not None else set())
            | ({imputed.rv} if imputed is not None else set()))
    checked = list(assignment.items())
    if alpha_rv is not None:
        checked.append(("the NB dispersion", (alpha_rv, False)))
    for role, (rv, _) in checked:
        users = [u for u in _users(model, rv) if u not in skip]
        if users:
            raise NotRecognized(f"{role} ({rv.name!r}) is also used by {_names(users)}; "
                                "recognized: the factors (and the NB dispersion) appear only "
                                "in the likelihood")
    for pot in model.potentials:
        if zero is not None and pot is zero[0]:
            continue
        hit = depends_on(pot, ours + ([alpha_rv] if alpha_rv is not None else []))
        if hit:
            raise NotRecognized(f"the potential {pot.name!r} depends on {_names(hit)}")

    nz = values != 0
    if zero is not None:
        pot, info = zero
        s, c = info["row_offset"], info["col_offset"]
        if not np.allclose(o, s[rows] * c[cols], rtol=1e-12):
            raise NotRecognized(f"the potential {pot.name!r} does not match the offsets of "
                                f"{obs.name!r}")
        _check_zero_mass(pot, info, assignment, rows, cols, o, (D, N), K, alpha_rv, alpha,
                         family)
        exposure = {"kind": "separable", "row_offset": s, "col_offset": c,
                    "rows": info["missing_rows"], "cols": info["missing_cols"]}
    else:
        sep = _separable(o, rows, cols, D, N)
        if sep is not None and rows.size == D * N:
            empty = np.array([], dtype=np.int64)
            exposure = {"kind": "separable", "row_offset": sep[0], "col_offset": sep[1],
                        "rows": empty, "cols": empty}
        elif sep is not None and rows.size > D * N // 2:
            m = np.ones((D, N), dtype=bool)
            m[rows, cols] = False
            mr, mc = (a.astype(np.int64) for a in np.nonzero(m))
            exposure = {"kind": "separable", "row_offset": sep[0], "col_offset": sep[1],
                        "rows": mr, "cols": mc}
        else:
            exposure = {"kind": "entries", "rows": rows.astype(np.int64),
                        "cols": cols.astype(np.int64), "offsets": o.copy()}

    rates_seen, factors, rate_rvs = {}, {}, {}
    role_shapes = {"A": (D, K), "W": (K, N)}
    for role, (rv, transposed) in assignment.items():
        factors[role], g = _prior(role, rv, transposed, role_shapes[role], free, memo,
                                  rates_seen)
        if g is not None:
            rate_rvs[g.name] = g
    for name, g in rate_rvs.items():
        users = [u for u in _users(model, g) if u not in ours]
        if users:
            raise NotRecognized(f"the rate variable {name!r} is also used by {_names(users)}; "
                                "recognized: rates used only by the factors' priors")
    structure = (set(ours) | set(rate_rvs.values())
                 | ({alpha_rv} if alpha_rv is not None else set())
                 | ({imputed.rv} if imputed is not None else set()))
    others = tuple(sorted(rv.name for rv in free if rv not in structure))
    coords = _coords(model, assignment, "nmf", D, N)
    return CountFactorization(
        family=family, likelihood=obs.name, shape=(D, N), rank=int(K),
        nz_rows=rows[nz].astype(np.int64), nz_cols=cols[nz].astype(np.int64),
        nz_counts=values[nz].astype(np.int64), exposure=exposure, factors=factors,
        rates=rates_seen, alpha=alpha, alpha_var=alpha_var, others=others, imputed=imputed,
        row_labels=np.asarray(coords["row"]), col_labels=np.asarray(coords["col"]))


def _check_zero_mass(pot, info, assignment, rows, cols, o, shape, K, alpha_rv, alpha, family):
    """The potential equals ``-sum(mu over observed zeros)`` (times the NB factor) at a point."""
    D, N = shape
    rng = np.random.default_rng(2)
    A = rng.uniform(0.5, 1.5, size=(D, K))
    W = rng.uniform(0.5, 1.5, size=(K, N))
    env = {rv: (v.T if f else v) for (rv, f), v in zip(assignment.values(), (A, W))}
    a_val = alpha
    if alpha_rv is not None:
        a_val = 1.7
        env[alpha_rv] = np.asarray(a_val)
    got = float(evaluate(pot, env))
    s, c = info["row_offset"], info["col_offset"]
    total = float((s @ A) @ (W @ c))
    lost = float(np.sum(o * np.einsum("ek,ke->e", A[rows], W[:, cols])))
    mr, mc = info["missing_rows"], info["missing_cols"]
    if mr.size:
        lost += float(np.sum(s[mr] * c[mc] * np.einsum("ek,ke->e", A[mr], W[:, mc])))
    want = -(total - lost)
    if family == "negative_binomial":
        want = -want * a_val * np.log(a_val / (1 + a_val))
    if not np.isclose(got, want, rtol=1e-9, atol=1e-9):
        raise NotRecognized(f"the potential {pot.name!r} is not the zero entries' mass of its "
                            "likelihood")


def recognize_poisson(model, obs):
    """:class:`CountFactorization` of a model whose likelihood ``obs`` is an observed Poisson.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import recognize
    >>> X = np.random.default_rng(0).poisson(2.0, size=(4, 3))
    >>> with pm.Model() as model:
    ...     lam = pm.Gamma("lam", 1.0, 1.0, shape=2)
    ...     A = pm.Gamma("A", 2.0, lam[None, :], shape=(4, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 3))
    ...     _ = pm.Poisson("X", mu=A @ W, observed=X)
    >>> f = recognize(model)
    >>> f.family, f.factors["A"].rate_var, f.exposure["kind"], f.rank
    ('poisson', 'lam', 'separable', 2)
    """
    return _recognize_counts(model, obs, "poisson")


def recognize_counts(model, obs):
    """:class:`CountFactorization` of a model whose likelihood ``obs`` is a Poisson or an NB."""
    if type(obs.owner.op).__name__ == "PoissonRV":
        return _recognize_counts(model, obs, "poisson")
    return _recognize_counts(model, obs, "negative_binomial")


def recognize_negative_binomial(model, obs):
    """:class:`CountFactorization` of a model with an observed ``NegativeBinomial(n, p)``."""
    return _recognize_counts(model, obs, "negative_binomial")
