"""Replica exchange of the collapsed Bernoulli NMF samplers: exactness, SBC, PyMC glue.

Exactness is checked on posteriors small enough to enumerate (the set-up of
``test_bernoulli_gibbs.py``): two replicas at ``beta = (1, 0.3)`` run ``exchange_step`` (tempered
sweeps and alternating swaps) from random labels for 25 steps, 4000 independent times, and the
final labels at each position are tested against the exact tempered posterior
``p(V, Z)^beta`` (chi-square, reject at p < 1e-3 per position). With the sign of the swap ratio
flipped both positions give p = 0 (seeds 1-3, ``betadir``), so the test has the power the SBC
below lacks for that defect: the SBC of the same wrong swap on the 4 x 3 case failed at 1 of
3 seeds. False-failure rate, measured over seeds 100-119 for each family
(``min(_exchange_pvalues(family, seed))`` for each seed, from ``tests/``): 0 of 20 each
(95% CI 0-16.8%); the 40 p-values per family look uniform (betadir smallest 0.049, median of
the per-seed minimum 0.37; dirdir smallest 0.0011 at seed 113, which gives 0.45 with 100
steps instead of 25, median 0.21; expected median of the minimum of two uniforms 0.29).
"""

import itertools

import numpy as np
import pymc as pm
import pytest
from _restore import assert_restore_continues
from _sbc_cases import CASES
from test_bernoulli_gibbs import _BD, _DD, V_TINY, _chisquare_pvalue, _entries

from bnmfzoo.inference import CollapsedGibbsBetaDir, ReplicaExchangeCollapsed
from bnmfzoo.inference.binary._core import (
    betadir_counts,
    betadir_log_joint,
    dirdir_counts,
    dirdir_log_joint,
)
from bnmfzoo.inference.binary._tempering import TemperedCollapsed
from bnmfzoo.inference.tempering import ReplicaSet, exchange_step, ladder_stats, swap_pass
from bnmfzoo.models import beta_dir, dir_beta, dir_dir

BETAS = np.array([1.0, 0.3])


def _problem(family):
    """``(rows, cols, v, configs, log p(V, config), make_chain)`` of an enumerable problem."""
    if family == "betadir":
        V = np.array([[1.0, 0.0, 1.0], [0.0, np.nan, 1.0]])
        g, a, b = np.array([0.7, 1.5]), np.array([1.0, 2.0]), np.array([0.5, 1.2])
        rows, cols, v = _entries(V)
        configs = list(itertools.product(*[range(2)] * len(v)))

        def log_joint(cfg):
            L, C1, C0 = betadir_counts(rows, cols, v, np.array(cfg, dtype=np.int64), 2, 3, 2)
            return betadir_log_joint(L, C1, C0, g, a, b)

        def make(rng):
            return _BD(rows, cols, v, 2, 3, g, a, b, rng)
    else:
        V = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, np.nan]])
        K, g, eta = 3, np.array([0.5, 1.0, 2.0]), np.array([1.5, 0.8, 1.0])
        rows, cols, v = _entries(V)
        configs = list(itertools.product(*[
            [(k, k) for k in range(K)] if vi else
            [(k, m) for k in range(K) for m in range(K) if k != m] for vi in v]))

        def log_joint(cfg):
            z = np.array([p[0] for p in cfg], dtype=np.int64)
            c = np.array([p[1] for p in cfg], dtype=np.int64)
            L, Q = dirdir_counts(rows, cols, z, c, 2, 3, K)
            return dirdir_log_joint(L, Q, g, eta)

        def make(rng):
            return _DD(rows, cols, v, 2, 3, g, eta, rng, blocked_zeros=True)
    return configs, np.array([log_joint(c) for c in configs]), make


def _exchange_pvalues(family, seed, *, wrong_swap=False, n_chains=4000, n_steps=25):
    configs, logp, make = _problem(family)
    index = {c: i for i, c in enumerate(configs)}
    rng = np.random.default_rng(seed)
    counts = np.zeros((BETAS.size, len(configs)))
    for _ in range(n_chains):
        replicas = ReplicaSet.new([make(rng) for _ in BETAS])
        chains = replicas.states  # swaps reorder this list in place
        for s in range(n_steps):
            if wrong_swap:  # the swap ratio with its sign flipped
                for chain, beta in zip(chains, BETAS):
                    chain.sweep(rng, beta)
                swap_pass(chains, BETAS, [-c.log_joint() for c in chains], rng, s % 2)
            else:
                exchange_step(TemperedCollapsed(), replicas, BETAS, rng)
        for r, chain in enumerate(chains):
            counts[r, index[chain.state()]] += 1
    pvalues = []
    for r, beta in enumerate(BETAS):
        exact = np.exp(beta * (logp - logp.max()))
        pvalues.append(_chisquare_pvalue(counts[r], exact / exact.sum()))
    return pvalues


