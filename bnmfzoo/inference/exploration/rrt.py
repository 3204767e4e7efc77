"""RRT posterior exploration with online nonparametric VI (Masood & Doshi-Velez 2016).

A rapidly-exploring random tree grows over the oblique manifold of change-of-basis matrices
``Q`` (``A = floor(A_svd Q)``, ``W = floor(Q^-1 W_svd)``, see
:mod:`bnmfzoo.inference.exploration.oblique`), seeded by restarts of Lin's projected-gradient NMF.
Every feasible node is proposed to an online NVI
(:class:`bnmfzoo.inference.exploration._online.OnlineNPVI`), which keeps it as a mixture component
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
from dataclasses import dataclass, field

import numpy as np

from bnmfzoo._base.nmf_solvers import lin_pg_nmf
from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.diagnostics.distances import wad_batch
from bnmfzoo.inference.exploration import oblique as ob
from bnmfzoo.inference.exploration._online import OnlineNPVI, check_threshold
from bnmfzoo.inference.exploration._target import LogJoint
from bnmfzoo.inference.exploration.npvi import fit_nvi, mixture_datatree
from bnmfzoo.models._spec import get_spec


def _check_int(value, name, minimum=1, allow_none=False):
    return check_int(value, name=name, minimum=minimum, allow_none=allow_none)


def _check_float(value, name, minimum=0.0, strict=True):
    return check_number(value, name=name, minimum=minimum, strict=strict)


def _quality(target, A, W):
    """Gaussian node quality: single-component ELBO at the optimal variance.

    ``f(mu) + s2 / 2 tr H(mu) + P / 2 log(4 pi s2)`` (Gershman et al. 2012, eq. 5 with ``M = 1``),
    our reading of the "joint probability" threshold of Masood & Doshi-Velez (2016), Sec. 4.3.
    """
    f = target.value(A, W)
    s2 = target.optimal_variance(A, W)
    if not np.isfinite(f) or not np.isfinite(s2):
        return -np.inf
    return f + 0.5 * s2 * target.trace_hessian(A, W) + 0.5 * target.P * np.log(4 * np.pi * s2)


@dataclass
class _Tree:
    """The RRT's state: its nodes (parallel lists, one entry per node) and feasibility levels.

    Nodes are changes of basis ``Q`` on the oblique manifold with their factors ``A``, ``W``
    and (Gaussian model) quality. Base nodes (uniform model: the restarts and every node ONVI
    accepted) survive :meth:`restart_from_base`; the others are temporary.
    ``node_residual`` / ``node_min`` record every node ever added (never pruned).

    Attributes
    ----------
    target : LogJoint
        The model's log joint.
    A_svd, W_svd : numpy.ndarray
        The SVD basis that maps a node ``Q`` to its factors (see :meth:`node_factors`).
    threshold : float or None
        Gaussian model: the quality a new node needs.
    min_angle : float
        Uniform model: the weighted angular distance (degrees) a new node keeps to every node.
    filled : bool
        Gaussian model: whether the temporary nodes have filled up once.
    n_restarts : int
        Uniform model: tree restarts so far.
    """

    target: LogJoint
    A_svd: np.ndarray | None = None
    W_svd: np.ndarray | None = None
    Q: list = field(default_factory=list)
    A: list = field(default_factory=list)
    W: list = field(default_factory=list)
    quality: list = field(default_factory=list)
    base: list = field(default_factory=list)
    node_residual: list = field(default_factory=list)
    node_min: list = field(default_factory=list)
    threshold: float | None = None
    min_angle: float = 0.0
    filled: bool = False
    n_restarts: int = 0

    @property
    def gaussian(self):
        """True under the Gaussian likelihood (quality threshold), else uniform (angles)."""
        return self.target.likelihood == "gaussian"

    @property
    def n_temporary(self):
        """Number of nodes that are not base nodes."""
        return len(self.Q) - len(self.base)

    def add(self, Q, A, W, quality=np.nan, *, base=False):
        """Append a node (and record its largest residual and smallest entry)."""
        self.node_residual.append(self.target.max_abs_residual(A, W))
        self.node_min.append(min(A.min(), W.min()))
        self.Q.append(Q)
        self.A.append(A)
        self.W.append(W)
        self.quality.append(quality)
        if base:
            self.make_last_base()

    def node_factors(self, Q):
        """Factors of node ``Q``: ``floor(A_svd Q)``, ``floor(Q^-1 W_svd)``, rescaled."""
        return self.target.rescale(*ob.factors(Q, self.A_svd, self.W_svd))

    def feasible(self, Q):
        """``(ok, (A, W, quality))`` for a candidate node ``Q``.

        Gaussian: the quality reaches :attr:`threshold`. Uniform: every residual inside the box
        and a weighted angular distance of at least :attr:`min_angle` to every node.
        """
        if not ob.is_invertible(Q):
            return False, None
        A, W = self.node_factors(Q)
        if self.gaussian:
            q = _quality(self.target, A, W)
            return q >= self.threshold, (A, W, q)
        if not self.target.feasible(A, W):
            return False, None
        return self.min_angle_to(A, W) >= self.min_angle, (A, W, np.nan)

    def make_last_base(self):
        """Make the newest node a base node."""
        self.base.append(len(self.Q) - 1)

    def nearest(self, Q):
        """Index of the node nearest ``Q`` in Frobenius distance."""
        return int(np.argmin(ob.frobenius_to(np.stack(self.Q), Q)))

    def min_angle_to(self, A, W):
        """Smallest weighted angular distance (degrees) from ``(A, W)`` to a node."""
        wad = wad_batch(A[None], np.stack(self.A), W[None], np.stack(self.W))
        return float(np.min(wad))

    def replace_poorest(self):
        """Gaussian model: drop the poorest node; the threshold becomes the best quality."""
        worst = int(np.argmin(self.quality))
        for nodes in (self.Q, self.A, self.W, self.quality):
            del nodes[worst]
        self.filled = True
        self.threshold = float(np.max(self.quality))

    def restart_from_base(self, angle_increment):
        """Uniform model: keep only the base nodes and raise the minimum angle."""
        keep = sorted(self.base)
        self.Q[:] = [self.Q[i] for i in keep]
        self.A[:] = [self.A[i] for i in keep]
        self.W[:] = [self.W[i] for i in keep]
        self.quality[:] = [self.quality[i] for i in keep]
        self.base[:] = list(range(len(keep)))
        self.min_angle += angle_increment
        self.n_restarts += 1


def _restarts_and_basis(spec, rank, restarts, n_restarts, seed, *, gaussian, progressbar):
    """Lin restarts and the SVD basis.

    The restarts are ``restarts`` if given; else, for a uniform-noise model whose epsilon was
    computed by :func:`bnmfzoo.models.uniform_noise` in this process, the restarts that
    defined it (:func:`bnmfzoo.models.uniform.epsilon_restarts`); else fresh Lin restarts.

    With missing entries the SVD runs on the data completed with the first restart.
    """
    if restarts is None and not gaussian:
        from bnmfzoo.models.uniform import epsilon_restarts

        known = epsilon_restarts(spec.X_values, spec.mask, rank, spec.hyper.epsilon)
        if known is not None and len(known) >= n_restarts:
            restarts = known[:n_restarts]
    if restarts is None:
        restart_seeds = spawn_seeds(seed, n_restarts)
        restarts = [
            lin_pg_nmf(spec.X_values, rank, mask=spec.mask, random_seed=s)
            for s in progress(restart_seeds, desc="Lin restarts", progressbar=progressbar)
        ]
    restarts = [(np.asarray(A, float), np.asarray(W, float)) for A, W in restarts]
    if not restarts:
        raise ValueError("restarts must hold at least one (A, W) pair")
    X_full = spec.X_values
    if not spec.mask.all():
        A0, W0 = restarts[0]
        X_full = np.where(spec.mask, X_full, A0 @ W0)
    return restarts, *ob.svd_basis(X_full, rank)


def _seed_tree(tree, onvi, restarts):
    """Propose every restart to ONVI; the invertible ones join the tree."""
    target = tree.target
    for A_lin, W_lin in restarts:
        # only invertible changes of basis join the tree (a restart with a zero factor gives a
        # singular Q). Uniform model: the restart itself is feasible by construction of
        # epsilon; its projection onto the SVD subspace (floor(A_svd Q), floor(Q^-1 W_svd))
        # is only the tree node, a permanent base node.
        Q = ob.q_from_factors(A_lin, tree.A_svd)
        invertible = ob.is_invertible(Q)
        A, W = tree.node_factors(Q) if invertible else (None, None)
        onvi.propose(*target.rescale(A_lin, W_lin))
        if invertible:
            if tree.gaussian:
                tree.add(Q, A, W, _quality(target, A, W))
            else:
                tree.add(Q, A, W, base=True)
    if not tree.Q:
        raise ValueError("no restart gave an invertible change of basis; check rank")


def _extend(tree, onvi, Qr, *, step_size, step_growth, max_steps, max_components, max_nodes):
    """Extend the node nearest ``Qr`` towards it while the steps stay feasible (RRT-Connect).

    Every feasible step becomes a node and is proposed to ONVI; the step grows by
    ``step_growth`` after each. Gaussian model: beyond ``max_nodes`` nodes the poorest is
    replaced. Returns the number of nodes added.
    """
    Qc = tree.Q[tree.nearest(Qr)]
    s = step_size
    n_added = 0
    for _k in range(max_steps):
        Qn = ob.step_towards(Qc, Qr, s)
        if Qn is None:
            break
        ok, info = tree.feasible(Qn)
        if not ok:
            break
        A, W, q = info
        tree.add(Qn, A, W, q)
        n_added += 1
        accepted = onvi.propose(A, W)
        if not tree.gaussian and accepted:
            tree.make_last_base()
        Qc = Qn
        s *= step_growth
        if tree.gaussian and len(tree.Q) > max_nodes:
            tree.replace_poorest()
        if onvi.n_processed >= max_components or np.linalg.norm(Qr - Qc) < s:
            break
    return n_added


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
    Our choices where Masood & Doshi-Velez (2016) leave details open: Frobenius nearest
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
    for name, value in (("threshold", threshold), ("prune_threshold", prune_threshold)):
        if value is not None:
            check_threshold(value, name)
    if variance is not None:
        check_number(variance, name="variance", minimum=0.0)
    rng = as_generator(random_seed)
    seeds = spawn_seeds(rng, 2)
    t0 = time.perf_counter()

    restarts, A_svd, W_svd = _restarts_and_basis(
        spec, R, restarts, n_restarts, seeds[0], gaussian=gaussian, progressbar=progressbar
    )
    onvi = OnlineNPVI(target, threshold=threshold, variance=variance,
                      prune_threshold=prune_threshold)
    if variance is None and not gaussian:
        # NVI (M=1) under the Gaussian surrogate with sigma_X^2 = eps^2 / 3 (the variance of
        # U(-eps, eps)) at the first restart: the uniform likelihood has no finite optimum
        A0, W0 = target.rescale(*restarts[0])
        onvi.fixed_variance = target.optimal_variance(A0, W0, sigma2=target.scale**2 / 3.0)
    if polish_iter > 0 and gaussian:
        # Gaussian: the paper optimises one Lin solution under Eq. 3 (NVI with M = 1: mean by
        # L-BFGS-B, variance in closed form) as the initial ONVI component; it also joins the
        # tree. Uniform: the paper takes only the *variance* of NVI (M = 1) (set above); its
        # mean is not a component. Keeping it (as an earlier version did) put a component
        # ~90 nats of prior above every restart on ALL/AML, so ONVI rejected everything else.
        nvi1 = fit_nvi(target, [target.rescale(*restarts[0])], max_iter=polish_iter,
                       variance=onvi.fixed_variance)
        restarts = [target.unvec(nvi1.means[0])] + restarts

    tree = _Tree(target, A_svd, W_svd)
    _seed_tree(tree, onvi, restarts)
    n_initial = len(tree.Q)
    tree.threshold = float(np.nanmin(tree.quality)) if gaussian else None
    tree.min_angle = min_angle
    n_nodes_added = n_attempts = fails = 0
    bar = progress(itertools.count(), desc="RRT", progressbar=progressbar)
    for _ in bar:
        if (onvi.n_processed >= max_components or fails >= max_failures
                or (max_attempts is not None and n_attempts >= max_attempts)):
            break
        n_attempts += 1
        n_new = _extend(tree, onvi, ob.random_oblique(R, rng), step_size=step_size,
                        step_growth=step_growth, max_steps=max_steps,
                        max_components=max_components, max_nodes=n_initial + max_temporary)
        n_nodes_added += n_new
        fails = 0 if n_new else fails + 1
        if not gaussian and tree.n_temporary >= max_temporary:
            tree.restart_from_base(min_angle_increment)
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
        "n_tree_restarts": tree.n_restarts,
        "final_min_angle": tree.min_angle,
        "final_threshold": np.nan if tree.threshold is None else tree.threshold,
        "threshold_filled": int(tree.filled),
        "consecutive_failures": fails,
        "n_restarts": len(restarts),
        "elapsed_seconds": time.perf_counter() - t0,
        "node_max_abs_residual": ("node", np.asarray(tree.node_residual)),
        "node_min_entry": ("node", np.asarray(tree.node_min)),
        "node_is_restart": ("node", np.arange(len(tree.node_residual)) < n_initial),
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
