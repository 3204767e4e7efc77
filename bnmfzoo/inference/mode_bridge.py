"""Posterior masses of the modes by per-mode bridge sampling (an estimator that anneals nothing).

For each mode found (by SMC particles, or by plain chains from prior draws, KL-refined for
count models: :func:`chain_starts`), :func:`bridge_masses`

1. runs ``n_chains`` plain chains of the family's exact sweep at ``beta = 1`` from members of
   the mode (no tempering: nothing is shared with the SMC's annealing path), keeping every
   ``thin``-th state after ``n_burn`` sweeps;
2. **aligns** every kept state to the mode's representative (the column permutation of the
   factors that minimises the summed angle, :func:`matched_angles`), and drops states that
   left the mode (max matched angle above the mode cut; their share is reported);
3. maps the aligned states to an unconstrained vector (log of positive entries, additive
   log-ratio of simplex rows, logit of probabilities; Jacobians included in the log joint);
4. estimates the mode's evidence ``Z_k`` by the optimal bridge of Meng & Wong (1996) with a
   multivariate normal proposal fitted to the first half of each chain
   (:func:`bnmfzoo.inference.bridge.split_fit_bridge`).

**Negative binomial: warped and sized by dimension.** Its log-parametrised posterior is far
from normal (factor entries near zero are skewed in log space), so its bridge is warped
coordinate by coordinate (Box & Cox 1964; ``warp=True`` of ``split_fit_bridge``), and its
chains keep at least ``p (p + 1) / (8 n_chains)`` draws each (``p`` unconstrained
dimensions): the fit half then holds ``n >= p (p + 1) / 16`` draws, so that the normal's
estimation error alone, ``p (p + 1) / (4 n)`` nats of Kullback-Leibler divergence, stays
within 4 nats. Measured on a 50 x 25 rank-3 mode (``p = 226``, 3206 fitted draws): 220-270
effective draws on either side of the bridge and a spread over seeds within its error;
with 800 fitted draws (the default of the other families) the overlap rule fails, and
without the warp it fails at any size up to 16000. The sweeps this adds are capped at
:data:`MAX_SIZED_SWEEP_S` CPU seconds per mode (timed on the burn-in), and to the CPU budget
left (when the command runs in one) shared among the modes still to estimate; when the cap
bites the overlap rule decides. Other families keep ``n_draws``.

**Label switching.** The posterior of an NMF is invariant under the ``K!`` permutations of the
components, so every mode appears as ``K!`` copies (fewer only if a permutation maps the mode
onto itself, which needs two identical components: not the case for distinct factors). The
aligned draws and the proposal sit on one copy, and the proposal's draws fall where the other
copies' density is negligible, so the bridge estimates the evidence ``Z_k`` of that one copy.
Each mode has the same number of copies, so the masses ``Z_k / sum_j Z_j`` are those of the
modes up to permutation, and the total evidence is ``K! sum_k Z_k``. That total is compared
with the SMC's evidence: an independent check of both (``log_z_total`` beside the SMC's
``log_z``).

The error of each ``log Z_k`` is the bridge's asymptotic relative error (Fruhwirth-Schnatter
2004) with the draws' integrated autocorrelation time; the masses' errors follow by the delta
method (the modes' estimates are independent). The estimate needs a proposal that overlaps
the mode: in hundreds of dimensions a normal fitted to a few hundred draws may not, and the
estimate is then biased with an understated error. When either of the bridge's sums rests on
fewer than ``MIN_OVERLAP`` effective draws its error is not reported
(:func:`bnmfzoo.inference.bridge.bridge_log_z`) and the mode fails ("no overlap"): an
infinite error would otherwise agree with any SMC ``log Z``.

References
----------
Meng, X.-L. & Wong, W. H. (1996). Simulating ratios of normalizing constants via a simple
identity. Statistica Sinica 6, 831-860.
Fruhwirth-Schnatter, S. (2004). Estimating marginal likelihoods for mixture and Markov switching
models using bridge sampling techniques. Econometrics Journal 7, 143-167.
Box, G. E. P. & Cox, D. R. (1964). An analysis of transformations. J. R. Statist. Soc. B 26,
211-252.
Lee, D. D. & Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
"""

