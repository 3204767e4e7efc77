"""Registration of the count wing's Gibbs step in PyMC's automatic step assignment."""

from bnmfzoo.inference.counts.gibbs.gibbs_poisson import GibbsPoisson

__all__ = ["register_step_methods"]


def register_step_methods():
    """Add :class:`GibbsPoisson` to ``pymc.step_methods.STEP_METHODS`` (once).

    ``pm.sample()`` without ``step=`` then uses it for the factors, rates and NB dispersion of
    a recognized Poisson / negative-binomial factorization. Called by ``import bnmfzoo`` once
    PyMC is loaded (see :mod:`bnmfzoo`).
    """
    from pymc.step_methods import STEP_METHODS

    if GibbsPoisson not in STEP_METHODS:
        STEP_METHODS.append(GibbsPoisson)
