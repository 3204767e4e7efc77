"""The Beta-Dir reference symmetrized over the label copies: exact targets.

* The sweep ``betadir_symmetric_sweep`` leaves ``pi_b ∝ q_sym^(1 - b) p(V, Z)^b`` invariant:
  exact draws of ``pi_b`` by enumeration (81 labellings of a 2 x 2 matrix at K = 3, so all 6
  permutations enter), one sweep each, chi-square against ``pi_b`` at level 1e-3 (its
  false-failure rate; the draws are independent, so the level is exact up to the chi-square
  approximation, cells with an expected count below 5 pooled). On 729 labellings (2 x 3) the
  pooled small cells made 2 of 80 seeds fail at 20,000 draws (p 3e-4); with more draws the
  same seeds passed (seed 100 at b = 0.6: p 0.93 at 200,000; seed 126 at b = 0: 0.011 at
  200,000 and 0.84 at 1,000,000), so the approximation, not the kernel. At 81 labellings
  120 of 120 runs passed (seeds 100-139, ``BNMFZOO_SEED_SCAN=1``).
* ``draw_q`` draws ``q_sym`` and ``log_q`` is its normalized log density: over the 81
  labellings of 4 entries at K = 3 ``exp(log_q)`` sums to 1, is the same on every relabelling,
  and 8,000 draws' frequencies pass a chi-square against it (level 1e-3).
* Both per-mode estimators along the symmetric path, on the 3 x 4 matrix whose ``2,048``
  labellings are enumerated (``cut = 180``: nothing leaves the mode), give the **total**
  ``log sum_Z p(V, Z) - n log K`` without ``log K!``: within 4 standard errors of 8 runs (a t
  with 7 dof: ``P(|t_7| > 4) = 0.5 %``). The product reference's total on the same matrix
  adds ``log 2`` to a per-copy estimate that already holds both copies (the copies overlap
  completely at this size), so it is ``log 2`` high: the over-count this path removes.
"""

import math
import os
from itertools import product

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp
from test_binary_reference_path import _chain, _enumerated_mode, _log_joint, _random_log_q

from bnmfzoo.inference.binary._core import BetaDirChain
from bnmfzoo.inference.binary._reference_symmetric import (
    BetaDirSymmetricReference,
    betadir_symmetric_sweep,
    label_permutations,
)
from bnmfzoo.inference.reference_path import reference_adapter, reference_log_z

SEEDS = range(100, 140) if os.environ.get("BNMFZOO_SEED_SCAN") else [0, 1]
E2E_SEEDS = range(100, 140) if os.environ.get("BNMFZOO_SEED_SCAN") else [0]


def _log_q_sym(log_q, z, perms):
    return logsumexp([log_q[np.arange(z.size), p[z]].sum() for p in perms]) - math.log(len(perms))


def _chi2_pvalue(counts, pi):
    exp = counts.sum() * pi
    big = exp >= 5
    obs_c, exp_c = counts[big], exp[big]
    if not big.all():
        obs_c, exp_c = np.append(obs_c, counts[~big].sum()), np.append(exp_c, exp[~big].sum())
    return stats.chisquare(obs_c, exp_c).pvalue


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("b", [0.0, 0.6])
def test_symmetric_sweep_leaves_the_tempered_target_invariant(seed, b):
    X = np.array([[1, 0], [1, 1]], float)
    rng = np.random.default_rng(seed + 31)
    c = _chain(X, 3)
    n, perms = c.rows.shape[0], label_permutations(3)
    log_q = _random_log_q(n, 3, rng)
    Z = np.array(list(product(range(3), repeat=n)), np.int64)
    lt = np.array([b * _log_joint(c.rows, c.cols, c.v, z, c.D, c.N, c.g, c.a, c.b)
                   + (1 - b) * _log_q_sym(log_q, z, perms) for z in Z])
    pi = np.exp(lt - logsumexp(lt))
    M = 20000
    code = 3 ** np.arange(n)[::-1]
    counts = np.zeros(Z.shape[0])
    for i in rng.choice(Z.shape[0], size=M, p=pi):
        s = BetaDirChain(c.rows, c.cols, c.v, c.D, c.N, c.g, c.a, c.b, None, z=Z[i].copy())
        betadir_symmetric_sweep(s.rows, s.cols, s.v, s.z, s.L, s.C1, s.C0, s.g, s.a, s.b,
                                rng.random(n), b, log_q, perms)
        counts[int(s.z @ code)] += 1
    assert np.array_equal(s.L, BetaDirChain(c.rows, c.cols, c.v, c.D, c.N, c.g, c.a, c.b,
                                            None, z=s.z.copy()).L)
    assert _chi2_pvalue(counts, pi) > 1e-3


