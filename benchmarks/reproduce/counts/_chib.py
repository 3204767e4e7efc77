"""Chib's estimate of the log evidence of Poisson NMF, an independent check of the VB bound.

Model (Cemgil 2009, Fig. 1; shape / rate here): ``T_dk ~ Gamma(a, b)``, ``V_kn ~ Gamma(a, b)``,
``X_dn ~ Poisson((T V)_dn)``, augmented by the sources ``S_dkn ~ Poisson(T_dk V_kn)`` with
``sum_k S_dkn = X_dn`` (multinomial given ``T, V``). Chib (1995, "Marginal likelihood from the
Gibbs output", JASA 90) writes, at any point ``(T*, V*)``,

    log p(X) = log p(X | T*, V*) + log p(T*) + log p(V*) - log p(T* | X) - log p(V* | T*, X)

and estimates the posterior ordinates by Rao-Blackwellization: ``p(T* | X)`` block of rows by
block of rows (each the mean over a Gibbs run of the Gamma full conditional of the block given
``S, V``, with the earlier blocks fixed at ``T*``), ``p(V* | T*, X)`` by the mean of
``p(V* | S, T*)`` over a last ("reduced") run with ``T`` fixed at ``T*``.

Label switching: the posterior is symmetric under the ``I!`` relabellings of the factors and a
Gibbs chain usually stays in one of them, so the plain average overestimates ``p(T* | X)`` by up
to ``I!`` (Neal 1999). Here the first block's ordinate is averaged over every relabelling
``sigma`` of ``T*`` (Berkhof, van Mechelen & Gelman 2003): ``mean_g mean_sigma p(sigma T* | S_g,
V_g)``, unbiased for ``p(T* | X)`` whether the chain visits one relabelling or all of them
(``I <= 7``; above, a random subset of ``max_perms`` relabellings). The later ordinates need no
such average (the fixed rows of ``T*`` fix the labels).

Plain numpy (a few milliseconds per sweep at 40 x 30); not part of the library. Checked against
an exact evidence (enumeration of ``S``, prior importance sampling of ``T``) by
:func:`exact_log_evidence` in ``tests/counts/test_cemgil_chib.py``.
"""

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = ["chib_log_evidence", "exact_log_evidence", "gibbs_sweeps"]


def _sources(X, T, V, rng):
    """Multinomial split of every count over the factors: ``S`` of shape (D, N, I)."""
    P = T[:, None, :] * V.T[None, :, :] + 1e-300
    P /= P.sum(axis=2, keepdims=True)
    return rng.multinomial(X, P)


def gibbs_sweeps(X, T, V, a, b, n_sweeps, rng, *, fixed_rows=0, keep=None):
    """Run ``n_sweeps`` Gibbs sweeps (S | T, V; T | S, V; V | S, T); call ``keep`` after each.

    The first ``fixed_rows`` rows of ``T`` stay fixed (all of them: ``V`` alone is sampled).
    ``keep(S_row_sums, S_col_sums, T, V)`` receives ``sum_n S`` (D, I) and ``sum_d S`` (I, N)
    drawn in that sweep and the ``T, V`` they were drawn from. Returns the final ``T, V``.
    """
    T = T.copy()
    for _ in range(n_sweeps):
        S = _sources(X, T, V, rng)
        s_dk, s_kn = S.sum(axis=1), S.sum(axis=0).T
        if keep is not None:
            keep(s_dk, s_kn, T, V)
        if fixed_rows < T.shape[0]:
            T[fixed_rows:] = rng.gamma(a + s_dk[fixed_rows:],
                                       1.0 / (b + V.sum(axis=1))[None, :])
        V = rng.gamma(a + s_kn, 1.0 / (b + T.sum(axis=0))[:, None])
    return T, V


def _gamma_logpdf(x, shape, rate):
    return shape * np.log(rate) - gammaln(shape) + (shape - 1.0) * np.log(x) - rate * x


def _permutations(rank, max_perms, rng):
    if math.factorial(rank) <= max_perms:
        return np.array(list(itertools.permutations(range(rank))))
    return np.array([rng.permutation(rank) for _ in range(max_perms)])