import math
import time

import numpy as np
from scipy.special import gammaln, logsumexp

from bnmfzoo.diagnostics._modes.mode_clustering import _aligned_mean, _unit_l2, matched_angles
from bnmfzoo.inference._mass_budget import budget_left
from bnmfzoo.inference._mass_verdict import LOG_Z_SLACK, MAX_LEFT, check_reasons  # noqa: F401
from bnmfzoo.inference.bridge import split_fit_bridge

__all__ = ["bridge_masses", "bridge_parametrisation", "chain_starts", "masses_from_log_z",
           "sized_draws"]

#: rows of the proposal draws evaluated at once (memory: this x observed entries doubles)
_CHUNK = 64
#: CPU seconds of sweeps per mode beyond which the dimension-sized draws are not raised
MAX_SIZED_SWEEP_S = 60.0
#: count models' mode search: KL-refined prior draws made per search and KL updates each; the 8 best
#: (by log joint) start the plain chains (:func:`chain_starts`). Measured on Reuters 200 x 100,
#: rank 3, seeds 0-19: the heaviest mode was reached by 20 of 20 searches against 7 of 20 from
#: prior draws, for 3.1 CPU s per search against 0.4 (``docs/results/masses_default_route_2.md``
#: 11.9)
KL_CANDIDATES = 128
KL_ITER = 200


def _chunked(fn, theta):
    theta = np.atleast_2d(theta)
    return np.concatenate([fn(theta[i:i + _CHUNK]) for i in range(0, theta.shape[0], _CHUNK)])


class _Param:
    """An unconstrained parametrisation of a family's (aligned) state and its log joint."""

    name = ""
    offset = 0.0  # log evidence - (the SMC's log Z)
    rank = 1
    warp = False  # Box-Cox warp and draws sized by dimension (module docstring)
    dim = 0  # unconstrained dimensions (used when ``warp``)

    def theta(self, state, perm, rng):  # pragma: no cover - interface
        raise NotImplementedError

    def log_joint(self, theta):  # pragma: no cover - interface
        raise NotImplementedError


def _symmetric(name, *arrays, axis):
    for a in arrays:
        a = np.asarray(a, float)
        if a.ndim and a.shape[axis] > 1 and not np.allclose(a, np.take(a, [0], axis=axis)):
            raise ValueError(f"bridge sampling per mode needs the same prior for every "
                             f"component ({name} differs between components)")


class _GaussianParam(_Param):
    name = "exponential_gaussian"

    def __init__(self, obs, hyper, rank):
        self.rows, self.cols, self.x = obs.rows, obs.cols, obs.values
        self.D, self.N = obs.shape
        self.K = self.rank = rank
        self.h = hyper
        self.free_tau = hyper.sigma is None

    def theta(self, state, perm, rng):
        A, W = np.asarray(state.A)[:, perm], np.asarray(state.W)[perm]
        out = [np.log(A).ravel(), np.log(W).ravel()]
        if self.free_tau:
            out.append([math.log(state.tau)])
        return np.concatenate(out)

    def _one(self, th):
        D, N, K, h = self.D, self.N, self.K, self.h
        m = th.shape[0]
        lA, lW = th[:, :D * K].reshape(m, D, K), th[:, D * K:(D + N) * K].reshape(m, K, N)
        A, W = np.exp(lA), np.exp(lW)
        pred = np.einsum("mek,mke->me", A[:, self.rows, :], W[:, :, self.cols])
        sse = np.sum((self.x - pred) ** 2, axis=1)
        n = self.x.size
        out = (D * K * math.log(h.lambda_A) - h.lambda_A * A.sum((1, 2)) + lA.sum((1, 2))
               + N * K * math.log(h.lambda_W) - h.lambda_W * W.sum((1, 2)) + lW.sum((1, 2)))
        if self.free_tau:
            lt = th[:, -1]
            tau = np.exp(lt)
            a, b = h.alpha_tau, h.beta_tau
            out = out + a * math.log(b) - gammaln(a) + a * lt - b * tau  # Gamma + Jacobian
        else:
            tau = 1.0 / h.sigma ** 2
            lt = math.log(tau)
        return out + 0.5 * n * (lt - math.log(2 * math.pi)) - 0.5 * tau * sse

    def log_joint(self, theta):
        with np.errstate(over="ignore", invalid="ignore"):
            v = _chunked(self._one, theta)
        return np.where(np.isnan(v), -np.inf, v)


