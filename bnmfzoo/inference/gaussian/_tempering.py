"""Numeric core of replica exchange (parallel tempering) for exponential-Gaussian NMF (no PyMC).

Replica ``i`` targets the tempered posterior ``prior(A, W, tau, lambda) * likelihood^beta_i``
with ``1 = beta_0 > beta_1 > ... > beta_{n-1} > 0``. For the Gaussian likelihood,
``likelihood^beta = tau^(beta n / 2) exp(-beta tau SSE / 2)`` (up to a constant), so:

* the conditionals of ``A`` and ``W`` are the untempered truncated normals with ``tau``
  replaced by ``beta tau`` (the sweep kernels of :mod:`bnmfzoo.inference.gaussian._core` are
  reused with that precision);
* ``tau | rest ~ Gamma(alpha_tau + beta n / 2, beta_tau + beta SSE / 2)``;
* the ARD rates do not touch the likelihood and keep their conditionals.

A swap of the states of neighbouring replicas ``i, i + 1`` is accepted with probability
``min(1, exp((beta_i - beta_{i+1}) (l_{i+1} - l_i)))``, ``l`` the log-likelihood (Swendsen &
Wang 1986; Geyer 1991). Swaps alternate between even and odd pairs ("deterministic even-odd",
the non-reversible scheme of Syed, Bouchard-Cote, Deligiannidis & Doucet 2022), each pass
leaving the product of the tempered posteriors invariant.

The ladder is tuned in rounds of doubling length (Syed et al. 2022, Algorithm 4): from the
rejection rates ``r_i`` of each pair in a round the communication barrier
``Lambda(beta) = sum of r`` below ``beta`` is interpolated (monotone in ``beta``) and the new
``beta`` are placed at equal steps of ``Lambda``, which equalizes the swap rates. The hottest
``beta`` is kept; outside tuning the ladder is frozen.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator

from bnmfzoo.inference.gaussian._core import (
    NMF_BLOCKS,
    _check_positive_finite,
    _gamma,
    _nmf_halves,
    _nonfinite,
    factor_rates,
    nmf_sweep,
)

__all__ = [
    "geometric_ladder",
    "log_likelihood",
    "tempered_sweep",
    "swap_pass",
    "LadderTuner",
    "retune_ladder",
]

_LOG_2PI = math.log(2.0 * math.pi)


def geometric_ladder(n_replicas, beta_min):
    """``n_replicas`` inverse temperatures from 1 down to ``beta_min``, geometrically spaced.

    Examples
    --------
    >>> geometric_ladder(3, 0.01).round(3).tolist()
    [1.0, 0.1, 0.01]
    """
    n = int(n_replicas)
    if n < 1:
        raise ValueError(f"n_replicas must be at least 1, got {n_replicas!r}")
    if not 0.0 < float(beta_min) < 1.0:
        raise ValueError(f"beta_min must lie in (0, 1), got {beta_min!r}")
    if n == 1:
        return np.ones(1)
    return np.exp(np.linspace(0.0, math.log(float(beta_min)), n))


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

    Same order and kernels as :func:`~bnmfzoo.inference.gaussian._core.nmf_sweep` (ARD rates,
    columns of ``A``, rows of ``W``, ``tau``); with ``beta == 1`` it *is* ``nmf_sweep`` (same
    draws). Otherwise the factor conditionals use the precision ``beta tau`` and ``tau`` is
    drawn from ``Gamma(alpha_tau + beta n / 2, beta_tau + beta SSE / 2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.gaussian._core import nmf_state, observed_entries
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


def swap_pass(states, betas, logliks, rng, parity):
    """Propose swaps of neighbouring replicas ``(i, i + 1)`` for ``i % 2 == parity``, in place.

    ``states`` and ``logliks`` are lists indexed by temperature (``betas[i]``); an accepted
    swap exchanges ``states[i]`` with ``states[i + 1]`` (and their log-likelihoods).

    Returns
    -------
    prob : numpy.ndarray
        ``(n - 1,)`` acceptance probabilities of the proposed swaps (NaN where none).
    accepted : numpy.ndarray of bool
        ``(n - 1,)``.

    Examples
    --------
    >>> import numpy as np
    >>> s, ll = ["hot", "cold"], [-1.0, -5.0]
    >>> p, acc = swap_pass(s, np.array([1.0, 0.5]), ll, np.random.default_rng(0), 0)
    >>> float(p[0]) == float(np.exp(0.5 * -4.0)), s if acc[0] else s[::-1]
    (True, ['cold', 'hot'])
    """
    n = len(states)
    prob = np.full(max(n - 1, 0), np.nan)
    accepted = np.zeros(max(n - 1, 0), dtype=bool)
    for i in range(int(parity) % 2, n - 1, 2):
        log_ratio = (betas[i] - betas[i + 1]) * (logliks[i + 1] - logliks[i])
        prob[i] = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
        if log_ratio >= 0 or rng.random() < prob[i]:
            accepted[i] = True
            states[i], states[i + 1] = states[i + 1], states[i]
            logliks[i], logliks[i + 1] = logliks[i + 1], logliks[i]
    return prob, accepted


def retune_ladder(betas, rejection):
    """New ladder with equal estimated rejection rates (Syed et al. 2022, Algorithm 4).

    ``rejection[i]`` estimates the swap rejection rate between ``betas[i]`` and ``betas[i+1]``.
    The communication barrier ``Lambda`` (cumulative rejection from the hottest replica) is
    interpolated in ``beta`` by a monotone cubic and the new ladder puts equal barrier between
    neighbours; ``betas[0] = 1`` and the hottest ``beta`` are kept.

    Examples
    --------
    >>> b = retune_ladder(np.array([1.0, 0.5, 0.1]), np.array([0.0, 0.6]))
    >>> bool(b[0] == 1.0 and b[-1] == 0.1 and 0.1 < b[1] < 0.5)
    True
    """
    betas = np.asarray(betas, dtype=float)
    n = betas.size
    if n < 3:
        return betas.copy()
    r = np.clip(np.asarray(rejection, dtype=float), 1e-3, 1.0)  # a floor keeps it invertible
    x = betas[::-1]  # increasing
    lam = np.concatenate([[0.0], np.cumsum(r[::-1])])
    f = PchipInterpolator(x, lam)
    targets = np.linspace(0.0, lam[-1], n)[1:-1]
    new = np.empty(n)
    new[0], new[-1] = x[0], x[-1]
    for j, t in enumerate(targets, start=1):  # bisection on the monotone interpolant
        lo, hi = x[0], x[-1]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if f(mid) < t:
                lo = mid
            else:
                hi = mid
        new[j] = 0.5 * (lo + hi)
    new = np.maximum.accumulate(new)
    return new[::-1].copy()


@dataclass
class LadderTuner:
    """Round-based ladder tuning during warm-up; frozen afterwards.

    Rounds last ``first_round`` steps, then twice as long each time; at the end of a round the
    ladder is retuned from the round's rejection rates (:func:`retune_ladder`).
    """

    round_length: int = 16
    step_in_round: int = 0
    rejection_sum: np.ndarray | None = None
    proposals: np.ndarray | None = None
    rounds: int = 0

    def record(self, prob):
        """Add one step's acceptance probabilities (NaN = not proposed)."""
        if self.rejection_sum is None:
            self.rejection_sum = np.zeros(prob.size)
            self.proposals = np.zeros(prob.size)
        seen = ~np.isnan(prob)
        self.rejection_sum[seen] += 1.0 - prob[seen]
        self.proposals[seen] += 1.0
        self.step_in_round += 1

    def maybe_retune(self, betas):
        """Return the retuned ladder at the end of a round, else ``betas`` unchanged."""
        if self.step_in_round < self.round_length or self.proposals is None:
            return betas
        rejection = self.rejection_sum / np.maximum(self.proposals, 1.0)
        new = retune_ladder(betas, rejection)
        self.rounds += 1
        self.round_length *= 2
        self.step_in_round = 0
        self.rejection_sum[:] = 0.0
        self.proposals[:] = 0.0
        return new
