"""Stein-weighted particle posteriors (Masood & Doshi-Velez 2019, Algorithm 1).

``fit_particles`` generates ``M`` complete NMF solutions ("particles") with a non-Bayesian solver
from Q-Transform, random-restart, NNDSVDar or user-supplied initializations, projects them onto the
model's support (and, under Exponential priors, gives each component its most probable scale),
weights them by minimizing the kernelized Stein discrepancy ``w^T K w`` over the
simplex (:mod:`bnmfzoo.diagnostics`), and returns a DataTree whose ``posterior`` holds draws
resampled by weight (systematic resampling), so every ArviZ function is right on it as it stands.

The helpers here (:func:`resolve_nmf_model`, :func:`weigh_particles`, :func:`particle_datatree`)
are shared with the baselines (NUTS, ADVI, SVGD, DSGD) so that every method is scored the same way.
"""

import time

import numpy as np
import xarray as xr

from bnmfzoo._base.nmf_solvers import complete_matrix, nndsvdar_init, random_init
from bnmfzoo._base.progress import progress
from bnmfzoo._base.results import build_datatree, data_coords
from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.particles._init import make_particle
from bnmfzoo.inference.particles._view import ParticleView, resolve_nmf_model

__all__ = ["fit_particles", "resolve_nmf_model", "ParticleView", "weigh_particles",
           "particle_datatree", "systematic_resample", "default_kernel", "INITS"]

INITS = ("qtransform", "random", "nndsvdar")


def systematic_resample(weights, n_draws, rng):
    """Systematic resampling: indices of ``n_draws`` draws from the weighted particles.

    Examples
    --------
    >>> import numpy as np
    >>> systematic_resample(np.array([0.5, 0.25, 0.25]), 4, np.random.default_rng(0)).tolist()
    [0, 0, 1, 2]
    """
    w = np.asarray(weights, dtype=float)
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    u = (rng.random() + np.arange(n_draws)) / n_draws
    return np.searchsorted(cdf, u, side="right").astype(int)


def default_kernel(info):
    """The paper's base kernel (eq. 7, two normalized IMQ kernels) on the model's A and W names.

    Used for the SVGD/DSGD *updates* (Masood & Doshi-Velez 2019, Sec. 6.2); weights and reported
    discrepancies use :func:`bnmfzoo.diagnostics.stein_matrix`'s default kernel instead.
    """
    from bnmfzoo.diagnostics._stein._kernels import masood2019_kernel

    return masood2019_kernel(info.names["A"], info.names["W"])


