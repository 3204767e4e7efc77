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
"""

from dataclasses import field

import numpy as np
from pymc.model import modelcontext
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._step_glue import TransformedStep
from bnmfzoo.inference.binary._core import (
    BetaDirChain,
    DirDirChain,
    assignment_summary,
    observed_entries,
)
from bnmfzoo.models._spec import get_spec

__all__ = ["CollapsedGibbsBetaDir", "CollapsedGibbsDirDir", "fit_collapsed_gibbs",
           "CollapsedBetaDirState", "CollapsedDirDirState"]


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

    def __init__(self, vars=None, *, model=None, active_threshold=0.01, rng=None, blocked=True):
        model = modelcontext(model)
        spec = get_spec(model, families=self._families, method=type(self).__name__)
        self.spec = spec
        self.family = spec.family
        X = spec.X_values
        mask = spec.mask
        if self.family == "dir_beta":  # Beta-Dir on the transpose
            X, mask = X.T, mask.T
        self._rows, self._cols, self._v = observed_entries(X, mask)
        self._shape = X.shape
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
        self.active_threshold = float(active_threshold)
        self.rng = get_random_generator(rng)
        self._reset_chain()

    # -- chain state -------------------------------------------------------------------------
    def _reset_chain(self):
        self.chain = None
        for name in self._assignment_names:
            setattr(self, name, None)

    def _current_chain(self):
        """The numeric chain of the assignments in ``self.z`` (``self.c``), built if needed.

        ``z`` (and ``c``) are the sampling state; the chain object works on those very arrays
        (in place) and holds the count tables derived from them. After a restored snapshot
        replaced the arrays, the counts are rebuilt from the new ones.
        """
        assignments = [getattr(self, name) for name in self._assignment_names]
        if assignments[0] is None:  # first step of a chain: the paper's random start
            self.chain = self._new_chain(self.rng)
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

    def step(self, point):
        """One collapsed sweep, then exact draws of A and W written into ``point``."""
        chain = self._current_chain()
        chain.sweep(self.rng)
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
    def _row_counts(self, chain):
        return chain.L

    def _free_draws(self, draws):
        """Map the chain's (constrained) draws to the model's free variables."""
        return draws

    def _model_means(self, means):
        return means


class CollapsedGibbsBetaDir(_CollapsedStep):
    """Collapsed Gibbs sampler for the Beta-Dir and Dir-Beta models (paper Algorithm 1).

    Use with ``pm.sample(step=CollapsedGibbsBetaDir(model=model), nuts_sampler="pymc")`` on a
    model from :func:`bnmfzoo.models.beta_dir` or :func:`bnmfzoo.models.dir_beta` (run on the
    transposed data). Each step does one systematic sweep over the observed entries
    (O(|observed| K), numba) and then draws ``A`` and ``W`` exactly given the assignments.

    Parameters
    ----------
    vars : list, optional
        The model's value variables of ``A`` and ``W`` (default: both; nothing else allowed).
    model : pymc.Model, optional
        A ``beta_dir`` or ``dir_beta`` model (default: the model in context).
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

    def _new_chain(self, rng, z=None):
        h = self.spec.hyper
        g = h["gamma"] if self.family == "beta_dir" else h["eta"]
        D, N = self._shape
        return BetaDirChain(self._rows, self._cols, self._v, D, N, g, h["alpha"], h["beta"], rng,
                            z=z)

    def _free_draws(self, draws):
        A, W = draws
        if self.family == "dir_beta":  # chain rows are the data's columns
            return [W.T, A]  # A (D, K) Beta entries; Wt (N, K) Dirichlet rows
        return [A, W]

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
        A :func:`bnmfzoo.models.dir_dir` model.
    blocked_zeros : bool, optional
        On zeros draw (z, c) jointly (an exact blocked move, not in the paper: ``P(z = k) ∝
        (g_k + L_fk) (S - eta_k - Q_nk)``, then c by Eq. 61) instead of the paper's
        z-then-c update. Default (None): only when K = 2, where the paper's update is stuck.
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

    def __init__(self, vars=None, *, model=None, blocked_zeros=None, active_threshold=0.01,
                 rng=None, blocked=True):
        super().__init__(vars, model=model, active_threshold=active_threshold, rng=rng)
        self.blocked_zeros = blocked_zeros

    def _new_chain(self, rng, z=None, c=None):
        h = self.spec.hyper
        D, N = self._shape
        return DirDirChain(self._rows, self._cols, self._v, D, N, h["gamma"], h["eta"], rng,
                           blocked_zeros=self.blocked_zeros, z=z, c=c)


def fit_collapsed_gibbs(model, *, draws=1000, tune=4000, chains=1, thin=10, random_seed=None,
                        blocked_zeros=None, active_threshold=0.01, progressbar=True):
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
    active_threshold : float
        Share of assignments that makes a component active.
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        ``posterior`` (A, W; thinned), ``sample_stats`` (``log_joint``, ``n_active``,
        ``n_nonempty`` for every kept sweep), ``observed_data`` (X) and ``rao_blackwell``
        (``X_mean``, ``A_mean``, ``W_mean``; ``A_mean``/``W_mean`` averaged within chains and
        then across chains). Root attrs ``method="collapsed_gibbs"`` and ``model``.

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
    from bnmfzoo._progress import progress
    from bnmfzoo._results import build_datatree, data_coords
    from bnmfzoo._rng import spawn_seeds

    spec = get_spec(model, families=("beta_dir", "dir_beta", "dir_dir"),
                    method="fit_collapsed_gibbs")
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1),
                             ("thin", thin, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if spec.family == "dir_dir":
        step = CollapsedGibbsDirDir(model=model, blocked_zeros=blocked_zeros,
                                    active_threshold=active_threshold)
    else:
        step = CollapsedGibbsBetaDir(model=model, active_threshold=active_threshold)
    D, N = spec.mask.shape
    K = int(spec.rank)
    n_keep = int(draws) // int(thin)
    post_A = np.empty((chains, n_keep, D, K))
    post_W = np.empty((chains, n_keep, K, N))
    stats = {k: np.empty((chains, int(draws))) for k in ("log_joint", "n_active", "n_nonempty")}
    X_mean = np.zeros((D, N))
    A_mean = np.zeros((D, K))
    W_mean = np.zeros((K, N))
    for c, seed in enumerate(spawn_seeds(random_seed, int(chains))):
        rng = np.random.default_rng(seed)
        chain = step._new_chain(rng)
        for it in progress(total=int(tune) + int(draws), desc=f"chain {c}",
                           progressbar=progressbar):
            chain.sweep(rng)
            j = it - int(tune)
            if j < 0:
                continue
            A_c, W_c = step._model_means(chain.conditional_means())
            X_mean += A_c @ W_c
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
    total = int(chains) * int(draws)
    coords = data_coords(spec.X)
    coords["factor"] = np.arange(K)
    stats["n_active"] = stats["n_active"].astype(np.int64)
    stats["n_nonempty"] = stats["n_nonempty"].astype(np.int64)
    return build_datatree(
        {"A": post_A, "W": post_W},
        sample_stats=stats,
        observed_data={"X": spec.X.values},
        coords=coords,
        groups={"rao_blackwell": {
            "X_mean": (("row", "col"), X_mean / total),
            "A_mean": (("row", "factor"), A_mean / total),
            "W_mean": (("factor", "col"), W_mean / total),
        }},
        attrs={"method": "collapsed_gibbs", "model": spec.family, "tune": int(tune),
               "draws": int(draws), "thin": int(thin)},
    )
