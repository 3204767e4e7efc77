"""Small helpers that read a PyMC model's PyTensor graph without compiling anything.

:func:`evaluate` runs a graph node by node with each op's own ``perform`` (NumPy), with chosen
values substituted for chosen variables (e.g. a random variable replaced by a test value). Graphs
read during recognition are small (a prior's parameters, the likelihood's mean), so this costs
milliseconds where compiling a PyTensor function costs a tenth of a second or more.
"""

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from pytensor.scalar.basic import Reciprocal
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.type_other import NoneTypeT

__all__ = ["evaluate", "depends_on", "reciprocal_of", "rv_params", "shape_of", "probe_env",
           "observed_data", "data_identity"]


def evaluate(var, env=None, memo=None):
    """Value of the PyTensor variable ``var`` with ``env`` (``{variable: value}``) substituted.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> x = pt.vector("x")
    >>> float(evaluate((2 * x).sum(), {x: np.arange(3.0)}))
    6.0
    """
    env = env or {}
    memo = {} if memo is None else memo
    stack = [var]
    while stack:
        v = stack[-1]
        if v in memo:
            stack.pop()
            continue
        if v in env:
            memo[v] = np.asarray(env[v])
        elif isinstance(v, Constant):
            memo[v] = v.data
        elif isinstance(v, SharedVariable):
            memo[v] = v.get_value(borrow=True)
        elif v.owner is None:
            raise ValueError(f"the graph needs a value for the input {v!r}")
        else:
            missing = [i for i in v.owner.inputs if i not in memo]
            if missing:
                stack.extend(missing)
                continue
            node = v.owner
            storage = [[None] for _ in node.outputs]
            node.op.perform(node, [memo[i] for i in node.inputs], storage)
            for out, cell in zip(node.outputs, storage, strict=True):
                memo[out] = cell[0]
        stack.pop()
    return memo[var]


def observed_data(model, obs):
    """The observed values of the likelihood ``obs`` of ``model`` as a NumPy array.

    The value is a constant, a shared variable (``pm.Data``) or a graph of them: PyMC casts
    ``pm.Data`` of floats to the integer type of a count likelihood.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.Data("x", np.array([1.0, 2.0]))
    ...     _ = pm.Poisson("X", mu=1.0, observed=x)
    >>> observed_data(model, model["X"]).tolist()
    [1, 2]
    """
    return np.asarray(evaluate(model.rvs_to_values[obs]))


def data_identity(model, obs):
    """Identities of the arrays behind the observed values of ``obs`` (changes with set_data)."""
    value = model.rvs_to_values[obs]
    shared = [v for v in ancestors([value]) if isinstance(v, SharedVariable)]
    return tuple(id(v.get_value(borrow=True)) for v in shared) or (id(value),)


def depends_on(var, candidates):
    """The members of ``candidates`` that ``var`` depends on (the search stops at them)."""
    candidates = list(candidates)
    found = set(ancestors([var], blockers=candidates))
    return [c for c in candidates if c in found and c is not var]


def reciprocal_of(var):
    """``x`` when ``var`` is ``reciprocal(x)`` (how PyMC stores ``1 / rate``), else None."""
    node = var.owner
    if node is not None and isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op,
                                                                        Reciprocal):
        return node.inputs[0]
    return None


def rv_params(rv):
    """The distribution parameters of the random variable ``rv`` (PyTensor variables)."""
    node = rv.owner
    return list(node.op.dist_params(node))


def shape_of(rv, memo):
    """Shape of the random variable ``rv`` (static, else its ``size``, else its parameters)."""
    if rv in memo:
        return memo[rv]
    if all(s is not None for s in rv.type.shape):
        shape = tuple(int(s) for s in rv.type.shape)
    else:
        size = rv.owner.inputs[1]
        size_value = None if isinstance(size.type, NoneTypeT) else evaluate(size)
        if size_value is not None and np.ndim(size_value) > 0:
            shape = tuple(int(s) for s in np.atleast_1d(size_value))
        else:
            env = probe_env(rv_params(rv), memo)
            shapes = [np.shape(evaluate(p, env)) for p in rv_params(rv)]
            shape = tuple(int(s) for s in np.broadcast_shapes(*shapes))
    memo[rv] = shape
    return shape


def probe_env(graphs, memo, fill=1.0):
    """Values (``fill``) for the random variables ``graphs`` depend on (any upstream RVs)."""
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.random.op import RandomVariable

    env = {}
    for var in ancestors(graphs):
        node = var.owner
        if node is not None and isinstance(node.op, RandomVariable) and var is node.outputs[1]:
            env[var] = np.full(shape_of(var, memo), fill)
    return env
