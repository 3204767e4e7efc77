"""The marginal (counts not split) Metropolis-Hastings moves of Poisson NMF, and the
product-form log-likelihood of the nonzero counts."""

import numba
import numpy as np
import pymc as pm
import pytest
from _counts_cases import run_case
from scipy import stats

import bnmfzoo as bz
from bnmfzoo.inference.counts._data import CountMatrix, Exposure, poisson_loglik
from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
from bnmfzoo.inference.counts.gibbs._marginal import NU, marginal_rows_into


@numba.njit(cache=True)
def _seed(s):
    np.random.seed(s)


def _prior_case(seed, M=2000, N=5, K=2, a=1.5, b=1.0):
    """Rows ``F ~ Gamma(a, b)``, counts ``X ~ Poisson(F G^T)`` with a fixed ``G`` (small means,
    ~1 count per cell, so the conditionals are far from Gaussian); CSR arrays of X."""
    rng = np.random.default_rng(seed)
    G = rng.gamma(2.0, 0.25, size=(N, K))
    F = rng.gamma(a, 1.0 / b, size=(M, K))
    X = rng.poisson(F @ G.T)
    data = CountMatrix.from_entries(*np.nonzero(X), X[np.nonzero(X)], X.shape)
    E = np.tile(G.sum(axis=0), (M, 1))
    return F, G, data, E, np.full((M, K), a), np.full((M, K), b)


def _prior_pvalues(seed, n_moves=2, a=1.5, b=1.0):
    """KS p-values of the moved rows against the prior: each entry's Gamma(a, b) and the
    share ``F_0 / (F_0 + F_1)`` ~ Beta(a, a)."""
    F, G, data, E, aa, bb = _prior_case(seed, a=a, b=b)
    _seed(seed)
    moved = 0
    for _ in range(n_moves):
        code, acc = marginal_rows_into(data.indptr, data.cols, data.counts, F, G, E, aa, bb, NU)
        assert code == 0
        moved += acc
    p = [stats.kstest(F[:, k], stats.gamma(a, scale=1.0 / b).cdf).pvalue for k in range(2)]
    p.append(stats.kstest(F[:, 0] / F.sum(axis=1), stats.beta(a, a).cdf).pvalue)
    return np.array(p), moved / (n_moves * F.shape[0])


def test_marginal_move_keeps_the_prior():
    """Prior draws, data from them, then two marginal moves of every row: the rows must still
    follow the prior exactly (the move leaves each row's conditional invariant). 2,000 rows,
    K = 2, Gamma(1.5, 1) priors, ~1 count per cell; KS of both entries and of the share
    ``F_0 / (F_0 + F_1)``, Bonferroni level 0.003 over the 3 (false-failure rate at most 0.3%;
    0/60 over seeds 0-59, 28 Nov 2026). The moves must also move: acceptance > 0.5.
    """
    p, acc = _prior_pvalues(11)
    assert p.min() > 0.001, p
    assert acc > 0.5, acc


def _one_move(seed):
    """One move of 200 prior rows: ``(code, accepted, share of rows changed)``."""
    F, G, data, E, aa, bb = _prior_case(seed, M=200)
    F0 = F.copy()
    _seed(seed)
    code, acc = marginal_rows_into(data.indptr, data.cols, data.counts, F, G, E, aa, bb, NU)
    return code, acc, np.mean(np.all(F != F0, axis=1))


def test_marginal_move_changes_rows_it_accepts():
    """``accepted`` counts exactly the rows that changed, and most rows change."""
    code, acc, changed = _one_move(3)
    assert code == 0
    assert acc == round(changed * 200) and changed > 0.5


@pytest.mark.parametrize("case", ["poisson", "poisson-missing-offsets"])
def test_sbc_compiled_sweeps_with_marginal_moves(case):
    """SBC (100 simulations, ESS-thinned) of the compiled sweep with the group moves and the
    marginal moves (``gibbs_sweeps(..., marginal=True)``, what ``GibbsPoisson(marginal=True)``
    runs): the 3 x 4, K = 2 cases of ``tests/_counts_cases.py`` (the second with a missing
    cell, row offsets and sparse input: exposures and offsets enter the move). Bonferroni
    level 0.01 over the tested scalars (about 1% false failures; 0/10 for each case over
    seeds 2-11, 28 Nov 2026). A few CPU s each.
    """
    result = run_case(case, 1, sweep=lambda p, s, r: gibbs_sweeps(p, s, r, 1, marginal=True))
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