def _row_block_ordinate(shapes, rates, T_star, perms):
    """log mean_g mean_sigma prod_{d, k} Gamma(T*_{d, sigma k}; shapes_gdk, rates_gk)."""
    logT = np.log(T_star)
    I = T_star.shape[1]  # noqa: E741 (the paper's symbol)
    const = (shapes * np.log(rates)[:, None, :] - gammaln(shapes)).sum(axis=(1, 2))  # (G,)
    # M[g, k, l] = sum_d (shape_gdk - 1) log T*_dl - rate_gk sum_d T*_dl
    M = (np.einsum("gdk,dl->gkl", shapes - 1.0, logT)
         - rates[:, :, None] * T_star.sum(axis=0)[None, None, :])
    per = M[:, np.arange(I)[None, :], perms].sum(axis=2)  # (G, P)
    # (G,): one Rao-Blackwell term per draw, averaged over the relabellings
    logw = logsumexp(const[:, None] + per, axis=1) - math.log(per.shape[1])
    return float(logsumexp(logw) - math.log(logw.size)), _ess(logw)


def _ess(logw, axis=0):
    """Kish effective number of the Rao-Blackwell terms (1 = one draw carries the average)."""
    w = np.exp(logw - np.max(logw, axis=axis, keepdims=True))
    return w.sum(axis=axis) ** 2 / (w**2).sum(axis=axis)


