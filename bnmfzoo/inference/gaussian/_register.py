"""Registration of the Gaussian wing's Gibbs steps in PyMC's automatic step assignment."""

from bnmfzoo.inference.gaussian.gibbs.gibbs_nmf import GibbsNMF
from bnmfzoo.inference.gaussian.gibbs.gibbs_nmtf import GibbsNMTF
from bnmfzoo.inference.gaussian.gibbs.noise_sd import GibbsNoiseSD

__all__ = ["register_step_methods"]


def register_step_methods():
    """Add the Gibbs steps to PyMC's ``STEP_METHODS`` (once).

    :class:`GibbsNMF`, :class:`GibbsNMTF` and :class:`GibbsNoiseSD`.

    ``pm.sample()`` without ``step=`` then asks them for their :meth:`competence` on every free
    variable and uses them for the variables of a recognized model (see
    :func:`bnmfzoo.models._recognize.recognize`), PyMC's defaults for the rest. Called
    by ``import bnmfzoo`` once PyMC is loaded (see :mod:`bnmfzoo`).
    """
    from pymc.step_methods import STEP_METHODS

    for cls in (GibbsNMF, GibbsNMTF, GibbsNoiseSD):
        if cls not in STEP_METHODS:
            STEP_METHODS.append(cls)
