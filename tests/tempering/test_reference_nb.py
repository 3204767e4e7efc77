"""The reference path of negative-binomial models (``counts.tempering._reference_nb``).

The path ``q^(1 - b) p0^b prod f_b`` (``f_b`` the Gamma-mixed power of
``counts.tempering._power_nb``) is read through ``log_target`` by the SMC and the tempering
(swaps and a stepping stone of increments, ``reference_tempering.stepping_stone_path``). Checked:
each rung's sweep keeps its target (against importance sampling from the rung's exact product
of Gammas), and both per-mode estimators' log Z against quadrature on one cell (x = 6, learned
dispersion; ``tests/_quadrature.py``).

Tolerances: 4.5 joint standard errors per statistic (rung test; 13 statistics), 4 standard
errors of the mean of 8 runs (log Z; ``P(|t_7| > 4) = 0.5 %`` nominal). False failures
measured once (30 Nov 2026, ``/tmp`` loops over this file's functions): in the docstrings.
"""

import math

import numpy as np
import pytest
from _counts_cases import batch_mcse, cells_and_balance, importance_mean
from _quadrature import NB_CELL_LOG_Z
from scipy.special import gammaln

import bnmfzoo as bz
from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
from bnmfzoo.inference.reference_path import (
    ReferenceDataPath,
    ReferencePath,
    reference_adapter,
    reference_log_z,
)
from bnmfzoo.inference.reference_tempering import reference_pt_log_z, stepping_stone_path
from bnmfzoo.inference.smc_masses import family_of_model

X = np.array([[3, 1, 0], [0, 2, 4]])
ROW, COL = np.array([1.0, 2.5]), np.array([1.0, 0.5, 2.0])
MASK = np.array([[True, True, True], [False, True, True]])
A0, B0, ALPHA_PRIOR = 2.0, 1.0, (3.0, 1.0)
#: a reference far from the prior (shapes and rates of every entry; the dispersion's)
QA, QB, QALPHA = 5.0, 2.0, (8.0, 2.0)


def _family():
    return family_of_model(bz.models.negative_binomial(
        X, 2, a=A0, b=B0, alpha_prior=ALPHA_PRIOR, row_offset=ROW, col_offset=COL, mask=MASK))


def _q():
    return {"aA": np.full((2, 2), QA), "bA": np.full((2, 2), QB), "aW": np.full((2, 3), QA),
            "bW": np.full((2, 3), QB), "alpha": QALPHA}


def _log_f(x, r, alpha, b):
    return (gammaln(r + b * x) - gammaln(r) + r * np.log(alpha) - (r + b * x)
            * np.log(alpha + b) - b * gammaln(x + 1.0))


