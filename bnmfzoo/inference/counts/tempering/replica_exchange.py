"""``ReplicaExchangePoisson``: replica exchange of latent-count Gibbs chains (PyMC step).

The generic replica exchange of :class:`bnmfzoo.inference.tempering.ReplicaExchange` over the
count family's tempered-sweep interfaces. For Poisson models replica ``beta`` targets the
power posterior ``p(A, W) L(A, W)^beta``
(:class:`~bnmfzoo.inference.counts.tempering._power.PowerCounts`: latent-count Gibbs with one
latent Gamma variable per nonzero, exact); for negative-binomial models, the posterior given a
fraction ``beta`` of the data, randomly rounded, at exposures ``beta o``
(:class:`~bnmfzoo.inference.counts.tempering._rounding.TemperedCounts`: a rounding bit per
nonzero, then the model's own Gibbs sweep and the group moves; swaps compare its marginal).
"""

import numpy as np

from bnmfzoo.inference.counts.gibbs.gibbs_poisson import GibbsPoisson
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.counts.tempering._power import PowerCounts
from bnmfzoo.inference.counts.tempering._power_nb import PowerNB
from bnmfzoo.inference.counts.tempering._rounding import TemperedCounts
from bnmfzoo.inference.tempering import ExchangeState, ReplicaExchange

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
        (:mod:`~bnmfzoo.inference.counts.tempering._rounding`).
    n_sweeps : int
        Tempered sweeps of every replica between two swap passes.
    inner_sweeps : int
        Gibbs sweeps (each with the rescaling and shear moves) per tempered sweep, given one
        draw of the rounding bits
        (:class:`~bnmfzoo.inference.counts.tempering._rounding.TemperedCounts`).
    path : {"power", "rounding"}, optional
        The tempered targets. ``"power"`` (the default for Poisson models) is the power
        posterior ``p(A, W) L^beta``, sampled exactly by latent-count Gibbs with one latent
        Gamma variable per nonzero (:mod:`~bnmfzoo.inference.counts.tempering._power`); it
        swaps on text, where most counts are 1; for NB models it is the Poisson factor of the
        NB's Poisson-Gamma mixture raised to ``beta``, the Gamma integrated out
        (:mod:`~bnmfzoo.inference.counts.tempering._power_nb`; swaps read its ``log_target``).
        ``"rounding"`` (the default of NB models) is the posterior given a random rounding of
        ``beta X`` (:mod:`~bnmfzoo.inference.counts.tempering._rounding`).

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
                 path=None, rng=None, blocked=True, initial_point=None,
                 compile_kwargs=None):
        GibbsPoisson.__init__(self, vars, model=model, rng=rng, loglik_stat=False)
        if self.problem.family == "nb2":
            raise TypeError("ReplicaExchangePoisson has no tempered sweep for "
                            "pm.NegativeBinomial(mu=, alpha=) (NB2) models yet; sample them "
                            "with GibbsPoisson, or write the NB as n=alpha * mu, "
                            "p=alpha / (1 + alpha)")
        poisson = self.problem.family == "poisson"
        if path is None:
            path = "power" if poisson else "rounding"
        if path not in ("power", "rounding"):
            raise ValueError(f"path must be 'power' or 'rounding', got {path!r}")
        if path == "power":
            self.tempered = (PowerCounts(self.problem, inner_sweeps) if poisson
                             else PowerNB(self.problem, inner_sweeps))
        else:
            self.tempered = TemperedCounts(self.problem, inner_sweeps)
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
        self._write_imputed(new, cold)
        return new, {"loglik": np.float64(loglik)}
