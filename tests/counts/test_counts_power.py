"""The power-posterior sweep of Poisson models (``counts.tempering._power``)."""

import warnings

import numpy as np
import pymc as pm
import pytest
from _counts_cases import batch_mcse, cells_and_balance, importance_mean
from scipy import stats

import bnmfzoo as bz
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.counts.tempering._power import PowerCounts

# 2 x 3 counts, a count of 1 and fractional ``beta x`` everywhere at beta = 0.4; separable
# offsets and one missing cell (a zero of X), so the scaled exposures, the missing-cell
# correction and the offsets inside ``t o`` all enter.
X = np.array([[3, 1, 0], [0, 2, 4]])
ROW, COL = np.array([1.0, 2.5]), np.array([1.0, 0.5, 2.0])
MASK = np.array([[True, True, True], [False, True, True]])


def _problem():
    model = bz.models.poisson(X, 2, a=2.0, b=1.0, row_offset=ROW, col_offset=COL, mask=MASK)
    return problem_from_factorization(bz.models.recognize(model))


def _power_reference(beta, S, rng):
    """Self-normalized importance sampling of :func:`cells_and_balance` under ``p(A) p(W) L^beta``
    (Gamma(2, 1) priors; ``L`` the Poisson likelihood of the observed cells at means
    ``o_dn (A W)_dn``, from scipy): mean and standard error from the effective size."""
    (D, N), K = X.shape, 2
    o = ROW[:, None] * COL[None, :]
    logw, feats = [], []
    for _ in range(S // 200_000):
        A = rng.gamma(2.0, 1.0, (200_000, D, K))
        W = rng.gamma(2.0, 1.0, (200_000, K, N))
        logw.append(beta * np.where(MASK, stats.poisson.logpmf(X, o * (A @ W)), 0.0)
                    .sum(axis=(1, 2)))
        feats.append(cells_and_balance(A, W))
    return importance_mean(np.concatenate(logw), np.concatenate(feats))


def _power_z(seed, beta=0.4):
    rng = np.random.default_rng(seed)
    fam = PowerCounts(_problem())
    s = initial_state(fam.problem, rng)
    ref, se_ref = _power_reference(beta, 1_000_000, rng)
    draws = []
    for t in range(20_500):
        fam.sweep(s, beta, rng)
        if t >= 500:
            draws.append(cells_and_balance(s["A"], s["W"]))
    draws = np.array(draws)
    return (draws.mean(0) - ref) / np.sqrt(batch_mcse(draws, 40) ** 2 + se_ref ** 2)


def test_power_sweep_keeps_the_power_posterior():
    """A replica at beta = 0.4 keeps ``p(A) p(W) L(A, W)^beta`` exactly: its means of the 6
    cells of ``A @ W`` and of their balance (label-free) against importance sampling with
    1,000,000 prior draws, within 4.5 joint standard errors each (batch means over 40 batches
    of 500 sweeps; 12 scalars: a correct sweep fails with probability ~1e-4 plus batch-means
    error). With offsets and a missing cell. Measured over seeds 0-19 with ``_power_z``
    (27 Nov 2026): 0 failures, per-seed max |z| median 2.03, largest 3.60. About 9 CPU s.
    """
    z = _power_z(0)
    assert np.all(np.abs(z) <= 4.5), z


def test_power_sweep_is_plain_gibbs_at_beta_one_and_refuses_bad_input():
    """At beta = 1 the sweep is the compiled Gibbs sweep (same generator, same result); beta
    outside (0, 1] and a negative-binomial problem are refused."""
    from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps

    prob = _problem()
    fam = PowerCounts(prob)
    s = initial_state(prob, np.random.default_rng(0))
    t = fam.copy(s)
    fam.sweep(s, 1.0, np.random.default_rng(5))
    t.update(gibbs_sweeps(prob, t, np.random.default_rng(5), 1))
    np.testing.assert_array_equal(s["A"], t["A"])
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError, match="beta"):
            fam.sweep(s, bad, np.random.default_rng(0))
    nb = problem_from_factorization(bz.models.recognize(
        bz.models.negative_binomial(X, 2)))
    with pytest.raises(ValueError, match="Poisson"):
        PowerCounts(nb)
    with pytest.raises(ValueError, match="inner_sweeps"):
        PowerCounts(prob, inner_sweeps=0)


