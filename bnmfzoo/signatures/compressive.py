"""The posterior over the number of signatures from one overfitted run: a compressive prior.

Model (Zito & Miller 2024): signatures ``T_k ~ Dirichlet(alpha)`` (columns of the D x K_max
matrix ``T``), exposures ``V_kn | mu_k ~ Gamma(a, a / mu_k)`` (shape, rate: mean ``mu_k``),
``Y_dn ~ Poisson((T V)_dn)``, and the per-signature exposure scale

    mu_k ~ InvGamma(a N + 1, epsilon a N)        (shape, scale; N samples)

whose prior mean is ``epsilon``. The shape grows with the number of samples, so a signature the
data do not need is *compressed*: its ``mu_k`` stays near ``epsilon`` (mutations per sample,
0.001 by default) and it explains essentially no mutation, while a signature the data use has
``mu_k`` of the order of its mean exposure. Zito & Miller show that the number of such active
components then estimates the number of signatures (their Theorem 1 and simulations). The
Gibbs sweep is the latent-source sweep of :mod:`bnmfzoo.signatures._gibbs` with one conjugate
step more, ``mu_k | V ~ InvGamma(a N + 1 + a N, epsilon a N + a sum_n V_kn)``. With
``likelihood="nb"`` the counts are negative binomial, ``Y_dn ~ Poisson(theta_dn (T V)_dn)``,
``theta_dn ~ Gamma(phi, phi)``, one ``phi`` sampled with the rest (the kernel's docstring):
extra-Poisson variance then goes to ``theta``, not to extra active signatures. With
``a="random"`` the shape ``a`` is learned, ``a ~ Gamma(1, 1)`` as in the authors' package
(``CompressiveNMF_randa``), ``mu_k``'s prior following the current ``a``
(:mod:`bnmfzoo.signatures._shape`): a smaller ``a`` spreads a signature's exposures more and
charges less for an active signature.

**A compression strength apart from the exposures' shape.** In Zito & Miller's prior the one
``a`` is both the exposures' shape and the compression. With ``strength=c`` the scales' prior is
``mu_k ~ InvGamma(c N + 1, epsilon c N)`` (prior mean still ``epsilon``) while the exposures
stay ``Gamma(a, a / mu_k)``; the conjugate step becomes ``mu_k | V ~ InvGamma(c N + 1 + a N,
epsilon c N + a sum_n V_kn)`` (the product of ``N`` Gamma likelihoods ``(a / mu)^a e^(-a V_n /
mu)`` and the prior ``mu^-(c N + 2) e^(-epsilon c N / mu)``). ``c = a`` is their model.

*What ``c`` charges.* Integrating ``mu_k`` out, a signature's exposures ``V_k`` (sum ``S = N
m``: ``m`` its mean mutations per sample) have the prior density

    p_c(V_k) = prod_n [a^a V_kn^(a-1) / Gamma(a)] * beta^alpha Gamma(a N + alpha)
               / (Gamma(alpha) (a S + beta)^(a N + alpha)),    alpha = c N + 1, beta = epsilon c N.

Against a plain ``Gamma(a, a / m)`` prior at the scale that suits it best (what a fixed-rank
model with the same exposures' shape pays), the compressive prior charges this signature

    log p_plain(V_k) - log p_c(V_k) = -alpha log beta - lgamma(a N + alpha) + lgamma(alpha)
                                      + (a N + alpha) log(a S + beta) - a N log m - a N

nats (exact, :func:`compression_charge`); the exposures' own values cancel, so it depends on
them only through ``m``. By Stirling's formula, for ``epsilon c N << a S``,

    charge ≈ c N [log(m / epsilon) - (1 + a / c) log(1 + c / a)] + log(a m / (c epsilon))
             - log(1 + a / c) / 2,

that is ``a N (log(m / epsilon) - 1.39)`` at ``c = a`` (about 1,000 nats for ``N = 100``,
``m = 100``) and ``c N (log(m / epsilon) - 1) + log(a m / (c epsilon))`` for ``c << a``. An
unused signature (``m`` near ``epsilon``) is not charged. The charge is what ``c`` adds to the
log prior odds against each active signature; it grows like ``N`` at a fixed ``c``, so the
implied prior over ``K`` gets sharper with the cohort's size whatever the data say.
``c = n0 / N`` fixes the prior's worth at ``n0`` samples and the charge at about ``n0
(log(m / epsilon) - 1) + log(a m N / (n0 epsilon))`` nats, the same at every cohort size;
``n0 = 1`` (``c = 1 / N``) is the unit-information choice (Kass & Wasserman 1995): with
``epsilon = 0.001`` and ``m`` from 10 to 1,000 mutations per sample, about 19-31 nats at ``N``
from 20 to 2,000, against 165-25,000 at ``c = a = 1``.

**Active signatures.** In each kept draw, signature ``k`` is active when ``mu_k > c epsilon``
with ``c = 1.5``: the paper's cutoff (``cutoff_excluded = 1.5 epsilon``), applied per draw
instead of to the posterior mean, so that every draw has a number of active signatures
``K_g``. The two scales are far apart (an unused signature's ``mu_k`` has a relative spread of
about ``1 / sqrt(2 a N)`` around ``epsilon``; a used one's is its exposure, hundreds of
mutations), so the count does not depend on ``c`` anywhere between about 1.5 and 100. That
holds for ``a N`` in the tens or more. A learned ``a`` can be far smaller (sparse exposures,
where many samples lack a signature, give ``a`` of 0.05 or less), and then an unused
signature's ``mu_k``, which follows its prior ``InvGamma(a N + 1, epsilon a N)``, often exceeds
``1.5 epsilon`` (with ``a N = 1``, in 14 % of draws). With ``a="random"`` the cutoff of each
draw is therefore ``max(1.5, t) epsilon``, ``t`` the ``1 - ACTIVE_TAIL`` quantile of
``mu_k / epsilon`` under that prior at the draw's ``a`` (``ACTIVE_TAIL = 0.001``: an unused
signature is counted active in 0.1 % of draws; ``t`` is 1.4 at ``a N = 100``, 22 at ``a N =
1``).

**P(K | data)** is the fraction of kept draws, pooled over ``n_chains`` chains from different
starts, with ``K_g = K``. Its Monte-Carlo error is that of the mean of the indicator series
``[K_g = K]``: ``sqrt(p (1 - p) / ESS)`` with ``ESS`` the multi-chain effective sample size
(Vehtari et al. 2021, ``arviz_stats.ess(method="mean")``), which falls when the chains
disagree; the interval is Wilson's score interval with ``ESS`` as the number of trials. A rank
that no draw visits gets no point estimate (NaN, never 0) but the upper bound
``1 - (1 - level) ** (1 / ESS)`` (zero successes in ``ESS`` trials). The probability is under
the compressive prior's implied prior over ``K``, not a uniform prior over the ranks.

**Signatures at the most probable K**: the draws with exactly that many active signatures, each
reduced to its active columns, aligned across draws and chains by
:func:`bnmfzoo.signatures.assignment.align_draws`.

**A prior informed by a reference catalogue** (``reference=``; Zito & Miller 2024's informative
version). The first ``H`` signatures are centred on the reference's columns ``s_h``, ``T_h ~
Dirichlet(beta_h s_h)`` (entries below ``1e-10`` raised to it, as the authors' package does),
and ``n_novel`` more are de novo, ``T_k ~ Dirichlet(alpha)``; all ``K_max = H + n_novel``
share the compressive prior on the exposures' scales, so that reference signatures the data do
not use are compressed away like unused de novo ones. ``beta_h`` is the authors' choice: the
concentration at which the median cosine similarity between a draw of ``Dirichlet(beta_h s_h)``
and ``s_h`` is 0.975 (:func:`reference_concentration`; a few hundred for flat signatures,
thousands for peaked ones). The chains start from a draw of the prior (every ``mu_k`` near
``epsilon``), as the authors' sampler does (their prior swap in the burn-in is not done). The
active count per draw is then the number of active reference *and* de novo signatures, and
``P(K)`` is its distribution under this prior: a statement about how many signatures of the
reference (or new ones) the data use, given that the catalogue's signatures are presumably
close to the reference's. Measured on synthetic cohorts of 100 genomes drawn from COSMIC v3.4
(the reference given): it does not identify a ninth, co-occurring signature that the de novo
prior misses either (SBS7a merged with SBS7b), a signature left out of the reference is taken
up by a de novo one, and the chains disagree on the active count more often than the de novo
prior's at the same sweeps; ten times the concentrations puts the ninth in some chains but not
in all. So it is an option, not the default.

References
----------
Zito, A. and Miller, J. W. (2024). Compressive Bayesian non-negative matrix factorization for
mutational signatures analysis. arXiv:2404.10974.
Kass, R. E. and Wasserman, L. (1995). A reference Bayesian test for nested hypotheses and its
relationship to the Schwarz criterion. Journal of the American Statistical Association 90,
928-934.
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC. Bayesian
Analysis 16, 667-718.
"""