class _CountParam(_Param):
    def __init__(self, problem):
        from bnmfzoo.inference.counts._problem import log_likelihood

        if problem.rates:
            raise ValueError("bridge sampling per mode needs constant prior rates (the model "
                             "has rate variables)")
        _symmetric("the Gamma prior of A", problem.aA, problem.bA, axis=1)
        _symmetric("the Gamma prior of W", problem.aW, problem.bW, axis=0)
        self.problem, self._ll = problem, log_likelihood
        self.name = problem.family
        self.D, self.N = problem.shape
        self.K = self.rank = problem.rank
        self.free_alpha = problem.alpha_prior is not None
        self.warp = self.name == "negative_binomial"
        self.dim = (self.D + self.N) * self.K + int(self.free_alpha)

    def theta(self, state, perm, rng):
        out = [np.log(state["A"][:, perm]).ravel(), np.log(state["W"][perm]).ravel()]
        if self.free_alpha:
            out.append([math.log(state["alpha"])])
        return np.concatenate(out)

    @staticmethod
    def _gamma(lx, a, b):
        return np.sum(a * np.log(b) - gammaln(a) + a * lx - b * np.exp(lx))  # with Jacobian

    def _one(self, th):
        p, D, N, K = self.problem, self.D, self.N, self.K
        lA, lW = th[:D * K].reshape(D, K), th[D * K:(D + N) * K].reshape(K, N)
        out = self._gamma(lA, p.aA, p.bA) + self._gamma(lW, p.aW, p.bW)
        alpha = p.alpha
        if self.free_alpha:
            out += self._gamma(th[-1], *p.alpha_prior)
            alpha = math.exp(th[-1])
        A, W = np.exp(lA), np.exp(lW)
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(W)) and np.all(A > 0)
                and np.all(W > 0)):
            return -np.inf
        return out + float(self._ll(p, {"A": A, "W": W, "alpha": alpha, "rates": {}}))

    def log_joint(self, theta):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            v = np.array([self._one(t) for t in np.atleast_2d(theta)])
        return np.where(np.isnan(v), -np.inf, v)


