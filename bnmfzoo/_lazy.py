"""Lazy attribute loading for package namespaces (PEP 562).

Importing :mod:`bnmfzoo` must stay cheap: PyMC, PyTensor and numba take seconds to import, so each
public name is imported from its own module on first access.
"""

from importlib import import_module


def lazy_namespace(package, mapping):
    """Return ``(__getattr__, __dir__)`` that import ``mapping[name]`` on first access.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    mapping : dict of str to str
        Public name -> module path relative to ``package`` (e.g. ``".gibbs"``).
    """

    def __getattr__(name):
        if name not in mapping:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(mapping[name], package), name)
        import_module(package).__dict__[name] = value
        return value

    def __dir__():
        return sorted(mapping)

    return __getattr__, __dir__
