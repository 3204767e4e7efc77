"""``GibbsPoisson``: the latent-count Gibbs sampler as a PyMC step method.

Samples ``A``, ``W`` (and the Gamma rate variables of ARD / hierarchical priors, a learned NB
dispersion, and PyMC's imputation ``X_unobserved`` of NaN counts) of any model
:func:`bnmfzoo.models.recognize` reads as a Poisson or Gamma-Poisson factorization of counts:
:func:`bnmfzoo.models.poisson`, :func:`bnmfzoo.models.negative_binomial`, or the user's own
``pm.Poisson("X", mu=A @ W, observed=counts)`` or ``pm.NegativeBinomial("X", mu=A @ W,
alpha=alpha, observed=counts)`` (NB2) with Gamma /
Exponential priors. ``import bnmfzoo`` registers it, so plain
``pm.sample()`` chooses it for those variables (:meth:`GibbsPoisson.competence`).

The numeric sweep is :func:`bnmfzoo.inference.counts.sweep.sweep` (Cemgil 2009 for the
Poisson model; Zhou & Carin 2015's CRT augmentation for the negative binomial); cost per
sweep O(nonzeros x K + (D + N) K). Each PyMC draw runs ``sweeps_per_draw`` sweeps (the
Poisson ones all inside one compiled call,
:func:`bnmfzoo.inference.counts.gibbs._compiled.gibbs_sweeps`)
followed each by two exact group moves along the directions ``A @ W`` does not see (the
per-component rescaling ``A_k c, W_k / c`` and the shear ``W_j + t W_k, A_k - t A_j``; Liu &
Sabatti 2000). A step costs ~0.12 ms outside the sweeps (PyMC's loop, point <-> state, the
log-likelihood stat) while a compiled sweep of a small matrix costs tens of microseconds, so
several sweeps per draw raise the ESS per draw at little cost (``benchmarks/RESULTS.md``,
count section).
"""

import logging
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._assignment import announce, choose, count_key
from bnmfzoo.inference._step_glue import TransformedStep, model_of_var
from bnmfzoo.inference.counts._data import cell_means
from bnmfzoo.inference.counts._problem import counts_spec, log_likelihood
from bnmfzoo.inference.counts.gibbs._compiled import (
    default_sweeps_per_draw,
    fast_path_ok,
    gibbs_sweeps,
)
from bnmfzoo.inference.counts.gibbs._hmc_moves import HmcAdapter, hmc_cells
from bnmfzoo.inference.counts.gibbs._moves import group_moves, problem_arrays
from bnmfzoo.inference.counts.sweep import sweep

__all__ = ["GibbsPoisson", "GibbsPoissonState", "impute_counts", "recognized_counts"]

logger = logging.getLogger("bnmfzoo")

#: whether ``moves="hmc"`` runs the exact shear move of every ordered pair of components after
#: each transition when ``shear`` is not given (``docs/results/counts_dense_2.md`` section 12)
HMC_SHEAR = False


def impute_counts(imputed, family, state, rng):
    """Exact draw of PyMC's imputed (NaN) counts given ``A``, ``W`` and the NB dispersion.

    ``imputed`` (:class:`bnmfzoo.models.Imputed`) lists the cells and their offsets ``o``;
    the draw is ``Poisson(o * (A @ W)[cells])`` or, for the negative binomial,
    ``NB(n = alpha o (A @ W)[cells], p = alpha / (1 + alpha))`` (NB2: ``n = alpha``,
    ``p = alpha / (alpha + o (A @ W)[cells])``). The sweeps see only the
    observed cells, so drawing these from their conditional right after them is exact Gibbs
    for the joint posterior of factors and missing counts.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> imp = SimpleNamespace(rows=np.array([0]), cols=np.array([1]), offsets=np.array([2.0]))
    >>> state = {"A": np.ones((2, 1)), "W": np.full((1, 2), 3.0), "alpha": None}
    >>> x = [impute_counts(imp, "poisson", state, np.random.default_rng(i))[0] for i in range(400)]
    >>> bool(abs(np.mean(x) - 6.0) < 0.6)   # mean 6, sd of the mean 0.12
    True
    """
    mu = cell_means(state["A"], state["W"], imputed.rows, imputed.cols, imputed.offsets)
    if not np.all(np.isfinite(mu)) or np.any(mu < 0):
        raise FloatingPointError("the means of the imputed counts are not finite and >= 0")
    if family == "poisson":
        return rng.poisson(mu)
    alpha = float(state["alpha"])
    if family == "nb2":
        return rng.negative_binomial(alpha, alpha / (alpha + mu))
    return rng.negative_binomial(np.maximum(alpha * mu, 1e-300), alpha / (1.0 + alpha))


