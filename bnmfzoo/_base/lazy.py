"""Lazy attribute loading for package namespaces (PEP 562).

Importing :mod:`bnmfzoo` must stay cheap: PyMC, PyTensor and numba take seconds to import, so each
public name is imported from its own module on first access.
"""

from importlib import import_module


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
