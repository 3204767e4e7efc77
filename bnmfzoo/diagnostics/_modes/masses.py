"""Mode masses of an MCMC run with their Monte-Carlo errors, or an honest label (NumPy core).

Given the mode of every draw (``label``, chains x draws), the mass of mode ``k`` is estimated
by the fraction of draws in it, ``p_k = mean(1[label = k])``, **only when the chains cross
between the modes**: then the indicator series ``1[label = k]`` of each chain is an
autocorrelated but ergodic series, and its mean has a Monte-Carlo standard error (MCSE)
estimated by batch means (Flegal, Haran & Jones 2008, "Markov chain Monte Carlo: can we trust
the third significant figure?", Statist. Sci. 23(2); each chain is cut into contiguous batches,
the batch means of all chains are pooled, and ``MCSE = sd(batch means) / sqrt(n_batches)``).
A mode's mass is then as good as the number of separate visits to it: with a rare mode
(0.4 % of the draws) the estimate rests on its visits, not on the number of draws.

What the user should read is the **95 % interval** ``weight_low``-``weight_high``
(:func:`mass_interval`), not ``weight +- weight_mcse``: one MCSE covers the truth in about
68 % of runs by construction, and a rare mode's share is skewed (a run that by chance saw
fewer visits also states a smaller error). Measured on ``laurberg(0.5)``, sigma 0.05, with the
default replica exchange (``benchmarks/RESULTS.md`` §3.7): the minor solution's indicator has
an integrated autocorrelation time of 6-10 draws (23 with the older 8-rung ladder), far below
the batches of 4000 draws, so the batch-means MCSE is not biased by short batches; over
pieces of four 100,000-200,000-draw chains the spread of the estimates equals the
root-mean-square MCSE (0.00109 against 0.00112 at 20,000 draws), one MCSE covered 0.65-0.70
and the interval 0.93-0.97.

When no chain ever changes mode (plain Gibbs chains started in different places), the fraction
of draws in a mode is the fraction of chains that started there: it says nothing about the
mode's mass (on ``laurberg(0.5)``, sigma 0.05, it is 0.75 for a solution holding 0.0042 of the
posterior). :func:`mode_masses` then returns no mass (``weight`` NaN), reports the number as
``share_of_chains`` and says what to run instead (replica exchange). When the chains do cross
but too rarely, or disagree (split R-hat of an indicator above ``max_rhat``), the draw share is
kept as the weight with its MCSE and a warning that it is not yet a reliable mass.

Only modes the chains visit can be listed: a mode no chain visits has an unknown mass, not a
zero one.
"""

import math

import numpy as np

__all__ = ["NOTES", "LEVEL", "batch_means_mcse", "indicator_rhat", "mass_interval",
           "mode_masses", "note", "visits"]

#: total number of batches pooled over chains for the batch-means MCSE
N_BATCHES = 20
#: level of the interval ``weight_low``-``weight_high`` :func:`mode_masses` reports
LEVEL = 0.95


def batch_means_mcse(ind, n_batches=N_BATCHES):
    """Batch-means Monte-Carlo standard error of the mean of a (chain, draw) series.

    Each chain is cut into ``max(2, ceil(n_batches / C))`` contiguous batches of equal length
    (the last ``S mod L`` draws are left out of the batches); the MCSE is the standard deviation
    of all batch means over the square root of their number.

    Parameters
    ----------
    ind : array-like
        ``(C, S)`` values (for a mode mass: the 0/1 indicator of the mode).
    n_batches : int
        Total number of batches (over all chains).

    Returns
    -------
    float
        The MCSE (NaN with fewer than 2 draws per batch).

    Examples
    --------
    >>> x = np.random.default_rng(0).random((4, 1000)) < 0.3
    >>> round(batch_means_mcse(x), 4)
    0.0081
    """
    x = np.asarray(ind, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"ind must be a (chain, draw) array, got shape {x.shape}")
    C, S = x.shape
    b = n_batches_of(C, n_batches)
    L = S // b
    if L < 2:
        return math.nan
    means = x[:, : b * L].reshape(C, b, L).mean(axis=-1).ravel()
    return float(means.std(ddof=1) / math.sqrt(means.size))


