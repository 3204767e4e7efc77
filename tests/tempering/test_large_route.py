"""The large-matrix Poisson route: dense HMC as the only move, modes by restarts, route choice.

**Invariance** (:func:`test_hmc_only_moves_keep_the_rung`): on the rank-1, 1 x 2 Poisson rung
of ``tests/_quadrature.py`` (exact draws by the closed-form ``W`` integral), 2,000 exact draws
of ``pi_b`` each moved by 3 transitions of the frozen ``shear+rescale+hmc`` kernel (the dense
HMC, :mod:`bnmfzoo.inference.counts.tempering._hmc_dense`, at every ``b``) must stay draws of
``pi_b``: Kolmogorov-Smirnov of ``A``, ``W_1``, ``W_2`` at ``p >= 1e-3`` for ``b`` in 0.2, 0.6
and 1 (9 tests: a nominal false-failure rate below 0.9 %). False failures over seeds 100-139
(``BNMFZOO_SEED_SCAN=1``): ``SEED_SCAN_RESULT``.

**Log Z** (:func:`test_large_route_estimators_match_quadrature`): both per-mode estimators of
the route (reference-path SMC and reference-path parallel tempering, each with the HMC-only
moves, and fit chains by :class:`~bnmfzoo.inference.large_route.HmcTempered`) against the
exact log Z by quadrature, each within 4 of its standard errors (8 runs: ``t_7`` beyond 4 is
0.5 %). :func:`test_large_route_from_the_copula_matches_quadrature`: the tempering from the
Gaussian copula reference (``copula=True``; its path was the shorter on every seed scanned,
and it is kept by reporting its move as the cheaper, since the choice weighs the CPU), 16
runs (``t_15`` beyond 4: 0.1 %; false failures over seeds 100-139: ``COPULA_SEED_SCAN``).
With 8 runs it failed 2 of 40 seeds (100-139; ``|z|`` 4.2
and 5.0); seed 105 again with 32 runs gave ``log Z - exact`` 0.0013 +- 0.0062 (run sd 0.035,
where the failing 8 runs' sd was 0.024): the runs' spread was underestimated, the estimate not
biased (over seeds 200-224 with 8 runs the ``z`` had sd 0.75, all within 2.0). The SMC keeps
the product reference: from a copula at the tempering's widening (0.7) its ``(log Z - exact) /
se`` averaged -1.17 over seeds 100-129 (sd 0.94; -0.29 at the SMC's own widening 2, where on
ESCC SBS96 it cost more CPU than from the product).
"""

import math
import os
import time

import numpy as np
import pytest
from _poisson_rung import (
    moved_exact_draws,
    one_mode_reference,
    rank1_family,
    rung_ks_pvalues,
)
from _poisson_rung import rung_problem as _problem
from _quadrature import POISSON_RATE, POISSON_X, poisson_rank1_log_z

from bnmfzoo.inference.counts.tempering._hmc import log_density_grad
from bnmfzoo.inference.counts.tempering._hmc_dense import dense_grad, dense_log_density
from bnmfzoo.inference.counts.tempering._local import RungMoves
from bnmfzoo.inference.large_route import (
    HMC_FIT_MOVES,
    LARGE_LOCAL,
    HmcTempered,
    choose_route,
    kl_nmf_start,
    large_mode_masses,
)

SEEDS = range(100, 140) if os.environ.get("BNMFZOO_SEED_SCAN") else [0]
#: measured once with BNMFZOO_SEED_SCAN=1 (seeds 100-139)
SEED_SCAN_RESULT = ("invariance at b = 0.2, 0.6, 1: 40 of 40 passed; both estimators against "
                    "quadrature: 40 of 40 passed (1,949 s wall, shared machine)")
#: measured once with BNMFZOO_SEED_SCAN=1 (seeds 100-139)
COPULA_SEED_SCAN = ("40 of 40 passed with 16 runs (587 s wall); again at the Poisson copula's "
                    "widening 1.0 (1 Dec 2026, 939 s wall on a shared machine); again with the "
                    "compiled copula move (1 Dec 2026, 251 s wall, shared machine)")
#: measured once with BNMFZOO_SEED_SCAN=1 (seeds 100-139)
HMC_FIT_SEED_SCAN = "40 of 40 passed (2 Dec 2026, 50 s wall, shared machine)"


@pytest.mark.parametrize("seed", SEEDS)
def test_hmc_only_moves_keep_the_rung(seed):
    rng = np.random.default_rng(seed)
    for b in (0.2, 0.6, 1.0):
        moves = RungMoves(_problem(), LARGE_LOCAL, n_leap=5, eps=0.2)
        assert moves.dense and moves.hmc_from == 0.0 and not moves.sweep
        moves.freeze()
        A0, W0, A1, W1 = moved_exact_draws(moves, rng, b, 2000, 3)
        assert 0.3 < moves.acceptance() < 1.0, moves.acceptance()  # HMC moves the state
        assert np.mean(A1 != A0) > 0.5
        # the mean A W changes only by HMC (the group moves keep it): HMC's result is kept
        assert np.mean(np.abs(A1 * W1[:, 0] / (A0 * W0[:, 0]) - 1.0) > 1e-8) > 0.3
        for name, p in rung_ks_pvalues(A1, W1, b):
            assert p >= 1e-3, (b, name, p)


