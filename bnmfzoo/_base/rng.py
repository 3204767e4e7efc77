"""Random-seed handling shared by every public function."""

import numpy as np

from bnmfzoo._base.validation import check_seed


def as_generator(random_seed=None):
    """Return a :class:`numpy.random.Generator` for ``random_seed``.

    Parameters
    ----------
    random_seed : int, numpy.random.Generator, numpy.random.SeedSequence or None
        An existing generator is returned unchanged; anything else seeds a new PCG64 generator.
        A negative integer, a ``bool`` or any other type is refused
        (:func:`bnmfzoo._base.validation.check_seed`).

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    return np.random.default_rng(check_seed(random_seed))


def spawn_seeds(random_seed, n):
    """Return ``n`` independent integer seeds derived reproducibly from ``random_seed``.

    Used to hand one seed to each particle, restart, chain or fold so that serial and parallel
    (Dask) runs give identical results.
    """
    rng = as_generator(random_seed)
    return [int(s) for s in rng.integers(0, 2**63 - 1, size=n)]