def test_symmetric_sweep_refuses_non_finite_log_q():
    c = _chain(np.array([[1, 0], [0, 1]], float), 2)
    log_q = np.full((4, 2), math.log(0.5))
    log_q[2, 1] = np.nan
    with pytest.raises(ValueError, match="log q is not finite"):
        betadir_symmetric_sweep(c.rows, c.cols, c.v, c.z, c.L, c.C1, c.C0, c.g, c.a, c.b,
                                np.full(4, 0.5), 0.5, log_q, label_permutations(2))


@pytest.mark.parametrize("seed", SEEDS)
def test_draws_and_density_are_the_symmetrized_references(seed):
    X = np.array([[1, 0], [1, 1]], float)
    rng = np.random.default_rng(seed + 41)
    ad = BetaDirSymmetricReference(_chain(X, 3))
    q = ad.fit(rng.integers(0, 3, size=(30, 4)).astype(np.int8))
    Z = np.array(list(product(range(3), repeat=4)), np.int64)
    lq = np.array([ad.log_q(q, BetaDirChain(*_args(ad), None, z=z.copy())) for z in Z])
    assert logsumexp(lq) == pytest.approx(0.0, abs=1e-9)
    s = ad.draw_q(q, rng)
    for perm in label_permutations(3):
        assert ad.log_q(q, ad.relabelled(s, perm)) == pytest.approx(ad.log_q(q, s))
    M = 8000
    code = 3 ** np.arange(4)[::-1]
    counts = np.bincount([int(ad.draw_q(q, rng).z @ code) for _ in range(M)], minlength=81)
    assert _chi2_pvalue(counts.astype(float), np.exp(lq)) > 1e-3


def _args(ad):
    t = ad.t
    return t.rows, t.cols, t.v, t.D, t.N, t.g, t.a, t.b


def _symmetric(fam):
    from dataclasses import replace

    return replace(fam, symmetric=True)


@pytest.mark.parametrize("seed", SEEDS)
def test_symmetric_path_estimates_the_total_without_log_k_factorial(seed):
    fam, exact, s, ref, rng = _enumerated_mode(seed)
    sym = _symmetric(fam)
    assert isinstance(reference_adapter(sym), BetaDirSymmetricReference)
    out = reference_log_z(sym, ref, [[s]], rng, cut=180.0, n_runs=8, n_particles=100,
                          n_moves=2, n_draws=100)
    assert out["symmetric"]
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)
    assert out["log_z_total"] == pytest.approx(out["log_z"][0])


@pytest.mark.parametrize("seed", SEEDS)
def test_symmetric_tempering_estimates_the_total_without_log_k_factorial(seed):
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z

    fam, exact, s, ref, rng = _enumerated_mode(seed)
    out = reference_pt_log_z(_symmetric(fam), ref, [[s]], rng, cut=180.0, n_runs=8,
                             n_scans=100, n_tune_rounds=2, n_draws=100)
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)
    assert np.all(out["round_trips"][0] >= 5), out["round_trips"]