def test_dense_kernel_matches_the_cell_loop():
    """Dense gradient and density against the cell loop on a rank-2 problem with missing cells
    and offsets (the densities differ by a constant: ``sum X log O``)."""
    rng = np.random.default_rng(4)
    D, N, K = 5, 7, 2
    seen = rng.uniform(size=(D, N)) < 0.7
    rows, cols = (v.astype(np.int64) for v in np.nonzero(seen))
    offs = rng.uniform(0.5, 2.0, rows.size)
    x = rng.poisson(3.0, rows.size).astype(float)
    Xd, Od = np.zeros((D, N)), np.zeros((D, N))
    Xd[rows, cols], Od[rows, cols] = x, offs
    aA, rA = rng.uniform(0.5, 2, (D, K)), rng.uniform(0.5, 2, (D, K))
    aW, rW = rng.uniform(0.5, 2, (N, K)), rng.uniform(0.5, 2, (N, K))
    diffs = []
    for b in (0.3, 1.0):
        for _ in range(3):
            tA, tW = rng.normal(size=(D, K)), rng.normal(size=(N, K))
            g1, h1, g2, h2 = (np.empty((D, K)), np.empty((N, K)), np.empty((D, K)),
                              np.empty((N, K)))
            lp1 = log_density_grad(tA, tW, rows, cols, offs, x, aA, rA, aW, rW, b, g1, h1)
            M = dense_grad(tA, tW, Xd, Od, aA, rA, aW, rW, b, g2, h2)
            lp2 = dense_log_density(tA, tW, M, Xd, Od, aA, rA, aW, rW, b)
            assert np.allclose(g1, g2, rtol=1e-10, atol=1e-10)
            assert np.allclose(h1, h2, rtol=1e-10, atol=1e-10)
            diffs.append(lp1 - lp2 - b * np.sum(x * np.log(offs)))
    assert np.ptp(diffs) < 1e-9 and abs(diffs[0]) < 1e-9, diffs
    g, h = np.empty((D, K)), np.empty((N, K))
    bad = np.full((D, K), np.nan)
    assert dense_grad(bad, tW, Xd, Od, aA, rA, aW, rW, 0.5, g, h).shape == (0, 0)
    assert dense_grad(np.full((D, K), 800.0), tW, Xd, Od, aA, rA, aW, rW, 0.5, g, h).shape \
        == (0, 0)


def _one_mode_family(seed):
    from types import SimpleNamespace

    fam = rank1_family()
    tempered = HmcTempered(fam.tempered, LARGE_LOCAL, 5)
    hfam = SimpleNamespace(name=fam.name, tempered=tempered, draw_prior=fam.draw_prior,
                           factors=fam.factors)
    rng = np.random.default_rng(seed)
    s = kl_nmf_start(fam.tempered.problem, fam.draw_prior(rng), 50)
    for _ in range(40):
        tempered.sweep(s, 1.0, rng)
    tempered.freeze()
    return hfam, one_mode_reference(fam, s), s, rng


@pytest.mark.parametrize("seed", SEEDS)
def test_large_route_estimators_match_quadrature(seed):
    from bnmfzoo.inference.reference_path import reference_log_z
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z

    exact = poisson_rank1_log_z(POISSON_X, POISSON_RATE)
    hfam, ref, s, rng = _one_mode_family(seed)
    smc_out = reference_log_z(hfam, ref, [[s]], rng, cut=180.0, n_runs=8, n_particles=60,
                              n_moves=2, n_draws=100, local=LARGE_LOCAL, n_leap=5)
    pt_out = reference_pt_log_z(hfam, ref, [[s]], rng, cut=180.0, n_runs=8, n_scans=100,
                                n_tune_rounds=2, n_draws=100, local=LARGE_LOCAL, n_leap=5)
    for out, low in ((smc_out, 0.1), (pt_out, 0.3)):
        assert abs(out["log_z"][0] - exact) <= 4 * out["log_z_se"][0], (out["log_z"], exact)
        # HMC moves the state (the lowest temperature's mean acceptance; in the SMC the first
        # temperatures' steps are set before any acceptance was seen)
        assert low < out["local_acceptance"][0] <= 1.0, out["local_acceptance"]
    assert np.all(pt_out["round_trips"][0] >= 3), pt_out["round_trips"]


