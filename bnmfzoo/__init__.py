"""bnmfzoo: Bayesian non-negative matrix factorization, done properly, on PyMC.

Subpackages: :mod:`bnmfzoo.datasets`, :mod:`bnmfzoo.models`, :mod:`bnmfzoo.likelihoods`,
:mod:`bnmfzoo.inference`, :mod:`bnmfzoo.diagnostics`. They and :class:`BayesianNMF` are imported
lazily on first access (PEP 562), so ``import bnmfzoo`` is fast and ``bz.models.silf`` works
after a bare ``import bnmfzoo as bz``. Sparse and long-format data: :func:`long_format` builds a
:class:`LongMatrix` (``(row, col, value)`` triples) that the Gaussian-family models accept, as they
accept ``scipy.sparse`` matrices (stored entries = observed ones).
"""

from bnmfzoo._lazy import lazy_namespace

__version__ = "0.1.0"

_SUBPACKAGES = ("datasets", "models", "likelihoods", "inference", "diagnostics", "plots",
                "report")
__getattr__, __dir__ = lazy_namespace(
    __name__,
    {"BayesianNMF": ".estimator", "long_format": "._entries", "LongMatrix": "._entries"},
    _SUBPACKAGES,
)
__all__ = ["BayesianNMF", "LongMatrix", "datasets", "diagnostics", "inference", "likelihoods",
           "long_format", "models"]
