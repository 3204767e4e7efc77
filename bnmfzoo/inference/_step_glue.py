"""PyMC glue shared by the library's step methods (Gibbs, collapsed Gibbs).

A PyMC point holds each free variable in its *value space*, the image of the variable's
transform (``A_log__`` for an Exponential, ``A_simplex__`` for a Dirichlet, ``W_logodds__`` for a
Beta). Our samplers work on the constrained values. :class:`ValueMap` maps one variable between
the two with the model's own transform (``model.rvs_to_transforms``), and :class:`TransformedStep`
is the base class of every step method of the package: it resolves the variables a step updates,
reads constrained values out of a point and writes new ones back.

The maps are evaluated numerically. For an elementwise transform with an exact NumPy equivalent
(today: PyMC's ``LogTransform``, whose ``forward``/``backward`` are ``log``/``exp``) the NumPy
functions are used, so a sweep pays no PyTensor call overhead; for any other transform
``transform.forward`` / ``transform.backward`` are compiled once per step instance (lazily, and
again after unpickling in a worker process).

Nothing here knows about a particular model family; the wings' step methods subclass
:class:`TransformedStep` and declare their own ``_state_class`` (a dataclass subclass of
:class:`pymc.step_methods.compound.StepMethodState`), so ``step.sampling_state`` snapshots and
restores everything a chain needs to continue exactly.
"""

from contextlib import contextmanager

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.logprob.transforms import LogTransform
from pymc.step_methods.compound import BlockedStep

__all__ = ["ValueMap", "TransformedStep", "NUMPY_EQUIVALENTS", "pymc_default_steps",
           "model_of_var"]

#: transform type -> (forward, backward) NumPy functions computing exactly what the transform's
#: PyTensor graph computes, elementwise
NUMPY_EQUIVALENTS = {
    LogTransform: (np.log, np.exp),
}


def _identity(x):
    return np.array(x, dtype=float)


class ValueMap:
    """Forward (constrained -> value space) and backward maps of one model variable.

    Parameters
    ----------
    model : pymc.Model
    rv_name : str
        Name of the random variable.

    Attributes
    ----------
    rv_name, value_name : str
        The variable's name and its value variable's name in a point (``A`` / ``A_log__``).
    transform : pymc.logprob.transforms.Transform or None
        ``model.rvs_to_transforms[rv]``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as m:
    ...     x = pm.Exponential("x", 1.0, shape=2)
    >>> vm = ValueMap(m, "x")
    >>> vm.value_name, vm.forward(np.array([1.0, np.e])).tolist()
    ('x_log__', [0.0, 1.0])
    """

    def __init__(self, model, rv_name):
        rv = model[rv_name]
        value = model.rvs_to_values[rv]
        self.rv_name = rv_name
        self.value_name = value.name
        self.transform = model.rvs_to_transforms.get(rv)
        self._rv = rv
        self._value = value
        self._compiled = None
        numpy_pair = NUMPY_EQUIVALENTS.get(type(self.transform))
        if self.transform is None:
            self._numpy = (_identity, _identity)
        else:
            self._numpy = numpy_pair

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_compiled"] = None  # compiled functions are rebuilt where they are used
        return state

    def _compile(self):
        if self._compiled is None:
            transform, rv, value = self.transform, self._rv, self._value
            inputs = rv.owner.inputs if rv.owner is not None else ()
            x = pt.tensor("x", dtype=rv.type.dtype, shape=(None,) * rv.type.ndim)
            y = pt.tensor("y", dtype=value.type.dtype, shape=(None,) * value.type.ndim)
            try:
                fwd = pytensor.function([x], transform.forward(x, *inputs), mode="FAST_COMPILE")
                bwd = pytensor.function([y], transform.backward(y, *inputs), mode="FAST_COMPILE")
            except pytensor.graph.utils.MissingInputError as err:
                raise TypeError(
                    f"the transform {type(transform).__name__} of {self.rv_name!r} depends on "
                    "other model variables; our step methods need a transform of the variable "
                    "alone"
                ) from err
            self._compiled = (fwd, bwd)
        return self._compiled

    def forward(self, x):
        """Constrained value ``x`` -> value space (``transform.forward``), a float ndarray."""
        fn = self._numpy[0] if self._numpy is not None else self._compile()[0]
        return np.asarray(fn(np.asarray(x, dtype=float)), dtype=float)

    def backward(self, y):
        """Value-space ``y`` -> constrained value (``transform.backward``), a float ndarray."""
        fn = self._numpy[1] if self._numpy is not None else self._compile()[1]
        return np.asarray(fn(np.asarray(y, dtype=float)), dtype=float)


