"""SBC problems of the count wing (shared by its tests and false-failure measurements).

``run_case(name, seed, n_sims)`` runs simulation-based calibration (Talts et al. 2018) of the
latent-count Gibbs sweep on a tiny model: parameters from the prior, counts given them, a chain
after 50 burn-in sweeps run until its ESS reaches 30 (``run_to_ess``) and thinned by it. Tested
scalars: every entry of ``A @ W`` (invariant to the labelling of the factors), the ARD rates
and the NB dispersion where the model has them.
"""

import numpy as np

from bnmfzoo.diagnostics import sbc
from bnmfzoo.diagnostics.calibration import run_to_ess
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep
from bnmfzoo.models import negative_binomial, poisson, recognize

D, N, K = 3, 4, 2
A_SHAPE, A_RATE = 2.0, 1.0
MASK = np.ones((D, N), dtype=bool)
MASK[0, 1] = False  # a missing cell: it must never enter the likelihood

CASES = ("poisson", "poisson-ard", "poisson-missing-offsets", "nb", "nb2")
_ROW_OFFSET = np.array([0.5, 1.0, 2.0])


def _problem(name, X):
    if name == "poisson":
        model = poisson(X, K, a=A_SHAPE, b=A_RATE)
    elif name == "poisson-ard":
        model = poisson(X, K, a=A_SHAPE, ard=True, alpha0=5.0, beta0=5.0)
    elif name == "poisson-missing-offsets":
        import scipy.sparse as sp

        model = poisson(sp.csr_array(X), K, a=A_SHAPE, b=A_RATE, mask=MASK,
                        row_offset=_ROW_OFFSET)
    elif name == "nb2":  # PyMC's NegativeBinomial(mu=, alpha=), written by hand
        import pymc as pm

        with pm.Model() as model:
            A = pm.Gamma("A", A_SHAPE, A_RATE, shape=(D, K))
            W = pm.Gamma("W", A_SHAPE, A_RATE, shape=(K, N))
            alpha = pm.Gamma("alpha", 4.0, 1.0)
            pm.NegativeBinomial("X", mu=A @ W, alpha=alpha, observed=X)
    else:
        model = negative_binomial(X, K, a=A_SHAPE, b=A_RATE, alpha_prior=(4.0, 1.0))
    return problem_from_factorization(recognize(model))


def _simulate(name, rng):
    truth = {}
    if name == "poisson-ard":
        lam = rng.gamma(5.0, 1 / 5.0, size=K)
        A = rng.gamma(A_SHAPE, 1 / lam[None, :], size=(D, K))
        W = rng.gamma(A_SHAPE, 1 / lam[:, None], size=(K, N))
        truth["lambda_"] = lam
    else:
        A = rng.gamma(A_SHAPE, 1 / A_RATE, size=(D, K))
        W = rng.gamma(A_SHAPE, 1 / A_RATE, size=(K, N))
    mu = A @ W
    if name == "nb":
        alpha = rng.gamma(4.0, 1.0)
        X = rng.negative_binomial(alpha * mu, alpha / (1 + alpha)).astype(float)
        truth["alpha"] = np.array(alpha)
    elif name == "nb2":
        alpha = rng.gamma(4.0, 1.0)
        X = rng.negative_binomial(alpha, alpha / (alpha + mu)).astype(float)
        truth["alpha"] = np.array(alpha)
    else:
        if name == "poisson-missing-offsets":
            mu = _ROW_OFFSET[:, None] * mu
        X = rng.poisson(mu).astype(float)
    truth["AW"] = A @ W
    return truth, X


