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
           "ACTIVE_TAIL", "active_cutoffs", "compression_charge", "counts_rhat", "RHAT_LIMIT"]

#: a signature is active in a draw when its exposure scale mu_k exceeds this times epsilon
ACTIVE_MULTIPLE = 1.5
#: with a random shape a, also above the (1 - ACTIVE_TAIL) prior quantile of mu_k at that a
ACTIVE_TAIL = 1e-3
#: R-hat of the active counts above which the note says the chains have not converged
RHAT_LIMIT = 1.05


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


def _chain(data, Y, k_max, prior, rng, n_burn, n_keep, thin, init, nb=False, shape=None,
           strength=None):
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
    else:
        T = rng.dirichlet(np.full(Y.shape[0], alpha), size=k_max).T
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
                               n_draws=300, init="kl", likelihood="poisson", a_prior=None,
                               strength=None, random_seed=None, progress=None):
    """``P(K | data)`` from the active signatures of a compressive-prior run (module docstring).

    Parameters
    ----------
    X : array-like, shape (n_samples, n_channels)
        A catalogue, samples x channels (:func:`bnmfzoo.signatures.read_catalog`).
    ranks : iterable of int
        Ranks reported (every rank a draw visits is reported too).
    k_max : int, optional
        Signatures of the overfitted model; default ``min(2 * max(ranks), 20)``, at least
        ``max(ranks) + 1``.
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
    if isinstance(strength, str):
        strength = 1.0 / N  # unit information: the prior of mu_k is worth one sample
    rows, cols = np.nonzero(Y)
    data = (rows.astype(np.int64), cols.astype(np.int64), Y[rows, cols].astype(np.int64))
    a0 = 1.0 if random_a else float(a)  # a random a starts at 1
    cs = a0 if strength is None else float(strength)  # the compression strength
    prior = (float(alpha), a0, cs * N + 1.0, epsilon * cs * N)
    mus, Ts, Vs, phis, shapes = [], [], [], [], []
    for c, ss in enumerate(np.random.SeedSequence(random_seed).spawn(n_chains)):
        shape = _shape.shape_state(a0, epsilon, a_prior) if random_a else None
        try:
            mu, T, V, phi, a_draws = _chain(data, Y, int(k_max), prior,
                                            np.random.default_rng(ss), n_burn, n_keep, thin,
                                            init, nb=likelihood == "nb", shape=shape,
                                            strength=strength)
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
    table.attrs.update(note=_note(table, best, every_chain, set(ranks), n_chains, rhat),
                       level=level, rhat=rhat,
                       draws=(T_draws, V_draws), counts=counts, mu=mu, k_max=int(k_max),
                       every_chain_visits_best=every_chain, epsilon=epsilon,
                       likelihood=likelihood, strength=strength,
                       phi=np.stack(phis) if likelihood == "nb" else None,
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


def _note(table, best, every_chain, requested, n_chains, rhat=math.nan):
    """One sentence: the most probable rank, its rivals, the ranks no draw visited."""
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
                 "run more sweeps (n_burn)")
    outside = [int(r) for r in table.loc[table["draws"] > 0, "rank"] if int(r) not in requested]
    if outside:
        text += ("; draws also visit rank(s) " + ", ".join(map(str, outside))
                 + " outside the requested ranks (shown)")
    return text
