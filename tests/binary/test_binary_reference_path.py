"""The per-label reference of the collapsed Beta-Dir chains: exact targets.

* The tempered conditional of the kernel ``betadir_reference_sweep``, ``p(z_e | rest)^b
  q_e^(1 - b)`` renormalized, against a direct computation from the collapsed joint (written
  here from Lumbreras et al. 2020, Eqs. 22-24, not with the package's function): the kernel
  draws by inverse CDF from one uniform, so over a grid of ``M`` uniforms each label's share is
  its probability within ``1 / M`` (deterministic).
* The kernel leaves ``pi_b ∝ q^(1 - b) p(V, Z)^b`` invariant: exact draws of ``pi_b`` (by
  enumeration), one sweep each, chi-square against ``pi_b`` (level 1e-3).
* ``b = 0``: the adapter's exact draws are ``q``'s (exact per-cell binomial tests, Bonferroni,
  level 1e-3).
* ``reference_log_z`` of the whole label space (``cut = 180``, so nothing leaves the "mode")
  against brute-force enumeration of every labelling: ``log sum_Z p(V, Z) - n log K``. The
  tolerance is 4 standard errors of the mean of 8 independent runs (a t with 7 dof:
  ``P(|t_7| > 4) = 0.5 %``); a run's log Z is low by about ``sd^2 / 2`` on the log scale
  (Jensen), below 0.01 nats here. False failures measured over seeds 100-139
  (``BNMFZOO_SEED_SCAN=1``): docs/results/masses_smc_bridge.md §3.14.
"""

import math
import os
from itertools import product

import numpy as np
import pytest
from scipy import stats
from scipy.special import betaln, gammaln, logsumexp

from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles
from bnmfzoo.inference.binary._core import BetaDirChain, observed_entries
from bnmfzoo.inference.binary._reference import BetaDirReference, betadir_reference_sweep
from bnmfzoo.inference.reference_path import reference_adapter, reference_log_z
from bnmfzoo.inference.smc_masses import family_of_model

SEEDS = range(100, 140) if os.environ.get("BNMFZOO_SEED_SCAN") else [0]


def _log_joint(rows, cols, v, z, D, N, g, a, b):
    """``log p(V, Z)`` of Beta-Dir: Dirichlet-multinomial rows times Beta-Bernoulli columns."""
    K = g.shape[0]
    out = 0.0
    for f in range(D):
        Lf = np.array([np.sum((rows == f) & (z == k)) for k in range(K)])
        out += (gammaln(g.sum()) - gammaln(g.sum() + Lf.sum())
                + np.sum(gammaln(g + Lf) - gammaln(g)))
    for n in range(N):
        for k in range(K):
            sel = (cols == n) & (z == k)
            c1, c0 = np.sum(v[sel] == 1), np.sum(v[sel] == 0)
            out += betaln(a[k] + c1, b[k] + c0) - betaln(a[k], b[k])
    return float(out)


def _chain(X, K, gamma=1.0, alpha=1.0, beta=1.0, z=None, seed=0):
    mask = ~np.isnan(X)
    rows, cols, v = observed_entries(np.nan_to_num(X), mask)
    D, N = X.shape
    return BetaDirChain(rows, cols, v, D, N, np.full(K, gamma), np.full(K, alpha),
                        np.full(K, beta), np.random.default_rng(seed), z=z)


def _random_log_q(n, K, rng):
    lq = rng.normal(0.0, 1.0, size=(n, K))
    return np.ascontiguousarray(lq - logsumexp(lq, axis=1, keepdims=True))


@pytest.mark.parametrize("beta", [0.0, 0.37, 1.0])
def test_kernel_conditional_matches_direct_computation(beta):
    """Entry 0's tempered conditional, K = 3, unequal hyperparameters per component."""
    X = np.array([[1, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0]], float)
    rng = np.random.default_rng(3)
    rows, cols, v = observed_entries(X, np.ones(X.shape, bool))
    c = BetaDirChain(rows, cols, v, 3, 4, [0.7, 1.3, 2.0], [0.5, 1.0, 2.5], [1.5, 0.8, 1.0],
                     np.random.default_rng(1))
    log_q = _random_log_q(c.rows.shape[0], 3, rng)
    lp = []
    for k in range(3):
        z = c.z.copy()
        z[0] = k
        lp.append(beta * _log_joint(c.rows, c.cols, c.v, z, c.D, c.N, c.g, c.a, c.b)
                  + (1 - beta) * log_q[0, k])
    p = np.exp(np.array(lp) - logsumexp(lp))
    M = 2000
    got = np.zeros(3)
    for j in range(M):
        s = c.copy()
        u = np.full(s.rows.shape[0], 0.5)
        u[0] = (j + 0.5) / M
        betadir_reference_sweep(s.rows, s.cols, s.v, s.z, s.L, s.C1, s.C0, s.g, s.a, s.b, u,
                                beta, log_q)
        got[s.z[0]] += 1
    assert np.all(np.abs(got / M - p) <= 1.0 / M + 1e-12), (got / M, p)


