"""HMC on ``log A, log W`` of Poisson NMF (``GibbsPoisson(moves="hmc")``): exactness of the
transition, energy conservation of the leapfrog, SBC of the frozen kernel, tuning frozen after
PyMC's tuning, same seed same draws, argument and non-finite guards."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import bnmfzoo as bz
from bnmfzoo.inference.counts.gibbs._hmc_mass import exposure_basis
from bnmfzoo.inference.counts.gibbs._hmc_moves import (
    NO_DIRS,
    NO_LAM,
    HmcAdapter,
    hmc_cells,
    hmc_trajectory,
    hmc_transition,
    leaps_from_times,
    slow_direction,
)

D, N, K = 3, 4, 2
SHAPE, RATE = 2.0, 1.0
OFFS = np.array([0.5, 1.0, 2.0])  # row offsets: they enter the density and the gradient


def _cells():
    rows, cols = (a.ravel().astype(np.int64) for a in np.indices((D, N)))
    return rows, cols, OFFS[rows].astype(float)


def _data(x, form):
    """The kernel's data arguments: the cells, and their dense form when ``form == "dense"``."""
    rows, cols, offs = _cells()
    Xd, Od = np.zeros((0, 0)), np.zeros((0, 0))
    if form == "dense":
        Xd, Od = x.reshape(D, N).copy(), offs.reshape(D, N).copy()
    return rows, cols, offs, x, Xd, Od


def _prior():
    return (np.full((D, K), SHAPE), np.full((D, K), RATE), np.full((N, K), SHAPE),
            np.full((N, K), RATE))


def _lowrank_dirs():
    """A fixed low-rank correction of the mass (``UA, UWt, lam``, :func:`hmc_trajectory`): the
    first component's total exposure widened 2.5x in variance, the second's scale narrowed to
    0.4 (whitened)."""
    f = exposure_basis(np.zeros((1, D * K + N * K)), D, N, K)
    U = np.linalg.qr(np.array([f[0] + f[K], f[1] - f[K + 1]]).T)[0].T
    return (np.ascontiguousarray(U[:, :D * K]), np.ascontiguousarray(U[:, D * K:]),
            np.array([2.5, 0.4]))


def _moved_prior_draws(seed, M=2000, n_moves=3, eps=0.3, n_leap=8, form="cells", lowrank=False):
    """Prior draws of ``(A, W)``, counts given them, ``n_moves`` transitions of each with a
    fixed kernel: returns the moved ``(A, W)`` and the acceptance rate. ``lowrank``: the mass
    with the correction :func:`_lowrank_dirs`."""
    rng = np.random.default_rng(seed)
    rows, cols, offs = _cells()
    prior = _prior()
    imA, imWt = np.full((D, K), 0.25), np.full((N, K), 0.25)
    outA, outW, acc = np.empty((M, D, K)), np.empty((M, K, N)), 0
    dirs = _lowrank_dirs()
    for m in range(M):
        A = rng.gamma(SHAPE, 1 / RATE, size=(D, K))
        W = rng.gamma(SHAPE, 1 / RATE, size=(K, N))
        x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
        tA, tWt = np.log(A), np.ascontiguousarray(np.log(W).T)
        gA, gWt = np.empty_like(tA), np.empty_like(tWt)
        for _ in range(n_moves):
            if lowrank:
                code, _, _ = hmc_trajectory(tA, tWt, rng.standard_normal((D, K)),
                                            rng.standard_normal((N, K)), *_data(x, form),
                                            *prior, imA, imWt, eps * rng.uniform(0.8, 1.2),
                                            n_leap, math.log(rng.uniform()), gA, gWt, False,
                                            gA[:0], gWt[:0], *dirs)
            else:
                code, _ = hmc_transition(tA, tWt, rng.standard_normal((D, K)),
                                         rng.standard_normal((N, K)), *_data(x, form), *prior,
                                         imA, imWt, eps * rng.uniform(0.8, 1.2), n_leap,
                                         math.log(rng.uniform()), gA, gWt)
            assert code in (0, 1)
            acc += code == 0
        outA[m], outW[m] = np.exp(tA), np.exp(tWt).T
    return outA, outW, acc / (M * n_moves)


