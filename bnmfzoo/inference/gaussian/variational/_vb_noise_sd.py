"""Noise sd ``sigma ~ HalfNormal(s)`` or ``HalfCauchy(beta)`` in :func:`fit_vb` / :func:`fit_icm`.

Pure NumPy / SciPy. The likelihood depends on ``sigma`` only through ``tau = sigma^-2``, ``n``
(the number of observed entries) and the residual sum of squares ``SSR`` (its expectation
``E[SSR]`` under the mean-field q of the factors in VB).

* ICM: the mode of ``log p(sigma | A, W, X) = -n log sigma - SSR / (2 sigma^2) + log p(sigma)``
  in ``sigma`` (the model's variable, no Jacobian: the objective is PyMC's
  ``logp(jacobian=False)``). With ``v = sigma^2`` the stationarity condition is a quadratic
  in ``v`` for both priors (:func:`sd_mode`).
* VB, HalfNormal: ``q(tau) ∝ tau^(p - 1) exp(-(a tau + b / tau) / 2)``, a generalized inverse
  Gaussian with ``p = (n - 1)/2``, ``a = E[SSR]``, ``b = 1/s^2``. Its normalizer and moments
  are Bessel-function ratios; for large ``n`` the Bessel functions overflow, so
  :func:`gig_moments` integrates in ``u = log tau`` with the trapezoid rule on a grid about
  the mode (the integrand is log-concave in ``u`` and smooth, so the rule converges
  geometrically; tests check it against :mod:`scipy.stats.geninvgauss` and
  :func:`scipy.special.kve`).
* VB, HalfCauchy: the scale mixture ``tau | d ~ Gamma(1/2, d)``, ``d ~ Gamma(1/2, 1/beta^2)``
  (Makalic & Schmidt 2016, "A simple sampler for the horseshoe estimator", IEEE Signal
  Processing Letters 23(1); ``d = 1/c`` of :mod:`~bnmfzoo.inference.gaussian.gibbs.noise_sd`) is
  conjugate: ``q(tau) = Gamma(1/2 + n/2, E[d] + E[SSR]/2)``,
  ``q(d) = Gamma(1, 1/beta^2 + E[tau])``. The ELBO is that of the augmented model (whose
  marginal likelihood is the model's).
"""

import numpy as np
from scipy import special

from bnmfzoo.inference.gaussian.variational._vb_moments import (
    gamma_elog,
    gamma_entropy,
    gamma_logprior,
)

_GRID = np.linspace(-120.0, 60.0, 6001)  # in sds of the Laplace approximation about the mode


def sd_mode(family, scale, n, ssr):
    """Mode in ``sigma`` of ``sigma^-n exp(-ssr / (2 sigma^2)) p(sigma)``.

    Examples
    --------
    >>> round(sd_mode("halfnormal", 1.0, 10, 10.0), 6)  # sigma^2 = (sqrt(140) - 10) / 2
    0.957121
    """
    ssr = float(ssr)
    if not (np.isfinite(ssr) and ssr > 0):
        raise FloatingPointError(f"residual sum of squares {ssr!r} (need a finite positive "
                                 "value for the noise sd's mode)")
    s2 = float(scale) ** 2
    if family == "halfnormal":  # v^2 / s^2 + n v - ssr = 0
        v = 2.0 * ssr / (n + np.sqrt(n * n + 4.0 * ssr / s2))
    elif family == "halfcauchy":  # (n + 2) v^2 - (ssr - n s2) v - ssr s2 = 0
        c = ssr - n * s2
        disc = np.sqrt(c * c + 4.0 * (n + 2) * ssr * s2)
        v = (c + disc) / (2.0 * (n + 2)) if c >= 0 else 2.0 * ssr * s2 / (disc - c)
    else:
        raise ValueError(f"unknown noise sd prior {family!r}")
    return float(np.sqrt(v))


def sd_logprior(family, scale, sigma):
    """``log p(sigma)`` of ``HalfNormal(scale)`` / ``HalfCauchy(scale)`` (``sigma > 0``)."""
    if family == "halfnormal":
        return 0.5 * np.log(2.0 / np.pi) - np.log(scale) - sigma**2 / (2.0 * scale**2)
    return np.log(2.0 / (np.pi * scale)) - np.log1p((sigma / scale) ** 2)


def gig_moments(p, a, b):
    """``log Z``, ``E[x]``, ``E[1/x]``, ``E[log x]`` of ``x^(p-1) exp(-(a x + b/x)/2)`` on x > 0.

    ``Z`` is the integral of that unnormalized density (``2 (b/a)^(p/2) K_p(sqrt(a b))``).
    Needs ``a, b > 0``.

    Examples
    --------
    >>> from scipy.special import kv
    >>> logz, *_ = gig_moments(1.5, 2.0, 3.0)
    >>> bool(np.isclose(logz, np.log(2 * (3 / 2) ** 0.75 * kv(1.5, np.sqrt(6.0)))))
    True
    """
    if not (a > 0 and b > 0):
        raise ValueError(f"GIG needs a > 0 and b > 0, got a={a!r}, b={b!r}")
    # mode of g(u) = p u - (a e^u + b e^-u)/2: a y^2 - 2 p y - b = 0 with y = e^u
    y = (p + np.sqrt(p * p + a * b)) / a if p >= 0 else b / (np.sqrt(p * p + a * b) - p)
    u0 = np.log(y)
    h = 1.0 / np.sqrt(0.5 * (a * y + b / y))
    u = u0 + h * _GRID
    g = p * u - 0.5 * (a * np.exp(u) + b * np.exp(-u))
    g0 = g.max()
    w = np.exp(g - g0)
    du = h * (_GRID[1] - _GRID[0])
    mass = w.sum() * du  # the end points carry weight exp(-hundreds): trapezoid = plain sum
    logz = g0 + np.log(mass)
    mean = float(np.sum(w * np.exp(u)) * du / mass)
    mean_inv = float(np.sum(w * np.exp(-u)) * du / mass)
    mean_log = float(np.sum(w * u) * du / mass)
    return float(logz), mean, mean_inv, mean_log


