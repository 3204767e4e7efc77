"""Nonparametric variational inference for BNMF (Gershman et al. 2012; Masood & Doshi-Velez 2016).

The variational family is a weighted mixture of isotropic Gaussians over ``theta = vec(A, W)``:
``q(theta) = sum_m w_m N(theta; mu_m, s2_m I)``. Its ELBO is approximated as in the papers:

* entropy: the Jensen lower bound (weighted form of Gershman's eq. 2)
  ``H_lb = -sum_m w_m log sum_j w_j N(mu_m; mu_j, (s2_m + s2_j) I)``, computed in log space;
* expectation: the second-order expansion ``sum_m w_m [f(mu_m) + s2_m / 2 tr H(mu_m)]`` with the
  exact trace of the Hessian of the Gaussian log joint (zero for the uniform model, whose
  expectation is the zeroth-order ``sum_m w_m f(mu_m)``).

Three front ends share this arithmetic:

* :class:`OnlineNPVI` (ONVI): candidates arrive one at a time (from RRT, Gibbs or NUTS). The
  candidate's variance and weight are optimised with every earlier component fixed and earlier
  weights scaled by ``1 - w``; it is accepted only if the ELBO rises by at least a threshold,
  and then earlier components are pruned if dropping them costs less than the pruning
  threshold (Gershman et al.'s ``1e-4``).
* :func:`fit_nvi`: Gershman's fixed-``M`` NVI (the NVI-4 / NVI-10 baselines): alternate L-BFGS-B
  updates of each mean (first-order objective) and of each variance (second-order objective).
* :func:`onvi_from_draws`: MCMC draws fed through ONVI (Gibbs+ONVI, HMC/NUTS+ONVI).

Everything here is NumPy / SciPy and knows nothing of PyMC except :meth:`LogJoint.from_model`.
"""

from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.optimize import minimize, minimize_scalar

from bnmfzoo._progress import progress
from bnmfzoo._results import build_datatree, data_coords
from bnmfzoo._rng import as_generator

LOG_2PI = float(np.log(2.0 * np.pi))


def _logsumexp_rows(a):
    """``log(sum(exp(a), axis=1))`` for a 2-D array of finite values, shape ``(M, 1)``.

    The ONVI loop evaluates the entropy bound thousands of times on tiny mixtures, where
    ``scipy.special.logsumexp``'s generic machinery cost about a quarter of an RRT run.
    """
    m = a.max(axis=1, keepdims=True)
    return m + np.log(np.exp(a - m).sum(axis=1, keepdims=True))


# --------------------------------------------------------------------------------------------
# log joint of the two exponential-prior NMF models
# --------------------------------------------------------------------------------------------