def _prior_pvalues(seed, form="cells", lowrank=False):
    A, W, acc = _moved_prior_draws(seed, form=form, lowrank=lowrank)
    ref = np.random.default_rng(10_000 + seed)
    rA = ref.gamma(SHAPE, 1 / RATE, size=(200_000, K))
    rW = ref.gamma(SHAPE, 1 / RATE, size=(200_000, K))
    cell = A[:, 0, :] * W[:, :, 0]  # the two components of cell (0, 0)
    rcell = rA * rW
    gam = stats.gamma(SHAPE, scale=1 / RATE).cdf
    p = [stats.kstest(A[:, 0, 0], gam).pvalue, stats.kstest(W[:, 1, 2], gam).pvalue,
         stats.ks_2samp(cell.sum(1), rcell.sum(1)).pvalue,
         stats.ks_2samp(cell[:, 0] / cell.sum(1), rcell[:, 0] / rcell.sum(1)).pvalue]
    return np.array(p), acc


@pytest.mark.parametrize("form", ["cells", "dense"])
def test_hmc_transition_keeps_the_prior(form):
    """Prior draws, counts from them (row offsets 0.5, 1, 2), three fixed-kernel transitions:
    the moved draws must still follow the prior (the transition leaves each posterior
    invariant). 2,000 draws, 3 x 4, K = 2, Gamma(2, 1) priors (about 8 counts per cell: the
    posterior is far from the prior, so a wrong target moves the draws off it). KS of two
    entries against Gamma(2, 1) and two-sample KS (against 200,000 prior draws) of the cell
    ``(A @ W)[0, 0]`` and of its first component's share; Bonferroni level 0.001 each
    (false-failure rate at most 0.4%; 1/160 over seeds 0-39 and 100-219, 29 Nov 2026, the dense
    form failing on the same seed 22 as it gives the same draws up to rounding; and
    each statistic's p-values uniform over seeds 100-219: KS p 0.16-0.76; with the fused dense
    gradient, again 1/160 on the same seeds, seed 22, KS p of each statistic's p-values
    0.08-0.84). The transitions
    must move: acceptance > 0.6 (a kernel that never moves would pass the KS trivially). Both
    forms of the likelihood: the loop over cells and the dense matrix products.
    """
    p, acc = _prior_pvalues(7, form)
    assert acc > 0.6, acc
    assert p.min() > 0.001, p


@pytest.mark.parametrize("form", ["cells", "dense"])
def test_hmc_transition_with_a_lowrank_mass_keeps_the_prior(form):
    """:func:`test_hmc_transition_keeps_the_prior` with a mass that is not diagonal (a fixed
    low-rank correction along a component's total exposure and another's scale,
    :func:`_lowrank_dirs`; :mod:`~bnmfzoo.inference.counts.gibbs._hmc_mass`): same draws, statistics
    and Bonferroni level 0.001 each (false-failure rate at most 0.4%; measured 0/120 over seeds
    0-119, cells form, 29 Nov 2026, each statistic's p-values uniform, KS p 0.06-0.35;
    acceptance 0.67-0.70 on those seeds).
    A momentum, velocity or kinetic energy inconsistent with that mass moves the draws off
    the prior. Acceptance > 0.6: the transitions must move."""
    p, acc = _prior_pvalues(7, form, lowrank=True)
    assert acc > 0.6, acc
    assert p.min() > 0.001, p


