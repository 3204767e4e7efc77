"""BNMF models as PyMC models: each public function returns a ``pm.Model``.

Every model carries the data's coordinates (``row``, ``col``, ``factor``). Our inference
methods read a :class:`~bnmfzoo.models._spec.ModelSpec` that :func:`recognize` derives from the
model's graph (Gaussian, SILF and uniform-noise families: nothing is attached to the model;
the Bernoulli constructors still attach theirs), and ``recognize`` works on any ``pm.Model`` a
user writes.
"""

from bnmfzoo._base.lazy import lazy_namespace

_NAMES = {
    "exponential_gaussian": ".gaussian",
    "tri_exponential_gaussian": ".gaussian",
    "silf": ".silf_dirichlet",
    "uniform_noise": ".uniform",
    "beta_dir": ".bernoulli",
    "dir_beta": ".bernoulli",
    "dir_dir": ".bernoulli",
    "recognize": "._recognize",
    "poisson": ".poisson_nmf",
    "negative_binomial": ".poisson_nmf",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