def _rung_reference(b, S, rng):
    """Importance sampling of the rung ``q^(1 - b) p0^b prod f_b`` from its product of Gammas
    (exact draws), weights ``prod f_b``: means and standard errors of the features."""
    sh, rt = b * A0 + (1 - b) * QA, b * B0 + (1 - b) * QB
    ash = b * ALPHA_PRIOR[0] + (1 - b) * QALPHA[0]
    art = b * ALPHA_PRIOR[1] + (1 - b) * QALPHA[1]
    o = ROW[:, None] * COL[None, :]
    logw, feats = [], []
    for _ in range(S // 200_000):
        A = rng.gamma(sh, 1.0 / rt, (200_000, 2, 2))
        W = rng.gamma(sh, 1.0 / rt, (200_000, 2, 3))
        al = rng.gamma(ash, 1.0 / art, 200_000)
        r = al[:, None, None] * o * (A @ W)
        logw.append(np.where(MASK, _log_f(X, r, al[:, None, None], b), 0.0).sum(axis=(1, 2)))
        feats.append(np.concatenate([cells_and_balance(A, W), np.log(al)[:, None]], axis=1))
    return importance_mean(np.concatenate(logw), np.concatenate(feats))


def _rung_z(seed, b=0.3, local="sweep", n=20_500):
    rng = np.random.default_rng(seed)
    fam = _family()
    path = ReferencePath(reference_adapter(fam, local, 10), _q())
    s = path.draw(rng)
    ref, se_ref = _rung_reference(b, 1_000_000, rng)
    draws = []
    for t in range(n):
        if t == 500:
            path.adapter.freeze()  # HMC's step size fixed: one exact kernel from here
        path.sweep(s, b, rng)
        if t >= 500:
            draws.append(np.concatenate([cells_and_balance(s["A"], s["W"]),
                                         [math.log(s["alpha"])]]))
    draws = np.array(draws)
    return (draws.mean(0) - ref) / np.sqrt(batch_mcse(draws, 40) ** 2 + se_ref ** 2)


def test_a_rung_of_the_nb_reference_path_keeps_its_target():
    """At ``b = 0.3``, with a reference far from the prior (Gamma(5, 2) entries, dispersion
    Gamma(8, 2) against the prior's Gamma(2, 1) and Gamma(3, 1)), offsets and a missing cell:
    the sweep's means of the cells of ``A @ W``, their balance and ``log alpha`` match
    importance sampling of the rung within 4.5 joint standard errors each (20,000 sweeps,
    batch means over 40 batches; 1,000,000 weighted draws). A sweep that mixed the reference
    and the prior with swapped weights, or the dispersion's prior with the reference's, keeps
    another target. Measured over seeds 0-19 (30 Nov 2026): 0 of 20 fail, per-seed max |z|
    median 1.79, largest 2.47. About 8 CPU s.
    """
    z = _rung_z(0)
    assert np.all(np.abs(z) <= 4.5), z


def test_the_nb_reference_path_reads_its_data_term():
    """``ReferencePath`` of the NB adapter is a :class:`ReferenceDataPath`: its ``log_target``
    is 0 at ``b = 0`` and ``l' = log p0 + log L - log q`` at 1, ``b (log p0 - log q) + log
    f_b`` between, the batch form equals it; the geometric families keep ``ReferencePath``."""
    fam = _family()
    ad = reference_adapter(fam)
    q = _q()
    path = ReferencePath(ad, q)
    assert isinstance(path, ReferenceDataPath)
    rng = np.random.default_rng(1)
    states = [path.draw(rng) for _ in range(3)]
    for s in states:
        path.sweep(s, 0.5, rng)
    s = states[0]
    assert path.log_target(s, 0.0) == 0.0
    assert path.log_target(s, 1.0) == pytest.approx(path.loglik(s))
    assert path.loglik(s) == pytest.approx(ad.log_p0(s) + ad.loglik(s) - ad.log_q(q, s))
    o = ROW[:, None] * COL[None, :]
    r = s["alpha"] * o * (s["A"] @ s["W"])
    f = np.where(MASK, _log_f(X, r, s["alpha"], 0.4), 0.0).sum()
    assert path.log_target(s, 0.4) == pytest.approx(0.4 * (ad.log_p0(s) - ad.log_q(q, s)) + f)
    at = path.log_target_batch(states)
    for b in (0.0, 0.2, 0.9, 1.0):
        assert np.allclose(at(b), [path.log_target(t, b) for t in states])
    poisson = family_of_model(bz.models.poisson(X, 2))
    pa = reference_adapter(poisson)
    assert type(ReferencePath(pa, pa.fit(np.ones((4, 10)) + np.arange(4)[:, None], 2.0))) \
        is ReferencePath


def _cell_mode(seed, which):
    fam = family_of_model(bz.models.negative_binomial(np.array([[6]]), 1, a=2.0, b=1.0,
                                                      alpha_prior=(4.0, 1.0)))
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(20):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    if which == "smc":
        return reference_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=8, n_particles=100,
                               n_moves=2, n_draws=100)
    return reference_pt_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=8, n_scans=100,
                              n_tune_rounds=2, n_draws=100)


def test_nb_reference_path_smc_log_z_matches_quadrature():
    """The reference-path SMC on one NB cell: ``|mean - exact| <= 4 se`` of 8 runs x 100
    particles. Measured over seeds 100-139 (30 Nov 2026): 1 of 40 beyond 4 se (4.03), mean z
    -0.27, sd 1.12. About 2 CPU s."""
    out = _cell_mode(0, "smc")
    z = (out["log_z"][0] - NB_CELL_LOG_Z) / out["log_z_se"][0]
    assert abs(z) <= 4.0, (out["log_z"], NB_CELL_LOG_Z)


def test_nb_reference_tempering_log_z_matches_quadrature():
    """Parallel tempering along the NB reference path on one cell (swaps and the stepping stone
    read ``log_target``): ``|mean - exact| <= 4 se`` of 8 runs x 100 kept scans, and round trips
    in every run. Measured over seeds 100-139 (30 Nov 2026), from the default reference only: 0
    of 40 beyond 4 se, largest |z| 3.54, mean z 0.14, sd 1.34, 17-28 trips per run; with the
    NB adapter's narrower marginal fit piloted too (used in 32 of 40): 0 of 40, largest |z|
    3.26, mean z -0.23, sd 1.16, at least 15 trips per run (narrower ridge-free fits, not
    tried by the route: 3 of 40 beyond, up to 55 se, with no round trip). About 4 CPU s."""
    out = _cell_mode(0, "pt")
    z = (out["log_z"][0] - NB_CELL_LOG_Z) / out["log_z_se"][0]
    assert abs(z) <= 4.0, (out["log_z"], NB_CELL_LOG_Z)
    assert np.all(out["round_trips"][0] >= 3), out["round_trips"]