def n_batches_of(C, n_batches=N_BATCHES):
    """Batches per chain of :func:`batch_means_mcse` for ``C`` chains."""
    return max(2, math.ceil(int(n_batches) / C))


def mass_interval(p, se, n, df, level=LEVEL):
    """Interval for a mass estimated by a share ``p`` with MCSE ``se`` (Korn & Graubard 1998).

    The share of draws in a rare mode is a sum of a few clustered visits: its sampling
    distribution is skewed, and its batch-means error ``se`` (``df`` degrees of freedom) is
    itself uncertain and grows with ``p``, so ``p +- 2 se`` misses on the low side (a run that
    by chance saw fewer visits also states a smaller error). The Korn-Graubard interval for
    proportions estimated from clustered samples treats the estimate as a binomial share of an
    effective sample size ``n_eff = p (1 - p) / se^2`` (at most ``n``, the draws), shrunk by
    ``(z / t_df)^2`` for the uncertainty of ``se``, and takes the Clopper-Pearson interval of
    ``n_eff p`` successes: the error is evaluated at each candidate mass, not only at ``p``.
    Korn, E. L. & Graubard, B. I. (1998), "Confidence intervals for proportions with small
    expected number of positive counts estimated from survey data", Survey Methodology 24.

    Parameters
    ----------
    p, se : float
        Estimated mass and its Monte-Carlo standard error.
    n : int
        Number of draws (the effective sample size is at most this).
    df : int
        Degrees of freedom of ``se`` (batches - 1).
    level : float
        Coverage, in (0, 1).

    Returns
    -------
    tuple of float
        ``(low, high)``; NaNs when ``p`` or ``se`` is NaN.

    Examples
    --------
    >>> lo, hi = mass_interval(0.0049, 0.0006, 80000, 19)
    >>> round(lo, 4), round(hi, 4)
    (0.0037, 0.0063)

    A share of a few particles' worth has a lower end below every double, given as 0:

    >>> mass_interval(2.5e-6, 1e-7, 400, 7)[0]
    0.0
    """
    from scipy import stats

    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if not (np.isfinite(p) and np.isfinite(se)):
        return math.nan, math.nan
    p = min(max(float(p), 0.0), 1.0)
    alpha = 1.0 - level
    n_eff = float(n) if se <= 0 or p in (0.0, 1.0) else min(float(n), p * (1 - p) / se**2)
    if df >= 1:
        n_eff *= (stats.norm.ppf(1 - alpha / 2) / stats.t.ppf(1 - alpha / 2, df)) ** 2
    x = n_eff * p
    low = float(stats.beta.ppf(alpha / 2, x, n_eff - x + 1)) if x > 0 else 0.0
    high = float(stats.beta.ppf(1 - alpha / 2, x + 1, n_eff - x)) if x < n_eff else 1.0
    # a quantile below the smallest normal double (scipy returns that double) is 0 to print
    return (low if low > np.finfo(float).tiny else 0.0), high


def indicator_rhat(ind):
    """Split R-hat (Gelman et al. 2013, without rank normalization) of a (chain, draw) series.

    Rank normalization is left out because a 0/1 indicator is all ties. Returns 1.0 for a
    constant series (every split chain agrees exactly) and ``inf`` when the split chains are
    each constant but differ (they never leave the values they started at).

    Examples
    --------
    >>> indicator_rhat(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    inf
    """
    x = np.asarray(ind, dtype=float)
    C, S = x.shape
    half = S // 2
    if half < 2:
        return math.nan
    parts = np.concatenate([x[:, :half], x[:, S - half:]])
    n = half
    means = parts.mean(1)
    B = n * means.var(ddof=1)
    Wv = parts.var(1, ddof=1).mean()
    if Wv == 0:
        return 1.0 if B == 0 else math.inf
    var = (n - 1) / n * Wv + B / n
    return float(math.sqrt(var / Wv))