def run_case(name, seed, n_sims=100, *, sweep=gibbs_sweep):
    """SBC result of case ``name`` (thinned by measured ESS)."""

    def infer(X, rng):
        problem = _problem(name, X)
        state = {"A": rng.gamma(A_SHAPE, 1.0, size=(D, K)),
                 "W": rng.gamma(A_SHAPE, 1.0, size=(K, N)),
                 "rates": {n: np.ones(s) for n, (_, _, s) in problem.rates.items()},
                 "alpha": 4.0 if problem.alpha_prior is not None else problem.alpha}
        for _ in range(50):
            state = sweep(problem, state, rng)

        def step():
            nonlocal state
            state = sweep(problem, state, rng)
            out = {"AW": state["A"] @ state["W"]}
            out.update({n: v for n, v in state["rates"].items()})
            if problem.alpha_prior is not None:
                out["alpha"] = np.array(state["alpha"])
            return out

        return run_to_ess(step, ess_target=30, min_draws=200, max_draws=6400)

    return sbc(lambda rng: _simulate(name, rng), infer, n_sims=n_sims, thin="ess",
               random_seed=seed, progressbar=False)


def exchange_sweep(betas, family):
    """A ``sweep(problem, state, rng)`` for :func:`run_case`: one replica-exchange step of
    ``family(problem)`` replicas at ``betas`` (started from ``state``), returning the cold
    state."""
    from bnmfzoo.inference.tempering import ReplicaSet, exchange_step

    held = {}

    def sweep(problem, state, rng):
        if held.get("problem") is not problem:  # a new simulation
            fam = family(problem)
            held.update(problem=problem, fam=fam,
                        rs=ReplicaSet.new([fam.copy(state) for _ in betas]))
        exchange_step(held["fam"], held["rs"], betas, rng)
        return held["fam"].copy(held["rs"].states[0])

    return sweep


def importance_mean(logw, feats):
    """Self-normalized importance-sampling mean of ``feats`` (draws along axis 0) under the
    log-weights ``logw``, and its standard error from the weights' effective size."""
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ref = w @ feats
    return ref, np.sqrt((w @ feats ** 2 - ref ** 2) * np.sum(w ** 2))


def batch_mcse(x, n_batches=20):
    """Batch-means standard error of the mean of ``x`` (draws along axis 0)."""
    means = np.array([b.mean(axis=0) for b in np.array_split(x, n_batches)])
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


def cells_and_balance(A, W):
    """Per draw: the cells of ``A @ W`` and their balance ``sum_k (A_dk W_kn)^2 / (A W)_dn^2``
    (how evenly the components share a cell; label-free)."""
    terms = A[..., :, :, None] * W[..., None, :, :]  # (..., D, K, N)
    AW = terms.sum(axis=-2)
    balance = (terms ** 2).sum(axis=-2) / AW ** 2
    lead = AW.shape[:-2]
    return np.concatenate([AW.reshape(*lead, -1), balance.reshape(*lead, -1)], axis=-1)


def weighted_ks_pvalues(moved, pool, w):
    """Kolmogorov-Smirnov p-values of each column of ``moved`` against the weighted empirical
    CDF of the same column of ``pool`` (weights ``w``, summing to 1): a rung's
    sampling-importance-resampling law, which a move must keep."""
    from scipy import stats

    out = []
    for j in range(pool.shape[1]):
        order = np.argsort(pool[:, j])
        cdf_x, cdf_p = pool[order, j], np.cumsum(w[order])

        def cdf(v, cdf_x=cdf_x, cdf_p=cdf_p):
            return np.interp(v, cdf_x, cdf_p, left=0.0, right=1.0)

        out.append(stats.kstest(moved[:, j], cdf).pvalue)
    return np.array(out)


def copula_from_posterior(fam, rng, n_draws=3000):
    """A count family's HMC-moved reference adapter and a Gaussian-copula reference (widening
    0.7, 2 factors) fitted to ``n_draws`` posterior draws of its sweep (200 burn-in, thinned
    by 2), as the per-mode tempering fits it."""
    from bnmfzoo.inference.counts.tempering._reference_poisson import COPULA_LEAPFROG
    from bnmfzoo.inference.reference_path import reference_adapter

    ad = reference_adapter(fam, "hmc", COPULA_LEAPFROG)
    s = fam.draw_prior(rng)
    draws = []
    for i in range(200 + 2 * n_draws):
        fam.tempered.sweep(s, 1.0, rng)
        if i >= 200 and i % 2:
            draws.append(ad.draws(s, np.arange(fam.tempered.problem.rank)))
    return ad, ad.fit_copula(np.array(draws), 0.7, n_factors=2)