import math

import numpy as np
import pandas as pd
from scipy.stats import norm

from bnmfzoo.signatures import _gibbs, _shape
from bnmfzoo.signatures.screen import _kl_start

__all__ = ["compressive_rank_posterior", "active_counts", "rank_table", "ACTIVE_MULTIPLE",
           "ACTIVE_TAIL", "active_cutoffs", "compression_charge", "counts_rhat", "RHAT_LIMIT",
           "reference_concentration", "reference_alpha"]

#: a signature is active in a draw when its exposure scale mu_k exceeds this times epsilon
ACTIVE_MULTIPLE = 1.5
#: with a random shape a, also above the (1 - ACTIVE_TAIL) prior quantile of mu_k at that a
ACTIVE_TAIL = 1e-3
#: R-hat of the active counts above which the note says the chains have not converged
RHAT_LIMIT = 1.05
#: Zito & Miller's target: the median cosine between a draw of a reference signature's prior
#: and the reference signature
REFERENCE_COSINE = 0.975
#: entries of a reference signature's Dirichlet parameter below this are raised to it
ALPHA_FLOOR = 1e-10
_BETA_CACHE = {}


def _reference_matrix(reference, n_channels=None):
    """The reference (channels, H) as float64 with columns summing to 1, checked."""
    S = np.array(reference, dtype=float)
    if S.ndim != 2 or S.shape[1] < 1 or (n_channels is not None and S.shape[0] != n_channels):
        want = "channels" if n_channels is None else f"{n_channels} channels"
        raise ValueError(f"reference must be ({want}, signatures), got shape {S.shape}")
    if not (np.isfinite(S).all() and (S >= 0).all() and (S.sum(axis=0) > 0).all()):
        raise ValueError("reference must be finite and non-negative, every column with mass")
    return S / S.sum(axis=0, keepdims=True)


