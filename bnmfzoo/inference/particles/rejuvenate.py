"""Rejuvenation of particles by a short MCMC run under the model (beyond Masood & Doshi-Velez 2019).

Particles from NMF solvers sit at (or near) modes of the likelihood, often with exact zeros on
the boundary of the support, and carry no posterior spread: under a valid Stein discrepancy
(PyMC's value space with the log-Jacobian) they score far from the posterior. Moving each
particle by a short Markov chain that leaves the posterior invariant puts it into the typical set
of its mode; the valid Stein weights are computed afterwards, so they correct for chains that
have not converged (Liu & Lee 2017, *Black-box importance sampling*; Riabiz et al. 2022).

Two kernels. For models that a registered step method with exact conditionals samples in full
(``pm.sample()`` would choose it for every free variable: for a Gaussian likelihood on ``A @ W``
that is :class:`~bnmfzoo.inference.GibbsNMF`, with ``tau``, ARD rates and the recognized priors
of :func:`bnmfzoo.models.recognize`), :func:`step_rejuvenate` runs that step, one chain per
particle, through PyMC's step interface; the class is found in PyMC's ``STEP_METHODS`` by its
``exact_conditionals`` attribute, so this wing imports no other. The other kernel
(:func:`rejuvenate_particles`, ``rejuvenate=<int>``) is Hamiltonian Monte Carlo (Neal 2011) in
PyMC's value space (``A_log__``, the column-simplex values of a Dirichlet basis), with the
log-Jacobian, for any PyMC model whose free variables are ``A`` and ``W``: each particle runs
its own chain, with its step size adapted during the first half of its steps (stochastic
approximation towards an acceptance rate of 0.65, then fixed, so the second half is an exact
Metropolis-corrected kernel) and the identity mass matrix. Particles with exact zeros are
first floored (relative floor, see :func:`bnmfzoo.diagnostics._stein._stein_scores.floor_points`),
since a zero has no image in value space.
"""

import time

import numpy as np

from bnmfzoo._base.rng import as_generator, spawn_seeds

__all__ = ["ValueSpace", "apply_rejuvenation", "exact_step_for", "hmc_rejuvenate",
           "rejuvenate_particles", "step_rejuvenate"]

#: relative floor applied to boundary entries before the chains start
REJUVENATE_FLOOR = 1e-3
#: sweeps per particle of an exact-conditional step in ``fit_particles(rejuvenate="auto")``
DEFAULT_SWEEPS = 100


class ValueSpace:
    """Compiled maps between constrained ``(A, W)`` and PyMC's value space, and the log density.

    Parameters
    ----------
    model : pymc.Model
        Free variables exactly ``names["A"]`` and ``names["W"]``.
    names : dict
        ``{"A": name, "W": name}``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(4, 3))
    >>> vs = ValueSpace(exponential_gaussian(X, 2, sigma=0.5), {"A": "A", "W": "W"})
    >>> q = vs.to_values(np.ones((4, 2)), np.ones((2, 3)))
    >>> A, W = vs.from_values(q)
    >>> bool(np.allclose(A, 1.0)), q.shape
    (True, (14,))
    """

    def __init__(self, model, names):
        import pymc as pm
        import pytensor.tensor as pt
        from pytensor.graph.replace import graph_replace

        free = {rv.name: rv for rv in model.free_RVs}
        order = [names["A"], names["W"]]
        if set(free) != set(order):
            raise TypeError(
                f"rejuvenation needs a model whose free variables are {order}, got {sorted(free)}"
            )
        rvs = [free[n] for n in order]
        values = [model.rvs_to_values[rv] for rv in rvs]
        shapes = {k: tuple(int(s) for s in v) for k, v in model.eval_rv_shapes().items()}
        self.rv_shapes = [shapes[n] for n in order]
        self.value_shapes = [shapes[v.name] for v in values]
        sizes = [int(np.prod(s)) for s in self.value_shapes]
        self._splits = np.cumsum(sizes)[:-1]
        self.dim = int(sum(sizes))
        const = [pt.tensor(f"{n}_c", shape=s, dtype=rv.dtype)
                 for n, s, rv in zip(order, self.rv_shapes, rvs)]
        fwd, bwd = [], []
        for rv, val, c in zip(rvs, values, const):
            tr = model.rvs_to_transforms.get(rv)
            fwd.append(c if tr is None else tr.forward(rv, *rv.owner.inputs))
            bwd.append(val if tr is None else tr.backward(val, *rv.owner.inputs))
        fwd = graph_replace(fwd, dict(zip(rvs, const)), strict=False)
        mode = "FAST_RUN"
        self._forward = pm.pytensorf.compile(const, fwd, on_unused_input="ignore",
                                             random_seed=False, mode=mode)
        self._backward = pm.pytensorf.compile(values, bwd, on_unused_input="ignore",
                                              random_seed=False, mode=mode)
        logp = model.logp(jacobian=True)
        grads = pt.grad(logp, values)
        self._logp_grad = pm.pytensorf.compile(values, [logp, *grads], on_unused_input="ignore",
                                               random_seed=False, mode=mode)

    def _split(self, q):
        return [p.reshape(s) for p, s in zip(np.split(q, self._splits), self.value_shapes)]

    def to_values(self, A, W):
        """Flat value-space vector of one particle (non-finite if it touches the boundary)."""
        return np.concatenate([np.ravel(v) for v in self._forward(A, W)])

    def from_values(self, q):
        """``(A, W)`` of a flat value-space vector."""
        A, W = self._backward(*self._split(q))
        return np.asarray(A), np.asarray(W)

    def logp_grad(self, q):
        """Log density (with the log-Jacobian) and its gradient at ``q``."""
        lp, *g = self._logp_grad(*self._split(q))
        return float(lp), np.concatenate([np.ravel(x) for x in g])