def visits(label, K):
    """Separate visits (maximal runs) to each mode and mode changes per chain.

    Parameters
    ----------
    label : numpy.ndarray of int
        ``(C, S)`` mode of each draw.
    K : int
        Number of modes.

    Returns
    -------
    n_visits : numpy.ndarray
        ``(K,)`` number of runs of consecutive draws in each mode, over all chains.
    n_changes : numpy.ndarray
        ``(C,)`` number of times each chain changes mode.

    Examples
    --------
    >>> v, c = visits(np.array([[0, 0, 1, 1, 0], [1, 1, 1, 1, 1]]), 2)
    >>> v.tolist(), c.tolist()
    ([2, 2], [2, 0])
    """
    label = np.asarray(label)
    start = np.ones(label.shape, dtype=bool)
    start[:, 1:] = label[:, 1:] != label[:, :-1]
    n_visits = np.bincount(label[start], minlength=K)
    return n_visits, start[:, 1:].sum(1)


def mode_masses(label, K, *, min_visits=10, max_rhat=1.05, n_batches=N_BATCHES,
                round_trips=None, min_round_trips=10):
    """Masses of the modes from the mode of every draw, with MCSE, or an honest label.

    Parameters
    ----------
    label : array-like of int
        ``(C, S)`` mode of each draw (chains x draws).
    K : int
        Number of modes.
    min_visits : int
        Fewest separate visits to every mode for its mass to be called reliable (a batch-means
        MCSE from fewer visits is itself too uncertain).
    max_rhat : float
        Largest split R-hat of every mode's indicator for the chains to be said to agree.
    n_batches : int
        Batches of the batch-means MCSE (:func:`batch_means_mcse`).
    round_trips : array-like of int, optional
        Round trips of each chain's replicas through a replica-exchange ladder (the
        ``round_trips`` sample stat). When given and some chain made fewer than
        ``min_round_trips``, the hot end never reached the cold chain often enough to carry
        it to other modes: the draws' shares are labelled ``"draws_unreliable"`` (not a
        mass), also when every draw sits in one mode (other modes' masses are unknown).
    min_round_trips : int
        Fewest round trips per chain for replica-exchange shares to be called masses (the
        replica-exchange step warns below the same number).

    Returns
    -------
    dict
        ``weight`` (K,; NaN when the chains never change mode), ``weight_mcse`` (K,),
        ``weight_low``, ``weight_high`` (K,; the :data:`LEVEL` = 95 % interval of
        :func:`mass_interval` from the weight, its MCSE and the batches' degrees of freedom),
        ``share`` (K,; fraction of draws), ``chain_share`` (K, C), ``n_visits`` (K,),
        ``n_changes`` (C,), ``rhat`` (K,), ``estimator`` (``"draws"``: a mass estimate from
        chains that cross; ``"draws_unreliable"``: the chains cross, but fewer than
        ``min_visits`` times into some mode or they disagree; ``"share_of_chains"``: no chain
        changes mode, no mass; ``"one_mode"``: every draw in one mode and no replica-exchange
        round trips to show that no other mode holds mass), ``is_mass`` (bool) and
        ``message`` (why not a reliable mass, or ``""``).

    Examples
    --------
    >>> lab = np.array([[0] * 50, [1] * 50])          # two chains, each in its own mode
    >>> out = mode_masses(lab, 2)
    >>> out["estimator"], out["weight"].tolist(), out["share"].tolist()
    ('share_of_chains', [nan, nan], [0.5, 0.5])
    >>> one = mode_masses(np.zeros((2, 50), int), 1, round_trips=[0, 0])
    >>> one["estimator"], one["is_mass"]
    ('draws_unreliable', False)
    >>> plain = mode_masses(np.zeros((2, 50), int), 1)     # plain chains that agree
    >>> plain["estimator"], plain["is_mass"], plain["weight"].tolist()
    ('one_mode', False, [1.0])
    >>> mode_masses(np.zeros((2, 50), int), 1, round_trips=[12, 15])["is_mass"]
    True
    """
    out = _masses_of_labels(label, K, min_visits=min_visits, max_rhat=max_rhat,
                            n_batches=n_batches)
    if K == 1 and (round_trips is None or np.asarray(round_trips).size == 0):
        C = np.asarray(label).shape[0]
        nan = np.full(1, np.nan)
        return dict(out, weight_mcse=nan, weight_low=nan, weight_high=nan.copy(),
                    estimator="one_mode", is_mass=False,
                    message=(f"every draw of the {C} chain(s) is in one mode, but no chain was "
                             "shown to cross between modes (no replica-exchange round trips): "
                             "chains that agree without ever crossing do not establish that "
                             "this mode holds all the mass. The masses of modes no chain reached "
                             "are unknown, not zero. For masses, run replica exchange until it "
                             f"makes at least {min_round_trips} round trips per chain "
                             "(ReplicaExchangeGibbs, ReplicaExchangePoisson, "
                             "ReplicaExchangeCollapsed), or estimate the masses by tempered "
                             "SMC with an independent check "
                             "(bnmfzoo.inference.smc_mode_masses, every family), or compare "
                             "modes found from several starts "
                             "(bnmfzoo.inference.mode_evidence for Gaussian models)."))
    if round_trips is None or out["estimator"] != "draws":
        return out
    rt = np.asarray(round_trips, dtype=float).ravel()
    if rt.size == 0 or rt.min() >= min_round_trips:
        return out
    trips = ", ".join(str(int(v)) for v in rt)
    seen = ("every draw is in one mode" if K == 1
            else f"the draws fall in {K} modes")
    return dict(out, estimator="draws_unreliable", is_mass=False,
                weight_low=np.full(K, np.nan), weight_high=np.full(K, np.nan),
                message=(f"{seen}, but the replica exchange made only {trips} round trips "
                         f"per chain (fewer than {min_round_trips}): the hot replicas rarely or "
                         "never carried a state down to the cold chain, so the weights are "
                         "fractions of draws, NOT posterior masses, and the mass of any mode "
                         "the cold chain did not reach is unknown (not zero). Run longer, "
                         "estimate the masses by tempered SMC "
                         "(bnmfzoo.inference.smc_mode_masses), or check the modes found by "
                         "several starts with bnmfzoo.inference.mode_evidence."))