@dataclass_state
class GibbsPoissonState(StepMethodState):
    """Sampling state of :class:`GibbsPoisson`: the generator (and a step counter).

    Nothing latent persists: the latent counts are drawn afresh every sweep.

    Attributes
    ----------
    var_names, rng
        As in every PyMC step method.
    n_steps : int
    hmc_state : dict or None
        With ``moves="hmc"``: the chain's step size, mass and tuning counters.
    """

    n_steps: int = field(default=0)
    hmc_state: dict | None = field(default=None)


@dataclass(frozen=True)
class RecognizedCounts:
    """What the count steps' competence reads of a model (:func:`recognized_counts`)."""

    model: object
    names: dict
    key: str
    hmc_default: bool


def recognized_counts(var):
    """The count model of ``var``, its cost-model key and whether HMC moves are its default.

    ``None`` when ``var`` is not a variable of a recognized count model.

    ``hmc_default``: a Poisson model of dense counts
    (:func:`~bnmfzoo.inference._assignment.count_key` ``"poisson_dense"``) with fixed Gamma
    priors on both ``A`` and ``W`` (no rate variables), which
    :class:`~bnmfzoo.inference.counts.gibbs.hmc_poisson.HmcPoisson` samples when the cost
    model's ``("counts", "poisson_dense_hmc")`` entry says it beats NUTS.
    """
    try:
        model = model_of_var(var)
        if model is None or var not in model.free_RVs:
            return None
        found, problem = counts_spec(model, method="GibbsPoisson")
    except Exception:  # noqa: BLE001 - not a count model of ours
        return None
    names = found.var_names
    if var.name not in set(names.values()):
        return None
    expo = problem.expo
    observed = (expo.row_offset.size * expo.col_offset.size - expo.rows.size
                if expo.kind == "separable" else expo.rows.size)  # missing / observed
    key = count_key(found.family, float(problem.data.counts.sum()), observed)
    hmc = (key == "poisson_dense" and fast_path_ok(problem) and not problem.rate_of
           and {"A", "W"} <= set(names) and choose("counts", "poisson_dense_hmc").ours)
    return RecognizedCounts(model, names, key, bool(hmc))


