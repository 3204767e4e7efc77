"""BayesianNMF(beta_loss="kullback-leibler"): Poisson NMF through the scikit-learn front end,
the command line from sparse .npz / long CSV, and LOO across ranks."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import poisson

from bnmfzoo import BayesianNMF
from bnmfzoo._estimator_counts import loadings, model_name, poisson_loglik

FAST = dict(draws=60, tune=20, chains=1)


@pytest.fixture(scope="module")
def counts():
    """Rank-2 counts with well separated factors (30 x 20, mean count about 6)."""
    rng = np.random.default_rng(3)
    A = rng.gamma(2.0, 1.0, (30, 2))
    W = np.zeros((2, 20))
    W[0, :10] = rng.gamma(5.0, 0.6, 10)
    W[1, 10:] = rng.gamma(5.0, 0.6, 10)
    W += 0.05
    return rng.poisson(A @ W).astype(float), A, W


@pytest.fixture(scope="module")
def fitted(counts):
    X = counts[0]
    return BayesianNMF(2, beta_loss="kullback-leibler", random_state=0, **FAST).fit(X)


def test_beta_loss_names():
    assert BayesianNMF().beta_loss == "frobenius"
    assert BayesianNMF()._model_name() == "exponential_gaussian"  # today's default unchanged
    assert model_name("exponential_gaussian", 1) == "poisson"
    assert model_name("negative_binomial", "kullback-leibler") == "negative_binomial"
    with pytest.raises(ValueError, match="beta_loss"):
        model_name("exponential_gaussian", "itakura-saito")
    with pytest.raises(ValueError, match="count model"):
        model_name("silf", "kullback-leibler")
    with pytest.raises(ValueError, match="integer counts"):
        BayesianNMF(2, beta_loss="kullback-leibler", **FAST).fit(np.full((4, 3), 0.5))
    # all observed counts zero: refused when fitting (dense, sparse), accepted as new rows
    X0 = np.zeros((4, 3))
    X0[0, 0] = np.nan
    for bad in (X0, sp.csr_array((4, 3))):
        with pytest.raises(ValueError, match="no nonzero count"):
            BayesianNMF(2, beta_loss="kullback-leibler", **FAST).fit(bad)


def test_fit_recovers_factors(counts, fitted):
    X, A, W = counts
    assert fitted.components_.shape == fitted.components_sd_.shape == (2, 20)
    assert (fitted.components_sd_ > 0).all()
    assert "log_likelihood" in fitted.posterior_.children
    assert fitted.posterior_.attrs["method"] == "gibbs_poisson"
    # the two blocks of W are found (cosine of each true row to its best recovered row); with
    # ~60 counts per row and column the block structure is unmistakable (an error of 0.1 in
    # cosine would need a factor mixing the two blocks)
    Wn = W / np.linalg.norm(W, axis=1, keepdims=True)
    Hn = fitted.components_ / np.linalg.norm(fitted.components_, axis=1, keepdims=True)
    assert (Wn @ Hn.T).max(axis=1).min() > 0.95
    # sklearn's reconstruction_err_ definition: sqrt(2 KL(X || A W))
    mu = fitted.A_ @ fitted.components_
    kl = np.sum(np.where(X > 0, X * np.log(np.where(X > 0, X, 1) / mu), 0) - X + mu)
    assert fitted.reconstruction_err_ == pytest.approx(np.sqrt(2 * kl), rel=1e-10)


def test_sparse_input_is_zero_counts(counts, fitted):
    X = counts[0]
    est = BayesianNMF(2, beta_loss="kullback-leibler", random_state=0, **FAST)
    est.fit(sp.csr_array(X))
    # unstored cells are zero counts: the same model as the dense matrix, and the same draws
    # (the sampler splits only nonzero counts in both, with the same random numbers)
    np.testing.assert_allclose(est.components_, fitted.components_, rtol=1e-8)
    assert est.score(sp.csr_array(X)) == pytest.approx(fitted.score(X), rel=1e-10)


def test_score_is_poisson_loglik_per_entry(counts, fitted):
    X = counts[0].copy()
    X[0, 0] = X[3, 5] = np.nan  # missing entries do not count
    A = fitted.transform(X)
    mask = np.isfinite(X)
    expected = poisson.logpmf(X[mask], (A @ fitted.components_)[mask]).mean()
    assert fitted.score(X) == pytest.approx(expected, rel=1e-10)
    ll, n = poisson_loglik(X, A, fitted.components_)
    assert n == mask.sum() and ll / n == pytest.approx(expected, rel=1e-10)
    # rows without counts are valid new rows (the no-count check is for fitting only)
    zero_rows = np.zeros((2, X.shape[1]))
    assert np.isfinite(fitted.score(zero_rows)) and fitted.transform(zero_rows).shape[0] == 2


def test_transform_solves_kl_problem(counts, fitted):
    """Loadings with components fixed = scikit-learn's KL solver with H fixed (a convex
    problem with one optimum: both converge to it)."""
    from sklearn.decomposition import non_negative_factorization

    X = counts[0]
    H = fitted.components_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref, _, _ = non_negative_factorization(X, H=H, n_components=2, update_H=False,
                                               beta_loss="kullback-leibler", solver="mu",
                                               max_iter=5000, tol=1e-12, init="custom",
                                               W=np.full((30, 2), 1.0))
    ours = loadings(X, H, n_iter=5000)
    np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-6)
    # missing cells do not count: a row with NaN gives the loadings of its observed part
    Xm = X.copy()
    Xm[0, :5] = np.nan
    np.testing.assert_allclose(loadings(Xm, H, n_iter=2000)[0],
                               loadings(X[:1, 5:], H[:, 5:], n_iter=2000)[0], rtol=1e-10)


def test_loo_compares_ranks(counts, fitted):
    import arviz as az

    X = counts[0]
    one = BayesianNMF(1, beta_loss="kullback-leibler", random_state=0, **FAST).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k warnings on 60 draws
        table = az.compare({"K=1": one.posterior_, "K=2": fitted.posterior_})
    # rank 2 is the truth; its elpd is ahead by hundreds of log units (rank 1 cannot fit two
    # disjoint blocks), far beyond the LOO standard error (tens), so this cannot flip by chance
    assert table.index[0] == "K=2"
    assert table.loc["K=1", "elpd_diff"] < -5 * table.loc["K=1", "dse"]


def test_cli_fit_sparse_npz_and_long(counts, tmp_path):
    import xarray as xr

    from bnmfzoo._fitcli import fit_file

    X = counts[0]
    sp.save_npz(tmp_path / "x.npz", sp.csr_array(X))
    r, c = np.nonzero(X)
    lines = ["user,item,count"] + [f"u{i},m{j},{int(X[i, j])}" for i, j in zip(r, c)]
    (tmp_path / "x.csv").write_text("\n".join(lines) + "\n")
    kw = dict(model="poisson", rank=2, random_seed=0, progressbar=False, verbose=False,
              draws=40, tune=10, chains=1)
    a = xr.open_datatree(fit_file(tmp_path / "x.npz", out=tmp_path / "a.nc", **kw))
    b = xr.open_datatree(fit_file(tmp_path / "x.csv", long=True, out=tmp_path / "b.nc", **kw))
    assert a.posterior["A"].shape[-2:] == (30, 2) and a.attrs["method"] == "gibbs_poisson"
    # long CSV: labels from the file; the nonzero cells carry their labels and counts
    assert set(b.posterior["row"].values) == {f"u{i}" for i in range(30)}
    obs = b["observed_data"]
    got = {(r, c): v for r, c, v in zip(obs["row"].values, obs["col"].values,
                                         obs["X"].values)}
    assert got == {(f"u{i}", f"m{j}"): X[i, j] for i, j in zip(r, c)}
    # sparse input: the log_likelihood group holds every observed cell, the unlisted zeros
    # too (bnmfzoo.diagnostics.zero_cells), each labelled, with the dense model's values
    ll = b["log_likelihood"]["X"]
    assert ll.sizes["X_obs"] == X.size
    A, W = b.posterior["A"].values, b.posterior["W"].values
    mu = np.einsum("cdik,cdkj->cdij", A, W)
    rows = {u: i for i, u in enumerate(b.posterior["row"].values)}
    cols = {m: j for j, m in enumerate(b.posterior["col"].values)}
    i = np.array([rows[u] for u in ll["row"].values])
    j = np.array([cols[m] for m in ll["col"].values])
    dense_X = np.zeros((30, 20))
    for (u, m), v in got.items():
        dense_X[rows[u], cols[m]] = v
    expected = poisson.logpmf(dense_X[i, j], mu[..., i, j])
    np.testing.assert_allclose(ll.values, expected, rtol=1e-9)
    # --log-likelihood no / float32 (the command line's spelling) reach the sampler
    c = xr.open_datatree(fit_file(tmp_path / "x.npz", out=tmp_path / "c.nc",
                                  log_likelihood="no", **kw))
    d = xr.open_datatree(fit_file(tmp_path / "x.npz", out=tmp_path / "d.nc",
                                  log_likelihood="float32", **kw))
    assert "log_likelihood" not in c.children and "posterior" in c.children
    assert d["log_likelihood"]["X"].dtype == np.float32


def test_cli_says_unlisted_cells_are_zero_counts(counts, tmp_path, capsys):
    """For a count model the read line says the unlisted cells are zeros (not missing)."""
    from bnmfzoo._fitcli import fit_file

    X = counts[0]
    sp.save_npz(tmp_path / "x.npz", sp.csr_array(X))
    nnz = np.count_nonzero(X)
    fit_file(tmp_path / "x.npz", out=tmp_path / "a.nc", model="poisson", rank=2,
             random_seed=0, progressbar=False, verbose=True, draws=5, tune=5, chains=1)
    line = capsys.readouterr().out.splitlines()[0]
    assert f"{nnz} listed counts; the other {X.size - nnz} cells are zero counts" in line


def test_vb_method(counts):
    X = counts[0]
    est = BayesianNMF(2, beta_loss="kullback-leibler", method="vb_poisson", random_state=0,
                      draws=50).fit(sp.csr_array(X))
    assert est.posterior_.attrs["method"] == "vb_poisson"
    assert est.components_.shape == (2, 20) and np.isfinite(est.score(X))
    elbo = est.posterior_["variational"]["elbo"].values
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:]))  # the bound never decreases


def test_long_format_lists_the_observed_cells(counts):
    """A LongMatrix (listed cells observed, zeros included) is the dense matrix with NaN
    elsewhere: same score and loadings."""
    from bnmfzoo import long_format

    X = counts[0]
    rng = np.random.default_rng(0)
    r, c = np.nonzero(np.ones_like(X))
    keep = rng.random(r.size) < 0.9
    L = long_format(r[keep], c[keep], X[r[keep], c[keep]])
    Xm = X.copy()
    Xm[r[~keep], c[~keep]] = np.nan
    est = BayesianNMF(2, beta_loss="kullback-leibler", random_state=0, **FAST).fit(L)
    assert est.score(L) == pytest.approx(est.score(Xm), rel=1e-10)
    np.testing.assert_allclose(est.transform(L), est.transform(Xm), rtol=1e-10, atol=1e-12)
