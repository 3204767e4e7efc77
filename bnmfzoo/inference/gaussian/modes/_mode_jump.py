"""Mode jumps by annealed importance sampling for exponential-Gaussian NMF (numeric core).

Replica exchange moves between NMF's modes only when its hot replicas carry states across,
which fails at a first-order transition: on CCLE IC50 rank 3 the posterior has a mode of higher
likelihood but smaller volume (about 1.5 % of the mass) and a broad one (about 98.5 %); tempering
condenses into the broad one and a chain started in the narrow one never leaves it. This module
crosses between modes directly.

**References.** Each mode found by quenched Gibbs runs from random starts gets a mean-field
reference ``q_r(A, W, tau)``: independent normals truncated to ``[0, inf)`` on the entries of
``A`` and ``W`` (mean and sd of the run's draws) and a Gamma on ``tau`` (moment-matched),
normalized, so every ``q_r`` is a density of the same variables.

**Annealing paths.** For reference ``r`` the path ``f_{r,k} = p^{g_k} q_r^{1 - g_k}``
(``0 = g_0 < ... < g_K = 1``, ``p`` the unnormalized posterior) keeps exact Gibbs
conditionals: the entries' conditionals are truncated normals with prior terms
``(1 - g) / s^2`` (precision) and ``-g lam + (1 - g) m / s^2`` (linear), the likelihood's
precision is ``g tau``, and ``tau | rest ~ Gamma(g (alpha + n/2 - 1) + (1 - g)(a - 1) + 1,
g (beta + SSE/2) + (1 - g) b)``. The kernel at ``g`` is made reversible by running the sweep
forward (``A``, ``W``, ``tau``) or reversed (``tau``, ``W``, ``A``, factors in reverse order)
with probability 1/2 each.

**The jump** (annealed importance sampling within Metropolis-Hastings: Neal 1996, "Sampling
from multimodal distributions using tempered transitions"; Neal 2001, "Annealed importance
sampling"; Karagiannis & Andrieu 2013, "Annealed importance sampling reversible jump MCMC
algorithms"). From the current state ``x`` with reference ``r = argmax_r q_r(x)``: anneal
``x`` down path ``r`` (kernels at ``g_K, ..., g_1``), accumulating ``log w_r(x) = sum_k
(g_k - g_{k-1}) (log p - log q_r)(x_{k-1})``; draw ``y_0 ~ q_{r'}`` for ``r'`` uniform among
the other references and anneal it up path ``r'`` to ``y = y_K`` with weight ``w_{r'}(y)``.
Accept ``y`` with probability ``min(1, w_{r'}(y) / w_r(x))`` if ``argmax_r q_r(y) = r'``
(else reject). Both weights are unbiased estimates of the posterior's normalizer over the
reference's path, so the move leaves the posterior invariant exactly for any number of
annealing steps ``K`` and any references (the extended-space argument of Karagiannis &
Andrieu 2013, Section 3); ``K`` and the references only decide how often it is accepted.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln, log_ndtr
from scipy.stats import truncnorm

from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep
from bnmfzoo.inference.gaussian.modes._symmetry import apply_moves
from bnmfzoo.inference.gaussian.priors._prior_core import NMFPriorPlan, PriorTerms, prior_nmf_sweep

__all__ = ["Reference", "anneal_schedule", "annealed_sweep", "log_target",
           "discover_references", "mode_jump", "jump_step", "check_jump_model",
           "check_jump_settings"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_PLAN = NMFPriorPlan(A=PriorTerms("external"), W=PriorTerms("external"), noise="external")


def check_jump_model(hyper):
    """Raise ``NotImplementedError`` unless mode jumps support the model ``hyper`` describes.

    Supported: exponential priors with fixed rates on ``A`` and ``W``, a Gamma or a fixed noise
    precision (the exponential-Gaussian model of Brouwer et al. 2017 without ARD).
    """
    if getattr(hyper, "ard", False) or hyper.lambda_A is None or hyper.lambda_W is None:
        raise NotImplementedError("mode jumps need exponential priors with fixed rates on A "
                                  "and W (no ARD)")


def check_jump_settings(jump_every, n_anneal, n_starts):
    """Raise ``ValueError`` unless the three are integers >= 1, >= 1 and >= 0."""
    for name, value, low in (("jump_every", jump_every, 1), ("n_anneal", n_anneal, 1),
                             ("n_starts", n_starts, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _tn_logpdf_sum(x, m, s):
    z = (x - m) / s
    return float(-0.5 * np.sum(z * z) - np.sum(np.log(s)) - _LOG_SQRT_2PI * z.size
                 - np.sum(log_ndtr(m / s)))


@dataclass(frozen=True)
class Reference:
    """A normalized mean-field density ``q(A, W, tau)`` fitted to one mode's draws.

    ``a``, ``b`` (Gamma shape and rate of ``tau``) are None when the noise is fixed.
    ``typical`` is the 5th percentile of ``log q`` over the fitting draws (used to merge
    references of one mode).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> As, Ws = rng.exponential(size=(50, 3, 2)), rng.exponential(size=(50, 2, 4))
    >>> ref = Reference.fit(As, Ws, rng.gamma(5.0, size=50))
    >>> A, W, tau = ref.sample(rng)
    >>> bool(np.isfinite(ref.log_density(A, W, tau)) and (A >= 0).all())
    True
    """

    mA: np.ndarray
    sA: np.ndarray
    mW: np.ndarray
    sW: np.ndarray
    a: float | None = None
    b: float | None = None
    typical: float = -math.inf

    @classmethod
    def fit(cls, As, Ws, taus=None):
        """Fit to draws ``As`` (n, D, R), ``Ws`` (n, R, N) and ``taus`` (n,) or None."""
        As, Ws = np.asarray(As, dtype=float), np.asarray(Ws, dtype=float)
        floor = 1e-3 * max(float(As.mean()), float(Ws.mean()), 1e-12)
        ref = cls(mA=As.mean(0), sA=As.std(0) + floor, mW=Ws.mean(0), sW=Ws.std(0) + floor)
        if taus is not None:
            taus = np.asarray(taus, dtype=float)
            m, v = float(taus.mean()), float(taus.var())
            v = max(v, (1e-3 * m) ** 2)
            ref = cls(ref.mA, ref.sA, ref.mW, ref.sW, a=m * m / v, b=m / v)
        levels = [ref.log_density(A, W, None if taus is None else t)
                  for A, W, t in zip(As, Ws, taus if taus is not None else [None] * len(As),
                                     strict=True)]
        return cls(ref.mA, ref.sA, ref.mW, ref.sW, ref.a, ref.b,
                   typical=float(np.percentile(levels, 5)))

    def log_density(self, A, W, tau=None):
        """Normalized ``log q(A, W, tau)`` (``tau`` ignored when the noise is fixed)."""
        out = _tn_logpdf_sum(np.asarray(A), self.mA, self.sA)
        out += _tn_logpdf_sum(np.asarray(W), self.mW, self.sW)
        if self.a is not None:
            out += (self.a * math.log(self.b) - gammaln(self.a) + (self.a - 1) * math.log(tau)
                    - self.b * tau)
        return out

    def sample(self, rng):
        """One exact draw ``(A, W, tau)`` (``tau`` None when the noise is fixed)."""
        A = truncnorm.rvs(-self.mA / self.sA, np.inf, loc=self.mA, scale=self.sA,
                          random_state=rng)
        W = truncnorm.rvs(-self.mW / self.sW, np.inf, loc=self.mW, scale=self.sW,
                          random_state=rng)
        tau = None if self.a is None else float(rng.gamma(self.a, 1.0 / self.b))
        return np.maximum(A, 0.0), np.maximum(W, 0.0), tau


def anneal_schedule(n_anneal, power=2.0):
    """``g_0 = 0 < g_1 < ... < g_K = 1`` with ``g_k = (k / K)^power``.

    Examples
    --------
    >>> anneal_schedule(2).tolist()
    [0.0, 0.25, 1.0]
    """
    n = int(n_anneal)
    if n < 1:
        raise ValueError(f"n_anneal must be at least 1, got {n_anneal!r}")
    return np.linspace(0.0, 1.0, n + 1) ** float(power)


def _tau(state, hyper):
    return 1.0 / float(hyper.sigma) ** 2 if hyper.sigma is not None else float(state.tau)


def log_target(state, obs, hyper):
    """``log p(A, W, tau, X)`` up to a constant that does not depend on the state."""
    tau = _tau(state, hyper)
    out = 0.5 * obs.n_observed * math.log(tau) - 0.5 * tau * state.sse
    out -= hyper.lambda_A * float(state.A.sum()) + hyper.lambda_W * float(state.Wt.sum())
    if hyper.sigma is None:
        out += (hyper.alpha_tau - 1.0) * math.log(tau) - hyper.beta_tau * tau
    return out


def _log_ratio(state, obs, hyper, ref):
    tau = None if hyper.sigma is not None else state.tau
    return log_target(state, obs, hyper) - ref.log_density(state.A, state.W, tau)


def _update_tau(state, obs, hyper, ref, g, rng):
    if hyper.sigma is not None:
        return
    shape = g * (hyper.alpha_tau + 0.5 * obs.n_observed - 1.0) + (1.0 - g) * (ref.a - 1.0) + 1.0
    rate = g * (hyper.beta_tau + 0.5 * state.sse) + (1.0 - g) * ref.b
    tau = float(rng.gamma(shape, 1.0 / rate))
    if not (0.0 < tau < math.inf):
        raise FloatingPointError(f"mode jump: the noise precision tau = {tau!r} is not finite")
    state.tau = tau


def _factor_sweep(state, obs, hyper, ref, g, rng, order, flip):
    """Update the blocks in ``order`` at ``g``; ``flip`` reverses the factors' order."""
    mA, sA, mW, sW = ref.mA, ref.sA, ref.mW, ref.sW
    if flip:
        mA, sA, mW, sW = mA[:, ::-1], sA[:, ::-1], mW[::-1], sW[::-1]
    qA = np.ascontiguousarray((1.0 - g) / sA**2)
    lA = np.ascontiguousarray(-g * hyper.lambda_A + (1.0 - g) * mA / sA**2)
    qW = np.ascontiguousarray(((1.0 - g) / sW**2).T)
    lW = np.ascontiguousarray((-g * hyper.lambda_W + (1.0 - g) * mW / sW**2).T)
    tau, kept = _tau(state, hyper), state.tau
    work = state
    if flip:
        work = nmf_state(state.A[:, ::-1], state.W[::-1], state.tau, None, obs)
        work._resid = state._resid  # A W (and the residual) do not change under the flip
        work._sse = state._sse
    for block in order:
        prior_nmf_sweep(work, obs, _PLAN, rng, rates={}, update={block},
                        external={"A": (qA, lA), "W": (qW, lW), "tau": g * tau})
    if flip:
        state.A[...] = work.A[:, ::-1]
        state.Wt[...] = work.Wt[:, ::-1]
        state._resid, state._sse = work._resid, work._sse
    state.tau = kept  # prior_nmf_sweep leaves the external precision g * tau in the state


