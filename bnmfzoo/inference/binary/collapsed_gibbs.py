"""Collapsed Gibbs step methods for mean-parameterized Bernoulli NMF (Lumbreras et al. 2020).

Each step keeps the latent assignments and count tables of its chain as private state (reset in
``setup_chain``), runs one compiled collapsed sweep per step (Eq. 25 for Beta-Dir / Dir-Beta,
Eqs. 59-61 for Dir-Dir), then draws ``A`` and ``W`` exactly from their conditionals given the
assignments (Eqs. 26-27, 62-63) and writes them into the point in PyMC's value space with the
model's own transforms. That is a partially collapsed Gibbs sampler targeting p(A, W | X): the
incoming A, W are ignored (they carry no information the assignments do not already hold), so
the trace holds A and W like any PyMC trace.

Sample stats: ``log_joint`` (the collapsed log p(V, Z[, C]), label-invariant, good for R-hat),
``n_active`` (components with >= 1% of all assignments: the paper counts "active
components", Sec. 6.3, without defining them) and
``n_nonempty``. Predictions average ``A @ W`` per draw (paper Eq. 33), never E[A] E[W]
(:func:`bnmfzoo.diagnostics.heldout_loglik`). PyMC's trace backend only stores scalar stats, so
the Rao-Blackwellized per-draw conditional means E[A | Z] E[W | Z, V] are produced by
:func:`fit_collapsed_gibbs`, which drives the same chains without PyMC.

Chains start from 100 CVB0 sweeps (``init="cvb0"``, as the authors' code starts Gibbs from 100
VB iterations) or from the prior's random labels (``init="prior"``). At the end of each chain a
parametric fit (``rank=K``) whose components are all used alike is flagged with a UserWarning
(:func:`spread_warning`); with ``cores > 1`` PyMC runs chains in worker processes, whose
warnings are printed to stderr but not raised in the caller.
"""

import warnings
from dataclasses import field

import numpy as np
from pymc.model import modelcontext
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference._step_glue import TransformedStep, model_of_var
from bnmfzoo.inference.binary._core import (
    BetaDirChain,
    DirDirChain,
    _draw_rows,
    assignment_summary,
    assignments_given_factors,
    betadir_counts,
    cvb0_counts,
    cvb0_sweep,
    dirdir_counts,
    entry_means,
    observed_entries,
)
from bnmfzoo.inference.binary._recognized import binary_spec

__all__ = ["CollapsedGibbsBetaDir", "CollapsedGibbsDirDir", "fit_collapsed_gibbs",
           "spread_warning", "CollapsedBetaDirState", "CollapsedDirDirState", "spec_entries"]

_INITS = ("cvb0", "prior", "point")


def spec_entries(spec):
    """``(rows, cols, v, (D, N))`` of the chain: the observed entries, row-major.

    For Dir-Beta the chain runs Beta-Dir on the transposed data. A model built from sparse
    data gives its ``ModelSpec.entries`` (no D x N array); dense data its observed entries, in
    the same order.
    """
    transpose = spec.family == "dir_beta"
    if spec.entries is None:
        rows, cols, v = observed_entries(spec.X_values, spec.mask, transpose=transpose)
    else:
        rows, cols, v = observed_entries(spec.entries, transpose=transpose)
    D, N = spec.X.shape
    return rows, cols, v, ((N, D) if transpose else (D, N))


def _check_init(init, init_iter):
    if init not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}")
    return init, check_int(init_iter, name="init_iter")


