"""The evidence of Poisson NMF by Chib's method, and the posterior over the number of signatures.

Model: signatures on the simplex, ``T_k ~ Dirichlet(alpha, ..., alpha)`` (column ``k`` of the
D x K matrix ``T``), exposures ``V_kn ~ Gamma(a_V, b_V[n])`` (shape, rate; ``V_kn`` is the
expected number of mutations of signature ``k`` in sample ``n``), ``Y_dn ~ Poisson((T V)_dn)``,
augmented by the sources ``S_dkn`` (Cemgil 2009). ``Y`` is channels x samples (the
SigProfiler file layout). Putting the signatures on the simplex removes the scale
direction ``(c T_k, V_k / c)`` along which a Gibbs chain crawls and on which Chib's ordinate
of ``T`` then fails (its Rao-Blackwell terms collapse onto one draw).

Chib (1995, *JASA* 90:1313) writes, at any point ``(T*, V*)``,

    log p(Y) = log p(Y | T*, V*) + log p(T*) + log p(V*) - log p(T* | Y) - log p(V* | T*, Y)

and estimates the posterior ordinates by Rao-Blackwellization. ``p(T* | Y)`` is taken block of
channels by block of channels (Chib 1995, Sec. 2.2): given the sources and the earlier rows
fixed at ``T*``, the remaining mass of each signature is ``Dirichlet(alpha + s_dk)``-shared
among the remaining rows, so a block's conditional ordinate is the density of an aggregated
Dirichlet; each block's ordinate is the mean of that density over a Gibbs run with the earlier
rows fixed (the last row of ``T`` is determined by the others). Channels are taken in
increasing order of their counts, so the channel with the most mutations, whose sharp
conditional is the hardest to average, is the determined last one; a block whose average rests
on too few draws is run longer (``ess_target``). ``p(V* | T*, Y)`` is taken
sample by sample from one last run with ``T`` fixed at ``T*`` (exposures of different samples
are independent given the signatures).

**Label switching.** The posterior is symmetric under the ``K!`` relabellings of the
signatures and a Gibbs chain usually stays in one of them, so the plain average overestimates
``p(T* | Y)`` by up to ``K!`` and the evidence is too low by up to ``log K!`` (Neal 1999). The
first block's ordinate is therefore averaged over relabellings ``sigma`` of ``T*`` (Berkhof,
van Mechelen & Gelman 2003): ``mean_g mean_sigma p(sigma T* | S_g)``, unbiased whether the
chain visits one relabelling or all. Up to ``K = 7`` every relabelling is summed; above, the
identity and every transposition are summed and the others taken as zero (a lower bound of the
average, so an upper bound of the evidence); ``switch_share``, the share of the sum carried
by the transpositions, shows whether that matters (~0 when the chain stays in one labelling;
the omitted relabellings, farther still, then carry nothing either). The later ordinates need
no average (the fixed rows of ``T*`` fix the labels).

**Errors.** One estimate has no error bar of its own; :func:`rank_posterior` runs independent
chains (different seeds and starts) and reports their mean and standard error. A chain stuck in
a poor local mode gives a lower estimate, and a Rao-Blackwell average carried by a few draws
(``min_ess``) a higher one: the spread between runs shows both.

Checked against the exact evidence of tiny matrices (enumeration of the sources, prior Monte
Carlo; :func:`bnmfzoo.signatures.checks.exact_log_evidence`) and against annealed importance
sampling (:func:`bnmfzoo.signatures.checks.ais_log_evidence`).
"""

import itertools
import math

import numpy as np
import pandas as pd
from scipy.special import gammaln, logsumexp

from bnmfzoo.signatures import _gibbs
from bnmfzoo.signatures.screen import _kl_start, default_prior, vb_bound

__all__ = ["chib_log_evidence", "rank_posterior", "default_prior", "probabilities"]


def _gamma_logpdf(x, shape, rate):
    return shape * np.log(rate) - gammaln(shape) + (shape - 1.0) * np.log(x) - rate * x


def _permutations(rank, max_perms):
    if math.factorial(rank) <= max_perms:
        return np.array(list(itertools.permutations(range(rank))))
    perms = [np.arange(rank)]
    for i, j in itertools.combinations(range(rank), 2):
        p = np.arange(rank)
        p[[i, j]] = p[[j, i]]
        perms.append(p)
    return np.array(perms)


