"""What the collapsed samplers and CVB0 read from a model: the recognized Bernoulli factorization.

One path for every model: our constructors (:func:`bnmfzoo.models.beta_dir`, ``dir_beta``,
``dir_dir``) attach nothing, and they, like a user's own ``pm.Model``, go through
:func:`bnmfzoo.models.recognize`; the
:class:`~bnmfzoo.models._recognize_binary.BernoulliFactorization` becomes a
:class:`~bnmfzoo.models._spec.ModelSpec` whose ``hyper`` is the typed
:class:`~bnmfzoo.models._recognize_binary.BinaryPriors`
(:meth:`~bnmfzoo.models._recognize_binary.BernoulliFactorization.spec`), so a user's Beta-Dir
model written in PyMC syntax gets the very chain our ``beta_dir`` model gets.
"""

from bnmfzoo.models._recognize import try_recognize

__all__ = ["binary_spec", "spec_from_bernoulli", "BINARY_FAMILIES"]

BINARY_FAMILIES = ("beta_dir", "dir_beta", "dir_dir")


def spec_from_bernoulli(f):
    """``(ModelSpec, None)`` for the collapsed samplers and CVB0, else ``(None, reason)``.

    ``f`` is the result of :func:`bnmfzoo.models.recognize`; a Bernoulli factorization gives
    its :meth:`~bnmfzoo.models._recognize_binary.BernoulliFactorization.spec` (hyperparameters
    as typed :class:`~bnmfzoo.models._recognize_binary.BinaryPriors`; hyperparameters that
    depend on a random variable are refused).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import recognize
    >>> with pm.Model() as model:
    ...     A = pm.Dirichlet("A", a=np.ones(2), shape=(3, 2))
    ...     W = pm.Beta("W", 1.0, 1.0, shape=(2, 2))
    ...     _ = pm.Bernoulli("X", p=A @ W, observed=np.eye(3, 2))
    >>> spec, _ = spec_from_bernoulli(recognize(model))
    >>> spec.family, spec.hyper.names, spec.hyper.nonparametric
    ('beta_dir', ('gamma', 'alpha', 'beta'), False)
    """
    if getattr(f, "kind", None) != "bernoulli":
        return None, "its likelihood is not a Bernoulli on A @ W"
    return f.spec()


def binary_spec(model, *, families, method):
    """The :class:`ModelSpec` of ``model`` for ``method``, or a ``TypeError`` saying why not.

    Read from the model's graph (:func:`bnmfzoo.models.recognize`, memoized on the model).
    """
    import pymc as pm

    families = (families,) if isinstance(families, str) else tuple(families)
    if not isinstance(model, pm.Model):
        raise TypeError(f"{method} needs a pymc.Model, got {type(model).__name__}")
    found, reason = try_recognize(model)
    spec = None
    if found is not None:
        spec, reason = spec_from_bernoulli(found)
    if spec is None:
        raise TypeError(f"{method} needs a model of family {', '.join(families)}; this "
                        f"pm.Model is not recognized as one: {reason}")
    if spec.family not in families:
        raise TypeError(f"{method} fits {', '.join(families)} models, not a {spec.family!r} "
                        "model")
    return spec