@pytest.mark.parametrize("seed", E2E_SEEDS)
def test_five_betadir_labels_get_the_total_along_the_label_orbit(seed):
    """A 5 x 5 binary matrix with 6 entries observed, at K = 5 (15,625 labellings enumerated;
    120 copies, above the symmetrized reference's 24): the label orbit path's SMC total is
    ``log sum_Z p(V, Z) - n log K`` within 4 standard errors of 8 runs (``P(|t_7| > 4) =
    0.5 %``), with no ``log 5!``. Seeds 100-139: 0 of 40 failures."""
    from dataclasses import replace

    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering._label_orbit import LabelOrbitAdapter
    from bnmfzoo.models import beta_dir

    X = np.full((5, 5), np.nan)  # rank 5 needs 5 rows and columns; 6 entries observed
    X[np.arange(5), np.arange(5)] = [1, 0, 1, 1, 0]
    X[0, 1] = 1
    fam = family_of_model(beta_dir(X, 5))
    t = fam.draw_prior(np.random.default_rng(0))
    n = t.rows.shape[0]
    exact = float(logsumexp([_log_joint(t.rows, t.cols, t.v, np.array(z), t.D, t.N, t.g,
                                        t.a, t.b) for z in product(range(5), repeat=n)])
                  - n * math.log(5))
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(20):
        fam.tempered.sweep(s, 1.0, rng)
    ref = np.asarray(fam.factors(s)[0], float)[None]
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    sym = replace(fam, symmetric=True)
    assert isinstance(reference_adapter(sym), LabelOrbitAdapter)
    out = reference_log_z(sym, ref, [[s]], rng, cut=180.0, n_runs=8, n_particles=100,
                          n_moves=2, n_draws=100)
    assert out["symmetric"]
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)


def test_other_families_and_five_labels_get_the_label_orbit_path():
    from dataclasses import replace

    from bnmfzoo.inference.binary._reference import BetaDirReference
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering._label_orbit import LabelOrbitAdapter
    from bnmfzoo.models import beta_dir, exponential_gaussian

    fam = family_of_model(exponential_gaussian(np.ones((4, 3)), 2))
    assert isinstance(reference_adapter(replace(fam, symmetric=True)), LabelOrbitAdapter)
    assert not isinstance(reference_adapter(fam), LabelOrbitAdapter)
    with pytest.raises(ValueError, match="K! <= 24"):
        label_permutations(5)
    X = (np.arange(42).reshape(6, 7) % 3 == 0).astype(float)
    four = reference_adapter(replace(family_of_model(beta_dir(X, 4)), symmetric=True))
    assert isinstance(four, BetaDirSymmetricReference)
    five = reference_adapter(replace(family_of_model(beta_dir(X, 5)), symmetric=True))
    assert isinstance(five, LabelOrbitAdapter) and isinstance(five.base, BetaDirReference)


def test_a_symmetric_path_gives_no_copy_reason_and_the_retry_rule():
    """Particles and ``b = 1`` replicas spread over the copies are what a symmetrized path is
    for, so its ``swapped`` shares are no :class:`CopiesOverlap` reason (the product
    reference's are); the route retries along a path holding every copy (Beta-Dir's
    symmetrized reference, the other families' label orbit) only for a model whose check found
    overlapping copies, at ``K <= 8`` (Beta-Dir above ``K! = 24``: the label orbit), once."""
    from types import SimpleNamespace

    from bnmfzoo.inference._mass_verdict import CopiesOverlap, per_mode_reasons
    from bnmfzoo.inference.reference_check import symmetric_retry

    est = {"log_z": [-10.0], "log_z_se": [0.1], "mass": [1.0], "se": [0.0],
           "log_z_total": -10.0, "log_z_total_se": 0.1, "left": [0.0], "path_left": [0.0],
           "pt_left": [0.0], "round_trips": [[20, 3]], "swapped": [0.5], "pt_swapped": [0.6]}
    product = per_mode_reasons(est, est, -10.0, 0.1, 1)
    assert sum(isinstance(r, CopiesOverlap) for r in product) == 2
    sym = dict(est, symmetric=True)
    reasons = per_mode_reasons(sym, sym, -10.0, 0.1, 1)
    assert not any(isinstance(r, CopiesOverlap) for r in reasons)
    assert any("round trips" in r for r in reasons)  # the short run is still a reason
    overlap = product
    fam = SimpleNamespace(name="beta_dir", symmetric=False)
    assert symmetric_retry(fam, overlap, 4)
    assert symmetric_retry(fam, overlap, 5)  # 120 copies: the label orbit's, up to K = 8
    assert not symmetric_retry(fam, overlap, 9)
    assert not symmetric_retry(fam, ["mode 0: a tempering run made 0 round trips"], 3)
    assert not symmetric_retry(SimpleNamespace(name="beta_dir", symmetric=True), overlap, 3)
    for name in ("poisson", "negative_binomial", "exponential_gaussian"):  # the label orbit's
        assert symmetric_retry(SimpleNamespace(name=name, symmetric=False), overlap, 6)
        assert symmetric_retry(SimpleNamespace(name=name, symmetric=False), overlap, 8)
        assert not symmetric_retry(SimpleNamespace(name=name, symmetric=False), overlap, 9)
    assert not symmetric_retry(SimpleNamespace(name="other", symmetric=False), overlap, 3)