def _copula_timed_cheaper(monkeypatch, copula_s, other_s):
    """``sweep_seconds`` of the tempering's floor made to report fixed costs per path kind."""
    import bnmfzoo.inference.reference_tempering as rt

    monkeypatch.setattr(rt, "sweep_seconds", lambda path, betas, **k: copula_s if "copula" in
                        path.q else other_s)


@pytest.mark.parametrize("seed", SEEDS)
def test_large_route_from_the_copula_matches_quadrature(seed, monkeypatch):
    """The copula's path forced (its timed move reported cheaper than the product's: on this
    2-cell problem the copula's pure-Python term makes it dearer, so the route would keep the
    product; ``test_the_copula_is_kept_where_its_runs_cost_less``)."""
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z

    _copula_timed_cheaper(monkeypatch, 1e-5, 1e-3)
    exact = poisson_rank1_log_z(POISSON_X, POISSON_RATE)
    hfam, ref, s, rng = _one_mode_family(seed)
    out = reference_pt_log_z(hfam, ref, [[s]], rng, cut=180.0, n_runs=16, n_scans=100,
                             n_tune_rounds=2, n_draws=100, local=LARGE_LOCAL, n_leap=5,
                             copula=True)
    assert out["reference_fit"][0][0] == "copula", out["reference_fit"]
    assert abs(out["log_z"][0] - exact) <= 4 * out["log_z_se"][0], (out["log_z"], exact)
    assert 0.3 < out["local_acceptance"][0] <= 1.0, out["local_acceptance"]
    assert np.all(out["round_trips"][0] >= 3), out["round_trips"]


@pytest.mark.parametrize("copula_s, chosen", [(1e-5, "copula"), (1.0, "not copula")])
def test_the_copula_is_kept_where_its_runs_cost_less(monkeypatch, copula_s, chosen):
    """The copula is piloted and kept where its runs' floor (its pilot barrier and rungs at its
    own timed move) is below the other reference's, whatever the barriers: a copula whose move
    is reported 1,000 times dearer is not kept, though its barrier is lower."""
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z

    _copula_timed_cheaper(monkeypatch, copula_s, 1e-3)
    hfam, ref, s, rng = _one_mode_family(0)
    out = reference_pt_log_z(hfam, ref, [[s]], rng, cut=180.0, n_runs=2, n_scans=20,
                             n_tune_rounds=1, n_draws=100, local=LARGE_LOCAL, n_leap=5,
                             copula=True)
    lam, f_cop, f_other = out["copula_pilot"][0]
    assert lam < out["reference_fit"][0][1]  # the copula's path is the shorter here
    assert (f_cop < f_other) == (chosen == "copula"), out["copula_pilot"]
    assert (out["reference_fit"][0][0] == "copula") == (chosen == "copula"), out["reference_fit"]


def test_route_choice():
    assert choose_route(False, {"sweep": 0.060, "hmc": 0.008})[0]
    large, why = choose_route(False, {"sweep": 0.010, "hmc": 0.008})
    assert not large and "not faster" in why
    large, why = choose_route(True, {"sweep": 0.060, "hmc": 0.008})
    assert not large and "fits the budget" in why
    assert choose_route(False, {"sweep": 0.0251, "hmc": 0.01})[0]  # just past TAU_RATIO 2.5
    assert not choose_route(False, {"sweep": 0.0249, "hmc": 0.01})[0]
    with pytest.raises(ValueError, match="costs"):
        choose_route(False, {"sweep": 0.0, "hmc": 0.01})


def test_kl_start_moves_towards_the_data():
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.models import poisson, recognize

    rng = np.random.default_rng(2)
    A, W = rng.gamma(2.0, 1.0, (12, 2)), rng.gamma(2.0, 10.0, (2, 9))
    Xc = rng.poisson(A @ W).astype(float)
    p = problem_from_factorization(recognize(poisson(Xc, 2)))
    s0 = {"A": rng.gamma(1.0, 1.0, (12, 2)), "W": rng.gamma(1.0, 1.0, (2, 9))}
    s1 = kl_nmf_start(p, s0, 200)

    def kl(s):
        mu = s["A"] @ s["W"]
        return float(np.sum(mu - Xc * np.log(mu)))

    assert kl(s1) < kl(s0) - 100.0
    with pytest.raises(ValueError, match="state must hold"):
        kl_nmf_start(p, {"A": -s0["A"], "W": s0["W"]})


