"""What the particle methods read of a model: a view over its recognized :class:`ModelSpec`.

:func:`resolve_nmf_model` recognizes the model (:func:`bnmfzoo.models.recognize`, the one path
every method uses) and returns a :class:`ParticleView`: the model's
:class:`~bnmfzoo.models._spec.ModelSpec` (for a model whose priors are not a constructor's, a
spec of family ``"custom"`` holding the recognized data), the names of ``A`` and ``W``, whether
``A``'s columns live on the simplex, and the other free variables completed per particle. It
derives nothing by rules of its own beyond what the particle methods do with the spec
(projection onto the support, balancing along the likelihood's symmetry, conditional modes).
"""

import dataclasses
from functools import cached_property

import numpy as np

from bnmfzoo._base.validation import check_matrix
from bnmfzoo.inference.particles._init import project_columns_to_simplex

__all__ = ["ParticleView", "resolve_nmf_model"]

_FLOOR = 1e-12


@dataclasses.dataclass(frozen=True, eq=False)
class ParticleView:
    """A model as the particle methods use it: its spec, plus the particle-specific helpers.

    Attributes
    ----------
    model : pymc.Model or None
    spec : bnmfzoo.models._spec.ModelSpec
        The recognized spec (family ``"custom"`` when the priors are not a constructor's);
        ``X=``/``mask=`` overrides replace its data.
    names : dict
        ``{"A": name, "W": name}`` of the free variables (``var_names=`` overrides).
    simplex_columns : bool
        True when ``A``'s columns live on the simplex (Dirichlet columns): particles are
        rescaled so each column sums to 1 (``A @ W`` unchanged).
    extra : tuple of str
        The other free variables, set to their conditional mode per particle.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> v = resolve_nmf_model(silf(np.random.default_rng(0).random((6, 5)), 2, epsilon=1.0))
    >>> v.family, v.rank, v.simplex_columns, v.names
    ('silf', 2, True, {'A': 'A', 'W': 'W'})
    """

    model: object
    spec: object
    names: dict
    simplex_columns: bool = False
    extra: tuple = ()

    @property
    def X(self):
        """The data (NaN where unobserved)."""
        return self.spec.X

    @property
    def mask(self):
        """True where observed."""
        return self.spec.mask

    @property
    def rank(self):
        """R."""
        return self.spec.rank

    @property
    def family(self):
        """The spec's family (``"custom"`` for other priors)."""
        return self.spec.family

    @property
    def X_values(self):
        """Data with zeros where unobserved."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)

    @property
    def masked(self):
        """Whether any entry is missing."""
        return not self.mask.all()

    def condition(self, A, W):
        """Each particle's other free variables (``extra``), at their conditional mode.

        The mode given the particle's ``A`` and ``W``
        (:class:`~bnmfzoo.inference.particles._condition.ConditionalMode`); ``{}`` when ``A``
        and ``W`` are the only free variables.
        """
        if not self.extra:
            return {}
        from bnmfzoo.inference.particles._condition import ConditionalMode

        return ConditionalMode(self.model, self.names, self.extra)(A, W)

    def project(self, A, W):
        """Map factor(s) onto the model's support (simplex columns, positive entries).

        Entries are floored at ``1e-12`` after the columns of ``A`` are rescaled, so the floor
        is relative to a unit-sum basis. A dead component (a row of ``W`` or a column of ``A``
        that is all zero, beside a partner of any size, as scikit-learn's ``cd`` solver can
        return) contributes nothing to ``A @ W``; both its sides are zeroed before flooring so
        that the floor cannot turn it into a large spurious term.
        """
        A = np.maximum(np.asarray(A, dtype=float), 0.0)
        W = np.maximum(np.asarray(W, dtype=float), 0.0)
        dead = (A.max(axis=-2) <= _FLOOR) | (W.max(axis=-1) <= _FLOOR)  # (..., R)
        A = np.where(dead[..., None, :], 0.0, A)
        W = np.where(dead[..., :, None], 0.0, W)
        if self.simplex_columns:
            A, W = project_columns_to_simplex(A, W)
        A, W = np.maximum(A, _FLOOR), np.maximum(W, _FLOOR)
        if self.simplex_columns:
            A, W = project_columns_to_simplex(A, W)
        return A, W

    @cached_property
    def exponential_rates(self):
        """Rates of ``A``'s and ``W``'s priors, broadcast to their shapes, or None.

        Known only when both are ``pm.Exponential`` with constant rates (ours, or a user's).
        """
        return _exponential_rates(self.model, self.names)

    def balance(self, A, W):
        """Move each component along the likelihood's exact symmetry to the prior's best scale.

        ``A[:, r] b_r`` and ``W[r] / b_r`` leave ``A @ W`` (hence the likelihood) unchanged; with
        Exponential priors the log prior ``-sum lam_A A - sum lam_W W`` is largest at
        ``b_r = sqrt(sum_j lam_W[r, j] W[r, j] / sum_i lam_A[i, r] A[i, r])``, where both sides
        of the component carry the same prior mass. A solver's output has an arbitrary scale per
        component (Q-Transform starts can put 1e5 in a basis column beside 1e-2 in its
        coefficients, a point far out on the prior's tail with a huge Stein score). Other priors
        (e.g. simplex bases, which fix the scale) are left as they are.
        """
        rates = self.exponential_rates
        if rates is None:
            return A, W
        lam_A, lam_W = rates
        a = np.sum(lam_A * A, axis=-2)  # (..., R)
        w = np.sum(lam_W * W, axis=-1)
        b = np.where((a > 0) & (w > 0), np.sqrt(w / np.where(a > 0, a, 1.0)), 1.0)
        return A * b[..., None, :], W / b[..., :, None]

    def finalize_particles(self, A, W):
        """A solver's particles as ``fit_particles`` keeps them: balanced, then projected.

        Draws of a sampler are only projected (:meth:`project`).
        """
        return self.project(*self.balance(A, W))

    def points(self, A, W, extra=None):
        """Stacked particles as a dict keyed by the model's variable names.

        ``extra`` adds the other free variables' stacked values.
        """
        return {self.names["A"]: np.asarray(A), self.names["W"]: np.asarray(W), **(extra or {})}


def _exponential_rates(model, names):
    """``(lam_A, lam_W)`` broadcast to the shapes of A and W if both priors are Exponential."""
    from pytensor.tensor.random.basic import ExponentialRV

    rates = []
    for role in ("A", "W"):
        rv = model[names[role]]
        if rv.owner is None or not isinstance(rv.owner.op, ExponentialRV):
            return None
        try:
            scale = np.asarray(rv.owner.inputs[-1].eval(), dtype=float)
        except Exception:  # noqa: BLE001 - a rate that depends on other variables
            return None
        shape = tuple(int(s) for s in rv.shape.eval())
        rates.append(np.broadcast_to(1.0 / scale, shape))
    return tuple(rates)


def _is_simplex_columns(model, rv):
    """True for our column-Dirichlet basis (:func:`bnmfzoo.models.silf_dirichlet.column_dirichlet`).

    Its transform keeps a (D - 1, R) value; a plain Dirichlet over rows would be (D, R - 1)
    and is not a scale-fixing basis prior of this kind.
    """
    from bnmfzoo.models.silf_dirichlet import ColumnSimplexTransform

    return isinstance(model.rvs_to_transforms.get(rv), ColumnSimplexTransform)


def _observed_matrix(model, shape):
    """``(X, mask)`` of an observed variable of shape D x N, or None (unrecognized models)."""
    for rv in model.observed_RVs:
        data = model.rvs_to_values[rv]
        value = getattr(data, "data", None)
        if value is None and hasattr(data, "get_value"):
            value = data.get_value()
        if value is not None and np.shape(value) == shape:
            return check_matrix(np.asarray(value), kind="nonnegative", name="observed data")
    return None


def _recognized(model):
    """``(spec or None, data source or None)`` of ``model`` from the one recognition path.

    The spec is the model's :class:`ModelSpec` when its priors are a constructor's; the data
    source is the recognized description (``X``, ``mask``, ``var_names``) otherwise. A Gaussian
    likelihood whose priors recognition does not read (e.g. Gamma factors) still gives its
    data through :func:`bnmfzoo.models._observed.observed_product`.
    """
    from bnmfzoo.models._observed import observed_product
    from bnmfzoo.models._recognize import try_recognize
    from bnmfzoo.models._spec import spec_from_factorization

    found, _ = try_recognize(model)
    if found is not None:
        if getattr(found, "kind", None) in ("nmf", "nmtf") and (found.kind != "nmf" or any(
                p.transposed for p in found.factors.values())):
            return None, None
        spec, _ = spec_from_factorization(found)
        return spec, found
    try:
        found = observed_product(model)
    except Exception:  # noqa: BLE001 - not a Gaussian likelihood on A @ W
        return None, None
    if found.kind != "nmf" or any(t for _, t in found.assignment.values()):
        return None, None
    return None, found


def resolve_nmf_model(model, *, X=None, mask=None, var_names=None, method="fit_particles",
                      allow_extra=False):
    """The :class:`ParticleView` of ``model`` (ours or a user's own ``pm.Model``).

    ``A`` (D x R) and ``W`` (R x N) are the recognized factors (any priors; names from
    ``var_names={"A": ..., "W": ...}`` or ``"A"``/``"W"`` when nothing is recognized). The data
    come from ``X=`` if given, else the recognized likelihood (Gaussian, Bernoulli, uniform
    noise or SILF), else an observed variable of shape D x N; otherwise pass ``X=``. Other free
    variables are refused unless ``allow_extra`` (``fit_particles`` completes them per
    particle).

    Returns
    -------
    ParticleView
    """
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    from bnmfzoo.models._spec import ModelSpec

    spec, found = _recognized(model)
    names = {"A": "A", "W": "W"}
    source = spec if spec is not None else found
    if source is not None:
        found_names = source.var_names if spec is not None or not hasattr(found, "names") \
            else found.names
        names.update({k: v for k, v in found_names.items() if k in ("A", "W") and v})
    if var_names is not None:
        if not isinstance(var_names, dict) or set(var_names) - {"A", "W"}:
            raise TypeError('var_names must be a dict like {"A": "A", "W": "W"}')
        names.update(var_names)
    free = {rv.name: rv for rv in model.free_RVs}
    for role in ("A", "W"):
        if names[role] not in free:
            raise TypeError(
                f"{method} needs a free variable {names[role]!r} for {role}; the model's free "
                f"variables are {sorted(free)} (pass var_names={{'A': ..., 'W': ...}})"
            )
    extra = sorted(set(free) - {names["A"], names["W"]})
    if extra and not allow_extra:
        raise TypeError(
            f"{method} works on models whose only free variables are A and W; this model also "
            f"has {extra} (fix them, e.g. exponential_gaussian(..., sigma='reference'))"
        )
    A_rv, W_rv = free[names["A"]], free[names["W"]]
    if A_rv.ndim != 2 or W_rv.ndim != 2:
        raise TypeError(f"{method}: A and W must be matrices")
    a_shape = tuple(int(s) for s in A_rv.shape.eval())
    w_shape = tuple(int(s) for s in W_rv.shape.eval())
    if a_shape[1] != w_shape[0]:
        raise TypeError(f"{method}: A {a_shape} and W {w_shape} do not multiply")
    shape = (a_shape[0], w_shape[1])
    if X is not None:
        Xda, m = check_matrix(X, kind="nonnegative", mask=mask)
    elif source is not None:
        Xda, m = source.X, source.mask
    else:
        located = _observed_matrix(model, shape)
        if located is None:
            raise ValueError(
                f"{method} could not find the D x N data in the model; pass X= explicitly"
            )
        Xda, m = located
    if tuple(Xda.shape) != shape:
        raise ValueError(f"X has shape {tuple(Xda.shape)} but A @ W has shape {shape}")
    m = np.asarray(m, bool)
    if spec is None:
        spec = ModelSpec(family="custom", X=Xda, mask=m, rank=a_shape[1], var_names=dict(names))
    else:
        spec = dataclasses.replace(spec, X=Xda, mask=m)
    return ParticleView(model, spec, dict(names), _is_simplex_columns(model, A_rv),
                        tuple(extra) if allow_extra else ())
