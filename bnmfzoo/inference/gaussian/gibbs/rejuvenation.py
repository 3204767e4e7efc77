"""Exact-Gibbs rejuvenation kernel for particle posteriors of the exponential-Gaussian NMF.

``fit_particles(model, rejuvenate=GibbsRejuvenation(n_sweeps))`` moves each particle by
``n_sweeps`` Gibbs sweeps of ``A`` and ``W`` (truncated-normal conditionals, the kernel of
:class:`~bnmfzoo.inference.GibbsNMF`) before the Stein weights are computed. Each sweep draws
every entry from its exact conditional, so a particle on the boundary (exact zeros from an NMF
solver) leaves it at once, and a particle moves across its mode in a few sweeps where a gradient
kernel in value space crawls (measured in ``benchmarks/reproduce/gold_standard``).

Needs ``exponential_gaussian(..., sigma=<fixed>)`` without ARD (the models ``fit_particles``
accepts in that family).
"""

import numpy as np

from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep, observed_entries
from bnmfzoo.models._spec import get_spec

__all__ = ["GibbsRejuvenation"]


class GibbsRejuvenation:
    """Callable rejuvenation kernel: ``kernel(model, A, W, rng) -> (A, W, stats)``.

    Parameters
    ----------
    n_sweeps : int, default 50
        Gibbs sweeps per particle (A then W).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> kernel = GibbsRejuvenation(5)
    >>> A, W, st = kernel(exponential_gaussian(X, 2, sigma=0.3), np.ones((3, 6, 2)),
    ...                   np.ones((3, 2, 5)), np.random.default_rng(1))
    >>> A.shape, bool((A > 0).all())
    ((3, 6, 2), True)
    """

    def __init__(self, n_sweeps=50):
        if isinstance(n_sweeps, bool) or not isinstance(n_sweeps, (int, np.integer)) \
                or n_sweeps < 1:
            raise ValueError(f"n_sweeps must be a positive integer, got {n_sweeps!r}")
        self.n_sweeps = int(n_sweeps)
        self.__name__ = f"gibbs{self.n_sweeps}"

    def __call__(self, model, A, W, rng):
        """Move the stacks ``A`` (M, D, R), ``W`` (M, R, N); one seed spawned per particle."""
        spec = get_spec(model, families="exponential_gaussian", method="GibbsRejuvenation")
        hyper = spec.hyper
        if hyper.sigma is None or hyper.ard:
            raise TypeError("GibbsRejuvenation needs exponential_gaussian(..., sigma=<fixed>) "
                            "without ARD")
        obs = observed_entries(spec.X.values, spec.mask)
        tau = 1.0 / float(hyper.sigma) ** 2
        seeds = spawn_seeds(as_generator(rng), A.shape[0])
        outA, outW = np.empty_like(A, dtype=float), np.empty_like(W, dtype=float)
        for m in range(A.shape[0]):
            r = np.random.default_rng(seeds[m])
            st = nmf_state(A[m], W[m], tau, None, obs)
            for _ in range(self.n_sweeps):
                nmf_sweep(st, obs, hyper, r, update={"A", "W"})
            outA[m], outW[m] = st.A, st.W
        return outA, outW, {"n_steps": self.n_sweeps}

    def __repr__(self):
        return f"GibbsRejuvenation(n_sweeps={self.n_sweeps})"
