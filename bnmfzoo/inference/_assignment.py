"""What ``pm.sample()`` is told about bnmfzoo's part in its step assignment.

Two things a PyMC user meets once ``import bnmfzoo`` has registered the library's steps:

* **Why not ours.** A model with a matrix product of non-negative factors in its likelihood
  that our recognizer (:func:`bnmfzoo.models.recognize`) does not read gets PyMC's own
  samplers (NUTS) for its factors, often several times slower. :class:`NotRecognizedNotice`
  sits in ``pymc.step_methods.STEP_METHODS``; it is never chosen (its competence is always
  INCOMPATIBLE), but when PyMC asks it about the first factor of such a model it logs one
  warning line on the ``bnmfzoo`` logger with the recognizer's reason.
* **NUTS options with no NUTS.** ``pm.sample(target_accept=0.9)`` or ``nuts={...}`` (every
  PyMC user's habit) reach PyMC's ``instantiate_steppers`` as ``step_kwargs={"nuts": ...}``,
  which raises ``Invalid key found in step_kwargs: {'nuts'}`` when no variable went to NUTS.
  :func:`install` wraps that function: when the variables went to bnmfzoo's steps and none to
  NUTS, the NUTS options are dropped with one warning line saying why (our steps draw from
  exact conditionals and have no step size). When some variables do go to NUTS, PyMC applies
  the options to that part as usual.
* **Interrupted means no result.** PyMC returns the draws it has after a ``KeyboardInterrupt``;
  with our steps taking part, :func:`install` makes ``pm.sample`` raise instead
  (:func:`_interrupt_wrapper`).

Example
-------
>>> import logging, numpy as np, pymc as pm
>>> X = np.random.default_rng(0).exponential(size=(6, 5))
>>> with pm.Model() as model:
...     A = pm.Exponential("A", 1.0, shape=(6, 2))
...     W = pm.Exponential("W", 1.0, shape=(2, 5))
...     _ = pm.Normal("X", mu=pm.math.exp(A @ W), sigma=1.0, observed=X)
>>> print(not_recognized_reason(model)[:59])
the mean of the likelihood depends on ['A', 'W'] but is not
"""

import logging

from pymc.step_methods.compound import BlockedStep, Competence

__all__ = ["NotRecognizedNotice", "install", "not_recognized_reason", "nmf_like_factors"]

logger = logging.getLogger("bnmfzoo")

#: distributions whose support is non-negative (the factors of an NMF-like product)
NONNEGATIVE_OPS = frozenset({
    "ExponentialRV", "GammaRV", "HalfNormalRV", "HalfCauchyRV", "HalfStudentTRV",
    "HalfFlatRV", "LogNormalRV", "BetaRV", "DirichletRV", "WeibullRV", "InverseGammaRV",
    "ChiSquaredRV", "KumaraswamyRV", "ParetoRV", "TruncatedNormalRV", "UniformRV",
})


def _is_product(node):
    op = node.op
    name = type(op).__name__
    if name in ("Dot", "Dot22", "Dot22Scalar", "BatchedDot"):
        return True
    core = getattr(op, "core_op", None)  # pt.matmul: Blockwise(Dot)
    return core is not None and type(core).__name__ == "Dot"


def _nonnegative(model, rv):
    if type(rv.owner.op).__name__ in NONNEGATIVE_OPS:
        return True
    transform = model.rvs_to_transforms.get(rv)
    return type(transform).__name__ in ("LogTransform", "SimplexTransform")


def nmf_like_factors(model):
    """Free variables, in model order, that enter a product of non-negative factors.

    A product (``A @ W``, ``pt.dot``) in the graph of an observed variable or a potential
    whose two operands each depend on a free variable with non-negative support. Empty when
    there is none.
    """
    from pytensor.graph.traversal import applys_between

    from bnmfzoo.models._graph import depends_on

    free = list(model.free_RVs)
    positive = [rv for rv in free if _nonnegative(model, rv)]
    if len(positive) < 2:
        return []
    found = set()
    for out in list(model.observed_RVs) + list(model.potentials):
        inputs = list(out.owner.inputs) if out.owner is not None else []
        for node in applys_between(free, inputs):
            if not _is_product(node) or len(node.inputs) < 2:
                continue
            left, right = (set(depends_on(v, positive)) | ({v} & set(positive))
                           for v in node.inputs[:2])
            if left and right:
                found |= left | right
    return [rv for rv in free if rv in found]


def not_recognized_reason(model):
    """The recognizer's reason when ``model`` is NMF-like but not recognized, else None."""
    from bnmfzoo.models._recognize import try_recognize

    if not nmf_like_factors(model):
        return None
    found, reason = try_recognize(model)
    return None if found is not None else reason


def _claimed_by_another(var, has_grad):
    """True when another of the library's registered steps wants ``var``."""
    from pymc.step_methods import STEP_METHODS

    from bnmfzoo.inference._cost_model import quiet

    with quiet():  # PyMC asks each class itself; its answer is the one announced
        for cls in STEP_METHODS:
            if cls is NotRecognizedNotice or not cls.__module__.startswith("bnmfzoo."):
                continue
            if max(cls._competence(var, has_grad)) > Competence.INCOMPATIBLE:
                return True
    return False