def _energy_error(eps, seed=3, form="cells"):
    rng = np.random.default_rng(seed)
    rows, cols, offs = _cells()
    A = rng.gamma(SHAPE, 1.0, size=(D, K))
    W = rng.gamma(SHAPE, 1.0, size=(K, N))
    x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
    zA, zW = rng.standard_normal((D, K)), rng.standard_normal((N, K))
    tA, tWt = np.log(A), np.ascontiguousarray(np.log(W).T)
    im = (np.full((D, K), 0.3), np.full((N, K), 0.3))
    _, la = hmc_transition(tA, tWt, zA.copy(), zW.copy(), *_data(x, form), *_prior(),
                           *im, eps, int(round(0.2 / eps)), 0.0, np.empty((D, K)),
                           np.empty((N, K)))
    return -la  # log_u = 0: rejected unless the energy fell; -log_acc = max(dH, 0)


@pytest.mark.parametrize("form", ["cells", "dense"])
def test_leapfrog_energy_error_is_second_order(form):
    """Same trajectory length 0.2, step 0.02 then 0.01: the leapfrog's energy error falls
    4x (second order) when the gradient is the density's; a gradient that misses a term
    (an offset, a Jacobian) leaves a first-order error (ratio about 2). Deterministic."""
    errs = []
    for seed in range(3, 9):  # |dH| from above: a trajectory whose energy rose
        e1, e2 = _energy_error(0.02, seed, form), _energy_error(0.01, seed, form)
        if e1 > 0 and e2 > 0:
            errs.append(e1 / e2)
    assert len(errs) >= 2, errs
    assert all(3.0 < r < 5.5 for r in errs), errs


@pytest.mark.parametrize("dense", [False, True])
def test_sbc_hmc_kernel(dense):
    """SBC (100 simulations, ESS-thinned; ``tests/_counts_cases.py``) of the HMC kernel with
    the mass of the chain's start and a fixed step (what ``GibbsPoisson(moves="hmc")`` runs
    after tuning) on the 3 x 4, K = 2 case with a missing cell, row offsets and sparse input.
    Bonferroni level 0.01 over the 12 cells of ``A @ W`` (about 1% false failures; 0/10 over
    seeds 2-11 for the cells' form, 29 Nov 2026). Both forms of the likelihood."""
    from _counts_cases import run_case

    held = {}

    def move(problem, state, rng):
        A = np.ascontiguousarray(state["A"], float)
        Wt = np.ascontiguousarray(np.asarray(state["W"], float).T)
        if held.get("problem") is not problem:
            from bnmfzoo.inference.counts.gibbs._moves import problem_arrays

            arrs = problem_arrays(problem)
            hmc = HmcAdapter(hmc_cells(problem, dense), tuple(
                np.ascontiguousarray(arrs[k], float) for k in ("aA", "bA", "aWt", "bW")), 8)
            hmc.start(A, Wt)
            hmc.state["log_eps"] = math.log(0.25)
            held.update(problem=problem, hmc=hmc)
        A, Wt = held["hmc"].transition(A, Wt, rng, tune=False)
        return dict(state, A=A, W=np.ascontiguousarray(Wt.T))

    result = run_case("poisson-missing-offsets", 2, sweep=move)
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


def _sample(seed, draws=30, tune=60, n_leap=8, **kw):
    X = np.random.default_rng(2).poisson(4.0, size=(6, 5))
    with bz.models.poisson(X, 2):
        step = bz.inference.GibbsPoisson(moves="hmc", n_leap=n_leap, **kw)
        dt = pm.sample(draws=draws, tune=tune, chains=1, step=step, random_seed=seed,
                       progressbar=False, compute_convergence_checks=False)
    return dt, step