def hmc_rejuvenate(logp_grad, q0, *, n_steps=100, n_leapfrog=10, step_size=0.05,
                   target_accept=0.65, n_adapt=None, rng=None):
    """Run one HMC chain from ``q0``; the first half of the steps adapts the step size.

    Parameters
    ----------
    logp_grad : callable
        ``q -> (log density, gradient)``.
    q0 : numpy.ndarray
        Start (d,).
    n_steps : int
        HMC transitions (the first ``n_steps // 2`` adapt the step size).
    n_leapfrog : int
        Leapfrog steps per transition.
    step_size : float
        Initial step size.
    target_accept : float
        Acceptance rate the adaptation aims at.
    n_adapt : int, optional
        Transitions that adapt the step size (default ``n_steps // 2``); the later ones use
        the final step size, so they leave the target exactly invariant.
    rng : numpy.random.Generator, optional

    Returns
    -------
    (numpy.ndarray, dict)
        The final state and ``{"accept": mean acceptance probability after adaptation,
        "step_size": final step size}``.

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda q: (-0.5 * float(q @ q), -q)
    >>> q, info = hmc_rejuvenate(f, np.full(3, 5.0), n_steps=200, rng=np.random.default_rng(0))
    >>> bool(np.abs(q).max() < 4.0), info["accept"] > 0.3
    (True, True)
    """
    rng = as_generator(rng)
    q = np.asarray(q0, dtype=float).copy()
    lp, g = logp_grad(q)
    if not np.isfinite(lp):
        raise ValueError("hmc_rejuvenate: the log density is not finite at the start")
    log_eps = np.log(step_size)
    n_adapt = n_steps // 2 if n_adapt is None else int(n_adapt)
    acc = []
    for t in range(n_steps):
        eps = np.exp(log_eps)
        p = rng.standard_normal(q.size)
        h0 = lp - 0.5 * p @ p
        qn, pn, gn = q.copy(), p + 0.5 * eps * g, g
        lpn = lp
        for i in range(n_leapfrog):
            qn = qn + eps * pn
            lpn, gn = logp_grad(qn)
            if not np.isfinite(lpn) or not np.all(np.isfinite(gn)):
                break
            if i < n_leapfrog - 1:
                pn = pn + eps * gn
        if np.isfinite(lpn) and np.all(np.isfinite(gn)):
            pn = pn + 0.5 * eps * gn
            log_a = min(0.0, lpn - 0.5 * pn @ pn - h0)
        else:
            log_a = -np.inf
        a = float(np.exp(log_a)) if np.isfinite(log_a) else 0.0
        if np.log(rng.random()) < log_a:
            q, lp, g = qn, lpn, gn
        if t < n_adapt:
            log_eps += (a - target_accept) / np.sqrt(t + 1.0)
        else:
            acc.append(a)
    return q, {"accept": float(np.mean(acc)) if acc else float("nan"),
               "step_size": float(np.exp(log_eps))}