def test_kl_start_stops_once_its_gain_is_below_tol(monkeypatch):
    """With ``tol`` the updates stop at the first check (every ``KL_CHECK`` updates) whose
    gain in the log posterior is below it, and the large route's restarts ask for
    ``sqrt(dimension)`` (a fixed 300 updates left ESCC SBS96's starts up to 7,800 nats below
    the typical set). Deterministic: the same updates, counted."""
    import bnmfzoo.inference.large_route as lr
    from bnmfzoo.inference.counts._kl_start import KL_CHECK, KL_MAX, log_posterior
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.models import poisson, recognize

    rng = np.random.default_rng(2)
    Xc = rng.poisson(rng.gamma(2.0, 1.0, (12, 2)) @ rng.gamma(2.0, 10.0, (2, 9))).astype(float)
    p = problem_from_factorization(recognize(poisson(Xc, 2)))
    s0 = {"A": rng.gamma(1.0, 1.0, (12, 2)), "W": rng.gamma(1.0, 1.0, (2, 9))}
    same = np.testing.assert_array_equal
    same(kl_nmf_start(p, s0, 5000, tol=np.inf)["A"], kl_nmf_start(p, s0, KL_CHECK)["A"])
    same(kl_nmf_start(p, s0, 130, tol=-np.inf)["W"], kl_nmf_start(p, s0, 130)["W"])
    stopped = kl_nmf_start(p, s0, 5000, tol=0.5)
    m = next(m for m in range(KL_CHECK, 5001, KL_CHECK)
             if np.array_equal(kl_nmf_start(p, s0, m)["A"], stopped["A"]))
    lp = [log_posterior(p, kl_nmf_start(p, s0, n)) for n in (m - 2 * KL_CHECK, m - KL_CHECK, m)]
    assert 2 * KL_CHECK <= m < 5000 and lp[2] - lp[1] < 0.5 <= lp[1] - lp[0], (m, lp)

    seen = []

    def spy(problem, state, n_iter=300, tol=None):
        seen.append((n_iter, tol))
        return kl_nmf_start(problem, state, 30)

    monkeypatch.setattr(lr, "kl_nmf_start", spy)
    hfam, _, _, rng = _one_mode_family(0)
    lr.restart_modes(hfam, hfam.tempered, rng, cut=15.0, n_starts=2, n_hmc=4)
    assert seen == [(KL_MAX, math.sqrt(hfam.tempered.dimension))] * 2


def test_kl_start_keeps_a_zero_column_at_its_prior_shape():
    """A column of zero counts: the KL update of its ``W`` is ``a / (b + sum_d A_dk)`` exactly
    (the likelihood's term is 0, the Gamma prior's shape on ``log W`` is left), never the float
    floor, so the start is a finite point in ``log`` space that HMC accepts moves from.
    Over seeds 0-99 no false failure (at least 15 of the 20 transitions accepted, the zero
    column's ``W`` at least 0.018)."""
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.inference.counts.tempering._hmc_dense import hmc_step_dense
    from bnmfzoo.models import poisson, recognize

    rng = np.random.default_rng(5)
    Xc = rng.poisson(rng.gamma(2.0, 1.0, (10, 2)) @ rng.gamma(2.0, 10.0, (2, 6))).astype(float)
    Xc[:, 2] = 0.0
    p = problem_from_factorization(recognize(poisson(Xc, 2, a=1.5, b=0.5)))
    s = kl_nmf_start(p, {"A": rng.gamma(1.0, 1.0, (10, 2)), "W": rng.gamma(1.0, 1.0, (2, 6))},
                     200)
    A, W = s["A"], s["W"]
    np.testing.assert_allclose(W[:, 2], 1.5 / (A.sum(0) + 0.5), rtol=1e-12)
    assert np.all(W[:, 2] > 1e-3), W[:, 2]  # the plain KL update sends it to ~1e-308
    tA, tWt = np.log(A), np.ascontiguousarray(np.log(W).T)
    shapes = (np.full((10, 2), 1.5), np.full((10, 2), 0.5), np.full((6, 2), 1.5),
              np.full((6, 2), 0.5))
    codes = []
    for _ in range(20):
        code, _ = hmc_step_dense(tA, tWt, rng.standard_normal((10, 2)),
                                 rng.standard_normal((6, 2)), Xc, np.ones_like(Xc), *shapes,
                                 1.0, np.full((10, 2), 0.05), np.full((6, 2), 0.05), 0.1, 5,
                                 math.log(rng.uniform()))
        codes.append(code)
    assert 2 not in codes and codes.count(0) >= 10, codes  # HMC leaves the start
    assert np.all(np.abs(np.exp(tWt[2]) / W[:, 2] - 1.0) > 1e-6)  # the zero column moved


def _rank1_counts():
    """An 8 x 6 rank-1 Poisson matrix (its fourth column all zeros)."""
    rng = np.random.default_rng(0)
    return rng.poisson(rng.gamma(1.0, 1.0, (8, 1)) @ rng.gamma(1.0, 20.0, (1, 6))).astype(float)


def _rank1_run(**kw):
    """The large route on :func:`_rank1_counts` with small settings; ``kw`` overrides them."""
    from bnmfzoo.models import poisson

    settings = {"random_seed": 1, "n_starts": 2, "n_runs": 2, "n_particles": 20, "pt_runs": 2,
                "n_draws": 30, "n_leap": 5, **kw}
    return large_mode_masses(poisson(_rank1_counts(), 1), **settings)