class TransformedStep(BlockedStep):
    """Base of the package's step methods: which variables, and value space <-> constrained.

    A subclass calls :meth:`_init_variables` from its constructor with the model and the
    ``{role: random-variable name}`` of the variables it can update, and then reads and writes
    constrained values with :meth:`_read` and :meth:`_write`. It declares ``_state_class`` (a
    dataclass subclass of :class:`pymc.step_methods.compound.StepMethodState`) listing the
    attributes that hold its chain's state, so PyMC's ``sampling_state`` snapshot is complete.

    Attributes
    ----------
    vars : list
        The value variables this step updates (PyMC's contract).
    value_maps : dict
        ``{role: ValueMap}`` for every variable the step knows (updated or only read).
    update_roles : frozenset
        Roles of the variables in ``vars``.
    """

    def __new__(cls, *args, **kwargs):
        """Outside any model (and without ``model=``): a step *class* bound to these arguments.

        ``GibbsNMF()`` written before ``with model:`` (e.g. ``bnmfzoo.inference.sample(model,
        step=GibbsNMF())``) then returns a subclass of ``GibbsNMF`` that builds the step with
        the same arguments inside whatever model it is used in, instead of PyMC's "No model on
        context stack". :func:`bnmfzoo.inference.sample` builds it in its model; a plain
        ``pm.sample(step=...)`` says the step "was not initialized" (build it inside
        ``with model:`` there).
        """
        import pymc as pm

        if kwargs.get("model") is None and pm.Model.get_context(error_if_none=False) is None:
            return _deferred(cls, args, kwargs)
        return super().__new__(cls, *args, **kwargs)

    def _init_variables(self, model, rv_names, vars=None):
        """Resolve ``rv_names`` (``{role: name or None}``) and the user's ``vars`` selection."""
        from pymc.util import get_value_vars_from_user_vars

        self.value_maps = {role: ValueMap(model, name) for role, name in rv_names.items()
                           if name is not None}
        ours = {vm.value_name: role for role, vm in self.value_maps.items()}
        if vars is None:
            vars = [v for v in model.value_vars if v.name in ours]
        vars = get_value_vars_from_user_vars(vars, model)
        unknown = [v.name for v in vars if v.name not in ours]
        if unknown:
            raise ValueError(
                f"{type(self).__name__} can only update {sorted(ours)}; "
                f"got other variables {unknown}"
            )
        self.vars = vars
        self.update_roles = frozenset(ours[v.name] for v in vars)

    def _value_name(self, role):
        return self.value_maps[role].value_name

    def _read(self, point, role):
        """The constrained value of ``role`` in ``point``."""
        return self.value_maps[role].backward(point[self.value_maps[role].value_name])

    def _write(self, point, role, value):
        """Store constrained ``value`` of ``role`` into ``point`` (dtype and shape kept)."""
        name = self.value_maps[role].value_name
        old = point[name]
        point[name] = np.asarray(self.value_maps[role].forward(value),
                                 dtype=old.dtype).reshape(old.shape)
        return point[name]

    @staticmethod
    def competence(var, has_grad):
        """Only used when assigned explicitly (``pm.sample(step=...)``)."""
        from pymc.step_methods.compound import Competence

        return Competence.INCOMPATIBLE


def _deferred(cls, args, kwargs):
    """A subclass of ``cls`` whose instances are built with ``args``/``kwargs`` in a model."""

    def __new__(sub, *a, **k):
        return cls.__new__(sub, *args, *a, **{**kwargs, **k})

    def __init__(self, *a, **k):
        cls.__init__(self, *args, *a, **{**kwargs, **k})

    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    return type(cls.__name__, (cls,), {
        "__new__": __new__, "__init__": __init__, "__module__": cls.__module__,
        # PyMC prints the class when a plain pm.sample gets it: say what to do there
        "__qualname__": f"{cls.__qualname__}({shown}) built outside a model: build it inside "
                        "`with model:`, or pass it to bnmfzoo.inference.sample",
        "__doc__": cls.__doc__,
        "deferred_from": cls})


def model_of_var(var):
    """The model whose step methods PyMC is choosing for ``var`` (for ``competence``).

    PyMC passes ``competence`` only the variable. Inside ``with model:`` that is the model in
    context; ``pm.sample(model=m)`` outside any context enters none, so the model is then read
    from the calling ``assign_step_methods`` frame (its ``model`` argument).
    """
    import sys

    import pymc as pm

    model = pm.Model.get_context(error_if_none=False)
    if model is not None and var in model.free_RVs:
        return model
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "assign_step_methods":
            candidate = frame.f_locals.get("model")
            if isinstance(candidate, pm.Model):
                return candidate
        frame = frame.f_back
    return model


@contextmanager
def pymc_default_steps():
    """Within this block ``pm.sample()`` chooses steps as PyMC alone would (NUTS baselines).

    ``import bnmfzoo`` adds the library's Gibbs steps to ``pymc.step_methods.STEP_METHODS``, so
    ``pm.sample()`` picks them for the models they recognize; a run meant as PyMC's NUTS takes
    them out for its duration (and puts them back).

    Examples
    --------
    >>> from pymc.step_methods import STEP_METHODS
    >>> with pymc_default_steps():
    ...     any(c.__module__.startswith("bnmfzoo.") for c in STEP_METHODS)
    False
    """
    from pymc.step_methods import STEP_METHODS

    removed = [c for c in STEP_METHODS if c.__module__.startswith("bnmfzoo.")]
    for c in removed:
        STEP_METHODS.remove(c)
    try:
        yield
    finally:
        STEP_METHODS.extend(c for c in removed if c not in STEP_METHODS)