@pytest.mark.parametrize("family, seed", [("betadir", 1), ("dirdir", 2)])
def test_exchange_keeps_every_tempered_posterior(family, seed):
    assert min(_exchange_pvalues(family, seed)) > 1e-3


@pytest.mark.slow
def test_exchange_test_rejects_a_wrong_swap_ratio():
    """Power of the exchange test above (slow: the wrong ratio lives in this file, not the
    library; 14 s)."""
    assert max(_exchange_pvalues("betadir", 1, wrong_swap=True)) < 1e-6


# SBC of replica exchange on the collapsed kernels: the 4 x 3, K = 2 cases of the collapsed
# Gibbs SBC (``test_bernoulli_gibbs.py``) with a ladder (1, 0.5, 0.2), 250 simulations, each
# chain run to ESS 30 and thinned by ceil(n / ESS); 26 scalars at Bonferroni level 0.01 / 26.
# False-failure rate (``nice -n 15 python -m benchmarks.calibration.sbc_false_failure re-betadir
# --seeds 1000:1060``, same for re-dirdir; records in benchmarks/calibration/results/): re-betadir
# 0 of 60 (95% CI 0-6.0%; second level, the Bonferroni-adjusted KS of each scalar's p-values
# across seeds, p = 0.12; thinning median 3, max 13; 29 s a seed on the loaded machine),
# re-dirdir 0 of 60 (0-6.0%; p = 0.32; thinning median 3, max 14; 30 s a seed).
# re-dirdir is slow (27-36 s): the exchange of both kernels keeps every tempered posterior
# exactly in the fast test_exchange_keeps_every_tempered_posterior (enumeration).
@pytest.mark.parametrize("case, seed", [("re-betadir", 11),
                                        pytest.param("re-dirdir", 12, marks=pytest.mark.slow)])
def test_sbc_replica_exchange_collapsed(case, seed):
    result = CASES[case].run(seed)
    assert result.n_sims == 250
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


# ------------------------------------------------------------------------------ PyMC glue
MODELS = {"beta_dir": beta_dir, "dir_beta": dir_beta, "dir_dir": dir_dir}


def _sample(family, seed, *, cores=1, chains=2, **kw):
    with MODELS[family](V_TINY, rank=2):
        step = ReplicaExchangeCollapsed(n_replicas=3, beta_min=0.2, **kw)
        return pm.sample(draws=30, tune=40, chains=chains, cores=cores, step=step,
                         random_seed=seed, progressbar=False, compute_convergence_checks=False)


@pytest.mark.parametrize("family", ["beta_dir", "dir_beta", "dir_dir"])
def test_pm_sample_records_ladder_and_is_reproducible(family):
    a = _sample(family, 3)
    b = _sample(family, 3)
    for name in a.posterior.data_vars:
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    ss = a.sample_stats
    for name in ("log_joint", "n_active", "cold_label", "swap_prob_1", "beta_2"):
        assert name in ss, name
    betas, rate = ladder_stats(ss)
    assert betas.shape == (2, 3) and np.all(betas[:, 0] == 1.0) and np.allclose(betas[:, -1], 0.2)
    assert np.all((rate > 0) & (rate <= 1))
    for i in range(3):  # frozen after tuning
        b_i = ss[f"beta_{i}"].values
        assert np.all(b_i == b_i[:, :1])
    A = a.posterior["A"].values
    if family == "dir_beta":  # Beta entries of A, Dirichlet columns of W
        assert np.all((A > 0) & (A < 1))
        np.testing.assert_allclose(a.posterior["W"].sum("factor").values, 1.0)
    else:  # Dirichlet rows of A
        np.testing.assert_allclose(A.sum(axis=-1), 1.0)


def test_same_draws_with_two_processes():
    one = _sample("beta_dir", 5, cores=1)
    two = _sample("beta_dir", 5, cores=2)
    assert np.array_equal(one.posterior["A"].values, two.posterior["A"].values)