@pytest.mark.parametrize("n_leap", [8, None])
def test_tuning_frozen_and_same_seed_same_draws(n_leap):
    """After PyMC's tuning the step size, mass and learned lengths no longer change (the kept
    draws come from one fixed exact kernel); the same seed gives the same draws, another seed
    others. A fixed ``n_leap`` and learned lengths (``None``, the default)."""
    dt, step = _sample(1, n_leap=n_leap)
    s = step.hmc_state
    eps, imA = s["log_eps"], s["imA"].copy()
    leaps = None if s["leaps"] is None else s["leaps"].copy()
    assert (leaps is None) == (n_leap is not None)
    assert s["n_tuned"] == 60 and s["n_try"] == 30  # 60 tuning transitions, 30 kept
    X = np.random.default_rng(2).poisson(4.0, size=(6, 5))
    with bz.models.poisson(X, 2):
        point = {"A_log__": np.zeros((6, 2)), "W_log__": np.zeros((2, 5))}
        for _ in range(5):
            point, _ = step.step(point)
    assert step.hmc_state["log_eps"] == eps and np.array_equal(step.hmc_state["imA"], imA)
    if leaps is not None:
        assert np.array_equal(step.hmc_state["leaps"], leaps) and not s["times"]
    assert 0.5 < s["acc_sum"] / s["n_try"] <= 1.0
    again, _ = _sample(1, n_leap=n_leap)
    other, _ = _sample(2, n_leap=n_leap)
    a = dt.posterior["A"].values
    assert np.array_equal(a, again.posterior["A"].values)
    assert not np.array_equal(a, other.posterior["A"].values)
    assert np.unique(a[0, :, 0, 0]).size > 10  # it moves


def test_snapshot_restores_the_tuning_and_continues_exactly():
    """``step.sampling_state`` holds the HMC tuning state: restored mid-tuning, the step
    continues with the same draws (generator, step size, mass windows all restored)."""
    X = np.random.default_rng(2).poisson(4.0, size=(6, 5))
    with bz.models.poisson(X, 2):
        step = bz.inference.GibbsPoisson(moves="hmc", n_leap=8, rng=3)
        point = {"A_log__": np.zeros((6, 2)), "W_log__": np.zeros((2, 5))}
        for _ in range(60):  # past the first mass window (50 tuning transitions)
            point, _ = step.step(point)
        snap = step.sampling_state
        runs = []
        for _ in range(2):
            step.sampling_state = snap
            p = dict(point)
            for _ in range(5):
                p, _ = step.step(p)
            runs.append(p["A_log__"])
    assert snap.hmc_state["n_tuned"] == 60 and snap.hmc_state["window_end"] == 150
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], point["A_log__"])


def test_hmc_arguments_and_guards():
    """One clear error per bad argument; non-finite input: code 2 from the kernel, a
    ``FloatingPointError`` from the step."""
    X = np.random.default_rng(2).poisson(4.0, size=(6, 5))
    with bz.models.poisson(X, 2):
        with pytest.raises(ValueError, match="moves"):
            bz.inference.GibbsPoisson(moves="nuts")
        with pytest.raises(ValueError, match="n_leap"):
            bz.inference.GibbsPoisson(moves="hmc", n_leap=0)
        with pytest.raises(ValueError, match="max_leap"):
            bz.inference.GibbsPoisson(moves="hmc", max_leap=2.5)
        with pytest.raises(ValueError, match="marginal"):
            bz.inference.GibbsPoisson(moves="hmc", marginal=True)
        step = bz.inference.GibbsPoisson(moves="hmc")
        # the shear: on for the sweep, off for the HMC moves unless asked for (HMC_SHEAR)
        assert bz.inference.GibbsPoisson().shear and not step._hmc.shear
        assert bz.inference.GibbsPoisson(moves="hmc", shear=True)._hmc.shear
        with pytest.raises(FloatingPointError, match="finite"):
            step.step({"A_log__": np.full((6, 2), np.nan), "W_log__": np.zeros((2, 5))})
    with bz.models.poisson(X, 2, ard=True):
        with pytest.raises(ValueError, match="rate variables"):
            bz.inference.GibbsPoisson(moves="hmc")
    with bz.models.negative_binomial(X, 2):
        with pytest.raises(ValueError, match="Poisson"):
            bz.inference.GibbsPoisson(moves="hmc")
    rows, cols, offs = _cells()
    x = np.ones(rows.size)
    good = {"tA": np.zeros((D, K)), "tWt": np.zeros((N, K)), "imA": np.ones((D, K)),
            "imWt": np.ones((N, K))}
    for bad, val in (("tA", np.nan), ("tWt", np.inf), ("imA", np.nan), ("imWt", 0.0)):
        arr = {k: v.copy() for k, v in good.items()}
        arr[bad][0, 0] = val
        code, _ = hmc_transition(arr["tA"], arr["tWt"], np.zeros((D, K)), np.zeros((N, K)),
                                 *_data(x, "cells"), *_prior(), arr["imA"], arr["imWt"], 0.1,
                                 3, -1.0, np.empty((D, K)), np.empty((N, K)))
        assert code == 2, bad
    code, _ = hmc_transition(good["tA"], good["tWt"], np.zeros((D, K)), np.zeros((N, K)),
                             *_data(x, "dense"), *_prior(), good["imA"], good["imWt"],
                             math.nan, 3, -1.0, np.empty((D, K)), np.empty((N, K)))
    assert code == 2


