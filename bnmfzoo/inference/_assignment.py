"""What ``pm.sample()`` does with bnmfzoo's steps, and what the user is told about it.

**Which sampler.** Our exact Gibbs steps are not faster than PyMC's NUTS on every model they
can sample. For each model family and likelihood they read, :data:`MEASURED` holds the ratio of
effective samples per CPU second, ours over PyMC's NUTS, both through ``pm.sample`` in the same
run on the quantities users read (``A @ W`` cells, factor entries or normalized signatures, and
the noise or dispersion), with the benchmark command that produced it (the measured cost
model). :func:`choose` picks our step when the ratio is at least 1 and NUTS otherwise, and
:func:`announce` logs one line per ``pm.sample`` call saying which sampler takes the model's
variables and why. The ratios were measured on a shared 2-core machine; rerun the commands to
update them (the lowest ratio of a benchmark is recorded, so a model is given our step only
where it won on every quantity measured, unless a note says otherwise).

**What the user is told.** Three things a PyMC user meets once ``import bnmfzoo`` has
registered the library's steps:

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

Examples
--------
>>> choose("gaussian", "normal").ours
True
>>> choose("counts", "nb2").ours
False
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
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from pymc.step_methods.compound import BlockedStep, Competence

__all__ = ["Measured", "MEASURED", "choose", "announce", "likelihood_key", "count_key", "quiet",
           "NotRecognizedNotice", "install", "not_recognized_reason", "nmf_like_factors"]

logger = logging.getLogger("bnmfzoo")
_local = threading.local()


@contextmanager
def quiet():
    """No :func:`announce` lines inside (a competence asked by our own code, not by PyMC)."""
    before = getattr(_local, "quiet", False)
    _local.quiet = True
    try:
        yield
    finally:
        _local.quiet = before


@dataclass(frozen=True)
class Measured:
    """One measurement: ESS per CPU second, ours / PyMC NUTS, and how it was obtained.

    Attributes
    ----------
    ratio : float
        The ratio the choice uses (below 1: NUTS is chosen).
    detail : str
        What was measured (data, quantities, the range over them).
    command : str
        The benchmark command that measures it (results pages in ``docs/results/``).
    """

    ratio: float
    detail: str
    command: str


#: ``(family, likelihood) -> Measured``; families as the recognizer names them
MEASURED = {
    ("gaussian", "normal"): Measured(
        27.0, "GDSC rank 5 and CCLE IC50 rank 3, aligned factor entries, signatures and "
        "exposures: 27-52x (smallest over entries and medians; docs/results/gaussian.md)",
        "python -m benchmarks.speed.converged"),
    ("gaussian", "normal_user_priors"): Measured(
        4.9, "CCLE IC50 rank 3, Gamma, per-column precision and the HalfNormal / ARD model: "
        "tau and A @ W entries 4.9-58x (docs/results/gaussian.md)",
        "python -m benchmarks.speed.user_model --only ccle --model gamma --model col_tau --cpu"),
    ("gaussian", "student_t"): Measured(
        1.4, "CCLE IC50 rank 3, Student-t (nu = 4), both samplers from the same state, two "
        "modes: tau 6.5-15x, 200 A @ W entries smallest 1.4-3.3x, median 23-28x "
        "(docs/results/gaussian.md)",
        "python -m benchmarks.speed.student_t"),
    ("counts", "poisson"): Measured(
        5.3, "sparse counts (at most one count per observed cell on average): Reuters word "
        "counts, K = 6, factor entries, normalized signatures, exposures and A @ W: smallest "
        "5.3x, medians 12-52x; sparse synthetic 400 x 600: >= 100x "
        "(docs/results/counts_core.md)",
        "python -m benchmarks.speed.converged_counts --data reuters6"),
    ("counts", "poisson_dense"): Measured(
        0.3, "dense catalogues (more than one count per observed cell on average): breast "
        "and ESCC SBS96, K = 4 and 8: smallest over factor entries, normalized signatures "
        "and exposures 0.3-0.9x (nutpie 0.0-0.1x); dense synthetic 100 x 80, K = 4: 0.7x "
        "(docs/results/counts_core.md)",
        "python -m benchmarks.speed.converged_counts --data breast4"),
    ("counts", "poisson_dense_hmc"): Measured(
        14.7, "dense catalogues, Poisson with fixed Gamma priors, HMC on log A, log W with "
        "trajectory lengths learned during tuning and an exact rescaling move (HmcPoisson): "
        "breast and ESCC SBS96, K = 4 and 8, aligned factor entries, normalized signatures, "
        "exposures and A @ W: smallest over entries 14.7-269x, medians 6.3-121x (nutpie 0.16: "
        "smallest 1.8-67x, medians 0.9-53x) (docs/results/counts_dense.md)",
        "python -m benchmarks.speed.converged_counts --data breast4 breast8 --ours hmc (ESCC: "
        "--data escc4 escc8 --draws 1000 --tune 300 --nuts-draws 100)"),
    ("counts", "negative_binomial"): Measured(
        1.4, "100 x 96, K = 4, cells and signatures 1.4-1.9x (0.45-0.7x on 30 x 20) "
        "(docs/results/counts_core.md)", "python -m benchmarks.speed.counts_ess --likelihood nb"),
    ("counts", "nb2"): Measured(
        0.3, "A @ W cells 0.3x on 30 x 20, K = 3 (our chains at R-hat 1.12-1.27 after 2,000 "
        "draws), 0.2-0.6x on 100 x 96, K = 4 (docs/results/counts_core.md, "
        "docs/results/gaussian.md)",
        "python -m benchmarks.speed.counts_ess --likelihood nb2"),
}


@dataclass(frozen=True)
class Choice:
    """The outcome of :func:`choose`: ``ours`` and the sentence saying why."""

    ours: bool
    reason: str


def likelihood_key(found):
    """The :data:`MEASURED` key of a recognized Gaussian model (``found.noise``, priors).

    Student-t noise is ``"student_t"``; the constructors' priors (a spec of the
    ``exponential_gaussian`` family) ``"normal"``; any other recognized prior
    ``"normal_user_priors"``.
    """
    from bnmfzoo.models._spec import spec_from_factorization

    if getattr(found.noise, "nu", None) is not None:
        return "student_t"
    spec, _ = spec_from_factorization(found)
    return "normal" if spec is not None else "normal_user_priors"


#: above this many counts per observed cell on average a Poisson model is ``"poisson_dense"``
DENSE_COUNTS_PER_CELL = 1.0


def count_key(family, total, observed_cells):
    """The :data:`MEASURED` key of a recognized count model.

    A Poisson model whose counts average more than :data:`DENSE_COUNTS_PER_CELL` per observed
    cell (mutational catalogues) is ``"poisson_dense"``: there the latent-count split mixes
    slowly between overlapping components and NUTS's gradient costs no more per cell, while
    on sparse counts (words, UMIs) our sweep touches only the nonzeros.

    >>> count_key("poisson", 50_000, 96 * 21), count_key("poisson", 900, 2_000)
    ('poisson_dense', 'poisson')
    """
    if family == "poisson" and total > DENSE_COUNTS_PER_CELL * max(observed_cells, 1):
        return "poisson_dense"
    return family


def choose(family, likelihood):
    """Our step or NUTS for ``(family, likelihood)``, from :data:`MEASURED`.

    An unmeasured pair keeps our step (exact draws; nothing says NUTS is faster).
    """
    m = MEASURED.get((family, likelihood))
    if m is None:
        return Choice(True, "exact conditional draws (no measured comparison with NUTS for "
                            "this model)")
    if m.ratio >= 1.0:
        return Choice(True, f"measured {m.ratio:g}x PyMC NUTS in effective samples per CPU "
                            f"second ({m.detail}; `{m.command}`)")
    return Choice(False, f"bnmfzoo's exact step measured {m.ratio:g}x PyMC NUTS in effective "
                         f"samples per CPU second ({m.detail}; `{m.command}`)")


def announce(model, var, names, step_name, choice):
    """Log the choice once per ``pm.sample`` call: on the first of ``names`` in model order.

    ``names`` are the variables the step would take; PyMC asks each class about every free
    variable once per step assignment, so logging on the first one gives one line per call.
    """
    if getattr(_local, "quiet", False):
        return
    first = next((rv for rv in model.free_RVs if rv.name in names), None)
    if first is None or var is not first:
        return
    listed = ", ".join(rv.name for rv in model.free_RVs if rv.name in names)
    if choice.ours:
        logger.info("bnmfzoo's %s samples %s: %s", step_name, listed, choice.reason)
    else:
        logger.warning(
            "PyMC's NUTS samples %s, not bnmfzoo's %s: %s. To use it anyway: "
            "pm.sample(step=bnmfzoo.inference.%s())", listed, step_name, choice.reason,
            step_name)


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