@dataclass
class LogJoint:
    """``f(A, W) = log p(A, W, X)`` on the constrained space (no log-transform Jacobian).

    Parameters
    ----------
    X : numpy.ndarray
        D x N data (values where ``mask`` is False are ignored).
    mask : numpy.ndarray of bool
        True where observed.
    rank : int
    likelihood : {"gaussian", "uniform"}
    scale : float
        ``sigma2`` (Gaussian noise variance) or ``epsilon`` (uniform half-width).
    lambda_A, lambda_W : float
        Exponential prior rates.
    """

    X: np.ndarray
    mask: np.ndarray
    rank: int
    likelihood: str
    scale: float
    lambda_A: float = 1.0
    lambda_W: float = 1.0
    _Xz: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.likelihood not in ("gaussian", "uniform"):
            raise ValueError(f"likelihood must be 'gaussian' or 'uniform', got {self.likelihood!r}")
        self.mask = np.asarray(self.mask, dtype=bool)
        self._Xz = np.where(self.mask, np.nan_to_num(np.asarray(self.X, dtype=float)), 0.0)
        self.full = bool(self.mask.all())
        self.n_obs = int(self.mask.sum())
        self.row_obs = self.mask.sum(axis=1).astype(float)  # (D,)
        self.col_obs = self.mask.sum(axis=0).astype(float)  # (N,)
        D, N = self.mask.shape
        R = self.rank
        self.shape = (D, N)
        self.P = R * (D + N)
        self._prior_const = D * R * np.log(self.lambda_A) + R * N * np.log(self.lambda_W)
        if self.likelihood == "gaussian":
            self._lik_const = -0.5 * self.n_obs * (LOG_2PI + np.log(self.scale))
        else:
            self._lik_const = -self.n_obs * np.log(2.0 * self.scale)

    @classmethod
    def from_model(cls, model, *, method="fit_rrt"):
        """Log joint of a ``uniform_noise`` or fixed-sigma ``exponential_gaussian`` model."""
        from bnmfzoo.models._spec import get_spec

        spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method=method)
        hyper = spec.hyper
        if spec.family == "uniform_noise":
            return cls(spec.X_values, spec.mask, spec.rank, "uniform", hyper["epsilon"],
                       hyper["lambda_A"], hyper["lambda_W"])
        if hyper.get("sigma") is None or hyper.get("ard"):
            raise TypeError(
                f"{method} needs an exponential_gaussian model with a fixed sigma and no ARD "
                "(exponential_gaussian(X, rank, sigma=...)); this one learns tau"
            )
        return cls(spec.X_values, spec.mask, spec.rank, "gaussian", float(hyper["sigma"]) ** 2,
                   hyper["lambda_A"], hyper["lambda_W"])

    # -- vec / unvec ---------------------------------------------------------------------------
    def vec(self, A, W):
        """Stack ``(A, W)`` into one vector of length ``P``."""
        return np.concatenate([np.ravel(A), np.ravel(W)])

    def unvec(self, theta):
        """Split a vector of length ``P`` into ``(A, W)``."""
        D, N = self.shape
        R = self.rank
        return theta[: D * R].reshape(D, R), theta[D * R :].reshape(R, N)

    # -- pieces --------------------------------------------------------------------------------
    def residual(self, A, W):
        """``X - A W`` with zeros at unobserved entries."""
        res = self._Xz - A @ W
        if not self.full:
            res = res * self.mask
        return res

    def max_abs_residual(self, A, W):
        """Largest ``|X - A W|`` over observed entries."""
        return float(np.max(np.abs(self.residual(A, W))))

    def feasible(self, A, W):
        """A, W >= 0 and, for the uniform model, every residual strictly inside ``(-eps, eps)``."""
        if (A < 0).any() or (W < 0).any():
            return False
        if self.likelihood == "uniform":
            return self.max_abs_residual(A, W) < self.scale
        return True

    def log_prior(self, A, W):
        """Exponential log prior (``-inf`` for negative entries)."""
        if (A < 0).any() or (W < 0).any():
            return -np.inf
        return self._prior_const - self.lambda_A * A.sum() - self.lambda_W * W.sum()

    def value(self, A, W):
        """``f(A, W)``: log likelihood of the observed entries plus log prior."""
        lp = self.log_prior(A, W)
        if not np.isfinite(lp):
            return -np.inf
        res = self.residual(A, W)
        if self.likelihood == "gaussian":
            return self._lik_const - 0.5 * np.sum(res * res) / self.scale + lp
        if np.max(np.abs(res)) >= self.scale:
            return -np.inf
        return self._lik_const + lp

    def grad(self, A, W):
        """Gradient of ``f`` inside the support (the uniform likelihood contributes none)."""
        gA = np.full(A.shape, -self.lambda_A)
        gW = np.full(W.shape, -self.lambda_W)
        if self.likelihood == "gaussian":
            res = self.residual(A, W) / self.scale
            gA += res @ W.T
            gW += A.T @ res
        return gA, gW

    def trace_hessian(self, A, W, sigma2=None):
        """Exact ``tr(d^2 f)``; Gaussian: ``-(sum_dk A^2 n_d + sum_kn W^2 n_n) / sigma2``.

        ``n_d`` / ``n_n`` count observed entries per row / column (``N`` and ``D`` for complete
        data, which gives the paper's ``-(N tr(A'A) + D tr(WW')) / sigma2``). The uniform model
        has zero Hessian inside its support; pass ``sigma2`` to get the Gaussian surrogate.
        """
        if self.likelihood == "uniform" and sigma2 is None:
            return 0.0
        s2 = self.scale if sigma2 is None else sigma2
        return -(self.row_obs @ (A * A).sum(axis=1) + (W * W).sum(axis=0) @ self.col_obs) / s2

    def optimal_variance(self, A, W, sigma2=None):
        """Single-component optimum ``s2 = -P / tr H`` (closed form of the NVI M=1 problem)."""
        tr = self.trace_hessian(A, W, sigma2=sigma2)
        return float(-self.P / tr) if tr < 0 else np.inf

    def rescale(self, A, W, *, method="elbo"):
        """Re-balance the scale of each factor (``A[:, r] b_r``, ``W[r] / b_r``); AW is unchanged.

        The likelihood ignores the scale but the second-order ELBO does not (Masood &
        Doshi-Velez 2016, Sec. 3.2 aside; their beta is the squared multiplier b^2).
        ``method="hessian"`` is the paper's rule: unit-norm columns of A times one
        common ``b`` maximising the Hessian trace,
        ``b^4 = (sum_n n_n |S^-1 W|^2) / (sum_d n_d |A S|^2)``; it ignores the prior term (the
        paper's footnote 1), which is not negligible when the data scale is far from the prior
        (ALL/AML: the rule lowers the ELBO by ~5e4 nats). ``method="elbo"`` (default) maximises
        the single-component ELBO at its optimal variance over per-factor scales ``b_r``,
        prior included: ``-lambda_A sum_r b_r |A_r|_1 - lambda_W sum_r |W_r|_1 / b_r
        - (P / 2) log sum_r (b_r^2 a_r + w_r / b_r^2)`` with ``a_r = sum_d n_d A_dr^2`` and
        ``w_r = sum_n n_n W_rn^2`` (a concave problem in ``log b``: Newton's method from
        ``b = 1``). For the
        uniform likelihood only the prior depends on the scale: ``b_r = sqrt(lambda_W |W_r|_1
        / (lambda_A |A_r|_1))`` (the paper does not rescale there; without it, SVD-based nodes
        with unit-norm basis columns lose ~1e6 nats of prior on ALL/AML).
        """
        if method == "hessian":
            norms = np.sqrt((A * A).sum(axis=0))
            norms = np.where(norms > 0, norms, 1.0)
            As = A / norms
            Ws = W * norms[:, None]
            a = self.row_obs @ (As * As).sum(axis=1)
            w = (Ws * Ws).sum(axis=0) @ self.col_obs
            if a <= 0 or w <= 0:
                return As, Ws
            b = (w / a) ** 0.25
            return As * b, Ws / b
        if method != "elbo":
            raise ValueError(f"method must be 'elbo' or 'hessian', got {method!r}")
        alpha, beta = A.sum(axis=0), W.sum(axis=1)
        if self.likelihood == "uniform":
            # flat likelihood, fixed variance: only the prior depends on the scale, maximised
            # at b_r = sqrt(lambda_W |W_r|_1 / (lambda_A |A_r|_1)) (paper: no rescaling; optional)
            live = (alpha > 0) & (beta > 0)
            b = np.ones_like(alpha)
            b[live] = np.sqrt(self.lambda_W * beta[live] / (self.lambda_A * alpha[live]))
            return A * b, W / b[:, None]
        a = self.row_obs @ (A * A)
        w = (W * W) @ self.col_obs
        live = (alpha > 0) & (beta > 0)
        if not live.any():
            return A, W
        b = np.ones_like(alpha)
        b[live] = _elbo_scales(alpha[live], beta[live], a[live], w[live], self.lambda_A,
                               self.lambda_W, self.P)
        return A * b, W / b[:, None]


