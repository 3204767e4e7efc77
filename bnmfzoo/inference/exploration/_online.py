"""Online nonparametric VI (ONVI; Masood & Doshi-Velez 2016, Sec. 5): a mixture grown online.

Candidates arrive one at a time (from RRT, Gibbs or NUTS). The candidate's variance and weight
are optimised with every earlier component fixed and earlier weights scaled by ``1 - w``; it is
accepted only if the ELBO rises by at least a threshold, and then earlier components are pruned
if dropping them costs less than the pruning threshold (Gershman et al. 2012's ``1e-4``).

NumPy / SciPy; the target is a :class:`~bnmfzoo.inference.exploration._target.LogJoint`.
"""


import numpy as np
import xarray as xr
from scipy.optimize import minimize, minimize_scalar

from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_number
from bnmfzoo.inference.exploration._mixture import mixture_elbo


def _sigmoid(u):
    return 1.0 / (1.0 + np.exp(-u))


def _tie_tol(elbo):
    """Rounding tolerance for comparing ELBO changes with a threshold (~64 ulps of the ELBO)."""
    return 1e-12 * (1.0 + abs(elbo)) if np.isfinite(elbo) else 0.0


def check_threshold(value, name):
    """``"reference"`` or a finite number >= 0 (an ONVI acceptance or pruning threshold)."""
    if isinstance(value, str) and value == "reference":
        return value
    if isinstance(value, str):
        raise ValueError(f"{name} must be a number >= 0 or 'reference', got {value!r}")
    return check_number(value, name=f"{name} (a number >= 0 or 'reference')", minimum=0.0,
                        strict=False)


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
        self.threshold = threshold = check_threshold(threshold, "threshold")
        if prune_threshold is None:
            prune_threshold = 1e-4 if threshold == "reference" else threshold
        self.prune_threshold = check_threshold(prune_threshold, "prune_threshold")
        if variance is not None:
            variance = check_number(variance, name="variance", minimum=0.0)
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
