"""RRT posterior exploration with online nonparametric VI (Masood & Doshi-Velez 2016).

A rapidly-exploring random tree grows over the oblique manifold of change-of-basis matrices
``Q`` (``A = floor(A_svd Q)``, ``W = floor(Q^-1 W_svd)``, see
:mod:`bnmfzoo.inference.exploration.oblique`), seeded by restarts of Lin's projected-gradient NMF.
Every feasible node is proposed to an online NVI
(:class:`bnmfzoo.inference.exploration.npvi.OnlineNPVI`), which keeps it as a mixture component
only if it raises the ELBO enough.

Gaussian model (fixed sigma): nodes are "feasible" if their quality (single-component ELBO
after the scale optimisation) is at least a threshold that starts at the poorest initial node
and, once the tree holds ``max_temporary`` extra nodes, tracks the best quality in the tree,
each new node replacing the poorest one (a hill-climber on quality). Uniform model: feasible
means every residual inside ``(-eps, eps)`` and a weighted angular distance of at least
``min_angle`` degrees to every tree node; when ``max_temporary`` temporary nodes exist, the
tree restarts from its base nodes (the restarts plus every accepted component) and the
minimum angle grows by ``min_angle_increment``.
"""

import itertools
import time

import numpy as np

from bnmfzoo._progress import progress
from bnmfzoo._rng import as_generator, spawn_seeds
from bnmfzoo.diagnostics.distances import wad_batch
from bnmfzoo.inference.exploration import oblique as ob
from bnmfzoo.inference.exploration._lin_pg import lin_pg_nmf
from bnmfzoo.inference.exploration.npvi import LogJoint, OnlineNPVI, fit_nvi, mixture_datatree
from bnmfzoo.models._spec import get_spec