def _elbo_scales(alpha, beta, a, w, lA, lW, P, *, max_iter=100):
    """Per-factor scales ``b`` maximising the single-component ELBO (see ``rescale``).

    In ``x = log b`` the objective ``-lA sum b alpha - lW sum beta / b - (P/2) log sum (b^2 a
    + w / b^2)`` is strictly concave (two sums of exponentials with negative signs, minus a
    log-sum-exp of affine functions), so Newton's method with a backtracking line search
    converges to the unique maximum from ``b = 1`` in a few steps; ``x`` is kept in
    ``[-30, 30]``.
    """
    def value_grad_hess(x):
        b = np.exp(x)
        b2, ib2 = b * b, np.exp(-2.0 * x)
        total = np.sum(b2 * a + w * ib2)
        u = 2.0 * (a * b2 - w * ib2)
        val = -lA * np.sum(b * alpha) - lW * np.sum(beta / b) - 0.5 * P * np.log(total)
        grad = -lA * b * alpha + lW * beta / b - 0.5 * P * u / total
        hess = np.diag(-lA * b * alpha - lW * beta / b
                       - 0.5 * P * 4.0 * (a * b2 + w * ib2) / total)
        hess += 0.5 * P * np.outer(u, u) / total**2
        return val, grad, hess

    x = np.zeros(alpha.size)
    val, grad, hess = value_grad_hess(x)
    for _ in range(max_iter):
        step = -np.linalg.solve(hess, grad)
        if not np.all(np.isfinite(step)):
            break
        t = 1.0
        while True:
            x_new = np.clip(x + t * step, -30.0, 30.0)
            val_new, grad_new, hess_new = value_grad_hess(x_new)
            if val_new >= val + 1e-4 * t * (grad @ step) or t < 1e-10:
                break
            t *= 0.5
        if val_new < val:  # no ascent left at floating-point resolution
            break
        converged = np.max(np.abs(x_new - x)) < 1e-12
        x, val, grad, hess = x_new, val_new, grad_new, hess_new
        if converged or np.max(np.abs(grad)) <= 1e-12 * (1.0 + abs(val)):
            break
    return np.exp(x)


# --------------------------------------------------------------------------------------------
# mixture ELBO arithmetic
# --------------------------------------------------------------------------------------------


def entropy_lower_bound(weights, variances, sqdist, P):
    """Weighted Jensen lower bound on the entropy of an isotropic Gaussian mixture.

    Parameters
    ----------
    weights, variances : numpy.ndarray
        ``(M,)``.
    sqdist : numpy.ndarray
        ``(M, M)`` squared distances between the means.
    P : int
        Dimension.

    Returns
    -------
    float
    """
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    if not keep.all():
        w, variances, sqdist = w[keep], variances[keep], sqdist[np.ix_(keep, keep)]
    S = variances[:, None] + variances[None, :]
    logN = -0.5 * P * (LOG_2PI + np.log(S)) - sqdist / (2.0 * S)
    inner = _logsumexp_rows(logN + np.log(w)[None, :])[:, 0]
    return float(-np.sum(w * inner))


def mixture_elbo(weights, variances, expect, sqdist, P):
    """``sum_m w_m e_m + H_lb`` where ``e_m = f(mu_m) + s2_m / 2 tr H_m``."""
    w = np.asarray(weights, dtype=float)
    pos = w > 0
    return float(np.sum(w[pos] * np.asarray(expect)[pos])) + entropy_lower_bound(
        w, np.asarray(variances, dtype=float), sqdist, P
    )


def _sigmoid(u):
    return 1.0 / (1.0 + np.exp(-u))


def _tie_tol(elbo):
    """Rounding tolerance for comparing ELBO changes with a threshold (~64 ulps of the ELBO)."""
    return 1e-12 * (1.0 + abs(elbo)) if np.isfinite(elbo) else 0.0


# --------------------------------------------------------------------------------------------
# online NVI
# --------------------------------------------------------------------------------------------