def test_large_mode_masses_says_what_it_did_not_check():
    """A small end-to-end run: one mode, both estimators, the statement names the restarts,
    says modes they never reached are unknown, and a budget that runs out lists no mode."""
    from bnmfzoo.models import poisson

    Xc = _rank1_counts()
    out = _rank1_run(n_starts=3, n_runs=3, pt_scans=60)
    assert Xc[:, 3].sum() == 0  # a column of zeros: the KL start must not underflow there
    assert len(out["modes"]) == 1 and out["modes"][0]["n_starts"] == 3
    assert out["modes"][0]["mass"] == 1.0 and math.isfinite(out["pt"]["log_z"][0])
    assert "unknown, not zero" in out["statement"] and "3 restarts" in out["statement"]
    assert out["costs"]["pt_s_per_rung_scan"][0] > 0
    stopped = large_mode_masses(poisson(Xc, 1), random_seed=1, budget_s=1e-6, move_cost=1e-3)
    assert stopped["modes"] == [] and not stopped["established"]
    assert "ran out" in stopped["statement"]


def test_large_mode_masses_passes_the_copula_and_the_early_stop(monkeypatch):
    """``copula=True`` reaches the tempering (which pilots the copula) and the SMC (which runs
    along the copula's path, moved by HMC), both from one set of fit chains of latent-count
    sweeps (the copula's correlation needs them); the SMC stops a negligible mode's runs early
    (``EARLY_STOP``); ``pt_trips`` ends the tempering runs at that many round trips; the
    settings say so."""
    import bnmfzoo.inference.reference_path as rp
    import bnmfzoo.inference.reference_tempering as rt
    from bnmfzoo.inference._mass_budget import BudgetedSweep
    from bnmfzoo.inference._mass_verdict import EARLY_STOP
    from bnmfzoo.inference.large_route import COPULA_FIT_DRAWS

    seen = {}

    def spy(name, fn):
        def call(*args, **kw):
            if "fits" not in kw:  # the fit chains' run, not the basin rule run again
                seen[name], seen[name + " family"] = kw, args[0]
            return fn(*args, **kw)
        return call

    monkeypatch.setattr(rp, "reference_log_z", spy("smc", rp.reference_log_z))
    monkeypatch.setattr(rt, "reference_pt_log_z", spy("pt", rt.reference_pt_log_z))
    monkeypatch.setattr(rp, "fit_chains_and_basins", spy("fit", rp.fit_chains_and_basins))
    pilots = []

    def pilot_spy(path, rng, **kw):  # (a copula's?, its cap, its barrier), in call order
        out = pilot_ladder(path, rng, **kw)
        pilots.append(("copula" in path.q, kw.get("max_barrier", math.inf), out[1]))
        return out

    pilot_ladder = rt.pilot_ladder
    monkeypatch.setattr(rt, "pilot_ladder", pilot_spy)
    out = _rank1_run(pt_scans=60, copula=True, pt_trips=12)
    # the copula is piloted first, uncapped; the product's pilots after it, capped where their
    # floor would pass the copula's (product_barrier_cap), and reported
    cap = out["pt"]["pilot_cap"][0]
    assert pilots[0][:2] == (True, math.inf) and math.isfinite(cap) and cap > 0
    assert len(pilots) == 3 and all(not c and m == cap for c, m, _ in pilots[1:]), pilots
    assert [p[2] for p in pilots[1:]] == list(out["pt"]["reference_fit"][0][1:3])
    assert seen["pt"].get("copula") is True and seen["smc"].get("copula") is True
    assert seen["pt"].get("stop_trips") == 12 and seen["pt"].get("n_scans") == 60
    # one set of fit chains for both: latent-count sweeps of COPULA_FIT_DRAWS draws each
    assert isinstance(seen["pt family"].tempered, BudgetedSweep)
    assert isinstance(seen["smc family"].tempered, HmcTempered)  # the product's fallback
    assert seen["smc"].get("fitted") is seen["pt"].get("fitted_chains") is not None
    # 4 chains of COPULA_FIT_DRAWS, each without its start-up transient (at most half)
    assert seen["fit"].get("trim") is True
    kept, run = out["fit_draws"][0]
    rows, _, chain, _ = seen["pt"]["fitted_chains"][0][0]
    assert np.sum(chain < 4) == kept and run == 4 * COPULA_FIT_DRAWS
    assert run // 2 <= kept <= run
    # and 4 chains of HMC_FIT_MOVES copula-mass HMC draws each (hmc_fit_draws)
    assert out["hmc_fit_draws"] == [4 * HMC_FIT_MOVES] and rows.shape[0] == kept + 4 * HMC_FIT_MOVES
    assert out["smc"]["reference"] == ["copula"]
    assert seen["smc"].get("early_stop") == EARLY_STOP
    assert out["settings"]["copula"] and out["pt"]["reference_fit"][0][0] in (
        "copula", "marginal", "ridge-free")
    assert len(out["modes"]) == 1 and math.isfinite(out["pt"]["log_z"][0])


