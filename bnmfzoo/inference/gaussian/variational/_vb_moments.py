"""Truncated-normal and Gamma moments for the VB / ICM updates of Brouwer et al. (2017).

Truncated normals are parameterized by mean ``mu`` and precision ``tau`` of the untruncated
normal, truncated to [0, inf); their moments, entropies and draws come from
:mod:`bnmfzoo.inference.kernels.truncnorm`. Gamma ``(a, b)`` is shape / rate. Pure NumPy.
"""

import numpy as np
from scipy import special

from bnmfzoo.inference.kernels.truncnorm import (
    sample_truncnorm,
    truncnorm_entropy,
    truncnorm_mean_var,
)

LOG_2PI = np.log(2.0 * np.pi)


def tn_moments(mu, tau):
    """Mean and variance of N(mu, 1/tau) truncated to [0, inf) (stable in the far tail)."""
    return truncnorm_mean_var(mu, 1.0 / np.sqrt(tau))


def tn_moments_scalar(mu, tau):
    """Scalar :func:`tn_moments` (used for the elements of S)."""
    m, v = tn_moments(float(mu), float(tau))
    return float(m), float(v)


def tn_moments_rule(mu, prec):
    """VB column rule: the truncated-normal moments (scalar fast path for one element)."""
    if np.ndim(mu) == 0:
        return tn_moments_scalar(mu, prec)
    return tn_moments(mu, prec)


def tn_entropy(mu, tau):
    """Entropy of N(mu, 1/tau) truncated to [0, inf) (elementwise)."""
    return truncnorm_entropy(mu, 1.0 / np.sqrt(tau))


def tn_sample(mu, tau, rng, size=None):
    """Exact draws from N(mu, 1/tau) truncated to [0, inf), broadcast to ``size``."""
    mu = np.asarray(mu, dtype=float)
    tau = np.asarray(tau, dtype=float)
    shape = np.broadcast_shapes(mu.shape, tau.shape) if size is None else size
    return sample_truncnorm(np.broadcast_to(mu, shape), np.broadcast_to(1.0 / np.sqrt(tau), shape),
                            rng)


def gamma_elog(a, b):
    """E[log x] for x ~ Gamma(shape a, rate b)."""
    return special.digamma(a) - np.log(b)


def gamma_entropy(a, b):
    """Entropy of Gamma(shape a, rate b)."""
    return a - np.log(b) + special.gammaln(a) + (1.0 - a) * special.digamma(a)


def gamma_logprior(a0, b0, elog, mean):
    """E_q[log Gamma(x | a0, b0)] given E[log x] and E[x]."""
    return a0 * np.log(b0) - special.gammaln(a0) + (a0 - 1.0) * elog - b0 * mean
