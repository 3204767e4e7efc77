r"""Kernelized Stein discrepancy (KSD) of a set of (weighted) points against any PyMC model.

Masood & Doshi-Velez (2019), Section 3 and 6.1. Three layers:

* :func:`score_function` compiles the score :math:`\nabla_\theta \log p(\theta, X)` of a
  ``pm.Model`` once (PyTensor) and evaluates it at many points;
* :func:`stein_kernel_matrix` is the NumPy core: the Stein kernel (eq. 3) of a block-radial base
  kernel in closed form, for all pairs at once from Gram matrices (no loop over pairs);
* :func:`stein_discrepancy` glues them to raw arrays or DataTrees (posterior draws or the
  ``particles`` group of a particle fit) and reports :math:`\mathbb S = w^\top K w`.

Definition (paper eq. 4, V-statistic, diagonal included):
:math:`\mathbb S_p(q) = \sum_{ij} w_i w_j \mathcal K_p(\theta_i, \theta_j)`. We report this
squared quantity, *not* its square root, as the paper does. Its absolute value scales with the
number of parameters (the diagonal is about :math:`5000\,DR` for the default kernel), so compare
KSDs only within one dataset and model.
"""

from collections.abc import Mapping

import numpy as np
import xarray as xr

from bnmfzoo._progress import progress
from bnmfzoo.diagnostics._kernels import (
    IMQ,
    PAPER_B,
    PAPER_C,
    BlockKernel,
    Gaussian,
    RadialKernel,
    imq_kernel,
)

__all__ = [
    "IMQ",
    "PAPER_B",
    "PAPER_C",
    "BlockKernel",
    "Gaussian",
    "RadialKernel",
    "ScoreFunction",
    "imq_kernel",
    "score_function",
    "stein_discrepancy",
    "stein_kernel_matrix",
]

SPACES = ("constrained", "unconstrained")
_CACHE_ATTR = "_bnmfzoo_score_cache"
KSD_DEFINITION = "w^T K w (V-statistic incl. diagonal; Masood & Doshi-Velez 2019, eq. 4)"