@pytest.mark.slow
@pytest.mark.parametrize(("n_leap", "shear"), [(16, False), (None, False), (None, True)])
def test_hmc_moves_agree_with_nuts(n_leap, shear):
    """``GibbsPoisson(moves="hmc")`` and PyMC's NUTS: posterior means of ``A @ W`` and of
    each cell's attribution concentration ``sum_k (A_dk W_kn / (A W)_dn)^2`` (label- and
    scale-free, and moved by the shear, which leaves ``A @ W`` alone) agree within 4 joint
    MCSE per entry (4 x 3, K = 2, Gamma(2, 1) priors, as the sweep's ``test_agrees_with_nuts``;
    24 entries, a correct pair fails with probability about 24 x 6e-5 < 0.2%). A fixed number
    of steps and learned lengths (the default), and the learned lengths with the shear move
    after each transition (``shear=True``)."""
    import arviz_stats as azs

    from bnmfzoo.inference import pymc_default_steps

    X = np.random.default_rng(4).poisson(3.0, size=(4, 3))
    with bz.models.poisson(X, 2, a=2.0, b=1.0) as model:
        AW = pm.Deterministic("AW", model["A"] @ model["W"])
        parts = model["A"][:, :, None] * model["W"][None, :, :]
        H = pm.Deterministic("H", (parts ** 2).sum(axis=1) / AW ** 2)
        ours = pm.sample(draws=4000, tune=500, chains=2, random_seed=1, progressbar=False,
                         compute_convergence_checks=False,
                         step=bz.inference.GibbsPoisson(moves="hmc", n_leap=n_leap,
                                                        shear=shear))
        with pymc_default_steps():
            nuts = pm.sample(draws=2000, tune=1000, chains=2, random_seed=2, progressbar=False,
                             nuts_sampler="pymc", compute_convergence_checks=False)
    del AW, H
    for name in ("AW", "H"):
        g = ours.posterior[name]
        n = nuts.posterior[name]
        diff = np.abs(g.mean(("chain", "draw")) - n.mean(("chain", "draw"))).values
        se = np.sqrt(azs.mcse(g, method="mean").values ** 2
                     + azs.mcse(n, method="mean").values ** 2)
        assert np.all(diff <= 4 * se), (name, diff, se)


# --- trajectory lengths learned during tuning (the default, ``n_leap=None``) ---------------


def _tuned_adapter(seed, n_tune=200, max_leap=64, mass="diag", shear=False):
    """An :class:`HmcAdapter` with learned lengths, tuned on one data set of the 3 x 4 case
    (``n_tune`` tuning transitions: mass windows end at 50 and 150), then frozen."""
    rng = np.random.default_rng(seed)
    rows, cols, offs = _cells()
    A = rng.gamma(SHAPE, 1 / RATE, size=(D, K))
    W = rng.gamma(SHAPE, 1 / RATE, size=(K, N))
    x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
    hmc = HmcAdapter(_data(x, "cells"), _prior(), None, max_leap=max_leap, mass=mass,
                     shear=shear)
    Wt = np.ascontiguousarray(W.T)
    hmc.start(A, Wt)
    for _ in range(n_tune):
        A, Wt = hmc.transition(A, Wt, rng, tune=True)
    hmc.freeze()
    hmc.last_point = (A, Wt)  # where the tuning chain stopped
    return hmc