class NotRecognizedNotice(BlockedStep):
    """Never sampled with: tells why an NMF-like model goes to PyMC's default samplers.

    Registered in ``pymc.step_methods.STEP_METHODS`` by :func:`install`. ``pm.sample()`` asks
    every registered class for its competence on each free variable; this one answers
    INCOMPATIBLE always and, on the first factor of a product of non-negative factors that no
    bnmfzoo step claims, logs the recognizer's reason (one line per ``pm.sample`` call).
    """

    name = "bnmfzoo_not_recognized"

    def __init__(self, *args, **kwargs):  # pragma: no cover - never chosen
        raise TypeError("NotRecognizedNotice is not a sampler")

    @classmethod
    def competence(cls, var, has_grad=True):
        """INCOMPATIBLE; logs why bnmfzoo's steps do not take ``var`` (see the class)."""
        from bnmfzoo.inference._step_glue import model_of_var

        try:
            model = model_of_var(var)
            if model is None or var not in model.free_RVs:
                return Competence.INCOMPATIBLE
            factors = nmf_like_factors(model)
            if not factors or var is not factors[0] or _claimed_by_another(var, has_grad):
                return Competence.INCOMPATIBLE
            reason = not_recognized_reason(model)
        except Exception:  # noqa: BLE001 - a notice must never stop sampling
            return Competence.INCOMPATIBLE
        if reason is not None:
            names = ", ".join(rv.name for rv in factors)
            logger.warning(
                "bnmfzoo did not recognize this model, so PyMC's default samplers (NUTS) take "
                "its factors %s, without bnmfzoo's exact Gibbs steps: %s "
                "(bnmfzoo.models.recognize(model) says the same)", names, reason)
        return Competence.INCOMPATIBLE


def _instantiate_steppers_wrapper(original):
    def instantiate_steppers(model, steps, selected_steps, *args, step_kwargs=None, **kwargs):
        step_kwargs = dict(step_kwargs or {})
        active = [cls for cls, v in selected_steps.items() if v]
        uses_nuts = any(getattr(cls, "name", None) == "nuts" for cls in active)
        ours = [cls for cls in active if cls.__module__.startswith("bnmfzoo.")]
        ours += [s for s in steps if type(s).__module__.startswith("bnmfzoo.")]
        if "nuts" in step_kwargs and not uses_nuts and ours:
            options = step_kwargs.pop("nuts")
            names = sorted({type(s).__name__ if not isinstance(s, type) else s.__name__
                            for s in ours})
            logger.warning(
                "NUTS options %s ignored: no variable is sampled by NUTS (bnmfzoo's %s draw "
                "every variable from its exact conditional; there is no step size to tune). "
                "To run NUTS instead: with bnmfzoo.inference.pymc_default_steps(): "
                "pm.sample(...)", options, ", ".join(names))
        return original(model, steps, selected_steps, *args, step_kwargs=step_kwargs,
                        **kwargs)

    instantiate_steppers.__wrapped__ = original
    instantiate_steppers.__doc__ = original.__doc__
    instantiate_steppers._bnmfzoo = True
    return instantiate_steppers


def _uses_our_step(step):
    methods = getattr(step, "methods", None) or [step]
    return any(type(m).__module__.startswith("bnmfzoo.") for m in methods)


def _interrupt_wrapper(original):
    """Wrap PyMC's ``_sample_many`` / ``_mp_sample``: with one of our steps, Ctrl-C raises.

    PyMC catches a ``KeyboardInterrupt`` in a chain and returns the draws it has, so a Ctrl-C
    during ``pm.sample`` would hand back a silently truncated, unconverged result. When our
    steps take part, SIGINT and SIGTERM are held for the call
    (:func:`~bnmfzoo.inference._interrupt.stop_on_signals`) and the per-draw callback stops
    sampling after the current draw, which ``pm.sample`` lets through: it raises
    :class:`~bnmfzoo.inference._interrupt.SamplingInterrupted` (a ``KeyboardInterrupt``), as
    does a ``KeyboardInterrupt`` raised by the user's callback.
    """
    def sample_chains(*args, **kwargs):
        from bnmfzoo.inference._interrupt import Stopper, stop_on_signals

        callback = kwargs.get("callback")
        if not _uses_our_step(kwargs.get("step")) \
                or isinstance(getattr(callback, "__self__", None), Stopper):
            # not ours, or bnmfzoo.inference.sample's own stopper is already in charge
            return original(*args, **kwargs)
        with stop_on_signals(kwargs.get("callback")) as stopper:
            kwargs["callback"] = stopper.callback
            return original(*args, **kwargs)

    sample_chains.__wrapped__ = original
    sample_chains.__doc__ = original.__doc__
    sample_chains._bnmfzoo = True
    return sample_chains


def install():
    """Register :class:`NotRecognizedNotice` and wrap PyMC's sampling functions (once).

    ``instantiate_steppers`` (NUTS options with no NUTS), and ``_sample_many`` and
    ``_mp_sample`` (an interrupted ``pm.sample`` with our steps raises,
    :func:`_interrupt_wrapper`).
    """
    from pymc.sampling import mcmc
    from pymc.step_methods import STEP_METHODS

    if NotRecognizedNotice not in STEP_METHODS:
        STEP_METHODS.append(NotRecognizedNotice)
    if not getattr(mcmc.instantiate_steppers, "_bnmfzoo", False):
        mcmc.instantiate_steppers = _instantiate_steppers_wrapper(mcmc.instantiate_steppers)
    for name in ("_sample_many", "_mp_sample"):
        if not getattr(getattr(mcmc, name), "_bnmfzoo", False):
            setattr(mcmc, name, _interrupt_wrapper(getattr(mcmc, name)))
