"""Replica-exchange Gibbs step method for exponential-Gaussian BNMF (PyMC glue).

The numeric work lives in :mod:`bnmfzoo.inference.gaussian.modes._tempering` (tempered sweeps,
swaps,
ladder tuning) and :mod:`bnmfzoo.inference.gaussian.modes._symmetry` (rescaling and Q-Transform
moves); this module keeps the replicas between PyMC steps, reads the cold replica from the
point and writes it back (through the model's transforms, like
:class:`~bnmfzoo.inference.GibbsNMF`), and declares the sample stats.
"""

import math
from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._ladder import (
    LadderTuner,
    annealed_start,
    check_anneal_start,
    check_ladder,
    ladder_stats,
    swap_pass,
)
from bnmfzoo.inference._step_glue import TransformedStep
from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian.modes._mode_jump import (
    anneal_schedule,
    check_jump_model,
    check_jump_settings,
    jump_step,
)
from bnmfzoo.inference.gaussian.modes._symmetry import MOVES, apply_moves
from bnmfzoo.inference.gaussian.modes._tempering import log_likelihood, tempered_sweep
from bnmfzoo.models._spec import get_spec

__all__ = ["ReplicaExchangeGibbs", "ReplicaExchangeState", "ladder_stats"]


@dataclass_state
class ReplicaExchangeState(StepMethodState):
    """Sampling state of :class:`ReplicaExchangeGibbs` (``step.sampling_state``).

    Attributes
    ----------
    chain : tuple or None
        ``(replicas, labels, written)``: the numeric states ordered from the coldest
        (``beta = 1``) to the hottest, the label of the replica each state started in, and the
        value-space arrays last written into the point; None before a chain's first step.
    betas : numpy.ndarray
        The current ladder.
    tuner : LadderTuner
        Ladder-tuning round counters.
    parity : int
        Which neighbour pairs the next swap pass proposes (0: even, 1: odd).
    q_scale : numpy.ndarray
        Per-replica step size of the Q-Transform move.
    n_steps : int
        Steps taken in this chain.
    references : list or None
        The mode references of the annealed mode jumps (found at the chain's first jump).
    tune : bool
        Whether the ladder (and the Q-Transform step size) are still being tuned.
    """

    chain: tuple | None = field(default=None)
    betas: np.ndarray | None = field(default=None)
    tuner: LadderTuner | None = field(default=None)
    parity: int = 0
    q_scale: np.ndarray | None = field(default=None)
    n_steps: int = 0
    references: list | None = field(default=None)
    tune: bool = False


