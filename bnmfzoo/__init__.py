"""bnmfzoo: Bayesian non-negative matrix factorization, done properly, on PyMC.

Subpackages: :mod:`bnmfzoo.datasets`, :mod:`bnmfzoo.models`, :mod:`bnmfzoo.likelihoods`,
:mod:`bnmfzoo.inference`, :mod:`bnmfzoo.diagnostics`. Names are imported lazily, so
``import bnmfzoo`` is fast.
"""

from bnmfzoo._lazy import lazy_namespace

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_namespace(__name__, {"BayesianNMF": ".estimator"})
__all__ = ["BayesianNMF"]