def weigh_particles(info, A, W, *, weights="stein", kernel=None, solver=None,
                    space="unconstrained", extra=None):
    """Stein-optimal weights and the discrepancy of a stack of particles.

    The Stein kernel matrix comes from :func:`bnmfzoo.diagnostics.stein_matrix` with its
    defaults (PyMC's unconstrained space with the log-Jacobian, where the KSD is a valid
    discrepancy, and the median-heuristic IMQ kernel); particles with exact zeros are moved off
    the boundary by its relative ``floor`` first (the stored particles are unchanged).

    Parameters
    ----------
    info : ParticleView
    A, W : numpy.ndarray
        (M, D, R) and (M, R, N) particles on the model's support.
    weights : {"stein", "uniform"}
        ``"stein"`` minimizes ``w^T K w`` on the simplex (Algorithm 5).
    kernel : None, str or kernel object, optional
        Base kernel (see :func:`bnmfzoo.diagnostics.stein_matrix`; ``"masood2019"`` with
        ``space="constrained"`` is the paper's setting).
    solver : str, optional
        QP solver passed to :func:`bnmfzoo.diagnostics.stein_weights`.
    space : {"unconstrained", "constrained"}
        Space of the Stein discrepancy.

    Returns
    -------
    dict
        ``weight`` (M,), ``stein_discrepancy`` (= ``ksd_v`` = ``w^T K w``), ``ksd_u``
        (weighted U-statistic), ``n_eff`` (``1 / sum w^2``), ``stein_discrepancy_uniform`` (=
        ``ksd_v_uniform``), ``ksd_u_uniform`` (the unbiased U-statistic of the unweighted
        particles), ``weighting_time`` (s), ``K``, ``ksd_attrs`` (space, kernel, floor).
    """
    from bnmfzoo.diagnostics import ksd_statistics, stein_matrix, stein_weights

    t0 = time.perf_counter()
    if weights not in ("stein", "uniform"):
        raise ValueError(f"weights must be 'stein' or 'uniform', got {weights!r}")
    sm = stein_matrix(info.model, info.points(A, W, extra), kernel=kernel, space=space,
                      max_points=None, progressbar=False)
    K = np.asarray(sm.K, dtype=float)
    if weights == "uniform":
        w = np.full(A.shape[0], 1.0 / A.shape[0])
    else:
        w = np.asarray(stein_weights(K, **({} if solver is None else {"solver": solver})))
    stats = ksd_statistics(K, w)
    uniform = ksd_statistics(K)
    attrs = sm.attrs("optimal" if weights == "stein" else "uniform")
    return {
        "weight": w,
        "stein_discrepancy": stats["ksd_v"],
        "ksd_v": stats["ksd_v"],
        "ksd_u": stats["ksd_u"],
        "n_eff": stats["n_eff"],
        "stein_discrepancy_uniform": uniform["ksd_v"],
        "ksd_u_uniform": uniform["ksd_u"],
        "weighting_time": time.perf_counter() - t0,
        "K": K,
        "ksd_attrs": attrs,
    }


def particle_datatree(info, A, W, weighted, *, method, n_draws, rng, particle_vars=None,
                      diagnostics=None, attrs=None, extra=None):
    """Assemble the DataTree of a weighted particle approximation.

    ``particles`` group: ``A`` (particle, row, factor), ``W`` (particle, factor, col), ``weight``
    and any ``particle_vars`` (particle,); ``posterior``: ``n_draws`` draws resampled by weight
    (chain 1), with the source particle of each draw in ``sample_stats.particle``;
    ``diagnostics``: ``stein_discrepancy`` (= ``ksd_v``, the V-statistic ``w^T K w`` of Masood &
    Doshi-Velez 2019, eq. 4), ``ksd_u`` (the U-statistic with the same weights, diagonal
    removed), ``n_eff`` (= ``effective_particles`` = ``1 / sum w^2``), the same statistics for
    uniform weights (``stein_discrepancy_uniform``, ``ksd_u_uniform``; the latter is unbiased
    for the squared KSD of the particles' distribution), the KSD's ``space`` and ``kernel`` as
    attributes, and ``diagnostics``; root attrs ``method``/``model``.
    """
    M = A.shape[0]
    w = weighted["weight"]
    idx = np.sort(systematic_resample(w, n_draws, rng))
    coords = {**data_coords(info.X), "factor": np.arange(info.rank), "particle": np.arange(M)}
    pvars = {
        "A": (("particle", "row", "factor"), A),
        "W": (("particle", "factor", "col"), W),
        "weight": (("particle",), w),
    }
    for name, values in (particle_vars or {}).items():
        pvars[name] = (("particle",), np.asarray(values))
    posterior = {"A": A[idx][None], "W": W[idx][None]}
    model_dims = info.model.named_vars_to_dims
    for name, values in (extra or {}).items():  # the other free variables, per particle
        values = np.asarray(values)
        dims = tuple(model_dims.get(name) or (f"{name}_dim_{i}" for i in range(values.ndim - 1)))
        pvars[name] = (("particle", *dims), values)
        posterior[name] = values[idx][None]
        for d in dims:
            if d in info.model.coords and d not in coords:
                coords[d] = np.asarray(info.model.coords[d])
    diag = {
        "stein_discrepancy": weighted["stein_discrepancy"],
        "ksd_v": weighted["ksd_v"],
        "ksd_u": weighted["ksd_u"],
        "n_eff": weighted["n_eff"],
        "stein_discrepancy_uniform": weighted["stein_discrepancy_uniform"],
        "ksd_u_uniform": weighted["ksd_u_uniform"],
        "weighting_time": weighted["weighting_time"],
        "n_particles": M,
        "effective_particles": float(1.0 / np.sum(w**2)),
        **(diagnostics or {}),
    }
    ksd_attrs = {k: v for k, v in weighted.get("ksd_attrs", {}).items() if k != "weights"}
    diag_ds = xr.Dataset({k: v if isinstance(v, tuple) else ((), np.asarray(v))
                          for k, v in diag.items()})
    for name in ("stein_discrepancy", "ksd_v", "ksd_u", "stein_discrepancy_uniform",
                 "ksd_u_uniform"):
        diag_ds[name].attrs.update(ksd_attrs)
    observed = {"X": info.X.values}
    if info.masked:
        observed["mask"] = info.mask
    dims = {n: list(pvars[n][0][1:]) for n in (extra or {})}
    dt = build_datatree(
        posterior,
        dims=dims or None,
        sample_stats={"particle": idx[None]},
        observed_data=observed,
        coords=coords,
        groups={"particles": xr.Dataset(pvars), "diagnostics": diag_ds},
        attrs={"method": method, "model": info.family, **(attrs or {})},
    )
    dt["posterior"].attrs["note"] = RESAMPLED_NOTE
    return dt


