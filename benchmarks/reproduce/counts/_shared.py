"""Shared pieces of the count-data benchmarks: the baselines, our fit, matching, scores.

* :func:`sklearn_kl`: scikit-learn's ``NMF(beta_loss="kullback-leibler", solver="mu")``;
* :func:`hpf`: hpfrec's hierarchical Poisson factorization (CAVI, one thread);
* :func:`ours`: ``BayesianNMF(n_components=K, beta_loss="kullback-leibler")`` with its
  defaults when the estimator has that argument, else the count core's latent-count Gibbs
  sweep (:func:`bnmfzoo.inference.counts.sweep.sweep`) run directly with Gamma(1, 1) priors;
* :func:`match_signatures`: best cosine of each recovered signature to a reference set and the
  one-to-one (Hungarian) matching;
* :func:`thin` and :func:`heldout_loglik`: the held-out protocol (binomial data thinning).
"""

import inspect
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln


def sklearn_kl(X, K, *, seed=0, max_iter=1000, tol=1e-6, init="nndsvda"):
    """Fit scikit-learn's KL-NMF; returns ``(W (D x K), H (K x N), n_iter, cpu seconds)``."""
    from sklearn.decomposition import NMF

    est = NMF(n_components=K, beta_loss="kullback-leibler", solver="mu", init=init,
              max_iter=max_iter, tol=tol, random_state=seed)
    t0 = time.process_time()
    W = est.fit_transform(X)
    return W, est.components_, int(est.n_iter_), time.process_time() - t0


def hpf(X, K, *, seed=0, maxiter=100):
    """Fit hpfrec's HPF (CAVI, 1 core, fixed iterations); ``(Theta, Beta.T, iters, cpu s)``."""
    import pandas as pd
    from hpfrec import HPF

    C = sp.coo_array(X)
    df = pd.DataFrame({"UserId": C.row.astype(np.int64), "ItemId": C.col.astype(np.int64),
                       "Count": C.data.astype(np.float64)})
    model = HPF(k=K, ncores=1, maxiter=maxiter, stop_crit="maxiter", reindex=False,
                check_every=min(10, maxiter),
                verbose=False, random_seed=seed, use_float=False, produce_dicts=False,
                keep_data=False)
    t0 = time.process_time()
    model.fit(df)
    cpu = time.process_time() - t0
    Theta = np.zeros((X.shape[0], K))
    Beta = np.zeros((X.shape[1], K))
    Theta[: model.Theta.shape[0]] = model.Theta
    Beta[: model.Beta.shape[0]] = model.Beta
    return Theta, Beta.T, maxiter, cpu


def estimator_has_kl():
    """True once ``BayesianNMF`` takes ``beta_loss``."""
    from bnmfzoo import BayesianNMF

    return "beta_loss" in inspect.signature(BayesianNMF).parameters


def ours(X, K, *, seed=0, draws=200, tune=200, **kwargs):
    """Our Poisson NMF posterior: ``dict(A, W, W_sd, W_draws, cpu, how)``.

    The estimator runs with its defaults (``kwargs`` go to ``BayesianNMF``); ``draws`` and
    ``tune`` apply to the direct core fallback. ``W_draws`` is ``(S, K, N)`` (factors aligned
    across draws in the estimator path).
    """
    t0 = time.process_time()
    if estimator_has_kl():
        from bnmfzoo import BayesianNMF

        est = BayesianNMF(n_components=K, beta_loss="kullback-leibler", random_state=seed,
                          **kwargs).fit(X)
        cpu = time.process_time() - t0
        Wd = est.sample_components(400, random_state=seed)
        return dict(A=est.A_, W=est.components_, W_sd=est.components_sd_, W_draws=Wd,
                    cpu=cpu, how="BayesianNMF(beta_loss='kullback-leibler')", est=est)
    A_d, W_d = core_gibbs(X, K, seed=seed, draws=draws, tune=tune)
    cpu = time.process_time() - t0
    return dict(A=A_d.mean(0), W=W_d.mean(0), W_sd=W_d.std(0), W_draws=W_d, A_draws=A_d,
                cpu=cpu, how="count core Gibbs sweep (direct)")


def count_matrix(X):
    """The core's CSR count matrix of dense or sparse ``X``."""
    from bnmfzoo.inference.counts._data import CountMatrix

    C = sp.coo_array(X)
    return CountMatrix.from_entries(C.row, C.col, C.data, X.shape)


def core_gibbs(X, K, *, seed=0, draws=200, tune=200, a=1.0, b=1.0, progress=False):
    """Latent-count Gibbs with the core's ``sweep``; returns A and W draws after ``tune``."""
    from bnmfzoo.inference.counts._data import Exposure
    from bnmfzoo.inference.counts._problem import poisson_problem
    from bnmfzoo.inference.counts.sweep import sweep

    rng = np.random.default_rng(seed)
    data = count_matrix(X)
    D, N = X.shape
    expo = Exposure.full(D, N)
    prob = poisson_problem(data, expo, np.full((D, K), a), np.full((D, K), b),
                           np.full((K, N), a), np.full((K, N), b))
    scale = np.sqrt(data.counts.sum() / (D * N * K))
    A = rng.gamma(1.0, scale, (D, K))
    W = rng.gamma(1.0, scale, (K, N))
    As, Ws = [], []
    for it in range(tune + draws):
        s = sweep(prob, {"A": A, "W": W, "rates": {}, "alpha": None}, rng)
        A, W = s["A"], s["W"]
        if it >= tune:
            As.append(A)
            Ws.append(W)
    return np.asarray(As), np.asarray(Ws)