def _median_cosine(S, beta, n_draws, seed):
    """Median over ``n_draws`` draws of ``Dirichlet(beta_h s_h)`` of their cosine with ``s_h``."""
    rng = np.random.default_rng(seed)
    A = np.maximum(beta[None, :] * S, ALPHA_FLOOR)
    G = rng.standard_gamma(np.broadcast_to(A, (n_draws,) + A.shape))
    cos = (G * S).sum(axis=1) / (np.linalg.norm(G, axis=1) * np.linalg.norm(S, axis=0))
    return np.median(cos, axis=0)


def reference_concentration(reference, target=REFERENCE_COSINE, n_draws=100, seed=0):
    """Zito & Miller's ``beta_h`` for each column ``s_h`` of ``reference`` (channels, H).

    The concentration at which the median cosine similarity between a draw of
    ``Dirichlet(beta_h s_h)`` and ``s_h`` is ``target`` (0.975, the authors' choice for the
    COSMIC priors of their package; ``n_draws`` = 100 draws as theirs), found by bisection on
    ``log beta`` in ``[1, 1e6]`` with the same random numbers at every step (so the result is
    a function of ``reference`` and ``seed``); memoized.

    Examples
    --------
    >>> S = np.random.default_rng(0).dirichlet(np.full(96, 0.3), size=2).T
    >>> beta = reference_concentration(S)
    >>> (abs(_median_cosine(S, beta, 100, 0) - 0.975) < 1e-3).tolist()
    [True, True]
    """
    S = _reference_matrix(reference)
    key = (S.tobytes(), S.shape, float(target), int(n_draws), int(seed))
    if key not in _BETA_CACHE:
        lo, hi = np.zeros(S.shape[1]), np.full(S.shape[1], math.log(1e6))
        for _ in range(30):
            mid = (lo + hi) / 2
            above = _median_cosine(S, np.exp(mid), n_draws, seed) > target
            lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
        _BETA_CACHE[key] = np.exp(hi)
    return _BETA_CACHE[key].copy()


def reference_alpha(reference, n_novel, alpha=0.5, beta=None):
    """The (channels, H + n_novel) Dirichlet parameters of the informed prior (module docstring).

    Column ``h < H``: ``max(beta_h s_h, 1e-10)``; the ``n_novel`` last: ``alpha``. ``beta``: a
    number, one per column, or None (:func:`reference_concentration`).

    Examples
    --------
    >>> A = reference_alpha(np.array([[0.5], [0.5]]), 2, alpha=0.5, beta=10.0)
    >>> A.tolist()
    [[5.0, 0.5, 0.5], [5.0, 0.5, 0.5]]
    """
    S = _reference_matrix(reference)
    beta = reference_concentration(S) if beta is None else np.broadcast_to(
        np.asarray(beta, dtype=float), (S.shape[1],))
    if not (np.isfinite(beta).all() and (beta > 0).all()):
        raise ValueError("beta must be positive and finite")
    if not (isinstance(n_novel, (int, np.integer)) and n_novel >= 0):
        raise ValueError(f"n_novel must be a non-negative integer, got {n_novel!r}")
    return np.hstack([np.maximum(beta[None, :] * S, ALPHA_FLOOR),
                      np.full((S.shape[0], int(n_novel)), float(alpha))])


def active_cutoffs(a, n_samples, multiple=ACTIVE_MULTIPLE, tail=ACTIVE_TAIL):
    """Cutoffs of ``mu_k / epsilon`` for draws with shape ``a`` (array): ``max(multiple, t)``.

    ``t`` is the ``1 - tail`` quantile of ``mu / epsilon`` when ``mu ~ InvGamma(a N + 1,
    epsilon a N)``, i.e. ``a N / G`` with ``G`` the ``tail`` quantile of ``Gamma(a N + 1)``.

    Examples
    --------
    >>> active_cutoffs(np.array([1.0, 0.05]), 20).round(1)
    array([ 2.1, 22. ])
    """
    from scipy.special import gammaincinv

    aN = np.asarray(a, float) * n_samples
    return np.maximum(multiple, aN / gammaincinv(aN + 1.0, tail))


