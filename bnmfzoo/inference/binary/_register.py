"""Registration of the binary wing's collapsed samplers in PyMC's automatic step assignment."""

from bnmfzoo.inference.binary.collapsed_gibbs import CollapsedGibbsBetaDir, CollapsedGibbsDirDir

__all__ = ["register_step_methods"]


def register_step_methods():
    """Add :class:`CollapsedGibbsBetaDir` and :class:`CollapsedGibbsDirDir` to ``STEP_METHODS``.

    ``pm.sample()`` without ``step=`` then uses them for ``A`` and ``W`` of a Beta-Dir,
    Dir-Beta or Dir-Dir model (ours or a recognized user model; see their ``competence``).
    Called by ``import bnmfzoo`` once PyMC is loaded (see :mod:`bnmfzoo`).
    """
    from pymc.step_methods import STEP_METHODS

    for cls in (CollapsedGibbsBetaDir, CollapsedGibbsDirDir):
        if cls not in STEP_METHODS:
            STEP_METHODS.append(cls)