class OnlineNPVI:
    """Online nonparametric VI (ONVI): a weighted isotropic-Gaussian mixture grown online.

    Candidates arrive one at a time; a component is kept only if it raises the ELBO by at least
    a threshold.

    Parameters
    ----------
    target : LogJoint
        The log joint (Gaussian or uniform likelihood).
    threshold : float or "reference", optional
        Minimum ELBO change to accept a candidate and to keep an old component. Default
        ``1e-4`` for the Gaussian likelihood (Gershman et al.'s criterion) and ``"reference"``
        for the uniform one: the ELBO gain of a hypothetical component of the same quality as
        the existing component nearest the candidate, offset from it by ``sigma`` in every
        coordinate (the paper's "smarter" criterion).
    variance : float, optional
        Fixed component variance. Required semantics of the uniform model (the paper fixes it
        to the NVI M=1 variance; default: the Gaussian-surrogate closed form with noise variance
        ``epsilon^2 / 3`` at the first candidate). For the Gaussian model the variance of every
        candidate is optimised unless this is given.
    prune_threshold : float or "reference", optional
        Minimum ELBO loss for keeping an old component after an acceptance. Default: the
        acceptance threshold for a numeric ``threshold`` (Gershman et al.'s ``1e-4`` for both,
        as the paper states for the Gaussian model) and ``1e-4`` when ``threshold`` is
        ``"reference"``: the paper's "smarter" uniform-model criterion replaces the
        *stopping* (acceptance) rule only. With the reference also used for pruning, a mixture
        keeps two or more components only under exact ties of their quality (removing
        component ``i`` of a separated mixture costs ``-log(1 - w_i)``, below the reference
        gain ``log((M + 1) / M)`` whenever the newcomer is even slightly better).

    Notes
    -----
    Comparisons with a threshold carry a numerical tolerance of ``1e-12 (1 + |ELBO|)``
    (about ``64`` float64 ulps of the ELBO) in favour of accepting / keeping: two exactly
    equal-quality separated components (e.g. column permutations of one solution) tie with
    the reference gain, and rounding must not decide between them.

    Attributes
    ----------
    means : numpy.ndarray
        ``(M, P)`` component means.
    weights, variances, expect : numpy.ndarray
        ``(M,)``.
    elbo_trace : list of float
        ELBO after every processed candidate.
    n_processed, n_accepted, n_pruned : int
    """

    def __init__(self, target, *, threshold=None, variance=None, prune_threshold=None):
        self.target = target
        self.gaussian = target.likelihood == "gaussian"
        if threshold is None:
            threshold = 1e-4 if self.gaussian else "reference"
        if not (threshold == "reference" or (np.isscalar(threshold) and threshold >= 0)):
            raise ValueError(f"threshold must be a number >= 0 or 'reference', got {threshold!r}")
        self.threshold = threshold
        if prune_threshold is None:
            prune_threshold = 1e-4 if threshold == "reference" else threshold
        if not (prune_threshold == "reference" or (
                np.isscalar(prune_threshold) and prune_threshold >= 0)):
            raise ValueError("prune_threshold must be a number >= 0 or 'reference', got "
                             f"{prune_threshold!r}")
        self.prune_threshold = prune_threshold
        if variance is not None and not (np.isfinite(variance) and variance > 0):
            raise ValueError(f"variance must be finite and > 0, got {variance!r}")
        self.fixed_variance = variance
        self.P = target.P
        self.means = np.empty((0, self.P))
        self.weights = np.empty(0)
        self.variances = np.empty(0)
        self.expect = np.empty(0)
        self.fvals = np.empty(0)
        self.trH = np.empty(0)
        self.sqdist = np.empty((0, 0))
        self.sqnorm = np.empty(0)
        self.elbo_trace = []
        self.accepted = []  # processing index of every accepted candidate
        self.n_processed = 0
        self.n_accepted = 0
        self.n_pruned = 0

    # -- helpers -------------------------------------------------------------------------------
    @property
    def n_components(self):
        """Current number of components."""
        return self.weights.size

    def elbo(self):
        """Current approximate ELBO (``-inf`` when empty)."""
        if self.n_components == 0:
            return -np.inf
        return mixture_elbo(self.weights, self.variances, self.expect, self.sqdist, self.P)

    def _expect(self, f, trH, s2):
        return f + 0.5 * s2 * trH

    def _sqdist_to(self, theta):
        d = self.sqnorm + theta @ theta - 2.0 * (self.means @ theta)
        return np.maximum(d, 0.0)

    def _augmented_elbo(self, d_new, s2, w, e_new):
        """ELBO of the current mixture scaled by ``1 - w`` plus a new component."""
        M = self.n_components
        weights = np.append(self.weights * (1.0 - w), w)
        variances = np.append(self.variances, s2)
        expect = np.append(self.expect, e_new)
        sq = np.empty((M + 1, M + 1))
        sq[:M, :M] = self.sqdist
        sq[M, :M] = sq[:M, M] = d_new
        sq[M, M] = 0.0
        return mixture_elbo(weights, variances, expect, sq, self.P)

    def _best_weight(self, d_new, s2, e_new):
        """Maximise over the new weight (logit scale); returns (w, elbo)."""
        res = minimize_scalar(
            lambda u: -self._augmented_elbo(d_new, s2, _sigmoid(u), e_new),
            bounds=(-40.0, 40.0),
            method="bounded",
            options={"xatol": 1e-6},
        )
        return float(_sigmoid(res.x)), float(-res.fun)

    def _optimise(self, d_new, f, trH, s2_init):
        """Optimise (variance, weight) of a new component (Gaussian) or the weight only."""
        if self.fixed_variance is not None or not self.gaussian:
            s2 = s2_init
            w, val = self._best_weight(d_new, s2, self._expect(f, trH, s2))
            return s2, w, val
        # Gaussian: start at the single-component optimum, then refine both jointly
        w0, _ = self._best_weight(d_new, s2_init, self._expect(f, trH, s2_init))
        x0 = np.array([np.log(s2_init), np.log(w0 + 1e-300) - np.log1p(-min(w0, 1 - 1e-12))])
        x0 = np.clip(x0, -40.0, 40.0) if np.isfinite(x0).all() else np.array([np.log(s2_init), 0.0])

        def neg(x):
            s2 = np.exp(x[0])
            return -self._augmented_elbo(d_new, s2, _sigmoid(x[1]), self._expect(f, trH, s2))

        res = minimize(neg, x0, method="L-BFGS-B",
                       bounds=[(x0[0] - 20.0, x0[0] + 20.0), (-40.0, 40.0)])
        x = res.x if res.fun <= neg(x0) else x0
        return float(np.exp(x[0])), float(_sigmoid(x[1])), float(-neg(x))

    def _reference_gain(self, d_new, base):
        """Gain of a component equal in quality to the nearest one, offset by sigma per coord."""
        j = int(np.argmin(d_new))
        s2 = self.variances[j]
        theta_ref = self.means[j] + np.sqrt(s2)
        d_ref = self._sqdist_to(theta_ref)
        _, val = self._best_weight(d_ref, s2, self.expect[j])
        return max(val - base, 0.0)

    def _set(self, keep, weights=None):
        self.means = self.means[keep]
        self.variances = self.variances[keep]
        self.expect = self.expect[keep]
        self.fvals = self.fvals[keep]
        self.trH = self.trH[keep]
        self.sqnorm = self.sqnorm[keep]
        self.sqdist = self.sqdist[np.ix_(keep, keep)]
        w = self.weights[keep] if weights is None else weights
        self.weights = w / w.sum()

    # -- the algorithm -------------------------------------------------------------------------
    def propose(self, A, W):
        """Offer the candidate ``(A, W)``; returns True if it was accepted.

        The candidate's weight (and, for the Gaussian model, variance) is optimised with the
        existing components fixed and their weights scaled by ``1 - w``. It is accepted if the
        ELBO rises by at least the threshold; then every older component (in ascending weight)
        whose removal lowers the ELBO by less than ``prune_threshold`` is removed.
        """
        t = self.target
        A = np.asarray(A, dtype=float)
        W = np.asarray(W, dtype=float)
        f = t.value(A, W)
        self.n_processed += 1
        if not np.isfinite(f):
            self.elbo_trace.append(self.elbo())
            return False
        trH = t.trace_hessian(A, W)
        theta = t.vec(A, W)
        if self.fixed_variance is None and not self.gaussian:
            # the paper fixes the uniform model's variance to NVI (M=1) under a Gaussian
            # surrogate; noise variance of U(-eps, eps) is eps^2 / 3
            self.fixed_variance = t.optimal_variance(A, W, sigma2=t.scale**2 / 3.0)
        s2_init = self.fixed_variance if self.fixed_variance is not None else (
            t.optimal_variance(A, W)
        )
        if self.n_components == 0:
            self._append(theta, f, trH, s2_init, np.empty(0))
            self.weights = np.ones(1)
            self.n_accepted += 1
            self.accepted.append(self.n_processed - 1)
            self.elbo_trace.append(self.elbo())
            return True
        d_new = self._sqdist_to(theta)
        base = self.elbo()
        s2, w, val = self._optimise(d_new, f, trH, s2_init)
        gain = val - base
        tau = self._reference_gain(d_new, base) if self.threshold == "reference" else self.threshold
        tol = _tie_tol(base)
        if not gain >= tau - tol or w <= 0.0:
            self.elbo_trace.append(base)
            return False
        old_w = self.weights * (1.0 - w)
        self._append(theta, f, trH, s2, d_new)
        self.weights = np.append(old_w, w)
        self.n_accepted += 1
        self.accepted.append(self.n_processed - 1)
        self._prune(tau if self.prune_threshold == "reference" else self.prune_threshold)
        self.elbo_trace.append(self.elbo())
        return True

    def _append(self, theta, f, trH, s2, d_new):
        M = self.n_components
        self.means = np.vstack([self.means, theta[None, :]])
        self.sqnorm = np.append(self.sqnorm, theta @ theta)
        self.fvals = np.append(self.fvals, f)
        self.trH = np.append(self.trH, trH)
        self.variances = np.append(self.variances, s2)
        self.expect = np.append(self.expect, self._expect(f, trH, s2))
        sq = np.zeros((M + 1, M + 1))
        sq[:M, :M] = self.sqdist
        sq[M, :M] = sq[:M, M] = d_new
        self.sqdist = sq

    def _prune(self, tau):
        """Remove old components whose removal costs less than ``tau`` (ascending weight)."""
        newest = self.n_components - 1
        order = [i for i in np.argsort(self.weights, kind="stable") if i != newest]
        alive = np.ones(self.n_components, dtype=bool)
        current = self.elbo()
        for i in order:
            trial = alive.copy()
            trial[i] = False
            w = np.where(trial, self.weights, 0.0)
            w = w / w.sum()
            val = mixture_elbo(w, self.variances, self.expect, self.sqdist, self.P)
            if current - val < tau - _tie_tol(current):
                alive = trial
                current = val
                self.n_pruned += 1
        if not alive.all():
            self._set(alive)

    def sample(self, n_draws, *, random_seed=None, clip=True):
        """Draw ``(A, W)`` from the mixture; negative entries are set to 0 when ``clip``.

        Returns
        -------
        A : numpy.ndarray
            ``(n_draws, D, R)``.
        W : numpy.ndarray
            ``(n_draws, R, N)``.
        component : numpy.ndarray of int
            ``(n_draws,)`` index of the component each draw came from.
        """
        rng = as_generator(random_seed)
        comp = rng.choice(self.n_components, size=n_draws, p=self.weights)
        theta = self.means[comp] + np.sqrt(self.variances[comp])[:, None] * rng.standard_normal(
            (n_draws, self.P)
        )
        if clip:
            np.maximum(theta, 0.0, out=theta)
        D, N = self.target.shape
        R = self.target.rank
        return theta[:, : D * R].reshape(-1, D, R), theta[:, D * R :].reshape(-1, R, N), comp

    def to_dataset(self):
        """The mixture as an ``xarray.Dataset`` for a DataTree ``variational`` group.

        Dims ``component``, ``row``, ``factor``, ``col`` and ``trace`` (the ELBO trace).
        """
        D, N = self.target.shape
        R = self.target.rank
        M = self.n_components
        A = self.means[:, : D * R].reshape(M, D, R)
        W = self.means[:, D * R :].reshape(M, R, N)
        return xr.Dataset(
            {
                "weight": ("component", self.weights),
                "variance": ("component", self.variances),
                "log_joint": ("component", self.fvals),
                "trace_hessian": ("component", self.trH),
                "A_mean": (("component", "row", "factor"), A),
                "W_mean": (("component", "factor", "col"), W),
                "elbo_trace": ("trace", np.asarray(self.elbo_trace, dtype=float)),
            },
            attrs={
                "elbo": self.elbo(),
                "n_processed": self.n_processed,
                "n_accepted": self.n_accepted,
                "n_pruned": self.n_pruned,
                "threshold": str(self.threshold),
                "prune_threshold": str(self.prune_threshold),
            },
        )


