"""BNMF models as PyMC models: each public function returns a ``pm.Model``.

Every model carries the data's coordinates (``row``, ``col``, ``factor``) and a
:class:`~bnmfzoo.models._spec.ModelSpec` that our own inference methods read; for the Gaussian
families the spec is what :func:`recognize` reads from the model's graph, and ``recognize``
works on any ``pm.Model`` a user writes.
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
    "recognize": "._recognize",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