def _rank2_mode(rng):
    """``(family, state, mode reference)``: a 12 x 10 rank-2 Poisson NMF, 100 sweeps in."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    Xc = rng.poisson(rng.gamma(2.0, 1.0, (12, 2)) @ rng.gamma(2.0, 3.0, (2, 10))).astype(float)
    fam = family_of_model(poisson(Xc, 2))
    s = fam.draw_prior(rng)
    for _ in range(100):
        fam.tempered.sweep(s, 1.0, rng)
    return fam, s, _unit_l2(np.asarray(fam.factors(s)[0], float)[None])


def test_fit_chains_drop_each_chain_start_up_transient(monkeypatch):
    """``trim=True``: each fit chain loses the draws before the MSER point of its log joint
    (:func:`bnmfzoo.diagnostics._transient.transient_end`), and only those. The chains of this
    small problem settle within a sweep, so a transient is planted in the log joint the chains
    report (chain ``c`` climbs 1,000 nats over about ``8 (c + 1)`` draws); the draws the fit keeps
    are then exactly the untrimmed run's draws after each chain's cut, and the cuts sit at the
    planted climbs' ends."""
    import bnmfzoo.inference.reference_path as rp

    real = rp._aligned_draws

    def planted(*args, **kwargs):
        rows, bases, chain, joint = real(*args, **kwargs)
        pos = np.concatenate([np.arange(np.sum(chain == c)) for c in np.unique(chain)])
        return rows, bases, chain, joint - 1000.0 * np.exp(-pos / (2.0 * (chain + 1)))

    monkeypatch.setattr(rp, "_aligned_draws", planted)
    fam, s, ref = _rank2_mode(np.random.default_rng(0))
    adapter = rp.reference_adapter(fam)
    whole, trimmed = (rp.fit_chains_and_basins(fam, adapter, ref, [[s]], np.random.default_rng(5),
                                               30.0, 3, 60, 1, 0, trim=trim)[0][0]
                      for trim in (False, True))
    chain = whole[2]
    dropped = [60 - int(np.sum(trimmed[2] == c)) for c in range(3)]
    # each cut where the climb left is 1-50 nats (measured: 11, 9 and 9 at cuts of 9, 19, 28;
    # the chains' own log joint spreads by a few nats): not before it, not far into the rest
    left = [1000.0 * np.exp(-dropped[c] / (2.0 * (c + 1))) for c in range(3)]
    assert all(1.0 < v < 50.0 for v in left), (dropped, left)
    assert dropped[2] <= 29  # at most the cap ceil(60 / 2) - 1
    keep = np.concatenate([np.arange(60) >= dropped[c] for c in range(3)])
    assert np.array_equal(chain[keep], trimmed[2])
    for a, b in zip(whole, trimmed, strict=True):
        assert np.array_equal(np.asarray(a)[keep], b)


def _small_large_run():
    """The large route with ``pt_trips`` on an 8 x 6 rank-1 Poisson matrix, small settings."""
    return _rank1_run(pt_trips=12, budget_s=600.0)


def test_large_route_says_when_a_tempering_was_too_dear_to_start(monkeypatch):
    """With ``pt_trips`` a mode whose tempering floor is above its share of the budget is not
    started, and the statement says so and what it needs (not "too few draws")."""
    import bnmfzoo.inference.reference_tempering as rt

    monkeypatch.setattr(rt, "tempering_start_floor", lambda *a, **k: 1e9)
    out = _small_large_run()
    assert not out["established"]
    assert "was not started: it needs at least about 1000000000 CPU s" in out["statement"]
    assert "too few draws" not in out["statement"]
    assert math.isnan(out["modes"][0]["mass_check"])  # no check ran: not a mass of 0


def test_large_route_says_what_a_tempering_ended_on_its_share_would_need(monkeypatch):
    """With ``pt_trips`` a tempering run that ended on its CPU share short of the trips gets
    the sweep route's advice (the CPU its mode's tempering would need), beside the verdict's
    "made N round trips"."""
    import bnmfzoo.inference.reference_tempering as rt

    monkeypatch.setattr(rt, "tempering_start_floor", lambda *a, **k: 0.0)
    monkeypatch.setattr(rt, "run_allowance", lambda *a, **k: 0.05)
    out = _small_large_run()
    assert not out["established"]
    assert set(out["pt"]["stopped"][0]) == {"cpu"}, out["pt"]["stopped"]
    assert "ended on their CPU share before 10 round trips" in out["statement"]
    assert "round trips (at least 10 needed)" in out["statement"]