# ----------------------------------------------------------------------------------------------
# Score function (PyMC glue)
# ----------------------------------------------------------------------------------------------
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
            vals = self._forward(*self._inputs_at(arrays, i))
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
                args = [np.asarray(v) for v in self._forward(*args)]
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

    * ``space="constrained"`` (the paper's choice, default): the density of the constrained
      parameters, *without* the transform Jacobian, differentiated with respect to the
      constrained values in ambient coordinates. Points on a boundary of the support (e.g. an
      exact zero of an ``Exponential`` with a log transform) are fine as long as the density is
      differentiable there. For a ``Dirichlet`` variable (the SILF model's columns of A) every
      coordinate of the simplex vector is a coordinate of :math:`\theta` and the score is the
      ambient gradient :math:`(\alpha - 1)/a` of the Dirichlet density plus the likelihood
      gradient, ignoring the sum-to-one constraint (Masood & Doshi-Velez 2019 apply the Euclidean
      KSD this way, Sec. 3). For :math:`\alpha = 1` the prior term is zero.
    * ``space="unconstrained"``: PyMC's value space (``A_log__``, ``A_simplex__``, ...), the
      log density *with* the Jacobian, differentiated with respect to the transformed values. A
      Dirichlet of size D then has D-1 coordinates. Stein's identity holds exactly there (no
      boundaries), at the price of a kernel on transformed coordinates; points with exact
      zeros (common in NMF solutions) have no unconstrained image, so use the default there.

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


# ----------------------------------------------------------------------------------------------
# Closed-form Stein kernel matrix (NumPy core)
# ----------------------------------------------------------------------------------------------
def _as_blocks(positions, scores, blocks):
    """Normalize inputs to (dict name -> (M, d_g) positions, same for scores)."""
    if isinstance(positions, Mapping) != isinstance(scores, Mapping):
        raise TypeError("positions and scores must both be dicts or both be arrays")
    if isinstance(positions, Mapping):
        if set(positions) != set(scores):
            raise ValueError(
                f"positions and scores have different blocks: {sorted(positions)} vs "
                f"{sorted(scores)}"
            )
        pos = {}
        sco = {}
        for name in positions:
            p = np.asarray(positions[name], dtype=float)
            s = np.asarray(scores[name], dtype=float)
            if p.shape != s.shape or p.ndim < 1:
                raise ValueError(
                    f"positions[{name!r}] and scores[{name!r}] must have the same shape "
                    f"(M, ...), got {p.shape} and {s.shape}"
                )
            pos[name] = p.reshape(len(p), -1)
            sco[name] = s.reshape(len(s), -1)
    else:
        p = np.asarray(positions, dtype=float)
        s = np.asarray(scores, dtype=float)
        if p.ndim != 2 or p.shape != s.shape:
            raise ValueError(
                f"positions and scores must be arrays of the same shape (M, d), got "
                f"{p.shape} and {s.shape}"
            )
        if blocks is None:
            blocks = {"theta": slice(None)}
        pos = {name: p[:, sl] for name, sl in blocks.items()}
        sco = {name: s[:, sl] for name, sl in blocks.items()}
        covered = np.zeros(p.shape[1], dtype=int)
        for sl in blocks.values():
            covered[sl] += 1
        if (covered != 1).any():
            raise ValueError("blocks must cover every coordinate of positions exactly once")
    ms = {v.shape[0] for v in pos.values()}
    if len(ms) != 1:
        raise ValueError(f"all blocks must have the same number of points, got {sorted(ms)}")
    if 0 in ms:
        raise ValueError("positions must hold at least one point")
    for name in pos:
        if not (np.isfinite(pos[name]).all() and np.isfinite(sco[name]).all()):
            raise ValueError(f"positions/scores of block {name!r} contain NaN or infinite values")
    return pos, sco


def stein_kernel_matrix(positions, scores, *, blocks=None, kernel=None):
    r"""Stein kernel matrix :math:`K_{ij} = \mathcal K_p(\theta_i, \theta_j)` in closed form.

    Eq. 3 of Masood & Doshi-Velez (2019) for a block-radial base kernel
    :math:`k = F(r^2_1, \dots, r^2_G)`, with :math:`\Delta = \theta - \theta'`:

    .. math::

        \mathcal K_p = \langle S, S'\rangle k
        + \sum_g 2F_g \langle S'_g - S_g, \Delta_g\rangle
        + \sum_g \left[-2 d_g F_g - 4 r_g^2 F_{gg}\right],

    evaluated for all pairs from Gram matrices (:math:`\lVert\Delta_g\rVert^2` from norms and
    :math:`\theta\theta^\top`, :math:`\langle S'_g - S_g, \Delta_g\rangle` from
    :math:`S\theta^\top`) after centering each block. Cost :math:`O(M^2 d)` in BLAS calls,
    memory :math:`O(M^2 + Md)`.

    Parameters
    ----------
    positions, scores : numpy.ndarray or dict of str to numpy.ndarray
        Either arrays ``(M, d)`` split by ``blocks``, or dicts block name -> array ``(M, ...)``.
    blocks : dict of str to slice, optional
        Block name -> slice of the ``d`` coordinates (e.g. ``ScoreFunction.blocks``). Default one
        block named ``"theta"``.
    kernel : object with ``evaluate(sqdist) -> (k, d1, d2)``, optional
        The base kernel (see :mod:`bnmfzoo.diagnostics._kernels`). Default :func:`imq_kernel`:
        normalized IMQ kernels summed over blocks, ``c_A = 1e-2``, ``c_W = 1e3``, ``b = -0.5``
        (other blocks ``c = 1``).

    Returns
    -------
    numpy.ndarray
        Symmetric positive semi-definite ``(M, M)`` matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics import stein_kernel_matrix
    >>> x = np.random.default_rng(0).normal(size=(5, 2))
    >>> K = stein_kernel_matrix(x, -x)  # standard normal target: score -x
    >>> K.shape, bool(np.allclose(K, K.T))
    ((5, 5), True)
    """
    kernel = imq_kernel() if kernel is None else kernel
    if not hasattr(kernel, "evaluate"):
        raise TypeError(
            f"kernel must provide evaluate(sqdist) -> (k, d1, d2) (e.g. a BlockKernel), got "
            f"{kernel!r}"
        )
    pos, sco = _as_blocks(positions, scores, blocks)
    sqdist = {}
    cross = {}
    dims = {}
    score_gram = 0.0
    for name, x in pos.items():
        s = sco[name]
        x = x - x.mean(axis=0)  # translation invariant; limits cancellation in the Gram trick
        sq = np.einsum("ij,ij->i", x, x)
        r2 = sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)
        np.maximum(r2, 0.0, out=r2)
        np.fill_diagonal(r2, 0.0)
        sqdist[name] = r2
        sx = s @ x.T  # sx[i, j] = <S_i, theta_j>
        dsx = np.diag(sx)
        # <S_j - S_i, theta_i - theta_j> for the pair (i, j)
        cross[name] = sx + sx.T - dsx[:, None] - dsx[None, :]
        dims[name] = x.shape[1]
        score_gram = score_gram + s @ s.T
    k, d1, d2 = kernel.evaluate(sqdist)
    K = score_gram * k
    for name in pos:
        K += 2.0 * d1[name] * cross[name]
        K += -2.0 * dims[name] * d1[name] - 4.0 * sqdist[name] * d2[name]
    return 0.5 * (K + K.T)