def cvb0_start(chain, rng, n_iter=100):
    """Move a fresh chain's assignments to a draw from ``n_iter`` CVB0 sweeps, in place.

    The authors' code starts its Gibbs samplers from 100 variational iterations (Lumbreras et
    al. 2020, §5); from a uniformly random start the collapsed chains can stay near a
    constant-prediction state for thousands of sweeps. CVB0 (Eq. 36) runs on the chain's row
    labels ``z`` with the chain's row concentration ``g``; its Beta parameters are the chain's
    ``a, b`` (Beta-Dir) or ``1, 1`` (Dir-Dir, whose ``P(v = 1 | z = k)`` is also a per-column
    probability). Each ``z`` is then drawn from its responsibility. For Dir-Dir, ``c = z`` on
    ones (as Eq. 59 requires) and on zeros ``c != z`` is drawn proportionally to
    ``eta_k + (ones of that column labelled k)``. Any start is valid for the Markov chain; this
    only shortens the burn-in.
    """
    rows, cols, v = chain.rows, chain.cols, chain.v
    D, N, K = chain.D, chain.N, chain.K
    n = rows.shape[0]
    if n == 0:
        return chain
    a = getattr(chain, "a", np.ones(K))
    b = getattr(chain, "b", np.ones(K))
    q = np.zeros((n, K))
    q[np.arange(n), rng.integers(0, K, size=n)] = 1.0
    for _ in range(int(n_iter)):
        L, C1, C0 = cvb0_counts(rows, cols, v, q, D, N)
        cvb0_sweep(rows, cols, v, q, L, C1, C0, chain.g, a, b)
    z = _draw_rows(q, rng)
    if isinstance(chain, DirDirChain):
        ones = v == 1
        Q1 = np.zeros((N, K))
        np.add.at(Q1, (cols[ones], z[ones]), 1.0)
        w = chain.eta[None, :] + Q1[cols]
        w[np.arange(n), z] = 0.0
        c = np.where(ones, z, _draw_rows(w / w.sum(axis=1, keepdims=True), rng))
        chain.z, chain.c = z, c.astype(np.int64)
        chain.L, chain.Q = dirdir_counts(rows, cols, chain.z, chain.c, D, N, K)
    else:
        chain.z = z
        chain.L, chain.C1, chain.C0 = betadir_counts(rows, cols, v, z, D, N, K)
    return chain


#: a parametric fit is flagged when its K >= this many components ...
SPREAD_MIN_K = 5


def spread_warning(counts, concentration, *, nonparametric, where="collapsed Gibbs"):
    """Warn (UserWarning) when a parametric fit keeps most components active at uniform weights.

    ``counts`` is the chain's D x K table of row assignments (``L``) and ``concentration`` the
    rows' Dirichlet concentration ``g`` (K,). Definitions:

    * a component is **active** when it holds at least half the uniform share, ``1 / (2K)``, of
      all assignments;
    * a row's **weights** are ``E[A_f | Z] = (g + L_f) / sum(g + L_f)``; they are
      **near-uniform** when their normalized entropy ``H / log K`` is at least 0.9.

    A **parametric** fit (``rank=K``) with ``K >= 5`` is flagged when more than half of its
    components are active and the median row has near-uniform weights. That is the
    uninformative state in which every row mixes all components alike and the predictions are
    near the column means. It is the posterior of that model, not a sampler failure: on the
    parliament data collapsed Gibbs and PyMC's NUTS (on the uncollapsed model) both leave the
    nonparametric fit's good state for it within 250 steps and never return
    (``benchmarks/reproduce/lumbreras2020/parametric_k100.py``). (Parliament data, 300 sweeps:
    ``rank=100`` gives 100 active components and median row entropy 0.95; ``rank=10`` /
    ``rank=20`` 6 / 17 active, entropy 0.57 / 0.75; ``truncation=100`` 12 active, 0.06.)
    Nonparametric fits are never flagged.

    Returns
    -------
    bool
        True when the warning was issued.
    """
    L = np.asarray(counts, dtype=float)
    g = np.asarray(concentration, dtype=float)
    K = L.shape[1]
    total = L.sum()
    if nonparametric or K < SPREAD_MIN_K or not total > 0:
        return False
    shares = L.sum(axis=0) / total
    n_active = int(np.sum(shares >= 0.5 / K))
    weights = (g + L) / (g + L).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(weights > 0, weights * np.log(weights), 0.0).sum(axis=1) / np.log(K)
    median = float(np.median(ent))
    if n_active > K / 2 and median >= 0.9:
        warnings.warn(
            f"{where}: {n_active} of the K = {K} components of this parametric model (rank={K}, "
            "gamma_k = gamma per component) are active and the rows' weights are near-uniform "
            f"(median normalized entropy {median:.2f}): predictions are near the column means. "
            "This can be the model's posterior rather than a stuck sampler (on the parliament "
            "data an independent NUTS run goes there too): with gamma = 1 per component the K "
            "prior pseudo-counts of each row can outweigh its data. For the paper's K = 100 "
            "fits use the "
            f"truncated nonparametric prior (truncation={K}, gamma_k = gamma / K), as "
            "Lumbreras et al. (2020) did.",
            UserWarning,
            stacklevel=3,
        )
        return True
    return False