class _BetaDirParam(_Param):
    """Beta-Dir on the factors (not the labels).

    ``A`` rows by additive log-ratio (last component the reference; Jacobian ``prod_k A_dk``),
    ``W`` by logit (``w (1 - w)``). Aligned draws are exact conditional draws of ``(A, W)``
    given a chain's labels.
    """

    name = "beta_dir"

    def __init__(self, rows, cols, v, shape, hyper):
        self.rows, self.cols, self.v = rows, cols, np.asarray(v, float)
        self.D, self.N = shape
        self.g = np.asarray(hyper.gamma, float)
        self.a, self.b = np.asarray(hyper.alpha, float), np.asarray(hyper.beta, float)
        self.K = self.rank = self.g.size
        _symmetric("the Dirichlet and Beta priors", self.g, self.a, self.b, axis=0)
        self.offset = self.rows.size * math.log(self.K)  # the SMC's p0: uniform labels

    def theta(self, state, perm, rng):
        A = np.vstack([rng.dirichlet(state.g + state.L[d]) for d in range(self.D)])
        W = rng.beta(state.a + state.C1, state.b + state.C0).T  # (K, N)
        A, W = np.maximum(A[:, perm], 1e-300), np.clip(W[perm], 1e-300, 1 - 1e-16)
        return np.concatenate([(np.log(A[:, :-1]) - np.log(A[:, -1:])).ravel(),
                               (np.log(W) - np.log1p(-W)).ravel()])

    def _one(self, th):
        D, N, K = self.D, self.N, self.K
        m = th.shape[0]
        y = np.concatenate([th[:, :D * (K - 1)].reshape(m, D, K - 1), np.zeros((m, D, 1))], 2)
        lA = y - logsumexp(y, axis=2, keepdims=True)
        u = th[:, D * (K - 1):].reshape(m, K, N)
        lW, l1W = -np.logaddexp(0.0, -u), -np.logaddexp(0.0, u)
        g, a, b = self.g, self.a[:, None], self.b[:, None]
        out = (D * (gammaln(g.sum()) - gammaln(g).sum()) + np.einsum("mdk,k->m", lA, g)
               + np.sum((gammaln(a + b) - gammaln(a) - gammaln(b)) * np.ones((K, N)))
               + np.sum(a * lW + b * l1W, axis=(1, 2)))  # Jacobians: prod A, w (1 - w)
        p = np.einsum("mek,mke->me", np.exp(lA)[:, self.rows, :], np.exp(lW)[:, :, self.cols])
        p = np.clip(p, 1e-300, 1.0 - 1e-16)
        return out + np.sum(self.v * np.log(p) + (1 - self.v) * np.log1p(-p), axis=1)

    def log_joint(self, theta):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            v = _chunked(self._one, theta)
        return np.where(np.isnan(v), -np.inf, v)


def bridge_parametrisation(model, family):
    """The unconstrained parametrisation and log joint of a recognized model's family."""
    if family.name == "exponential_gaussian":
        from bnmfzoo.inference.gaussian.gibbs._core import observed_entries
        from bnmfzoo.models._spec import get_spec

        spec = get_spec(model, families="exponential_gaussian", method="bridge_masses")
        return _GaussianParam(observed_entries(spec.X, spec.mask), spec.hyper, spec.rank)
    if family.name in ("poisson", "negative_binomial"):
        return _CountParam(family.tempered.problem)
    if family.name == "beta_dir":
        from bnmfzoo.inference.binary._recognized import binary_spec
        from bnmfzoo.inference.binary.collapsed_gibbs import spec_entries

        spec = binary_spec(model, families=("beta_dir",), method="bridge_masses")
        rows, cols, v, shape = spec_entries(spec)
        return _BetaDirParam(rows, cols, v, shape, spec.hyper)
    raise ValueError(f"bridge sampling per mode does not support {family.name!r}")


def masses_from_log_z(log_z, se):
    """Masses ``Z_k / sum Z_j`` and their delta-method errors from independent ``log Z_k``.

    Examples
    --------
    >>> m, s = masses_from_log_z([0.0, np.log(3.0)], [0.1, 0.1])
    >>> m.round(3).tolist(), s.round(4).tolist()
    ([0.25, 0.75], [0.0265, 0.0265])
    """
    lz, se = np.asarray(log_z, float), np.asarray(se, float)
    m = np.exp(lz - logsumexp(lz))
    # d m_k / d log Z_j = m_k (delta_kj - m_j)
    J = np.diag(m) - np.outer(m, m)
    return m, np.sqrt(np.maximum((J ** 2) @ (se ** 2), 0.0))


