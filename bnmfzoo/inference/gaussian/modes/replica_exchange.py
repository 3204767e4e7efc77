"""Replica-exchange Gibbs step method for exponential-Gaussian BNMF (PyMC glue).

The exchange itself (replicas, swaps, ladder tuning, stats) is the generic
:class:`bnmfzoo.inference.tempering.ReplicaExchange`; this family plugs in through
:class:`~bnmfzoo.inference.gaussian.modes._tempering.TemperedGibbs` (tempered Gibbs sweeps)
and adds what is its own: reading the cold replica from the point and writing it back (through
the model's transforms, like :class:`~bnmfzoo.inference.GibbsNMF`), the symmetry moves
(:mod:`bnmfzoo.inference.gaussian.modes._symmetry`), the mode jumps and its stats.
"""

import math
from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian.modes._mode_jump import (
    anneal_schedule,
    check_jump_model,
    check_jump_settings,
    jump_step,
)
from bnmfzoo.inference.gaussian.modes._symmetry import MOVES, apply_moves
from bnmfzoo.inference.gaussian.modes._tempering import TemperedGibbs, log_likelihood
from bnmfzoo.inference.tempering import ExchangeState, ReplicaExchange, ladder_stats
from bnmfzoo.models._spec import get_spec

__all__ = ["ReplicaExchangeGibbs", "ReplicaExchangeState", "ladder_stats"]


@dataclass_state
class ReplicaExchangeState(ExchangeState):
    """Sampling state of :class:`ReplicaExchangeGibbs` (``step.sampling_state``).

    Attributes
    ----------
    replicas, betas, tuner, n_steps, tune
        As in :class:`~bnmfzoo.inference.tempering.step.ExchangeState` (the replicas' numeric
        states coldest first, their labels, the swap parity, the round trips; the ladder).
    written : dict or None
        The value-space arrays last written into the point (to notice another step's change).
    q_scale : numpy.ndarray
        Per-replica step size of the Q-Transform move.
    references : list or None
        The mode references of the annealed mode jumps (found at the chain's first jump).
    """

    written: dict | None = field(default=None)
    q_scale: np.ndarray | None = field(default=None)
    references: list | None = field(default=None)