def test_stepping_stone_of_increments_is_the_geometric_one_on_a_geometric_path():
    """``stepping_stone_path`` of ``(b' - b) l'`` is :func:`stepping_stone` of ``l'``."""
    from bnmfzoo.inference.reference_tempering import stepping_stone

    rng = np.random.default_rng(0)
    betas = np.array([1.0, 0.6, 0.25, 0.0])
    ll = rng.normal(-3.0, 1.0, (50, 4))
    inc = np.stack([(betas[i - 1] - betas[i]) * ll[:, i] for i in range(1, 4)], axis=1)
    a, ta = stepping_stone(betas, ll)
    b, tb = stepping_stone_path(inc)
    assert a == pytest.approx(b) and np.allclose(ta, tb[::-1])
    with pytest.raises(ValueError, match="finite"):
        stepping_stone_path([[0.0, np.nan]])


def test_the_tempering_swaps_a_path_by_its_log_target(monkeypatch):
    """Every swap of a path that is not geometric is decided by the path's ``log_target``
    (each state's values computed once per scan, equal to the path's own), a geometric path's
    by ``(b' - b) l'`` (no ``log_target``). A swap read as geometric on the NB path moved the
    log Z of a 2 x 3 problem by 2.6 se of 8 runs only (a ``/tmp`` run), so the plumbing is
    checked directly, and ``swap_pass``'s ratio for a ``log_target`` on two states.
    Deterministic."""
    import bnmfzoo.inference.reference_tempering as rt

    orig = rt.swap_pass
    val = {"a": -1.0, "b": -3.0}
    prob, _ = orig(["a", "b"], np.array([1.0, 0.5]), [0.0, 0.0], np.random.default_rng(0), 0,
                   lambda s, b: val[s] * b ** 2)
    assert prob[0] == pytest.approx(math.exp(-3.0 - 0.25 + 1.0 + 0.75))
    seen = []

    def spy(states, betas, ll, rng, parity, log_target=None):
        if log_target is not None:
            s = states[1]
            seen.append((log_target(s, betas[1]), rt._targets.path.log_target(s, betas[1])))
        else:
            seen.append(None)
        return orig(states, betas, ll, rng, parity, log_target)

    make = rt._targets

    def targets(rungs):
        out = make(rungs)
        targets.path = rungs.path(1.0)
        return out

    monkeypatch.setattr(rt, "swap_pass", spy)
    monkeypatch.setattr(rt, "_targets", targets)
    fam = _family()
    betas = np.array([1.0, 0.5, 0.2, 0.0])
    rt.reference_pt(lambda: reference_adapter(fam), _q(), np.random.default_rng(0), betas,
                    n_scans=20, n_tune_rounds=1, first_round=4, grow=False)
    assert seen and all(v is not None and v[0] == pytest.approx(v[1]) for v in seen)
    seen.clear()
    poisson = family_of_model(bz.models.poisson(X, 2))
    pa = reference_adapter(poisson)
    q = pa.fit(np.stack([pa.draws(poisson.draw_prior(np.random.default_rng(i)), np.arange(2))
                         for i in range(20)]), 2.0)
    rt.reference_pt(lambda: reference_adapter(poisson), q, np.random.default_rng(0), betas,
                    n_scans=20, n_tune_rounds=1, first_round=4, grow=False)
    assert seen and all(v is None for v in seen)