@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_leaves_the_tempered_target_invariant(seed):
    """Exact draws of ``pi_b`` (64 labellings of a 2 x 3 matrix, K = 2), one sweep each."""
    X = np.array([[1, 0, 1], [0, 1, 1]], float)
    rng = np.random.default_rng(seed + 7)
    c = _chain(X, 2)
    n, b = c.rows.shape[0], 0.6
    log_q = _random_log_q(n, 2, rng)
    Z = np.array(list(product(range(2), repeat=n)), np.int64)
    lt = np.array([b * _log_joint(c.rows, c.cols, c.v, z, c.D, c.N, c.g, c.a, c.b)
                   + (1 - b) * log_q[np.arange(n), z].sum() for z in Z])
    pi = np.exp(lt - logsumexp(lt))
    M = 20000
    starts = rng.choice(Z.shape[0], size=M, p=pi)
    code = 2 ** np.arange(n)[::-1]
    counts = np.zeros(Z.shape[0])
    for i in starts:
        s = BetaDirChain(c.rows, c.cols, c.v, c.D, c.N, c.g, c.a, c.b, None, z=Z[i].copy())
        betadir_reference_sweep(s.rows, s.cols, s.v, s.z, s.L, s.C1, s.C0, s.g, s.a, s.b,
                                rng.random(n), b, log_q)
        counts[int(s.z @ code)] += 1
        assert np.array_equal(s.L, BetaDirChain(c.rows, c.cols, c.v, c.D, c.N, c.g, c.a, c.b,
                                                None, z=s.z.copy()).L)
    exp = M * pi
    big = exp >= 5  # pool the small cells
    obs_c, exp_c = counts[big], exp[big]
    if not big.all():
        obs_c, exp_c = np.append(obs_c, counts[~big].sum()), np.append(exp_c, exp[~big].sum())
    p_value = stats.chisquare(obs_c, exp_c).pvalue
    assert p_value > 1e-3, p_value


def test_kernel_refuses_non_finite_log_q():
    c = _chain(np.array([[1, 0], [0, 1]], float), 2)
    log_q = np.full((4, 2), math.log(0.5))
    log_q[2, 1] = np.nan
    with pytest.raises(ValueError, match="log q is not finite"):
        betadir_reference_sweep(c.rows, c.cols, c.v, c.z, c.L, c.C1, c.C0, c.g, c.a, c.b,
                                np.full(4, 0.5), 0.5, log_q)


@pytest.mark.parametrize("seed", SEEDS)
def test_b0_draws_are_the_references(seed):
    """Per-entry label frequencies of 4000 exact draws of a fitted ``q`` (K = 3)."""
    X = np.array([[1, 0, 1, 1], [0, 1, 0, 1]], float)
    rng = np.random.default_rng(seed + 11)
    ad = BetaDirReference(_chain(X, 3))
    fake = rng.integers(0, 3, size=(40, 8)).astype(np.int8)
    fake[:, 0] = 2  # a label with frequency 0 elsewhere in entry 0: the pseudo-count keeps it
    q = ad.fit(fake, 2.0)
    assert np.all(np.isfinite(q["log_q"]))
    p = np.exp(q["log_q"])
    np.testing.assert_allclose(p.sum(1), 1.0)
    M = 4000
    Z = np.stack([ad.draw_q(q, rng).z for _ in range(M)])
    hits = np.stack([(Z == k).sum(0) for k in range(3)], axis=1)
    # exact two-sided binomial p-values (some q_e(k) are ~0.01, where a normal z-score's tail
    # is too light: it failed 1 seed of 40); Bonferroni over the 24 cells, level 1e-3
    pv = np.array([stats.binomtest(int(h), M, float(pk)).pvalue
                   for h, pk in zip(hits.ravel(), p.ravel(), strict=True)])
    assert pv.min() > 1e-3 / pv.size, (pv.min(), hits / M, p)
    s = ad.draw_q(q, rng)
    assert ad.log_q(q, s) == pytest.approx(q["log_q"][np.arange(8), s.z].sum())