def compression_charge(strength, a, n_samples, mean_exposure, epsilon=1e-3):
    """Nats the compressive prior charges an active signature (module docstring, exact).

    ``log p_plain(V_k) - log p_c(V_k)`` for exposures of mean ``mean_exposure`` (``m``) per
    sample over ``n_samples`` samples: the compressive prior with strength ``c`` and exposures'
    shape ``a``, ``mu_k`` integrated out, against a plain ``Gamma(a, a / m)`` prior.

    Examples
    --------
    >>> round(compression_charge(1.0, 1.0, 100, 100.0))
    1024
    >>> round(compression_charge(0.01, 1.0, 100, 100.0))
    24
    """
    from scipy.special import gammaln

    c, a, N, m = float(strength), float(a), float(n_samples), float(mean_exposure)
    for name, v in (("strength", c), ("a", a), ("n_samples", N), ("mean_exposure", m),
                    ("epsilon", epsilon)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be positive and finite, got {v!r}")
    alpha, beta = c * N + 1.0, epsilon * c * N
    log_comp = (alpha * math.log(beta) + gammaln(a * N + alpha) - gammaln(alpha)
                - (a * N + alpha) * math.log(a * N * m + beta))
    return float(-(log_comp + a * N * math.log(m) + a * N))


def active_counts(mu, epsilon, multiple=ACTIVE_MULTIPLE):
    """Number of active signatures per draw: ``(mu > multiple * epsilon).sum(-1)``.

    ``multiple`` may be an array of one cutoff per draw (``mu.shape[:-1]``:
    :func:`active_cutoffs`).

    Examples
    --------
    >>> active_counts(np.array([[1e-3, 50.0, 2.0], [1e-3, 40.0, 1.1e-3]]), 1e-3)
    array([2, 1])
    """
    return (np.asarray(mu) > np.asarray(multiple)[..., None] * epsilon).sum(axis=-1)


def _ess(series):
    """Multi-chain ESS of the mean of ``series`` (chains, draws); NaN for a constant series."""
    import arviz_stats as azs

    series = np.asarray(series, float)
    if np.ptp(series) == 0:
        return math.nan
    return float(azs.ess(series, method="mean"))


def _wilson(p, n, level):
    z = norm.ppf(0.5 + level / 2)
    den = 1.0 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def _reference_start(Y, alpha, n_fixed, rng, n_iter=200):
    """A start for the informed prior: KL-NMF with the first ``n_fixed`` signatures fixed.

    KL multiplicative updates (Lee & Seung 2001) from every signature at a draw of its prior,
    the first ``n_fixed`` held there, the others and the exposures free.
    """
    T = rng.standard_gamma(alpha)
    T /= np.maximum(T.sum(axis=0, keepdims=True), 1e-300)
    V = np.full((T.shape[1], Y.shape[1]), max(Y.sum(axis=0).mean(), 1.0) / T.shape[1])
    for _ in range(n_iter):
        R = Y / np.maximum(T @ V, 1e-12)
        V *= (T.T @ R) / np.maximum(T.sum(axis=0), 1e-12)[:, None]
        if n_fixed < T.shape[1]:
            R = Y / np.maximum(T @ V, 1e-12)
            T[:, n_fixed:] *= (R @ V[n_fixed:].T) / np.maximum(V[n_fixed:].sum(axis=1), 1e-12)
            T[:, n_fixed:] /= np.maximum(T[:, n_fixed:].sum(axis=0), 1e-300)
    return T, V


def _chain(data, Y, k_max, prior, rng, n_burn, n_keep, thin, init, nb=False, shape=None,
           strength=None, n_fixed=0):
    """One chain at ``k_max``; returns the kept ``mu``, ``T``, ``V``, ``phi`` and ``a``.

    ``phi`` with ``nb``; ``a`` with ``shape`` (a state of
    :func:`bnmfzoo.signatures._shape.shape_state`: ``a`` random).
    ``init="kl"``: a KL-NMF start (every signature active); ``"prior"``: a draw from the prior
    (every ``mu_k`` near ``epsilon``), as Zito & Miller's sampler starts.
    """
    alpha, a, a0, b0 = prior
    if init == "kl":
        T, V = _kl_start(Y.astype(float), k_max, rng)
        mu = V.mean(axis=1)
    elif init == "reference":
        T, V = _reference_start(Y.astype(float), alpha, n_fixed, rng)
        mu = np.maximum(V.mean(axis=1), 1e-12)
    else:
        if np.ndim(alpha) == 0:
            T = rng.dirichlet(np.full(Y.shape[0], alpha), size=k_max).T
        else:  # one parameter per channel and signature: a Dirichlet draw per column
            T = rng.standard_gamma(alpha)
            T /= np.maximum(T.sum(axis=0, keepdims=True), 1e-300)
        mu = b0 / rng.gamma(a0, 1.0, size=k_max)
        V = rng.gamma(a, 1.0, size=(k_max, Y.shape[1])) * (mu / a)[:, None]
    T, V = np.maximum(T, 1e-12), np.maximum(V, 1e-12)
    T /= T.sum(axis=0, keepdims=True)
    mu = np.ascontiguousarray(mu, dtype=float)
    N = Y.shape[1]
    pri = (alpha, a, np.zeros(N))
    comp = (a, a0, b0, mu)
    state = _gibbs.nb_state(Y.shape) if nb else None
    _gibbs.seed(rng)
    burnt = 0
    try:
        _gibbs.sweeps(data, T, V, pri, n_burn, compressive=comp, nb=state, shape=shape,
                      strength=strength if shape is not None else None)
        burnt = n_burn
        out = _gibbs.sweeps(data, T, V, pri, n_keep, keep=("TV",), thin=thin, compressive=comp,
                            nb=state, shape=shape,
                            strength=strength if shape is not None else None)
    except _gibbs.BudgetExceeded as err:  # count the chain's sweeps, burn-in included
        err.done, err.n_sweeps = err.done + burnt, n_burn + n_keep
        raise
    return out["mu"], out["T"], out["V"], out["phi"], out["a"]


def compressive_rank_posterior(X, ranks=range(2, 13), *, k_max=None, n_chains=4, n_burn=600,
                               n_keep=600, thin=3, alpha=0.5, a=1.0, epsilon=1e-3, level=0.9,
                               n_draws=300, init=None, likelihood="poisson", a_prior=None,
                               strength=None, reference=None, beta=None, n_novel=5,
                               random_seed=None, progress=None):
    """``P(K | data)`` from the active signatures of a compressive-prior run (module docstring).

    Parameters
    ----------
    X : array-like, shape (n_samples, n_channels)
        A catalogue, samples x channels (:func:`bnmfzoo.signatures.read_catalog`).
    ranks : iterable of int
        Ranks reported (every rank a draw visits is reported too).
    k_max : int, optional
        Signatures of the overfitted model; default ``min(2 * max(ranks), 20)``, at least
        ``max(ranks) + 1`` (with ``reference``: its columns plus ``n_novel``, not settable).
    n_chains : int
        Chains, each from its own KL-NMF start (their agreement enters the errors).
    n_burn, n_keep, thin : int
        Burn-in sweeps, kept sweeps and thinning of each chain.
    alpha, a, epsilon : float
        Dirichlet parameter of the signatures, Gamma shape of the exposures and the compressive
        prior's mean of ``mu_k`` (Zito & Miller 2024's defaults: 0.5, 1, 0.001). ``a`` may be
        ``"random"``: learned, with prior ``a_prior``, starting at 1. Where signatures are
        absent from many samples, the learned ``a`` is small (0.02-0.05 on synthetic cohorts
        of the field's designs), the compression weakens with it, and the true signatures are
        split into several active ones: ``P(K)`` then overshoots with confidence at 100
        samples, so fixed ``a = 1`` stays the default.
    a_prior : tuple of float, optional
        ``(shape, rate)`` of the Gamma prior of a random ``a``; default ``(1, 1)``, the
        authors' (:data:`bnmfzoo.signatures._shape.SHAPE_PRIOR`). Only with ``a="random"``.
    strength : float or "unit", optional
        A compression strength ``c`` apart from the exposures' shape: ``mu_k ~ InvGamma(c N +
        1, epsilon c N)`` whatever ``a`` is (fixed or ``"random"``); ``"unit"`` is ``c = 1 /
        N``, the unit-information choice of the module docstring. Each active signature is
        then charged about ``c N (log(m / epsilon) - 1)`` nats (module docstring,
        :func:`compression_charge`), and a draw's cutoff of activity is that of ``c``
        (:func:`active_cutoffs`). None (default): ``c = a``, the model of Zito & Miller, the
        draws unchanged. Not the default. A weak strength compresses the extra signatures of
        the start slowly (``mu_k`` is then held by its own exposures alone): on synthetic
        cohorts of 100 genomes ``"unit"`` needs about 4,000-5,000 sweeps, and after fewer the
        rank table reads as a confident overcount (the note's R-hat says so; run ``n_burn``
        of 6,000 or more). Converged, it finds the flat signatures' true number but, like the
        default, is confidently one short on co-occurring signatures (0.01-0.02 on the true
        ninth of synthetic cohorts of 100 genomes).
    level : float
        Level of the intervals and of the bound of unvisited ranks.
    n_draws : int
        At most this many draws at the most probable rank are kept for the summaries.
    likelihood : {"poisson", "nb"}
        ``"nb"``: negative-binomial counts, ``Y_dn ~ Poisson(theta_dn (T V)_dn)`` with
        ``theta_dn ~ Gamma(phi, phi)`` and one ``phi ~ Gamma(1, 0.01)`` for the catalogue
        (:mod:`bnmfzoo.signatures._gibbs`): extra-Poisson variance is absorbed by ``theta``
        instead of extra active signatures. ``"poisson"`` (default here): the model above.
    reference : array-like, shape (n_channels, H), optional
        Known signatures (columns, in the catalogue's channel order): the informed prior of the
        module docstring, ``H`` reference signatures ``Dirichlet(beta_h s_h)`` and ``n_novel``
        de novo ones, all compressed. ``P(K)`` is then the posterior of the number of active
        reference and de novo signatures under that prior. None (default): every signature
        de novo, the draws unchanged.
    beta : float or array of H floats, optional
        With ``reference``: the concentrations ``beta_h``; default
        :func:`reference_concentration` (Zito & Miller's median cosine of 0.975).
    n_novel : int
        With ``reference``: the de novo signatures beside it (default 5).
    init : {"kl", "prior"}, optional
        The chains' starts: a KL-NMF fit at ``k_max`` (every signature active; the default
        without ``reference``) or a draw from the prior (every ``mu_k`` near ``epsilon``; the
        default with ``reference``, as Zito & Miller's sampler).
    random_seed : int, optional
    progress : callable, optional
        Called with a line of text after each chain.

    Returns
    -------
    pandas.DataFrame
        One row per rank: ``rank``, ``probability`` (NaN where no draw visits), ``low``,
        ``high``, ``draws`` (kept draws with that many active signatures), ``ess``, ``mcse``;
        ``attrs``: ``note``, ``level``, ``draws`` (``(T_draws, V_draws)`` at the most probable
        rank, channels x signatures and signatures x samples), ``counts`` (chains, draws),
        ``phi`` (chains, draws; ``"nb"`` only, else None), ``a`` (chains, draws; a random
        ``a`` only, else None), ``likelihood``,
        ``mu`` (chains, draws, k_max), ``k_max``, ``every_chain_visits_best`` (whether every
        chain visits the most probable rank), ``rhat`` (:func:`counts_rhat` of ``counts``; the
        note says when it exceeds :data:`RHAT_LIMIT`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Y = rng.poisson(rng.gamma(1, 50, (20, 2)) @ rng.dirichlet(np.ones(96), 2))
    >>> t = compressive_rank_posterior(Y, [1, 2, 3], k_max=4, n_chains=2, n_burn=100,
    ...                                n_keep=100, random_seed=0)
    >>> list(t.columns[:4])
    ['rank', 'probability', 'low', 'high']
    """
    X = np.asarray(X)
    ranks = sorted(int(k) for k in ranks)
    if not ranks or ranks[0] < 1 or len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be distinct positive integers, got {ranks}")
    if reference is not None and k_max is not None:
        raise ValueError("with a reference, k_max is its signatures plus n_novel: not set")
    if k_max is None:
        k_max = max(min(2 * ranks[-1], 20), ranks[-1] + 1)
    if not (isinstance(k_max, (int, np.integer)) and k_max > ranks[-1]):
        raise ValueError(f"k_max must be an integer above the largest rank ({ranks[-1]}), "
                         f"got {k_max!r}")
    for name, value in (("n_chains", n_chains), ("n_burn", n_burn), ("n_keep", n_keep),
                        ("thin", thin)):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    random_a = isinstance(a, str)
    if random_a and a != "random":
        raise ValueError(f"a must be a positive number or 'random', got {a!r}")
    if a_prior is not None and not random_a:
        raise ValueError("a_prior is the prior of a random shape: pass a='random' with it")
    a_prior = _shape.SHAPE_PRIOR if a_prior is None else tuple(a_prior)
    for name, value in (("alpha", alpha), ("a", 1.0 if random_a else a), ("epsilon", epsilon),
                        ("a_prior's shape", a_prior[0]), ("a_prior's rate", a_prior[-1])):
        if not (isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value)
                and value > 0):
            raise ValueError(f"{name} must be positive and finite, got {value!r}")
    if len(a_prior) != 2:
        raise ValueError(f"a_prior must be (shape, rate), got {a_prior!r}")
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level}")
    if likelihood not in ("poisson", "nb"):
        raise ValueError(f"likelihood must be 'poisson' or 'nb', got {likelihood!r}")
    if strength is not None and not (
            isinstance(strength, (int, float, np.integer, np.floating))
            and np.isfinite(strength) and strength > 0) and not (
            isinstance(strength, str) and strength == "unit"):
        raise ValueError(f"strength must be positive and finite or 'unit', got {strength!r}")
    Y = X.T.astype(np.int64)
    D, N = Y.shape
    if reference is not None:
        alpha = reference_alpha(_reference_matrix(reference, D), n_novel, alpha, beta)
        k_max = alpha.shape[1]
        if k_max <= ranks[-1]:
            raise ValueError(f"the reference's signatures plus n_novel ({k_max}) must exceed "
                             f"the largest rank ({ranks[-1]})")
    init = ("kl" if reference is None else "reference") if init is None else init
    if init not in ("kl", "prior") + (() if reference is None else ("reference",)):
        raise ValueError(f"init must be 'kl', 'prior' or (with a reference) 'reference', "
                         f"got {init!r}")
    if isinstance(strength, str):
        strength = 1.0 / N  # unit information: the prior of mu_k is worth one sample
    rows, cols = np.nonzero(Y)
    data = (rows.astype(np.int64), cols.astype(np.int64), Y[rows, cols].astype(np.int64))
    a0 = 1.0 if random_a else float(a)  # a random a starts at 1
    cs = a0 if strength is None else float(strength)  # the compression strength
    prior = (alpha if reference is not None else float(alpha), a0, cs * N + 1.0,
             epsilon * cs * N)
    mus, Ts, Vs, phis, shapes = [], [], [], [], []
    for c, ss in enumerate(np.random.SeedSequence(random_seed).spawn(n_chains)):
        shape = _shape.shape_state(a0, epsilon, a_prior) if random_a else None
        try:
            mu, T, V, phi, a_draws = _chain(data, Y, int(k_max), prior,
                                            np.random.default_rng(ss), n_burn, n_keep, thin,
                                            init, nb=likelihood == "nb", shape=shape,
                                            strength=strength,
                                            n_fixed=k_max - int(n_novel) if reference
                                            is not None else 0)
        except _gibbs.BudgetExceeded as err:  # the budget of _gibbs.budget ran out
            err.where = (f"the compressive run (chain {c + 1} of {n_chains}, {err.done} of "
                         f"{err.n_sweeps} sweeps)")
            if err.per_sweep is not None:
                err.needed = err.per_sweep * n_chains * (n_burn + n_keep)
            raise
        mus.append(mu)
        phis.append(phi)
        shapes.append(a_draws)
        Ts.append(T)
        Vs.append(V)
        if progress is not None:
            k = active_counts(mu, epsilon, _cut(a_draws if random_a else None, N, strength))
            progress(f"chain {c + 1}/{n_chains}: active signatures "
                     + ", ".join(f"{v} ({np.mean(k == v):.2f})" for v in np.unique(k)))
    mu = np.stack(mus)  # (chains, G, k_max)
    cut = _cut(np.stack(shapes) if random_a else None, N, strength)  # (chains, G) or a number
    counts = active_counts(mu, epsilon, cut)  # (chains, G)
    table = rank_table(counts, ranks, level)
    best = int(table["rank"][table["probability"].fillna(-1.0).idxmax()])
    sel = np.argwhere(counts == best)  # (chain, draw) pairs
    pick = sel[np.unique(np.linspace(0, len(sel) - 1, min(n_draws, len(sel))).astype(int))]
    T_draws = np.empty((len(pick), D, best))
    V_draws = np.empty((len(pick), best, N))
    for i, (c, g) in enumerate(pick):
        act = np.flatnonzero(mu[c, g] > (cut[c, g] if np.ndim(cut) else cut) * epsilon)
        T_draws[i], V_draws[i] = Ts[c][g][:, act], Vs[c][g][act]
    every_chain = bool((counts == best).any(axis=1).all())
    rhat = counts_rhat(counts)
    table.attrs.update(note=_note(table, best, every_chain, set(ranks), n_chains, rhat,
                                  at_capacity=float(np.mean(counts >= k_max)), k_max=k_max),
                       level=level, rhat=rhat,
                       draws=(T_draws, V_draws), counts=counts, mu=mu, k_max=int(k_max),
                       every_chain_visits_best=every_chain, epsilon=epsilon,
                       likelihood=likelihood, strength=strength,
                       phi=np.stack(phis) if likelihood == "nb" else None,
                       activity=(mu > (cut[..., None] if np.ndim(cut) else cut) * epsilon
                                 ).mean(axis=(0, 1)),
                       n_reference=0 if reference is None else k_max - int(n_novel),
                       a=np.stack(shapes) if random_a else None)
    return table