def rejuvenate_particles(info, A, W, *, n_steps=100, n_leapfrog=10, random_seed=None,
                         floor=REJUVENATE_FLOOR, progressbar=False):
    """Move each particle by a short HMC chain under the model (one chain per particle).

    Parameters
    ----------
    info : ParticleView
        From :func:`bnmfzoo.inference.particles.weighted.resolve_nmf_model`.
    A, W : numpy.ndarray
        (M, D, R) and (M, R, N) particles on the model's support.
    n_steps, n_leapfrog : int
        See :func:`hmc_rejuvenate`.
    random_seed : int or numpy.random.Generator, optional
        One seed is spawned per particle.
    floor : float
        Relative floor for entries on the boundary (no image in value space otherwise).
    progressbar : bool

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, dict)
        Rejuvenated ``A``, ``W`` and per-particle ``accept`` and ``step_size`` arrays.
    """
    from bnmfzoo._base.progress import progress
    from bnmfzoo.diagnostics._stein._stein_scores import floor_points

    vs = ValueSpace(info.model, info.names)
    pts, _ = floor_points(info.model, info.points(A, W), floor)
    A0, W0 = pts[info.names["A"]], pts[info.names["W"]]
    seeds = spawn_seeds(as_generator(random_seed), A.shape[0])
    outA, outW = np.empty_like(A0), np.empty_like(W0)
    accept, steps = np.empty(A.shape[0]), np.empty(A.shape[0])
    for m in progress(range(A.shape[0]), desc="rejuvenation", progressbar=progressbar):
        q0 = vs.to_values(A0[m], W0[m])
        q, st = hmc_rejuvenate(vs.logp_grad, q0, n_steps=int(n_steps),
                               n_leapfrog=int(n_leapfrog), rng=np.random.default_rng(seeds[m]))
        outA[m], outW[m] = vs.from_values(q)
        accept[m], steps[m] = st["accept"], st["step_size"]
    return outA, outW, {"accept": accept, "step_size": steps}


def exact_step_for(model):
    """The registered step class with exact conditionals that claims every free variable.

    Looks through PyMC's ``STEP_METHODS`` (where ``import bnmfzoo`` adds its Gibbs steps) for a
    class with ``exact_conditionals = True`` whose ``competence`` is IDEAL for each free
    variable of ``model``; None when there is none (e.g. SILF or uniform-noise models, or a
    ``sigma ~ HalfNormal`` that only a gradient step samples) or inside
    :func:`bnmfzoo.inference.pymc_default_steps`.

    Examples
    --------
    >>> import numpy as np
    >>> import bnmfzoo
    >>> from bnmfzoo.models import exponential_gaussian, silf
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> exact_step_for(exponential_gaussian(X, 2)).__name__
    'GibbsNMF'
    >>> exact_step_for(silf(X, 2, n_reference=5)) is None
    True
    """
    from pymc.step_methods import STEP_METHODS
    from pymc.step_methods.compound import Competence

    for cls in list(STEP_METHODS):
        if not getattr(cls, "exact_conditionals", False):
            continue
        with model:
            try:
                ok = all(cls.competence(rv, True) == Competence.IDEAL for rv in model.free_RVs)
            except Exception:  # noqa: BLE001 - a step that cannot read the model declines it
                ok = False
        if ok:
            return cls
    return None


def step_rejuvenate(info, A, W, extra, *, step_class, n_sweeps=DEFAULT_SWEEPS,
                    random_seed=None, floor=REJUVENATE_FLOOR, progressbar=False):
    """Move each particle by ``n_sweeps`` steps of an exact-conditional step method.

    Each particle is one chain: its ``A``, ``W`` and other free variables (``extra``: their
    conditional modes given the particle) are written into a point in PyMC's value space, and
    ``step_class(model=...)`` (e.g. :class:`~bnmfzoo.inference.GibbsNMF`) is stepped
    ``n_sweeps`` times with the particle's own generator. Every step draws from exact
    conditionals, so a particle on the boundary leaves it at the first sweep and needs no
    tuning. Entries on the boundary are floored first (relative ``floor``), because a zero
    has no image in value space.

    Parameters
    ----------
    info : ParticleView
        From :func:`bnmfzoo.inference.particles.weighted.resolve_nmf_model`.
    A, W : numpy.ndarray
        (M, D, R) and (M, R, N) particles on the model's support.
    extra : dict
        Name -> (M, ...) values of the other free variables (may be empty).
    step_class : type
        From :func:`exact_step_for`.
    n_sweeps : int
    random_seed : int or numpy.random.Generator, optional
        One seed is spawned per particle.
    floor : float
    progressbar : bool

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, dict)
        Moved ``A``, ``W`` and ``{"n_steps": n_sweeps}``.

    Examples
    --------
    >>> import numpy as np
    >>> import bnmfzoo
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.particles.weighted import resolve_nmf_model
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> info = resolve_nmf_model(exponential_gaussian(X, 2, sigma=0.5))
    >>> step = exact_step_for(info.model)
    >>> A, W, _ = step_rejuvenate(info, np.ones((2, 5, 2)), np.ones((2, 2, 4)), {},
    ...                           step_class=step, n_sweeps=3, random_seed=0)
    >>> A.shape, bool((A > 0).all())
    ((2, 5, 2), True)
    """
    from bnmfzoo._base.progress import progress
    from bnmfzoo.diagnostics._stein._stein_scores import floor_points
    from bnmfzoo.inference._step_glue import ValueMap

    model = info.model
    pts, _ = floor_points(model, info.points(A, W, extra), floor)
    maps = {rv.name: ValueMap(model, rv.name) for rv in model.free_RVs}
    step = step_class(model=model)
    start = model.initial_point()
    seeds = spawn_seeds(as_generator(random_seed), A.shape[0])
    nA, nW = info.names["A"], info.names["W"]
    outA = np.empty(np.shape(A), dtype=float)
    outW = np.empty(np.shape(W), dtype=float)
    for m in progress(range(A.shape[0]), desc="rejuvenation", progressbar=progressbar):
        point = dict(start)
        for name, vm in maps.items():
            point[vm.value_name] = vm.forward(np.asarray(pts[name][m], dtype=float))
        step.setup_chain(np.random.default_rng(seeds[m]), 0, int(n_sweeps))
        for _ in range(int(n_sweeps)):
            point, _ = step.step(point)
        outA[m] = maps[nA].backward(point[maps[nA].value_name])
        outW[m] = maps[nW].backward(point[maps[nW].value_name])
    return outA, outW, {"n_steps": int(n_sweeps)}