# ----------------------------------------------------------------------------------------------
# Points from arrays and DataTrees
# ----------------------------------------------------------------------------------------------
def _dataset_points(ds, names, model, sample_dims, group):
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(
            f"the {group!r} group lacks the model's free variables {missing}; it has "
            f"{sorted(ds.data_vars)}"
        )
    dims_of = getattr(model, "named_vars_to_dims", {}) or {}
    out = {}
    for name in names:
        da = ds[name]
        absent = [d for d in sample_dims if d not in da.dims]
        if absent:
            raise ValueError(f"variable {name!r} of group {group!r} lacks the dims {absent}")
        model_dims = dims_of.get(name)
        if model_dims and all(d is not None and d in da.dims for d in model_dims):
            da = da.transpose(*sample_dims, *model_dims)
        else:
            da = da.transpose(*sample_dims, ...)
        vals = np.asarray(da.values)
        out[name] = vals.reshape((-1,) + vals.shape[len(sample_dims):])
    return out


def _collect_points(points, model, names, *, group, max_points):
    """Return (points dict, stored weights or None, sample dim name, DataTree or None)."""
    dt = None
    if isinstance(points, xr.DataTree):
        dt = points
        if group not in dt.children:
            raise ValueError(
                f"the DataTree has no {group!r} group (groups: {sorted(dt.children)}); pass "
                "group='posterior' or group='particles'"
            )
        ds = dt[group].to_dataset()
    elif isinstance(points, xr.Dataset):
        ds = points
    elif isinstance(points, Mapping):
        return {k: np.asarray(v) for k, v in points.items()}, None, "particle", None
    else:
        raise TypeError(
            "points must be a dict name -> array (M, ...), an xarray.Dataset or an "
            f"xarray.DataTree, got {type(points).__name__}"
        )
    weights = None
    if "particle" in ds.dims and ("chain" not in ds.dims or group == "particles"):
        arrays = _dataset_points(ds, names, model, ("particle",), group)
        if "weight" in ds.data_vars:
            weights = np.asarray(ds["weight"].transpose("particle").values, dtype=float)
        dim = "particle"
    elif "chain" in ds.dims and "draw" in ds.dims:
        arrays = _dataset_points(ds, names, model, ("chain", "draw"), group)
        dim = "stein_sample"
    else:
        raise ValueError(
            f"group {group!r} has neither (chain, draw) nor particle dims: {dict(ds.sizes)}"
        )
    m = len(next(iter(arrays.values())))
    if dim == "stein_sample" and max_points is not None and m > max_points:
        idx = np.unique(np.linspace(0, m - 1, int(max_points)).round().astype(int))
        arrays = {k: v[idx] for k, v in arrays.items()}
        if weights is not None:
            weights = weights[idx]
    return arrays, weights, dim, dt


