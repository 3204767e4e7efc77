"""Replica-exchange step method for the collapsed Bernoulli NMF samplers (PyMC glue).

The exchange itself (replicas, swaps, ladder tuning, stats) is the generic
:class:`bnmfzoo.inference.tempering.ReplicaExchange`; this family plugs in through
:class:`~bnmfzoo.inference.binary._tempering.TemperedCollapsed` (tempered collapsed sweeps of
the chains) and adds what is its own: starting a chain (``init``), drawing ``A`` and ``W``
exactly given the cold replica's labels and writing them into the point, like
:class:`~bnmfzoo.inference.CollapsedGibbsBetaDir`, and its stats.
"""

import numpy as np
from pymc.step_methods.state import dataclass_state

from bnmfzoo.inference.binary._core import assignment_summary
from bnmfzoo.inference.binary._tempering import TemperedCollapsed
from bnmfzoo.inference.binary.collapsed_gibbs import _CollapsedStep
from bnmfzoo.inference.tempering import ExchangeState, ReplicaExchange

__all__ = ["ReplicaExchangeCollapsed", "ReplicaExchangeCollapsedState"]


@dataclass_state
class ReplicaExchangeCollapsedState(ExchangeState):
    """Sampling state of :class:`ReplicaExchangeCollapsed` (``step.sampling_state``).

    Attributes
    ----------
    replicas, betas, tuner, n_steps, tune
        As in :class:`~bnmfzoo.inference.tempering.step.ExchangeState`: the replicas' numeric
        chains (labels and count tables) coldest first, the replica each started in, the swap
        parity and the round trips; the ladder and its tuning.
    """


