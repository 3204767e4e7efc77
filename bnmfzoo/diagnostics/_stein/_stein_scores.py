r"""Score of a PyMC model's log joint, compiled once and evaluated at many points (PyMC glue).

The score :math:`\nabla_\theta \log p(\theta, X)` is the only model-dependent input of the
kernelized Stein discrepancy (Liu, Lee & Jordan 2016; Masood & Doshi-Velez 2019, eq. 3). Two
coordinate systems are offered:

* ``"unconstrained"``: PyMC's value variables (``A_log__``, ``A_simplex__``, ...) and the log
  density *with* the transform's log-Jacobian. The target has full support on
  :math:`\mathbb R^d`, so Stein's identity :math:`\mathbb E_p[\mathcal T_p f] = 0` holds and the
  KSD is a valid discrepancy (Gorham & Mackey 2017). Points on a boundary of the constrained
  support (an exact zero, a simplex face) have no image here: see :func:`floor_points`.
* ``"constrained"``: the constrained values in ambient coordinates and the density *without*
  the Jacobian, Dirichlet columns treated as free coordinates (Masood & Doshi-Velez 2019,
  Section 3). Stein's identity fails there (a boundary term remains), so this space is kept only
  to reproduce the paper.
"""

from collections.abc import Mapping

import numpy as np

from bnmfzoo._base.progress import progress

__all__ = ["SPACES", "ScoreFunction", "floor_points", "score_function"]

SPACES = ("constrained", "unconstrained")
_CACHE_ATTR = "_bnmfzoo_score_cache"


def _default_mode():
    """Python-VM mode with the fast_run rewrites except fusion: compiles in seconds, no JIT.

    A score graph is called a few hundred times at most; numba's cold compile (30-130 s on these
    machines) would dominate, while the Python VM costs about a millisecond per call on small
    models and is dominated by BLAS/NumPy on large ones (faces-sized 4096 x 400: one call per
    particle, ``benchmarks/bench_stein.py``). A batched graph (``vectorize_graph`` over points)
    was measured slower in this mode and needs ``M`` times the memory, so points are looped.
    """
    from pytensor.compile.mode import Mode
    from pytensor.link.vm import VMLinker

    # no elementwise fusion: the Python implementation of a fused Composite loops per element
    return Mode(VMLinker(use_cloop=False, c_thunks=False), "fast_run").excluding(
        "fusion", "elemwise_fusion", "add_mul_fusion"
    )


