"""Stein variational gradient descent with the paper's IMQ kernel (SVGD and SVGD-Q).

Masood & Doshi-Velez (2019), Sec. 6.2 baselines: SVGD (Liu & Wang 2016) with the two-block
normalized IMQ kernel (eq. 7) instead of the RBF kernel, ``M = 5`` particles, 2000 steps, and the
model's "scaling and non-negativity constraints" imposed after every step (entries clipped at a
small positive floor; for Dirichlet columns of ``A`` each column rescaled to sum to one with the
scale moved into ``W``). SVGD-Q starts from Q-Transform initializations (before the NMF solve,
a detail the paper leaves open) instead of random ones.

Our own NumPy implementation: the score comes from the model (compiled once,
:func:`bnmfzoo.diagnostics.score_function`, constrained space), the kernel gradient from the
Stein helper's kernel protocol, and the update is Adam with a per-block step size proportional to
the block's mean magnitude (``A`` and ``W`` live on very different scales). The shared pieces
(initial particles, optimizer, checkpointed output) are used by
:mod:`bnmfzoo.inference.particles.dsgd`.

The *update* follows the paper (constrained space, eq. 7 kernel); the weights and the reported
discrepancies at the checkpoints do not: they use :func:`bnmfzoo.diagnostics.stein_matrix`'s
valid default (unconstrained space, median-heuristic IMQ kernel) unless ``space`` and
``ksd_kernel`` say otherwise.
"""


import numpy as np

from bnmfzoo._base.nmf_solvers import random_init
from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.timing import Timer
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.particles.weighted import (
    default_kernel,
    particle_datatree,
    resolve_nmf_model,
    weigh_particles,
)


def initial_particles(info, init, n_particles, rng, *, q_bank=None):
    """Starting particles (M, D, R), (M, R, N) on the support: "random", "qtransform" or arrays.

    Generated starts are balanced like ``fit_particles``' particles
    (:meth:`~bnmfzoo.inference.particles._view.ParticleView.finalize_particles`); given arrays
    or a DataTree are only projected.
    """
    if isinstance(init, tuple):
        A, W = (np.asarray(v, dtype=float) for v in init)
        if A.ndim != 3 or W.ndim != 3 or A.shape[0] != W.shape[0]:
            raise ValueError("init=(A, W) must be stacks of shape (M, D, R) and (M, R, N)")
        return info.project(A, W)
    if hasattr(init, "children") and "particles" in init.children:
        p = init["particles"]
        return info.project(p["A"].values, p["W"].values)
    X = np.maximum(info.X_values, 0.0)  # starts only; NMF solvers need X >= 0 (see _init)
    m = info.mask if info.masked else None
    seeds = spawn_seeds(rng, n_particles)
    if init == "random":
        pairs = [random_init(X, info.rank, np.random.default_rng(s), mask=m) for s in seeds]
    elif init == "qtransform":
        from bnmfzoo._base.nmf_solvers import complete_matrix
        from bnmfzoo.inference.particles.qtransform import (
            apply_q_transform,
            generate_q_bank,
            svd_symmetric,
        )

        bank = q_bank if q_bank is not None else generate_q_bank()
        Xc = complete_matrix(X, m, info.rank) if m is not None else X
        svd = svd_symmetric(Xc, bank.QA.shape[1])
        pairs = [apply_q_transform(Xc, bank.QA[i % len(bank)], bank.QW[i % len(bank)],
                                   info.rank, rng=np.random.default_rng(s), svd=svd)
                 for i, s in enumerate(seeds)]
    else:
        raise ValueError(
            f"init must be 'random', 'qtransform', a DataTree with particles or (A, W), got "
            f"{init!r}"
        )
    A = np.stack([p[0] for p in pairs])
    W = np.stack([p[1] for p in pairs])
    return info.finalize_particles(A, W)  # generated starts also get the prior's best scale