#: attached to the ``posterior`` group of every particle fit (ArviZ cannot warn by itself)
RESAMPLED_NOTE = (
    "draws resampled by weight from the particles group: one 'chain' of repeated particles, "
    "not an MCMC sample. ESS, R-hat, rank plots and PSIS-LOO measure the resampling, not the "
    "posterior; use bnmfzoo.diagnostics.summary (exact weighted statistics per mode) instead."
)


def _build_inits(info, init, n_particles, q_bank, q_options, seeds):
    """Return (list of per-particle init callables, shared setup time, extra diagnostics)."""
    from bnmfzoo.inference.particles.qtransform import (
        QTransformInit,
        generate_q_bank,
        svd_symmetric,
    )

    extra = {}
    if callable(init):
        return [init] * n_particles, 0.0, extra
    if init == "random":
        return [random_init] * n_particles, 0.0, extra
    if init == "nndsvdar":
        return [nndsvdar_init] * n_particles, 0.0, extra
    if init != "qtransform":
        raise ValueError(f"init must be one of {INITS} or a callable, got {init!r}")
    bank = q_bank if q_bank is not None else generate_q_bank()
    q_time = bank.generation_time
    t1, c1 = time.perf_counter(), time.process_time()
    Xc = None
    Xpos = np.maximum(info.X_values, 0.0)  # placement only (see make_particle)
    if info.masked:
        Xc = complete_matrix(Xpos, info.mask, info.rank, random_seed=seeds[0] % 2**31)
    Xs = Xc if Xc is not None else Xpos
    svd = svd_symmetric(Xs, bank.QA.shape[1], sign=q_options.get("sign", "bro"))
    setup = time.perf_counter() - t1
    extra["svd_cpu_time"] = time.process_time() - c1
    extra["q_bank_time"] = q_time
    extra["q_bank_size"] = len(bank)
    extra["svd_time"] = setup
    inits = [QTransformInit(bank.QA[m % len(bank)], bank.QW[m % len(bank)], svd=svd,
                            X_complete=Xc, **q_options) for m in range(n_particles)]
    return inits, q_time + setup, extra


def _check_extreme(X, mask):
    """Refuse data the NMF solvers cannot start from (all observed entries zero)."""
    obs = X[mask] if mask is not None else np.ravel(X)
    if obs.size and not np.any(obs != 0):
        raise ValueError("X: every observed entry is 0, so there is nothing to factorize "
                         "(the NMF solvers cannot start from an all-zero matrix)")