@pytest.mark.parametrize("check", ["reference", "reference_pt"])
@pytest.mark.parametrize("seed", E2E_SEEDS)
def test_overlapping_copies_are_checked_again_along_the_symmetric_reference(check, seed):
    """An 8 x 6 binary matrix at rank 3: the components are not told apart, so the product
    reference's check reports the copies overlapping (79-86 % of its draws on another copy)
    and, before this route, refused every seed. Both checks now run again along the
    symmetrized reference and establish the one mode; the statement says why. False-failure
    rate over seeds 100-139 (``BNMFZOO_SEED_SCAN=1``): see the results page, section 49."""
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import beta_dir

    X = (np.random.default_rng(3).random((8, 6)) < 0.5).astype(float)
    out = smc_mode_masses(beta_dir(X, 3), n_runs=2, n_particles=100, n_moves=2, check=check,
                          reference_runs=4, reference_particles=50, pt_scans=300,
                          random_seed=seed)
    details = out["reference"] if check == "reference" else out["per_mode"]
    assert any("another label copy" in r for r in details["product_reasons"])
    assert out["established"], out["statement"]
    assert "symmetrized over the label copies" in out["statement"]


def test_a_retry_the_budget_cuts_short_keeps_the_first_result_and_says_so(monkeypatch):
    """The retry runs on what is left of the CPU budget: when it runs out there, both routes
    return the product reference's check with one more reason, which asks for more budget."""
    from bnmfzoo.inference import reference_check as rc
    from bnmfzoo.inference import reference_tempering
    from bnmfzoo.inference._mass_budget import BudgetExhausted
    from bnmfzoo.inference._mass_verdict import CopiesOverlap
    from bnmfzoo.inference.smc_masses import _Family

    def out_of_budget(family, *args, **kw):
        assert family.symmetric
        raise BudgetExhausted(10.0, 10.5)

    fam = _Family("beta_dir", None, None, None)
    overlap = [CopiesOverlap("mode 0: 30% of its draws sit on another label copy")]
    monkeypatch.setattr(reference_tempering, "per_mode_check", out_of_budget)
    pm = rc.symmetric_check(fam, {"reasons": overlap, "smc": "first"}, (), None, {})
    assert pm["smc"] == "first" and pm["reasons"][0] is overlap[0]
    assert "raise the budget" in pm["reasons"][1] and "product_reasons" not in pm

    first = (np.ones(1), np.zeros(1), [], overlap, {"log_z": [-1.0]})
    calls = []

    def check(family, *args, **kw):
        calls.append(family.symmetric)
        if family.symmetric:
            raise BudgetExhausted(10.0, 10.5)
        return first

    monkeypatch.setattr(rc, "reference_check", check)
    found = ([], None, None, {"reference": np.zeros((1, 3, 2))}, 0.0, 0.0)
    out = rc.reference_check_retried(fam, found, None, None, {})
    assert calls == [False, True]
    assert out[4] is first[4] and out[3][:1] == overlap and "raise the budget" in out[3][1]