def _ess(logw, axis=0):
    """Kish effective number of the Rao-Blackwell terms (1 = one draw carries the average)."""
    w = np.exp(logw - np.max(logw, axis=axis, keepdims=True))
    return w.sum(axis=axis) ** 2 / (w**2).sum(axis=axis)


def _log_mean_var(logw, n_batches=10):
    """Variance of ``log mean(w)`` from batch means of the (autocorrelated) terms ``w``.

    ``logw`` is (G,) or (G, M) (columns independent, variances summed); delta method:
    ``var(log m) ~ var(batch means) / (n_batches m^2)``. Infinite with fewer than 2 batches.
    """
    logw = np.asarray(logw, float)
    if logw.ndim == 1:
        logw = logw[:, None]
    G = logw.shape[0]
    nb = min(n_batches, G)
    if nb < 2:
        return np.inf
    w = np.exp(logw - logw.max(axis=0, keepdims=True))
    size = G // nb
    means = w[:nb * size].reshape(nb, size, -1).mean(axis=1)  # (nb, M)
    m = w.mean(axis=0)
    return float((means.var(axis=0, ddof=1) / nb / m**2).sum())


def _block_ordinate(s_dk, alpha, T_star, d0, d1, perms, n_perms_total):
    """Log of mean_g mean_sigma of the block's conditional density at ``T*`` (module docstring).

    Given the sources ``s_dk`` of draw ``g`` and rows ``< d0`` fixed, the rows ``d0 .. d1-1``
    of column ``k`` divided by the free mass ``1 - m_k`` follow the aggregated Dirichlet
    ``(alpha + s_{d0..d1-1, k}, sum_{d >= d1} (alpha + s_dk))``.
    """
    K = T_star.shape[1]
    shp = alpha + s_dk[:, d0:d1, :]  # (G, B, K)
    rest = (alpha + s_dk[:, d1:, :]).sum(axis=1)  # (G, K)
    free = 1.0 - T_star[:d0].sum(axis=0)  # (K,)
    x = T_star[d0:d1] / free[None, :]  # (B, K)
    r = np.maximum(1.0 - x.sum(axis=0), 1e-300)  # (K,)
    const = gammaln(shp.sum(axis=1) + rest) - gammaln(shp).sum(axis=1) - gammaln(rest)
    # M[g, k, l]: log density of column l of T* under the parameters of column k of draw g
    M = (const[:, :, None] + np.einsum("gbk,bl->gkl", shp - 1.0, np.log(x))
         + (rest - 1.0)[:, :, None] * np.log(r)[None, None, :]
         - (d1 - d0) * np.log(free)[None, None, :])
    per = M[:, np.arange(K)[None, :], perms].sum(axis=2)  # (G, P)
    logw = logsumexp(per, axis=1) - math.log(n_perms_total)  # one term per draw
    value = float(logsumexp(logw) - math.log(logw.size))
    ident = float(logsumexp(per[:, 0]) - math.log(logw.size))
    share = 1.0 - math.exp(min(0.0, ident - value - math.log(n_perms_total)))
    return value, ident, float(_ess(logw)), share, _log_mean_var(logw)


def _nonzero(Y):
    rows, cols = np.nonzero(Y)
    return (rows.astype(np.int64), cols.astype(np.int64),
            Y[rows, cols].astype(np.int64))