def annealed_sweep(state, obs, hyper, ref, g, rng):
    """One reversible Gibbs sweep of ``f_g = p^g q^(1 - g)``, in place (``0 < g <= 1``).

    With probability 1/2 the blocks run ``A``, ``W``, ``tau`` (factors in their order), else
    ``tau``, ``W``, ``A`` with the factors in reverse order: the mixture of a sweep and its
    time reversal is reversible, so the same kernel serves the forward and the reverse paths.
    """
    if not 0.0 < g <= 1.0:
        raise ValueError(f"g must lie in (0, 1], got {g!r}")
    if rng.random() < 0.5:
        _factor_sweep(state, obs, hyper, ref, g, rng, ("A", "W"), flip=False)
        _update_tau(state, obs, hyper, ref, g, rng)
    else:
        _update_tau(state, obs, hyper, ref, g, rng)
        _factor_sweep(state, obs, hyper, ref, g, rng, ("W", "A"), flip=True)
    return state


def _state_from(A, W, tau, obs, hyper):
    return nmf_state(A, W, _tau_value(tau, hyper), None, obs)


def _tau_value(tau, hyper):
    return 1.0 / float(hyper.sigma) ** 2 if tau is None or hyper.sigma is not None else tau


def ais_forward(ref, obs, hyper, gammas, rng):
    """Draw ``y_0 ~ q`` and anneal it to the posterior; returns ``(y, log w)``."""
    A, W, tau = ref.sample(rng)
    y = _state_from(A, W, tau, obs, hyper)
    log_w = 0.0
    for k in range(1, len(gammas)):
        log_w += (gammas[k] - gammas[k - 1]) * _log_ratio(y, obs, hyper, ref)
        annealed_sweep(y, obs, hyper, ref, gammas[k], rng)
    return y, log_w