class ScoreFunction:
    """Compiled score of a PyMC model, evaluated at batches of points.

    Build it with :func:`score_function`. Calling it maps a batch of points to scores ``(M, d)``;
    :meth:`positions` maps the same points to the coordinates ``(M, d)`` in which the score is
    taken (identical to the values in ``"constrained"`` space, the transformed values in
    ``"unconstrained"`` space). The flattening order is fixed: the variables in
    :attr:`var_names` order, each raveled in C order; :attr:`blocks` gives each variable's slice.

    Attributes
    ----------
    model : pymc.Model
    space : {"constrained", "unconstrained"}
    var_names : tuple of str
        Free random variables whose score is returned (block names for the base kernel).
    input_names : tuple of str
        Every free random variable: the log joint needs all of them, so every point must give a
        value for each (in constrained space, keyed by the variable name).
    shapes : dict of str to tuple
        Shape of each block in ``space`` (a Dirichlet of size D has D-1 unconstrained values).
    blocks : dict of str to slice
        Slice of each block in the flattened ``d`` coordinates.
    dim : int
        ``d``, the total number of coordinates.
    """

    def __init__(self, model, *, var_names=None, space="constrained", mode=None):
        import pymc as pm
        import pytensor.tensor as pt

        if not isinstance(model, pm.Model):
            raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
        if space not in SPACES:
            raise ValueError(f"space must be 'constrained' or 'unconstrained', got {space!r}")
        free = list(model.free_RVs)
        if not free:
            raise ValueError("model has no free random variables: there is no score to take")
        all_names = [rv.name for rv in free]
        if var_names is None:
            var_names = all_names
        elif isinstance(var_names, str):
            var_names = [var_names]
        var_names = list(var_names)
        unknown = [n for n in var_names if n not in all_names]
        if unknown:
            raise ValueError(
                f"var_names {unknown} are not free random variables of the model ({all_names})"
            )
        if len(set(var_names)) != len(var_names):
            raise ValueError(f"var_names has duplicates: {var_names}")
        for name in var_names:
            if not model[name].dtype.startswith("float"):
                raise TypeError(
                    f"variable {name!r} is discrete ({model[name].dtype}); the Stein score needs "
                    "continuous variables: leave it out of var_names"
                )
        self.model = model
        self.space = space
        self.var_names = tuple(var_names)
        self.input_names = tuple(all_names)
        self.mode = _default_mode() if mode is None else mode
        rv_shapes = {k: tuple(int(s) for s in v) for k, v in model.eval_rv_shapes().items()}
        self.rv_shapes = {n: rv_shapes[n] for n in all_names}
        self.rv_dtypes = {rv.name: rv.dtype for rv in free}

        if space == "constrained":
            from pymc.model.transform.conditioning import remove_value_transforms

            plain = remove_value_transforms(model)
            by_name = {plain.values_to_rvs[v].name: v for v in plain.value_vars}
            inputs = [by_name[n] for n in all_names]
            logp = plain.logp(jacobian=False)
            wrt = [by_name[n] for n in var_names]
            self.shapes = {n: self.rv_shapes[n] for n in var_names}
            self._forward = None
        else:
            value_of = {rv.name: model.rvs_to_values[rv] for rv in free}
            inputs = [value_of[n] for n in all_names]
            logp = model.logp(jacobian=True)
            wrt = [value_of[n] for n in var_names]
            self.value_names = {n: value_of[n].name for n in all_names}
            self.shapes = {n: rv_shapes[value_of[n].name] for n in var_names}
            self._forward = self._compile_forward(model, free)
        grads = pt.grad(logp, wrt)
        self._grad = pm.pytensorf.compile(
            inputs, [logp, *grads], mode=self.mode, on_unused_input="ignore", random_seed=False
        )
        sizes = [int(np.prod(self.shapes[n], dtype=int)) for n in var_names]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.blocks = {
            n: slice(int(offsets[i]), int(offsets[i + 1])) for i, n in enumerate(var_names)
        }
        self.dim = int(offsets[-1])

    def _compile_forward(self, model, free):
        """Compile constrained values -> unconstrained values of every free variable."""
        import pymc as pm
        import pytensor.tensor as pt
        from pytensor.graph.replace import graph_replace

        const = {
            rv.name: pt.tensor(
                f"{rv.name}_constrained", shape=self.rv_shapes[rv.name], dtype=rv.dtype
            )
            for rv in free
        }
        outs = []
        for rv in free:
            transform = model.rvs_to_transforms.get(rv)
            if transform is None:
                outs.append(const[rv.name])
            else:
                outs.append(transform.forward(rv, *rv.owner.inputs))
        outs = graph_replace(outs, {rv: const[rv.name] for rv in free}, strict=False)
        return pm.pytensorf.compile(
            [const[n] for n in self.input_names],
            outs,
            mode=self.mode,
            on_unused_input="ignore",
            random_seed=False,
        )

    # -- points -------------------------------------------------------------------------------
    def _check_points(self, points):
        if not isinstance(points, Mapping):
            raise TypeError(
                f"points must be a dict of variable name -> array (M, ...), got "
                f"{type(points).__name__}"
            )
        missing = [n for n in self.input_names if n not in points]
        if missing:
            raise ValueError(
                f"points lack values for free variables {missing}; the log joint needs every "
                f"free variable ({list(self.input_names)}) in constrained space"
            )
        arrays = {}
        m = None
        for name in self.input_names:
            arr = np.asarray(points[name], dtype=self.rv_dtypes[name])
            shape = self.rv_shapes[name]
            if arr.shape[1:] != shape:
                raise ValueError(
                    f"points[{name!r}] must have shape (M, {', '.join(map(str, shape))}) "
                    f"(M points of the model's shape {shape}), got {arr.shape}"
                )
            if m is None:
                m = arr.shape[0]
            elif arr.shape[0] != m:
                raise ValueError(
                    f"points[{name!r}] has {arr.shape[0]} points, other variables have {m}"
                )
            arrays[name] = arr
        if m == 0:
            raise ValueError("points must hold at least one point")
        return arrays, m

    def _inputs_at(self, arrays, i):
        return [np.asarray(arrays[n][i]) for n in self.input_names]

    def _unconstrained_at(self, arrays, i):
        vals = [np.asarray(v) for v in self._forward(*self._inputs_at(arrays, i))]
        for name, v in zip(self.input_names, vals):
            if not np.isfinite(v).all():
                raise ValueError(
                    f"point {i} has no unconstrained image: variable {name!r} maps to "
                    "non-finite values (an exact zero of a positive variable, a simplex entry "
                    "of 0, or a value outside the support); pass floor > 0 to move such points "
                    "off the boundary, or use space='constrained'"
                )
        return vals

    def positions(self, points):
        """Coordinates ``(M, d)`` of the points in the score's space (same order as scores)."""
        arrays, m = self._check_points(points)
        out = np.empty((m, self.dim))
        if self._forward is None:
            for name in self.var_names:
                out[:, self.blocks[name]] = arrays[name].reshape(m, -1)
            return out
        idx = {n: self.input_names.index(n) for n in self.var_names}
        for i in range(m):
            vals = self._unconstrained_at(arrays, i)
            for name in self.var_names:
                out[i, self.blocks[name]] = np.ravel(vals[idx[name]])
        return out

    def __call__(self, points, *, progressbar=False):
        """Scores ``(M, d)`` of the points (``points``: dict name -> array ``(M, ...)``)."""
        arrays, m = self._check_points(points)
        out = np.empty((m, self.dim))
        for i in progress(range(m), total=m, desc="Stein scores", progressbar=progressbar):
            args = self._inputs_at(arrays, i)
            if self._forward is not None:
                args = self._unconstrained_at(arrays, i)
            logp, *grads = self._grad(*args)
            if not np.isfinite(logp):
                raise ValueError(
                    f"the log density is {float(logp)} at point {i}: the point is outside the "
                    "model's support or on a zero-density boundary (e.g. a negative value for a "
                    "positive variable, a column off the simplex, a zero under Dirichlet(a > 1))"
                )
            for name, g in zip(self.var_names, grads):
                out[i, self.blocks[name]] = np.ravel(g)
        bad = ~np.isfinite(out)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            name = next(n for n, s in self.blocks.items() if s.start <= j < s.stop)
            raise ValueError(
                f"the score is not finite at point {i} (variable {name!r}, {int(bad.sum())} "
                "non-finite entries) although the log density is finite there"
            )
        return out

    def __repr__(self):
        return (
            f"ScoreFunction(space={self.space!r}, var_names={list(self.var_names)}, d={self.dim})"
        )


