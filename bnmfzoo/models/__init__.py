"""BNMF models as PyMC models: each public function returns a ``pm.Model``.

Every model carries the data's coordinates (``row``, ``col``, ``factor``) and a
:class:`~bnmfzoo.models._spec.ModelSpec` that our own inference methods read.
"""

from bnmfzoo._lazy import lazy_namespace

_NAMES = {
    "exponential_gaussian": ".gaussian",
    "tri_exponential_gaussian": ".gaussian",
    "silf": ".silf_dirichlet",
    "uniform_noise": ".uniform",
    "beta_dir": ".bernoulli",
    "dir_beta": ".bernoulli",
    "dir_dir": ".bernoulli",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