def ais_reverse(state, ref, obs, hyper, gammas, rng):
    """Anneal a copy of ``state`` from the posterior down to ``q``; returns ``log w``."""
    x = nmf_state(state.A, state.W, state.tau, None, obs)
    log_w = 0.0
    for k in range(len(gammas) - 1, 0, -1):
        annealed_sweep(x, obs, hyper, ref, gammas[k], rng)
        log_w += (gammas[k] - gammas[k - 1]) * _log_ratio(x, obs, hyper, ref)
    return log_w


def _nearest(refs, state, hyper):
    tau = None if hyper.sigma is not None else state.tau
    return int(np.argmax([r.log_density(state.A, state.W, tau) for r in refs]))


def mode_jump(state, obs, hyper, refs, gammas, rng):
    """One annealed mode jump from ``state`` (see the module docstring).

    Returns ``(new_state, prob, source, target)``: ``new_state`` is ``state`` itself when the
    jump is rejected; ``prob`` the acceptance probability (NaN with fewer than 2 references).
    """
    if len(refs) < 2:
        return state, math.nan, 0, 0
    source = _nearest(refs, state, hyper)
    others = [i for i in range(len(refs)) if i != source]
    target = others[int(rng.integers(len(others)))]
    log_w_x = ais_reverse(state, refs[source], obs, hyper, gammas, rng)
    y, log_w_y = ais_forward(refs[target], obs, hyper, gammas, rng)
    if _nearest(refs, y, hyper) != target:
        return state, 0.0, source, target
    log_ratio = log_w_y - log_w_x
    if math.isnan(log_ratio):
        return state, 0.0, source, target
    prob = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
    if rng.random() < prob:
        return y, prob, source, target
    return state, prob, source, target


