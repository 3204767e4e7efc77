"""``GibbsPoisson``: the latent-count Gibbs sampler as a PyMC step method.

Samples ``A``, ``W`` (and the Gamma rate variables of ARD / hierarchical priors, and a
learned NB dispersion) of any model :func:`bnmfzoo.models.recognize` reads as a Poisson or
Gamma-Poisson factorization of counts: :func:`bnmfzoo.models.poisson`,
:func:`bnmfzoo.models.negative_binomial`, or the user's own ``pm.Poisson("X", mu=A @ W,
observed=counts)`` with Gamma / Exponential priors. ``import bnmfzoo`` registers it, so plain
``pm.sample()`` chooses it for those variables (:meth:`GibbsPoisson.competence`).

The numeric sweep is :func:`bnmfzoo.inference.counts._gibbs.gibbs_sweep` (Cemgil 2009 for the
Poisson model; Zhou & Carin 2015's CRT augmentation for the negative binomial); cost per
sweep O(nonzeros x K + (D + N) K).
"""

from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._step_glue import TransformedStep, model_of_var
from bnmfzoo.inference.counts._gibbs import gibbs_sweep, log_likelihood
from bnmfzoo.inference.counts._problem import counts_spec

__all__ = ["GibbsPoisson", "GibbsPoissonState"]


@dataclass_state
class GibbsPoissonState(StepMethodState):
    """Sampling state of :class:`GibbsPoisson`: the generator (and a step counter).

    Nothing latent persists: the latent counts are drawn afresh every sweep.

    Attributes
    ----------
    var_names, rng
        As in every PyMC step method.
    n_steps : int
    """

    n_steps: int = field(default=0)


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
        Record the log-likelihood of each draw as the sample stat ``log_likelihood`` (one extra
        O(nonzeros K) pass per step).

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
    stats_dtypes_shapes = {"log_likelihood": (np.float64, [])}
    _state_class = GibbsPoissonState
    exact_conditionals = True

    def __init__(self, vars=None, *, model=None, rng=None, loglik_stat=True, blocked=True,
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

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for the variables of a recognized count model, else INCOMPATIBLE."""
        from pymc.step_methods.compound import Competence

        try:
            model = model_of_var(var)
            if model is None or var not in model.free_RVs:
                return Competence.INCOMPATIBLE
            found, _ = counts_spec(model, method=cls.__name__)
        except Exception:  # noqa: BLE001 - not a count model of ours
            return Competence.INCOMPATIBLE
        if var.name in set(found.var_names.values()):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def _state_from_point(self, point):
        state = {"A": self._read(point, "A"), "W": self._read(point, "W"), "rates": {},
                 "alpha": self.problem.alpha}
        for role in self._rate_roles:
            state["rates"][role[5:]] = self._read(point, role)
        if "alpha" in self.value_maps:
            state["alpha"] = float(self._read(point, "alpha"))
        return state

    def sweep_state(self, state, *, beta=1.0):
        """One numeric sweep of ``state`` (dict: A, W, rates, alpha) at inverse temperature."""
        return gibbs_sweep(self.problem, state, self.rng, beta=beta, update=self._update)

    def step(self, point):
        """One Gibbs sweep; the new values are written into a copy of ``point``."""
        state = self.sweep_state(self._state_from_point(point))
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
        self.n_steps += 1
        ll = log_likelihood(self.problem, state) if self.loglik_stat else np.nan
        return new, [{"log_likelihood": np.float64(ll)}]