def score_function(model, *, var_names=None, space="constrained", mode=None):
    r"""Compile the score of a PyMC model's log joint, once, for evaluation at many points.

    Works for any ``pm.Model`` (ours or a user's own priors and likelihoods, including
    ``pm.Potential`` terms). The score is the gradient of the log joint
    :math:`\log p(\theta) + \log p(X \mid \theta)` (the unnormalized log posterior).

    * ``space="constrained"`` (default here, for the particle optimizers' dynamics; the
      discrepancy front ends default to ``"unconstrained"``): the density of the constrained
      parameters, *without* the transform Jacobian, differentiated with respect to the
      constrained values in ambient coordinates. Points on a boundary of the support (e.g. an
      exact zero of an ``Exponential``) are fine as long as the density is differentiable there.
      For a ``Dirichlet`` variable (the SILF model's columns of A) every coordinate of the simplex
      vector is a coordinate of :math:`\theta` and the score is the ambient gradient
      :math:`(\alpha - 1)/a` of the Dirichlet density plus the likelihood gradient, ignoring
      the sum-to-one constraint (as Masood & Doshi-Velez 2019 apply the Euclidean KSD, Section
      3). For :math:`\alpha = 1` the prior term is zero. Stein's identity does not hold in these
      coordinates (the boundary term of the integration by parts remains), so a KSD built on
      them is not a valid discrepancy.
    * ``space="unconstrained"``: PyMC's value space (``A_log__``, ``A_simplex__``, ...), the
      log density *with* the Jacobian, differentiated with respect to the transformed values. A
      Dirichlet of size D then has D-1 coordinates. The target has full support there and
      Stein's identity holds (Gorham & Mackey 2017); points with exact zeros have no image (see
      :func:`floor_points`).

    Parameters
    ----------
    model : pymc.Model
    var_names : list of str, optional
        Free random variables whose score is returned; default all free variables, in the
        model's order. Every free variable must still be given a value in each point.
    space : {"constrained", "unconstrained"}
    mode : pytensor Mode or str, optional
        Compilation mode. Default: the Python VM with the ``fast_run`` rewrites except
        elementwise fusion (seconds to compile, about a millisecond per call on small models);
        ``"NUMBA"`` is faster per call but can take a minute or two to compile cold.

    Returns
    -------
    ScoreFunction
        Callable mapping a dict name -> array ``(M, ...)`` (constrained values) to an array
        ``(M, d)``, with ``.positions(points)``, ``.blocks`` and ``.var_names``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from bnmfzoo.diagnostics import score_function
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 2.0, shape=3)
    >>> score = score_function(model)
    >>> score({"x": np.ones((2, 3))}).round(2)
    array([[-0.25, -0.25, -0.25],
           [-0.25, -0.25, -0.25]])
    """
    return ScoreFunction(model, var_names=var_names, space=space, mode=mode)


