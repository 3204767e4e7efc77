"""``HmcPoisson``: the step ``pm.sample()`` chooses for Poisson models of dense counts.

On mutational catalogues (tens of counts per cell) the latent-count sweep of
:class:`~bnmfzoo.inference.counts.gibbs.gibbs_poisson.GibbsPoisson` mixes the attribution of
counts between overlapping signatures by tiny steps and loses to PyMC's NUTS, while HMC on
``log A, log W`` with the likelihood evaluated directly, a gradient of three matrix products,
and trajectory lengths learned during tuning
(:mod:`bnmfzoo.inference.counts.gibbs._hmc_moves`) is faster than NUTS on every quantity
measured (the measured cost model, :mod:`bnmfzoo.inference._assignment`,
``docs/results/counts_dense.md``). This class is ``GibbsPoisson(moves="hmc")`` under its own
name, so that PyMC's automatic step assignment can pick it for those models (with one log
line saying why) while ``step=GibbsPoisson()`` keeps running the sweep.
"""

from bnmfzoo.inference._assignment import announce, choose
from bnmfzoo.inference.counts.gibbs.gibbs_poisson import GibbsPoisson, recognized_counts

__all__ = ["HmcPoisson"]


class HmcPoisson(GibbsPoisson):
    """HMC on ``log A, log W`` of a Poisson factorization: ``GibbsPoisson(moves="hmc")``.

    Parameters are those of :class:`GibbsPoisson` (``n_leap``, ``max_leap``, ...), with
    ``moves="hmc"`` by default: one exact HMC transition per draw whose step size, diagonal
    mass and distribution of trajectory lengths are tuned during PyMC's tuning draws, then
    frozen. Poisson models with fixed Gamma priors (no rate variables).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import bnmfzoo as bz
    >>> X = np.random.default_rng(0).poisson(30.0, size=(6, 5))
    >>> with bz.models.poisson(X, 2):
    ...     idata = pm.sample(draws=20, tune=20, chains=1, progressbar=False, random_seed=1,
    ...                       compute_convergence_checks=False)
    >>> idata.posterior["A"].shape
    (1, 20, 6, 2)
    """

    name = "hmc_poisson"

    def __init__(self, vars=None, *, moves="hmc", **kwargs):
        super().__init__(vars, moves=moves, **kwargs)

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for the variables of a dense Poisson model HMC can take, else INCOMPATIBLE.

        Which models: :func:`~bnmfzoo.inference.counts.gibbs.gibbs_poisson.recognized_counts`
        (when the cost model says HMC beats NUTS there); the others go to ``GibbsPoisson`` or
        NUTS. One log line says which sampler and why.
        """
        from pymc.step_methods.compound import Competence

        found = recognized_counts(var)
        if found is None or not found.hmc_default:
            return Competence.INCOMPATIBLE
        if var.name == found.names.get("imputed"):
            return Competence.IDEAL
        announce(found.model, var, set(found.names.values()) - {found.names.get("imputed")},
                 cls.__name__, choose("counts", "poisson_dense_hmc"))
        return Competence.IDEAL