def test_draws_are_renamed_to_the_representatives_columns():
    """A chain whose labels are a permutation of another's gives back the other's labels."""
    X = (np.random.default_rng(2).random((6, 5)) < 0.5).astype(float)
    c = _chain(X, 3, seed=4)
    for _ in range(5):
        c.sweep(np.random.default_rng(5))
    ref_A = c.conditional_means()[0]
    sigma = np.array([2, 0, 1])
    d = BetaDirChain(c.rows, c.cols, c.v, c.D, c.N, c.g, c.a, c.b, None, z=sigma[c.z])
    A = d.conditional_means()[0]
    _, perm = matched_angles(_unit_l2(A[None]), _unit_l2(ref_A[None]))
    ad = BetaDirReference(c)
    np.testing.assert_array_equal(ad.draws(d, perm[0, 0]), c.z)


def test_adapter_errors_name_the_argument():
    c = _chain(np.array([[1, 0], [0, 1]], float), 2)
    with pytest.raises(TypeError, match="template"):
        BetaDirReference("chain")
    ad = BetaDirReference(c)
    with pytest.raises(ValueError, match="draws"):
        ad.fit(np.zeros((3, 5), np.int8), 2.0)
    with pytest.raises(ValueError, match="labels in 0..1"):
        ad.fit(np.full((3, 4), 2, np.int8))
    with pytest.raises(ValueError, match="beta"):
        ad.sweep(ad.fit(np.zeros((3, 4), np.int8), 1.0), c, 0.0, np.random.default_rng(0))


def _enumerated_mode(seed):
    """The 3 x 4 binary matrix with one entry missing (11 labels, K = 2: 2,048 labellings):
    ``(family, exact log Z by enumeration, a state after 20 sweeps, its unit-norm reference,
    rng)``."""
    from bnmfzoo.models import beta_dir

    X = np.array([[1, 0, 1, 1], [0, 1, np.nan, 1], [1, 1, 0, 0]])
    fam = family_of_model(beta_dir(X, 2))
    t = fam.draw_prior(np.random.default_rng(0))
    n = t.rows.shape[0]
    exact = logsumexp([_log_joint(t.rows, t.cols, t.v, np.array(z), t.D, t.N, t.g, t.a, t.b)
                       for z in product(range(2), repeat=n)]) - n * math.log(2)
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(20):
        fam.tempered.sweep(s, 1.0, rng)
    return fam, exact, s, _unit_l2(np.asarray(fam.factors(s)[0], float)[None]), rng


@pytest.mark.parametrize("seed", SEEDS)
def test_reference_log_z_matches_enumeration(seed):
    """3 x 4 binary matrix, one entry missing (11 labels, K = 2: 2,048 labellings)."""
    fam, exact, s, ref, rng = _enumerated_mode(seed)
    assert isinstance(reference_adapter(fam), BetaDirReference)
    out = reference_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=8, n_particles=100,
                          n_moves=2, n_draws=100)
    assert abs(out["log_z"][0] - exact) <= 4 * out["log_z_se"][0], (out["log_z"], exact)


@pytest.mark.parametrize("seed", SEEDS)
def test_reference_tempering_log_z_matches_enumeration(seed):
    """The same 3 x 4 matrix by the other per-mode estimator, parallel tempering along the
    reference path with stepping stone (``bnmfzoo masses``' binary route): 8 runs x 100 kept
    scans against brute-force enumeration, the same 4-standard-error tolerance. Over seeds
    100-139 (``BNMFZOO_SEED_SCAN=1``, 64 s): 40 of 40 passed; on seeds 100-111 the errors were
    -0.048 to 0.047 nats with standard errors 0.019-0.040 (the z-scores' sd 1.12)."""
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z

    fam, exact, s, ref, rng = _enumerated_mode(seed)
    out = reference_pt_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=8, n_scans=100,
                             n_tune_rounds=2, n_draws=100)
    assert abs(out["log_z"][0] - exact) <= 4 * out["log_z_se"][0], (out["log_z"], exact)
    # about 19 trips per run (13-24 over seeds 100-111); a broken index process makes none
    assert np.all(out["round_trips"][0] >= 5), out["round_trips"]