class ReplicaExchangeGibbs(TransformedStep):
    """Replica exchange (parallel tempering) of Gibbs sweeps for exponential-Gaussian BNMF.

    Keeps ``n_replicas`` copies of the chain, replica ``i`` targeting the posterior with its
    likelihood raised to ``beta_i`` (``1 = beta_0 > ... > beta_min``; Swendsen & Wang 1986,
    Geyer 1991). One step sweeps every replica once with the exact tempered conditionals
    (:func:`~bnmfzoo.inference.gaussian.modes._tempering.tempered_sweep`: ``tau`` scaled by
    ``beta`` in the factor conditionals, ``tau ~ Gamma(alpha + beta n / 2, b + beta SSE / 2)``),
    optionally applies the symmetry moves to every replica, then proposes swaps between
    neighbours (even pairs and odd pairs in alternate steps; Syed et al. 2022) accepted with
    ``min(1, exp((beta_i - beta_j)(l_j - l_i)))``. Hot replicas move between modes and the
    swaps carry their states down to ``beta = 1``, the replica recorded as the chain.

    While PyMC tunes, the ladder is retuned at the end of rounds of doubling length
    (16, 32, ... steps) so that neighbours swap at equal rates (Syed et al. 2022,
    Algorithm 4); ``beta_min`` is kept. After tuning the ladder is frozen, so the recorded
    draws come from a fixed, valid Markov kernel.

    Parameters
    ----------
    vars : list, optional
        Must be all free variables of the model (default); the hot replicas need every
        variable's tempered conditional.
    n_replicas : int
        Number of temperatures (1 gives plain Gibbs sweeps).
    beta_min : float
        Hottest inverse temperature, in (0, 1).
    betas : array-like, optional
        An explicit ladder (decreasing, starting at 1); overrides ``n_replicas`` and
        ``beta_min``.
    adapt : bool
        Retune the ladder during PyMC's tuning steps.
    symmetry : tuple of str
        Symmetry moves applied to every replica after its sweep, a subset of
        ``("rescale", "qtransform")`` (:mod:`bnmfzoo.inference.gaussian.modes._symmetry`). Off by
        default: in ``benchmarks/speed/replica.py`` they speed up the scale direction
        (ESS/s of a column sum 27 -> 3700 on ``laurberg(0.5)``) but cost 2.5-4x per step and
        did not improve R-hat or ESS/s of ``tau`` or ``A @ W`` (CCLE rank 3, laurberg).
    anneal_start : int
        Sweeps of the annealed start (0: every replica starts at the chain's initial point).
        At a chain's first step while PyMC tunes, one state is swept ``anneal_start`` times at
        inverse temperatures rising geometrically from ``beta_min`` to 1, and each replica
        starts from the state the path reached at its own temperature
        (:func:`bnmfzoo.inference._ladder.annealed_start`; simulated annealing, Kirkpatrick
        et al. 1983, as the start of parallel tempering). Without it every replica starts
        where the chain starts, and a replica quenched there into a narrow mode keeps it:
        states are only exchanged between temperatures, and one that only the cold end holds
        sinks back to it. On CCLE IC50 rank 3, 41 of 100 quenched random starts ended in the
        posterior's narrow mode (a few percent of the mass), 0 of 100 annealed starts of 2000
        sweeps from 0.05 and 4 of 100 of 800 sweeps (``benchmarks/RESULTS.md`` §3.5). It costs
        ``anneal_start`` sweeps of one replica, once per chain, and does not change the kernel
        after tuning.
    q_scale : float
        Initial step size ``eps`` of the Q-Transform move (``Q = expm(eps Z)``); tuned
        towards an acceptance rate of 0.3 during PyMC's tuning.
    mode_jumps : bool
        Every ``jump_every`` steps, propose to move the cold replica into another mode by an
        annealed importance sampling jump (:mod:`bnmfzoo.inference.gaussian.modes._mode_jump`:
        exact for any settings). At the chain's first jump, the modes are found by
        ``n_starts`` quenched Gibbs runs from random starts and the chain's state, and each
        gets a mean-field reference. While PyMC tunes, an accepted jump restarts every
        replica from the new state; afterwards the kernel is fixed. Off by default. Not with
        ARD. Measured once on CCLE IC50 rank 3, before the annealed start existed, this
        combination did *not* bring the chains together (max R-hat 1.078, jumps almost never
        accepted; not understood); the annealed start alone did, and so did the jumps without
        a ladder, ``step=[GibbsNMF(), ModeJumps()]`` (``benchmarks/RESULTS.md`` §3.5).
    jump_every, n_anneal, n_starts : int
        Steps between jumps; annealing steps of each path (the cost of a jump is about
        ``2 n_anneal`` sweeps; more steps raise the acceptance rate); random starts searched.
    model : pymc.Model, optional
        A model built by :func:`bnmfzoo.models.exponential_gaussian`.
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample``.

    Notes
    -----
    Sample stats: ``tau``, ``train_mse`` and ``log_likelihood`` of the cold replica;
    ``swap_prob_0 ... swap_prob_{n-2}`` (acceptance probability of the swap proposed between
    temperatures ``i`` and ``i + 1`` in this step, NaN where none was proposed);
    ``beta_0 ... beta_{n-1}`` (the ladder; :func:`ladder_stats` stacks both); ``cold_label`` (which
    replica the cold state started in; its changes count round trips through the ladder);
    ``q_accept`` (Q-Transform acceptance probability of the cold replica, NaN when off);
    ``jump_accept`` (acceptance probability of this step's mode jump, NaN when none) and
    ``n_references`` (modes found for the jumps, 0 before the first jump).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with exponential_gaussian(X, 2):
    ...     idata = pm.sample(draws=50, tune=50, chains=1,
    ...                       step=ReplicaExchangeGibbs(n_replicas=4, beta_min=0.1),
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    """

    name = "replica_exchange_gibbs"
    stats_dtypes_shapes = {
        "tau": (np.float64, []),
        "train_mse": (np.float64, []),
        "log_likelihood": (np.float64, []),
        "cold_label": (np.int64, []),
        "q_accept": (np.float64, []),
        "jump_accept": (np.float64, []),
        "n_references": (np.int64, []),
    }
    _state_class = ReplicaExchangeState

    def __init__(self, vars=None, *, n_replicas=8, beta_min=0.05, betas=None, adapt=True,
                 symmetry=(), q_scale=0.05, mode_jumps=False, jump_every=10, n_anneal=500,
                 n_starts=8, anneal_start=2000, model=None, rng=None, blocked=True,
                 initial_point=None, compile_kwargs=None):
        model = pm.modelcontext(model)
        spec = get_spec(model, families="exponential_gaussian", method=type(self).__name__)
        self._init_variables(model, spec.var_names, vars)
        missing = set(self.value_maps) - self.update_roles
        if missing:
            raise ValueError(f"{type(self).__name__} must update every free variable of the "
                             f"model; not assigned: {sorted(missing)}")
        betas = check_ladder(betas, n_replicas, beta_min)
        symmetry = tuple(symmetry or ())
        unknown = set(symmetry) - set(MOVES)
        if unknown:
            raise ValueError(f"symmetry must be a subset of {MOVES}, got {sorted(unknown)}")
        if not (isinstance(q_scale, (int, float)) and 0 < q_scale < math.inf):
            raise ValueError(f"q_scale must be a positive number, got {q_scale!r}")
        self.mode_jumps = bool(mode_jumps)
        if self.mode_jumps:
            check_jump_model(spec.hyper)
            check_jump_settings(jump_every, n_anneal, n_starts)
        self.jump_every, self.n_starts = int(jump_every), int(n_starts)
        self.anneal_start = check_anneal_start(anneal_start)
        self.gammas = anneal_schedule(n_anneal)
        self.spec = spec
        self.hyper = spec.hyper
        self.obs = observed_entries(spec.X, spec.mask)
        self.symmetry = symmetry
        self.adapt = bool(adapt)
        self.initial_betas = betas
        self.initial_q_scale = float(q_scale)
        n = betas.size
        # PyMC's NDArray trace stores scalar stats only: one stat per pair / temperature
        self.stats_dtypes_shapes = {**type(self).stats_dtypes_shapes,
                                    **{f"swap_prob_{i}": (np.float64, []) for i in range(n - 1)},
                                    **{f"beta_{i}": (np.float64, []) for i in range(n)}}
        self.stats_dtypes = [{k: d for k, (d, _) in self.stats_dtypes_shapes.items()}]
        self.rng = get_random_generator(rng)
        self._reset_chain()

    def _reset_chain(self):
        self.chain = None
        self.betas = self.initial_betas.copy()
        self.tuner = LadderTuner()
        self.parity = 0
        self.q_scale = np.full(self.initial_betas.size, self.initial_q_scale)
        self.n_steps = 0
        self.references = None

    def setup_chain(self, rng, tune, draws):
        """Take this chain's generator and forget the previous chain's state and ladder."""
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        # PyMC's sequential sampler sets ``step.tune`` itself, its multiprocess sampler does
        # not (only ``stop_tuning()`` at the end): take it from the chain's plan
        self.tune = int(tune) > 0

    @property
    def n_replicas(self):
        """Number of temperatures."""
        return self.betas.size

    def _new_state(self, values):
        return nmf_state(values["A"], values["W"], values.get("tau", 1.0),
                         values.get("lambda_"), self.obs)

    def _replicas_from_point(self, point):
        if self.chain is not None:
            replicas, labels, written = self.chain
            if all(np.array_equal(point[self._value_name(r)], written[r])
                   for r in self.value_maps):
                return replicas, labels
            values = {role: self._read(point, role) for role in self.value_maps}
            replicas = list(replicas)
            replicas[0] = self._new_state(values)  # the cold chain was moved by someone else
            return replicas, labels
        values = {role: self._read(point, role) for role in self.value_maps}
        if self.anneal_start and self.n_replicas > 1 and getattr(self, "tune", False):
            return self._annealed_replicas(self._new_state(values)), list(range(self.n_replicas))
        return ([self._new_state(values) for _ in range(self.n_replicas)],
                list(range(self.n_replicas)))

    def _annealed_replicas(self, st):
        """Anneal ``st`` from the hottest temperature to 1; replica ``i`` starts at ``beta_i``."""
        return annealed_start(
            st, self.betas, self.anneal_start,
            lambda s, beta: tempered_sweep(s, self.obs, self.hyper, self.rng, beta),
            lambda s: nmf_state(s.A, s.W, s.tau, s.lambda_, self.obs))

    def step(self, point):
        """Sweep every replica, apply the symmetry moves, propose swaps; record ``beta = 1``."""
        replicas, labels = self._replicas_from_point(point)
        q_prob = np.full(self.n_replicas, np.nan)
        for i, st in enumerate(replicas):
            tempered_sweep(st, self.obs, self.hyper, self.rng, self.betas[i])
            if self.symmetry:
                q_prob[i] = apply_moves(st, self.hyper, self.rng, self.symmetry,
                                        eps=self.q_scale[i])
        logliks = [log_likelihood(st, self.obs, self.hyper) for st in replicas]
        prob, accepted = swap_pass(replicas, self.betas, logliks, self.rng, self.parity)
        labels = list(labels)
        for i in np.flatnonzero(accepted):  # disjoint pairs: labels follow their states
            labels[i], labels[i + 1] = labels[i + 1], labels[i]
        self.parity ^= 1
        jump_prob = math.nan
        if self.mode_jumps and self.n_steps % self.jump_every == 0:
            new, jump_prob, self.references = jump_step(
                replicas[0], self.obs, self.hyper, self.references, self.gammas, self.rng,
                n_starts=self.n_starts)
            if new is not replicas[0]:
                replicas[0] = new
                logliks[0] = log_likelihood(new, self.obs, self.hyper)
                if getattr(self, "tune", False):
                    # warm-up only: restart the whole ladder from the new state, else the
                    # warmer replicas, still in the old mode, swap it straight back down
                    for i in range(1, len(replicas)):
                        replicas[i] = nmf_state(new.A, new.W, new.tau, new.lambda_, self.obs)
        self.n_steps += 1
        tune = getattr(self, "tune", False)
        self.betas = self.tuner.update(prob, self.betas, tune=tune, adapt=self.adapt,
                                       where=type(self).__name__)
        if tune:
            if "qtransform" in self.symmetry:
                gain = 1.0 / math.sqrt(self.n_steps)
                self.q_scale *= np.exp(gain * (np.nan_to_num(q_prob, nan=0.3) - 0.3))
        cold = replicas[0]
        values = {"A": cold.A, "W": cold.W, "tau": cold.tau, "lambda_": cold.lambda_}
        new_point = dict(point)
        written = {role: self._write(new_point, role, values[role]) for role in self.value_maps}
        self.chain = (replicas, labels, written)
        sigma = self.hyper.sigma
        tau = 1.0 / sigma**2 if sigma is not None else cold.tau
        stats = {
            "tau": float(tau),
            "train_mse": cold.train_mse(),
            "log_likelihood": float(logliks[0]),
            "cold_label": int(labels[0]),
            "q_accept": float(q_prob[0]),
            "jump_accept": float(jump_prob),
            "n_references": len(self.references or ()),
        }
        stats.update({f"swap_prob_{i}": float(p) for i, p in enumerate(prob)})
        stats.update({f"beta_{i}": float(b) for i, b in enumerate(self.betas)})
        return new_point, [stats]