def _frozen_prior_pvalues(seed, M=2000, n_moves=3, mass="diag", shear=False):
    """The frozen learned-length kernel applied to prior draws and counts from them (the
    kernel tuned once on another data set: its step size, mass, direction and lengths do not
    depend on the state it moves): KS p-values as :func:`_prior_pvalues`, acceptance, and the
    mean number of leapfrog steps drawn."""
    hmc = _tuned_adapter(1000 + seed, mass=mass, shear=shear)
    rng = np.random.default_rng(seed)
    rows, cols, offs = _cells()
    outA, outW = np.empty((M, D, K)), np.empty((M, K, N))
    for m in range(M):
        A = rng.gamma(SHAPE, 1 / RATE, size=(D, K))
        W = rng.gamma(SHAPE, 1 / RATE, size=(K, N))
        x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
        hmc.cells = _data(x, "cells")
        Wt = np.ascontiguousarray(W.T)
        for _ in range(n_moves):
            A, Wt = hmc.transition(A, Wt, rng, tune=False)
        outA[m], outW[m] = A, Wt.T
    ref = np.random.default_rng(10_000 + seed)
    rA = ref.gamma(SHAPE, 1 / RATE, size=(200_000, K))
    rW = ref.gamma(SHAPE, 1 / RATE, size=(200_000, K))
    cell, rcell = outA[:, 0, :] * outW[:, :, 0], rA * rW
    gam = stats.gamma(SHAPE, scale=1 / RATE).cdf
    p = [stats.kstest(outA[:, 0, 0], gam).pvalue, stats.kstest(outW[:, 1, 2], gam).pvalue,
         stats.ks_2samp(cell.sum(1), rcell.sum(1)).pvalue,
         stats.ks_2samp(cell[:, 0] / cell.sum(1), rcell[:, 0] / rcell.sum(1)).pvalue]
    return np.array(p), hmc.acceptance(), float(np.mean(hmc.state["leaps"])), hmc.state["lam"]


def test_learned_lengths_frozen_kernel_keeps_the_prior():
    """After tuning, the kernel with learned lengths (steps drawn from the tuning's U-turn
    times, independently of the state) keeps each posterior: moved prior draws still follow
    the prior. Same statistics and Bonferroni level 0.001 each as
    :func:`test_hmc_transition_keeps_the_prior` (false-failure rate at most 0.4%; measured
    1/60 over seeds 0-59, 29 Nov 2026, seed 50 at p = 0.00025; each statistic's p-values
    uniform over the 60 seeds, KS p 0.07-0.66; with the rescaling move and the lengths
    stretched to the slow time, the default since, 1/60 again, seed 15 at p = 5e-5, KS p
    0.41-0.97). The lengths' independence of the state is
    checked directly by the next test. Acceptance above 0.6 and
    more than one step on average: the draws must move."""
    p, acc, mean_leaps, _ = _frozen_prior_pvalues(7)
    assert acc > 0.6, acc
    assert mean_leaps > 1.5, mean_leaps
    assert p.min() > 0.001, p


def test_learned_lengths_frozen_kernel_with_the_shear_keeps_the_prior():
    """:func:`test_learned_lengths_frozen_kernel_keeps_the_prior` with ``shear=True``: after
    each transition and its rescaling, the exact shear move of both ordered pairs (tuned with
    it too). Same statistics and Bonferroni level 0.001 each; the first component's share of
    cell ``(0, 0)`` is what a wrong shear conditional moves (``A @ W`` is unchanged by it).
    False-failure count 0/60 over seeds 0-59 (3 Dec 2026; smallest p 0.0027; each statistic's
    p-values uniform, KS p 0.46-0.84; acceptance 0.50-0.96, 0.62 on seed 7). The shear
    must move the share: the kernel's draws differ from those of the same seed without it (the
    main generator's draws are the same with and without the shear: it has a stream of its
    own)."""
    p, acc, mean_leaps, _ = _frozen_prior_pvalues(7, shear=True)
    assert acc > 0.6, acc
    assert mean_leaps > 1.5, mean_leaps
    assert p.min() > 0.001, p
    a = _tuned_adapter(3, n_tune=60, shear=True)
    b = _tuned_adapter(3, n_tune=60, shear=False)
    assert a.shear and not b.shear
    assert not np.allclose(a.last_point[0], b.last_point[0])


