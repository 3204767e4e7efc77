"""Simulation-based calibration (Talts et al. 2018) for any model and inference method.

For ``s = 1..n_sims``: draw parameters ``theta_s`` and data ``y_s`` from the prior predictive,
run the inference method on ``y_s``, and record the rank of each scalar of ``theta_s`` among the
method's ``L_s`` posterior draws. If the method samples the exact posterior with independent
draws, every rank is uniform on ``{0, ..., L_s}``. We test that with the *randomized* probability
integral transform ``u = (rank + U(0, 1)) / (L_s + 1)``, which is exactly ``U(0, 1)`` under the
null hypothesis (for any ``L_s``), so a Kolmogorov-Smirnov test has exact size; the smallest
p-value over all scalars is compared with a Bonferroni-corrected level.

Autocorrelated draws make the ranks non-uniform even when every draw has the right marginal
(the draws cluster, and the true value falls outside the cluster too often). Markov chains are
therefore thinned by their *measured* effective sample size: with ``thin="ess"`` each
simulation's chain is thinned by ``ceil(n / ESS)``, where ESS is the smallest bulk or tail
effective sample size (Vehtari et al. 2021, arviz-stats) over all tested scalars of that chain,
so about ESS nearly independent draws are kept. The measured ESS and thinning of every
simulation are recorded in the result.

References
----------
Talts, Betancourt, Simpson, Vehtari, Gelman (2018). Validating Bayesian inference algorithms with
simulation-based calibration. arXiv:1804.06788.
Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC. Bayesian Analysis 16(2).
Säilynoja, Bürkner, Vehtari (2022). Graphical test for discrete uniformity and its applications
in goodness-of-fit evaluation and multiple sample comparison. Statistics and Computing 32(32).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.fft import irfft, next_fast_len, rfft

from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator

#: smallest chain length ``thin="ess"`` accepts (the ESS estimators need a few hundred draws to
#: see autocorrelation times of tens of iterations)
MIN_CHAIN = 50


@dataclass
class SBCResult:
    """Rank statistics of a simulation-based calibration run.

    Attributes
    ----------
    ranks : dict of str to numpy.ndarray
        Per parameter, ranks of the true value among the kept draws, shape
        ``(n_sims, *param_shape)``, integers in ``0..n_draws[s]``.
    n_draws : numpy.ndarray
        Number of kept posterior draws of each simulation (L_s), shape ``(n_sims,)``.
    pvalues : dict of str to numpy.ndarray
        Per parameter and scalar, the KS p-value of the randomized PIT against U(0, 1).
    pit : dict of str to numpy.ndarray
        Per parameter, the randomized PIT values ``(rank + U) / (n_draws + 1)``, shape
        ``(n_sims, *param_shape)``; U(0, 1) under an exact sampler.
    ess : numpy.ndarray or None
        With ``thin="ess"``: per simulation, the smallest bulk/tail ESS over all scalars of the
        chain, measured before thinning; otherwise None.
    thin : numpy.ndarray
        Thinning applied to each simulation's draws, shape ``(n_sims,)``.
    """

    ranks: dict
    n_draws: np.ndarray
    pvalues: dict
    pit: dict
    ess: np.ndarray | None
    thin: np.ndarray

    @property
    def n_sims(self):
        """Number of simulations."""
        return next(iter(self.ranks.values())).shape[0]

    @property
    def n_tests(self):
        """Number of scalar parameters tested."""
        return int(sum(p.size for p in self.pvalues.values()))

    @property
    def min_pvalue(self):
        """Smallest p-value over all scalars."""
        return float(min(p.min() for p in self.pvalues.values()))

    @property
    def adjusted_pvalue(self):
        """Bonferroni-adjusted smallest p-value, ``min(1, n_tests * min_pvalue)``."""
        return min(1.0, self.n_tests * self.min_pvalue)

    def passed(self, alpha=0.01):
        """True if no scalar rejects uniformity at Bonferroni level ``alpha / n_tests``."""
        return self.min_pvalue > alpha / self.n_tests

    def to_datatree(self):
        """The PIT values as a DataTree with a ``prior_sbc`` group (sample dim ``sim``)."""
        import xarray as xr

        data = {
            name: (("sim", *(f"{name}_dim_{i}" for i in range(u.ndim - 1))), u)
            for name, u in self.pit.items()
        }
        return xr.DataTree.from_dict({"prior_sbc": xr.Dataset(data)})

    def plot(self, *, prob=0.99, var_names=None, **kwargs):
        """PIT Δ-ECDF of every scalar with a simultaneous ``prob`` band (arviz-plots).

        Each panel shows ECDF(u) - u of one scalar's randomized PITs over the simulations
        (:func:`arviz_plots.plot_ecdf_pit`); the shaded band holds the *whole* curve with
        probability ``prob`` under uniformity (Säilynoja et al. 2022; :func:`ecdf_band`). The
        band is simultaneous over one panel, not over panels: :meth:`passed` makes the
        Bonferroni correction over scalars.

        arviz-plots 1.3.2 draws this band itself only with ``method="envelope"``, which fails
        there (``np.linspace`` on a DataArray), so the band is added to the collection here;
        ``plot_ecdf_pit``'s own pointwise highlights and its p-value (a different uniformity
        test) are switched off and can be switched on with ``visuals``.

        Parameters
        ----------
        prob : float
            Simultaneous coverage of each panel's band.
        var_names : str or list of str, optional
            Parameters to plot (default all).
        **kwargs
            Passed to :func:`arviz_plots.plot_ecdf_pit`.

        Returns
        -------
        arviz_plots.PlotCollection

        Examples
        --------
        >>> def simulate(rng):
        ...     mu = rng.normal()
        ...     return {"mu": np.array(mu)}, rng.normal(mu, 1.0, size=5)
        >>> def infer(y, rng):
        ...     return {"mu": rng.normal(y.sum() / 6, np.sqrt(1 / 6), size=(99,))}
        >>> result = sbc(simulate, infer, n_sims=50, random_seed=0, progressbar=False)
        >>> pc = result.plot()
        >>> "mu" in pc.viz["sbc_band"]
        True
        """
        from arviz_plots import plot_ecdf_pit
        from arviz_plots.visuals import fill_between_y

        dt = self.to_datatree()
        visuals = {"suspicious_points": False, "p_value_text": False,
                   **kwargs.pop("visuals", {})}
        pc = plot_ecdf_pit(dt, group="prior_sbc", sample_dims="sim", var_names=var_names,
                           envelope_prob=prob, visuals=visuals, **kwargs)
        x, lower, upper = ecdf_band(self.n_sims, prob)
        names = [var_names] if isinstance(var_names, str) else var_names
        data = dt["prior_sbc"].to_dataset()
        pc.map(fill_between_y, "sbc_band", data=data if names is None else data[names],
               x=x, y_bottom=lower - x, y_top=upper - x, step=True, color="B1", alpha=0.2,
               ignore_aes=pc.aes_set)
        return pc


def ecdf_band(n, prob=0.99):
    """Simultaneous ``prob`` band for the ECDF of ``n`` independent U(0, 1) values.

    The band of Säilynoja, Bürkner and Vehtari (2022), computed by simulation with arviz-stats
    exactly as :func:`arviz_plots.plot_ecdf_pit` does for ``method="envelope"``: pointwise
    binomial intervals at the adjusted level that makes the whole ECDF, evaluated at
    ``x = 0, 1/n, ..., 1``, stay inside with probability ``prob``.

    Returns
    -------
    x, lower, upper : numpy.ndarray
        Evaluation points and band limits of the ECDF (not of ECDF - x).

    Examples
    --------
    >>> x, lo, hi = ecdf_band(100, 0.95)
    >>> bool(((lo <= x) & (x <= hi)).all())
    True
    """
    from arviz_stats.ecdf_utils import ecdf_pit

    x, _, lower, upper = ecdf_pit(np.linspace(0, 1, n), prob, n_simulations=1000)
    return x, lower, upper


def _tested_scalars(draws, truth):
    """(n_draws, n_scalars) matrix of every tested scalar's draws."""
    cols = [np.asarray(draws[name], dtype=float).reshape(len(draws[name]), -1) for name in truth]
    return np.concatenate(cols, axis=1)