def _normalize_weights(weights, m, name="weights"):
    w = np.asarray(weights, dtype=float)
    if w.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},) (one per point), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    total = w.sum()
    if total <= 0:
        raise ValueError(f"{name} must not all be zero")
    return w / total


def _store_diagnostics(dt, values):
    """Add/replace variables in the DataTree's ``diagnostics`` group (in place)."""
    if "diagnostics" in dt.children:
        ds = dt["diagnostics"].to_dataset()
    else:
        ds = xr.Dataset()
    for name, da in values.items():
        drop = [name] if name in ds.data_vars else []
        for dim, size in da.sizes.items():
            if dim in ds.dims and ds.sizes[dim] != size:
                drop += [v for v in ds.data_vars if dim in ds[v].dims]
                ds = ds.drop_vars([c for c in ds.coords if dim in ds[c].dims])
        ds = ds.drop_vars(sorted(set(drop)))
        ds[name] = da
    dt["diagnostics"] = xr.DataTree(ds)
    return dt


# ----------------------------------------------------------------------------------------------
# Public front end
# ----------------------------------------------------------------------------------------------
def _ksd_and_matrix(
    model, points, *, kernel, space, var_names, group, max_points, score_fn, progressbar
):
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    if group not in ("posterior", "particles"):
        raise ValueError(f"group must be 'posterior' or 'particles', got {group!r}")
    if max_points is not None and (int(max_points) != max_points or max_points < 1):
        raise ValueError(f"max_points must be a positive integer or None, got {max_points!r}")
    if score_fn is None:
        score_fn = _cached_score_function(model, var_names=var_names, space=space, mode=None)
    elif not isinstance(score_fn, ScoreFunction):
        raise TypeError(f"score_fn must be a ScoreFunction, got {type(score_fn).__name__}")
    elif score_fn.model is not model:
        raise ValueError("score_fn was compiled for a different model")
    arrays, stored, dim, dt = _collect_points(
        points, model, score_fn.input_names, group=group, max_points=max_points
    )
    scores = score_fn(arrays, progressbar=progressbar)
    pos = score_fn.positions(arrays)
    K = stein_kernel_matrix(pos, scores, blocks=score_fn.blocks, kernel=kernel)
    return K, stored, dim, dt, score_fn