def test_learned_lengths_frozen_kernel_with_a_lowrank_mass_keeps_the_prior():
    """:func:`test_learned_lengths_frozen_kernel_keeps_the_prior` with ``mass="krylov"``: the
    tuning fits a low-rank correction of the mass at each window's end (at least one direction
    kept here), frozen with the rest; moved prior draws still follow the prior. Same
    statistics and Bonferroni level 0.001 each (false-failure rate at most 0.4%; measured
    1/120 over seeds 0-119, 29 Nov 2026, seed 26 at p = 1.0e-4; each statistic's p-values
    uniform on seeds 0-59 and 60-119, KS p 0.26-0.97; 2-5 directions kept, acceptance
    0.67-0.97)."""
    p, acc, mean_leaps, lam = _frozen_prior_pvalues(7, mass="krylov")
    assert lam.size >= 1, lam
    assert acc > 0.6, acc
    assert mean_leaps > 1.5, mean_leaps
    assert p.min() > 0.001, p


def _recorded_calls(monkeypatch):
    """Replace the kernel by a recorder of ``(n_leap, stop_uturn)`` around the real one."""
    import bnmfzoo.inference.counts.gibbs._hmc_moves as hm

    calls, real = [], hm.hmc_trajectory

    def record(*args):
        calls.append((int(args[17]), bool(args[21])))
        return real(*args)

    monkeypatch.setattr(hm, "hmc_trajectory", record)
    return calls


def test_learned_lengths_drawn_independently_of_the_state_and_capped(monkeypatch):
    """Kept transitions draw their number of steps from the frozen lengths with the generator
    alone: from two different states the same seed gives the same numbers of steps, none
    stopping at a U-turn; tuning trajectories stop at a U-turn or at ``max_leap``, and every
    learned length lies in ``[1, max_leap]``."""
    hmc = _tuned_adapter(3, max_leap=6)
    leaps = hmc.state["leaps"]
    assert leaps.min() >= 1 and leaps.max() <= 6
    calls = _recorded_calls(monkeypatch)
    runs = []
    for scale in (1.0, 3.0):
        rng = np.random.default_rng(11)
        A, Wt = np.full((D, K), scale), np.full((N, K), 1.0 / scale)
        for _ in range(20):
            A, Wt = hmc.transition(A, Wt, rng, tune=False)
        runs.append(calls[-20:])
    assert runs[0] == runs[1]
    assert all(not uturn and n in set(leaps.tolist()) for n, uturn in runs[0])
    assert len({n for n, _ in runs[0]}) > 1  # drawn, not one fixed length
    rng = np.random.default_rng(12)
    A, Wt = np.ones((D, K)), np.ones((N, K))
    hmc.state["times"] = []
    for _ in range(10):
        A, Wt = hmc.transition(A, Wt, rng, tune=True)
    assert all(n == 6 and uturn for n, uturn in calls[-10:])
    assert np.array_equal(leaps_from_times([0.05, 0.5, 100.0], 0.1, 64), [1, 5, 64])