def _check_int(value, name, minimum=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_float(value, name, minimum=0.0, strict=True):
    try:
        v = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a number, got {value!r}") from err
    if not np.isfinite(v) or (v <= minimum if strict else v < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {value!r}")
    return v


def _quality(target, A, W):
    """Gaussian node quality: one-component ELBO at the optimal variance (our choice, Eq. 3)."""
    f = target.value(A, W)
    s2 = target.optimal_variance(A, W)
    if not np.isfinite(f) or not np.isfinite(s2):
        return -np.inf
    return f + 0.5 * s2 * target.trace_hessian(A, W) + 0.5 * target.P * np.log(4 * np.pi * s2)


def fit_rrt(
    model,
    *,
    n_restarts=None,
    restarts=None,
    max_temporary=None,
    step_size=0.01,
    step_growth=1.1,
    max_steps=50,
    max_components=5000,
    max_failures=10_000,
    max_attempts=None,
    min_angle=0.01,
    min_angle_increment=0.5,
    threshold=None,
    prune_threshold=None,
    variance=None,
    polish_iter=10,
    n_draws=500,
    random_seed=None,
    progressbar=True,
):
    """Explore the NMF solution set with an RRT on the oblique manifold, fitting an online NVI.

    Parameters
    ----------
    model : pymc.Model
        A :func:`bnmfzoo.models.uniform_noise` model or a
        :func:`bnmfzoo.models.exponential_gaussian` model with a fixed ``sigma``.
    n_restarts : int, optional
        Lin restarts seeding the tree: 50 (Gaussian) or 10 (uniform) as in the paper. A
        uniform-noise model that computed its own epsilon reuses those restarts.
    restarts : list of tuple of numpy.ndarray, optional
        Use these ``(A, W)`` as the restarts instead.
    max_temporary : int, optional
        Temporary-node cap: 100 (Gaussian) or 90 (uniform).
    step_size, step_growth, max_steps : float, float, int
        First step on the manifold (0.01), its growth per feasible step (x1.1), and the maximum
        number of steps per extension (50).
    max_components : int
        Stop after ONVI has processed this many candidates (5000).
    max_failures : int
        Stop after this many consecutive extensions without a feasible node (10,000).
    max_attempts : int, optional
        Extra budget: stop after this many extension attempts (None = no limit).
    min_angle, min_angle_increment : float
        Uniform model: initial minimum weighted angular distance (degrees) of a new node to the
        tree (0.01), and its increase at every tree restart (0.5).
    threshold : float or "reference", optional
        ONVI acceptance threshold (default 1e-4 Gaussian, "reference" uniform; see
        :class:`~bnmfzoo.inference.exploration.npvi.OnlineNPVI`).
    prune_threshold : float or "reference", optional
        Minimum ELBO loss for keeping an old ONVI component (default: ``1e-4``, see
        :class:`~bnmfzoo.inference.exploration.npvi.OnlineNPVI`).
    variance : float, optional
        Fixed component variance (uniform default: Gaussian-surrogate NVI M=1 value).
    polish_iter : int
        Gaussian model: sweeps of NVI (M = 1) that optimise the first restart under the
        second-order ELBO (the paper's "one is optimized under Eq. 3") before it becomes the
        first ONVI component and a tree node; 0 skips it. Ignored for the uniform model, where
        the paper uses NVI (M = 1) only for the fixed variance (see ``variance``).
    n_draws : int
        Draws from the fitted mixture stored in ``posterior`` (negative entries set to 0).
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        ``posterior`` (A, W draws from the mixture; one chain), ``sample_stats`` (the component
        of each draw), ``observed_data``, ``variational`` (component ``weight``, ``variance``,
        ``A_mean``, ``W_mean``, ``log_joint``, ``elbo_trace``) and ``diagnostics`` (tree
        statistics). Root attrs: ``method="rrt"``, ``model``, ``elbo``, ``n_components``.

    Notes
    -----
    Defaults for what the paper (Sec. 3.2, 4.3) leaves open are our choices: Frobenius nearest
    neighbour, unit-Frobenius tangent direction, every feasible step becomes a node and is
    proposed to ONVI, every node and restart is rescaled by
    :meth:`~bnmfzoo.inference.exploration.npvi.LogJoint.rescale` (AW unchanged; ELBO-optimal
    scale, prior included; the paper rescales only Gaussian nodes and ignores the prior), the
    restarts themselves are proposed to ONVI first (the restart's own factors; its projection
    serves as the tree node), consecutive failures count
    towards ``max_failures``. Missing entries: the SVD basis is computed on the data completed
    with the first restart's reconstruction; held-out entries never enter ``f``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import uniform_noise
    >>> from bnmfzoo.inference import fit_rrt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((10, 3)) @ rng.random((3, 8)) + 0.01 * rng.random((10, 8))
    >>> model = uniform_noise(X, 3, random_seed=0)
    >>> dt = fit_rrt(model, max_attempts=20, random_seed=1, progressbar=False)
    >>> round(dt["variational"]["weight"].sum().item(), 6)
    1.0
    """
    spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method="fit_rrt")
    target = LogJoint.from_model(model, method="fit_rrt")
    gaussian = target.likelihood == "gaussian"
    R = target.rank
    n_restarts = _check_int(50 if gaussian and n_restarts is None else (10 if n_restarts is None
                            else n_restarts), "n_restarts")
    max_temporary = _check_int(
        (100 if gaussian else 90) if max_temporary is None else max_temporary, "max_temporary"
    )
    step_size = _check_float(step_size, "step_size")
    step_growth = _check_float(step_growth, "step_growth", minimum=1.0, strict=False)
    max_steps = _check_int(max_steps, "max_steps")
    max_components = _check_int(max_components, "max_components")
    max_failures = _check_int(max_failures, "max_failures")
    max_attempts = _check_int(max_attempts, "max_attempts", allow_none=True)
    min_angle = _check_float(min_angle, "min_angle", strict=False)
    min_angle_increment = _check_float(min_angle_increment, "min_angle_increment", strict=False)
    n_draws = _check_int(n_draws, "n_draws")
    polish_iter = _check_int(polish_iter, "polish_iter", minimum=0)
    rng = as_generator(random_seed)
    seeds = spawn_seeds(rng, 2)
    t0 = time.perf_counter()

    # -- restarts and SVD basis ------------------------------------------------------------
    if restarts is None and not gaussian and "restarts" in spec.hyper and (
        len(spec.hyper["restarts"]) >= n_restarts
    ):
        restarts = spec.hyper["restarts"][:n_restarts]
    if restarts is None:
        restart_seeds = spawn_seeds(seeds[0], n_restarts)
        restarts = [
            lin_pg_nmf(spec.X_values, R, mask=spec.mask, random_seed=s)
            for s in progress(restart_seeds, desc="Lin restarts", progressbar=progressbar)
        ]
    restarts = [(np.asarray(A, float), np.asarray(W, float)) for A, W in restarts]
    if not restarts:
        raise ValueError("restarts must hold at least one (A, W) pair")
    X_full = spec.X_values
    if not spec.mask.all():
        A0, W0 = restarts[0]
        X_full = np.where(spec.mask, X_full, A0 @ W0)
    A_svd, W_svd = ob.svd_basis(X_full, R)

    onvi = OnlineNPVI(target, threshold=threshold, variance=variance,
                      prune_threshold=prune_threshold)
    if variance is None and not gaussian:
        # NVI (M=1) under the Gaussian surrogate at the first restart (paper: unspecified)
        A0, W0 = target.rescale(*restarts[0])
        onvi.fixed_variance = target.optimal_variance(A0, W0, sigma2=target.scale**2 / 3.0)

    def node_factors(Q):
        return target.rescale(*ob.factors(Q, A_svd, W_svd))

    # tree state: Q matrices, factors (uniform: for the angle test), qualities (Gaussian)
    tree_Q, tree_A, tree_W, tree_q = [], [], [], []
    base_idx = []  # uniform: indices (into the lists) of permanent base nodes

    node_residual, node_min = [], []  # every node ever added (feasibility record)

    def add_node(Q, A, W, q=np.nan, base=False):
        node_residual.append(target.max_abs_residual(A, W))
        node_min.append(min(A.min(), W.min()))
        tree_Q.append(Q)
        tree_A.append(A)
        tree_W.append(W)
        tree_q.append(q)
        if base:
            base_idx.append(len(tree_Q) - 1)

    if polish_iter > 0 and gaussian:
        # Gaussian: the paper optimises one Lin solution under Eq. 3 (NVI with M = 1: mean by
        # L-BFGS-B, variance in closed form) as the initial ONVI component; it also joins the
        # tree. Uniform: the paper takes only the *variance* of NVI (M = 1) (set above); its
        # mean is not a component. Keeping it (as an earlier version did) put a component
        # ~90 nats of prior above every restart on ALL/AML, so ONVI rejected everything else.
        nvi1 = fit_nvi(target, [target.rescale(*restarts[0])], max_iter=polish_iter,
                       variance=onvi.fixed_variance)
        restarts = [target.unvec(nvi1.means[0])] + restarts
    for A_lin, W_lin in restarts:
        # every restart is proposed to ONVI; only invertible changes of basis join the tree
        # (a restart with a zero factor gives a singular Q)
        Q = ob.q_from_factors(A_lin, A_svd)
        invertible = ob.is_invertible(Q)
        A, W = node_factors(Q) if invertible else (None, None)
        if gaussian:
            onvi.propose(*target.rescale(A_lin, W_lin))
            if invertible:
                add_node(Q, A, W, _quality(target, A, W))
        else:
            # the restart itself is feasible by construction of epsilon; its projection onto
            # the SVD subspace (floor(A_svd Q), floor(Q^-1 W_svd)) is only the tree node
            onvi.propose(*target.rescale(A_lin, W_lin))
            if invertible:
                add_node(Q, A, W, base=True)
    if not tree_Q:
        raise ValueError("no restart gave an invertible change of basis; check rank")
    n_initial = len(tree_Q)
    thr = float(np.nanmin(tree_q)) if gaussian else None
    filled = False
    cur_angle = min_angle
    n_tree_restarts = 0
    n_nodes_added = 0
    n_attempts = 0
    fails = 0

    def feasible(Q):
        if not ob.is_invertible(Q):
            return False, None
        A, W = node_factors(Q)
        if gaussian:
            q = _quality(target, A, W)
            return q >= thr, (A, W, q)
        if not target.feasible(A, W):
            return False, None
        wad = wad_batch(A[None], np.stack(tree_A), W[None], np.stack(tree_W))
        return bool(np.min(wad) >= cur_angle), (A, W, np.nan)

    bar = progress(itertools.count(), desc="RRT", progressbar=progressbar)
    for _ in bar:
        if (onvi.n_processed >= max_components or fails >= max_failures
                or (max_attempts is not None and n_attempts >= max_attempts)):
            break
        n_attempts += 1
        Qr = ob.random_oblique(R, rng)
        c = int(np.argmin(ob.frobenius_to(np.stack(tree_Q), Qr)))
        Qc = tree_Q[c]
        s = step_size
        added = False
        for _k in range(max_steps):
            Qn = ob.step_towards(Qc, Qr, s)
            if Qn is None:
                break
            ok, info = feasible(Qn)
            if not ok:
                break
            A, W, q = info
            add_node(Qn, A, W, q)
            n_nodes_added += 1
            added = True
            accepted = onvi.propose(A, W)
            if not gaussian and accepted:
                base_idx.append(len(tree_Q) - 1)
            Qc = Qn
            s *= step_growth
            if gaussian and len(tree_Q) > n_initial + max_temporary:
                # replace the poorest node; the threshold tracks the best quality
                worst = int(np.argmin(tree_q))
                for lst in (tree_Q, tree_A, tree_W, tree_q):
                    del lst[worst]
                filled = True
                thr = float(np.max(tree_q))
            if onvi.n_processed >= max_components or np.linalg.norm(Qr - Qc) < s:
                break
        fails = 0 if added else fails + 1
        if not gaussian and len(tree_Q) - len(base_idx) >= max_temporary:
            keep = sorted(base_idx)
            tree_Q[:] = [tree_Q[i] for i in keep]
            tree_A[:] = [tree_A[i] for i in keep]
            tree_W[:] = [tree_W[i] for i in keep]
            tree_q[:] = [tree_q[i] for i in keep]
            base_idx[:] = list(range(len(keep)))
            cur_angle += min_angle_increment
            n_tree_restarts += 1
        if progressbar and hasattr(bar, "set_postfix"):
            bar.set_postfix(components=onvi.n_components, processed=onvi.n_processed,
                            refresh=False)
    if hasattr(bar, "close"):
        bar.close()

    diagnostics = {
        "n_attempts": n_attempts,
        "n_nodes_added": n_nodes_added,
        "n_processed": onvi.n_processed,
        "n_accepted": onvi.n_accepted,
        "n_pruned": onvi.n_pruned,
        "n_tree_restarts": n_tree_restarts,
        "final_min_angle": cur_angle,
        "final_threshold": np.nan if thr is None else thr,
        "threshold_filled": int(filled),
        "consecutive_failures": fails,
        "n_restarts": len(restarts),
        "elapsed_seconds": time.perf_counter() - t0,
        "node_max_abs_residual": ("node", np.asarray(node_residual)),
        "node_min_entry": ("node", np.asarray(node_min)),
        "node_is_restart": ("node", np.arange(len(node_residual)) < n_initial),
    }
    return mixture_datatree(
        onvi,
        spec.X,
        n_draws=n_draws,
        random_seed=seeds[1],
        method="rrt",
        model_name=spec.family,
        diagnostics=diagnostics,
        attrs={"likelihood": target.likelihood},
    )
