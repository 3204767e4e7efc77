"""Inference: PyMC step methods (``pm.sample(step=...)``) and fitters returning DataTrees."""

from bnmfzoo._lazy import lazy_namespace

_NAMES = {
    "GibbsNMF": ".gibbs_nmf",
    "GibbsNMTF": ".gibbs_nmtf",
    "CollapsedGibbsBetaDir": ".collapsed_gibbs",
    "CollapsedGibbsDirDir": ".collapsed_gibbs",
    "fit_collapsed_gibbs": ".collapsed_gibbs",
    "fit_vb": ".vb",
    "fit_icm": ".icm",
    "fit_multiplicative": ".multiplicative",
    "fit_particles": ".particles",
    "fit_svgd": ".svgd",
    "fit_dsgd": ".dsgd",
    "fit_cvb0": ".cvb0",
    "fit_rrt": ".rrt",
    "fit_npvi": ".npvi",
    "fit_onvi": ".npvi",
    "fit_nuts": ".baselines",
    "fit_advi": ".baselines",
    "cross_validate": "._cv",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