# --------------------------------------------------------------------------------------------
# fixed-M NVI (Gershman et al. 2012)
# --------------------------------------------------------------------------------------------


def _entropy_grad_means(means, weights, variances, P):
    """Gradient of the entropy lower bound with respect to every mean, ``(M, P)``."""
    sq = np.sum(means**2, axis=1)
    sqdist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
    S = variances[:, None] + variances[None, :]
    logN = -0.5 * P * (LOG_2PI + np.log(S)) - sqdist / (2.0 * S)
    log_r = logN + np.log(weights)[None, :]
    r = np.exp(log_r - _logsumexp_rows(log_r))  # r[m, j]
    # dH/dmu_n = sum_j w_n r_nj (mu_n - mu_j)/S_nj + sum_m w_m r_mn (mu_n - mu_m)/S_mn
    C = weights[:, None] * r / S + (weights[:, None] * r / S).T
    return C.sum(axis=1)[:, None] * means - C @ means


def fit_nvi(target, inits, *, variance=None, tol=1e-4, max_iter=50, lbfgs_iter=50):
    """Gershman et al.'s fixed-M nonparametric VI (uniform weights ``1/M``).

    Alternates, until the ELBO changes by less than ``tol``: for each component, an L-BFGS-B
    update of its mean (bounds ``>= 0``) on the first-order objective ``w f(mu) + H_lb``, then a
    1-D update of its log-variance on the second-order objective (skipped for a fixed
    ``variance``, as the paper does for the uniform model).

    Parameters
    ----------
    target : LogJoint
    inits : list of tuple of numpy.ndarray
        ``M`` starting ``(A, W)`` (random restarts; for the uniform model one feasible solution
        with a tiny jitter, as in the paper).
    variance : float, optional
        Fixed variance for every component (default: the Gaussian closed form for Gaussian
        targets, the Gaussian-surrogate closed form with ``eps^2 / 3`` for uniform ones).
    tol : float
        ELBO change for convergence.
    max_iter, lbfgs_iter : int
        Outer sweeps, and L-BFGS-B iterations per mean update.

    Returns
    -------
    OnlineNPVI
        Holding the ``M`` components (weights ``1/M``) and the ELBO trace per sweep.
    """
    t = target
    M = len(inits)
    means = np.stack([t.vec(np.maximum(A, 0), np.maximum(W, 0)) for A, W in inits])
    if variance is None:
        if t.likelihood == "gaussian":
            s2 = np.array([t.optimal_variance(*t.unvec(m)) for m in means])
        else:
            s2 = np.full(M, t.optimal_variance(*t.unvec(means[0]), sigma2=t.scale**2 / 3.0))
        fixed = t.likelihood != "gaussian"
    else:
        s2 = np.full(M, float(variance))
        fixed = True
    w = np.full(M, 1.0 / M)

    def elbo_of(means, s2):
        f = np.array([t.value(*t.unvec(m)) for m in means])
        tr = np.array([t.trace_hessian(*t.unvec(m)) for m in means])
        sq = np.sum(means**2, axis=1)
        sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
        return mixture_elbo(w, s2, f + 0.5 * s2 * tr, sqd, t.P), f, tr

    trace = [elbo_of(means, s2)[0]]
    for _ in range(max_iter):
        for n in range(M):
            def neg_l1(x, n=n):
                means[n] = x
                fx = t.value(*t.unvec(x))
                if not np.isfinite(fx):
                    return np.inf, np.zeros_like(x)
                gA, gW = t.grad(*t.unvec(x))
                sq = np.sum(means**2, axis=1)
                sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
                H = entropy_lower_bound(w, s2, sqd, t.P)
                gH = _entropy_grad_means(means, w, s2, t.P)[n]
                return -(w[n] * fx + H), -(w[n] * t.vec(gA, gW) + gH)

            x0 = means[n].copy()
            res = minimize(neg_l1, x0, jac=True, method="L-BFGS-B",
                           bounds=[(0.0, None)] * t.P, options={"maxiter": lbfgs_iter})
            means[n] = res.x if res.fun <= neg_l1(x0)[0] else x0
            if not fixed:
                tr_n = t.trace_hessian(*t.unvec(means[n]))
                f_n = t.value(*t.unvec(means[n]))
                sq = np.sum(means**2, axis=1)
                sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)

                def neg_l2(ls, n=n, f_n=f_n, tr_n=tr_n, sqd=sqd):
                    v = s2.copy()
                    v[n] = np.exp(ls)
                    e = np.zeros(M)
                    e[n] = w[n] * (f_n + 0.5 * v[n] * tr_n)
                    return -(e[n] + entropy_lower_bound(w, v, sqd, t.P))

                c = np.log(s2[n])
                r = minimize_scalar(neg_l2, bounds=(c - 15.0, c + 15.0), method="bounded")
                s2[n] = np.exp(r.x)
        trace.append(elbo_of(means, s2)[0])
        if abs(trace[-1] - trace[-2]) < tol:
            break
    value, f, tr = elbo_of(means, s2)
    out = OnlineNPVI(t, threshold=0.0, variance=None)
    out.means = means
    out.sqnorm = np.sum(means**2, axis=1)
    out.sqdist = np.maximum(out.sqnorm[:, None] + out.sqnorm[None, :] - 2 * means @ means.T, 0.0)
    out.weights = w.copy()
    out.variances = s2.copy()
    out.fvals = f
    out.trH = tr
    out.expect = f + 0.5 * s2 * tr
    out.elbo_trace = list(trace)
    out.n_processed = out.n_accepted = M
    return out