def stein_discrepancy(
    model,
    points,
    *,
    weights=None,
    kernel=None,
    space="constrained",
    var_names=None,
    group="posterior",
    max_points=500,
    score_fn=None,
    return_matrix=False,
    store=True,
    progressbar=True,
):
    r"""Kernelized Stein discrepancy of a weighted set of points against a PyMC model's posterior.

    :math:`\mathbb S = w^\top K w` with :math:`K_{ij} = \mathcal K_p(\theta_i, \theta_j)`
    the Stein kernel (Masood & Doshi-Velez 2019, eqs. 3-4; V-statistic, diagonal included). We
    report this quantity itself, not its square root (take ``np.sqrt`` for the other
    convention). Lower is better; it is zero only if the points reproduce the posterior. Values
    scale with the number of parameters and are comparable only within one model and dataset.

    Parameters
    ----------
    model : pymc.Model
        Any PyMC model; its free variables are the parameters :math:`\theta`.
    points : dict, xarray.Dataset or xarray.DataTree
        A dict name -> array ``(M, ...)`` (constrained values of every free variable); or a
        DataTree whose ``group`` holds them: ``"posterior"`` draws are stacked over
        ``(chain, draw)`` and thinned evenly to at most ``max_points``; the ``"particles"``
        group (dim ``particle``) of a particle fit supplies its ``weight`` variable.
    weights : None, "uniform", "optimal" or array-like, optional
        Weights of the points: default the particles' stored ``weight`` (if any), else uniform;
        ``"optimal"`` minimizes the KSD over the simplex (:func:`stein_weights`); an array is
        normalized to sum to one.
    kernel : BlockKernel or object with ``evaluate``, optional
        Base kernel; default :func:`imq_kernel` (the paper's sum of two normalized IMQ kernels,
        ``c_A = 1e-2``, ``c_W = 1e3``, ``b = -0.5``; blocks are the free variables' names,
        other blocks such as a free ``tau`` get ``c = 1`` and all blocks equal weights).
    space : {"constrained", "unconstrained"}
        Where scores and kernel distances are taken; see :func:`score_function`.
    var_names : list of str, optional
        Free variables forming :math:`\theta` (default all).
    group : {"posterior", "particles"}
        Group read from a DataTree.
    max_points : int or None
        Thin posterior draws evenly to at most this many points (K is ``M x M``); particles
        are never thinned.
    score_fn : ScoreFunction, optional
        A precompiled score function of ``model`` (otherwise one is compiled and cached on the
        model).
    return_matrix : bool
        Also return the Stein kernel matrix ``K``.
    store : bool
        For a DataTree input, write ``stein_discrepancy`` (scalar) and, for optimal weights,
        ``stein_weights`` (over ``particle``, or ``stein_sample`` for posterior draws) into its
        ``diagnostics`` group, in place.
    progressbar : bool
        Show a progress bar while the scores are evaluated.

    Returns
    -------
    float or (float, numpy.ndarray)
        :math:`w^\top K w`, and ``K`` if ``return_matrix``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from bnmfzoo.diagnostics import stein_discrepancy
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0, shape=2)
    >>> rng = np.random.default_rng(0)
    >>> spread = stein_discrepancy(model, {"x": rng.normal(size=(200, 2))}, progressbar=False)
    >>> collapsed = stein_discrepancy(model, {"x": np.full((200, 2), 0.1)}, progressbar=False)
    >>> bool(spread < collapsed)
    True
    """
    K, stored, dim, dt, score_fn = _ksd_and_matrix(
        model,
        points,
        kernel=kernel,
        space=space,
        var_names=var_names,
        group=group,
        max_points=max_points,
        score_fn=score_fn,
        progressbar=progressbar,
    )
    m = K.shape[0]
    kind = "given"
    if weights is None:
        if stored is not None:
            w, kind = _normalize_weights(stored, m, "stored particle weights"), "stored"
        else:
            w, kind = np.full(m, 1.0 / m), "uniform"
    elif isinstance(weights, str):
        if weights == "uniform":
            w, kind = np.full(m, 1.0 / m), "uniform"
        elif weights == "optimal":
            from bnmfzoo.diagnostics.weights import solve_stein_qp

            w, kind = solve_stein_qp(K), "optimal"
        else:
            raise ValueError(
                f"weights must be None, 'uniform', 'optimal' or an array, got {weights!r}"
            )
    else:
        w = _normalize_weights(weights, m)
    ksd = float(w @ K @ w)
    if dt is not None and store:
        attrs = {
            "definition": KSD_DEFINITION,
            "space": space,
            "kernel": repr(kernel if kernel is not None else imq_kernel()),
            "weights": kind,
            "group": group,
            "n_points": int(m),
            "var_names": ",".join(score_fn.var_names),
        }
        values = {"stein_discrepancy": xr.DataArray(ksd, attrs=attrs)}
        if kind == "optimal":
            values["stein_weights"] = xr.DataArray(w, dims=(dim,), attrs={"space": space})
        _store_diagnostics(dt, values)
    if return_matrix:
        return ksd, K
    return ksd