def test_marginal_guards_and_arguments():
    """Non-finite input: code 3 from the kernel, FloatingPointError from ``gibbs_sweeps``;
    ``marginal`` must be a bool and needs a Poisson model; ``pm.sample`` runs with it."""
    F, G, data, E, aa, bb = _prior_case(0, M=4)
    for bad in ("F", "G", "E"):
        arrs = {"F": F.copy(), "G": G.copy(), "E": E.copy()}
        arrs[bad][0, 0] = np.nan
        code, _ = marginal_rows_into(data.indptr, data.cols, data.counts, arrs["F"], arrs["G"],
                                     arrs["E"], aa, bb, NU)
        assert code == 3, bad
    X = np.random.default_rng(2).poisson(2.0, size=(6, 5))
    model = bz.models.poisson(X, 2)
    prob = bz.inference.counts._problem.problem_from_factorization(bz.models.recognize(model))
    from bnmfzoo.inference.counts.sweep import initial_state

    rng = np.random.default_rng(0)
    s = initial_state(prob, rng)
    with pytest.raises(FloatingPointError, match="non-finite"):
        gibbs_sweeps(prob, dict(s, W=np.full_like(s["W"], np.inf)), rng, 1, marginal=True)
    with model:
        with pytest.raises(TypeError, match="marginal"):
            bz.inference.GibbsPoisson(marginal="yes")
        step = bz.inference.GibbsPoisson(marginal=True, rng=1)
        idata = pm.sample(draws=10, tune=2, chains=1, step=step, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    assert np.isfinite(idata.posterior["A"]).all()
    with bz.models.negative_binomial(X, 2):
        with pytest.raises(ValueError, match="marginal"):
            bz.inference.GibbsPoisson(marginal=True)


def test_loglik_product_form_matches_scipy():
    """The nonzero counts' log-likelihood folds the counts of 1 into one running product
    (renormalized by ``frexp``): 20,000 ones at means ~1e-3 (a plain product underflows to 0
    after ~100 of them) and larger counts, with offsets, against scipy's logpmf."""
    rng = np.random.default_rng(4)
    D, N, K = 200, 300, 2
    A = rng.gamma(1.0, 0.03, size=(D, K))
    W = rng.gamma(1.0, 0.03, size=(K, N))
    s = rng.uniform(0.5, 2.0, size=D)
    X = np.zeros((D, N), np.int64)
    flat = rng.choice(D * N, 21000, replace=False)
    X.flat[flat[:20000]] = 1
    X.flat[flat[20000:]] = rng.integers(2, 50, size=1000)
    rows, cols = np.nonzero(X)
    data = CountMatrix.from_entries(rows, cols, X[rows, cols], X.shape)
    expo = Exposure.full(D, N, row_offset=s)
    want = stats.poisson.logpmf(X, s[:, None] * (A @ W)).sum()
    got = poisson_loglik(data, expo, A, W)
    assert np.isfinite(got) and np.isclose(got, want, rtol=1e-12, atol=1e-6), (got, want)


@pytest.mark.slow
def test_marginal_moves_agree_with_nuts():
    """``GibbsPoisson(marginal=True)`` and PyMC's NUTS: posterior means of ``A @ W`` agree
    within 4 joint MCSE per entry (4 x 3, K = 2, Gamma(2, 1) priors, as
    ``test_agrees_with_nuts`` of the plain sweep; 12 entries, a correct pair fails with
    probability about 12 x 6e-5 < 0.1%)."""
    import arviz_stats as azs

    from bnmfzoo.inference import pymc_default_steps

    X = np.random.default_rng(4).poisson(3.0, size=(4, 3))
    with bz.models.poisson(X, 2, a=2.0, b=1.0) as model:
        AW = pm.Deterministic("AW", model["A"] @ model["W"])
        gibbs = pm.sample(draws=4000, tune=500, chains=2, random_seed=1, progressbar=False,
                          compute_convergence_checks=False,
                          step=bz.inference.GibbsPoisson(marginal=True))
        with pymc_default_steps():
            nuts = pm.sample(draws=2000, tune=1000, chains=2, random_seed=2, progressbar=False,
                             nuts_sampler="pymc", compute_convergence_checks=False)
    del AW
    g = gibbs.posterior["AW"]
    n = nuts.posterior["AW"]
    diff = np.abs(g.mean(("chain", "draw")) - n.mean(("chain", "draw"))).values
    se = np.sqrt(azs.mcse(g, method="mean").values ** 2 + azs.mcse(n, method="mean").values ** 2)
    assert np.all(diff <= 4 * se), (diff, se)
