r"""Kernelized Stein discrepancy (KSD) of a set of (weighted) points against any PyMC model.

The front end of four layers, each in its own module:

* :mod:`~bnmfzoo.diagnostics._stein._stein_scores` (PyMC glue): :func:`score_function` compiles the
score
  :math:`\nabla_\theta \log p(\theta, X)` of a ``pm.Model`` once and evaluates it at many points,
  in PyMC's unconstrained value space or in the constrained space;
* :mod:`~bnmfzoo.diagnostics._stein._kernels` (NumPy): base kernels; the default is
  :class:`~bnmfzoo.diagnostics._stein._kernels.MedianIMQ`;
* :mod:`~bnmfzoo.diagnostics._stein._stein_kernel` (NumPy): :func:`stein_kernel_matrix`, the Stein
kernel
  (Liu, Lee & Jordan 2016; Masood & Doshi-Velez 2019, eq. 3) for all pairs in closed form, and
  the V- and U-statistics;
* :mod:`~bnmfzoo.diagnostics._stein._stein_points`: points from dicts and DataTrees, and storing.

:func:`stein_matrix` is the one path from a model and points to a Stein kernel matrix; both
:func:`stein_discrepancy` and :func:`bnmfzoo.diagnostics.stein_weights` consume its result
(``weights`` depends only on the matrix layers, never on this module).

**Defaults, and why.** ``space="unconstrained"`` (PyMC's value variables, log-Jacobian included):
there the target has full support, Stein's identity holds and the KSD is zero only at the target
(Gorham & Mackey 2017). In the constrained space of Masood & Doshi-Velez (2019) the identity fails
at the support's boundary: on exact draws from an Exp(1) NMF prior the U-statistic stays at a
positive constant for any number of draws, and shifted or over-dispersed samples score as well
or better. The base kernel defaults to one IMQ kernel (``b = -1/2``, Gorham & Mackey 2017) with a
per-block length scale equal to the median pairwise distance of the points in that block (the
"med" preconditioner of Riabiz et al. 2022, per block), so that the kernel sees the points at
their own scale; the paper's fixed ``c_A = 1e-2`` puts about :math:`5000\,DR` on the diagonal,
and at practical ``M`` the KSD then only counts points.

The paper's setting stays reachable by name, ``space="constrained", kernel="masood2019"``; it is
not a valid discrepancy (see above) and is meant for reproducing the paper only. Any other use of
``space="constrained"`` emits a ``UserWarning``.
"""

import warnings

import numpy as np

from bnmfzoo._base.validation import fmt
from bnmfzoo.diagnostics._stein._kernels import (
    IMQ,
    PAPER_B,
    PAPER_C,
    BlockKernel,
    Gaussian,
    MedianIMQ,
    PreconditionedIMQ,
    RadialKernel,
    imq_kernel,
    masood2019_kernel,
    median_imq,
)
from bnmfzoo.diagnostics._stein._stein_kernel import ksd_statistics, stein_kernel_matrix
from bnmfzoo.diagnostics._stein._stein_points import (
    KSD_DEFINITION,
    SteinMatrix,
    collect_points,
    normalize_weights,
)
from bnmfzoo.diagnostics._stein._stein_scores import (
    SPACES,
    ScoreFunction,
    _cached_score_function,
    floor_points,
    score_function,
)
from bnmfzoo.diagnostics._stein.weights import solve_stein_qp

__all__ = [
    "DEFAULT_FLOOR",
    "IMQ",
    "KSD_DEFINITION",
    "PAPER_B",
    "PAPER_C",
    "SPACES",
    "BlockKernel",
    "Gaussian",
    "MedianIMQ",
    "PreconditionedIMQ",
    "RadialKernel",
    "ScoreFunction",
    "SteinMatrix",
    "imq_kernel",
    "ksd_statistics",
    "resolve_kernel",
    "score_function",
    "stein_discrepancy",
    "stein_kernel_matrix",
    "stein_matrix",
]

#: relative floor that moves boundary points (exact zeros) into the unconstrained space
DEFAULT_FLOOR = 1e-6
KERNEL_NAMES = ("median", "masood2019")
STATISTICS = ("v", "u", "all")


def _role_names(model):
    """Names of the basis (A) and weights (W) variables of a bnmfzoo model, else A and W."""
    from bnmfzoo.models._spec import find_spec

    spec = find_spec(model) if model is not None else None
    names = dict(getattr(spec, "var_names", None) or {})
    return names.get("A") or "A", names.get("W") or "W"