@dataclass_state
class CollapsedBetaDirState(StepMethodState):
    """Sampling state of :class:`CollapsedGibbsBetaDir` (``step.sampling_state``).

    Attributes
    ----------
    var_names, rng
        As in every PyMC step method.
    z : numpy.ndarray or None
        Assignment of each observed entry to a component (int64, row-major order of the
        observed entries; the chain's rows are the data's columns for Dir-Beta); None before
        the first step of a chain. The count tables are functions of ``z`` and are rebuilt
        from it on restore (integer counts: exactly).
    """

    z: np.ndarray | None = field(default=None)


@dataclass_state
class CollapsedDirDirState(StepMethodState):
    """Sampling state of :class:`CollapsedGibbsDirDir` (``step.sampling_state``).

    Attributes
    ----------
    var_names, rng
        As in every PyMC step method.
    z, c : numpy.ndarray or None
        Row and column assignments of each observed entry (Lumbreras et al. 2020, Sec. 6,
        double augmentation); None before the first step of a chain.
    """

    z: np.ndarray | None = field(default=None)
    c: np.ndarray | None = field(default=None)


class _CollapsedStep(TransformedStep):
    """Shared glue: value variables, transforms, per-chain state, stats."""

    _families = ()
    _assignment_names = ("z",)
    _base_stats = {
        "log_joint": (np.float64, []),
        "n_active": (np.int64, []),
        "n_nonempty": (np.int64, []),
    }
    stats_dtypes_shapes = dict(_base_stats)
    blocked_zeros = None  # Dir-Dir only (set by the steps that take it)

    def __init__(self, vars=None, *, model=None, init="cvb0", init_iter=100,
                 active_threshold=0.01, rng=None, blocked=True, initial_point=None,
                 compile_kwargs=None):
        # (initial_point, compile_kwargs: passed by pm.sample's automatic assignment; unused)
        model = modelcontext(model)
        self.init, self.init_iter = _check_init(init, init_iter)
        self._n_steps = None
        spec = binary_spec(model, families=self._families, method=type(self).__name__)
        self.spec = spec
        self.family = spec.family
        self._rows, self._cols, self._v, self._shape = spec_entries(spec)
        names = spec.var_names
        roles = {"A": names["A"], "W": names.get("Wt", names["W"])}
        expected = [model.rvs_to_values[model[name]].name for name in roles.values()]
        try:
            self._init_variables(model, roles, vars)
        except ValueError as err:
            raise ValueError(f"{type(self).__name__} updates exactly the value variables "
                             f"{expected} of this model: {err}") from err
        if self.update_roles != {"A", "W"}:
            raise ValueError(
                f"{type(self).__name__} updates exactly the value variables {expected} of "
                f"this model, got {sorted(v.name for v in self.vars)}"
            )
        self.active_threshold = check_number(active_threshold, name="active_threshold",
                                             minimum=0.0, strict=False, maximum=1.0)
        self.rng = get_random_generator(rng)
        self._reset_chain()

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for ``A`` and ``W`` of a model this step samples, else INCOMPATIBLE.

        ``import bnmfzoo`` puts the class in ``pymc.step_methods.STEP_METHODS``, so
        ``pm.sample()`` without ``step=`` assigns it the factors of our constructors' models and
        of recognized user models (:func:`bnmfzoo.models.recognize`); NUTS answers PREFERRED,
        hence IDEAL. Anything else in the model goes to PyMC's default steps.
        """
        from pymc.step_methods.compound import Competence

        try:
            model = model_of_var(var)
            if model is None or var not in model.free_RVs:
                return Competence.INCOMPATIBLE
            spec = binary_spec(model, families=cls._families, method=cls.__name__)
        except Exception:  # noqa: BLE001 - not a model of ours, or no model in context
            return Competence.INCOMPATIBLE
        names = {spec.var_names["A"], spec.var_names.get("Wt", spec.var_names["W"])}
        return Competence.IDEAL if var.name in names else Competence.INCOMPATIBLE

    # -- chain state -------------------------------------------------------------------------
    def _reset_chain(self):
        self.chain = None
        for name in self._assignment_names:
            setattr(self, name, None)

    def _current_chain(self, point=None):
        """The numeric chain of the assignments in ``self.z`` (``self.c``), built if needed.

        ``z`` (and ``c``) are the sampling state; the chain object works on those very arrays
        (in place) and holds the count tables derived from them. After a restored snapshot
        replaced the arrays, the counts are rebuilt from the new ones.
        """
        assignments = [getattr(self, name) for name in self._assignment_names]
        if assignments[0] is None:  # first step of a chain: CVB0, random labels or the point
            self.chain = self._start_chain(self.rng, point)
        elif self.chain is None or any(
            getattr(self.chain, name) is not value
            for name, value in zip(self._assignment_names, assignments)
        ):
            self.chain = self._new_chain(self.rng, **dict(zip(self._assignment_names,
                                                              assignments)))
        for name in self._assignment_names:
            setattr(self, name, getattr(self.chain, name))
        return self.chain

    # -- PyMC hooks --------------------------------------------------------------------------
    def setup_chain(self, rng, tune, draws):
        """Reset the per-chain assignments (drawn lazily from this chain's ``rng``)."""
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        self._n_steps = (int(tune), int(tune) + int(draws), 0)

    def _start_chain(self, rng, point=None):
        """A new chain from ``init`` (see the class docstring).

        The prior's random labels, moved by CVB0 when ``init="cvb0"``; with ``init="point"``
        labels drawn given the factors of PyMC's initial point.
        """
        if self.init == "point" and point is not None:
            return self._new_chain(rng, *self._point_assignments(point, rng))
        chain = self._new_chain(rng)
        if self.init == "cvb0":
            cvb0_start(chain, rng, self.init_iter)
        return chain

    def _end_of_chain_check(self, chain):
        """Count steps; on the chain's last step warn about a spread-out parametric fit."""
        if self._n_steps is None:
            return
        tune, total, done = self._n_steps
        done += 1
        self._n_steps = (tune, total, done)
        if done == total:
            spread_warning(self._row_counts(chain), chain.g,
                           nonparametric=self.spec.hyper.nonparametric,
                           where=type(self).__name__)

    def step(self, point):
        """One collapsed sweep, then exact draws of A and W written into ``point``."""
        chain = self._current_chain(point)
        chain.sweep(self.rng)
        self._end_of_chain_check(chain)
        free_values = self._free_draws(chain.draw(self.rng))
        new_point = dict(point)
        for role, value in zip(("A", "W"), free_values):
            self._write(new_point, role, value)
        n_active, n_nonempty = assignment_summary(self._row_counts(chain), self.active_threshold)
        stats = {
            "log_joint": np.float64(chain.log_joint()),
            "n_active": np.int64(n_active),
            "n_nonempty": np.int64(n_nonempty),
        }
        return new_point, [stats]

    # -- helpers -----------------------------------------------------------------------------
    def _point_assignments(self, point, rng):
        """Labels drawn from their exact conditional given the point's A and W (a tuple)."""
        A, W = (self._read(point, role) for role in ("A", "W"))
        if self.family == "dir_beta":  # chain rows are the data's columns
            A, W = W, A.T
        if self.family == "dir_dir":
            return assignments_given_factors(self._rows, self._cols, self._v, A, None, rng,
                                             Wt=W)
        return (assignments_given_factors(self._rows, self._cols, self._v, A, W, rng),)

    def _row_counts(self, chain):
        return chain.L

    def _new_chain(self, rng, z=None, c=None):
        """A numeric chain of this model's family (labels drawn from ``rng`` unless given)."""
        h = self.spec.hyper
        D, N = self._shape
        if self.family == "dir_dir":
            return DirDirChain(self._rows, self._cols, self._v, D, N, h.gamma, h.eta, rng,
                               blocked_zeros=self.blocked_zeros, z=z, c=c)
        g = h.gamma if self.family == "beta_dir" else h.eta
        return BetaDirChain(self._rows, self._cols, self._v, D, N, g, h.alpha, h.beta, rng, z=z)

    def _free_draws(self, draws):
        """Map the chain's (constrained) draws to the model's free variables."""
        if self.family == "dir_beta":  # chain rows are the data's columns
            A, W = draws
            return [W.T, A]  # A (D, K) Beta entries; Wt (N, K) Dirichlet rows
        return draws

    def _model_means(self, means):
        return means


class CollapsedGibbsBetaDir(_CollapsedStep):
    """Collapsed Gibbs sampler for the Beta-Dir and Dir-Beta models (paper Algorithm 1).

    Use with ``pm.sample(step=CollapsedGibbsBetaDir(model=model), nuts_sampler="pymc")`` on a
    model from :func:`bnmfzoo.models.beta_dir` or :func:`bnmfzoo.models.dir_beta` (run on the
    transposed data), or on the same model written in PyMC syntax (``A ~ Dirichlet`` rows,
    ``W ~ Beta``, ``pm.Bernoulli(p=A @ W)``; read by :func:`bnmfzoo.models.recognize`).
    ``pm.sample()`` without ``step=`` picks it by itself (:meth:`competence`). Each step does
    one systematic sweep over the observed entries
    (``O(|observed| K)``, numba) and then draws ``A`` and ``W`` exactly given the assignments.

    Parameters
    ----------
    vars : list, optional
        The model's value variables of ``A`` and ``W`` (default: both; nothing else allowed).
    model : pymc.Model, optional
        A ``beta_dir`` or ``dir_beta`` model (default: the model in context).
    init : {"cvb0", "prior", "point"}
        How each chain starts. ``"cvb0"`` (default): random labels moved by ``init_iter`` CVB0
        sweeps and a draw from the responsibilities (:func:`cvb0_start`; the authors start Gibbs
        from 100 variational iterations). ``"prior"``: uniformly random labels (the paper's
        Algorithm 1 as written), which on real data can stay near a constant-prediction state
        for thousands of sweeps. ``"point"``: labels drawn from their exact conditional given
        the ``A`` and ``W`` of PyMC's initial point, so ``pm.sample(initvals=...)`` (e.g. an
        earlier fit's posterior mean) sets the start.
    init_iter : int
        CVB0 sweeps of the ``"cvb0"`` start (default 100).
    active_threshold : float
        A component is active when it holds at least this fraction of all assignments.
    rng : int or numpy.random.Generator, optional
        Replaced per chain by PyMC's ``setup_chain``.
    blocked : bool
        Ignored (the step is always blocked).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import beta_dir
    >>> from bnmfzoo.inference import CollapsedGibbsBetaDir
    >>> V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> model = beta_dir(V, rank=2)
    >>> with model:
    ...     idata = pm.sample(draws=50, tune=20, chains=1, step=CollapsedGibbsBetaDir(),
    ...                       progressbar=False, random_seed=1, compute_convergence_checks=False)
    >>> idata.posterior["A"].shape
    (1, 50, 4, 2)
    """

    name = "collapsed_gibbs_beta_dir"
    _families = ("beta_dir", "dir_beta")
    _state_class = CollapsedBetaDirState

    def _model_means(self, means):
        A, W = means
        if self.family == "dir_beta":
            return W.T, A.T
        return A, W

    def _row_counts(self, chain):
        return chain.L


class CollapsedGibbsDirDir(_CollapsedStep):
    """Collapsed Gibbs sampler for the Dir-Dir model (paper Algorithm 2, double augmentation).

    Ones draw the pair ``z = c`` jointly (Eq. 59); zeros draw ``z`` avoiding ``c`` and then ``c``
    avoiding ``z`` (Eqs. 60-61). ``A`` and ``Wt`` are then drawn exactly from their Dirichlet
    conditionals (Eqs. 62-63).

    Parameters
    ----------
    vars : list, optional
        The value variables of ``A`` and ``Wt`` (default: both).
    model : pymc.Model, optional
        A :func:`bnmfzoo.models.dir_dir` model, or a recognized user model with Dirichlet rows
        of ``A`` and Dirichlet columns of ``W`` (``pm.sample()`` picks this step by itself).
    blocked_zeros : bool, optional
        On zeros draw (z, c) jointly (an exact blocked move, not in the paper: ``P(z = k) ∝
        (g_k + L_fk) (S - eta_k - Q_nk)``, then c by Eq. 61) instead of the paper's
        z-then-c update. Default (None): only when K = 2, where the paper's update is stuck.
    init : {"cvb0", "prior", "point"}
        How each chain starts. ``"cvb0"`` (default): random labels moved by ``init_iter`` CVB0
        sweeps and a draw from the responsibilities (:func:`cvb0_start`; the authors start Gibbs
        from 100 variational iterations). ``"prior"``: uniformly random labels (the paper's
        Algorithm 1 as written), which on real data can stay near a constant-prediction state
        for thousands of sweeps. ``"point"``: labels drawn from their exact conditional given
        the ``A`` and ``W`` of PyMC's initial point, so ``pm.sample(initvals=...)`` (e.g. an
        earlier fit's posterior mean) sets the start.
    init_iter : int
        CVB0 sweeps of the ``"cvb0"`` start (default 100).
    active_threshold : float
        A component is active when it holds at least this fraction of the row assignments.
    rng : int or numpy.random.Generator, optional
        Replaced per chain by PyMC's ``setup_chain``.
    blocked : bool
        Ignored.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import dir_dir
    >>> from bnmfzoo.inference import CollapsedGibbsDirDir
    >>> model = dir_dir(np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0]]), rank=2)
    >>> with model:
    ...     idata = pm.sample(draws=30, tune=10, chains=1, step=CollapsedGibbsDirDir(),
    ...                       progressbar=False, random_seed=2, compute_convergence_checks=False)
    >>> idata.posterior["W"].shape
    (1, 30, 2, 3)
    """

    name = "collapsed_gibbs_dir_dir"
    _families = ("dir_dir",)
    _assignment_names = ("z", "c")
    _state_class = CollapsedDirDirState

    def __init__(self, vars=None, *, model=None, blocked_zeros=None, init="cvb0", init_iter=100,
                 active_threshold=0.01, rng=None, blocked=True, initial_point=None,
                 compile_kwargs=None):
        super().__init__(vars, model=model, init=init, init_iter=init_iter,
                         active_threshold=active_threshold, rng=rng)
        self.blocked_zeros = blocked_zeros


def fit_collapsed_gibbs(model, *, draws=1000, tune=4000, chains=1, thin=10, random_seed=None,
                        blocked_zeros=None, init="cvb0", init_iter=100, active_threshold=0.01,
                        progressbar=True):
    """Run the collapsed Gibbs chains directly (no PyMC loop) with Rao-Blackwellized means.

    The same chains as :class:`CollapsedGibbsBetaDir` / :class:`CollapsedGibbsDirDir`, driven
    without PyMC's per-step overhead, plus what PyMC's trace cannot hold: running averages of the
    per-draw conditional means, ``X_mean = mean_j E[A | Z_j] E[W | Z_j, V]`` (Eq. 33
    Rao-Blackwellized, as the authors' released code predicts), and ``E[A | V]``, ``E[W | V]``
    (Eqs. 30-31, for dictionaries; exposed to label switching across chains).

    Parameters
    ----------
    model : pymc.Model
        A ``beta_dir``, ``dir_beta`` or ``dir_dir`` model.
    draws, tune : int
        Kept and burn-in sweeps per chain (paper: 1000 and 4000).
    chains : int
        Independent chains (seeds spawned from ``random_seed``).
    thin : int
        Store every ``thin``-th kept draw of A and W in ``posterior`` (all kept sweeps enter
        the averages).
    random_seed : int or numpy.random.Generator, optional
    blocked_zeros : bool, optional
        Dir-Dir only, see :class:`CollapsedGibbsDirDir`.
    init, init_iter
        Chain start, see :class:`CollapsedGibbsBetaDir` (default: 100 CVB0 sweeps; ``"point"``
        starts from the model's initial point, ``model.initial_point()``, which honours the
        model's ``initval=`` settings).
    active_threshold : float
        Share of assignments that makes a component active.
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        ``posterior`` (A, W; thinned), ``sample_stats`` (``log_joint``, ``n_active``,
        ``n_nonempty`` for every kept sweep), ``observed_data`` (X) and ``rao_blackwell``
        (``X_mean``, ``A_mean``, ``W_mean``; ``A_mean``/``W_mean`` averaged within chains and
        then across chains). For a model built from sparse data, ``observed_data`` and
        ``X_mean`` are over the observed entries only (dim ``X_obs``, with ``row_index`` /
        ``col_index``; ``observed_data`` also has ``row`` / ``col`` labels), never D x N.
        Root attrs ``method="collapsed_gibbs"`` and ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import beta_dir
    >>> from bnmfzoo.inference import fit_collapsed_gibbs
    >>> V = (np.random.default_rng(0).random((8, 6)) < 0.4).astype(float)
    >>> dt = fit_collapsed_gibbs(beta_dir(V, rank=3), draws=20, tune=10, thin=2,
    ...                          random_seed=0, progressbar=False)
    >>> dt.posterior["A"].shape, dt["rao_blackwell"]["X_mean"].shape
    ((1, 10, 8, 3), (8, 6))
    """
    import xarray as xr

    from bnmfzoo._base.progress import progress
    from bnmfzoo._base.results import build_datatree, data_coords, observed_long
    from bnmfzoo._base.rng import spawn_seeds

    spec = binary_spec(model, families=("beta_dir", "dir_beta", "dir_dir"),
                       method="fit_collapsed_gibbs")
    draws, tune, chains, thin = (check_int(v, name=n, minimum=low) for n, v, low in (
        ("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1), ("thin", thin, 1)))
    if spec.family == "dir_dir":
        step = CollapsedGibbsDirDir(model=model, blocked_zeros=blocked_zeros, init=init,
                                    init_iter=init_iter, active_threshold=active_threshold)
    else:
        step = CollapsedGibbsBetaDir(model=model, init=init, init_iter=init_iter,
                                     active_threshold=active_threshold)
    D, N = spec.X.shape
    K = int(spec.rank)
    n_keep = int(draws) // int(thin)
    post_A = np.empty((chains, n_keep, D, K))
    post_W = np.empty((chains, n_keep, K, N))
    stats = {k: np.empty((chains, int(draws))) for k in ("log_joint", "n_active", "n_nonempty")}
    entries = spec.entries  # sparse data: predictions on the observed entries only
    X_mean = np.zeros((D, N) if entries is None else entries.n_observed)
    A_mean = np.zeros((D, K))
    W_mean = np.zeros((K, N))
    for c, seed in enumerate(spawn_seeds(random_seed, int(chains))):
        rng = np.random.default_rng(seed)
        point = model.initial_point(random_seed=seed) if init == "point" else None
        chain = step._start_chain(rng, point)
        for it in progress(total=int(tune) + int(draws), desc=f"chain {c}",
                           progressbar=progressbar):
            chain.sweep(rng)
            j = it - int(tune)
            if j < 0:
                continue
            A_c, W_c = step._model_means(chain.conditional_means())
            X_mean += (A_c @ W_c if entries is None
                       else entry_means(entries.rows, entries.cols, A_c, W_c))
            A_mean += A_c
            W_mean += W_c
            stats["log_joint"][c, j] = chain.log_joint()
            stats["n_active"][c, j], stats["n_nonempty"][c, j] = assignment_summary(
                step._row_counts(chain), active_threshold)
            if (j + 1) % int(thin) == 0 and (j + 1) // int(thin) <= n_keep:
                A_d, W_d = step._free_draws(chain.draw(rng))
                if spec.family != "beta_dir":
                    W_d = W_d.T  # Wt (N, K) -> W (K, N)
                post_A[c, (j + 1) // int(thin) - 1] = A_d
                post_W[c, (j + 1) // int(thin) - 1] = W_d
        spread_warning(step._row_counts(chain), chain.g,
                       nonparametric=spec.hyper.nonparametric,
                       where="fit_collapsed_gibbs")
    total = int(chains) * int(draws)
    coords = data_coords(spec.X)
    coords["factor"] = np.arange(K)
    stats["n_active"] = stats["n_active"].astype(np.int64)
    stats["n_nonempty"] = stats["n_nonempty"].astype(np.int64)
    if entries is None:
        observed, X_mean = {"X": spec.X.values}, (("row", "col"), X_mean / total)
    else:
        observed = observed_long(entries)
        X_mean = xr.DataArray(X_mean / total, dims="X_obs", coords={
            k: observed[k] for k in ("X_obs", "row_index", "col_index")})  # "row" is a dim here
    return build_datatree(
        {"A": post_A, "W": post_W},
        sample_stats=stats,
        observed_data=observed,
        coords=coords,
        groups={"rao_blackwell": {
            "X_mean": X_mean,
            "A_mean": (("row", "factor"), A_mean / total),
            "W_mean": (("factor", "col"), W_mean / total),
        }},
        attrs={"method": "collapsed_gibbs", "model": spec.family, "tune": int(tune),
               "draws": int(draws), "thin": int(thin)},
    )