class ReplicaExchangeGibbs(ReplicaExchange):
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
    Algorithm 4); ``beta_min`` is kept. Unless ``n_replicas`` or ``betas`` is given, the
    ladder's size is chosen from the data and grows at those ends of rounds until every pair
    swaps at about 1/2 (``max_replicas``; :mod:`bnmfzoo.inference.tempering._ladder`): on CCLE
    IC50 rank 3 the default starts at 97 rungs and every pair swapped at >= 0.54
    (``benchmarks/RESULTS.md`` §3.8). After tuning the ladder is frozen, so the recorded
    draws come from a fixed, valid Markov kernel. The exchange itself is the generic
    :class:`bnmfzoo.inference.tempering.ReplicaExchange` (this class supplies the family).

    Parameters
    ----------
    vars : list, optional
        Must be all free variables of the model (default); the hot replicas need every
        variable's tempered conditional.
    n_replicas : int, optional
        Number of temperatures (1 gives plain Gibbs sweeps), kept as given. Default: chosen
        from the data and tuned, see ``max_replicas``.
    beta_min : float
        Hottest inverse temperature, in (0, 1); always kept.
    betas : array-like, optional
        An explicit ladder (decreasing, starting at 1); overrides ``n_replicas`` and
        ``beta_min``.
    adapt : bool
        Retune the ladder during PyMC's tuning steps.
    max_replicas : int, optional
        Without ``n_replicas`` and ``betas`` the ladder starts with
        ``initial_size(dimension, beta_min)`` rungs (:mod:`bnmfzoo.inference.tempering._ladder`:
        ``2 Lambda_0 + 1``, ``Lambda_0`` the communication barrier predicted from the number of
        free parameters, or for the collapsed chains of latent labels) and, while PyMC tunes,
        grows (rungs inserted, states copied from the nearest rung) until about
        ``2 Lambda + 1`` rungs, ``Lambda`` measured from the swap rates: every neighbour pair
        near swap probability 1/2, the most round trips per sweep (Syed et al. 2022). At most
        ``max_replicas`` (default: twice the initial size, at least 16); the per-rung stats are
        declared for that many (NaN beyond a chain's ladder).
    symmetry : tuple of str
        Symmetry moves applied to every replica after its sweep, a subset of
        ``("rescale", "qtransform")`` (:mod:`bnmfzoo.inference.gaussian.modes._symmetry`). Off by
        default: in ``benchmarks/speed/replica.py`` they speed up the scale direction
        (ESS/s of a column sum 27 -> 3700 on ``laurberg(0.5)``) but cost 2.5-4x per step and
        did not improve R-hat or ESS/s of ``tau`` or ``A @ W`` (CCLE rank 3, laurberg).
    n_sweeps : int
        Gibbs sweeps of every replica between two swap passes (default 1; the cost of a step is
        ``n_sweeps`` sweeps per rung). On real data the default ladder swaps well but its
        replicas hardly travel (0 round trips in 5000 steps on CCLE IC50, rank 3); there
        ``beta_min=0.3, n_sweeps=4`` made 20 round trips in 5000 steps at 1.7 times the
        default's CPU (``benchmarks/RESULTS.md`` §3.9). Not the default: on GDSC, rank 5, it
        made none in 2500 steps either, and it is checked on one known-answer seed only.
    anneal_start : int
        Sweeps of the annealed start (0: every replica starts at the chain's initial point).
        At a chain's first step while PyMC tunes, one state is swept ``anneal_start`` times at
        inverse temperatures rising geometrically from ``beta_min`` to 1, and each replica
        starts from the state the path reached at its own temperature
        (:func:`bnmfzoo.inference.tempering._ladder.annealed_start`; simulated annealing,
        Kirkpatrick et al. 1983, as the start of parallel tempering). Without it every replica
        starts where the chain starts, and a replica quenched there into a narrow mode keeps it:
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
    Sample stats: ``tau``, ``train_mse`` and ``loglik`` (its log-likelihood) of the cold replica;
    ``swap_prob_0 ... swap_prob_{n-2}`` (acceptance probability of the swap proposed between
    temperatures ``i`` and ``i + 1`` in this step, NaN where none was proposed);
    ``beta_0 ... beta_{n-1}`` (the ladder; :func:`ladder_stats` stacks both); ``cold_label`` (which
    replica the cold state started in; its changes count round trips through the ladder);
    ``q_accept`` (Q-Transform acceptance probability of the cold replica, NaN when off);
    ``jump_accept`` (acceptance probability of this step's mode jump, NaN when none) and
    ``n_references`` (modes found for the jumps, 0 before the first jump); ``round_trips``
    (cold -> hottest -> cold tours completed since tuning ended; a chain ending with fewer than
    10 is warned about: too few to estimate mode masses).

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
        "loglik": (np.float64, []),
        "cold_label": (np.int64, []),
        "q_accept": (np.float64, []),
        "jump_accept": (np.float64, []),
        "n_references": (np.int64, []),
    }
    _state_class = ReplicaExchangeState

    def __init__(self, vars=None, *, n_replicas=None, beta_min=0.05, betas=None, adapt=True,
                 symmetry=(), q_scale=0.05, mode_jumps=False, jump_every=10, n_anneal=500,
                 n_starts=8, anneal_start=2000, max_replicas=None, n_sweeps=1, model=None,
                 rng=None, blocked=True, initial_point=None, compile_kwargs=None):
        model = pm.modelcontext(model)
        spec = get_spec(model, families="exponential_gaussian", method=type(self).__name__)
        self._init_variables(model, spec.var_names, vars)
        missing = set(self.value_maps) - self.update_roles
        if missing:
            raise ValueError(f"{type(self).__name__} must update every free variable of the "
                             f"model; not assigned: {sorted(missing)}")
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
        self.gammas = anneal_schedule(n_anneal)
        self.spec = spec
        self.hyper = spec.hyper
        self.obs = observed_entries(spec.X, spec.mask)
        self.tempered = TemperedGibbs(self.obs, self.hyper, rank=spec.rank)
        self.symmetry = symmetry
        self.initial_q_scale = float(q_scale)
        self._init_exchange(betas=betas, n_replicas=n_replicas, beta_min=beta_min, adapt=adapt,
                            anneal_start=anneal_start, max_replicas=max_replicas,
                            n_sweeps=n_sweeps)
        self.rng = get_random_generator(rng)
        self._reset_chain()

    def _reset_chain(self):
        self._reset_exchange()
        self.written = None
        self.q_scale = np.full(self.initial_betas.size, self.initial_q_scale)
        self.references = None

    def _new_state(self, values):
        return nmf_state(values["A"], values["W"], values.get("tau", 1.0),
                         values.get("lambda_"), self.obs)

    def _first_state(self, point):
        return self._new_state({role: self._read(point, role) for role in self.value_maps})

    def _sync(self, point, replicas):
        """Restart the cold replica from the point if another step moved the chain."""
        if all(np.array_equal(point[self._value_name(r)], self.written[r])
               for r in self.value_maps):
            return
        values = {role: self._read(point, role) for role in self.value_maps}
        replicas.states[0] = self._new_state(values)

    def _after_sweep(self, i, state):
        if not self.symmetry:
            return None
        return apply_moves(state, self.hyper, self.rng, self.symmetry, eps=self.q_scale[i])

    def _after_swaps(self, replicas, logliks):
        """The annealed mode jump of the cold replica, every ``jump_every`` steps."""
        jump_prob = math.nan
        states = replicas.states
        if self.mode_jumps and self.n_steps % self.jump_every == 0:
            new, jump_prob, self.references = jump_step(
                states[0], self.obs, self.hyper, self.references, self.gammas, self.rng,
                n_starts=self.n_starts)
            if new is not states[0]:
                states[0] = new
                logliks[0] = log_likelihood(new, self.obs, self.hyper)
                if getattr(self, "tune", False):
                    # warm-up only: restart the whole ladder from the new state, else the
                    # warmer replicas, still in the old mode, swap it straight back down
                    for i in range(1, len(states)):
                        states[i] = self.tempered.copy(new)
        return {"jump_accept": float(jump_prob), "n_references": len(self.references or ())}

    def _adapt(self, infos):
        if "qtransform" in self.symmetry:
            gain = 1.0 / math.sqrt(self.n_steps)
            self.q_scale *= np.exp(gain * (np.nan_to_num(infos, nan=0.3) - 0.3))

    def _on_resize(self, index):
        self.q_scale = self.q_scale[index]

    def _write_cold(self, point, cold, loglik, info):
        values = {"A": cold.A, "W": cold.W, "tau": cold.tau, "lambda_": cold.lambda_}
        new_point = dict(point)
        self.written = {role: self._write(new_point, role, values[role])
                        for role in self.value_maps}
        sigma = self.hyper.sigma
        tau = 1.0 / sigma**2 if sigma is not None else cold.tau
        return new_point, {"tau": float(tau), "train_mse": cold.train_mse(),
                           "loglik": float(loglik), "q_accept": float(info)}
