"""Lazy attribute loading for package namespaces (PEP 562).

Importing :mod:`bnmfzoo` must stay cheap: PyMC, PyTensor and numba take seconds to import, so each
public name is imported from its own module on first access.
"""

import os
from importlib import import_module

#: When this environment variable is ``"1"``, ``bnmfzoo.inference`` does not import PyMC
#: eagerly (:func:`defer_pymc`).
DEFER_PYMC = "BNMFZOO_DEFER_PYMC"


def defer_pymc():
    """Keep PyMC and PyTensor out of this process until a module that needs them is imported.

    Called on the Dask workers of the blocked sweeps (which hold a block of data and run only
    NumPy / numba code) before anything of ``bnmfzoo.inference`` reaches them: PyMC's import
    costs about 70 MB of resident memory per worker. ``bnmfzoo.inference`` still imports PyMC
    first when another of its parts (a step module) is imported later in the process.
    """
    os.environ[DEFER_PYMC] = "1"


def lazy_namespace(package, mapping, submodules=()):
    """Return ``(__getattr__, __dir__)`` that import ``mapping[name]`` on first access.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    mapping : dict of str to str
        Public name -> module path relative to ``package`` (e.g. ``".gibbs"``).
    submodules : iterable of str
        Subpackages or modules of ``package`` exposed as attributes (``bz.models``), imported on
        first access.

    Examples
    --------
    >>> __getattr__, __dir__ = lazy_namespace("bnmfzoo", {}, submodules=("models",))
    >>> __getattr__("models").__name__
    'bnmfzoo.models'
    """
    submodules = frozenset(submodules)

    def __getattr__(name):
        if name in submodules:
            value = import_module(f".{name}", package)
        elif name in mapping:
            value = getattr(import_module(mapping[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import_module(package).__dict__[name] = value
        return value

    def __dir__():
        return sorted(set(mapping) | submodules)

    return __getattr__, __dir__