def apply_rejuvenation(info, A, W, rejuvenate, rng, progressbar):
    """Apply ``fit_particles(rejuvenate=...)``: a dict of diagnostics (with A, W if moved).

    ``rejuvenate_kernel`` names the kernel used (``"none ..."`` when none was).
    """
    from bnmfzoo._base.validation import check_int


    if rejuvenate is None:
        return {"rejuvenate_kernel": "none"}
    t0, c0 = time.perf_counter(), time.process_time()

    def done(A, W, kernel, steps, accept=float("nan")):
        return {"A": A, "W": W, "rejuvenate_kernel": kernel, "rejuvenate_steps": int(steps),
                "rejuvenate_accept": float(accept),
                "rejuvenate_time": time.perf_counter() - t0,
                "rejuvenate_cpu_time": time.process_time() - c0}

    if callable(rejuvenate):  # a kernel (model, A, W, rng) -> (A, W, stats)
        A, W, st = rejuvenate(info.model, A, W, rng)
        accept = st.get("accept")
        return done(A, W, getattr(rejuvenate, "__name__", "callable"), st.get("n_steps", 0),
                    float("nan") if accept is None else np.nanmean(accept))
    if isinstance(rejuvenate, str):
        if rejuvenate != "auto":
            raise TypeError(f"rejuvenate must be 'auto', None, an int, a dict or a kernel, "
                             f"got {rejuvenate!r}")
        if exact_step_for(info.model) is None:
            return {"rejuvenate_kernel": "none (no step method with exact conditionals for "
                                         "every free variable; rejuvenate=100 runs HMC)"}
        opts = {"sweeps": DEFAULT_SWEEPS}
    elif isinstance(rejuvenate, bool) or not isinstance(rejuvenate, (int, np.integer, dict)):
        raise TypeError(f"rejuvenate must be 'auto', None, an int, a dict or a kernel, got "
                        f"{rejuvenate!r}")
    else:
        opts = ({"n_steps": int(rejuvenate)} if not isinstance(rejuvenate, dict)
                else dict(rejuvenate))
    if "sweeps" in opts:
        unknown = set(opts) - {"sweeps", "floor"}
        if unknown:
            raise TypeError(f"rejuvenate: unknown options {sorted(unknown)}")
        n = check_int(opts.pop("sweeps"), name="rejuvenate sweeps")
        step_class = exact_step_for(info.model)
        if step_class is None:
            raise TypeError("rejuvenate={'sweeps': ...} needs a step method with exact "
                            "conditionals for every free variable (e.g. GibbsNMF on a "
                            "recognized Gaussian model); use an int for HMC")
        A, W, st = step_rejuvenate(info, A, W, info.condition(A, W), step_class=step_class,
                                      n_sweeps=n, random_seed=rng, progressbar=progressbar,
                                      **opts)
        return done(A, W, step_class.__name__, n)
    unknown = set(opts) - {"n_steps", "n_leapfrog", "floor"}
    if unknown:
        raise TypeError(f"rejuvenate: unknown options {sorted(unknown)}")
    if opts.get("n_steps", 100) < 1:
        raise ValueError(f"rejuvenate: n_steps must be >= 1, got {opts['n_steps']!r}")
    A, W, st = rejuvenate_particles(info, A, W, random_seed=rng, progressbar=progressbar,
                                       **opts)
    return done(A, W, "hmc", opts.get("n_steps", 100), np.nanmean(st["accept"]))
