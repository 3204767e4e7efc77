"""Registration of the count wing's steps in PyMC's automatic step assignment."""

from bnmfzoo.inference.counts.gibbs.gibbs_poisson import GibbsPoisson
from bnmfzoo.inference.counts.gibbs.hmc_poisson import HmcPoisson

__all__ = ["register_step_methods"]


def register_step_methods():
    """Add :class:`GibbsPoisson` and :class:`HmcPoisson` to PyMC's ``STEP_METHODS`` (once).

    ``pm.sample()`` without ``step=`` then uses them for the factors, rates and NB dispersion
    of a recognized Poisson / negative-binomial factorization (``HmcPoisson`` for Poisson
    models of dense counts with fixed Gamma priors). Called by ``import bnmfzoo`` once PyMC
    is loaded (see :mod:`bnmfzoo`).
    """
    from pymc.step_methods import STEP_METHODS

    for cls in (GibbsPoisson, HmcPoisson):
        if cls not in STEP_METHODS:
            STEP_METHODS.append(cls)