def _ess_split(x):
    """ESS of each row of ``x`` (S, n): one chain split in halves.

    Geyer's initial monotone sequence on FFT autocovariances: the estimator of Stan and
    arviz-stats (``_ess``), vectorized over rows (equal to ``arviz_stats`` to rounding, checked
    in the tests).
    """
    S, n = x.shape
    h = n // 2
    y = np.stack((x[:, :h], x[:, -h:]), axis=1)  # (S, 2 halves, h)
    yc = y - y.mean(axis=2, keepdims=True)
    L = next_fast_len(2 * h)
    f = rfft(yc, n=L, axis=2)
    acov = irfft(f * np.conj(f), n=L, axis=2)[..., :h] / h
    mean_var = acov[:, :, 0].mean(axis=1) * h / (h - 1.0)
    var_plus = mean_var * (h - 1.0) / h + np.var(y.mean(axis=2), axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho[:, 0] = 1.0
    n_pairs = (h - 1) // 2
    P = rho[:, 0 : 2 * n_pairs : 2] + rho[:, 1 : 2 * n_pairs : 2]  # sums of lags 2j, 2j+1
    j_last = min((h - 4) // 2 + 1, n_pairs - 1)  # last pair the sequential rule looks at
    nonpos = P[:, 1 : j_last + 1] <= 0
    hit = nonpos.any(axis=1)
    J = np.where(P[:, 0] <= 0, 0, np.where(hit, np.argmax(nonpos, axis=1) + 1, j_last))
    monotone = np.minimum.accumulate(P, axis=1)
    tau = -1.0 + 2.0 * np.where(np.arange(P.shape[1]) < J[:, None], monotone, 0.0).sum(axis=1)
    r = rho[np.arange(S), 2 * J]
    tau += np.where(hit & (r <= 0), 0.0, r)
    ess = 2 * h / np.maximum(tau, 1 / np.log10(2 * h))
    return np.where(np.ptp(y.reshape(S, -1), axis=1) < np.finfo(float).resolution, 2 * h, ess)


def ess_bulk_tail(x):
    """Bulk and tail ESS of each row of ``x`` (S scalars, n consecutive draws of one chain).

    Bulk: ESS of the rank-normalized split chain; tail: the smaller ESS of the indicators of
    the 5% and 95% quantiles (Vehtari et al. 2021). Equal to ``arviz_stats`` ``ess(method=
    "bulk")`` and ``ess(method="tail")`` on one chain, about 10x faster for many scalars.

    Returns
    -------
    bulk, tail : numpy.ndarray
        Shape ``(S,)`` each.
    """
    x = np.asarray(x, dtype=float)
    h = x.shape[1] // 2
    y = np.concatenate((x[:, :h], x[:, -h:]), axis=1)
    z = stats.norm.ppf((stats.rankdata(y, axis=1) - 3 / 8) / (2 * h + 1 / 4))
    q = np.quantile(x, [0.05, 0.95], axis=1)
    tail = np.minimum(_ess_split((x <= q[0][:, None]).astype(float)),
                      _ess_split((x <= q[1][:, None]).astype(float)))
    return _ess_split(z), tail


def chain_ess(draws, names=None):
    """Smallest bulk and tail effective sample size over all scalars of one chain.

    Parameters
    ----------
    draws : dict of str to numpy.ndarray
        Consecutive states of one Markov chain, each of shape ``(n, *param_shape)``.
    names : iterable of str, optional
        Parameters to include (default all).

    Returns
    -------
    float
        ``min`` over scalars of ``min(bulk ESS, tail ESS)`` (:func:`ess_bulk_tail`). Constant
        scalars count as independent (ESS = n).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.zeros(2000)
    >>> for t in range(1, 2000):  # AR(1), rho = 0.9: ESS about 2000 * 0.1 / 1.9 = 105
    ...     x[t] = 0.9 * x[t - 1] + rng.normal()
    >>> 60 < chain_ess({"x": x}) < 180
    True
    """
    names = list(draws) if names is None else list(names)
    mat = _tested_scalars(draws, names).T  # (n_scalars, n)
    if mat.shape[1] < MIN_CHAIN:
        raise ValueError(f"chain_ess needs at least {MIN_CHAIN} draws, got {mat.shape[1]}")
    if not np.isfinite(mat).all():
        raise ValueError("the chain has non-finite draws")
    bulk, tail = ess_bulk_tail(mat)
    return float(np.min(np.minimum(bulk, tail)))


def run_to_ess(step, *, ess_target=30, min_draws=100, max_draws=50_000):
    """Run a Markov chain until its effective sample size reaches ``ess_target``.

    The chain runs ``min_draws`` iterations, then doubles its length until :func:`chain_ess`
    (smallest bulk/tail ESS over every returned scalar) reaches ``ess_target`` or the length
    would pass ``max_draws``. Slowly mixing data sets get longer chains instead of fewer
    effective draws; thin the result with ``sbc(thin="ess")``.

    Parameters
    ----------
    step : callable
        ``step() -> dict`` advances the chain by one iteration (after burn-in) and returns the
        tested quantities of the new state (name -> array).
    ess_target : float
    min_draws, max_draws : int

    Returns
    -------
    dict of str to numpy.ndarray
        Consecutive states, each ``(n, *shape)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> state = [0.0]
    >>> def step():  # AR(1), rho = 0.95: autocorrelation time 39
    ...     state[0] = 0.95 * state[0] + rng.normal()
    ...     return {"x": np.array(state[0])}
    >>> draws = run_to_ess(step, ess_target=30)
    >>> len(draws["x"]) >= 800, chain_ess(draws) >= 30
    (True, True)
    """
    if not (ess_target > 0 and MIN_CHAIN <= min_draws <= max_draws):
        raise ValueError(f"need ess_target > 0 and {MIN_CHAIN} <= min_draws <= max_draws")
    draws, n_next = {}, min_draws
    while True:
        while len(next(iter(draws.values()), ())) < n_next:
            for name, value in step().items():
                draws.setdefault(name, []).append(np.array(value, dtype=float))
        out = {name: np.array(v) for name, v in draws.items()}
        if chain_ess(out) >= ess_target or 2 * n_next > max_draws:
            return out
        n_next *= 2


def _thinning(thin, d_all, truth):
    """Thinning factor and measured ESS for one simulation."""
    n = len(next(iter(d_all.values())))
    if thin is None:
        return 1, None
    if thin == "ess":
        if n < MIN_CHAIN:
            raise ValueError(
                f'thin="ess" needs chains of at least {MIN_CHAIN} consecutive draws, got {n}'
            )
        ess = chain_ess(d_all, truth)
        return max(1, math.ceil(n / ess)), ess
    return int(thin), None


def sbc(simulate, infer, *, n_sims=200, thin=None, random_seed=None, progressbar=True):
    """Run simulation-based calibration.

    Parameters
    ----------
    simulate : callable
        ``simulate(rng) -> (truth, data)``: draw parameters from the prior (a dict of name ->
        array) and data given them.
    infer : callable
        ``infer(data, rng) -> draws``: a dict with the same names, each an array of shape
        ``(n_draws, *param_shape)`` of posterior draws (independent ones, or consecutive states
        of one Markov chain after burn-in with ``thin="ess"``).
    n_sims : int
        Number of simulated data sets.
    thin : None, int or "ess"
        How each simulation's draws are thinned before ranking. None: used as returned.
        An int ``k``: every ``k``-th draw is kept. ``"ess"``: the draws are one chain; its
        ESS (:func:`chain_ess`, smallest bulk/tail ESS over the tested scalars) is measured and
        every ``ceil(n_draws / ESS)``-th draw is kept, about ESS nearly independent draws
        (Talts et al. 2018, sec. 5). The chain must be long enough for a useful ESS (run it
        with :func:`run_to_ess`): the kept counts are in ``SBCResult.n_draws``, the measured
        ESS in ``SBCResult.ess``. Burn-in is the caller's: the split-chain ESS drops for a
        chain that has not forgotten its start, so ``run_to_ess`` lengthens such a chain, but
        its first draws are kept.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    SBCResult

    Examples
    --------
    A conjugate normal model with an exact sampler passes:

    >>> import numpy as np
    >>> def simulate(rng):
    ...     mu = rng.normal()
    ...     return {"mu": np.array(mu)}, rng.normal(mu, 1.0, size=5)
    >>> def infer(y, rng):  # posterior N(sum(y)/6, 1/6)
    ...     return {"mu": rng.normal(y.sum() / 6, np.sqrt(1 / 6), size=(99,))}
    >>> result = sbc(simulate, infer, n_sims=100, random_seed=0, progressbar=False)
    >>> result.passed()
    True
    """
    if not isinstance(n_sims, int | np.integer) or n_sims < 2:
        raise ValueError(f"n_sims must be an integer >= 2, got {n_sims!r}")
    if not (thin is None or thin == "ess" or (isinstance(thin, int | np.integer) and thin >= 1)):
        raise ValueError(f'thin must be None, a positive integer or "ess", got {thin!r}')
    rng = as_generator(random_seed)
    ranks = {}
    n_draws = np.empty(n_sims, dtype=int)
    thins = np.empty(n_sims, dtype=int)
    ess = np.full(n_sims, np.nan) if thin == "ess" else None
    for s in progress(total=n_sims, desc="SBC", progressbar=progressbar):
        truth, data = simulate(rng)
        d_all = {}
        raw = infer(data, rng)
        for name, value in truth.items():
            value = np.asarray(value, dtype=float)
            if name not in raw:
                raise ValueError(f"infer returned no draws of {name!r}")
            d = np.asarray(raw[name], dtype=float)
            if d.ndim < 1 or d.shape[1:] != value.shape:
                raise ValueError(
                    f"draws[{name!r}] has shape {d.shape}; expected (n_draws, *{value.shape})"
                )
            d_all[name] = d
        if len({len(d) for d in d_all.values()}) > 1:
            raise ValueError("every parameter's draws must have the same length")
        k, e = _thinning(thin, d_all, truth)
        thins[s] = k
        if ess is not None:
            ess[s] = e
        for name, value in truth.items():
            value = np.asarray(value, dtype=float)
            d = d_all[name][::k]
            n_draws[s] = len(d)
            less = (d < value).sum(axis=0)
            ties = (d == value).sum(axis=0)
            rank = less + rng.integers(0, ties + 1)  # random tie-breaking keeps ranks uniform
            ranks.setdefault(name, np.empty((n_sims, *value.shape), dtype=int))[s] = rank
    pvalues, pit = {}, {}
    for name, r in ranks.items():
        L = n_draws.reshape((n_sims,) + (1,) * (r.ndim - 1))
        u = (r + rng.uniform(size=r.shape)) / (L + 1)
        flat = u.reshape(n_sims, -1)
        p = np.array([stats.kstest(flat[:, j], "uniform").pvalue for j in range(flat.shape[1])])
        pvalues[name] = p.reshape(r.shape[1:])
        pit[name] = u
    return SBCResult(ranks=ranks, n_draws=n_draws, pvalues=pvalues, pit=pit, ess=ess,
                     thin=thins)