def gig_entropy(p, a, b, moments=None):
    """Differential entropy of GIG(p, a, b) (density ``x^(p-1) exp(-(a x + b/x)/2) / Z``)."""
    logz, mean, mean_inv, mean_log = gig_moments(p, a, b) if moments is None else moments
    return logz - (p - 1.0) * mean_log + 0.5 * (a * mean + b * mean_inv)


class NoiseSDQ:
    """Mean-field q of ``tau = sigma^-2`` (and, for HalfCauchy, of the auxiliary ``d``).

    ``update(n, essr)`` sets q to its optimum given ``E[SSR]``; ``tau`` / ``logtau`` are
    ``E[tau]`` / ``E[log tau]``; ``elbo_terms()`` is ``E[log p(tau, d)] + H(q)``, the prior
    part of the ELBO; ``draw_sd`` draws ``sigma`` from q.

    Examples
    --------
    >>> q = NoiseSDQ("halfnormal", 1.0, 50)
    >>> q.update(25.0)
    >>> bool(0.5 < q.tau < 4)
    True
    """

    def __init__(self, family, scale, n):
        if family not in ("halfnormal", "halfcauchy"):
            raise ValueError(f"unknown noise sd prior {family!r}")
        self.family, self.scale, self.n = family, float(scale), int(n)
        self.tau, self.logtau = 1.0, 0.0
        self.params = None
        self.d_ab = (1.0, 1.0 / self.scale**2 + 1.0)  # q(d) of HalfCauchy, before any update

    def update(self, essr):
        """Optimal q(tau) (then q(d)) given the expected residual sum of squares."""
        n, s2 = self.n, self.scale**2
        if self.family == "halfnormal":
            p, a, b = 0.5 * (n - 1), float(essr), 1.0 / s2
            self._moments = gig_moments(p, a, b)
            self.params = (p, a, b)
            _, self.tau, self.mean_inv, self.logtau = self._moments
            return
        d_a, d_b = self.d_ab
        a, b = 0.5 + 0.5 * n, d_a / d_b + 0.5 * float(essr)
        self.params = (a, b)
        self.tau, self.logtau = a / b, float(gamma_elog(a, b))
        self.d_ab = (1.0, 1.0 / s2 + self.tau)

    def elbo_terms(self):
        """``E_q[log p(tau)] + H(q(tau))`` (HalfCauchy: of ``(tau, d)``), prior part of the ELBO.

        HalfNormal: ``p(tau) = p_sigma(tau^-1/2) tau^(-3/2) / 2`` (change of variables).
        """
        s2 = self.scale**2
        if self.family == "halfnormal":
            p, a, b = self.params
            elog_p = (0.5 * np.log(2.0 / np.pi) - 0.5 * np.log(s2) - self.mean_inv / (2 * s2)
                      + np.log(0.5) - 1.5 * self.logtau)
            return float(elog_p + gig_entropy(p, a, b, self._moments))
        a, b = self.params
        d_a, d_b = self.d_ab
        ed, elogd = d_a / d_b, float(gamma_elog(d_a, d_b))
        # E log Gamma(tau | 1/2, d) with d random: 1/2 E[log d] - lgamma(1/2) + ... - E[d] E[tau]
        tau_term = (0.5 * elogd - special.gammaln(0.5) - 0.5 * self.logtau - ed * self.tau)
        d_term = gamma_logprior(0.5, 1.0 / s2, elogd, ed)
        return float(tau_term + d_term + gamma_entropy(a, b) + gamma_entropy(d_a, d_b))

    def draw_sd(self, rng, size):
        """``size`` draws of ``sigma = tau^-1/2`` from q(tau)."""
        if self.family == "halfnormal":
            from bnmfzoo.inference.kernels.gig import gig_draws

            p, a, b = self.params
            tau = np.sqrt(b / a) * gig_draws(p, np.full(size, np.sqrt(a * b)), rng)
        else:
            a, b = self.params
            tau = rng.gamma(a, 1.0 / b, size=size)
        return 1.0 / np.sqrt(tau)

    def variational(self, name):
        """Parameters of q for the ``variational`` group, prefixed with the sd's name."""
        if self.family == "halfnormal":
            p, a, b = self.params
            return {f"{name}_tau_gig_p": p, f"{name}_tau_gig_a": a, f"{name}_tau_gig_b": b}
        (a, b), (d_a, d_b) = self.params, self.d_ab
        return {f"{name}_tau_alpha": a, f"{name}_tau_beta": b,
                f"{name}_aux_alpha": d_a, f"{name}_aux_beta": d_b}