def test_replica_exchange_step_chooses_its_path():
    """``ReplicaExchangePoisson`` tempers Poisson models along the power posterior and NB
    models along the rounding path, or with ``path='power'`` along the Gamma-mixed power path
    (its swaps read ``log_target``; a short ``pm.sample`` runs)."""
    from bnmfzoo.inference.counts.tempering._rounding import TemperedCounts

    with bz.models.poisson(X, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert isinstance(bz.inference.ReplicaExchangePoisson(betas=[1.0, 0.5]).tempered,
                              PowerCounts)
            assert isinstance(bz.inference.ReplicaExchangePoisson(
                betas=[1.0, 0.5], path="rounding").tempered, TemperedCounts)
            with pytest.raises(ValueError, match="path must be"):
                bz.inference.ReplicaExchangePoisson(betas=[1.0, 0.5], path="split")
    from bnmfzoo.inference.counts.tempering._power_nb import PowerNB

    with bz.models.negative_binomial(X, 2):
        assert isinstance(bz.inference.ReplicaExchangePoisson(betas=[1.0, 0.5]).tempered,
                          TemperedCounts)
        step = bz.inference.ReplicaExchangePoisson(betas=[1.0, 0.4], path="power",
                                                   anneal_start=0)
        assert isinstance(step.tempered, PowerNB)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # too short for round trips: warned
            idata = pm.sample(draws=30, tune=10, chains=1, step=step, progressbar=False,
                              random_seed=0, compute_convergence_checks=False)
        assert np.all(np.isfinite(idata.posterior["alpha"].values))


def _cold_chain_z(seed):
    """Replica exchange over PowerCounts (3 rungs) against plain Gibbs: z of the cold chain's
    means of the 12 cells of ``A @ W`` (4 x 3 counts, K = 2)."""
    from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep
    from bnmfzoo.inference.tempering import ReplicaSet, exchange_step

    Y = np.random.default_rng(6).poisson(2.0, size=(4, 3))
    prob = problem_from_factorization(bz.models.recognize(bz.models.poisson(Y, 2, a=2.0)))
    rng = np.random.default_rng(seed)
    fam = PowerCounts(prob)
    betas = np.array([1.0, 0.6, 0.35])
    rs = ReplicaSet.new([initial_state(prob, rng) for _ in betas])
    cold, plain = [], []
    for t in range(4200):
        exchange_step(fam, rs, betas, rng)
        if t >= 200:
            cold.append(rs.states[0]["A"] @ rs.states[0]["W"])
    s = initial_state(prob, rng)
    for t in range(8200):
        s = gibbs_sweep(prob, s, rng)
        if t >= 200:
            plain.append(s["A"] @ s["W"])
    cold, plain = np.array(cold), np.array(plain)
    se = np.sqrt(batch_mcse(cold, 20) ** 2 + batch_mcse(plain, 20) ** 2)
    return (cold.mean(0) - plain.mean(0)) / se


def test_replica_exchange_cold_chain_matches_gibbs():
    """Replica exchange along the power posterior (3 rungs) leaves the beta = 1 marginal
    intact: the cold chain's mean of A @ W agrees with plain Gibbs within 4.5 joint batch-means
    MCSE per entry (12 entries; a correct pair fails with probability < 1e-3, allowing for
    batch-means error at 20 batches). Measured with ``_cold_chain_z`` over seeds 100-119 (27
    Nov 2026): 0 failures, per-seed max |z| median 2.30, largest 3.55. About 4 CPU s.
    """
    z = _cold_chain_z(7)
    assert np.all(np.abs(z) <= 4.5), z


@pytest.mark.slow
@pytest.mark.parametrize("case", ["poisson-ard", "poisson-missing-offsets"])
def test_sbc_poisson_power_replica_exchange(case):
    """SBC (100 simulations, ESS-thinned cold chains) of replica exchange along the power
    posterior (3 rungs) on the 3 x 4, K = 2 cases of ``tests/_counts_cases.py`` (ARD rate
    hyperpriors; sparse input with a missing cell and row offsets): scalars A @ W (and the
    rates), Bonferroni level 0.01 (a correct sampler fails at most ~1% of seeds). Both passed
    at seed 1 (27 Nov 2026). About 20-30 CPU s each.
    """
    from _counts_cases import exchange_sweep, run_case

    result = run_case(case, 1, sweep=exchange_sweep(np.array([1.0, 0.6, 0.35]), PowerCounts))
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)