def test_uturn_along_the_slow_direction_runs_longer():
    """With a direction ``u`` a tuning trajectory stops only once it has turned back both as
    a whole and along ``u``: never earlier than without ``u``, and later on some starts when
    ``u`` is a slow entry (small inverse mass); :func:`slow_direction` finds the direction of
    largest variance of a window's states. Deterministic."""
    rng = np.random.default_rng(5)
    rows, cols, offs = _cells()
    A = rng.gamma(SHAPE, 1.0, size=(D, K))
    W = rng.gamma(SHAPE, 1.0, size=(K, N))
    x = rng.poisson(offs * (A @ W)[rows, cols]).astype(float)
    th = rng.standard_normal((50, D * K + N * K)) * np.r_[5.0, np.ones(D * K + N * K - 1)]
    u = slow_direction(th, np.ones(D * K + N * K))
    assert abs(abs(u[0]) - 1.0) < 0.05  # the wide first entry
    uA, uWt = np.zeros((D, K)), np.zeros((N, K))
    uA[0, 0] = 1.0
    imA = np.full((D, K), 0.3)
    imA[0, 0] = 0.003  # a slow entry: a tenth of the others' frequency
    longer = 0
    for seed in range(10):
        steps = []
        for dirs in ((np.zeros((0, 0)), np.zeros((0, 0))), (uA, uWt)):
            z = np.random.default_rng(seed)
            tA, tWt = np.log(A), np.ascontiguousarray(np.log(W).T)
            _, _, n = hmc_trajectory(tA, tWt, z.standard_normal((D, K)),
                                     z.standard_normal((N, K)), *_data(x, "cells"),
                                     *_prior(), imA, np.full((N, K), 0.3),
                                     0.05, 400, 0.0, np.empty((D, K)), np.empty((N, K)),
                                     True, *dirs, NO_DIRS, NO_DIRS, NO_LAM)
            steps.append(n)
        assert steps[1] >= steps[0], steps
        longer += steps[1] > steps[0]
    assert longer >= 2, longer


def test_step_size_tuned_to_the_target_acceptance():
    """Dual averaging: tuned on one data set of the 3 x 4 case (200 tuning transitions), 200
    kept transitions continuing the chain accept at a rate near the target 0.8: within [0.5,
    0.99] (0.67-0.97 over seeds 0-39, 29 Nov 2026; a step size driven away from the target
    gives 0 or 1 there)."""
    hmc = _tuned_adapter(4)
    rng = np.random.default_rng(4)
    A, Wt = hmc.last_point
    for _ in range(200):
        A, Wt = hmc.transition(A, Wt, rng, tune=False)
    assert 0.5 <= hmc.acceptance() <= 0.99, hmc.acceptance()


def test_default_leap_cap_bounds_a_transition_on_large_matrices():
    """Ctrl-C is seen between transitions: on a matrix so large that 1024 leapfrog steps would
    take seconds, the default cap (shapes only, so draws stay reproducible) is lower; on the
    catalogues it stays 1024, and an explicit max_leap is kept as given."""
    from bnmfzoo.inference.counts.gibbs._hmc_moves import MAX_LEAP, HmcAdapter

    def cells(D, N):
        rows = np.zeros(0, np.int64)
        return (rows, rows, np.zeros(0), np.zeros(0), np.zeros((D, N)), np.zeros((D, N)))

    def prior(D, N, K):
        return (np.ones((D, K)), np.ones((D, K)), np.ones((N, K)), np.ones((N, K)))

    assert HmcAdapter(cells(21, 96), prior(21, 96, 4)).max_leap == MAX_LEAP
    big = HmcAdapter(cells(3000, 1000), prior(3000, 1000, 8))
    assert 8 <= big.max_leap <= 20  # 3e8 work units / (3,004,000 x 8) = 12
    assert HmcAdapter(cells(3000, 1000), prior(3000, 1000, 8), max_leap=500).max_leap == 500


@pytest.mark.parametrize("kw", [{"mass": "krylov"}, {"n_leap": 8}, {"max_leap": 16}])
def test_hmc_options_are_refused_without_hmc_moves(kw):
    """``mass``, ``n_leap`` and ``max_leap`` apply to ``moves="hmc"`` only: with the sweep
    they are refused, not silently ignored."""
    X = np.random.default_rng(2).poisson(4.0, size=(6, 5))
    with bz.models.poisson(X, 2), pytest.raises(ValueError, match="only apply to moves='hmc'"):
        bz.inference.GibbsPoisson(**kw)
