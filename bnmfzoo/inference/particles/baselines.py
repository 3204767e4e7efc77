"""NUTS and ADVI baselines with the particle methods' output and Stein evaluation.

Both wrap PyMC (``pm.sample(nuts_sampler="pymc")`` and ``pm.fit``) on any model whose free
variables are ``A`` and ``W``, warm-started from a scikit-learn NMF (default settings) projected
onto the model's support (Dirichlet columns of ``A`` through PyMC's simplex transform). At each
checkpoint the draws so far are thinned evenly to ``n_particles`` (``M``), weighted by the Stein
discrepancy (Algorithm 5) and timed, as in the paper's HMC protocol (Sec. 6.2; the paper used HMC
with reflection, this is PyMC's NUTS, an extension).

The returned DataTree keeps PyMC's own ``posterior`` (NUTS draws, or ADVI draws from the fitted
approximation) and adds ``particles`` (the final ``M`` thinned draws with Stein weights) and
``diagnostics`` (discrepancy and elapsed time per checkpoint).
"""

import time
import warnings

import numpy as np
import xarray as xr

from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.timing import Timer
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.particles.weighted import resolve_nmf_model, weigh_particles


def nmf_warm_start(info, *, random_seed=0):
    """Default scikit-learn NMF of the model's data, projected onto the support (A, W)."""
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    from bnmfzoo._base.nmf_solvers import complete_matrix, solve_nmf

    X = np.maximum(info.X_values, 0.0)  # a start only; NMF solvers need X >= 0 (see _init)
    if info.masked:
        Xc = complete_matrix(X, info.mask, info.rank, random_seed=random_seed)
        nmf = NMF(n_components=info.rank, random_state=random_seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            A0 = nmf.fit_transform(Xc)
        A, W, _ = solve_nmf(X, A0, nmf.components_, mask=info.mask)
    else:
        nmf = NMF(n_components=info.rank, random_state=random_seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            A = nmf.fit_transform(X)
        W = nmf.components_
    scale = max(float(np.mean(X[info.mask])), 1e-12)
    A = np.maximum(A, 1e-6 * scale)
    W = np.maximum(W, 1e-6 * scale)
    return info.project(A, W)


def values_to_factors(model, a_name, w_name):
    """Compile ``point -> (A, W)`` from a sampler state (PyMC's transformed values).

    The random variables are replaced by their value variables first: compiling the random
    variables themselves gives a function that draws from the prior and ignores the state.

    Parameters
    ----------
    model : pymc.Model
        The NMF model.
    a_name, w_name : str
        Names of the basis and weight variables in ``model``.

    Returns
    -------
    callable
        ``f(point) -> [A, W]`` for a dict of value-variable arrays (e.g. ``A_simplex__``,
        ``W_log__``), as a step method's ``step`` receives and returns them.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.particles.baselines import values_to_factors
    >>> model = exponential_gaussian(np.ones((4, 3)), 2, sigma=1.0)
    >>> A, W = values_to_factors(model, "A", "W")(model.initial_point())
    >>> A.shape, W.shape
    ((4, 2), (2, 3))
    """
    outs = model.replace_rvs_by_values([model[a_name], model[w_name]])
    return model.compile_fn(outs, inputs=model.value_vars, point_fn=True)


def _checkpoints(checkpoints, total, n_particles):
    if checkpoints is None:
        grid = [c for c in (100, 300, 1000, 3000, 10000) if n_particles <= c < total]
        checkpoints = grid + [total]
    cps = sorted({int(c) for c in checkpoints if n_particles <= int(c) <= total})
    if not cps:
        raise ValueError(
            f"checkpoints must contain a value between n_particles={n_particles} and {total}"
        )
    return cps


def _thin(n, M):
    return np.unique(np.round(np.linspace(0, n - 1, M)).astype(int))


def _score_checkpoints(info, A_all, W_all, cps, times, n_particles, kernel, weights):
    rows = []
    final = None
    for c, t in zip(cps, times):
        idx = _thin(c, n_particles)
        A, W = info.project(A_all[idx], W_all[idx])
        res = weigh_particles(info, A, W, weights=weights, kernel=kernel)
        rows.append((c, t, res["stein_discrepancy"], res["stein_discrepancy_uniform"]))
        final = (idx, A, W, res)
    cp = np.array(rows)
    diag = xr.Dataset(
        {
            "checkpoint_draw": (("checkpoint",), cp[:, 0].astype(int)),
            "checkpoint_time": (("checkpoint",), cp[:, 1]),
            "checkpoint_stein_discrepancy": (("checkpoint",), cp[:, 2]),
            "checkpoint_stein_discrepancy_uniform": (("checkpoint",), cp[:, 3]),
            "stein_discrepancy": ((), cp[-1, 2]),
            "total_time": ((), cp[-1, 1]),
            "n_particles": ((), len(final[0])),
        }
    )
    return diag, final


def _particles_group(info, idx, A, W, res, draw_index_name="source_draw"):
    return xr.Dataset(
        {
            "A": (("particle", "row", "factor"), A),
            "W": (("particle", "factor", "col"), W),
            "weight": (("particle",), res["weight"]),
            draw_index_name: (("particle",), idx),
        },
        coords={"row": info.X["row"].values, "col": info.X["col"].values,
                "factor": np.arange(info.rank), "particle": np.arange(len(idx))},
    )


def _ensure_observed(dt, info):
    """Add ``observed_data`` (the data X) when the model's likelihood is a potential."""
    if "observed_data" not in dt.children:
        dt["observed_data"] = xr.DataTree(xr.Dataset(
            {"X": (("row", "col"), info.X.values)},
            coords={"row": info.X["row"].values, "col": info.X["col"].values}))


def fit_nuts(model, *, draws=1000, tune=500, n_particles=50, checkpoints=None, X=None,
             mask=None, var_names=None, warm_start=True, weights="stein", kernel=None,
             random_seed=None, progressbar=True, **sample_kwargs):
    """NUTS (``pm.sample``, one chain) thinned to ``M`` Stein-weighted particles at checkpoints.

    Parameters
    ----------
    model : pymc.Model
        Free variables ``A`` and ``W`` only (see :func:`bnmfzoo.inference.fit_particles`).
    draws, tune : int
        NUTS draws after ``tune`` adaptation steps (the paper ran 10,000 HMC samples).
    n_particles : int, default 50
        ``M`` draws kept (evenly thinned) at each checkpoint.
    checkpoints : list of int, optional
        Draw counts at which to thin, weigh and time (default 100, 300, 1000, ... below
        ``draws``, and ``draws``).
    X, mask, var_names
        As in :func:`~bnmfzoo.inference.fit_particles`.
    warm_start : bool, default True
        Start from a default scikit-learn NMF projected onto the support.
    weights : {"stein", "uniform"}
        Weights of the thinned draws.
    kernel : object, optional
        Base kernel for the Stein helpers.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool, default True
    **sample_kwargs
        Passed to ``pm.sample`` (e.g. ``target_accept``).

    Returns
    -------
    xarray.DataTree
        PyMC's result plus ``particles`` (``A``, ``W``, ``weight``, ``source_draw``) and
        ``diagnostics`` (``checkpoint_*`` over dim ``checkpoint``: draws, seconds since the
        start including compilation and tuning, Stein discrepancy; ``stein_discrepancy`` and
        ``total_time`` at the last checkpoint). Root attrs ``method="nuts"``, ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> from bnmfzoo.inference import fit_nuts
    >>> X = np.random.default_rng(0).random((8, 7))
    >>> dt = fit_nuts(silf(X, 2, n_reference=5), draws=100, tune=100, n_particles=5,
    ...               random_seed=1, progressbar=False)  # doctest: +SKIP
    """
    import pymc as pm

    info = resolve_nmf_model(model, X=X, mask=mask, var_names=var_names, method="fit_nuts")
    draws, tune = check_int(draws, name="draws"), check_int(tune, name="tune", minimum=0)
    cps = _checkpoints(checkpoints, draws, check_int(n_particles, name="n_particles"))
    seed_nmf, seed_pm = spawn_seeds(as_generator(random_seed), 2)
    t0 = time.perf_counter()
    initvals = None
    if warm_start:
        A0, W0 = nmf_warm_start(info, random_seed=seed_nmf % 2**31)
        initvals = {info.names["A"]: A0, info.names["W"]: W0}
    from bnmfzoo.inference._step_glue import pymc_default_steps

    with model, pymc_default_steps():  # PyMC's NUTS even where GibbsNMF would be chosen
        dt = pm.sample(draws=int(draws), tune=int(tune), chains=1, cores=1, nuts_sampler="pymc",
                       initvals=initvals, random_seed=seed_pm % 2**31, progressbar=progressbar,
                       compute_convergence_checks=False, **sample_kwargs)
    post = dt["posterior"]
    A_all = post[info.names["A"]].values[0]
    W_all = post[info.names["W"]].values[0]
    ends = (dt["sample_stats"]["perf_counter_start"].values[0]
            + dt["sample_stats"]["perf_counter_diff"].values[0])
    times = [float(ends[c - 1] - t0) for c in cps]
    diag, (idx, A, W, res) = _score_checkpoints(info, A_all, W_all, cps, times,
                                                int(n_particles), kernel, weights)
    diag["warm_start"] = ((), int(bool(warm_start)))
    dt["particles"] = xr.DataTree(_particles_group(info, idx, A, W, res))
    dt["diagnostics"] = xr.DataTree(diag)
    _ensure_observed(dt, info)
    dt.attrs.update({"method": "nuts", "model": info.family})
    return dt


def fit_advi(model, *, method="advi", n=10000, n_particles=50, n_draws=1000, checkpoints=None,
             X=None, mask=None, var_names=None, warm_start=True, learning_rate=0.01,
             weights="stein", kernel=None, random_seed=None, progressbar=True):
    """ADVI (``pm.fit``, mean-field or full-rank) with ``M`` Stein-weighted draws at checkpoints.

    Parameters
    ----------
    model : pymc.Model
        Free variables ``A`` and ``W`` only.
    method : {"advi", "fullrank_advi"}, default "advi"
        Mean-field or full-rank Gaussian approximation in PyMC's unconstrained space.
    n : int, default 10000
        Optimization steps (Adam, ``learning_rate``).
    n_particles : int, default 50
        ``M`` draws from the approximation, Stein-weighted, at each checkpoint.
    n_draws : int, default 1000
        Draws from the final approximation stored in ``posterior``.
    checkpoints : list of int, optional
        Iteration counts at which to draw, weigh and time (default 1000, 3000, ... and ``n``).
    X, mask, var_names, warm_start, weights, kernel
        As in :func:`fit_nuts`.
    learning_rate : float, default 0.01
        Adam step size (the default ADVI optimizer can stall on BNMF).
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool, default True

    Returns
    -------
    xarray.DataTree
        ``posterior`` (draws from the fitted approximation), ``particles``, ``variational``
        (the loss trace), ``diagnostics`` (``checkpoint_*``; time excludes drawing and
        weighting; ``checkpoint_time``/``total_time`` in wall seconds,
        ``checkpoint_cpu_time``/``total_cpu_time`` in CPU seconds of this process). Root
        attrs ``method`` (``"advi"`` / ``"fullrank_advi"``) and ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> from bnmfzoo.inference import fit_advi
    >>> X = np.random.default_rng(0).random((8, 7))
    >>> dt = fit_advi(silf(X, 2, n_reference=5), n=500, n_particles=5, random_seed=1,
    ...               progressbar=False)  # doctest: +SKIP
    """
    import pymc as pm

    if method not in ("advi", "fullrank_advi"):
        raise ValueError(f"method must be 'advi' or 'fullrank_advi', got {method!r}")
    info = resolve_nmf_model(model, X=X, mask=mask, var_names=var_names, method="fit_advi")
    n = check_int(n, name="n")
    n_particles = check_int(n_particles, name="n_particles")
    n_draws = check_int(n_draws, name="n_draws")
    learning_rate = check_number(learning_rate, name="learning_rate", minimum=0.0)
    if checkpoints is None:
        checkpoints = [c for c in (1000, 3000, 10000, 30000) if c < n] + [n]
    cps = sorted({int(c) for c in checkpoints if 1 <= int(c) <= n})
    if not cps:
        raise ValueError(f"checkpoints must contain a value between 1 and n={n}")
    seed_nmf, seed_fit = spawn_seeds(as_generator(random_seed), 2)
    seeds = spawn_seeds(seed_fit, len(cps) + 2)
    clock = Timer()  # setup (warm start, ADVI objective) and fitting; sampling excluded
    start = None
    with clock:
        if warm_start:
            A0, W0 = nmf_warm_start(info, random_seed=seed_nmf % 2**31)
            start = {info.names["A"]: A0, info.names["W"]: W0}
    with model:
        with clock:
            cls = pm.ADVI if method == "advi" else pm.FullRankADVI
            inference = cls(start=start, random_seed=seeds[0] % 2**31)
            optimizer = pm.adam(learning_rate=learning_rate)
        done, rows_A, rows_W, times, cpu_times = 0, [], [], [], []
        for k, c in enumerate(cps):
            with clock:
                inference.fit(c - done, obj_optimizer=optimizer, progressbar=progressbar)
            done = c
            draws = inference.approx.sample(int(n_particles), random_seed=seeds[k + 1] % 2**31,
                                            return_inferencedata=False)
            rows_A.append(np.asarray(draws[info.names["A"]]))
            rows_W.append(np.asarray(draws[info.names["W"]]))
            times.append(clock.wall)
            cpu_times.append(clock.cpu)
        final_draws = inference.approx.sample(int(n_draws), random_seed=seeds[-1] % 2**31)
    rows = []
    final = None
    for c, t, Ad, Wd in zip(cps, times, rows_A, rows_W):
        A, W = info.project(Ad, Wd)
        res = weigh_particles(info, A, W, weights=weights, kernel=kernel)
        rows.append((c, t, res["stein_discrepancy"], res["stein_discrepancy_uniform"]))
        final = (np.arange(len(A)), A, W, res)
    cp = np.array(rows)
    diag = xr.Dataset({
        "checkpoint_iteration": (("checkpoint",), cp[:, 0].astype(int)),
        "checkpoint_time": (("checkpoint",), cp[:, 1]),
        "checkpoint_cpu_time": (("checkpoint",), np.asarray(cpu_times)),
        "checkpoint_stein_discrepancy": (("checkpoint",), cp[:, 2]),
        "checkpoint_stein_discrepancy_uniform": (("checkpoint",), cp[:, 3]),
        "stein_discrepancy": ((), cp[-1, 2]),
        "total_time": ((), cp[-1, 1]),
        "total_cpu_time": ((), float(cpu_times[-1])),
        "n_particles": ((), int(n_particles)),
    })
    dt = final_draws
    idx, A, W, res = final
    dt["particles"] = xr.DataTree(_particles_group(info, idx, A, W, res, "draw_index"))
    dt["diagnostics"] = xr.DataTree(diag)
    dt["variational"] = xr.DataTree(xr.Dataset(
        {"loss": (("iteration",), np.asarray(inference.hist, dtype=float))}))
    _ensure_observed(dt, info)
    dt.attrs.update({"method": method, "model": info.family})
    return dt
