"""Gamma log densities and a moment fit of independent Gamma factors (numeric core).

The product-form references of the mode-mass estimators (:mod:`bnmfzoo.inference.reference_path`
and the count and Gaussian adapters) are products of Gammas fitted to a mode's draws, entry by
entry: the mean matched and the variance widened, so the reference is heavier than the mode in
every direction and the importance weights near the reference stay bounded.
"""

import numpy as np
from scipy.special import gammaln

__all__ = ["gamma_logpdf", "gamma_moment_fit"]


def gamma_logpdf(x, a, b):
    """``sum log Gamma(x; shape a, rate b)`` over the entries (broadcast).

    Examples
    --------
    >>> from scipy.stats import gamma
    >>> bool(np.isclose(gamma_logpdf(np.array([0.5, 2.0]), 3.0, 2.0),
    ...                 gamma.logpdf([0.5, 2.0], 3.0, scale=0.5).sum()))
    True
    """
    return float(np.sum(a * np.log(b) - gammaln(a) + (a - 1.0) * np.log(x) - b * x))


def gamma_moment_fit(draws, widen):
    """Per-column ``Gamma(shape, rate)`` with the draws' mean and ``widen`` times their variance.

    ``draws``: ``(n, d)``; returns ``(shape (d,), rate (d,))``. A ValueError when a column's
    mean is not finite and positive.

    Examples
    --------
    >>> a, b = gamma_moment_fit(np.array([[1.0], [3.0]]), 1.0)  # mean 2, variance 1
    >>> [round(float(a[0]), 6), round(float(b[0]), 6)]
    [4.0, 2.0]
    """
    m = draws.mean(0)
    v = widen * draws.var(0) + 1e-12 * m ** 2
    if not (np.all(np.isfinite(m)) and np.all(m > 0) and np.all(np.isfinite(v))):
        raise ValueError("the mode's draws are not finite and positive")
    return m ** 2 / v, m / v