def _masses_of_labels(label, K, *, min_visits, max_rhat, n_batches):
    """:func:`mode_masses` without the round-trip check."""
    label = np.asarray(label)
    if label.ndim != 2:
        raise ValueError(f"label must be a (chain, draw) array, got shape {label.shape}")
    C, S = label.shape
    share = np.bincount(label.ravel(), minlength=K) / label.size
    chain_share = np.stack([np.bincount(label[c], minlength=K) / S for c in range(C)], axis=1)
    n_visits, n_changes = visits(label, K)
    ind = [(label == k).astype(float) for k in range(K)]
    rhat = np.array([indicator_rhat(i) for i in ind])
    out = dict(share=share, chain_share=chain_share, n_visits=n_visits, n_changes=n_changes,
               rhat=rhat)
    if K == 1:
        return dict(out, weight=np.ones(1), weight_mcse=np.zeros(1), weight_low=np.ones(1),
                    weight_high=np.ones(1), estimator="draws", is_mass=True, message="")
    mcse = np.array([batch_means_mcse(i, n_batches) for i in ind])
    df = C * n_batches_of(C, n_batches) - 1
    lims = np.array([mass_interval(p, se, label.size, df) for p, se in zip(share, mcse,
                                                                          strict=True)])
    out.update(weight_low=lims[:, 0], weight_high=lims[:, 1])
    if n_changes.sum() == 0:
        shares = ", ".join(f"{v:.2f}" for v in share)
        out.update(weight_low=np.full(K, np.nan), weight_high=np.full(K, np.nan))
        return dict(out, weight=np.full(K, np.nan), weight_mcse=np.full(K, np.nan),
                    estimator="share_of_chains", is_mass=False,
                    message=(f"no chain ever moves between the {K} modes (each stays in the mode "
                             f"it started in): the shares {shares} are the fractions of chains "
                             "that started there (share_of_chains), NOT posterior masses, and "
                             "weight is NaN. For masses, run replica exchange "
                             "(pm.sample(step=bnmfzoo.inference.ReplicaExchangeGibbs())) until "
                             "the cold chains cross between the modes, then call modes again."))
    few = n_visits < min_visits
    bad = ~(rhat <= max_rhat)
    if few.any() or bad.any():
        why = []
        if few.any():
            why.append("mode(s) " + ", ".join(str(k) for k in np.flatnonzero(few))
                       + f" visited fewer than {min_visits} separate times (visits "
                       + ", ".join(str(int(v)) for v in n_visits) + ")")
        if bad.any():
            why.append("the chains disagree on the share of mode(s) "
                       + ", ".join(str(k) for k in np.flatnonzero(bad))
                       + f" (split R-hat of the mode indicator above {max_rhat})")
        return dict(out, weight=share.copy(), weight_mcse=mcse, estimator="draws_unreliable",
                    is_mass=False,
                    message=("the chains cross between modes, but " + "; ".join(why)
                             + ": the weights (fractions of draws) and their MCSE are not yet "
                             "reliable posterior masses; run the chains longer (or replica "
                             "exchange with more rungs)."))
    return dict(out, weight=share.copy(), weight_mcse=mcse, estimator="draws", is_mass=True,
                message="")