def resolve_kernel(kernel, space, model=None):
    """Base kernel for ``kernel`` (None, a name or a kernel object), warning on invalid settings.

    ``None`` and ``"median"`` give :func:`~bnmfzoo.diagnostics._stein._kernels.median_imq`;
    ``"masood2019"`` the paper's kernel (eq. 7) on the model's A and W variables. A
    ``UserWarning`` is emitted for ``space="constrained"`` unless ``kernel="masood2019"`` asks for
    the paper's setting by name.

    Parameters
    ----------
    kernel : None, str or kernel object
    space : {"constrained", "unconstrained"}
    model : pymc.Model, optional
        Supplies the A/W variable names for ``"masood2019"``.

    Returns
    -------
    kernel object
    """
    if space not in SPACES:
        raise ValueError(f"space must be 'constrained' or 'unconstrained', got {space!r}")
    named = isinstance(kernel, str)
    if named and kernel not in KERNEL_NAMES:
        raise ValueError(f"kernel must be one of {KERNEL_NAMES} or a kernel object, got {kernel!r}")
    if space == "constrained" and kernel != "masood2019":
        warnings.warn(
            "space='constrained' is not a valid Stein discrepancy: Stein's identity fails at the "
            "boundary of the support (exact draws do not score zero, wrong samples can score "
            "better). Use space='unconstrained' (the default); to reproduce Masood & "
            "Doshi-Velez (2019) pass space='constrained', kernel='masood2019'.",
            UserWarning,
            stacklevel=3,
        )
    if kernel is None or kernel == "median":
        return median_imq()
    if kernel == "masood2019":
        return masood2019_kernel(*_role_names(model)) if model is not None else imq_kernel()
    if not (hasattr(kernel, "evaluate") or hasattr(kernel, "fit")):
        raise TypeError(
            f"kernel must be None, a name in {KERNEL_NAMES} or provide evaluate(sqdist) (e.g. a "
            f"BlockKernel), got {kernel!r}"
        )
    return kernel


def stein_matrix(
    model,
    points,
    *,
    kernel=None,
    space="unconstrained",
    var_names=None,
    group="posterior",
    max_points=500,
    floor=DEFAULT_FLOOR,
    score_fn=None,
    progressbar=True,
):
    r"""Stein kernel matrix of points against a PyMC model's posterior (the shared path).

    Parameters
    ----------
    model : pymc.Model
        Any PyMC model; its free variables are the parameters :math:`\theta`.
    points : dict, xarray.Dataset or xarray.DataTree
        A dict name -> array ``(M, ...)`` (constrained values of every free variable); or a
        DataTree whose ``group`` holds them: ``"posterior"`` draws are stacked over
        ``(chain, draw)`` and thinned evenly to at most ``max_points``; the ``"particles"``
        group (dim ``particle``) of a particle fit also supplies its ``weight`` variable.
    kernel : None, "median", "masood2019" or kernel object
        Base kernel. Default (``None`` = ``"median"``): one IMQ kernel, ``b = -1/2``, with a
        per-block length scale equal to the median pairwise distance of that block's points
        (:class:`~bnmfzoo.diagnostics._stein._kernels.MedianIMQ`). ``"masood2019"``: the paper's
        sum of
        two normalized IMQ kernels, ``c_A = 1e-2``, ``c_W = 1e3`` (eq. 7), meant for
        ``space="constrained"`` only.
    space : {"unconstrained", "constrained"}
        Where scores and kernel distances are taken (see :func:`score_function`). Default
        ``"unconstrained"``, the valid one; ``"constrained"`` warns unless
        ``kernel="masood2019"``.
    var_names : list of str, optional
        Free variables forming :math:`\theta` (default all).
    group : {"posterior", "particles"}
        Group read from a DataTree.
    max_points : int or None
        Thin posterior draws evenly to at most this many points (K is ``M x M``); particles are
        never thinned.
    floor : float
        In the unconstrained space, entries of positive variables below ``floor`` times the
        variable's mean, and simplex entries below ``floor / K``, are raised to that value (and
        simplex vectors renormalized) before the scores are taken, since an exact zero has no
        unconstrained image (see :func:`~bnmfzoo.diagnostics._stein._stein_scores.floor_points`);
        ``0`` disables it, and a point on the boundary then raises ``ValueError``. Exact draws
        almost never reach the default ``1e-6``.
    score_fn : ScoreFunction, optional
        A precompiled score function of ``model`` in ``space`` (otherwise one is compiled and
        cached on the model).
    progressbar : bool
        Show a progress bar while the scores are evaluated.

    Returns
    -------
    SteinMatrix
        ``K`` with the (fitted) kernel, space, the points' stored weights and the DataTree.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from bnmfzoo.diagnostics import stein_matrix, stein_weights
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0, shape=2)
    >>> sm = stein_matrix(model, {"x": np.random.default_rng(0).normal(size=(20, 2))},
    ...                   progressbar=False)
    >>> sm.K.shape, bool(np.isclose(stein_weights(sm).sum(), 1.0))
    ((20, 20), True)
    """
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    if group not in ("posterior", "particles"):
        raise ValueError(f"group must be 'posterior' or 'particles', got {group!r}")
    if max_points is not None and (int(max_points) != max_points or max_points < 1):
        raise ValueError(f"max_points must be a positive integer or None, got {fmt(max_points)}")
    base = resolve_kernel(kernel, space, model)
    if score_fn is None:
        score_fn = _cached_score_function(model, var_names=var_names, space=space, mode=None)
    elif not isinstance(score_fn, ScoreFunction):
        raise TypeError(f"score_fn must be a ScoreFunction, got {type(score_fn).__name__}")
    elif score_fn.model is not model:
        raise ValueError("score_fn was compiled for a different model")
    elif score_fn.space != space:
        raise ValueError(f"score_fn works in space {score_fn.space!r}, not {space!r}")
    arrays, stored, dim, dt = collect_points(
        points, model, score_fn.input_names, group=group, max_points=max_points
    )
    n_floored = {}
    if space == "unconstrained":
        arrays, n_floored = floor_points(model, arrays, floor)
    scores = score_fn(arrays, progressbar=progressbar)
    pos = score_fn.positions(arrays)
    K, fitted = stein_kernel_matrix(
        pos, scores, blocks=score_fn.blocks, kernel=base, return_kernel=True
    )
    return SteinMatrix(
        K,
        kernel=fitted,
        space=space,
        var_names=score_fn.var_names,
        stored_weights=stored,
        dim=dim,
        datatree=dt,
        group=group,
        n_floored=n_floored,
        floor=floor if space == "unconstrained" else 0.0,
    )