def chib_log_evidence(X, rank, *, a=1.0, b=1.0, n_burn=500, n_keep=1000, block_rows=5,
                      max_perms=5040, random_seed=None):
    """Chib's estimate of ``log p(X)`` for Poisson NMF of order ``rank``, Gamma(a, b) priors.

    ``p(T* | X)`` is split into blocks of ``block_rows`` rows, ``prod_B p(T*_B | T*_<B, X)``,
    each from its own run with the earlier rows fixed (Chib 1995, Sec. 2.2): one Rao-Blackwell
    average over all of ``T`` (240 Gamma ordinates at 40 x 6) is dominated by a few draws and
    biased far upwards in ``log p(X)``. ``p(V* | T*, X)`` factorizes over columns given ``T*``
    and is estimated column by column from one run with ``T`` fixed.

    Parameters
    ----------
    X : array of int, shape (D, N)
    rank : int
        Number of factors (Cemgil's number of templates ``I``).
    a, b : float
        Gamma shape and rate of every entry of ``T`` and ``V``.
    n_burn, n_keep : int
        Burn-in and kept sweeps of the first run (later runs: ``n_burn // 2`` and ``n_keep``).
    block_rows : int
        Rows of ``T`` per block.
    max_perms : int
        Relabellings averaged in the first block's ordinate (all ``I!`` when
        ``I! <= max_perms``).
    random_seed : int, optional

    Returns
    -------
    dict
        ``log_evidence`` and its parts ``log_lik``, ``log_prior``, ``log_ord_T``,
        ``log_ord_V``, and ``log_ord_T_no_perm`` (the first block without the relabelling
        average, to show the label-switching term), ``min_ess`` (the smallest Kish effective
        number of Rao-Blackwell terms over the blocks and columns: when it is a few draws, the
        ordinate is underestimated and ``log_evidence`` too high).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 0], [2, 3]])
    >>> out = chib_log_evidence(X, 1, n_burn=50, n_keep=200, random_seed=0)
    >>> bool(np.isfinite(out["log_evidence"]))
    True
    """
    rng = np.random.default_rng(random_seed)
    X = np.asarray(X, dtype=np.int64)
    D, N = X.shape
    I = rank  # noqa: E741 (the paper's symbol)
    scale = math.sqrt(max(X.mean(), 1e-3) / I)
    T = rng.gamma(1.0, scale, (D, I))
    V = rng.gamma(1.0, scale, (I, N))
    T, V = gibbs_sweeps(X, T, V, a, b, n_burn, rng)
    Ts, Vs = [], []
    gibbs_sweeps(X, T, V, a, b, n_keep, rng,
                 keep=lambda s_dk, s_kn, T_, V_: (Ts.append(T_.copy()), Vs.append(V_)))
    T_star, V_star = np.mean(Ts, axis=0), np.mean(Vs, axis=0)

    log_ord_T, log_ord_T_no_perm, min_ess = 0.0, 0.0, float(n_keep)
    perms = _permutations(I, max_perms, rng)
    T_run = np.array(Ts[-1])
    V_run = Vs[-1]
    for start in range(0, D, block_rows):
        rows = slice(start, min(start + block_rows, D))
        shapes, rates = [], []
        T_run[:start] = T_star[:start]

        def keep_block(s_dk, s_kn, T_, V_, rows=rows):
            shapes.append(a + s_dk[rows])
            rates.append(b + V_.sum(axis=1))

        burn = n_burn // 2 if start > 0 else 0
        T_run, V_run = gibbs_sweeps(X, T_run, V_run, a, b, burn, rng, fixed_rows=start)
        T_run, V_run = gibbs_sweeps(X, T_run, V_run, a, b, n_keep, rng, fixed_rows=start,
                                    keep=keep_block)
        shp, rt = np.array(shapes), np.array(rates)
        if start == 0:
            block, ess = _row_block_ordinate(shp, rt, T_star[rows], perms)
            log_ord_T_no_perm += _row_block_ordinate(shp, rt, T_star[rows], perms[:1])[0]
        else:
            block, ess = _row_block_ordinate(shp, rt, T_star[rows], np.arange(I)[None, :])
            log_ord_T_no_perm += block
        log_ord_T += block
        min_ess = min(min_ess, ess)

    # reduced run with all of T fixed at T*: the columns of V are independent given T*
    s_kn_list = []
    _, V = gibbs_sweeps(X, T_star, V_star, a, b, n_burn // 2, rng, fixed_rows=D)
    gibbs_sweeps(X, T_star, V, a, b, n_keep, rng, fixed_rows=D,
                 keep=lambda s_dk, s_kn, T_, V_: s_kn_list.append(a + s_kn))
    shv = np.array(s_kn_list)  # (G, I, N)
    rtv = (b + T_star.sum(axis=0))[None, :, None]
    per_col = _gamma_logpdf(V_star[None], shv, rtv).sum(axis=1)  # (G, N)
    log_ord_V = float((logsumexp(per_col, axis=0) - math.log(len(shv))).sum())
    min_ess = min(min_ess, float(_ess(per_col).min()))

    lam = T_star @ V_star
    log_lik = float((X * np.log(lam) - lam - gammaln(X + 1.0)).sum())
    log_prior = float(_gamma_logpdf(T_star, a, b).sum() + _gamma_logpdf(V_star, a, b).sum())
    return {"log_evidence": log_lik + log_prior - log_ord_T - log_ord_V, "log_lik": log_lik,
            "log_prior": log_prior, "log_ord_T": log_ord_T, "log_ord_V": log_ord_V,
            "log_ord_T_no_perm": log_ord_T_no_perm, "min_ess": min_ess}


def _compositions(x, parts):
    """Every way to write the count ``x`` as an ordered sum of ``parts`` nonnegative integers."""
    if parts == 1:
        yield (x,)
        return
    for first in range(x + 1):
        for rest in _compositions(x - first, parts - 1):
            yield (first, *rest)


def exact_log_evidence(X, rank, *, a=1.0, b=1.0, n_prior=200_000, random_seed=None):
    """``log p(X)`` of a tiny matrix: ``V`` integrated exactly, ``S`` enumerated, ``T`` by MC.

    Given ``T`` and the sources of column ``n``, ``V_kn`` integrates in closed form:
    ``p(x_n | T) = sum_S prod_k b^a Gamma(a + s_kn) / (Gamma(a) (b + sum_d T_dk)^(a + s_kn))
    prod_d T_dk^s_dkn / s_dkn!``; ``p(X) = E_{T ~ prior} prod_n p(x_n | T)`` is then averaged
    over ``n_prior`` prior draws of ``T``. Returns ``(log p(X), standard error of log p(X))``
    (delta method). Cost: ``n_prior`` times the number of source configurations.
    """
    rng = np.random.default_rng(random_seed)
    X = np.asarray(X, dtype=np.int64)
    D, N = X.shape
    I = rank  # noqa: E741 (the paper's symbol)
    T = rng.gamma(a, 1.0 / b, (n_prior, D, I))
    logT, colsum = np.log(T), T.sum(axis=1)  # (M, D, I), (M, I)
    total = np.zeros(n_prior)
    for n in range(N):
        terms = []
        for config in itertools.product(*(_compositions(int(X[d, n]), I) for d in range(D))):
            s = np.array(config, dtype=float)  # (D, I)
            s_k = s.sum(axis=0)
            term = (a * math.log(b) - gammaln(a) + gammaln(a + s_k)).sum() - gammaln(s + 1).sum()
            term = term - ((a + s_k)[None, :] * np.log(b + colsum)).sum(axis=1)
            term = term + np.einsum("di,mdi->m", s, logT)
            terms.append(term)
        total += logsumexp(np.array(terms), axis=0)
    log_z = logsumexp(total) - math.log(n_prior)
    w = np.exp(total - total.max())
    se = w.std(ddof=1) / math.sqrt(n_prior) / w.mean()
    return float(log_z), float(se)
