"""``ReplicaExchangePoisson``: replica exchange of latent-count Gibbs chains (PyMC step).

The generic replica exchange of :class:`bnmfzoo.inference.tempering.ReplicaExchange` over the
count family's tempered-sweep interface
(:class:`~bnmfzoo.inference.counts._tempering.TemperedCounts`, Poisson and negative-binomial
models alike): replica ``beta`` targets the posterior given a fraction ``beta`` of the data,
randomly rounded, at exposures ``beta o`` (for Poisson models the counts of 1 are kept and
split in proportion to ``(A_dk W_kn)^beta`` instead); its sweeps are exact (a rounding bit per
nonzero, then the model's own Gibbs sweep and the group moves) and swaps compare its marginal,
which moves with the log-likelihood as the power posterior does.
"""

import numpy as np

from bnmfzoo.inference.counts._gibbs import initial_state
from bnmfzoo.inference.counts._tempering import TemperedCounts
from bnmfzoo.inference.counts.gibbs_poisson import GibbsPoisson
from bnmfzoo.inference.tempering.step import ExchangeState, ReplicaExchange

__all__ = ["ReplicaExchangePoisson"]


class ReplicaExchangePoisson(ReplicaExchange, GibbsPoisson):
    """Replica exchange (parallel tempering) for Poisson and NB NMF; pass it as ``step=``.

    Parameters
    ----------
    vars, model, rng
        As in :class:`GibbsPoisson` (all of ``A``, ``W``, the rate variables and a learned NB
        dispersion are updated).
    n_replicas, beta_min, betas, adapt, anneal_start, max_replicas
        The ladder (:class:`bnmfzoo.inference.tempering.ReplicaExchange`). ``beta_min``
        defaults to 0.3: on the breast SBS96 catalogues (K = 4) a ladder to 0.2 crosses a
        transition near 0.25, where the weakest component fades, and made no round trip
        (:mod:`~bnmfzoo.inference.counts._tempering`).
    n_sweeps : int
        Tempered sweeps of every replica between two swap passes.
    inner_sweeps : int
        Gibbs sweeps (each with the rescaling and shear moves) per tempered sweep, given one
        draw of the rounding bits (:class:`~bnmfzoo.inference.counts._tempering.TemperedCounts`).
    split_max : int
        Poisson: cells whose count is at most ``split_max`` follow the split path (each replica
        keeps them and splits them in proportion to ``(A_dk W_kn)^beta``) instead of being
        rounded at random (default 1: a dropped count of 1 leaves its cell without evidence;
        0 rounds every cell).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, pymc as pm
    >>> import bnmfzoo as bz
    >>> model = bz.models.poisson(np.random.default_rng(0).poisson(2.0, (5, 4)), 2)
    >>> with model, warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # too short a chain for round trips: warned
    ...     step = ReplicaExchangePoisson(betas=[1.0, 0.5], anneal_start=0)
    ...     idata = pm.sample(draws=20, tune=5, chains=1, step=step, progressbar=False,
    ...                       random_seed=0, compute_convergence_checks=False)
    >>> idata.posterior["A"].shape
    (1, 20, 5, 2)
    """

    name = "replica_exchange_poisson"
    stats_dtypes_shapes = {"loglik": (np.float64, [])}
    _state_class = ExchangeState

    def __init__(self, vars=None, *, model=None, n_replicas=None, beta_min=0.3, betas=None,
                 adapt=True, anneal_start=200, max_replicas=None, n_sweeps=1, inner_sweeps=5,
                 split_max=1, rng=None, blocked=True, initial_point=None,
                 compile_kwargs=None):
        GibbsPoisson.__init__(self, vars, model=model, rng=rng, loglik_stat=False)
        self.tempered = TemperedCounts(self.problem, inner_sweeps, split_max)
        self._init_exchange(betas=betas, n_replicas=n_replicas, beta_min=beta_min, adapt=adapt,
                            anneal_start=anneal_start, max_replicas=max_replicas,
                            n_sweeps=n_sweeps)
        self._reset_chain()

    def _first_state(self, point):
        state = self._state_from_point(point)
        if not np.all(np.isfinite(state["A"])):  # pragma: no cover - PyMC points are finite
            state = initial_state(self.problem, self.rng)
        return state

    def _write_cold(self, point, cold, loglik, info):
        new = dict(point)
        self._write(new, "A", cold["A"])
        self._write(new, "W", cold["W"])
        for role in self._rate_roles:
            self._write(new, role, cold["rates"][role[5:]])
        if "alpha" in self.update_roles:
            self._write(new, "alpha", np.asarray(cold["alpha"]))
        return new, {"loglik": np.float64(loglik)}