class GibbsPoisson(TransformedStep):
    """Latent-count Gibbs for Poisson / Gamma-Poisson NMF (Cemgil 2009; Zhou & Carin 2015).

    Parameters
    ----------
    vars : list, optional
        Value variables to update (default: all it can: ``A``, ``W``, rate variables and the
        NB dispersion); the others are read from the point.
    model : pymc.Model, optional
    rng : int or numpy.random.Generator, optional
    loglik_stat : bool
        Record the log-likelihood of each draw as the sample stat ``loglik`` (one extra
        O(nonzeros K) pass per step). Not named ``log_likelihood``: ArviZ's ``az.loo`` reads a
        ``sample_stats.log_likelihood`` as pointwise values when the result has no
        ``log_likelihood`` group.
    sweeps_per_draw : int, optional
        Gibbs sweeps per PyMC draw (default: ``default_sweeps_per_draw`` of
        :mod:`bnmfzoo.inference.counts.gibbs._compiled`, a deterministic function of the data's
        size: enough compiled Poisson sweeps to cost at least 4x the step's own ~0.12 ms, at
        most 20; 1 for the negative binomial and for large data).
    rescale, shear : bool
        After each sweep, the exact rescaling move of every component and the exact shear move
        of every pair of components (:mod:`bnmfzoo.inference.counts.gibbs._moves`); only when the
        step updates both ``A`` and ``W``. ``shear`` defaults to ``True`` for the sweep and to
        :data:`HMC_SHEAR` for ``moves="hmc"`` (after each transition and its rescaling).
    marginal : bool
        After each sweep, an independence Metropolis-Hastings move of every row of ``A`` given
        ``W`` and of every column of ``W`` given ``A`` with the latent counts integrated out
        (:mod:`bnmfzoo.inference.counts.gibbs._marginal`; Poisson models, the compiled path
        only). Off by default: on the SBS96 catalogues it raised the ESS per sweep of the
        slowest exposures ~6x at ~7x the cost of a sweep (``docs/results/counts_core.md``).
    moves : {"sweep", "hmc"}
        ``"sweep"`` (default): the latent-count sweeps above. ``"hmc"``: instead, Hamiltonian
        Monte Carlo on ``log A, log W`` with the likelihood evaluated directly
        (:mod:`bnmfzoo.inference.counts.gibbs._hmc_moves`): ``sweeps_per_draw`` transitions
        (default 1) per draw; step size, diagonal mass and the distribution of the number of
        leapfrog steps tuned during PyMC's tuning draws, then frozen; after each transition
        the exact rescaling move of every component (and, with ``shear=True``, the shear
        move of every ordered pair: the slowest entries' ESS per CPU second 1.3-6.6x,
        median 2.7x, over 18 runs on the 21 breast catalogues at K = 3-6 (60 ESCC
        catalogues at K = 4: median 1.8x), but a median 0.5x there at K = 8 and about 1x on
        all 552 ESCC catalogues, ``docs/results/counts_dense_2.md`` section 12). Poisson
        models with fixed Gamma priors (no rate variables). On dense counts (SBS96
        catalogues) it mixes the attribution of counts between signatures far faster per CPU
        second than the sweep (``docs/results/counts_dense.md``).
    n_leap : int, optional
        Leapfrog steps per HMC transition (``moves="hmc"``). Default: learned during tuning
        (trajectory lengths to a U-turn, stretched to the time that decorrelates the slowest
        combination of the components' total exposures, then drawn from their distribution
        independently of the state, as eHMC; Wu, Stoehr & Robert 2018).
    max_leap : int, optional
        Most leapfrog steps of a transition whose length is learned (bounds a draw's cost).
        Default: 1024, fewer on matrices so large that one transition would take more than
        about a second, so Ctrl-C is seen within that
        (:func:`~bnmfzoo.inference.counts.gibbs._hmc_moves.leap_cap`).
    mass : {"diag", "exposures", "krylov", "span"}, optional
        HMC's mass (``moves="hmc"``): diagonal (default), or with a low-rank correction fitted
        during tuning along the components' total exposures and scales (``"exposures"``), along
        those and the tuning draws' covariance applied to them (``"krylov"``), or in the span
        of the tuning's draws and gradients (``"span"``, as nutpie's low-rank adaptation);
        :mod:`~bnmfzoo.inference.counts.gibbs._hmc_mass`. The corrections were not faster per
        CPU second on the SBS96 catalogues (``docs/results/counts_dense_2.md``).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import bnmfzoo as bz
    >>> X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    >>> with pm.Model() as model:
    ...     A = pm.Gamma("A", 1.0, 1.0, shape=(6, 2))
    ...     W = pm.Gamma("W", 1.0, 1.0, shape=(2, 5))
    ...     _ = pm.Poisson("X", mu=A @ W, observed=X)
    ...     idata = pm.sample(draws=50, tune=10, chains=1, progressbar=False, random_seed=1,
    ...                       compute_convergence_checks=False)
    >>> idata.posterior["A"].shape
    (1, 50, 6, 2)
    """

    name = "gibbs_poisson"
    stats_dtypes_shapes = {"loglik": (np.float64, [])}
    _state_class = GibbsPoissonState
    exact_conditionals = True

    def __init__(self, vars=None, *, model=None, rng=None, loglik_stat=True,
                 sweeps_per_draw=None, rescale=True, shear=None, blocked=True,
                 marginal=False, moves="sweep", n_leap=None, max_leap=None, mass=None,
                 initial_point=None, compile_kwargs=None):
        model = pm.modelcontext(model)
        self.factorization, self.problem = counts_spec(model, method=type(self).__name__)
        self._init_variables(model, self.factorization.var_names, vars)
        self.rng = get_random_generator(rng)
        self.loglik_stat = bool(loglik_stat)
        self.n_steps = 0
        blocks = {"A": "A", "W": "W", "alpha": "alpha"}
        self._update = tuple(b for r, b in blocks.items() if r in self.update_roles)
        self._rate_roles = {r for r in self.value_maps if r.startswith("rate:")}
        if self._rate_roles & self.update_roles:
            if self._rate_roles - self.update_roles:
                raise ValueError("GibbsPoisson updates all rate variables or none")
            self._update += ("rates",)
        if moves not in ("sweep", "hmc"):
            raise ValueError(f"moves must be 'sweep' or 'hmc', got {moves!r}")
        self.moves = moves
        if sweeps_per_draw is None:
            sweeps_per_draw = default_sweeps_per_draw(self.problem) if moves == "sweep" else 1
        if isinstance(sweeps_per_draw, bool) or int(sweeps_per_draw) != sweeps_per_draw or \
                sweeps_per_draw < 1:
            raise ValueError(f"sweeps_per_draw must be a positive integer, got "
                             f"{sweeps_per_draw!r}")
        self.sweeps_per_draw = int(sweeps_per_draw)
        self._imputed = self.factorization.imputed
        if (self._imputed is not None and "imputed" not in self.update_roles
                and self._update):
            # the sweep draws the factors given the observed cells only (the imputed ones
            # marginalized out), which is right only when the imputed cells are redrawn from
            # their conditional right after it
            raise ValueError(f"{type(self).__name__} must also update {self._imputed.name!r} "
                             "(PyMC's imputation of the missing counts) when it updates the "
                             "factors")
        both = "A" in self._update and "W" in self._update
        self.rescale = bool(rescale) and both
        if shear is None:
            shear = HMC_SHEAR if moves == "hmc" else True
        self.shear = bool(shear) and both
        if not isinstance(marginal, bool | np.bool_):
            raise TypeError(f"marginal must be a bool, got {marginal!r}")
        if marginal and not fast_path_ok(self.problem):
            raise ValueError("marginal=True needs a Poisson model (the compiled sweep); got "
                             f"family {self.problem.family!r}")
        self.marginal = bool(marginal)
        self.hmc_state, self._hmc, self.tune, self._n_tune = None, None, True, None
        if moves == "hmc":
            self._init_hmc(n_leap, max_leap, mass)
        else:
            given = [k for k, v in (("n_leap", n_leap), ("max_leap", max_leap), ("mass", mass))
                     if v is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to moves='hmc' "
                                 f"(got moves={moves!r})")

    def _init_hmc(self, n_leap, max_leap, mass=None):
        """Checks and constants of ``moves="hmc"``."""
        for name, val in (("n_leap", n_leap), ("max_leap", max_leap)):
            if val is None:
                continue
            if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {val!r}")
        if not fast_path_ok(self.problem):
            raise ValueError("moves='hmc' needs a Poisson model; got family "
                             f"{self.problem.family!r}")
        if set(self._update) != {"A", "W"} or self.problem.rate_of:
            raise ValueError("moves='hmc' updates A and W of a model with fixed Gamma priors "
                             "(no rate variables), both of them; got the blocks "
                             f"{self._update!r}")
        if self.marginal:
            raise ValueError("moves='hmc' replaces the sweeps: marginal must be False")
        arrs = problem_arrays(self.problem)
        prior = tuple(np.ascontiguousarray(arrs[k], dtype=float)
                      for k in ("aA", "bA", "aWt", "bW"))
        self._hmc = HmcAdapter(hmc_cells(self.problem), prior, n_leap,
                               max_leap=None if max_leap is None else int(max_leap),
                               mass=mass, shear=self.shear)

    def setup_chain(self, rng, tune, draws):
        """A new chain: HMC's tuning (``moves="hmc"``) starts afresh at its first point."""
        super().setup_chain(rng, tune, draws)
        self.hmc_state, self._n_tune = None, int(tune)

    def stop_tuning(self):
        """End of PyMC's tuning: HMC's step size and mass are frozen (``moves="hmc"``)."""
        if self._hmc is not None and self.hmc_state is not None:
            self._hmc.state = self.hmc_state
            self._hmc.freeze()
        self.tune = False

    def _hmc_draw(self, state):
        """``sweeps_per_draw`` HMC transitions of ``state`` (``moves="hmc"``)."""
        A = np.array(state["A"], dtype=float, order="C", copy=True)
        Wt = np.array(np.asarray(state["W"], dtype=float).T, order="C", copy=True)
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(Wt)) and np.all(A > 0)
                and np.all(Wt > 0)):
            raise FloatingPointError("GibbsPoisson(moves='hmc'): the factors are not finite "
                                     "and positive")
        if self.hmc_state is None:
            self._hmc.start(A, Wt, self._n_tune)
            self.hmc_state = self._hmc.state
        self._hmc.state = self.hmc_state
        for _ in range(self.sweeps_per_draw):
            A, Wt = self._hmc.transition(A, Wt, self.rng, bool(self.tune))
        new = dict(state)
        new.update(A=A, W=np.ascontiguousarray(Wt.T))
        return new

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for the variables of a recognized count model, else INCOMPATIBLE.

        The measured cost model (:mod:`bnmfzoo.inference._assignment`) decides, with one log
        line saying which sampler and why: where our sweep mixed slower per CPU second than
        PyMC's NUTS (NB2 models, ``pm.NegativeBinomial(mu=, alpha=)``, and Poisson models of
        dense counts such as mutational catalogues, more than one count per observed cell on
        average: :func:`~bnmfzoo.inference._assignment.count_key`) the continuous variables
        are only COMPATIBLE and ``pm.sample`` gives them NUTS, or, for dense Poisson models
        with fixed Gamma priors, :class:`~bnmfzoo.inference.counts.gibbs.hmc_poisson.
        HmcPoisson` (HMC moves, measured faster than NUTS there; it says so). PyMC's imputed
        counts stay IDEAL (drawn exactly given the factors), except where ``HmcPoisson``
        takes the model. ``step=GibbsPoisson()`` still runs our sweep.
        """
        from pymc.step_methods.compound import Competence

        found = recognized_counts(var)
        if found is None:
            return Competence.INCOMPATIBLE
        if found.hmc_default:  # HmcPoisson takes every variable and says so
            return Competence.COMPATIBLE
        if var.name == found.names.get("imputed"):
            return Competence.IDEAL
        # our step or NUTS, from the measured cost model, said in one log line
        choice = choose("counts", found.key)
        announce(found.model, var, set(found.names.values()) - {found.names.get("imputed")},
                 cls.__name__, choice)
        return Competence.IDEAL if choice.ours else Competence.COMPATIBLE

    def _state_from_point(self, point):
        state = {"A": self._read(point, "A"), "W": self._read(point, "W"), "rates": {},
                 "alpha": self.problem.alpha}
        for role in self._rate_roles:
            state["rates"][role[5:]] = self._read(point, role)
        if "alpha" in self.value_maps:
            state["alpha"] = float(self._read(point, "alpha"))
        return state

    def _write_imputed(self, point, state):
        """Draw PyMC's imputed counts from their conditional given ``state`` into ``point``."""
        if self._imputed is not None and "imputed" in self.update_roles:
            draw = impute_counts(self._imputed, self.problem.family, state, self.rng)
            shape = np.shape(point[self._value_name("imputed")])
            self._write(point, "imputed", draw.reshape(shape))

    def sweep_state(self, state):
        """One numeric sweep of ``state`` (dict: A, W, rates, alpha)."""
        return sweep(self.problem, state, self.rng, update=self._update)

    def draw_state(self, state):
        """``sweeps_per_draw`` sweeps, each followed by the group moves (one PyMC draw)."""
        if self.moves == "hmc":
            return self._hmc_draw(state)
        if fast_path_ok(self.problem):
            return gibbs_sweeps(self.problem, state, self.rng, self.sweeps_per_draw,
                                update=self._update, rescale=self.rescale, shear=self.shear,
                                marginal=self.marginal)
        for _ in range(self.sweeps_per_draw):
            state = self.sweep_state(state)
            if self.rescale or self.shear:
                state = group_moves(self.problem, state, self.rng, rescale=self.rescale,
                                    shear=self.shear)
        return state

    def step(self, point):
        """``sweeps_per_draw`` Gibbs sweeps; the new values are written into a copy of ``point``."""
        state = self._state_from_point(point)
        if self._update:  # (only PyMC's imputed counts: drawn given the point's factors)
            state = self.draw_state(state)
        new = dict(point)
        if "A" in self.update_roles:
            self._write(new, "A", state["A"])
        if "W" in self.update_roles:
            self._write(new, "W", state["W"])
        if "rates" in self._update:
            for role in self._rate_roles:
                self._write(new, role, state["rates"][role[5:]])
        if "alpha" in self.update_roles:
            self._write(new, "alpha", np.asarray(state["alpha"]))
        self._write_imputed(new, state)
        self.n_steps += 1
        ll = log_likelihood(self.problem, state) if self.loglik_stat else np.nan
        return new, [{"loglik": np.float64(ll)}]