def _align(A_ref, state, obs):
    """Permute ``state``'s factors to best match the columns of ``A_ref`` (cosine)."""
    a = A_ref / np.maximum(np.linalg.norm(A_ref, axis=0), 1e-300)
    b = state.A / np.maximum(np.linalg.norm(state.A, axis=0), 1e-300)
    _, perm = linear_sum_assignment(-(a.T @ b))
    return nmf_state(state.A[:, perm], state.W[perm], state.tau, None, obs)


def _explore(st, obs, hyper, rng):
    """A Gibbs sweep, then an exact rescaling of every factor.

    The runs that fit the references then spread along the slow scale direction
    ``A[:, k] c, W[k, :] / c``.
    """
    nmf_sweep(st, obs, hyper, rng)
    apply_moves(st, hyper, rng, ("rescale",))


def _same_mode(ref, draws, other, other_draws):
    """Whether two references are one mode: each finds the other's draws typical.

    Typical: the median ``log q`` of the draws reaches ``q``'s own 5th percentile. Both ways,
    so that a broad reference (a run that had not settled) does not absorb narrower modes.
    """

    def typical_for(q, sample):
        return np.median([q.log_density(A, W, t) for A, W, t in sample]) >= q.typical

    return typical_for(other, draws) and typical_for(ref, other_draws)


def discover_references(state, obs, hyper, rng, *, n_starts=8, n_quench=300, n_fit=300,
                        merge=True):
    """Fit one :class:`Reference` per mode reached from ``state`` and ``n_starts`` random starts.

    Each start runs ``n_quench`` Gibbs sweeps of the posterior (each followed by the exact
    rescaling move of :mod:`~bnmfzoo.inference.gaussian.modes._symmetry`), has its factors permuted
    to match the first (``state``'s) run, then ``n_fit`` such sweeps whose draws fit the
    reference.
    With ``merge``, a reference is dropped when it and an earlier one each find the other's
    draws typical (median ``log q`` at least the ``typical`` level): the same mode.

    Examples
    --------
    >>> from bnmfzoo.inference.gaussian.gibbs._core import observed_entries
    >>> from bnmfzoo.models._spec import GaussianHyper
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> obs, hyper = observed_entries(X), GaussianHyper(lambda_A=1.0, lambda_W=1.0)
    >>> st = nmf_state(np.ones((6, 2)), np.ones((2, 5)), 1.0, None, obs)
    >>> refs = discover_references(st, obs, hyper, np.random.default_rng(1), n_starts=2,
    ...                            n_quench=20, n_fit=20, merge=False)
    >>> len(refs)
    3
    """
    check_jump_model(hyper)
    R = state.A.shape[1]
    D, N = state.A.shape[0], state.Wt.shape[0]
    values = obs.values[obs.values > 0]
    scale = math.sqrt(float(values.mean()) / R) if values.size else 1.0
    starts = [(state.A, state.W)] + [(rng.exponential(scale, (D, R)),
                                      rng.exponential(scale, (R, N))) for _ in range(n_starts)]
    refs, kept, first_A = [], [], None
    for A0, W0 in starts:
        st = nmf_state(A0, W0, _tau_value(state.tau, hyper), None, obs)
        for _ in range(n_quench):
            _explore(st, obs, hyper, rng)
        if first_A is None:
            first_A = st.A.copy()
        else:
            st = _align(first_A, st, obs)
        As, Ws, taus = [], [], []
        for _ in range(n_fit):
            _explore(st, obs, hyper, rng)
            As.append(st.A.copy())
            Ws.append(st.W.copy())
            taus.append(st.tau)
        taus = None if hyper.sigma is not None else taus
        ref = Reference.fit(As, Ws, taus)
        draws = list(zip(As, Ws, taus if taus is not None else [None] * len(As), strict=True))
        if merge and any(_same_mode(ref, draws, e, e_draws) for e, e_draws in kept):
            continue
        kept.append((ref, draws))
        refs.append(ref)
    return refs


def jump_step(state, obs, hyper, refs, gammas, rng, *, n_starts):
    """One mode jump of a step method: find the references first if ``refs`` is None.

    Returns ``(new_state, prob, refs)`` (``refs`` as found, to keep for the chain's next jumps).
    """
    if refs is None:
        refs = discover_references(state, obs, hyper, rng, n_starts=n_starts)
    new, prob, _, _ = mode_jump(state, obs, hyper, refs, gammas, rng)
    return new, prob, refs