def test_a_copy_the_fit_chains_show_is_dropped_before_its_smc(monkeypatch):
    """With the copula's shared fit chains, two restart groups of one mode (here the one mode
    of a rank-1 matrix, reported twice) are found to be one by the fit chains' basin rule
    before any SMC run is spent on the copy; the copy's restarts count for the mode kept.
    The copy is found on short chains (``COPY_CHECK_DRAWS`` draws per chain, both groups)
    before the full fit chains, which then run for the mode kept only, from both groups'
    start states."""
    import bnmfzoo.inference.large_route as lr
    import bnmfzoo.inference.reference_path as rp

    real, seen = lr.restart_modes, {}

    def twice(*args, **kw):  # every restart's mode reported as two groups
        refs, states, label, counts, cpu = real(*args, **kw)
        label = np.arange(len(states)) % 2
        return np.concatenate([refs, refs]), states, label, np.bincount(label), cpu

    def spy(fn):
        def call(fam, refs, *args, **kw):
            seen["smc modes"] = refs.shape[0]
            return fn(fam, refs, *args, **kw)
        return call

    fit_calls = []

    def fit_spy(fam, adapter, refs, starts, rng, cut, n_chains, n_draws, *args, **kw):
        if adapter is not None:  # a run of chains (None: the basin rule on given fits)
            fit_calls.append((refs.shape[0], n_draws, [len(s) for s in starts]))
        return fit_chains(fam, adapter, refs, starts, rng, cut, n_chains, n_draws, *args,
                          **kw)

    fit_chains = rp.fit_chains_and_basins
    monkeypatch.setattr(rp, "fit_chains_and_basins", fit_spy)
    monkeypatch.setattr(lr, "restart_modes", twice)
    monkeypatch.setattr(rp, "reference_log_z", spy(rp.reference_log_z))
    out = _rank1_run(n_starts=4, pt_scans=60, copula=True, pt_trips=12)
    assert seen["smc modes"] == 1, seen
    assert len(out["modes"]) == 1 and out["modes"][0]["n_starts"] == 4
    assert "starts per mode [4]" in out["statement"]
    from bnmfzoo.inference.large_route import COPULA_FIT_DRAWS, COPY_CHECK_DRAWS

    assert fit_calls == [(2, COPY_CHECK_DRAWS, [2, 2]), (1, COPULA_FIT_DRAWS, [4])], fit_calls
    assert out["merged_early"] == {1: 0}


def _batch_mean_se(x, chains, n_batches=10):
    """The mean of ``x`` and its standard error from batch means within each chain."""
    means = [b.mean() for c in np.unique(chains)
             for b in np.array_split(x[chains == c], n_batches)]
    return float(np.mean(x)), float(np.std(means, ddof=1) / math.sqrt(len(means)))


@pytest.mark.parametrize("seed", SEEDS)
def test_hmc_fit_draws_are_draws_of_the_mode(seed):
    """:func:`~bnmfzoo.inference.large_route.hmc_fit_draws` adds, per fit chain, a chain of
    copula-mass HMC draws at ``b = 1`` (new chain ids) and leaves the sweep's draws as they
    were. Both are exact samplers of the posterior, so the mean log joint of the HMC draws must
    match the latent-count sweep's within 4 combined standard errors (batch means, 10 per
    chain: a nominal false-failure rate near 1e-4 where the batches are independent; measured
    over seeds 100-139: ``HMC_FIT_SEED_SCAN``). HMC run at ``b = 0.05`` instead (draws near
    the reference) sat 3.5-8 nats lower on seeds 100-102, ``z`` 7.6-18; at ``b = 0.5`` the path's
    target is already close to the posterior (the copula is fitted to it), and this test does
    not see that. The basin rule run again over all the draws keeps them in the one mode."""
    import bnmfzoo.inference.reference_path as rp
    from bnmfzoo.inference.large_route import hmc_fit_draws

    rng = np.random.default_rng(seed)
    fam, s, ref = _rank2_mode(rng)
    fitted = rp.fit_chains_and_basins(fam, rp.reference_adapter(fam), ref, [[s]], rng, 30.0, 2,
                                      400, 2, 50)
    rows, bases, chain, joint = fitted[0][0]
    rows2, bases2, chain2, joint2 = hmc_fit_draws(fam, fitted, rng, n_moves=400, n_adapt=100)[0]
    n = rows.shape[0]
    assert rows2.shape[0] == bases2.shape[0] == n + 2 * 400
    assert np.array_equal(rows2[:n], rows) and np.array_equal(joint2[:n], joint)
    assert np.array_equal(chain2[n:], np.repeat([2, 3], 400))
    m1, se1 = _batch_mean_se(joint, chain)
    m2, se2 = _batch_mean_se(joint2[n:], chain2[n:])
    assert abs(m1 - m2) < 4.0 * math.hypot(se1, se2), (m1, se1, m2, se2)
    again = rp.fit_chains_and_basins(fam, None, ref, [[s]], rng, 30.0, 2, 400, 2, 50,
                                     fits=[(rows2, bases2, chain2, joint2)])
    assert again[2][0].mean() > 0.95 and not again[1]["joined"]