def stein_discrepancy(
    model,
    points,
    *,
    weights=None,
    kernel=None,
    space="unconstrained",
    var_names=None,
    group="posterior",
    max_points=500,
    floor=DEFAULT_FLOOR,
    score_fn=None,
    statistic="v",
    return_matrix=False,
    store=True,
    progressbar=True,
):
    r"""Kernelized Stein discrepancy of a weighted set of points against a PyMC model's posterior.

    The squared KSD :math:`\mathbb S = w^\top K w` with :math:`K_{ij} = \mathcal K_p(\theta_i,
    \theta_j)` the Stein kernel (Masood & Doshi-Velez 2019, eqs. 3-4; V-statistic, diagonal
    included), reported as the squared quantity (the ``stein-thinning`` package reports its
    square root). For i.i.d. exact draws it falls like :math:`1/M`; the U-statistic (diagonal
    removed, Liu, Lee & Jordan 2016) is unbiased for :math:`\mathrm{KSD}^2` and about zero for
    exact draws (:func:`~bnmfzoo.diagnostics._stein._stein_kernel.ksd_statistics`). Lower is better.
    Values depend on the kernel and space and are comparable only within one model, dataset and
    kernel. See the module docstring for why the defaults are ``space="unconstrained"`` and the
    median-heuristic IMQ kernel.

    Parameters
    ----------
    model : pymc.Model
    points : dict, xarray.Dataset or xarray.DataTree
        As in :func:`stein_matrix`.
    weights : None, "uniform", "optimal" or array-like, optional
        Weights of the points: default the particles' stored ``weight`` (if any), else uniform;
        ``"optimal"`` minimizes the V-statistic over the simplex
        (:func:`bnmfzoo.diagnostics.stein_weights`); an array is normalized to sum to one.
    kernel, space, var_names, group, max_points, floor, score_fn, progressbar
        As in :func:`stein_matrix`.
    statistic : {"v", "u", "all"}
        Return the V-statistic (default), the U-statistic, or a dict with ``ksd_v``, ``ksd_u``
        and ``n_eff`` (:math:`1/\sum w_i^2`).
    return_matrix : bool
        Also return the Stein kernel matrix ``K``.
    store : bool
        For a DataTree input, write ``stein_discrepancy`` (= ``ksd_v``), ``ksd_v``, ``ksd_u``,
        ``n_eff`` and, for optimal weights, ``stein_weights`` (over ``particle``, or
        ``stein_sample`` for posterior draws) into its ``diagnostics`` group, in place.

    Returns
    -------
    float, dict, or a tuple of it and numpy.ndarray
        The chosen statistic, and ``K`` if ``return_matrix``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from bnmfzoo.diagnostics import stein_discrepancy
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0, shape=2)
    >>> rng = np.random.default_rng(0)
    >>> exact = stein_discrepancy(model, {"x": rng.normal(size=(200, 2))}, progressbar=False)
    >>> shifted = stein_discrepancy(model, {"x": rng.normal(size=(200, 2)) + 1.0},
    ...                             progressbar=False)
    >>> bool(exact < shifted)
    True
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    sm = stein_matrix(
        model,
        points,
        kernel=kernel,
        space=space,
        var_names=var_names,
        group=group,
        max_points=max_points,
        floor=floor,
        score_fn=score_fn,
        progressbar=progressbar,
    )
    m = sm.n_points
    if weights is None:
        if sm.stored_weights is not None:
            w, kind = normalize_weights(sm.stored_weights, m, "stored particle weights"), "stored"
        else:
            w, kind = np.full(m, 1.0 / m), "uniform"
    elif isinstance(weights, str):
        if weights == "uniform":
            w, kind = np.full(m, 1.0 / m), "uniform"
        elif weights == "optimal":
            w, kind = solve_stein_qp(sm.K), "optimal"
        else:
            raise ValueError(
                f"weights must be None, 'uniform', 'optimal' or an array, got {weights!r}"
            )
    else:
        w, kind = normalize_weights(weights, m), "given"
    stats = sm.statistics(w)
    if store:
        sm.store(w, kind)
    out = stats if statistic == "all" else stats["ksd_" + statistic]
    return (out, sm.K) if return_matrix else out