def _cut(a_draws, n_samples, strength=None):
    """The draws' cutoffs of ``mu / epsilon``: 1.5 for a fixed ``a`` (None), else per draw.

    With a fixed ``strength``, ``mu``'s prior does not depend on ``a``: one cutoff, that of
    ``strength`` (:func:`active_cutoffs`).
    """
    if strength is not None:
        return float(active_cutoffs(np.array([strength]), n_samples)[0])
    return ACTIVE_MULTIPLE if a_draws is None else active_cutoffs(a_draws, n_samples)


def rank_table(counts, ranks, level=0.9):
    """``P(K | data)`` with Monte-Carlo intervals from the active counts (chains, draws).

    One row per rank of ``ranks`` and per rank some draw visits: ``probability`` (the fraction
    of draws; NaN where no draw visits), ``low``, ``high`` (Wilson's interval with the
    multi-chain ESS of the indicator series as the number of trials; for a rank no draw visits,
    ``0`` and ``1 - (1 - level) ** (1 / ESS)``), ``draws``, ``ess``, ``mcse``. A constant
    indicator series has no autocorrelation estimate: the ESS of the count series is used, or
    the number of draws when every draw has the same count.

    Examples
    --------
    >>> t = rank_table(np.array([[2, 2, 3, 2], [2, 3, 2, 2]]), [1, 2, 3])
    >>> t["probability"].round(3).tolist()
    [nan, 0.75, 0.25]
    """
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise ValueError(f"counts must be (chains, draws), got shape {counts.shape}")
    total = counts.size
    ess_counts = _ess(counts)
    rows = []
    for K in sorted(set(int(k) for k in ranks) | {int(v) for v in np.unique(counts)}):
        ind = (counts == K).astype(float)
        hits = int(ind.sum())
        ess = _ess(ind)
        if not np.isfinite(ess):  # constant: every draw or none has K active signatures
            ess = ess_counts if np.isfinite(ess_counts) else float(total)
        ess = float(min(max(ess, 1.0), total))
        if hits == 0:
            rows.append((K, math.nan, 0.0, 1.0 - (1.0 - level) ** (1.0 / ess), 0, ess,
                         math.nan))
            continue
        p = hits / total
        lo, hi = _wilson(p, ess, level)
        rows.append((K, p, lo, hi, hits, ess, math.sqrt(p * (1 - p) / ess)))
    return pd.DataFrame(rows, columns=["rank", "probability", "low", "high", "draws", "ess",
                                       "mcse"])