def test_the_basin_rule_keeps_each_modes_chains_apart(monkeypatch):
    """Fit chains of several modes go to the basin rule with distinct chain ids, also when a
    mode holds more chains than ``n_chains`` (:func:`~bnmfzoo.inference.large_route.
    hmc_fit_draws` adds as many): chains of two modes taken as one would join the modes."""
    import bnmfzoo.diagnostics._modes.basins as bs
    import bnmfzoo.inference.reference_path as rp

    seen = {}
    real = bs.mode_basins

    def spy(A, chain_of, start_mode, refs, cut):
        seen["chain"], seen["mode"] = np.asarray(chain_of), np.asarray(start_mode)
        return real(A, chain_of, start_mode, refs, cut)

    monkeypatch.setattr(bs, "mode_basins", spy)  # what fit_basins calls
    rng = np.random.default_rng(0)
    refs = rng.gamma(1.0, 1.0, (2, 6, 2))
    fits = [(None, refs[k] * rng.gamma(50.0, 0.02, (40, 6, 2)), np.repeat(np.arange(4), 10),
             np.zeros(40)) for k in range(2)]  # 4 chains each: 2 fit chains and 2 more
    rp.fit_chains_and_basins(None, None, refs, None, rng, 15.0, 2, 10, 1, 0, fits=fits)
    ids = [set(seen["chain"][seen["mode"] == k].tolist()) for k in range(2)]
    assert len(ids[0]) == len(ids[1]) == 4 and not ids[0] & ids[1]


def test_the_hmc_fit_draws_take_at_most_their_share_of_the_budget():
    """With a budget, :func:`~bnmfzoo.inference.large_route.hmc_fit_draws` gets at most
    ``HMC_FIT_SHARE`` of the CPU left, priced at the copula move's cost (``2.2 move_cost``):
    with ``move_cost = 0.02`` and about 300 s left, about ``0.2 * 300 / (4 * 0.044) = 340``
    moves per chain, not ``HMC_FIT_MOVES``; without a budget, ``HMC_FIT_MOVES``."""
    from bnmfzoo.inference.large_route import HMC_FIT_SHARE

    out = _rank1_run(pt_scans=60, copula=True, pt_trips=12, budget_s=300.0, move_cost=0.02)
    per_chain = out["hmc_fit_draws"][0] / 4
    assert per_chain == int(per_chain)
    assert 0.8 * HMC_FIT_SHARE * 290 / 0.176 < per_chain <= HMC_FIT_SHARE * 300 / 0.176


def test_copies_the_full_fit_chains_show_are_merged_before_the_hmc_fit_draws(monkeypatch):
    """Two restart groups of one mode that the short chains did not merge (here the early
    check is skipped) are merged by the full fit chains' basin rule before
    :func:`~bnmfzoo.inference.large_route.hmc_fit_draws` runs: its HMC runs for the mode kept
    only (on ESCC SBS96 at K = 4, seed 1, a copy's HMC cost 124 of 900 CPU s)."""
    import bnmfzoo.inference.large_route as lr
    import bnmfzoo.inference.reference_path as rp

    real, hmc_modes = lr.restart_modes, []

    def twice(*args, **kw):  # every restart's mode reported as two groups
        refs, states, label, counts, cpu = real(*args, **kw)
        label = np.arange(len(states)) % 2
        return np.concatenate([refs, refs]), states, label, np.bincount(label), cpu

    def hmc_spy(family, fitted, rng, n_moves):
        hmc_modes.append(len(fitted[0]))
        t = time.process_time()
        try:
            return hmc(family, fitted, rng, n_moves)
        finally:
            cpu.append(time.process_time() - t)

    def fit_spy(*args, fits=None, **kw):  # the full fit chains' CPU (not the basin rule's)
        out = fit(*args, fits=fits, **kw)
        if fits is None and kw.get("trim"):
            cpu.append(out[3])
        return out

    hmc, fit, cpu = lr.hmc_fit_draws, rp.fit_chains_and_basins, []
    monkeypatch.setattr(rp, "fit_chains_and_basins", fit_spy)
    monkeypatch.setattr(lr, "restart_modes", twice)
    monkeypatch.setattr(lr, "early_copies", lambda fam, refs, starts, counts, *a, **k: (
        refs, starts, counts, {}))
    monkeypatch.setattr(lr, "hmc_fit_draws", hmc_spy)
    out = _rank1_run(n_starts=4, pt_scans=60, copula=True, pt_trips=12)
    assert hmc_modes == [1] and len(out["modes"]) == 1 and out["merged_early"] == {}
    assert out["hmc_fit_draws"] == [4 * HMC_FIT_MOVES]
    # the SMC's fit CPU carries the full fit chains' through the merge, and the HMC draws'
    assert len(cpu) == 2 and out["smc"]["fit_cpu_s"] >= sum(cpu)
