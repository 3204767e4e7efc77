"""Row-blocked Gibbs sweeps and variational Bayes of one matrix, serial or across Dask workers.

:func:`fit_blocked_gibbs` runs Poisson or exponential-Gaussian NMF with the rows cut into fixed
blocks; each block has its own random stream, so a chain is bit for bit the same in one process
and on any number of Dask workers. :func:`fit_blocked_vb` runs Poisson or negative-binomial VB
the same way. Numeric core: ``_kernels`` (numba), ``_blocks`` (blocks, streams, sources),
``_families`` (block step, reduction, column draws), ``_vb`` (the VB block step and ``q(W)``
update), ``_chain`` (driver loop, checkpoints, serial executor); Dask glue: ``_dask``; fronts:
``fit``, ``fit_vb``.
"""

from bnmfzoo._base.lazy import lazy_namespace

# lazy (PEP 562): a Dask worker that unpickles a block function imports only the numeric core
_NAMES = {"ArraySource": "._blocks", "H5adSource": "._blocks",
          "SyntheticCountSource": "._blocks", "SyntheticGaussianSource": "._blocks",
          "FileSource": "._sources", "fit_blocked_gibbs": ".fit", "fit_blocked_vb": ".fit_vb"}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