class ReplicaExchangeCollapsed(ReplicaExchange, _CollapsedStep):
    """Replica exchange (parallel tempering) of collapsed Gibbs chains for Bernoulli NMF.

    Keeps ``n_replicas`` collapsed chains; replica ``i`` targets the collapsed joint raised to
    ``beta_i`` (``p(V, Z)^beta`` for Beta-Dir and Dir-Beta, ``p(V, Z, C)^beta`` for Dir-Dir;
    Lumbreras et al. 2020, Eqs. 22-24, 53-58), whose conditionals are the paper's (Eq. 25, Eqs.
    59-61) raised to ``beta`` and renormalized. One step sweeps every replica once, proposes
    swaps between neighbours (even and odd pairs in alternate steps; Syed et al. 2022) accepted
    with ``min(1, exp((beta_i - beta_j)(l_j - l_i)))``, ``l`` the collapsed log joint, and then
    draws ``A`` and ``W`` exactly given the labels of the ``beta = 1`` replica, the one recorded
    as the chain. The exchange is the generic
    :class:`bnmfzoo.inference.tempering.ReplicaExchange`, with the ladder's default size chosen
    from the number of observed entries (one latent label each) and grown while tuning, as for
    :class:`~bnmfzoo.inference.ReplicaExchangeGibbs`. While PyMC tunes, the ladder is retuned
    towards equal swap rates at the end of rounds of doubling length
    (:mod:`bnmfzoo.inference.tempering._ladder`); afterwards it is frozen.

    The collapsed log joint grows with the number of observed entries, so neighbouring rungs
    must be close: on the 130 x 130 ``parliament`` data (rank 4) 8 rungs down to 0.1 never swapped
    at the cold end, while 24 rungs down to 0.85 swapped at 0.13-0.20 per pair. Measured
    (``benchmarks/speed/replica_collapsed.py``, 4 chains from random labels, 1000 + 2000 steps,
    max R-hat over the log joint and three ``A @ W`` entries): on ``parliament``, where one
    collapsed Gibbs chain sits in another mode (R-hat 1.49, and 1.50 with 24 times the
    sweeps), 24 rungs gave 1.21 in 646 CPU s: better, not converged. On ``animals``
    (85 x 50, rank 4), where Gibbs nearly mixes (1.03), 16 rungs gave 1.005, but Gibbs with
    the same number of sweeps gave 1.0006 with twice the ESS per second. Use it where chains
    disagree, with a dense ladder near ``beta = 1``.

    Parameters
    ----------
    vars : list, optional
        The value variables of ``A`` and ``W`` (default: both; nothing else allowed).
    n_replicas : int, optional
        Number of temperatures (1 gives plain collapsed Gibbs sweeps), kept as given. Default:
        chosen from the data and tuned, see ``max_replicas``.
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
    blocked_zeros : bool, optional
        Dir-Dir only: as in :class:`~bnmfzoo.inference.CollapsedGibbsDirDir`.
    init, init_iter, active_threshold
        As in :class:`~bnmfzoo.inference.CollapsedGibbsBetaDir`: how a chain's first state is
        made (every replica's, when ``anneal_start`` is 0 or PyMC does not tune).
    anneal_start : int
        Sweeps of the annealed start (0: every replica starts from its own ``init``). At a
        chain's first step while PyMC tunes, one chain started by ``init`` is swept
        ``anneal_start`` times at inverse temperatures rising geometrically from ``beta_min``
        to 1, and replica ``i`` starts from the state the path reached at ``beta_i``
        (:func:`bnmfzoo.inference.tempering._ladder.annealed_start`); see
        :class:`~bnmfzoo.inference.ReplicaExchangeGibbs` for why. It is not shown to help
        the collapsed samplers (not measured on their benchmarks); it is on by default for the
        same start in both replica-exchange steps, at the cost of ``anneal_start`` sweeps once
        per chain.
    model : pymc.Model, optional
        A Beta-Dir, Dir-Beta or Dir-Dir model (ours or a recognized user model).
    rng : int or numpy.random.Generator, optional
        Replaced per chain by PyMC's ``setup_chain``.

    Notes
    -----
    Sample stats: ``log_joint`` (collapsed log joint of the cold replica), ``n_active``,
    ``n_nonempty`` (as for the collapsed Gibbs steps), ``cold_label`` (which replica the cold
    state started in), ``swap_prob_0 ... swap_prob_{n-2}`` (acceptance probability of each
    proposed swap, NaN where none) and ``beta_0 ... beta_{n-1}`` (the ladder;
    :func:`bnmfzoo.inference.tempering.ladder_stats` stacks both), ``round_trips`` (completed
    cold -> hottest -> cold tours since tuning ended). ``pm.sample()`` never picks this step by
    itself: pass it as ``step=``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import beta_dir
    >>> from bnmfzoo.inference import ReplicaExchangeCollapsed
    >>> V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> with beta_dir(V, rank=2):
    ...     idata = pm.sample(draws=40, tune=40, chains=1, progressbar=False, random_seed=1,
    ...                       step=ReplicaExchangeCollapsed(n_replicas=3, beta_min=0.2),
    ...                       compute_convergence_checks=False)
    >>> sorted(k for k in idata.sample_stats if k.startswith("beta_"))
    ['beta_0', 'beta_1', 'beta_2']
    """

    name = "replica_exchange_collapsed"
    _families = ("beta_dir", "dir_beta", "dir_dir")
    _assignment_names = ()
    _state_class = ReplicaExchangeCollapsedState
    stats_dtypes_shapes = {**_CollapsedStep._base_stats, "cold_label": (np.int64, [])}

    def __init__(self, vars=None, *, model=None, n_replicas=None, beta_min=0.05, betas=None,
                 adapt=True, blocked_zeros=None, init="cvb0", init_iter=100,
                 active_threshold=0.01, anneal_start=2000, max_replicas=None, rng=None,
                 blocked=True, initial_point=None, compile_kwargs=None):
        super().__init__(vars, model=model, init=init, init_iter=init_iter,
                         active_threshold=active_threshold, rng=rng)
        self.blocked_zeros = blocked_zeros
        self.tempered = TemperedCollapsed(dimension=int(self._v.shape[0]))
        self._init_exchange(betas=betas, n_replicas=n_replicas, beta_min=beta_min, adapt=adapt,
                            anneal_start=anneal_start, max_replicas=max_replicas)
        self._reset_chain()

    def _first_state(self, point):
        return self._start_chain(self.rng, point)

    def _write_cold(self, point, cold, loglik, info):
        self._end_of_chain_check(cold)
        new_point = dict(point)
        for role, value in zip(("A", "W"), self._free_draws(cold.draw(self.rng)), strict=True):
            self._write(new_point, role, value)
        n_active, n_nonempty = assignment_summary(cold.L, self.active_threshold)
        return new_point, {"log_joint": np.float64(loglik), "n_active": np.int64(n_active),
                           "n_nonempty": np.int64(n_nonempty)}
