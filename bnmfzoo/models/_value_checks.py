"""Range checks on a recognized Gaussian model's data and constant hyperparameters.

Our constructors (:func:`bnmfzoo.models.exponential_gaussian`, ...) validate their data and
hyperparameters before building the model; a user's own ``pm.Model`` reaches our samplers and
fitters through :func:`bnmfzoo.models.recognize` instead, so the same limits are applied to what
recognition read: observed values finite with ``|x| <= 1e150`` and ``sum(x^2)`` finite, a fixed
``sigma`` in the constructors' range, and constant prior parameters (exponential rates, the
scales of half-normal and truncated-normal priors, the Gamma parameters of ARD rates) within
the constructors' rate range. Beyond these limits the exact conditionals overflow (data of
1e200 made the truncated-normal kernel loop forever before the kernels were guarded; VB then
failed with "mu must be finite"): a clear ``ValueError`` up front is the better answer.
"""

import numpy as np

from bnmfzoo._base.validation import _check_values

__all__ = ["check_recognized_values", "OutOfRange"]


class OutOfRange(ValueError):
    """A recognized model whose data or constants our samplers cannot compute with.

    Step methods' ``competence`` lets it through (``pm.sample()`` stops with this message)
    rather than declining the model silently to another sampler.
    """


def _within(values, low, high, what):
    v = np.asarray(values, dtype=float)
    if v.size and not (np.isfinite(v).all() and v.min() >= low and v.max() <= high):
        bad = v[~(np.isfinite(v) & (v >= low) & (v <= high))].ravel()[0]
        raise OutOfRange(f"{what} must lie in [{low:.0e}, {high:.0e}] (rescale the data "
                         f"instead), got {float(bad):.4g}")


def check_recognized_values(f):
    """Raise :class:`OutOfRange` (a ``ValueError``) when factorization ``f`` is out of range.

    Parameters
    ----------
    f : bnmfzoo.models._recognize.Factorization
        Other kinds (e.g. a Bernoulli factorization) are left to their own readers.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> from bnmfzoo.models import recognize
    >>> X = np.ones((3, 2)); X[0, 0] = 1e200
    >>> with pm.Model() as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(3, 1))
    ...     W = pm.Exponential("W", 1.0, shape=(1, 2))
    ...     _ = likelihoods.gaussian("X", A, W, observed=X, sigma=1.0)
    >>> recognize(model)
    Traceback (most recent call last):
    ...
    bnmfzoo.models._value_checks.OutOfRange: the data of 'X' has an entry of magnitude 1e+200 ...
    """
    if getattr(f, "kind", None) not in ("nmf", "nmtf"):
        return
    from bnmfzoo.models.gaussian import MAX_SCALE_OVER_SIGMA, RATE_RANGE, SIGMA_RANGE

    values = (np.asarray(f.entries.values, dtype=float) if f.entries is not None
              else np.asarray(f.X.values, dtype=float)[np.asarray(f.mask, bool)])
    try:
        _check_values(values, "real", f"the data of {f.likelihood!r}")
    except ValueError as err:
        raise OutOfRange(str(err)) from None
    if f.noise.kind == "fixed":
        sigma = float(f.noise.sigma)
        scale = float(np.abs(values).max()) if values.size and np.abs(values).max() > 0 else 1.0
        low, high = SIGMA_RANGE
        if not (low <= sigma <= high and scale / sigma <= MAX_SCALE_OVER_SIGMA):
            raise OutOfRange(
                f"the noise sd of {f.likelihood!r}, sigma={sigma:.4g}, is outside the range the "
                f"samplers and fitters compute with in float64: need {low:.0e} <= sigma <= "
                f"{high:.0e} and max|X| / sigma <= {MAX_SCALE_OVER_SIGMA:.0e} (here max|X| = "
                f"{scale:.4g}); rescale X or choose sigma on the data's scale"
            )
    elif f.noise.kind == "precision":
        _within([f.noise.alpha, f.noise.beta], 1e-300, 1e300,
                f"the Gamma prior parameters of {f.noise.name!r}")
    low, high = RATE_RANGE
    for role, prior in f.factors.items():
        for key, param in prior.params.items():
            if not param.constant:
                continue
            what = f"the {prior.family} prior's {key} of {role} ({prior.name!r})"
            if key == "mu":  # a location: as large as the scales allow
                _within(param.value, -1.0 / low, 1.0 / low, what)
            elif key == "lam":
                _within(param.value, low, high, what)
            else:  # sigma: a scale, the reciprocal of a rate
                _within(param.value, 1.0 / high, 1.0 / low, what)
    for name, rate in f.rates.items():
        _within(np.concatenate([np.ravel(rate.alpha), np.ravel(rate.beta)]), low, high,
                f"the Gamma prior parameters of the rate {name!r}")
