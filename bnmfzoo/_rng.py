"""Random-seed handling shared by every public function."""

import numpy as np


def as_generator(random_seed=None):
    """Return a :class:`numpy.random.Generator` for ``random_seed``.

    Parameters
    ----------
    random_seed : int, numpy.random.Generator, numpy.random.SeedSequence or None
        An existing generator is returned unchanged; anything else seeds a new PCG64 generator.

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is not None and not isinstance(
        random_seed, (int, np.integer, np.random.SeedSequence)
    ):
        raise TypeError(
            "random_seed must be an int, a numpy Generator or None, "
            f"got {type(random_seed).__name__}"
        )
    return np.random.default_rng(random_seed)


def spawn_seeds(random_seed, n):
    """Return ``n`` independent integer seeds derived reproducibly from ``random_seed``.

    Used to hand one seed to each particle, restart, chain or fold so that serial and parallel
    (Dask) runs give identical results.
    """
    rng = as_generator(random_seed)
    return [int(s) for s in rng.integers(0, 2**63 - 1, size=n)]
