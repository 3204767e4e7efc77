"""Row-blocked Gibbs sweeps of one matrix, serial or across Dask workers.

:func:`fit_blocked_gibbs` runs Poisson or exponential-Gaussian NMF with the rows cut into fixed
blocks; each block has its own random stream, so a chain is bit for bit the same in one process
and on any number of Dask workers. Numeric core: ``_kernels`` (numba), ``_blocks`` (blocks,
streams, sources), ``_families`` (block step, reduction, column draws), ``_chain`` (driver loop,
checkpoints, serial executor); Dask glue: ``_dask``.
"""

from bnmfzoo.inference.blocked._blocks import (
    ArraySource,
    H5adSource,
    SyntheticCountSource,
    SyntheticGaussianSource,
)
from bnmfzoo.inference.blocked.fit import fit_blocked_gibbs

__all__ = ["ArraySource", "H5adSource", "SyntheticCountSource", "SyntheticGaussianSource",
           "fit_blocked_gibbs"]
