"""Several starts at the chosen rank; the draws of the chain in the most probable mode.

Where signatures co-occur (SBS2/SBS13, SBS7a/b/c) or are flat and alike (SBS5/SBS40a), the
posterior of Poisson NMF has local modes in which two or three true signatures are blended
into one factor and another factor splits a third. The latent-source Gibbs sweep
(:mod:`bnmfzoo.signatures._gibbs`) leaves such a mode only over thousands of sweeps, and the
mean-field variational means it usually starts from lie in one: on the ``correlated`` design
of :mod:`bnmfzoo.datasets.signature_cohorts` (500 genomes, K = 9) a chain started from the
variational means sat about 2,700 nats of log-likelihood below a chain started at the true
signatures, with SBS7a/b/c blended, while the chain started at the truth stayed there (cosine
>= 0.97 to each of SBS7a/b/c after 800 sweeps). Chains from four random KL-NMF starts ended
430-2,900 nats of mean log joint density below the truth's chain; the chain from the consensus
start ended 30 nats below it (within one standard deviation of its draws) and recovered all
nine signatures at cosine 0.9.

:func:`best_mode` therefore runs a chain from a consensus start (:func:`consensus_start`: the
k-means centroids of the signatures of KL-NMF fits to Poisson resamples of the counts, as
cNMF and SigProfilerExtractor combine their replicates), ``n_starts``
chains from KL-NMF starts (Lee & Seung 2001 multiplicative updates from random points), plus
any chains given (e.g. those of the evidence), and keeps
the chain whose kept draws have the highest mean log joint density
``log p(Y, T, V) = log p(Y | T, V) + log p(T) + log p(V)`` (the posterior density up to one
constant shared by all chains at the same rank). The choice uses only the data and the model,
never a reference; between modes of a rank the differences are hundreds to thousands of nats,
far above the draws' spread within a chain (tens of nats), so the choice is not a coin flip.
The mean log joint is a proxy for a mode's posterior mass (it ignores the modes' widths);
Chib's evidence of each chain (:func:`bnmfzoo.signatures.evidence.chib_log_evidence`) would
measure the mass itself at many times the cost.

References
----------
Kotliar, D. et al. (2019). Identifying gene expression programs of cell-type identity and
cellular activity with single-cell RNA-Seq. eLife 8, e43803.
Lee, D. D. and Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
Islam, S. M. A. et al. (2022). Uncovering novel mutational signatures by de novo extraction
with SigProfilerExtractor. Cell Genomics 2, 100179.
"""

import numpy as np
from scipy.special import gammaln

from bnmfzoo.signatures import _gibbs
from bnmfzoo.signatures.screen import _kl_start, default_prior

__all__ = ["best_mode", "consensus_start", "log_joint"]


def log_joint(Y, T_draws, V_draws, prior):
    """``log p(Y, T, V)`` of each draw (G,) under the signatures' model.

    ``Y`` (D, N) counts, ``T_draws`` (G, D, K) with columns on the simplex, ``V_draws``
    (G, K, N), ``prior = (alpha, a_V, b_V)``.
    """
    Y = np.asarray(Y, dtype=float)
    alpha, aV, bV = prior
    bV = np.broadcast_to(np.asarray(bV, dtype=float), (Y.shape[1],))
    D = Y.shape[0]
    const_y = gammaln(Y + 1.0).sum()
    out = np.empty(len(T_draws))
    for g, (T, V) in enumerate(zip(T_draws, V_draws)):
        T = np.maximum(T, 1e-300)
        V = np.maximum(V, 1e-300)
        mu = np.maximum(T @ V, 1e-300)
        lp = float((Y * np.log(mu)).sum() - mu.sum() - const_y)
        K = T.shape[1]
        lp += float(K * (gammaln(D * alpha) - D * gammaln(alpha))
                    + ((alpha - 1.0) * np.log(T)).sum())
        lp += float((aV * np.log(bV)[None, :] - gammaln(aV) + (aV - 1.0) * np.log(V)
                     - bV[None, :] * V).sum())
        out[g] = lp
    return out


def _mu(Y, T, V, n_iter, fix_T=False):
    """KL multiplicative updates (Lee & Seung 2001); ``T`` columns rescaled to sum 1."""
    for _ in range(n_iter):
        if not fix_T:
            R = Y / np.maximum(T @ V, 1e-12)
            T *= (R @ V.T) / np.maximum(V.sum(axis=1), 1e-12)[None, :]
        R = Y / np.maximum(T @ V, 1e-12)
        V *= (T.T @ R) / np.maximum(T.sum(axis=0), 1e-12)[:, None]
    T, V = np.maximum(T, 1e-12), np.maximum(V, 1e-12)
    sums = T.sum(axis=0)
    return T / sums, V * sums[:, None]


