"""Rank-normalized split R-hat and bulk ESS of many entries at once (Vehtari et al. 2021).

The same numbers as ``arviz_stats.rhat(method="rank")`` and ``arviz_stats.ess(method="bulk")``
entry by entry, to floating-point rounding (``tests/diagnostics/test_fast_convergence.py``), but
vectorized over the entries: one ranking of every entry's draws, one FFT of every chain's
autocovariance, and Geyer's (1992) initial positive and initial monotone sequences as array
operations on the pair sums, not a Python loop per entry. The unconverged-chains check of
:func:`bnmfzoo.diagnostics.align` and of ``BayesianNMF.fit`` reads every entry of ``A`` and
``W`` through it.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC. *Bayesian
Analysis* 16(2), 667-718.

Geyer, C. J. (1992). Practical Markov chain Monte Carlo. *Statistical Science* 7(4), 473-483.

Blom, G. (1958). *Statistical Estimates and Transformed Beta-Variables*. Wiley, New York.
"""

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.special import ndtri

#: draws per group of entries computed at once (bounds the temporaries: ~10 x 8 bytes each)
CHUNK_VALUES = 1 << 20


def rhat_ess_bulk(draws):
    """Rank-normalized split R-hat and bulk ESS of every entry of ``draws``.

    Parameters
    ----------
    draws : array_like, shape (chains, draws, ...)
        MCMC draws; every trailing index is one entry.

    Returns
    -------
    rhat, ess : numpy.ndarray, shape ``draws.shape[2:]``
        R-hat, the larger of the bulk and the folded (tail) split R-hat on rank-normalized
        draws; NaN with fewer than 2 chains. Bulk ESS, on the rank-normalized split chains.
        Both NaN for an entry with a NaN draw or with fewer than 4 draws per chain, as in
        arviz-stats.

    Raises
    ------
    ValueError
        If ``draws`` has fewer than 2 dimensions.
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"draws: need dims (chain, draw, ...), got shape {x.shape}")
    C, S = x.shape[:2]
    shape = x.shape[2:]
    x = x.reshape(C, S, -1)
    rhat = np.full(x.shape[2], np.nan)
    ess = np.full(x.shape[2], np.nan)
    if S < 4 or x.shape[2] == 0:
        return rhat.reshape(shape), ess.reshape(shape)
    ok = np.flatnonzero(~np.isnan(x).any((0, 1)))  # arviz-stats: a NaN draw gives NaN
    # entries in groups of about CHUNK_VALUES draws: the temporaries (about ten times the
    # draws) stay bounded whatever the size of the factors
    step = max(1, CHUNK_VALUES // (C * S))
    for i in range(0, ok.size, step):
        cols = ok[i:i + step]
        rhat[cols], ess[cols] = _entries(x[:, :, cols], C >= 2)
    return rhat.reshape(shape), ess.reshape(shape)


def _entries(x, chains):
    """R-hat (NaN unless ``chains``) and bulk ESS of (chains, draws, entries) NaN-free draws."""
    S = x.shape[1]
    half = S // 2
    # (entries, split chains, draws): each entry's draws contiguous for the sorts and FFTs
    split = np.ascontiguousarray(
        np.concatenate((x[:, :half], x[:, S - half:]), 0).transpose(2, 0, 1))
    z, z_folded = _z_scale(split)
    ess = _ess(z, constant=np.ptp(z, (1, 2)) < np.finfo(float).resolution)
    rhat = np.full(ess.shape, np.nan)
    if chains:
        with np.errstate(invalid="ignore", divide="ignore"):
            bulk = _rhat(z)
            # arviz-stats' max(bulk, tail): NaN when the bulk R-hat is, else the larger
            rhat = np.where(np.isnan(bulk), np.nan, np.fmax(bulk, _rhat(z_folded)))
    return rhat, ess


def _z_scale(split):
    """Blom's normal scores of each entry's ranks, and of its folded draws ``|x - median|``.

    Ranks over all of an entry's draws, ties averaged (Vehtari et al. 2021).

    The ranks are those of ``scipy.stats.rankdata(method="average")``: a tie group at sorted
    positions ``first .. last`` (from 0) gets ``(first + last) / 2 + 1``, so twice the rank is an
    integer and the normal scores are read from a table of the ``2N - 1`` possible values.
    """
    E, M, n = split.shape
    N = M * n
    flat = split.reshape(E, N)
    table = ndtri((np.arange(2 * N - 1) / 2.0 + 1.0 - 0.375) / (N - 2 * 0.375 + 1))
    order = np.argsort(flat, axis=1)
    s = np.take_along_axis(flat, order, 1)
    z = _scores(s, order, table)
    folded = np.abs(flat - ((s[:, (N - 1) // 2] + s[:, N // 2]) / 2.0)[:, None])  # the median
    order = np.argsort(folded, axis=1)
    zf = _scores(np.take_along_axis(folded, order, 1), order, table)
    return z.reshape(E, M, n), zf.reshape(E, M, n)


def _scores(s, order, table):
    """Normal scores in the original order: ``s`` sorted rows, ``order`` their positions.

    Without ties the k-th smallest draw gets the k-th score; the (usually few) tie groups are
    then given their average rank's score, group by group.
    """
    E, N = s.shape
    sorted_z = np.tile(table[::2], (E, 1))
    tied = np.flatnonzero(s[:, 1:] == s[:, :-1])  # row r, position p + 1 equals position p
    if tied.size:
        row, p = np.divmod(tied, N - 1)
        # runs of consecutive tied pairs in a row form one group: first .. last
        start = np.ones(tied.size, bool)
        start[1:] = (p[1:] != p[:-1] + 1) | (row[1:] != row[:-1])
        gid = np.cumsum(start) - 1
        first = p[start]
        last = np.zeros(first.size, np.intp)
        np.maximum.at(last, gid, p + 1)
        size = last - first + 1
        g_rows = np.repeat(row[start], size)
        g_pos = np.repeat(first - np.cumsum(np.concatenate(([0], size[:-1]))), size) \
            + np.arange(size.sum())
        sorted_z[g_rows, g_pos] = np.repeat(table[first + last], size)
    z = np.empty((E, N))
    z[np.arange(E)[:, None], order] = sorted_z
    return z


def _rhat(z):
    """Split R-hat of (entries, chains, draws) values (Gelman et al. 2013, eq. 11.4)."""
    n = z.shape[2]
    between = n * np.var(z.mean(2), axis=1, ddof=1)
    within = np.var(z, axis=2, ddof=1).mean(1)
    return np.sqrt((between / within + n - 1) / n)


def _ess(z, constant):
    """ESS of (entries, chains, draws) values, Geyer's initial monotone sequence per entry.

    ``constant`` marks entries whose draws do not vary: their ESS is the number of draws.
    """
    E, M, n = z.shape
    m = next_fast_len(2 * n)
    f = rfft(z - z.mean(2, keepdims=True), n=m, axis=2)
    # the chains' mean autocovariance: one inverse FFT of their mean power spectrum
    power = (f.real ** 2 + f.imag ** 2).mean(1)
    mean_acov = np.ascontiguousarray(irfft(power, n=m, axis=1)[:, :n].T) / n  # (n, E)
    mean_var = mean_acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + np.var(z.mean(2), axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (mean_var - mean_acov) / var_plus  # rho[t], t >= 1; rho[0] := 1
    rho[0] = 1.0
    # pair sums Q_j = rho[2j] + rho[2j + 1]; Geyer's positive sequence reads pair j + 1 while
    # j stays below j_max (the lag limit n - 3) and Q_j > 0
    j_max = max(0, (n - 3) // 2)  # number of j >= 0 with 2j + 1 < n - 3
    q = rho[0:2 * j_max + 2:2] + rho[1:2 * j_max + 2:2]  # (j_max + 1, E)
    stop = q[:j_max] <= 0  # the loop ends at the first j whose pair sum is not positive
    J = np.where(stop.any(0), stop.argmax(0) if j_max else 0, j_max)  # pairs read: 1 .. J
    # initial monotone sequence: pairs 1 .. J - 1 become the running minimum of the pair sums
    mono = np.minimum.accumulate(q, axis=0)
    kept = np.arange(q.shape[0])[:, None] < J[None, :]
    tau = -1.0 + 2.0 * np.where(kept, mono, 0.0).sum(0)
    cols = np.arange(E)
    even = rho[2 * J, cols]  # the last even lag read, kept when its pair sum or itself is >= 0
    q_last = q[J, cols]
    last = np.where(J == 0, 1.0, np.where((q_last >= 0) | (even > 0), even, 0.0))
    tau = tau + last
    N = M * n
    ess = N / np.maximum(tau, 1.0 / np.log10(N))
    ess[np.isnan(rho).any(0)] = np.nan
    ess[constant] = N
    return ess