def fit_particles(model, *, n_particles=50, init="qtransform", X=None, mask=None, var_names=None,
                  n_draws=None, q_bank=None, q_mode="abs", pad_scale=1e-3, sign="bro",
                  max_iter=200, tol=1e-4, solver="cd", weights="stein", kernel=None,
                  space="unconstrained", qp_solver=None, random_seed=None, client=None,
                  progressbar=True, rejuvenate="auto"):
    """Stein-weighted particle approximation of a BNMF posterior (Algorithm 1, rejuvenated).

    Each converged solution is projected onto the model's support (unit-sum basis columns under
    Dirichlet bases) and, when ``A`` and ``W`` have Exponential priors, each component is
    rescaled along the likelihood's exact symmetry to its most probable scale
    (:meth:`ParticleView.balance`); ``A @ W`` is unchanged.

    Parameters
    ----------
    model : pymc.Model
        A model with free ``A`` (D x R) and ``W`` (R x N), and possibly further free
        variables (completed per particle, see ``rejuvenate``), e.g.
        :func:`bnmfzoo.models.silf`, ``exponential_gaussian(...)`` or a user's own priors with
        a bnmfzoo likelihood term. The model is read by the one recognition path
        (:func:`~bnmfzoo.inference.particles._view.resolve_nmf_model`): the data are taken
        from ``X=``, else the recognized likelihood (Gaussian, Bernoulli, uniform noise,
        SILF), else an observed variable of shape D x N.
    n_particles : int, default 50
        ``M``.
    init : {"qtransform", "random", "nndsvdar"} or callable, default "qtransform"
        Initialization of each particle; a callable ``init(X, rank, rng) -> (A, W)`` (optionally
        accepting ``mask=``) is used as is.
    X, mask : array-like, optional
        The data when the model does not carry them.
    var_names : dict, optional
        ``{"A": name, "W": name}`` of the free variables.
    n_draws : int, optional
        Size of the resampled ``posterior`` (default ``max(100, n_particles)``).
    q_bank : bnmfzoo.inference.particles.qtransform.QBank, optional
        Q pairs; default the paper's bank (20 sources x 5 restarts, cached on disk).
        Particle ``m`` uses pair ``m mod len(q_bank)``.
    q_mode, pad_scale, sign
        Q-Transform options (see :func:`bnmfzoo.inference.particles.qtransform.apply_q_transform`).
    max_iter, tol, solver
        NMF solver settings (scikit-learn ``cd``; masked multiplicative updates when entries are
        missing; ``solver="hals"``: EM coordinate descent on the observed entries, which does
        not stall on Q-Transform padding, see
        :func:`bnmfzoo._base.nmf_solvers.masked_hals`).
    weights : {"stein", "uniform"}, default "stein"
        Stein-optimal weights (Algorithm 5) or uniform ones.
    kernel : None, str or kernel object
        Base kernel of the Stein discrepancy (default: IMQ, ``b = -1/2``, per-block median
        heuristic; see :func:`bnmfzoo.diagnostics.stein_matrix`).
    space : {"unconstrained", "constrained"}, default "unconstrained"
        Space of the Stein discrepancy. ``"unconstrained"`` (PyMC's value variables with the
        log-Jacobian) is a valid discrepancy; particles with exact zeros are moved off the
        boundary by a relative floor for the weighting only. ``space="constrained",
        kernel="masood2019"`` reproduces the paper's weights, which are not those of a valid
        discrepancy (Stein's identity fails at the support's boundary).
    qp_solver : str, optional
        QP solver of :func:`bnmfzoo.diagnostics.stein_weights`.
    random_seed : int or numpy.random.Generator, optional
        One seed is spawned per particle, so serial and Dask runs give identical particles.
    client : distributed.Client, optional
        Generate the particles on a Dask cluster.
    progressbar : bool, default True
        Show a progress bar (serial runs).
    rejuvenate : "auto", None, int, dict or callable, default "auto"
        Move every particle by a short Markov chain under the model before weighting. Solver
        particles sit at modes, often on the boundary, with no posterior spread; rejuvenated
        ones lie in the typical set of their mode, which a gold-standard comparison found far
        more accurate at equal CPU (``benchmarks/RESULTS.md`` section 3.0).

        * ``"auto"`` (default): when a step method with exact conditionals samples every free
          variable (:func:`~bnmfzoo.inference.particles.rejuvenate.exact_step_for`: GibbsNMF
          for a Gaussian likelihood with recognized priors, ``tau`` and ARD rates included),
          ``DEFAULT_SWEEPS`` = 100 of its sweeps per particle
          (:func:`~bnmfzoo.inference.particles.rejuvenate.step_rejuvenate`); otherwise (SILF,
          uniform noise, ``sigma ~ HalfNormal``) none, as in the paper: HMC is not the
          default there because it was not more accurate on the swimmer problem (identity
          mass matrix) and costs about 1,000 gradients per particle; and under SILF with the
          paper's ``C`` the posterior's mass lies mostly outside the flat band, where
          rejuvenated particles go.
        * ``None``: the paper's Algorithm 1 (Masood & Doshi-Velez 2019) as published.
        * an int: that many HMC transitions per particle (10 leapfrog steps each); a dict: its
          keyword options (``n_steps``, ``n_leapfrog``, ``floor``).
        * ``{"sweeps": n}``: ``n`` sweeps of the exact-conditional step (TypeError when the
          model has none).
        * a callable ``kernel(model, A, W, rng) -> (A, W, stats)``, e.g.
          :class:`bnmfzoo.inference.gaussian.gibbs.rejuvenation.GibbsRejuvenation`.

        The kernel used is the root attribute ``rejuvenate``; ``diagnostics`` holds
        ``rejuvenate_steps``, ``rejuvenate_accept`` (HMC) and ``rejuvenate_cpu_time``. Other
        free variables (``tau``, rates) are set to their conditional mode given each
        particle's final ``A`` and ``W``.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (chain 1, ``n_draws`` draws resampled by weight),
        ``sample_stats`` (source ``particle`` of each draw), ``observed_data``, ``particles``
        (``A``, ``W``, ``weight``, ``init_time``, ``solve_time``, ``time``, ``cpu_time``,
        ``n_iter``, ``objective``), ``diagnostics`` (``stein_discrepancy`` = ``ksd_v`` =
        ``w^T K w``, ``ksd_u``, ``n_eff``; see :func:`particle_datatree`; timings:
        ``total_time`` follows the paper's accounting: Q-bank and SVD time plus the sum of the
        particles' init and solve times, weighting excluded; ``wall_time`` and ``cpu_time`` are
        the whole call). Times are wall seconds; ``cpu_time`` entries (and ``svd_cpu_time``)
        are CPU seconds of this process (``time.process_time``).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> from bnmfzoo.inference import fit_particles
    >>> X = np.random.default_rng(0).random((8, 7))
    >>> dt = fit_particles(silf(X, 2, n_reference=5), n_particles=5, random_seed=1,
    ...                    progressbar=False)  # doctest: +SKIP
    >>> float(dt["particles"]["weight"].sum())  # doctest: +SKIP
    1.0
    """
    wall0, cpu0 = time.perf_counter(), time.process_time()
    info = resolve_nmf_model(model, X=X, mask=mask, var_names=var_names, allow_extra=True)
    n_particles = check_int(n_particles, name="n_particles")
    n_draws = check_int(max(100, n_particles) if n_draws is None else n_draws, name="n_draws")
    max_iter = check_int(max_iter, name="max_iter")
    tol = check_number(tol, name="tol", minimum=0.0, strict=False)
    pad_scale = check_number(pad_scale, name="pad_scale", minimum=0.0, strict=False)
    if weights not in ("stein", "uniform"):
        raise ValueError(f"weights must be 'stein' or 'uniform', got {weights!r}")
    rng = as_generator(random_seed)
    seeds = spawn_seeds(rng, n_particles)
    q_options = {"mode": q_mode, "pad_scale": pad_scale, "sign": sign}
    inits, setup_time, extra = _build_inits(info, init, n_particles, q_bank, q_options, seeds)
    Xv = info.X_values
    m = info.mask if info.masked else None
    _check_extreme(Xv, m)
    solver_kwargs = {"max_iter": max_iter, "tol": tol, "solver": solver}
    if client is None:
        results = [
            make_particle(Xv, info.rank, inits[i], seeds[i], mask=m, solver_kwargs=solver_kwargs)
            for i in progress(range(n_particles), desc="particles", progressbar=progressbar)
        ]
    else:
        X_fut = client.scatter(Xv, broadcast=True)
        futures = [
            client.submit(make_particle, X_fut, info.rank, inits[i], seeds[i], mask=m,
                          solver_kwargs=solver_kwargs, pure=False)
            for i in range(n_particles)
        ]
        results = client.gather(futures)
    A = np.stack([r["A"] for r in results])
    W = np.stack([r["W"] for r in results])
    A, W = info.finalize_particles(A, W)
    from bnmfzoo.inference.particles.rejuvenate import apply_rejuvenation

    rejuv = apply_rejuvenation(info, A, W, rejuvenate, rng, progressbar)
    kernel_name = rejuv.pop("rejuvenate_kernel")
    if "A" in rejuv:
        A, W = rejuv.pop("A"), rejuv.pop("W")
    others = info.condition(A, W)  # the particles' other free variables (tau, rates, ...)
    try:
        weighted = weigh_particles(info, A, W, weights=weights, kernel=kernel,
                                   solver=qp_solver, space=space, extra=others)
    except ValueError as err:  # the Stein kernel or scores overflow on data of extreme scale
        if not any(s in str(err) for s in ("K contains NaN", "score is not finite",
                                           "log density is")):
            raise
        obs = Xv[m] if m is not None else np.ravel(Xv)
        pos = obs[obs > 0]
        raise ValueError(
            f"fit_particles: the Stein weights cannot be computed for these data ({err}); the "
            f"data's scale is extreme (largest entry {obs.max():.3g}, smallest positive "
            f"{pos.min() if pos.size else 0:.3g}): rescale X (e.g. divide it by its largest "
            "entry), or pass weights='uniform'") from None
    from bnmfzoo._terms.silf import objective_value

    init_time = np.array([r["init_time"] for r in results])
    solve_time = np.array([r["solve_time"] for r in results])
    cpu_time = np.array([r["init_cpu_time"] + r["solve_cpu_time"] for r in results])
    objective = np.array([objective_value(info.X.values, a @ w, info.mask) for a, w in zip(A, W)])
    name = init if isinstance(init, str) else getattr(init, "__name__", "callable")
    diagnostics = {
        "total_time": float(setup_time + init_time.sum() + solve_time.sum()),
        "setup_time": float(setup_time),
        "wall_time": time.perf_counter() - wall0,
        "cpu_time": time.process_time() - cpu0,
        **extra,
        **rejuv,
    }
    return particle_datatree(
        info, A, W, weighted, method="particles", n_draws=int(n_draws), rng=rng,
        particle_vars={"init_time": init_time, "solve_time": solve_time,
                       "time": init_time + solve_time, "cpu_time": cpu_time,
                       "n_iter": np.array([r["n_iter"] for r in results]),
                       "objective": objective},
        diagnostics=diagnostics,
        attrs={"init": name, "dask": int(client is not None), "rejuvenate": kernel_name},
        extra=others,
    )
