"""Numeric core of replica exchange (parallel tempering) for exponential-Gaussian NMF (no PyMC).

Replica ``i`` targets the tempered posterior ``prior(A, W, tau, lambda) * likelihood^beta_i``
with ``1 = beta_0 > beta_1 > ... > beta_{n-1} > 0``. For the Gaussian likelihood,
``likelihood^beta = tau^(beta n / 2) exp(-beta tau SSE / 2)`` (up to a constant), so:

* the conditionals of ``A`` and ``W`` are the untempered truncated normals with ``tau``
  replaced by ``beta tau`` (the sweep kernels of :mod:`bnmfzoo.inference.gaussian.gibbs._core` are
  reused with that precision);
* ``tau | rest ~ Gamma(alpha_tau + beta n / 2, beta_tau + beta SSE / 2)``;
* the ARD rates do not touch the likelihood and keep their conditionals.

:class:`TemperedGibbs` is this family's tempered-sweep interface for the generic replica
exchange (:mod:`bnmfzoo.inference.tempering`); swaps, the ladder and its tuning are shared with
every family (:mod:`bnmfzoo.inference.tempering._ladder`, re-exported here).
"""

import math
from dataclasses import dataclass

import numpy as np

from bnmfzoo.inference.gaussian.gibbs._core import (
    NMF_BLOCKS,
    _check_positive_finite,
    _gamma,
    _nmf_halves,
    _nonfinite,
    factor_rates,
    nmf_state,
    nmf_sweep,
)
from bnmfzoo.inference.tempering import (
    LadderTuner,
    geometric_ladder,
    retune_ladder,
    swap_pass,
)

__all__ = [
    "TemperedGibbs",
    "geometric_ladder",
    "log_likelihood",
    "tempered_sweep",
    "swap_pass",
    "LadderTuner",
    "retune_ladder",
]

_LOG_2PI = math.log(2.0 * math.pi)


def _tau_of(state, hyper):
    sigma = hyper.sigma
    return 1.0 / float(sigma) ** 2 if sigma is not None else float(state.tau)


def log_likelihood(state, obs, hyper):
    """Gaussian log-likelihood ``n/2 log(tau / 2 pi) - tau SSE / 2`` of ``state``."""
    tau = _tau_of(state, hyper)
    n = obs.n_observed
    return 0.5 * n * (math.log(tau) - _LOG_2PI) - 0.5 * tau * state.sse


def tempered_sweep(state, obs, hyper, rng, beta, *, update=NMF_BLOCKS, kernel="auto"):
    """One Gibbs sweep of the posterior with its likelihood raised to ``beta``, in place.

    Same order and kernels as :func:`~bnmfzoo.inference.gaussian.gibbs._core.nmf_sweep` (ARD rates,
    columns of ``A``, rows of ``W``, ``tau``); with ``beta == 1`` it *is* ``nmf_sweep`` (same
    draws). Otherwise the factor conditionals use the precision ``beta tau`` and ``tau`` is
    drawn from ``Gamma(alpha_tau + beta n / 2, beta_tau + beta SSE / 2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> obs = observed_entries(X)
    >>> from bnmfzoo.models._spec import GaussianHyper
    >>> hyper = GaussianHyper(lambda_A=0.1, lambda_W=0.1)
    >>> st = nmf_state(np.ones((5, 2)), np.ones((2, 4)), 1.0, None, obs)
    >>> st = tempered_sweep(st, obs, hyper, np.random.default_rng(1), 0.1)
    >>> bool(st.tau > 0)
    True
    """
    beta = float(beta)
    if beta == 1.0:
        return nmf_sweep(state, obs, hyper, rng, update=update, kernel=kernel)
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must lie in (0, 1], got {beta!r}")
    update = frozenset(update)
    lam_A, lam_W = factor_rates(state, obs, hyper, rng, update)
    tau = _tau_of(state, hyper)
    if "A" in update or "W" in update:
        _check_positive_finite("the noise precision tau", tau, obs)
        _check_positive_finite("the factor rates", lam_A, obs)
        _check_positive_finite("the factor rates", lam_W, obs)
        _nmf_halves(state, obs, beta * tau, lam_A, lam_W, rng, "A" in update, "W" in update,
                    kernel)
    if "tau" in update and hyper.sigma is None:
        shape = hyper.alpha_tau + 0.5 * beta * obs.n_observed
        rate = hyper.beta_tau + 0.5 * beta * state.sse
        state.tau = float(_gamma(shape, rate, rng))
        if not (0.0 < state.tau < np.inf):
            raise _nonfinite(f"the noise precision tau = {state.tau!r}", obs,
                             f" (squared error of the fit: {state.sse!r})")
    return state


@dataclass
class TemperedGibbs:
    """The tempered-sweep interface of exponential-Gaussian NMF (for the generic exchange).

    States are :func:`~bnmfzoo.inference.gaussian.gibbs._core.nmf_state` objects; the tempered
    term is the Gaussian log-likelihood (:func:`log_likelihood`) and the sweep
    :func:`tempered_sweep`. ``dimension`` counts the free parameters: ``(D + N) R`` factor
    entries, ``tau`` unless fixed, the ARD rates.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.gaussian.gibbs._core import observed_entries
    >>> from bnmfzoo.models._spec import GaussianHyper
    >>> obs = observed_entries(np.ones((5, 4)))
    >>> fam = TemperedGibbs(obs, GaussianHyper(lambda_A=0.1, lambda_W=0.1), rank=2)
    >>> fam.dimension
    19
    >>> from bnmfzoo.inference.tempering import TemperedPath, TemperedSweep
    >>> isinstance(fam, TemperedSweep), isinstance(fam, TemperedPath)
    (True, False)
    """

    obs: object
    hyper: object
    rank: int = 1

    @property
    def dimension(self):
        """Free parameters: factor entries, ``tau`` unless fixed, ARD rates."""
        D, N = self.obs.shape
        tau = 0 if self.hyper.sigma is not None else 1
        return (D + N) * self.rank + tau + (self.rank if self.hyper.ard else 0)

    def sweep(self, state, beta, rng):
        """:func:`tempered_sweep` at ``beta``, in place."""
        tempered_sweep(state, self.obs, self.hyper, rng, beta)

    def loglik(self, state):
        """:func:`log_likelihood`, the term multiplied by ``beta``."""
        return log_likelihood(state, self.obs, self.hyper)

    def copy(self, state):
        """An independent copy of ``state``."""
        return nmf_state(state.A, state.W, state.tau, state.lambda_, self.obs)