#: what each estimator's ``weight`` is (the ``note`` attribute of :func:`~.mode_clustering.modes`)
NOTES = {
    "draws": "weight: posterior mass of each mode, estimated by the fraction of draws of "
             "chains that cross between the modes, with its batch-means Monte-Carlo error "
             "(weight_mcse) and a 95 % interval (weight_low, weight_high; Korn-Graubard, "
             "skewed for a rare mode)",
    "draws_unreliable": "weight: fraction of draws; the chains cross between modes too rarely "
                        "(or disagree) for a reliable mass: run longer",
    "one_mode": "weight: every draw is in this one mode (fraction of draws 1), NOT shown to be "
                "its posterior mass: no chain was shown to cross between modes, so modes no "
                "chain reached have unknown mass; run replica exchange or "
                "bnmfzoo.inference.smc_mode_masses for masses",
    "share_of_chains": "no chain moves between modes: share is the fraction of chains that "
                       "started in each mode, NOT a posterior mass (weight is NaN); run "
                       "replica exchange (ReplicaExchangeGibbs) for masses",
    "stein_weight": "weight: Stein weights of the particles (kernelized Stein discrepancy), "
                    "NOT posterior masses: they see the local shape of the density, not the "
                    "mass of separated modes; run replica exchange (ReplicaExchangeGibbs) for "
                    "masses",
    "particle_weight": "weight: the particles' stored weights, NOT posterior masses; run "
                       "replica exchange (ReplicaExchangeGibbs) for masses",
    "component_weight": "weight: mixture-component weights of a variational fit, NOT "
                        "posterior masses; run replica exchange (ReplicaExchangeGibbs) for "
                        "masses",
    "stacking": "weight: stacking weights of the chains (Yao, Vehtari & Gelman 2022), a "
                "predictive weighting, NOT posterior masses; run replica exchange "
                "(ReplicaExchangeGibbs) for masses",
}


def note(estimator, min_weight, src="posterior"):
    """The sentence saying what a weight of this ``estimator`` is (:data:`NOTES`)."""
    if src != "posterior":
        return NOTES[estimator] + "."
    return (NOTES[estimator] + f". Modes with less than {min_weight:g} of the draws are merged "
            "into their nearest mode; a mode no chain visited is not listed (its mass is "
            "unknown, not zero).")


def stored_estimator(result, src):
    """The estimator name of stored (particle / component) weights of ``result``."""
    if src == "variational":
        return "component_weight"
    diag = result["diagnostics"].to_dataset() if "diagnostics" in result.children else {}
    return "stein_weight" if "ksd_v" in diag else "particle_weight"


def round_trips(result, C):
    """Each chain's round trips through the replica ladder (last value), or None."""
    if "sample_stats" not in result.children:
        return None
    ss = result["sample_stats"].to_dataset()
    if "round_trips" not in ss or ss["round_trips"].sizes.get("chain") != C:
        return None
    return np.asarray(ss["round_trips"].transpose("chain", "draw").values[:, -1])