def counts_rhat(counts):
    """Rank-normalized split R-hat of the active counts (chains, draws) (Vehtari et al. 2021).

    1.0 when every draw of every chain has the same count (nothing to disagree on); NaN with
    one chain or fewer than 4 draws; ``inf`` when every half-chain is constant but not all
    at one count. Above :data:`RHAT_LIMIT` the chains have not forgotten their starts
    (typically the extra signatures of the start are still being compressed, which is slow
    when the compression is weak: ``strength`` of the order of ``1 / N``, where ``mu_k``'s
    conditional is held by the exposures alone), or a rarely visited count has too few
    effective draws for its probability to be more than noise.

    Examples
    --------
    >>> counts_rhat(np.array([[4, 4, 4, 4], [4, 4, 4, 4]]))
    1.0
    >>> bool(counts_rhat(np.array([[5] * 50, [7] * 25 + [8] * 25])) > RHAT_LIMIT)
    True
    """
    import arviz_stats as azs

    counts = np.asarray(counts, float)
    if counts.ndim != 2 or counts.shape[0] < 2 or counts.shape[1] < 4:
        return math.nan
    if np.ptp(counts) == 0:
        return 1.0
    half = counts.shape[1] // 2
    if all((np.ptp(part, axis=1) == 0).all() for part in (counts[:, :half],
                                                          counts[:, half:2 * half])):
        return math.inf  # every half-chain constant but not all equal: no mixing at all
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(azs.rhat(counts, method="rank"))
    return value if np.isfinite(value) else math.inf