def bridge_masses(family, param, refs, starts, rng, *, cut, n_chains=4, n_draws=400, thin=2,
                  n_burn=50, align=True):
    """Per-mode evidence by bridge sampling and the masses it implies.

    Parameters
    ----------
    family : object
        ``tempered`` (the family's :class:`~bnmfzoo.inference.tempering.TemperedSweep`, run at
        ``beta = 1``) and ``factors(state) -> (A, W)``.
    param : object
        ``theta(state, perm, rng)`` and ``log_joint(theta)`` (:func:`bridge_parametrisation`).
    refs : numpy.ndarray
        ``(M, D, K)`` unit-l2 representatives of the modes.
    starts : list of list
        Per mode, the states to start its chains from (cycled if fewer than ``n_chains``).
    rng : numpy.random.Generator
    cut : float
        Max matched angle (degrees) beyond which a draw has left its mode.
    n_chains, n_draws, thin, n_burn : int
        Chains per mode, kept draws per chain (raised by :func:`sized_draws` for a ``param``
        with ``warp``), sweeps between kept draws, sweeps discarded.
    align : bool
        Permute each draw's components to its mode's representative (False only for a
        posterior without separated copies, e.g. a rank-1 or an exchangeable toy).

    Returns
    -------
    dict
        ``log_z``, ``log_z_se`` (per mode, one copy), ``mass``, ``se``, ``left`` (share of
        draws that left their mode), ``tau``, ``log_z_total`` and ``log_z_total_se``
        (``log K! + logsumexp(log_z)`` minus the family's offset: the quantity the SMC's
        ``log_z`` estimates), ``cpu_s``.
    """
    t0 = time.process_time()
    M = refs.shape[0]
    lz, se, left, taus = np.zeros(M), np.zeros(M), np.zeros(M), np.zeros(M)
    used = np.zeros(M, int)  # kept draws per chain
    into = np.zeros((M, M))  # share of mode k's draws within the cut of mode j (j != k)
    warp = bool(getattr(param, "warp", False))
    for k in range(M):
        thetas, chain_of, n_left = [], [], 0
        draws = n_draws
        for c in range(n_chains):
            s = family.tempered.copy(starts[k][c % len(starts[k])])
            tb = time.process_time()
            for _ in range(n_burn):
                family.tempered.sweep(s, 1.0, rng)
            if warp and c == 0:
                cap_s = min(MAX_SIZED_SWEEP_S, max(budget_left(), 0.0) / (M - k))
                draws = sized_draws(param.dim, n_chains, n_draws, thin,
                                    (time.process_time() - tb) / max(n_burn, 1), cap_s)
            used[k] = draws
            for _ in range(draws):
                for _ in range(thin):
                    family.tempered.sweep(s, 1.0, rng)
                if align:
                    A = np.asarray(family.factors(s)[0], float)
                    dist, perm = matched_angles(_unit_l2(A[None]), refs)
                    if dist[0, k] > cut:
                        n_left += 1
                        j = int(np.argmin(dist[0]))
                        if dist[0, j] <= cut:
                            into[k, j] += 1.0 / (n_chains * draws)
                        continue
                    perm = perm[0, k]
                else:
                    perm = np.arange(param.rank)
                thetas.append(param.theta(s, perm, rng))
                chain_of.append(c)
        left[k] = n_left / (n_chains * draws)
        if len(thetas) < 8:
            lz[k], se[k], taus[k] = -np.inf, math.inf, math.nan
            continue
        try:
            est = split_fit_bridge(np.array(thetas), param.log_joint, rng,
                                   chain_of=np.array(chain_of), warp=warp)
        except (RuntimeError, np.linalg.LinAlgError, ValueError):
            lz[k], se[k], taus[k] = -np.inf, math.inf, math.nan
            continue
        if not math.isfinite(est.se):  # no overlap: no error bar, so no estimate to check
            lz[k], se[k], taus[k] = -np.inf, math.inf, est.tau
            continue
        lz[k], se[k], taus[k] = est.log_z, est.se, est.tau
    out = _bridge_summary(lz, se, param.rank if align else 0, param.offset)
    out.update(left=left, tau=taus, into=into, draws_per_chain=used,
               cpu_s=time.process_time() - t0)
    return out


