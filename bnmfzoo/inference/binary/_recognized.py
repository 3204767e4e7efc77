"""What the collapsed samplers and CVB0 read from a model: ours, or a user's recognized one.

Our constructors (:func:`bnmfzoo.models.beta_dir`, ``dir_beta``, ``dir_dir``) attach a
:class:`~bnmfzoo.models._spec.ModelSpec`, which is read first (the exact path, same draws as
ever). Any other ``pm.Model`` goes through :func:`bnmfzoo.models.recognize`; a
:class:`~bnmfzoo.models._recognize_binary.BernoulliFactorization` becomes the same kind of spec
(:func:`spec_from_bernoulli`), so a user's Beta-Dir model written in PyMC syntax gets the very
chain our ``beta_dir`` model gets.
"""

from bnmfzoo.models._recognize import try_recognize
from bnmfzoo.models._spec import SPEC_ATTR, ModelSpec

__all__ = ["binary_spec", "spec_from_bernoulli", "BINARY_FAMILIES"]

BINARY_FAMILIES = ("beta_dir", "dir_beta", "dir_dir")


def spec_from_bernoulli(f):
    """``(ModelSpec, None)`` for the collapsed samplers and CVB0, else ``(None, reason)``.

    The spec has the constructors' hyperparameter names (``gamma``, ``eta``, ``alpha``,
    ``beta``, each (K,); ``nonparametric=False``: a user's K is read as a parametric rank,
    which only affects the spread warning) and ``var_names`` ``{"A", "W", "X"}`` plus ``"Wt"``
    (the N x K Dirichlet variable of W's columns) when W is a Dirichlet. Hyperparameters that
    depend on a random variable are refused: the collapsed chains integrate A and W out given
    fixed hyperparameters, and conditioning on a hyperprior is not implemented.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import recognize
    >>> with pm.Model() as model:
    ...     A = pm.Dirichlet("A", a=np.ones(2), shape=(3, 2))
    ...     W = pm.Beta("W", 1.0, 1.0, shape=(2, 2))
    ...     _ = pm.Bernoulli("X", p=A @ W, observed=np.eye(3, 2))
    >>> spec, _ = spec_from_bernoulli(recognize(model))
    >>> spec.family, sorted(spec.hyper)
    ('beta_dir', ['alpha', 'beta', 'gamma', 'nonparametric'])
    """
    if getattr(f, "kind", None) != "bernoulli":
        return None, "its likelihood is not a Bernoulli on A @ W"
    for role, prior in f.factors.items():
        deps = sorted({d for p in prior.params.values() for d in p.depends_on})
        if deps:
            return None, (f"the {prior.family.capitalize()} prior of {role} ({prior.name!r}) "
                          f"has parameters depending on {deps}; the collapsed samplers need "
                          "constant hyperparameters (they do not condition on a hyperprior; "
                          "PyMC's default samplers can sample this model)")
    hyper = {k: v.copy() for k, v in f.hyperparameters.items()}
    hyper["nonparametric"] = False
    var_names = {"A": f.factors["A"].name, "W": f.factors["W"].name, "X": f.likelihood}
    if f.factors["W"].family == "dirichlet":
        var_names["Wt"] = f.factors["W"].name
    spec = ModelSpec(family=f.family, X=f.X, mask=f.mask, rank=f.rank, hyper=hyper,
                     var_names=var_names)
    return spec, None


def binary_spec(model, *, families, method):
    """The :class:`ModelSpec` of ``model`` for ``method``, or a ``TypeError`` saying why not.

    Our constructors' attached spec first; else recognition of the model's graph.
    """
    import pymc as pm

    families = (families,) if isinstance(families, str) else tuple(families)
    spec = getattr(model, SPEC_ATTR, None)
    if spec is None:
        if not isinstance(model, pm.Model):
            raise TypeError(f"{method} needs a pymc.Model, got {type(model).__name__}")
        found, reason = try_recognize(model)
        if found is not None:
            spec, reason = spec_from_bernoulli(found)
        if spec is None:
            raise TypeError(f"{method} needs a model of family {', '.join(families)}; this "
                            f"pm.Model is not recognized as one: {reason}")
    if spec.family not in families:
        raise TypeError(f"{method} fits {', '.join(families)} models, not a {spec.family!r} "
                        "model")
    return spec