def time_core_sweeps(X, K, *, n=10, seed=0):
    """Median CPU seconds of one core Gibbs sweep on ``X`` (after 2 warm-up sweeps)."""
    from bnmfzoo.inference.counts._data import Exposure
    from bnmfzoo.inference.counts._problem import poisson_problem
    from bnmfzoo.inference.counts.sweep import sweep

    rng = np.random.default_rng(seed)
    data = count_matrix(X)
    D, N = X.shape
    expo = Exposure.full(D, N)
    prob = poisson_problem(data, expo, np.ones((D, K)), np.ones((D, K)), np.ones((K, N)),
                           np.ones((K, N)))
    scale = np.sqrt(data.counts.sum() / (D * N * K))
    A, W = rng.gamma(1.0, scale, (D, K)), rng.gamma(1.0, scale, (K, N))
    times = []
    for i in range(n + 2):
        t0 = time.process_time()
        s = sweep(prob, {"A": A, "W": W, "rates": {}, "alpha": None}, rng)
        A, W = s["A"], s["W"]
        if i >= 2:
            times.append(time.process_time() - t0)
    return float(np.median(times))


# ----------------------------------------------------------------------------- signatures
def normalize_rows(M):
    """Rows scaled to sum 1 (signatures as distributions over channels)."""
    M = np.asarray(M, float)
    return M / np.maximum(M.sum(axis=-1, keepdims=True), 1e-300)


def cosines(W, ref):
    """``(K, M)`` cosine similarities of the rows of ``W`` to the rows of ``ref``."""
    Wn = W / np.linalg.norm(W, axis=-1, keepdims=True)
    Rn = ref / np.linalg.norm(ref, axis=-1, keepdims=True)
    return Wn @ Rn.T


def match_signatures(W, ref, names):
    """Best cosine per recovered signature and the Hungarian one-to-one matching.

    Returns
    -------
    dict
        ``best`` (K,), ``best_name`` (K,), ``hungarian`` (K,), ``hungarian_name`` (K,).
    """
    C = cosines(W, ref)
    r, c = linear_sum_assignment(-C)
    hung = np.empty(W.shape[0])
    hung_name = np.empty(W.shape[0], dtype=object)
    hung[r], hung_name[r] = C[r, c], np.asarray(names)[c]
    return dict(best=C.max(1), best_name=np.asarray(names)[C.argmax(1)], hungarian=hung,
                hungarian_name=hung_name)


# ----------------------------------------------------------------------------- held-out data
def thin(X, frac=0.1, *, seed=0):
    """Binomial data thinning: ``X = X_train + X_test``, ``X_test ~ Binomial(X, frac)``.

    If ``X ~ Poisson(mu)`` then ``X_train ~ Poisson((1 - frac) mu)`` and ``X_test ~
    Poisson(frac mu)`` independently, so every method fits the whole ``X_train`` (no masks,
    which scikit-learn and hpfrec do not support) and is scored on every cell of ``X_test``.
    """
    rng = np.random.default_rng(seed)
    X = sp.csr_array(X)
    test = X.copy()
    test.data = rng.binomial(X.data.astype(np.int64), frac).astype(float)
    train = X.copy()
    train.data = X.data - test.data
    train.eliminate_zeros()
    test.eliminate_zeros()
    return train, test


def heldout_loglik(test, A, W, frac, train_frac):
    """Poisson log-likelihood per cell of ``test`` under ``mu = frac / train_frac * A @ W``.

    Over all ``D x N`` cells (zeros included), O(nnz K): ``sum_nz [x log mu - log x!] - sum
    mu``. Also returns the mean over the test nonzeros and over as many random zero cells
    (``{"all", "nonzero", "zero"}``). A rate of 0 at a test count gives ``-inf``; rates are
    floored at 1e-12 times the mean rate to keep one dead cell from hiding the rest.
    """
    C = sp.coo_array(test)
    ratio = frac / train_frac
    mu_nz = ratio * np.einsum("ek,ke->e", A[C.row], W[:, C.col])
    floor = 1e-12 * ratio * A.sum(0) @ W.sum(1) / np.prod(test.shape)
    mu_nz = np.maximum(mu_nz, floor)
    ll_nz = C.data * np.log(mu_nz) - mu_nz - gammaln(C.data + 1.0)
    total_mu = ratio * float(A.sum(0) @ W.sum(1))
    ll_all = (ll_nz.sum() + mu_nz.sum() - total_mu) / np.prod(test.shape)
    rng = np.random.default_rng(1)
    D, N = test.shape
    r, c = rng.integers(0, D, 4 * C.nnz), rng.integers(0, N, 4 * C.nnz)
    Tc = sp.csr_array(test)
    zero = np.asarray(Tc[r, c]).ravel() == 0
    r, c = r[zero][: C.nnz], c[zero][: C.nnz]
    mu_z = ratio * np.einsum("ek,ke->e", A[r], W[:, c])
    return {"all": float(ll_all), "nonzero": float(ll_nz.mean()), "zero": float(-mu_z.mean())}