def _cached_score_function(model, *, var_names, space, mode):
    """Score functions are cached on the model (keyed by its free variables and the options)."""
    if mode is not None:
        return score_function(model, var_names=var_names, space=space, mode=mode)
    names = None if var_names is None else tuple([var_names] if isinstance(var_names, str)
                                                 else var_names)
    key = (tuple(rv.name for rv in model.free_RVs), names, space)
    cache = getattr(model, _CACHE_ATTR, None)
    if cache is None:
        cache = {}
        try:
            setattr(model, _CACHE_ATTR, cache)
        except AttributeError:  # pragma: no cover - exotic model classes
            pass
    if key not in cache:
        cache[key] = score_function(model, var_names=var_names, space=space)
    return cache[key]



def _transform_kind(model, name):
    """``("log", None)``, ``("simplex", axis)``, ``("other", None)`` or ``(None, None)``."""
    from pymc.logprob.transforms import SimplexTransform

    rv = model[name]
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return None, None
    if isinstance(transform, SimplexTransform):
        try:
            from bnmfzoo.models.silf_dirichlet import ColumnSimplexTransform
        except ImportError:  # pragma: no cover
            ColumnSimplexTransform = ()
        return "simplex", (-2 if isinstance(transform, ColumnSimplexTransform) else -1)
    if type(transform).__name__ == "LogTransform":
        return "log", None
    return "other", None


def floor_points(model, points, floor):
    r"""Move points off the boundary of the support so that they have an unconstrained image.

    A log-transformed variable ``x`` (positive support) becomes :math:`\max(x, f \bar x)` with
    :math:`\bar x` the mean of that variable over all points and entries; a simplex variable
    (Dirichlet, or the SILF model's Dirichlet columns) becomes :math:`\max(a, f / K)` (``K``
    the simplex size, so ``1/K`` is its mean entry) and is then renormalized along the simplex
    axis. Entries already above the floor are unchanged, except for the renormalization of a
    simplex vector that had an entry raised. Other variables are left as they are.

    Parameters
    ----------
    model : pymc.Model
    points : dict of str to numpy.ndarray
        Constrained values ``(M, ...)`` of every free variable.
    floor : float
        Relative floor ``f`` in ``[0, 1)``; 0 leaves the points unchanged.

    Returns
    -------
    (dict, dict)
        The floored points and the number of raised entries per variable.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from bnmfzoo.diagnostics._stein._stein_scores import floor_points
    >>> with pm.Model() as model:
    ...     x = pm.Exponential("x", 1.0, shape=2)
    >>> pts, n = floor_points(model, {"x": np.array([[0.0, 2.0], [1.0, 1.0]])}, 1e-3)
    >>> float(pts["x"][0, 0]), n
    (0.001, {'x': 1})
    """
    floor = float(floor)
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must lie in [0, 1), got {floor}")
    out, raised = {}, {}
    for name, arr in points.items():
        arr = np.asarray(arr, dtype=float)
        kind, axis = _transform_kind(model, name) if name in model.named_vars else (None, None)
        if floor == 0.0 or kind not in ("log", "simplex"):
            out[name] = arr
            continue
        if kind == "log":
            low = floor * float(np.mean(np.clip(arr, 0.0, None)))
            hit = arr < low
            out[name] = np.where(hit, low, arr)
        else:
            low = floor / arr.shape[axis]
            hit = arr < low
            a = np.where(hit, low, arr)
            touched = hit.any(axis=axis, keepdims=True)
            out[name] = np.where(touched, a / a.sum(axis=axis, keepdims=True), arr)
        raised[name] = int(hit.sum())
    return out, raised
