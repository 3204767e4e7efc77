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

__all__ = ["NOTES", "batch_means_mcse", "indicator_rhat", "mode_masses", "note", "visits"]

#: total number of batches pooled over chains for the batch-means MCSE
N_BATCHES = 20


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
    b = max(2, math.ceil(int(n_batches) / C))
    L = S // b
    if L < 2:
        return math.nan
    means = x[:, : b * L].reshape(C, b, L).mean(axis=-1).ravel()
    return float(means.std(ddof=1) / math.sqrt(means.size))


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


def mode_masses(label, K, *, min_visits=10, max_rhat=1.05, n_batches=N_BATCHES):
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

    Returns
    -------
    dict
        ``weight`` (K,; NaN when the chains never change mode), ``weight_mcse`` (K,),
        ``share`` (K,; fraction of draws), ``chain_share`` (K, C), ``n_visits`` (K,),
        ``n_changes`` (C,), ``rhat`` (K,), ``estimator`` (``"draws"``: a mass estimate from
        chains that cross; ``"draws_unreliable"``: the chains cross, but fewer than
        ``min_visits`` times into some mode or they disagree; ``"share_of_chains"``: no chain
        changes mode, no mass), ``is_mass`` (bool) and ``message`` (why not a reliable mass,
        or ``""``).

    Examples
    --------
    >>> lab = np.array([[0] * 50, [1] * 50])          # two chains, each in its own mode
    >>> out = mode_masses(lab, 2)
    >>> out["estimator"], out["weight"].tolist(), out["share"].tolist()
    ('share_of_chains', [nan, nan], [0.5, 0.5])
    """
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
        return dict(out, weight=np.ones(1), weight_mcse=np.zeros(1), estimator="draws",
                    is_mass=True, message="")
    mcse = np.array([batch_means_mcse(i, n_batches) for i in ind])
    if n_changes.sum() == 0:
        shares = ", ".join(f"{v:.2f}" for v in share)
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
             "(weight_mcse)",
    "draws_unreliable": "weight: fraction of draws; the chains cross between modes too rarely "
                        "(or disagree) for a reliable mass: run longer",
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