# --------------------------------------------------------------------------------------------
# MCMC draws through ONVI
# --------------------------------------------------------------------------------------------


def onvi_from_draws(target, A_draws, W_draws, *, threshold=None, variance=None,
                    progressbar=False, prune_threshold=None):
    """Feed MCMC draws (Gibbs, HMC, NUTS) one by one through :class:`OnlineNPVI`.

    Each draw is rescaled first (:meth:`LogJoint.rescale`; AW is unchanged).

    Parameters
    ----------
    target : LogJoint
    A_draws, W_draws : numpy.ndarray
        ``(S, D, R)`` and ``(S, R, N)`` (chains flattened in order).
    threshold, variance
        As for :class:`OnlineNPVI`.
    progressbar : bool
    prune_threshold : float or "reference", optional
        As for :class:`OnlineNPVI`.

    Returns
    -------
    OnlineNPVI
    """
    onvi = OnlineNPVI(target, threshold=threshold, variance=variance,
                      prune_threshold=prune_threshold)
    for s in progress(range(len(A_draws)), desc="ONVI", progressbar=progressbar):
        onvi.propose(*target.rescale(A_draws[s], W_draws[s]))
    return onvi


def mixture_datatree(onvi, X, *, n_draws=500, random_seed=None, method, model_name,
                     diagnostics=None, attrs=None):
    """Package a fitted mixture as a DataTree.

    Draws from the mixture go in ``posterior``, the mixture itself in ``variational``.
    """
    A, W, comp = onvi.sample(n_draws, random_seed=random_seed)
    coords = {**data_coords(X), "factor": np.arange(onvi.target.rank)}
    coords["component"] = np.arange(onvi.n_components)
    groups = {"variational": onvi.to_dataset()}
    if diagnostics:
        groups["diagnostics"] = diagnostics
    return build_datatree(
        {"A": A[None], "W": W[None]},
        sample_stats={"component": comp[None]},
        observed_data={"X": np.asarray(X.values, dtype=float)},
        coords=coords,
        groups=groups,
        attrs={"method": method, "model": model_name, "elbo": onvi.elbo(),
               "n_components": onvi.n_components, **(attrs or {})},
    )