def consensus_start(Y, rank, rng, *, n_replicates=20, n_iter=2000):
    """A start from the consensus of KL-NMF fits to Poisson resamples of ``Y``.

    Each replicate fits ``rank`` signatures to ``Poisson(Y)`` resampled counts (``n_iter``
    multiplicative updates from a random point); all replicates' signatures (as unit vectors)
    are clustered into ``rank`` clusters by k-means, and the clusters' mean signatures are the
    start's signatures (the consensus of Kotliar et al. 2019's cNMF and of
    SigProfilerExtractor's replicates, Islam et al. 2022); its exposures are fitted to ``Y``
    with the signatures held fixed. A signature found in most replicates forms a tight
    cluster; the blends of co-occurring signatures that local modes produce differ from
    replicate to replicate and weigh less in the means.

    Returns ``T`` (D, K), columns summing to 1, and ``V`` (K, N).
    """
    from sklearn.cluster import KMeans

    Y = np.asarray(Y, dtype=float)
    K = int(rank)
    sigs = []
    for _ in range(max(1, n_replicates)):
        Yr = rng.poisson(Y).astype(float)
        T, V = _mu(Yr, *_kl_start(Yr, K, rng, n_iter=1), n_iter)
        sigs.append(T.T)
    sigs = np.concatenate(sigs)  # (R K, D), rows sum to 1
    unit = sigs / np.maximum(np.linalg.norm(sigs, axis=1, keepdims=True), 1e-300)
    labels = KMeans(K, n_init=10, random_state=int(rng.integers(2**31 - 1))).fit(unit).labels_
    cent = np.array([sigs[labels == k].mean(axis=0) for k in range(K)])
    T = np.maximum(cent.T, 1e-12)
    T /= T.sum(axis=0, keepdims=True)
    V = np.full((K, Y.shape[1]), max(Y.sum(axis=0).mean(), 1.0) / K)
    return _mu(Y, T, V, 200, fix_T=True)


def best_mode(Y, rank, *, n_starts=1, consensus=True, n_replicates=20, n_init_iter=2000,
              n_burn=500, n_keep=300, n_draws=200, prior=None, chains=(), random_seed=None):
    """The draws of the chain in the most probable of several modes at one rank.

    Parameters
    ----------
    Y : array of int, shape (D, N)
        Counts, channels x samples.
    rank : int
    n_starts : int
        New chains, each from its own KL-NMF start (``n_init_iter`` multiplicative updates from
        a random point), ``n_burn`` Gibbs sweeps of burn-in, ``n_keep`` kept sweeps.
    consensus : bool
        One chain more, from :func:`consensus_start` (``n_replicates`` resampled fits of
        ``n_init_iter`` updates each).
    n_draws : int
        Draws kept per chain (thinned evenly).
    prior : tuple, optional
        ``(alpha, a_V, b_V)``; default :func:`bnmfzoo.signatures.screen.default_prior`.
    chains : sequence of (T_draws, V_draws)
        Chains already run at this rank (e.g. the evidence's), compared on the same footing.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    dict
        ``T_draws`` (G, D, K), ``V_draws`` (G, K, N) of the chosen chain, ``chosen`` (its index:
        the given ``chains`` first, then the new ones), ``log_joint`` (mean per chain) and
        ``log_joint_sd`` (spread of the draws per chain).
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or not np.isfinite(Y).all() or (Y < 0).any() or (Y != np.round(Y)).any():
        raise ValueError("Y must be a 2-D array of non-negative integer counts")
    if not (isinstance(rank, (int, np.integer)) and rank >= 1):
        raise ValueError(f"rank must be a positive integer, got {rank!r}")
    if not (isinstance(n_starts, (int, np.integer)) and n_starts >= 0):
        raise ValueError(f"n_starts must be a non-negative integer, got {n_starts!r}")
    K = int(rank)
    D, N = Y.shape
    rng = np.random.default_rng(random_seed)
    alpha, aV, bV = default_prior(Y, K) if prior is None else prior
    bV = np.broadcast_to(np.asarray(bV, dtype=float), (N,)).copy()
    pri = (float(alpha), float(aV), bV)
    candidates = [(np.asarray(t, float), np.asarray(v, float)) for t, v in chains
                  if t is not None]
    if n_starts or consensus:
        Yi = Y.astype(np.int64)
        rows, cols = np.nonzero(Yi)
        data = (rows.astype(np.int64), cols.astype(np.int64), Yi[rows, cols].astype(np.int64))
        _gibbs.seed(rng)
        thin = max(1, n_keep // max(n_draws, 1))
        for i in range(n_starts + bool(consensus)):
            if consensus and i == 0:
                T, V = consensus_start(Y, K, rng, n_replicates=n_replicates,
                                       n_iter=n_init_iter)
            else:
                T, V = _kl_start(Y.astype(float), K, rng, n_iter=n_init_iter)
            T = np.ascontiguousarray(np.maximum(T, 1e-12))
            T /= T.sum(axis=0, keepdims=True)
            V = np.ascontiguousarray(np.maximum(V, 1e-12))
            _gibbs.sweeps(data, T, V, pri, n_burn)
            kept = _gibbs.sweeps(data, T, V, pri, n_keep, keep=("TV",))
            candidates.append((kept["T"][::thin][:n_draws], kept["V"][::thin][:n_draws]))
    if not candidates:
        raise ValueError("no chain to choose from: give chains or n_starts >= 1")
    scores = [log_joint(Y, t, v, pri) for t, v in candidates]
    means = np.array([s.mean() for s in scores])
    chosen = int(np.argmax(means))
    T_draws, V_draws = candidates[chosen]
    return {"T_draws": T_draws, "V_draws": V_draws, "chosen": chosen, "log_joint": means,
            "log_joint_sd": np.array([s.std() for s in scores])}