class Adam:
    """Adam ascent steps with a per-block base step size (``lr * scale``)."""

    def __init__(self, shapes, scales, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        self.m = [np.zeros(s) for s in shapes]
        self.v = [np.zeros(s) for s in shapes]
        self.steps = [lr * s for s in scales]
        self.b1, self.b2, self.eps, self.t = beta1, beta2, eps, 0

    def step(self, params, grads):
        """Return ``params`` moved along ``grads`` (ascent)."""
        self.t += 1
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            mh = self.m[i] / (1 - self.b1**self.t)
            vh = self.v[i] / (1 - self.b2**self.t)
            out.append(p + self.steps[i] * mh / (np.sqrt(vh) + self.eps))
        return out


def _checkpoint_list(checkpoints, n_steps):
    if checkpoints is None:
        checkpoints = [c for c in (10, 30, 100, 300, 1000, 3000) if c < n_steps] + [n_steps]
    cps = sorted({int(c) for c in checkpoints if 0 <= int(c) <= n_steps})
    if not cps:
        raise ValueError(f"checkpoints must contain a value between 0 and n_steps={n_steps}")
    return cps


def run_particle_optimizer(info, A, W, direction, *, n_steps, learning_rate, checkpoints,
                           kernel, weights, method, n_draws, rng, progressbar, setup_time=0.0,
                           setup_cpu_time=0.0, attrs=None, extra_diagnostics=None,
                           space="unconstrained"):
    """Shared loop of SVGD and DSGD: ascent along ``direction(A, W) -> (dA, dW)``.

    The support projection follows every step; the particles are Stein-weighted at the
    checkpoints (evaluation time excluded from the reported times) with the discrepancy
    ``kernel`` in ``space`` (:func:`~bnmfzoo.inference.particles.weighted.weigh_particles`).
    Times are recorded in wall seconds (``checkpoint_time``, ``total_time``) and CPU seconds of
    this process (``checkpoint_cpu_time``, ``total_cpu_time``), both starting from the setup
    times given.
    """
    cps = _checkpoint_list(checkpoints, n_steps)
    scale_A = float(np.mean(A))
    scale_W = float(np.mean(W))
    opt = Adam([A.shape, W.shape], [scale_A, scale_W], learning_rate)
    clock = Timer(wall=setup_time, cpu=setup_cpu_time)
    rows = []
    res = None

    def evaluate(step):
        nonlocal res
        res = weigh_particles(info, A, W, weights=weights, kernel=kernel, space=space)
        rows.append((step, clock.wall, res["stein_discrepancy"], res["stein_discrepancy_uniform"],
                     clock.cpu, res["ksd_u_uniform"]))

    if cps[0] == 0:
        evaluate(0)
    for step in progress(range(1, n_steps + 1), desc=method, progressbar=progressbar):
        with clock:
            dA, dW = direction(A, W)
            A, W = opt.step([A, W], [dA, dW])
            A, W = info.project(A, W)
        if step in cps:
            evaluate(step)
    cp = np.array(rows)
    diagnostics = {
        "checkpoint_step": (("checkpoint",), cp[:, 0].astype(int)),
        "checkpoint_time": (("checkpoint",), cp[:, 1]),
        "checkpoint_cpu_time": (("checkpoint",), cp[:, 4]),
        "checkpoint_stein_discrepancy": (("checkpoint",), cp[:, 2]),
        "checkpoint_stein_discrepancy_uniform": (("checkpoint",), cp[:, 3]),
        "checkpoint_ksd_u_uniform": (("checkpoint",), cp[:, 5]),
        "total_time": float(clock.wall),
        "total_cpu_time": float(clock.cpu),
        **(extra_diagnostics or {}),
        "n_steps": int(n_steps),
        "learning_rate": float(learning_rate),
    }
    from bnmfzoo._terms.silf import objective_value

    objective = np.array([objective_value(info.X.values, a @ w, info.mask) for a, w in zip(A, W)])
    return particle_datatree(info, A, W, res, method=method, n_draws=n_draws, rng=rng,
                             particle_vars={"objective": objective}, diagnostics=diagnostics,
                             attrs=attrs)


def svgd_direction(score_fn, info, kernel):
    """SVGD update ``phi(theta_i) = mean_j [k(theta_j, theta_i) S_j + grad_{theta_j} k]``."""
    a_name, w_name = info.names["A"], info.names["W"]

    def direction(A, W):
        M = A.shape[0]
        S = score_fn(info.points(A, W))
        SA = S[:, score_fn.blocks[a_name]].reshape(A.shape)
        SW = S[:, score_fn.blocks[w_name]].reshape(W.shape)
        fa, fw = A.reshape(M, -1), W.reshape(M, -1)
        sq = {}
        for name, x in ((a_name, fa), (w_name, fw)):
            n2 = np.einsum("ij,ij->i", x, x)
            sq[name] = np.maximum(n2[:, None] + n2[None, :] - 2 * x @ x.T, 0.0)
        k, d1, _ = kernel.evaluate(sq)  # k[j, i], d1 = dk/dr2 per block
        # grad_{theta_j} k(theta_j, theta_i) = 2 F_g (theta_j - theta_i); summed over j
        dA = (k.T @ SA.reshape(M, -1)
              + 2 * (d1[a_name].T @ fa - d1[a_name].sum(axis=0)[:, None] * fa)) / M
        dW = (k.T @ SW.reshape(M, -1)
              + 2 * (d1[w_name].T @ fw - d1[w_name].sum(axis=0)[:, None] * fw)) / M
        return dA.reshape(A.shape), dW.reshape(W.shape)

    return direction


def fit_svgd(model, *, n_particles=5, n_steps=2000, init="random", learning_rate=1e-2,
             checkpoints=None, kernel=None, weights="stein", space="unconstrained",
             ksd_kernel=None, q_bank=None, X=None, mask=None, var_names=None, n_draws=None,
             random_seed=None, progressbar=True):
    """SVGD (or SVGD-Q with ``init="qtransform"``) with the paper's IMQ kernel.

    Parameters
    ----------
    model : pymc.Model
        Free variables ``A`` and ``W`` only (see :func:`bnmfzoo.inference.fit_particles`).
    n_particles : int, default 5
        ``M`` (the paper's gradient baselines use 5).
    n_steps : int, default 2000
        Gradient steps.
    init : {"random", "qtransform"}, DataTree or (A, W), default "random"
        Starting particles: scikit-learn-style random inits, Q-Transform inits (SVGD-Q), the
        ``particles`` group of a previous fit, or stacks ``(M, D, R)``, ``(M, R, N)``.
    learning_rate : float, default 1e-2
        Adam step size relative to each block's mean magnitude.
    checkpoints : list of int, optional
        Steps at which the particles are Stein-weighted and timed (default 10, 30, 100, ...).
    kernel : BlockKernel, optional
        Base kernel of the SVGD updates (default: the paper's IMQ pair, eq. 7).
    weights : {"stein", "uniform"}
        Weights of the final particles.
    space : {"unconstrained", "constrained"}, default "unconstrained"
        Space of the Stein discrepancy behind the weights and the reported KSDs (not of the
        updates, which follow the paper); see :func:`bnmfzoo.inference.fit_particles`.
    ksd_kernel : None, str or kernel object
        Base kernel of that discrepancy (default: median-heuristic IMQ;
        ``space="constrained", ksd_kernel="masood2019"`` is the paper's evaluation).
    q_bank : QBank, optional
        Bank for ``init="qtransform"``.
    X, mask, var_names
        As in :func:`~bnmfzoo.inference.fit_particles`.
    n_draws : int, optional
        Resampled posterior size (default ``max(100, n_particles)``).
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool, default True

    Returns
    -------
    xarray.DataTree
        As :func:`~bnmfzoo.inference.fit_particles`, with ``diagnostics`` ``checkpoint_*``
        (dim ``checkpoint``: step, seconds of optimization, V-statistics with Stein and uniform
        weights, U-statistic with uniform weights); root attrs
        ``method`` (``"svgd"`` or ``"svgd_q"``) and ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> from bnmfzoo.inference import fit_svgd
    >>> X = np.random.default_rng(0).random((8, 7))
    >>> dt = fit_svgd(silf(X, 2, n_reference=5), n_steps=50, random_seed=0,
    ...               progressbar=False)  # doctest: +SKIP
    """
    from bnmfzoo.diagnostics import score_function

    info = resolve_nmf_model(model, X=X, mask=mask, var_names=var_names, method="fit_svgd")
    n_draws = _check_steps(n_particles, n_steps, learning_rate, n_draws)
    rng = as_generator(random_seed)
    with Timer() as setup:
        A, W = initial_particles(info, init, int(n_particles), rng, q_bank=q_bank)
    kernel = default_kernel(info) if kernel is None else kernel
    score_fn = score_function(model, var_names=[info.names["A"], info.names["W"]],
                              space="constrained")
    method = "svgd_q" if isinstance(init, str) and init == "qtransform" else "svgd"
    return run_particle_optimizer(
        info, A, W, svgd_direction(score_fn, info, kernel), n_steps=int(n_steps),
        learning_rate=learning_rate, checkpoints=checkpoints, kernel=ksd_kernel, weights=weights,
        space=space, method=method, n_draws=int(n_draws or max(100, A.shape[0])), rng=rng,
        progressbar=progressbar, setup_time=setup.wall, setup_cpu_time=setup.cpu,
        attrs={"init": init if isinstance(init, str) else "given"},
    )


def _check_steps(n_particles, n_steps, learning_rate, n_draws=None):
    """Validate the particle optimizers' common arguments; return ``n_draws`` (or None)."""
    check_int(n_particles, name="n_particles", minimum=2)
    check_int(n_steps, name="n_steps")
    check_number(learning_rate, name="learning_rate", minimum=0.0)
    return check_int(n_draws, name="n_draws", allow_none=True)
