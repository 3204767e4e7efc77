"""Inference: PyMC step methods (``pm.sample(step=...)``) and fitters returning DataTrees.

Four independent wings, one per paper family; none imports another:

* :mod:`~bnmfzoo.inference.gaussian` -- Gaussian NMF/NMTF (Brouwer et al. 2017; Schmidt et al.
  2009): Gibbs step methods, VB, ICM, multiplicative updates, cross-validation.
* :mod:`~bnmfzoo.inference.binary` -- mean-parameterized Bernoulli NMF (Lumbreras et al. 2020):
  collapsed Gibbs step methods and CVB0.
* :mod:`~bnmfzoo.inference.particles` -- weighted particle posteriors (Masood & Doshi-Velez
  2019): Q-Transform, Stein weights, SVGD, DSGD, NUTS/ADVI baselines.
* :mod:`~bnmfzoo.inference.exploration` -- RRT exploration with online nonparametric VI (Masood &
  Doshi-Velez 2016).

Replica exchange is written once, in :mod:`~bnmfzoo.inference.tempering` (shared by the wings,
importing none): a family plugs its exact tempered sweep into the generic
:class:`ReplicaExchange` step (``ReplicaExchangeGibbs``, ``ReplicaExchangeCollapsed``).

``import bnmfzoo`` registers the Gibbs step methods with PyMC, so ``pm.sample()`` chooses them
by itself for the models they recognize; ``with pymc_default_steps():`` restores PyMC's own
choice (e.g. for a NUTS baseline).
"""

import os

from bnmfzoo._base.lazy import DEFER_PYMC, lazy_namespace


class _PyMCBeforeWings:
    """Deferred mode: import PyMC just before a part of ``inference`` that may need it.

    Every part but the blocked wing and the kernel floor triggers it, so a step module never
    starts loading before PyMC (the step registration, below, imports the step modules).
    """

    LEAN = ("blocked", "kernels")

    def find_spec(self, name, path=None, target=None):
        import sys

        prefix = __name__ + "."  # this package
        if name.startswith(prefix) and name[len(prefix):].split(".")[0] not in self.LEAN:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            import pymc  # noqa: F401
        return None


if os.environ.get(DEFER_PYMC) != "1":
    import pymc  # noqa: F401 - loaded before any step module (see below)
else:  # a blocked-sweep worker (see below)
    import sys as _sys

    _sys.meta_path.insert(0, _PyMCBeforeWings())

# ``import bnmfzoo`` registers our step methods as soon as PyMC is loaded; importing PyMC here,
# before any wing module starts executing, keeps that registration (which imports the step
# modules) from running inside a step module's own half-finished import (ImportError from a
# partially initialized module when e.g. ``from bnmfzoo.inference import GibbsNMF`` came first).
# A Dask worker of the blocked sweeps (``bnmfzoo._base.lazy.defer_pymc``) holds a block of data
# and runs NumPy / numba code only: it skips this import (about 70 MB per process) until another
# part of ``inference`` is imported there (``_PyMCBeforeWings``).

_NAMES = {
    "GibbsNMF": ".gaussian.gibbs.gibbs_nmf",
    "GibbsNMTF": ".gaussian.gibbs.gibbs_nmtf",
    "GibbsNoiseSD": ".gaussian.gibbs.noise_sd",
    "ReplicaExchangeGibbs": ".gaussian.modes.replica_exchange",
    "SymmetryMoves": ".gaussian.modes.symmetry_moves",
    "ModeJumps": ".gaussian.modes.mode_jumps",
    "mode_evidence": ".gaussian.modes.mode_evidence",
    "smc_mode_masses": ".smc_masses",
    "fit_vb": ".gaussian.variational.vb",
    "fit_icm": ".gaussian.variational.icm",
    "fit_multiplicative": ".gaussian.variational.multiplicative",
    "cross_validate": ".gaussian.cross_validation",
    "CollapsedGibbsBetaDir": ".binary.collapsed_gibbs",
    "CollapsedGibbsDirDir": ".binary.collapsed_gibbs",
    "ReplicaExchangeCollapsed": ".binary.replica_exchange",
    "ReplicaExchange": ".tempering.step",
    "ladder_stats": ".tempering",
    "fit_collapsed_gibbs": ".binary.collapsed_gibbs",
    "fit_cvb0": ".binary.cvb0",
    "fit_particles": ".particles.weighted",
    "fit_svgd": ".particles.svgd",
    "fit_dsgd": ".particles.dsgd",
    "fit_nuts": ".particles.baselines",
    "fit_advi": ".particles.baselines",
    "fit_rrt": ".exploration.rrt",
    "fit_npvi": ".exploration.npvi",
    "fit_onvi": ".exploration.npvi",
    "GibbsPoisson": ".counts.gibbs.gibbs_poisson",
    "HmcPoisson": ".counts.gibbs.hmc_poisson",
    "fit_blocked_gibbs": ".blocked.fit",
    "fit_blocked_vb": ".blocked.fit_vb",
    "ReplicaExchangePoisson": ".counts.tempering.replica_exchange",
    "fit_vb_poisson": ".counts.variational.vb",
    "fit_vb_nb": ".counts.variational.vb_nb",
    "select_rank_poisson": ".counts.variational.vb",
    "select_rank_nb": ".counts.variational.vb_nb",
    "sample": ".chains",
    "pymc_default_steps": "._step_glue",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