# --------------------------------------------------------------------------------------------
# model-level front ends returning DataTrees
# --------------------------------------------------------------------------------------------


def fit_npvi(model, *, n_components=4, restarts=None, max_iter=50, tol=1e-4, n_draws=500,
             random_seed=None, progressbar=True):
    """Fixed-M nonparametric VI (Gershman et al. 2012): the NVI-4 / NVI-10 baselines.

    Parameters
    ----------
    model : pymc.Model
        A :func:`bnmfzoo.models.uniform_noise` or fixed-sigma
        :func:`bnmfzoo.models.exponential_gaussian` model.
    n_components : int
        M (the paper's baselines use 4 and 10).
    restarts : list of tuple of numpy.ndarray, optional
        Starting ``(A, W)``. Default: ``M`` Lin restarts (Gaussian) or, for the uniform model,
        one feasible Lin solution with a 1e-9 relative jitter per component (the paper: "a
        single feasible initialization").
    max_iter, tol : int, float
        Sweeps and ELBO-change convergence criterion.
    n_draws : int
        Draws from the fitted mixture stored in ``posterior``.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        As :func:`~bnmfzoo.inference.fit_rrt`, with ``method="npvi"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.exploration.npvi import fit_npvi
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((8, 2)) @ rng.random((2, 6)) + 0.01 * rng.random((8, 6))
    >>> dt = fit_npvi(exponential_gaussian(X, 2, sigma=0.01), n_components=2, max_iter=2,
    ...               random_seed=0, progressbar=False)
    >>> dt["variational"].sizes["component"]
    2
    """
    from bnmfzoo._rng import spawn_seeds
    from bnmfzoo.inference.exploration._lin_pg import lin_pg_nmf
    from bnmfzoo.models._spec import get_spec

    spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method="fit_npvi")
    target = LogJoint.from_model(model, method="fit_npvi")
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) or (
            n_components < 1):
        raise ValueError(f"n_components must be an integer >= 1, got {n_components!r}")
    rng = as_generator(random_seed)
    s_init, s_draw = spawn_seeds(rng, 2)
    if restarts is None:
        n_lin = n_components if target.likelihood == "gaussian" else 1
        restarts = [lin_pg_nmf(spec.X_values, spec.rank, mask=spec.mask, random_seed=s)
                    for s in progress(spawn_seeds(s_init, n_lin), desc="Lin restarts",
                                      progressbar=progressbar)]
    restarts = list(restarts)
    if target.likelihood == "uniform":
        A0, W0 = target.rescale(*restarts[0])
        jit = as_generator(s_init)
        restarts = [(A0 * (1 + 1e-9 * jit.standard_normal(A0.shape)), W0)
                    for _ in range(n_components)]
    inits = (restarts * n_components)[:n_components]
    nvi = fit_nvi(target, inits, max_iter=max_iter, tol=tol)
    return mixture_datatree(nvi, spec.X, n_draws=n_draws, random_seed=s_draw, method="npvi",
                            model_name=spec.family, attrs={"likelihood": target.likelihood})