def _note(table, best, every_chain, requested, n_chains, rhat=math.nan, at_capacity=0.0,
          k_max=None):
    """One sentence: the most probable rank, its rivals, the ranks no draw visited.

    ``at_capacity``: the share of draws with all ``k_max`` signatures active. Such draws mean
    the overfitted model had no signature to spare, so ranks above ``k_max`` were never
    possible and ``P(K)`` is cut off there: the note says so and what to run.
    """
    row = table.set_index("rank").loc[best]
    text = (f"most probable rank {best} (probability {row['probability']:.3f}, "
            f"{row['low']:.3f}-{row['high']:.3f}; compressive prior, active signatures per draw)")
    rivals = [int(r["rank"]) for _, r in table.iterrows()
              if r["rank"] != best and np.isfinite(r["probability"])
              and (r["probability"] >= 0.05 or r["high"] >= row["low"])]
    if rivals:
        text += ("; cannot be told apart from rank(s) " + ", ".join(map(str, rivals))
                 + " (probability >= 0.05, or its interval reaches the top rank's)")
    if not every_chain:
        text += (f"; not every one of the {n_chains} chains visits rank {best}: the chains "
                 "disagree, so the probabilities rest on a few chain-level agreements (see ess)")
    if rhat > RHAT_LIMIT:
        text += (f"; the chains have not converged (R-hat of the number of active signatures "
                 f"{rhat:.2f} > {RHAT_LIMIT}): these probabilities are not yet the posterior's, "
                 "run more sweeps (n_burn, --burn)")
    outside = [int(r) for r in table.loc[table["draws"] > 0, "rank"] if int(r) not in requested]
    if outside:
        text += ("; draws also visit rank(s) " + ", ".join(map(str, outside))
                 + " outside the requested ranks (shown)")
    if at_capacity > 0:
        text += (f"; {at_capacity:.0%} of the draws use all {k_max} signatures of the "
                 "overfitted model (k_max), so ranks above it were not possible and P(K) is cut "
                 f"off at {k_max}: rerun with a larger k_max (--k-max; by default twice "
                 "the largest rank, at most 20; with a reference, raise n_novel, --novel)")
    return text
