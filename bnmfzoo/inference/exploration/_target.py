"""The NVI target: log joint of the exponential-prior NMF models and its column-scale optimum.

:class:`LogJoint` is ``log p(A, W, X)`` of the Gaussian-noise (Brouwer et al. 2017) and the
uniform-noise (Masood & Doshi-Velez 2016, Sec. 4.1) exponential-prior NMF models, with its
gradient and the exact trace of its Hessian (the second-order ELBO term of Gershman et al.
2012, eq. 5). :meth:`LogJoint.rescale` moves a factorization along its scale orbit
``(A diag(b), diag(1/b) W)`` (``AW`` unchanged) to the ELBO-optimal scales (:func:`_elbo_scales`,
a Newton solve per column) or to the paper's Hessian rule.

NumPy / SciPy; knows nothing of PyMC except :meth:`LogJoint.from_model`.
"""


from dataclasses import dataclass, field

import numpy as np

from bnmfzoo.inference.exploration._mixture import LOG_2PI


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
            return cls(spec.X_values, spec.mask, spec.rank, "uniform", hyper.epsilon,
                       hyper.lambda_A, hyper.lambda_W)
        if hyper.sigma is None or hyper.ard:
            raise TypeError(
                f"{method} needs an exponential_gaussian model with a fixed sigma and no ARD "
                "(exponential_gaussian(X, rank, sigma=...)); this one learns tau"
            )
        return cls(spec.X_values, spec.mask, spec.rank, "gaussian", float(hyper.sigma) ** 2,
                   hyper.lambda_A, hyper.lambda_W)

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
        Doshi-Velez 2016, Sec. 3.2, where the paper's ``beta`` is the squared scale).
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
            # at b_r = sqrt(lambda_W |W_r|_1 / (lambda_A |A_r|_1)) (stationary point of the
            # exponential log prior along the scale orbit)
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