def test_the_nb_rungs_hmc_density_and_gradient_are_the_paths():
    """``nb_log_density_grad`` is ``log q^(1 - b) p0^b + log prod f_b`` on ``log A, log W``
    (the closed form of this file, Jacobian included) and its gradient matches central
    differences; the numba digamma matches scipy's. Deterministic."""
    from scipy.special import digamma as sp_digamma

    from bnmfzoo.inference.counts.tempering._hmc_nb import digamma, nb_log_density_grad

    xs = np.logspace(-6, 4, 200)
    assert max(abs(digamma(v) - sp_digamma(v)) / max(1.0, abs(sp_digamma(v))) for v in xs) < 1e-11
    rng = np.random.default_rng(0)
    D, N, K = 4, 3, 2
    tA, tWt = rng.normal(size=(D, K)), rng.normal(size=(N, K))
    rows, cols = np.repeat(np.arange(D), N), np.tile(np.arange(N), D)
    offs, x = rng.uniform(0.5, 2.0, D * N), rng.poisson(3.0, D * N).astype(float)
    aA, rA = rng.uniform(1, 3, (D, K)), rng.uniform(0.5, 2, (D, K))
    aWt, rWt = rng.uniform(1, 3, (N, K)), rng.uniform(0.5, 2, (N, K))
    b, alpha = 0.37, 1.7

    def f(tA, tWt):
        r = alpha * offs * (np.exp(tA) @ np.exp(tWt).T)[rows, cols]
        return (np.sum(aA * tA - rA * np.exp(tA)) + np.sum(aWt * tWt - rWt * np.exp(tWt))
                + np.sum(_log_f(x, r, alpha, b)))

    gA, gWt = np.empty_like(tA), np.empty_like(tWt)
    lp = nb_log_density_grad(tA, tWt, rows, cols, offs, x, aA, rA, aWt, rWt, b, alpha, gA, gWt)
    assert lp == pytest.approx(f(tA, tWt), rel=1e-12)
    h = 1e-6
    for t, g, which in ((tA, gA, 0), (tWt, gWt, 1)):
        for idx in np.ndindex(t.shape):
            e = np.zeros_like(t)
            e[idx] = h
            args = [(tA + e, tWt), (tA - e, tWt)] if which == 0 else [(tA, tWt + e), (tA, tWt - e)]
            assert (f(*args[0]) - f(*args[1])) / (2 * h) == pytest.approx(g[idx], abs=1e-6)


def test_a_rung_with_hmc_keeps_its_target():
    """At ``b = 0.8`` (HMC runs at ``b >= 0.7``), the sweep followed by one HMC transition of
    the NB rung (``local="sweep+hmc"``, step size frozen after 500 sweeps) keeps the rung's
    target: the same statistics as :func:`test_a_rung_of_the_nb_reference_path_keeps_its_target`
    within 4.5 joint se. Measured over seeds 0-10 (30 Nov 2026): 0 of 11 fail, per-seed max
    |z| largest 3.67, median 1.81. About 9 CPU s."""
    z = _rung_z(0, 0.8, "sweep+hmc")
    assert np.all(np.abs(z) <= 4.5), z


def test_the_nb_tempering_starts_from_the_narrower_reference_when_its_path_is_shorter(
        monkeypatch):
    """The NB adapter names a narrower widening (0.7) of the marginal fit for the tempering:
    it is piloted beside the default's two references (widening 2) and the run starts from
    the lowest barrier's. On this 10 x 8 rank-2 matrix its pilot barrier is 3.8 against 5.6
    (marginal) and 6.6 (ridge-free) at 2, so it is used and the ladder is shorter; without
    narrower widenings the route is the default's. Deterministic (fixed seeds). About 5 CPU
    s."""
    from bnmfzoo.inference.counts.tempering._reference_nb import NBReferenceAdapter
    from bnmfzoo.inference.reference_path import WIDEN

    rng = np.random.default_rng(3)
    mean = rng.gamma(4.0, 1.0, (10, 2)) @ rng.gamma(4.0, 1.0, (2, 8)) * 3
    Xm = rng.negative_binomial(5, 5 / (5 + mean))
    fam = family_of_model(bz.models.negative_binomial(Xm, 2, alpha_prior=(2.0, 0.5)))
    s = fam.draw_prior(rng)
    for _ in range(100):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    kw = dict(cut=180.0, n_runs=2, n_scans=30, n_tune_rounds=1, n_draws=60)
    assert NBReferenceAdapter.tempering_widen == (0.7,)
    narrow = reference_pt_log_z(fam, ref, [[s]], np.random.default_rng(2), **kw)
    monkeypatch.setattr(NBReferenceAdapter, "tempering_widen", ())
    wide = reference_pt_log_z(fam, ref, [[s]], np.random.default_rng(2), **kw)
    fit, lam_m, lam_r, widen, lam = narrow["reference_fit"][0]
    assert (fit, widen) == ("marginal", 0.7) and lam < 0.8 * min(lam_m, lam_r), \
        narrow["reference_fit"]
    assert wide["reference_fit"][0][1:3] == (lam_m, lam_r)  # same draws up to the pilots
    assert wide["reference_fit"][0][3:] == (WIDEN, min(lam_m, lam_r))
    assert np.all(narrow["n_rungs"] < wide["n_rungs"])
