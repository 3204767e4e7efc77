"""Bridge sampling of a normalizing constant (numeric core, no PyMC).

Given draws ``theta_i`` (``N1`` of them) of a density ``p(theta) / Z`` known up to ``Z`` and
``N2`` draws ``theta_j`` of a normalized proposal ``q``, the optimal bridge estimate of Meng &
Wong (1996, eq. 4.1) is the fixed point of

    r <- [ (1 / N2) sum_j l2_j / (s1 l2_j + s2 r) ] / [ (1 / N1) sum_i 1 / (s1 l1_i + s2 r) ],

with ``l1_i = p(theta_i) / q(theta_i)``, ``l2_j = p(theta_j) / q(theta_j)``, ``s1 = N1 / (N1
+ N2)`` and ``s2 = N2 / (N1 + N2)``; ``r -> Z``. :func:`bridge_log_z` iterates it on the log
scale (every ratio is centred on the median of ``log l1``, so nothing overflows) and returns
``log Z`` with the relative mean squared error of Fruhwirth-Schnatter (2004, eq. 18), whose
posterior part is multiplied by the integrated autocorrelation time of the draws (batch means
within each chain). The error is an asymptotic one: it assumes the proposal overlaps the
target; when it does not (a poor proposal in many dimensions) the estimate is biased low and
the error understated, so callers compare several independent estimates.

**Overlap rule.** Each part of that error is a sample ``var(f) / (n mean(f)^2)`` of
non-negative terms, and for non-negative terms ``var / mean^2 <= n - 1``: each part is at
most ``(n - 1) / n`` however poor the overlap, so the reported error can never exceed about
``sqrt(1 + tau)`` nats. It equals ``1 / m - 1 / n`` with ``m = (sum f)^2 / sum f^2`` the
effective number of terms (Kish 1965) the sum rests on; when ``m`` is a few draws the error
sits at its ceiling and measures nothing. :func:`bridge_log_z` therefore reports ``se = inf``
(no error bar) when either side's ``m`` is below ``MIN_OVERLAP`` = 5, i.e. a relative error
of either part above about 0.45, where ``log`` of the sums is no longer near-linear. Measured
(docs/results/masses_nb_route.md): a negative-binomial NMF mode in 226 dimensions had ``m``
of 1-3 in every run and a spread of ``log Z`` 1.6 times its reported error (sd 2.7 nats,
error 1.6); an exponential-Gaussian one in 101 dimensions had ``m`` of 1.5-38 and a spread
within its error at every ``m``, so the rule is conservative there.

:class:`GaussianProposal` is a multivariate normal fitted to draws in an unconstrained
parametrisation (mean and a covariance shrunk towards its diagonal by the amount that best
predicts held-out draws). Overstall & Forster (2010) show that fitting ``q`` on the same draws
that enter the bridge biases it; :func:`split_fit_bridge` fits on the first half of each chain
and bridges on the second.

**Marginal warp.** Positive parameters taken to logs (``theta = log x``) can stay far from
normal: an NMF factor entry near zero under a Gamma(1, 1) prior has a log-posterior skewed
to the left (skewness down to -2.4, kurtosis up to 16 on a negative-binomial mode in 226
dimensions), and a normal fitted to such draws misses the mode by 15 nats of ``log l1`` spread
whatever the number of draws (1-4 effective draws from 800 to 16000 fitted ones). With
``warp=True`` :func:`split_fit_bridge` maps each coordinate by the Box & Cox (1964) power
transform of ``x = exp(theta)``, ``y = (x^lam - 1) / lam`` (``lam = 0``: ``y = theta``), with
``lam`` per coordinate the value of (0, 0.1, ..., 1) whose transformed fit draws are least
skewed (:class:`BoxCoxWarp`), and bridges in ``y``: the target becomes ``p(theta(y)) / |dy /
dtheta|`` (``|dy / dtheta| = x^lam``) on ``y > -1 / lam`` and 0 beyond, where proposal draws
count with ``p = 0``; the identity of Meng & Wong (1996) holds for any one-to-one map
(Meng & Schilling 2002, warp bridge sampling). ``lam`` is fitted on the fit half only, so the
proposal stays independent of the bridged draws.

References
----------
Meng, X.-L. & Wong, W. H. (1996). Simulating ratios of normalizing constants via a simple
identity: a theoretical exploration. Statistica Sinica 6, 831-860.
Fruhwirth-Schnatter, S. (2004). Estimating marginal likelihoods for mixture and Markov switching
models using bridge sampling techniques. Econometrics Journal 7, 143-167.
Overstall, A. M. & Forster, J. J. (2010). Default Bayesian model determination methods for
generalised linear mixed models. Comput. Statist. Data Anal. 54, 3269-3288.
Gronau, Q. F. et al. (2017). A tutorial on bridge sampling. J. Math. Psychol. 81, 80-97.
Kish, L. (1965). Survey Sampling. Wiley, New York.
Box, G. E. P. & Cox, D. R. (1964). An analysis of transformations. J. R. Statist. Soc. B 26,
211-252.
Meng, X.-L. & Schilling, S. (2002). Warp bridge sampling. J. Comput. Graph. Statist. 11,
552-586.

Examples
--------
A standard normal known up to ``Z = sqrt(2 pi)``, bridged with a wider normal:

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> post = rng.normal(size=(2000, 1))
>>> q = GaussianProposal(np.zeros(1), np.eye(1) * 1.5)
>>> prop = q.sample(2000, rng)
>>> log_p = lambda t: -0.5 * np.sum(t ** 2, axis=1)
>>> est = bridge_log_z(log_p(post), q.logpdf(post), log_p(prop), q.logpdf(prop))
>>> bool(abs(est.log_z - 0.5 * np.log(2 * np.pi)) < 3 * est.se)
True
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

__all__ = ["BridgeEstimate", "bridge_log_z", "GaussianProposal", "BoxCoxWarp",
           "split_fit_bridge", "integrated_time", "MIN_OVERLAP"]

#: fewest effective draws (``(sum f)^2 / sum f^2``) either side of the bridge may rest on for
#: its asymptotic error to be reported (module docstring, overlap rule)
MIN_OVERLAP = 5.0


@dataclass
class BridgeEstimate:
    """One bridge-sampling estimate.

    Attributes
    ----------
    log_z : float
        ``log Z``.
    se : float
        Its standard error (root relative MSE of Fruhwirth-Schnatter 2004).
    n_iter : int
        Iterations of the fixed point.
    n_post, n_prop : int
        Draws of the target and of the proposal.
    tau : float
        Integrated autocorrelation time used for the target's part of the error.
    overlap : tuple of float
        Effective number of draws ``(sum f)^2 / sum f^2`` of the target's and of the
        proposal's sum; below ``MIN_OVERLAP`` the error is ``inf``.
    """

    log_z: float
    se: float
    n_iter: int
    n_post: int
    n_prop: int
    tau: float = 1.0
    overlap: tuple = (math.nan, math.nan)


def _finite(name, x):
    x = np.asarray(x, float).ravel()
    if x.size < 2:
        raise ValueError(f"{name} needs at least 2 values, got {x.size}")
    if np.any(np.isnan(x)) or np.any(x == np.inf):
        raise ValueError(f"{name} must be finite or -inf (NaN or +inf found)")
    return x


def integrated_time(values, chain_of=None, n_batches=10):
    """Integrated autocorrelation time of ``values`` by batch means within each chain (>= 1).

    Examples
    --------
    >>> integrated_time(np.random.default_rng(0).normal(size=4000)) < 1.5
    True
    """
    v = np.asarray(values, float).ravel()
    chain_of = np.zeros(v.size, int) if chain_of is None else np.asarray(chain_of)
    var = v.var()
    if not var > 0:
        return 1.0
    means, sizes = [], []
    for c in np.unique(chain_of):
        x = v[chain_of == c]
        b = x.size // n_batches
        if b < 1:
            continue
        means.extend(x[: b * n_batches].reshape(n_batches, b).mean(1))
        sizes.extend([b] * n_batches)
    if len(means) < 2:
        return 1.0
    m = np.asarray(means)
    tau = float(np.mean(sizes) * m.var(ddof=1) / var)
    return max(1.0, tau)


def bridge_log_z(log_p_post, log_q_post, log_p_prop, log_q_prop, *, tau=1.0, tol=1e-10,
                 max_iter=10_000):
    """Optimal bridge estimate of ``log Z`` (Meng & Wong 1996) and its standard error.

    Parameters
    ----------
    log_p_post, log_q_post : array-like
        ``log p`` (unnormalized target) and ``log q`` (normalized proposal) at the ``N1``
        target draws.
    log_p_prop, log_q_prop : array-like
        The same at the ``N2`` proposal draws.
    tau : float
        Integrated autocorrelation time of the target draws (1 for independent draws): it
        multiplies the target's part of the error.
    tol : float
        Stop when ``log r`` changes by less than this.
    max_iter : int

    Returns
    -------
    BridgeEstimate
        ``se`` is ``inf`` when either side rests on fewer than ``MIN_OVERLAP`` effective draws
        (module docstring).
    """
    lp1, lq1 = _finite("log_p_post", log_p_post), _finite("log_q_post", log_q_post)
    lp2, lq2 = _finite("log_p_prop", log_p_prop), _finite("log_q_prop", log_q_prop)
    if lp1.size != lq1.size or lp2.size != lq2.size:
        raise ValueError("log_p and log_q must have one value per draw")
    if np.any(np.isneginf(lq1)) or np.any(np.isneginf(lq2)):
        raise ValueError("log_q must be finite at every draw (the proposal's support must "
                         "cover the target's)")
    l1 = lp1 - lq1
    l2 = lp2 - lq2
    if not np.all(np.isfinite(l1)):
        raise ValueError("log_p_post must be finite at the target's own draws")
    n1, n2 = l1.size, l2.size
    s1, s2 = n1 / (n1 + n2), n2 / (n1 + n2)
    ls1, ls2 = math.log(s1), math.log(s2)
    c = float(np.median(l1))
    a1, a2 = l1 - c, l2 - c

    def step(log_r):  # one step of the iterative scheme
        num = logsumexp(a2 - np.logaddexp(ls1 + a2, ls2 + log_r)) - math.log(n2)
        den = logsumexp(-np.logaddexp(ls1 + a1, ls2 + log_r)) - math.log(n1)
        return float(num - den)

    log_r, it = 0.0, 0
    for it in range(1, 101):
        new = step(log_r)
        done = abs(new - log_r) < tol
        log_r = new
        if done:
            break
    else:  # slow (poor overlap): the fixed point is the root of step(x) - x (Meng & Wong 1996)
        fin = np.concatenate([a1, a2[np.isfinite(a2)]])
        lo, hi = float(fin.min()) - 50.0, float(fin.max()) + 50.0
        if not (step(lo) - lo > 0 > step(hi) - hi):  # pragma: no cover - cannot happen
            raise RuntimeError("the bridge's fixed point is not bracketed")
        log_r = float(brentq(lambda x: step(x) - x, lo, hi, xtol=tol, maxiter=max_iter))
    # Fruhwirth-Schnatter (2004): RE^2 = V_q(f2) / (N2 E_q(f2)^2) + tau V_p(f1) / (N1 E_p(f1)^2)
    with np.errstate(over="ignore"):
        f1 = np.exp(-np.logaddexp(ls1 + a1 - log_r, ls2))
        f2 = np.exp(a2 - log_r - np.logaddexp(ls1 + a2 - log_r, ls2))
    with np.errstate(divide="ignore", invalid="ignore"):
        re2 = f2.var() / (n2 * f2.mean() ** 2) + float(tau) * f1.var() / (n1 * f1.mean() ** 2)
    se = float(math.sqrt(re2)) if np.isfinite(re2) else math.inf  # no overlap: no error bar
    overlap = (_effective(f1), _effective(f2))
    if not min(overlap) >= MIN_OVERLAP:  # the error sits at its ceiling (overlap rule)
        se = math.inf
    return BridgeEstimate(log_r + c, se, it, n1, n2, float(tau), overlap)


def _effective(f):
    """``(sum f)^2 / sum f^2`` of non-negative terms (0 when all vanish)."""
    with np.errstate(over="ignore", invalid="ignore"):
        m = f / f.max() if f.size and f.max() > 0 else f
        v = float(m.sum() ** 2 / np.sum(m * m)) if np.any(m > 0) else 0.0
    return v if np.isfinite(v) else 0.0


class GaussianProposal:
    """A multivariate normal proposal ``N(mean, cov)`` (``logpdf``, ``sample``).

    Examples
    --------
    >>> q = GaussianProposal.fit(np.random.default_rng(1).normal(size=(500, 3)))
    >>> q.mean.shape, q.cov.shape
    ((3,), (3, 3))
    """

    def __init__(self, mean, cov):
        self.mean = np.asarray(mean, float).ravel()
        self.cov = np.atleast_2d(np.asarray(cov, float))
        d = self.mean.size
        if self.cov.shape != (d, d):
            raise ValueError(f"cov must be {d} x {d}, got {self.cov.shape}")
        self.chol = np.linalg.cholesky(self.cov)
        self.log_norm = -0.5 * d * math.log(2 * math.pi) - float(np.log(np.diag(self.chol)).sum())

    @classmethod
    def fit(cls, draws, shrinkage=None):
        """Fit to ``draws`` ``(n, d)``.

        ``shrinkage`` in [0, 1] moves the covariance towards its diagonal; None chooses it from
        (0, 0.05, 0.2, 0.5, 0.8, 1) (from (0.5, 0.8, 1) when there are more dimensions than
        half the draws) by the held-out log density of a two-fold split (the draws in their
        given order: first half against second).
        """
        x = np.asarray(draws, float)
        if x.ndim != 2 or x.shape[0] < 4:
            raise ValueError(f"draws must be (n >= 4, d), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("draws must be finite")
        if shrinkage is None:
            h = x.shape[0] // 2
            best, shrinkage = -np.inf, 1.0
            grid = (0.0, 0.05, 0.2, 0.5, 0.8, 1.0) if x.shape[1] < h else (0.5, 0.8, 1.0)
            for rho in grid:
                score = 0.0
                for tr, te in ((x[:h], x[h:]), (x[h:], x[:h])):
                    try:
                        score += float(cls._shrunk(tr, rho).logpdf(te).sum())
                    except np.linalg.LinAlgError:
                        score = -np.inf
                        break
                if score > best:
                    best, shrinkage = score, rho
        return cls._shrunk(x, shrinkage)

    @classmethod
    def _shrunk(cls, x, rho):
        mean = x.mean(0)
        S = np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1])
        dg = np.diag(np.diag(S)) + 1e-12 * np.eye(S.shape[0])
        return cls(mean, (1.0 - rho) * S + rho * dg)

    def logpdf(self, x):
        """Log density at the rows of ``x``."""
        z = np.linalg.solve(self.chol, (np.atleast_2d(x) - self.mean).T)
        return self.log_norm - 0.5 * np.sum(z * z, axis=0)

    def sample(self, n, rng):
        """``n`` draws ``(n, d)``."""
        return self.mean + rng.standard_normal((int(n), self.mean.size)) @ self.chol.T


class BoxCoxWarp:
    """Per-coordinate Box & Cox (1964) power transform of ``exp(theta)`` (module docstring).

    ``y = expm1(lam theta) / lam`` (``theta`` where ``lam = 0``), one-to-one from the real line
    onto ``y > -1 / lam``; ``log |dy / dtheta| = lam theta``.

    Examples
    --------
    >>> w = BoxCoxWarp(np.array([0.0, 0.5]))
    >>> y, lj = w.forward(np.array([[0.3, 0.3]]))
    >>> back, ok = w.inverse(y)
    >>> bool(np.allclose(back, 0.3)), bool(ok[0]), bool(np.isclose(lj[0], 0.15))
    (True, True, True)
    """

    #: candidate powers
    GRID = tuple(i / 10 for i in range(11))

    def __init__(self, lam):
        self.lam = np.asarray(lam, float).ravel()
        if np.any(self.lam < 0) or np.any(self.lam > 1):
            raise ValueError("lam must be in [0, 1]")

    @classmethod
    def fit(cls, draws):
        """``lam`` per column of ``draws`` ``(n, d)``: the grid value least skewed after."""
        x = np.asarray(draws, float)
        best, lam = np.full(x.shape[1], np.inf), np.zeros(x.shape[1])
        for g in cls.GRID:
            y = cls(np.full(x.shape[1], g)).forward(x)[0]
            c = y - y.mean(0)
            with np.errstate(divide="ignore", invalid="ignore"):
                sk = np.abs(np.mean(c ** 3, 0) / np.mean(c ** 2, 0) ** 1.5)
            sk = np.where(np.isfinite(sk), sk, np.inf)
            better = sk < best
            best, lam = np.where(better, sk, best), np.where(better, g, lam)
        return cls(lam)

    def forward(self, theta):
        """``(y, log |dy / dtheta| summed per row)`` at the rows of ``theta``."""
        t = np.atleast_2d(np.asarray(theta, float))
        pos = self.lam > 0
        with np.errstate(over="ignore"):
            y = np.where(pos, np.expm1(self.lam * t) / np.where(pos, self.lam, 1.0), t)
        return y, t @ self.lam

    def inverse(self, y):
        """``(theta, ok)``: ``ok`` False for rows outside the image (``1 + lam y <= 0``)."""
        y = np.atleast_2d(np.asarray(y, float))
        arg = 1.0 + self.lam * y
        ok = np.all(arg > 0, axis=1)
        pos = self.lam > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(pos, np.log(np.where(arg > 0, arg, 1.0)) / np.where(pos, self.lam, 1.0),
                         y)
        return t, ok


def split_fit_bridge(theta, log_joint, rng, *, chain_of=None, n_prop=None, shrinkage=None,
                     warp=False):
    """``log Z`` of ``exp(log_joint)`` from its draws ``theta`` (unconstrained, ``(n, d)``).

    The proposal (:class:`GaussianProposal`) is fitted on the first half of each chain's draws;
    the bridge uses the second halves and ``n_prop`` proposal draws (default: as many). With
    ``warp`` both sides are first mapped by a :class:`BoxCoxWarp` fitted on the first halves
    (module docstring: for ``theta`` the logs of positive parameters).

    Parameters
    ----------
    theta : numpy.ndarray
        ``(n, d)`` draws of the normalized ``exp(log_joint) / Z``.
    log_joint : callable
        ``log_joint(theta (m, d)) -> (m,)``, the unnormalized log density (Jacobian included).
    rng : numpy.random.Generator
    chain_of : array-like of int, optional
        Chain of each draw (default: one chain), in order within each chain.
    n_prop : int, optional
    shrinkage : float, optional
        See :meth:`GaussianProposal.fit`.
    warp : bool

    Returns
    -------
    BridgeEstimate
    """
    theta = np.asarray(theta, float)
    if theta.ndim != 2:
        raise ValueError(f"theta must be (n, d), got shape {theta.shape}")
    chain_of = np.zeros(theta.shape[0], int) if chain_of is None else np.asarray(chain_of)
    fit_idx, br_idx = [], []
    for c in np.unique(chain_of):
        idx = np.flatnonzero(chain_of == c)
        h = idx.size // 2
        fit_idx.extend(idx[:h])
        br_idx.extend(idx[h:])
    fit_idx, br_idx = np.asarray(fit_idx), np.asarray(br_idx)
    post = theta[br_idx]
    lp1 = np.asarray(log_joint(post), float)
    if warp:  # bridge in y: the target's density there is p(theta(y)) / |dy / dtheta|
        w = BoxCoxWarp.fit(theta[fit_idx])
        q = GaussianProposal.fit(w.forward(theta[fit_idx])[0], shrinkage)
        y1, jac1 = w.forward(post)
        lp1, lq1 = lp1 - jac1, q.logpdf(y1)
        y2 = q.sample(n_prop or post.shape[0], rng)
        prop, ok = w.inverse(y2)
        lp2 = np.full(y2.shape[0], -np.inf)  # outside the image of the warp: p = 0
        if ok.any():
            with np.errstate(all="ignore"):
                lp2[ok] = np.asarray(log_joint(prop[ok]), float) - w.forward(prop[ok])[1]
        lq2 = q.logpdf(y2)
    else:
        q = GaussianProposal.fit(theta[fit_idx], shrinkage)
        lq1 = q.logpdf(post)
        prop = q.sample(n_prop or post.shape[0], rng)
        with np.errstate(all="ignore"):
            lp2 = np.asarray(log_joint(prop), float)
        lq2 = q.logpdf(prop)
    tau = integrated_time(lp1 - lq1, chain_of[br_idx])
    lp2 = np.where(np.isnan(lp2), -np.inf, lp2)
    return bridge_log_z(lp1, lq1, lp2, lq2, tau=tau)