def test_single_replica_is_collapsed_gibbs():
    """With one temperature the step makes CollapsedGibbsBetaDir's draws exactly."""
    with beta_dir(V_TINY, rank=2):
        kw = dict(draws=20, tune=10, chains=1, random_seed=7, progressbar=False,
                  compute_convergence_checks=False)
        a = pm.sample(step=ReplicaExchangeCollapsed(n_replicas=1), **kw)
        b = pm.sample(step=CollapsedGibbsBetaDir(), **kw)
    for name in ("A", "W"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    np.testing.assert_array_equal(a.sample_stats["log_joint"], b.sample_stats["log_joint"])


def test_snapshot_restore_continues_identically():
    model = dir_dir(V_TINY, rank=2)
    step = ReplicaExchangeCollapsed(n_replicas=4, beta_min=0.1, model=model)
    step.setup_chain(np.random.default_rng(7), 30, 20)
    point = model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    snap = step.sampling_state
    assert snap.replicas is not None and len(snap.replicas.states) == 4 and snap.tune

    # 20 steps cross the end of the first tuning round (16 steps)
    assert_restore_continues(step, point, ("beta_1", "log_joint"))


@pytest.mark.parametrize("family", ["beta_dir", "dir_dir"])
def test_annealed_start_sweeps_from_hot_to_cold(family):
    """While tuning, replica i starts from one ``init`` chain annealed from beta_min up to
    beta_i (rebuilt with the chains' own sweeps); without tuning every replica starts from its
    own ``init``."""
    model = MODELS[family](V_TINY, rank=2)
    step = ReplicaExchangeCollapsed(n_replicas=3, beta_min=0.2, anneal_start=6, model=model)
    step.setup_chain(np.random.default_rng(5), 10, 20)
    chains = step._first_replicas(model.initial_point())
    rng = np.random.default_rng(5)
    chain = step._start_chain(rng)
    taken_after = {1: 2, 3: 1, 6: 0}  # betas 1, 0.447, 0.2; path 0.2, 0.276, 0.381, 0.525, ...
    for t, beta in enumerate(np.geomspace(0.2, 1.0, 6), start=1):
        chain.sweep(rng, beta)
        if t in taken_after:
            i = taken_after[t]
            np.testing.assert_array_equal(chains[i].z, chain.z)
            assert chains[i].log_joint() == chain.log_joint()  # counters copied with labels
    assert len({id(c.z) for c in chains}) == 3 and len({id(c.L) for c in chains}) == 3

    step.setup_chain(np.random.default_rng(5), 0, 20)  # no tuning: independent starts
    rng = np.random.default_rng(5)
    expect = [step._start_chain(rng) for _ in range(3)]
    for got, want in zip(step._first_replicas(model.initial_point()), expect, strict=True):
        np.testing.assert_array_equal(got.z, want.z)


def test_user_written_model():
    """A Beta-Dir model written in PyMC syntax (read by ``recognize``) samples with the step."""
    V = np.nan_to_num(V_TINY[:3])
    with pm.Model(coords={"row": range(3), "col": range(3), "k": range(2)}):
        A = pm.Dirichlet("A", a=np.ones(2), dims=("row", "k"))
        W = pm.Beta("W", 1.0, 1.0, dims=("k", "col"))
        pm.Bernoulli("X", p=A @ W, observed=V, dims=("row", "col"))
        idata = pm.sample(draws=10, tune=10, chains=1, progressbar=False, random_seed=2,
                          step=ReplicaExchangeCollapsed(n_replicas=2, beta_min=0.3),
                          compute_convergence_checks=False)
    assert idata.posterior["A"].shape == (1, 10, 3, 2)
    assert np.isfinite(idata.sample_stats["swap_prob_0"].values).any()


def test_never_chosen_automatically_and_bad_arguments():
    with beta_dir(V_TINY, rank=2) as model:
        idata = pm.sample(draws=2, tune=2, chains=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)
        assert "beta_0" not in idata.sample_stats  # pm.sample() chose CollapsedGibbsBetaDir
        for bad in ([0.5, 0.2], [1.0, 1.2], [1.0, 0.0], [[1.0]]):
            with pytest.raises(ValueError, match="decreasing ladder"):
                ReplicaExchangeCollapsed(betas=bad)
        with pytest.raises(ValueError, match="n_replicas"):
            ReplicaExchangeCollapsed(n_replicas=0)
        with pytest.raises(ValueError, match="beta_min"):
            ReplicaExchangeCollapsed(beta_min=1.5)
        with pytest.raises(ValueError, match="anneal_start"):
            ReplicaExchangeCollapsed(anneal_start=-2)
    from bnmfzoo.models import exponential_gaussian

    with exponential_gaussian(np.ones((3, 3)), 2):
        with pytest.raises(TypeError, match="Bernoulli"):
            ReplicaExchangeCollapsed()
    assert model is not None
