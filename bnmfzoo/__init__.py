"""bnmfzoo: Bayesian non-negative matrix factorization, done properly, on PyMC.

Subpackages: :mod:`bnmfzoo.datasets`, :mod:`bnmfzoo.models`, :mod:`bnmfzoo.likelihoods`,
:mod:`bnmfzoo.inference`, :mod:`bnmfzoo.diagnostics`. They and :class:`BayesianNMF` are imported
lazily on first access (PEP 562), so ``import bnmfzoo`` is fast and ``bz.models.silf`` works
after a bare ``import bnmfzoo as bz``. Sparse and long-format data: :func:`long_format` builds a
:class:`LongMatrix` (``(row, col, value)`` triples) that the Gaussian and Bernoulli models
accept, as they accept ``scipy.sparse`` matrices (stored entries = observed ones).

``import bnmfzoo`` also lets ``pm.sample()`` choose the library's Gibbs steps by itself for the
models they recognize (:func:`bnmfzoo.models.recognize`): they are added to PyMC's
``STEP_METHODS`` right away when PyMC is already loaded, else as soon as it is (a one-shot
import hook), so importing bnmfzoo stays cheap.
"""

import logging as _logging

from bnmfzoo._base.lazy import lazy_namespace

__version__ = "0.1.0"

# The library's log lines (which sampler pm.sample() chose, and why) are shown the way PyMC
# shows its own: at INFO on standard error, unless the program has configured logging itself.
if not _logging.root.handlers:
    _logging.getLogger(__name__).setLevel(_logging.INFO)
    if not _logging.getLogger(__name__).handlers:
        _logging.getLogger(__name__).addHandler(_logging.StreamHandler())

_SUBPACKAGES = ("datasets", "models", "likelihoods", "inference", "diagnostics", "plots",
                "report", "signatures")
__getattr__, __dir__ = lazy_namespace(
    __name__,
    {"BayesianNMF": ".estimator", "long_format": "._base.entries", "LongMatrix": "._base.entries"},
    _SUBPACKAGES,
)
__all__ = ["BayesianNMF", "LongMatrix", "datasets", "diagnostics", "inference", "likelihoods",
           "long_format", "models"]


def _register_steps():
    import importlib

    for wing in ("gaussian", "binary", "counts"):
        importlib.import_module(f"bnmfzoo.inference.{wing}._register").register_step_methods()
    # why an NMF-like model gets NUTS; NUTS options when our steps take every variable
    importlib.import_module("bnmfzoo.inference._assignment").install()


class _AfterPyMC:
    """Meta-path finder: once ``pymc`` has been imported, register our step methods."""

    def find_spec(self, name, path=None, target=None):
        if name != "pymc":
            return None
        import importlib.machinery
        import sys

        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            _register_steps()

        spec.loader.exec_module = exec_then_register
        return spec


def _install_hook():
    import sys

    if "pymc" in sys.modules:
        _register_steps()
    elif not any(isinstance(f, _AfterPyMC) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyMC())


_install_hook()