def sized_draws(dim, n_chains, n_draws, thin, sweep_s, cap_s=MAX_SIZED_SWEEP_S):
    """Kept draws per chain for a warped bridge in ``dim`` dimensions (module docstring).

    ``max(n_draws, ceil(dim (dim + 1) / (8 n_chains)))``, lowered (not below ``n_draws``) so
    that ``n_chains x draws x thin`` sweeps of ``sweep_s`` CPU seconds take at most ``cap_s``
    (:func:`bridge_masses` passes :data:`MAX_SIZED_SWEEP_S` or, when less, the CPU budget left
    shared among the modes still to estimate).

    Examples
    --------
    >>> sized_draws(226, 4, 500, 2, 0.0008)
    1604
    >>> sized_draws(226, 4, 500, 2, 0.01)  # slow sweeps: 4 x 750 x 2 sweeps take the 60 s
    750
    """
    want = max(int(n_draws), math.ceil(dim * (dim + 1) / (8 * n_chains)))
    cap = int(cap_s / max(sweep_s * n_chains * thin, 1e-12))
    return max(int(n_draws), min(want, cap))


def _bridge_summary(lz, se, rank, offset):
    """Masses, their errors and the total ``log Z`` of per-mode bridge estimates.

    ``lz`` +- ``se`` per mode (non-finite: failed, mass 0); the total is ``log rank! +
    logsumexp(lz) - offset``.
    """
    lz, se = np.asarray(lz, float), np.asarray(se, float)
    ok = np.isfinite(lz)
    mass, mse = np.zeros(lz.size), np.full(lz.size, math.nan)
    if ok.any():
        mass[ok], mse[ok] = masses_from_log_z(lz[ok], se[ok])
    copies = float(gammaln(rank + 1)) if rank else 0.0
    log_ev = (copies + float(logsumexp(lz[ok])) - offset if ok.any() else -math.inf)
    log_ev_se = (float(math.sqrt(np.sum((mass[ok] * se[ok]) ** 2))) if ok.any() else math.inf)
    return {"log_z": lz, "log_z_se": se, "mass": mass, "se": mse, "log_z_total": log_ev,
            "log_z_total_se": log_ev_se}


def transient_prior_modes(left, into, K):
    """Prior-chain modes that are transients of an SMC mode: ``[(k, j)]``.

    Modes ``k >= K`` (found only by plain chains from the prior) that their own bridge chains
    left (more than ``1 - MAX_LEFT`` of the draws) for mode ``j < K`` (most of
    their draws within the cut of ``j``'s representative): a prior chain still on its way
    into mode ``j`` after its sweeps, not a mode. Such a "mode" holds none of its chains, so
    no evidence of its own; its chains' draws are mode ``j``'s (whose own estimate counts
    them), so it is joined to ``j`` rather than failing the check.

    Examples
    --------
    >>> into = np.zeros((3, 3)); into[2, 0] = 0.9
    >>> transient_prior_modes([0.0, 0.0, 1.0], into, 2)
    [(2, 0)]
    >>> transient_prior_modes([0.0, 0.0, 0.5], into, 2)  # a mode that holds half its chains
    []
    """
    out = []
    for k in range(K, len(left)):
        j = int(np.argmax(into[k]))
        if left[k] > 1.0 - MAX_LEFT and j < K and into[k, j] > 0.5:
            out.append((k, j))
    return out


def chain_starts(family, rng, n_chains, *, n_candidates=KL_CANDIDATES, n_kl=KL_ITER):
    """Where the mode search's plain chains start: ``n_chains`` states.

    Count families (Poisson, negative binomial) with constant prior rates: ``n_candidates``
    exact prior draws (the NB's dispersion as drawn), each moved
    by ``n_kl`` KL multiplicative updates (:func:`bnmfzoo.inference.counts._kl_start.kl_nmf_start`;
    Lee & Seung 2001, with the prior's density on ``log x``), and the ``n_chains`` of them with
    the highest log joint (of ``log A, log W``, as the per-mode estimators' :class:`_CountParam`)
    start the chains (on Reuters 200 x 100, rank 3: 2.7 CPU s for 128 x 200 updates). Other
    families, priors that differ between components, or ``n_candidates < n_chains``: exact
    prior draws, drawn lazily (a generator), so
    each is drawn when its chain starts, after the previous chain's sweeps: the random numbers
    of the search before KL starts existed. The
    starts only *find* modes; every mode found is then estimated by the per-mode estimators from
    its own chains, so how a start was made biases no mass (a mode never reached stays unknown).
    """
    fam_name = getattr(family, "name", "")
    problem = getattr(getattr(family, "tempered", None), "problem", None)
    param = None
    if (fam_name in ("poisson", "negative_binomial") and problem is not None
            and not getattr(problem, "rates", None) and n_candidates >= n_chains):
        try:
            param = _CountParam(problem)
        except ValueError:  # priors that differ between components: no log joint to rank by
            param = None
    if param is None:
        return (family.draw_prior(rng) for _ in range(n_chains))
    from bnmfzoo.inference._mass_budget import check_budget
    from bnmfzoo.inference.counts._kl_start import kl_nmf_start

    cand = []
    for _ in range(n_candidates):
        check_budget()  # inside a CPU budget the cap holds here too
        cand.append(kl_nmf_start(problem, family.draw_prior(rng), n_iter=n_kl))
    lj = param.log_joint(np.stack([param.theta(s, np.arange(param.rank), None) for s in cand]))
    return [cand[i] for i in np.argsort(-lj, kind="stable")[:n_chains]]


