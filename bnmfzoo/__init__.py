"""bnmfzoo: Bayesian non-negative matrix factorization, done properly, on PyMC.

Subpackages: :mod:`bnmfzoo.datasets`, :mod:`bnmfzoo.models`, :mod:`bnmfzoo.likelihoods`,
:mod:`bnmfzoo.inference`, :mod:`bnmfzoo.diagnostics`. They and :class:`BayesianNMF` are imported
lazily on first access (PEP 562), so ``import bnmfzoo`` is fast and ``bz.models.silf`` works
after a bare ``import bnmfzoo as bz``.
"""

from bnmfzoo._lazy import lazy_namespace

__version__ = "0.1.0"

_SUBPACKAGES = ("datasets", "models", "likelihoods", "inference", "diagnostics", "plots",
                "report")
__getattr__, __dir__ = lazy_namespace(__name__, {"BayesianNMF": ".estimator"}, _SUBPACKAGES)
__all__ = ["BayesianNMF", "datasets", "diagnostics", "inference", "likelihoods", "models"]