def fit_onvi(model, draws, *, threshold=None, variance=None, n_draws=500, random_seed=None,
             progressbar=True, prune_threshold=None):
    """Feed MCMC draws (Gibbs, NUTS, ...) through online NVI (the paper's Gibbs/HMC+ONVI).

    Parameters
    ----------
    model : pymc.Model
        A :func:`bnmfzoo.models.uniform_noise` or fixed-sigma
        :func:`bnmfzoo.models.exponential_gaussian` model.
    draws : xarray.DataTree or tuple of numpy.ndarray
        A result of ``pm.sample`` (its ``posterior`` ``A`` and ``W``; chains are fed one after
        the other) or ``(A_draws, W_draws)`` shaped ``(S, D, R)``, ``(S, R, N)``.
    threshold, variance
        See :class:`OnlineNPVI`.
    n_draws : int
        Draws from the fitted mixture stored in ``posterior``.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
    prune_threshold : float or "reference", optional
        See :class:`OnlineNPVI`.

    Returns
    -------
    xarray.DataTree
        As :func:`~bnmfzoo.inference.fit_rrt`, with ``method="onvi"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.exploration.npvi import fit_onvi
    >>> rng = np.random.default_rng(0)
    >>> A, W = rng.random((8, 2)), rng.random((2, 6))
    >>> model = exponential_gaussian(A @ W, 2, sigma=0.01)
    >>> dt = fit_onvi(model, (A[None], W[None]), progressbar=False)
    >>> int(dt.attrs["n_components"])
    1
    """
    from bnmfzoo.models._spec import get_spec

    spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method="fit_onvi")
    target = LogJoint.from_model(model, method="fit_onvi")
    if isinstance(draws, tuple):
        A_draws, W_draws = (np.asarray(d, dtype=float) for d in draws)
    else:
        post = draws["posterior"]
        A_draws = np.asarray(post[spec.var_names["A"]].transpose("chain", "draw", ...).values)
        W_draws = np.asarray(post[spec.var_names["W"]].transpose("chain", "draw", ...).values)
        A_draws = A_draws.reshape((-1,) + A_draws.shape[2:])
        W_draws = W_draws.reshape((-1,) + W_draws.shape[2:])
    D, N = target.shape
    R = target.rank
    if A_draws.ndim != 3 or A_draws.shape[1:] != (D, R) or W_draws.shape != (
            A_draws.shape[0], R, N):
        raise ValueError(f"draws must be A (S, {D}, {R}) and W (S, {R}, {N}); got "
                         f"{A_draws.shape} and {W_draws.shape}")
    onvi = onvi_from_draws(target, A_draws, W_draws, threshold=threshold, variance=variance,
                           progressbar=progressbar, prune_threshold=prune_threshold)
    return mixture_datatree(onvi, spec.X, n_draws=n_draws, random_seed=random_seed,
                            method="onvi", model_name=spec.family,
                            attrs={"likelihood": target.likelihood})