def prior_chain_modes(family, refs, cut, rng, *, n_chains=8, n_sweeps=300, n_keep=50,
                      n_candidates=KL_CANDIDATES, n_kl=KL_ITER):
    """Plain chains (``beta = 1``) from (KL-refined) prior draws: modes the references lack.

    The chains start from :func:`chain_starts` (count models: the best ``n_chains`` of
    ``n_candidates`` prior draws moved by ``n_kl`` KL updates; otherwise exact prior draws).

    Each chain is summarised by its **aligned mean**: the bases of up to ``n_keep`` states of
    its second half (every ``step``-th sweep, the last one included), unit-l2, aligned to the
    chain's end state and averaged (:func:`~bnmfzoo.diagnostics._modes.mode_clustering.
    _aligned_mean`, two refinements). A single state is one noisy draw of its mode: in a broad
    mode it lies several degrees from the mode's mean, and two single draws of one mode lie
    about ``sqrt(2)`` times that apart, so comparing end states made one mode look like two.
    The chain means are compared with ``refs`` (max matched angle, degrees); means farther than
    ``cut`` from every reference are grouped greedily into new modes, each represented by the
    aligned mean of its chains' means. No random numbers are drawn beyond the chains' own.

    Returns
    -------
    tuple
        ``(new refs (m, D, K), their end states (list of lists: the chains' starts for the
        per-mode estimators), nearest-reference index of every chain (-1: new), cpu
        seconds)``.
    """
    t0 = time.process_time()
    keep_from = n_sweeps // 2
    step = max(1, -(-(n_sweeps - keep_from) // max(1, n_keep)))
    ends, means = [], []
    for s in chain_starts(family, rng, n_chains, n_candidates=n_candidates, n_kl=n_kl):
        kept = []
        for i in range(n_sweeps):
            family.tempered.sweep(s, 1.0, rng)
            if i >= keep_from and (n_sweeps - 1 - i) % step == 0:
                kept.append(np.array(family.factors(s)[0], float))
        if not kept:
            kept = [np.array(family.factors(s)[0], float)]
        ends.append(s)
        U = _unit_l2(np.stack(kept))
        means.append(_aligned_mean(U, np.ones(len(kept)), U[-1], 2))
    U = np.stack(means)
    near = np.full(U.shape[0], -1)
    if refs.shape[0]:  # no references yet: every chain's mean is new
        dist, _ = matched_angles(U, refs)
        near = np.where(dist.min(1) <= cut, dist.argmin(1), -1)
    new_refs, new_states, members = [], [], []
    for i in np.flatnonzero(near < 0):
        if new_refs:
            d, _ = matched_angles(U[i:i + 1], np.stack(new_refs))
            if d.min() <= cut:
                j = int(d.argmin())
                new_states[j].append(ends[i])
                members[j].append(U[i])
                new_refs[j] = _aligned_mean(np.stack(members[j]), np.ones(len(members[j])),
                                            members[j][0], 2)
                continue
        new_refs.append(U[i])
        new_states.append([ends[i]])
        members.append([U[i]])
    D, K = U.shape[1:]
    return (np.stack(new_refs) if new_refs else np.zeros((0, D, K)), new_states, near,
            time.process_time() - t0)


def mode_starts(states, label, weights, k, n):
    """Up to ``n`` members of mode ``k`` to start its chains from, heaviest first."""
    idx = np.flatnonzero(label == k)
    idx = idx[np.argsort(-weights[idx], kind="stable")]
    return [states[i] for i in idx[:n]]


def check_modes(family, states, label, weights, clusters, rng, n_chains, prior_chains,
                prior_sweeps):
    """``(refs, starts, near, prior CPU s)`` of the modes a per-mode check estimates.

    The SMC from the prior's modes (``clusters["reference"]``, ``K`` of them) first, each
    started from its heaviest members (:func:`mode_starts`), then the modes ``prior_chains``
    plain chains from prior draws found (:func:`prior_chain_modes`; ``near``: where each chain
    ended, ``None`` without them). Shared by the bridge, reference and per-mode checks.
    """
    refs, cut = clusters["reference"], clusters["cut"]
    new_refs, new_states, near, prior_cpu = (np.zeros((0,) + refs.shape[1:]), [], None, 0.0)
    if prior_chains:
        new_refs, new_states, near, prior_cpu = prior_chain_modes(
            family, refs, cut, rng, n_chains=prior_chains, n_sweeps=prior_sweeps)
    starts = [mode_starts(states, label, weights, k, n_chains)
              for k in range(refs.shape[0])] + new_states
    return np.concatenate([refs, new_refs]), starts, near, prior_cpu


def bridge_check(model, family, states, label, weights, clusters, log_z, log_z_se, rng, *,
                 n_chains=4, n_draws=300, thin=2, prior_chains=8, prior_sweeps=300):
    """The per-mode bridge check of :func:`bnmfzoo.inference.smc_mode_masses`.

    Returns ``(mass (K,), se (K,), extra [(mass, se) of modes only plain chains from the
    prior found], reasons [why not established], details dict)``; the masses are normalized
    over the SMC's modes and the extra ones together.
    """
    K = clusters["reference"].shape[0]
    nan = np.full(K, math.nan)
    try:
        param = bridge_parametrisation(model, family)
    except ValueError as err:
        return nan, nan, [], [f"the bridge check is not available: {err}"], None
    cut = clusters["cut"]
    all_refs, starts, near, prior_cpu = check_modes(family, states, label, weights, clusters,
                                                    rng, n_chains, prior_chains, prior_sweeps)
    out = bridge_masses(family, param, all_refs, starts, rng, cut=cut,
                        n_chains=n_chains, n_draws=n_draws, thin=thin)
    joined = transient_prior_modes(out["left"], out["into"], K)
    if joined:  # drop them: their chains went into an SMC mode, whose estimate holds them
        keep = np.setdiff1d(np.arange(len(out["left"])), [k for k, _ in joined])
        out.update(_bridge_summary(out["log_z"][keep], out["log_z_se"][keep], param.rank,
                                   param.offset))
        out.update(left=out["left"][keep], tau=out["tau"][keep], into=out["into"][keep][:, keep],
                   draws_per_chain=out["draws_per_chain"][keep])
    reasons = check_reasons("bridge", out["log_z"], out["left"], out["log_z_total"],
                            out["log_z_total_se"], log_z, log_z_se,
                            failed="too few draws in the mode, or no overlap",
                            left_what="bridge draws")
    details = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    details.update(prior_chains=prior_chains, prior_ends_in_smc_modes=(
        None if near is None else int(np.sum(near >= 0))), prior_cpu_s=prior_cpu,
        n_chains=n_chains, n_draws=n_draws, thin=thin, joined_prior_modes=joined)
    extra = list(zip(out["mass"][K:].tolist(), out["se"][K:].tolist(), strict=True))
    return out["mass"][:K], out["se"][:K], extra, reasons, details