def chib_log_evidence(Y, rank, *, prior=None, n_burn=300, n_keep=500, block_rows=1,
                      max_perms=5040, n_draws=200, ess_target=50.0, max_extend=3,
                      block_burn=None, block_keep=None, init="vb", random_seed=None):
    """Chib's estimate of ``log p(Y)`` for Poisson NMF of order ``rank`` (module docstring).

    Parameters
    ----------
    Y : array of int, shape (D, N)
        Counts, channels x samples (``Y = T V``; the signatures ``T`` are blocked by rows).
    rank : int
        Number of signatures ``K``.
    prior : tuple, optional
        ``(alpha, a_V, b_V)``: the Dirichlet parameter of every signature, the Gamma shape and
        rate (a scalar or one per sample) of the exposures; default :func:`default_prior`.
    n_burn, n_keep : int
        Burn-in and kept sweeps of the first run (later blocks: ``n_burn // 4`` and
        ``n_keep``; the last, reduced, run: ``n_burn // 2`` and ``n_keep``).
    block_rows : int
        Rows of ``T`` per block (``ceil((D - 1) / block_rows)`` runs).
    max_perms : int
        Relabellings averaged in the first block's ordinate: all ``K!`` when
        ``K! <= max_perms``, else the identity and the transpositions.
    n_draws : int
        Posterior draws of ``T, V`` kept from the first run (thinned), for summaries.
    block_burn, block_keep : int, optional
        Burn-in and kept sweeps of each later block's run (default ``n_burn // 4`` and
        ``n_keep``). Each block's run starts where the previous one stopped, one row more held
        at ``T*``, so a short burn-in suffices; a block whose terms rest on too few draws is
        extended (``ess_target``).
    ess_target, max_extend : float, int
        A block (or the exposures' run) whose Rao-Blackwell terms have a Kish effective number
        below ``ess_target`` is run ``n_keep`` sweeps longer, up to ``max_extend`` times
        (only the blocks that need it: the channels with the largest counts).
    init : {"vb", None} or (T, V), optional
        Start of the chain: ``"vb"`` the variational means of the same model
        (:func:`bnmfzoo.signatures.screen.vb_bound`, one restart), ``None`` a short KL-NMF
        fit from a random point, or given factors (channels in the caller's order). The
        estimate is valid from any start once the chain has converged; from a crude start the
        chain needs thousands of sweeps where signatures overlap, and ``T*`` (the mean of the
        kept draws) is then off the mode and the ordinates rest on a few draws.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    dict
        ``log_evidence`` and its parts ``log_lik``, ``log_prior``, ``log_ord_T``,
        ``log_ord_V``; ``log_ord_T_no_perm`` (the first block without the relabelling
        average); ``switch_share``; ``min_ess`` (the smallest Kish effective number of
        Rao-Blackwell terms over the blocks and samples: a few draws means the ordinate is
        underestimated and the evidence too high); ``se_within`` (the standard error of the
        estimate from within the run: batch means of each block's and each sample's
        Rao-Blackwell terms, delta method, summed over blocks as independent); ``T_draws``
        (G, D, K), ``V_draws`` (G, K, N) and ``sweeps`` (the number of Gibbs sweeps run).

    Examples
    --------
    >>> Y = np.array([[1, 0], [2, 3]])
    >>> out = chib_log_evidence(Y, 1, prior=(1.0, 1.0, 1.0), n_burn=50, n_keep=200,
    ...                         random_seed=0)
    >>> bool(np.isfinite(out["log_evidence"]))
    True
    """
    rng = np.random.default_rng(random_seed)
    Y = np.asarray(Y)
    if Y.ndim != 2 or not np.isfinite(Y).all() or (Y < 0).any() or (Y != np.round(Y)).any():
        raise ValueError("Y must be a 2-D array of non-negative integer counts")
    if not (isinstance(rank, (int, np.integer)) and rank >= 1):
        raise ValueError(f"rank must be a positive integer, got {rank!r}")
    # channels in increasing order of their counts: the largest, whose ordinate is the hardest
    # to average, is the last one, determined by the others (the model is symmetric in them)
    order = np.argsort(Y.sum(axis=1), kind="stable")
    Y = Y[order].astype(np.int64)
    D, N = Y.shape
    K = int(rank)
    alpha, aV, bV = default_prior(Y, K) if prior is None else prior
    bV = np.broadcast_to(np.asarray(bV, dtype=float), (N,)).copy()
    pri = (alpha, aV, bV)
    data = _nonzero(Y)
    _gibbs.seed(rng)
    if init is None:
        T, V = _kl_start(Y.astype(float), K, rng)
    elif isinstance(init, str) and init == "vb":
        _, T, V = vb_bound(Y, K, prior=pri, n_restarts=1, random_seed=rng)
    else:
        T, V = (np.array(a, dtype=float, copy=True) for a in init)
        if T.shape != (D, K) or V.shape != (K, N):
            raise ValueError(f"init must be (T, V) of shapes {(D, K)} and {(K, N)}")
        T = T[order]
    T, V = np.maximum(T, 1e-12), np.maximum(V, 1e-12)
    T /= T.sum(axis=0, keepdims=True)
    _gibbs.sweeps(data, T, V, pri, n_burn)
    main = _gibbs.sweeps(data, T, V, pri, n_keep, keep=("s_dk", "TV"))
    T_star, V_star = main["T"].mean(axis=0), main["V"].mean(axis=0)
    thin = max(1, n_keep // max(n_draws, 1))
    T_draws, V_draws = main["T"][::thin][:n_draws], main["V"][::thin][:n_draws]
    n_sweeps = n_burn + n_keep

    b_burn = n_burn // 4 if block_burn is None else int(block_burn)
    b_keep = n_keep if block_keep is None else int(block_keep)
    perms = _permutations(K, max_perms)
    log_ord_T = log_ord_T_no_perm = 0.0
    min_ess, share, var_T = float(n_keep), 0.0, 0.0
    for start in range(0, D - 1, block_rows):
        stop = min(start + block_rows, D - 1)
        if start == 0:
            s_dk = main["s_dk"]
        else:
            T[:start] = T_star[:start]
            T[start:] *= ((1.0 - T_star[:start].sum(axis=0))
                          / T[start:].sum(axis=0))[None, :]
            _gibbs.sweeps(data, T, V, pri, b_burn, fixed_rows=start)
            s_dk = _gibbs.sweeps(data, T, V, pri, b_keep, fixed_rows=start,
                                 keep=("s_dk",))["s_dk"]
            n_sweeps += b_burn + b_keep
        block_perms, n_total = ((perms, math.factorial(K)) if start == 0
                                else (np.arange(K)[None, :], 1))
        for extend in range(max_extend + 1):
            block, ident, ess, sh, var = _block_ordinate(s_dk, alpha, T_star, start, stop,
                                                         block_perms, n_total)
            if ess >= ess_target or extend == max_extend:
                break
            more = _gibbs.sweeps(data, T, V, pri, b_keep, fixed_rows=start, keep=("s_dk",))
            s_dk = np.concatenate([s_dk, more["s_dk"]])
            n_sweeps += b_keep
        if start == 0:
            share = sh
            log_ord_T_no_perm += ident
        else:
            log_ord_T_no_perm += block
        log_ord_T += block
        var_T += var
        min_ess = min(min_ess, ess)

    # reduced run with all of T fixed at T*: the samples' exposures are independent given T*
    T_fix, V = T_star.copy(), V_star.copy()
    _gibbs.sweeps(data, T_fix, V, pri, n_burn // 2, fixed_rows=D)
    per_col = np.empty((0, N))
    for extend in range(max_extend + 1):
        red = _gibbs.sweeps(data, T_fix, V, pri, n_keep, fixed_rows=D, keep=("s_kn",))
        n_sweeps += n_keep
        per_col = np.concatenate([per_col, _gamma_logpdf(
            V_star[None], aV + red["s_kn"], (bV + 1.0)[None, None, :]).sum(axis=1)])  # (G, N)
        if _ess(per_col).min() >= ess_target:
            break
    n_sweeps += n_burn // 2
    log_ord_V = float((logsumexp(per_col, axis=0) - math.log(len(per_col))).sum())
    var_V = _log_mean_var(per_col)
    min_ess = min(min_ess, float(_ess(per_col).min()))

    lam = T_star @ V_star
    r, c, x = data
    log_lik = float((x * np.log(lam[r, c])).sum() - lam.sum() - gammaln(x + 1.0).sum())
    # Dirichlet(alpha) density of each column (on the D - 1 free coordinates)
    log_dir = K * (gammaln(D * alpha) - D * gammaln(alpha)) + ((alpha - 1.0)
                                                               * np.log(T_star)).sum()
    log_prior = float(log_dir + _gamma_logpdf(V_star, aV, bV[None, :]).sum())
    T_draws = T_draws[:, np.argsort(order)]  # channels back in the caller's order
    return {"log_evidence": log_lik + log_prior - log_ord_T - log_ord_V, "log_lik": log_lik,
            "log_prior": log_prior, "log_ord_T": log_ord_T, "log_ord_V": log_ord_V,
            "log_ord_T_no_perm": log_ord_T_no_perm, "switch_share": share,
            "min_ess": min_ess, "se_within": math.sqrt(var_T + var_V), "T_draws": T_draws,
            "V_draws": V_draws, "sweeps": n_sweeps}


def probabilities(log_z, se, *, n_sim=4000, df=None, level=0.9, random_seed=0):
    """``P(K | data)`` under a uniform prior over the ranks, with intervals from the errors.

    The estimate is ``softmax(log_z)``. Its interval propagates the estimation error of each
    ``log_z`` (independent, ``log_z + se * t_df``: Student's t with ``df`` = runs - 1 degrees of
    freedom, normal when ``df`` is None) by simulation, and takes the central ``level``
    quantiles. ``p_best`` is, for each rank, how often it has the highest ``log_z`` in the
    simulation: below 0.95 for the second rank means the estimates cannot order the top two.
    """
    log_z, se = np.asarray(log_z, float), np.asarray(se, float)
    rng = np.random.default_rng(random_seed)
    noise = (rng.standard_t(df, size=(n_sim, log_z.size)) if df
             else rng.standard_normal((n_sim, log_z.size)))
    sims = log_z[None, :] + np.nan_to_num(se, nan=0.0)[None, :] * noise
    p_sim = np.exp(sims - logsumexp(sims, axis=1, keepdims=True))
    p = np.exp(log_z - logsumexp(log_z))
    lo, hi = np.quantile(p_sim, [(1 - level) / 2, (1 + level) / 2], axis=0)
    p_best = np.bincount(np.argmax(sims, axis=1), minlength=log_z.size) / n_sim
    return p, lo, hi, p_best


def rank_posterior(X, ranks=range(2, 13), *, n_runs=2, prior=None, n_burn=300, n_keep=400,
                   block_rows=1, block_burn=20, block_keep=100, screen=True, window=(1, 1),
                   level=0.9, min_ess=20.0, keep_draws=True, random_seed=None, progress=None):
    """``P(K | data)`` for each rank from Chib's evidence, after a variational screen.

    **Screen** (``screen=True``). The variational bound of every rank
    (:func:`bnmfzoo.signatures.screen.vb_bound`, 2 restarts; seconds) decides where Chib's
    estimate is spent: the ranks from ``window[0]`` below to ``window[1]`` above the rank of
    the best bound, and then, while the rank with the highest Chib evidence (reliable or not)
    is the largest (smallest) one evaluated, the next larger (smaller) requested rank, so a
    bound that chooses too few or too many cannot hide the evidence's maximum. Ranks never evaluated
    are reported ``evaluated = False`` with no probability (NaN, never 0): the probabilities
    are ``P(K | data, K in the evaluated ranks)``, and the note says so. Every Gibbs chain
    starts from the variational means of its rank.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_channels)
        A catalogue, samples x channels (:func:`bnmfzoo.signatures.read_catalog`).
    ranks : iterable of int
        Ranks compared, under a uniform prior over them.
    n_runs : int
        Chib runs per evaluated rank. With one, the error of the estimate is its within-run
        standard error (``se_within`` of :func:`chib_log_evidence`); with more, the larger of
        that (over ``sqrt(n_runs)``) and the spread between runs, which also catches a run
        stuck in a poorer mode.
    prior, n_burn, n_keep, block_rows, block_burn, block_keep
        Passed to :func:`chib_log_evidence`.
    screen : bool
        Screen the ranks by the variational bound (above); False evaluates every rank.
    window : (int, int)
        Ranks below and above the best bound's rank evaluated first.
    level : float
        Level of the probability intervals (:func:`probabilities`).
    min_ess : float
        A rank whose smallest Rao-Blackwell effective number (over runs, blocks and samples)
        is below this is marked ``reliable = False``: its ordinate rests on a few draws and
        its evidence is biased upwards by an unknown amount, so it is left out of the
        probabilities (NaN; the note names it). Probabilities are over the reliable ranks.
    keep_draws : bool
        Keep the posterior draws of the run with the highest evidence at the most probable
        rank (``.attrs["draws"]``: ``(T_draws, V_draws)``).
    random_seed : int, optional
    progress : callable, optional
        Called with a line of text after each run.

    Returns
    -------
    pandas.DataFrame
        One row per rank: ``rank``, ``probability``, ``low``, ``high``, ``log_evidence``
        (mean over runs), ``se`` (its standard error), ``p_best`` (how often the rank came
        out highest when the errors are simulated), ``min_ess``, ``switch_share``,
        ``reliable``, ``evaluated``, ``vb_bound``; its ``attrs`` hold ``note`` (which ranks
        cannot be told apart, which were not evaluated), ``runs`` (every run's estimate) and
        ``draws``.
    """
    X = np.asarray(X)
    ranks = [int(k) for k in ranks]
    if not ranks or min(ranks) < 1 or len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be distinct positive integers, got {ranks}")
    if not (isinstance(n_runs, (int, np.integer)) and n_runs >= 1):
        raise ValueError(f"n_runs must be a positive integer, got {n_runs!r}")
    lo_w, hi_w = (int(w) for w in window)
    if lo_w < 0 or hi_w < 0:
        raise ValueError(f"window must be two non-negative integers, got {window}")
    ranks = sorted(ranks)
    Y = X.T
    root = np.random.SeedSequence(random_seed)
    screen_seed, run_seeds = root.spawn(2)
    seeds = dict(zip(ranks, run_seeds.spawn(len(ranks))))
    vb = {}
    if screen:
        for K, ss in zip(ranks, screen_seed.spawn(len(ranks))):
            vb[K] = vb_bound(Y, K, prior=None if prior is None else prior(Y, K),
                             random_seed=np.random.default_rng(ss))
            if progress is not None:
                progress(f"rank {K}: variational bound {vb[K][0]:.2f}")
        best_vb = max(ranks, key=lambda k: vb[k][0])
        todo = [k for k in ranks if best_vb - lo_w <= k <= best_vb + hi_w]
    else:
        todo = list(ranks)
    results, runs, draws = {}, [], {}

    def evaluate(K):
        values, within, ess, share = [], [], [], []
        for r, ss in enumerate(seeds[K].spawn(n_runs)):
            out = chib_log_evidence(Y, K, prior=None if prior is None else prior(Y, K),
                                    n_burn=n_burn, n_keep=n_keep, block_rows=block_rows,
                                    block_burn=block_burn, block_keep=block_keep,
                                    init=(vb[K][1], vb[K][2]) if K in vb else "vb",
                                    random_seed=np.random.default_rng(ss))
            values.append(out["log_evidence"])
            within.append(out["se_within"])
            ess.append(out["min_ess"])
            share.append(out["switch_share"])
            runs.append({"rank": K, "run": r, "log_evidence": out["log_evidence"],
                         "se_within": out["se_within"], "min_ess": out["min_ess"],
                         "sweeps": out["sweeps"]})
            if keep_draws and (K not in draws or out["log_evidence"] > draws[K][0]):
                draws[K] = (out["log_evidence"], out["T_draws"], out["V_draws"])
            if progress is not None:
                progress(f"rank {K} run {r + 1}/{n_runs}: log evidence "
                         f"{out['log_evidence']:.2f} (se {out['se_within']:.2f})")
        v, w = np.asarray(values), np.asarray(within)
        var = float(np.mean(w**2)) / len(v)
        if len(v) > 1:
            var = max(var, float(v.var(ddof=1)) / len(v))
        results[K] = (v.mean(), math.sqrt(var), min(ess), max(share))

    for K in todo:
        evaluate(K)
    while True:  # extend the evaluated ranks while the maximum sits at their edge
        # unreliable estimates included: biased upwards, they can only extend the search
        done = sorted(results)
        top = max(done, key=lambda k: results[k][0])
        nxt = ([k for k in ranks if k > top and k not in results][:1] if top == max(done)
               else [])
        nxt += ([k for k in ranks if k < top and k not in results][-1:] if top == min(done)
                else [])
        if not nxt:
            break
        for K in nxt:
            evaluate(K)
    rows = [(K, *results.get(K, (np.nan, np.nan, np.nan, np.nan)), K in results,
             vb[K][0] if K in vb else np.nan) for K in ranks]
    table = pd.DataFrame(rows, columns=["rank", "log_evidence", "se", "min_ess",
                                        "switch_share", "evaluated", "vb_bound"])
    reliable = (table["evaluated"] & (table["min_ess"] >= min_ess)).to_numpy()
    cols = {c: np.full(len(table), np.nan) for c in ("probability", "low", "high", "p_best")}
    if reliable.any():
        df = n_runs - 1 if n_runs > 1 else None
        out = probabilities(table["log_evidence"][reliable], table["se"][reliable],
                            df=df, level=level)
        for c, v in zip(cols, out):
            cols[c][reliable] = v
        _bound_unreliable(table, reliable, cols)
    for i, c in enumerate(("probability", "low", "high")):
        table.insert(1 + i, c, cols[c])
    table.insert(6, "p_best", cols["p_best"])
    table.insert(9, "reliable", reliable)
    table.attrs["note"] = _note(table)
    table.attrs["level"] = level
    table.attrs["runs"] = pd.DataFrame(runs)
    if reliable.any():
        best = int(table["rank"][table["probability"].idxmax()])
        table.attrs["draws"] = draws.get(best, (None, None, None))[1:]
    else:
        table.attrs["draws"] = (None, None)
    return table


def _bound_unreliable(table, reliable, cols):
    """Bounds where a rank's estimate is unreliable (in place on ``cols``).

    An ordinate resting on a few draws is underestimated, so such an evidence estimate is
    taken as an upper bound (plus 2 standard errors). An unreliable rank gets no probability
    but ``low = 0`` and ``high`` = its probability with its evidence at that bound and the
    reliable ranks at their estimates; a reliable rank's ``low`` falls to its probability when
    every unreliable rank sits at its bound. Without this the probabilities would be
    conditional on the reliable ranks only, and a calibration run showed that to be badly
    overconfident where the unreliable rank is the true one.
    """
    bad = (table["evaluated"].to_numpy() & ~reliable
           & np.isfinite(table["log_evidence"].to_numpy()))
    if not bad.any():
        return
    z = table["log_evidence"].to_numpy()
    upper = z + 2.0 * np.nan_to_num(table["se"].to_numpy(), nan=0.0)
    rel_sum = logsumexp(z[reliable])
    for i in np.flatnonzero(bad):
        cols["low"][i] = 0.0
        cols["high"][i] = math.exp(upper[i] - np.logaddexp(upper[i], rel_sum))
    worst = logsumexp(np.concatenate([z[reliable], upper[bad]]))
    cols["low"][reliable] = np.minimum(cols["low"][reliable], np.exp(z[reliable] - worst))


def _note(table):
    """One sentence: the most probable rank and the ranks it cannot be told apart from."""
    skipped = [int(r) for r in table.loc[~table["evaluated"], "rank"]]
    bad = [int(r) for r in table.loc[table["evaluated"] & ~table["reliable"], "rank"]]
    warn = ("" if not bad else
            "; rank(s) " + ", ".join(map(str, bad)) + " have no probability: their evidence "
            "rests on a few Gibbs draws (Rao-Blackwell ESS below the threshold), so it is "
            "biased upwards by an unknown amount; taken as an upper bound it gives them the "
            "probability bounds in 'high' and lowers the others' 'low' (typical of overfitted "
            "ranks; more sweeps may help)")
    if skipped:
        warn += ("; rank(s) " + ", ".join(map(str, skipped)) + " not evaluated (their "
                 "variational bound was far below the best; the probabilities are conditional "
                 "on the evaluated ranks)")
    if not table["reliable"].any():
        return "no rank has a reliable evidence estimate" + warn
    order = table[table["reliable"]].sort_values("probability", ascending=False)
    top = order.iloc[0]
    rivals = [int(r["rank"]) for _, r in order.iloc[1:].iterrows()
              if r["p_best"] >= 0.05 or r["probability"] >= 0.05]
    rivals += [int(r["rank"]) for _, r in table[table["evaluated"] & ~table["reliable"]
                                                 & (table["high"] >= 0.05)].iterrows()]
    text = f"most probable rank {int(top['rank'])} (probability {top['probability']:.3f})"
    if rivals:
        text += ("; cannot be told apart from rank(s) " + ", ".join(map(str, sorted(rivals)))
                 + " (probability, or its upper bound, >= 0.05, or the estimates' errors "
                 "could reverse the order)")
    return text + warn
