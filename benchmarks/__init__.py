"""Benchmarks: ``speed/`` (minutes; ``make bench``) and ``reproduce/<paper>/`` (``make reproduce``).

Run a script as a module from the project root, e.g. ``python -m benchmarks.speed.gibbs``.
Importing this package sets the environment defaults of :mod:`benchmarks._common` (one BLAS
thread, the shared data folder) before any script imports numpy.
"""

from benchmarks import _common  # noqa: F401
