"""PyMC glue of ReplicaExchangeGibbs and SymmetryMoves: pm.sample, seeds, state, errors, NUTS."""

import numpy as np
import pymc as pm
import pytest
from _restore import assert_restore_continues

from bnmfzoo.inference import (
    GibbsNMF,
    ModeJumps,
    ReplicaExchangeGibbs,
    SymmetryMoves,
    pymc_default_steps,
)
from bnmfzoo.inference.gaussian.modes.replica_exchange import ladder_stats
from bnmfzoo.models import exponential_gaussian


def _X():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(6, 2)) @ rng.exponential(size=(2, 5))
    X[0, 1] = np.nan
    return X


def _sample(step_fn, seed, *, chains=2, cores=1, draws=30, tune=40, ard=False):
    with exponential_gaussian(_X(), 2, ard=ard):
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, step=step_fn(),
                         random_seed=seed, progressbar=False, compute_convergence_checks=False)


def _re():
    return ReplicaExchangeGibbs(n_replicas=4, beta_min=0.1, symmetry=("rescale", "qtransform"))


def test_pm_sample_runs_records_stats_and_is_reproducible():
    a = _sample(_re, 3)
    b = _sample(_re, 3)
    for name in ("A", "W", "tau"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    ss = a.sample_stats
    for name in ("tau", "loglik", "cold_label", "q_accept", "swap_prob_0", "beta_3"):
        assert name in ss
    betas, rate = ladder_stats(ss)
    assert betas.shape == (2, 4) and rate.shape == (2, 3)
    assert np.all(betas[:, 0] == 1.0) and np.allclose(betas[:, -1], 0.1)
    # the recorded tau is the cold replica's, the one written into the posterior
    np.testing.assert_allclose(ss["tau"].values, a.posterior["tau"].values)
    c = _sample(_re, 4)
    assert not np.array_equal(a.posterior["A"].values, c.posterior["A"].values)


def test_same_draws_with_two_processes():
    one = _sample(_re, 5, cores=1)
    two = _sample(_re, 5, cores=2)
    assert np.array_equal(one.posterior["A"].values, two.posterior["A"].values)


def test_ladder_is_frozen_after_tuning():
    # tuning rounds end after 16, 48 and 112 steps: the third falls among the draws (50 + 70),
    # where a ladder still being tuned would change
    idata = _sample(_re, 6, tune=50, draws=70)
    for i in range(4):
        b = idata.sample_stats[f"beta_{i}"].values
        assert np.all(b == b[:, :1]), i  # constant over the recorded draws


def test_single_replica_is_gibbs():
    """With one temperature and no moves the step makes the plain Gibbs sweep's draws exactly
    (GibbsNMF without its overrelaxation and rescaling moves, which the tempered sweep leaves
    out)."""
    a = _sample(lambda: ReplicaExchangeGibbs(n_replicas=1), 7, ard=True)
    b = _sample(lambda: GibbsNMF(overrelax=0.0, rescale=False), 7, ard=True)
    for name in ("A", "W", "tau", "lambda_"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values), name


def test_symmetry_moves_compose_with_gibbs():
    idata = _sample(lambda: [GibbsNMF(), SymmetryMoves(moves=("rescale", "qtransform"))], 8)
    q = idata.sample_stats["q_accept"].values
    assert np.isfinite(q).all() and 0.05 < q.mean() < 0.95


def test_snapshot_restore_continues_identically():
    model = exponential_gaussian(_X(), 2, ard=True)
    step = ReplicaExchangeGibbs(n_replicas=3, beta_min=0.2, symmetry=("rescale",), model=model)
    step.setup_chain(np.random.default_rng(7), 10, 20)
    step.tune = True
    point = model.initial_point()
    for _ in range(4):
        point, _ = step.step(point)
    snap = step.sampling_state
    assert snap.replicas is not None and snap.tune

    # 20 steps cross the end of the first tuning round (16 steps)
    assert_restore_continues(step, point, ("beta_1",))


def _first_replicas(anneal_start, tune):
    """The replicas a chain's first step starts from, and the generator state before it."""
    model = exponential_gaussian(_X(), 2)
    step = ReplicaExchangeGibbs(n_replicas=3, beta_min=0.2, anneal_start=anneal_start,
                                model=model)
    step.setup_chain(np.random.default_rng(11), 10 if tune else 0, 20)
    point = model.initial_point()
    start = step._first_state(point)
    replicas = step._first_replicas(point)
    return step, start, replicas


def test_annealed_start_sweeps_from_hot_to_cold():
    """While tuning, the replicas start from one state swept ``anneal_start`` times at betas
    rising geometrically from beta_min to 1, replica i taken after the last sweep at a beta
    not above its own: the same draws, rebuilt with the numeric core."""
    from bnmfzoo.inference.gaussian.modes._tempering import tempered_sweep

    step, st, replicas = _first_replicas(6, tune=True)
    np.testing.assert_allclose(step.betas, [1.0, 0.2**0.5, 0.2])
    path = np.geomspace(0.2, 1.0, 6)  # 0.2, 0.276, 0.381, 0.525, 0.725, 1
    taken_after = {1: 2, 3: 1, 6: 0}  # sweeps done -> the replica copied then
    rng = np.random.default_rng(11)  # the chain's generator, as setup_chain received it
    for t, beta in enumerate(path, start=1):
        tempered_sweep(st, step.obs, step.hyper, rng, beta)
        if t in taken_after:
            r = replicas[taken_after[t]]
            np.testing.assert_array_equal(r.A, st.A)
            np.testing.assert_array_equal(r.W, st.W)
            assert r.tau == st.tau
    assert not np.array_equal(replicas[0].A, replicas[2].A)


@pytest.mark.parametrize("anneal_start, tune", [(0, True), (3, False)],
                         ids=["off", "not-tuning"])
def test_no_annealed_start_when_off_or_not_tuning(anneal_start, tune):
    """With ``anneal_start=0``, or when the chain does not tune, every replica starts at the
    chain's initial point (the kernel after tuning is unchanged)."""
    _, start, replicas = _first_replicas(anneal_start, tune)
    for r in replicas:
        np.testing.assert_array_equal(r.A, start.A)
        np.testing.assert_array_equal(r.W, start.W)


def _sample_laurberg(seed, cores, composed=False):
    """laurberg(0.5) has two exact factorizations: the jumps find two references."""
    from bnmfzoo.datasets import laurberg

    data = laurberg(0.5, sigma=0.05, random_seed=0)
    with exponential_gaussian(data.X, 3, sigma=0.05, lambda_=1.0):
        if composed:
            step = [GibbsNMF(), ModeJumps(jump_every=3, n_anneal=5, n_starts=6)]
        else:
            step = ReplicaExchangeGibbs(n_replicas=2, beta_min=0.3, mode_jumps=True,
                                        jump_every=3, n_anneal=5, n_starts=6)
        return pm.sample(draws=30, tune=40, chains=2, cores=cores, step=step,
                         random_seed=seed, progressbar=False, compute_convergence_checks=False)


@pytest.mark.parametrize("composed", [False, True], ids=["replica_exchange", "ModeJumps"])
def test_mode_jumps_through_pm_sample(composed):
    a = _sample_laurberg(9, 1, composed)
    b = _sample_laurberg(9, 2, composed)
    for name in ("A", "W"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    ss = a.sample_stats
    jumps = ss["jump_accept"].values
    # a jump every third step (steps 0, 3, ...: tuning has 40), NaN elsewhere
    attempted = np.isfinite(jumps)
    assert attempted[:, 2::3].all() and not attempted[:, 0::3].any(), attempted
    assert ((0 <= jumps[attempted]) & (jumps[attempted] <= 1)).all()
    assert (ss["n_references"].values >= 2).all()


def test_user_written_model_with_mode_jumps():
    """A hand-written PyMC model (recognized as the exponential-Gaussian NMF) takes the step."""
    X = _X()
    m = ~np.isnan(X)
    with pm.Model():
        A = pm.Exponential("A", 1.0, shape=(6, 2))
        W = pm.Exponential("W", 1.0, shape=(2, 5))
        tau = pm.Gamma("tau", 1.0, 1.0)
        pm.Normal("X", mu=(A @ W)[m], sigma=1 / pm.math.sqrt(tau), observed=X[m])
        step = ReplicaExchangeGibbs(n_replicas=2, beta_min=0.3, mode_jumps=True, jump_every=2,
                                    n_anneal=3, n_starts=2)
        idata = pm.sample(draws=10, tune=10, chains=1, step=step, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    assert np.isfinite(idata.posterior["A"].values).all()
    assert (idata.sample_stats["n_references"].values >= 1).all()


def test_mode_jump_state_is_restored():
    model = exponential_gaussian(_X(), 2)
    step = ReplicaExchangeGibbs(n_replicas=2, beta_min=0.3, mode_jumps=True, jump_every=2,
                                n_anneal=3, n_starts=2, model=model)
    step.setup_chain(np.random.default_rng(8), 5, 10)
    point = model.initial_point()
    for _ in range(3):
        point, _ = step.step(point)
    snap = step.sampling_state
    assert snap.references is not None

    def run(p):
        out = []
        for _ in range(6):
            p, _ = step.step(p)
            out.append(p["A_log__"].copy())
        return out

    first = run(point)
    step.sampling_state = snap
    assert all(np.array_equal(x, y) for x, y in zip(first, run(point), strict=True))


def test_bad_arguments():
    model = exponential_gaussian(_X(), 2)
    with pytest.raises(ValueError, match="betas"):
        ReplicaExchangeGibbs(betas=[0.9, 0.5], model=model)
    with pytest.raises(ValueError, match="betas"):
        ReplicaExchangeGibbs(betas=[1.0, 0.5, 0.7], model=model)
    with pytest.raises(ValueError, match="beta_min"):
        ReplicaExchangeGibbs(beta_min=0.0, model=model)
    with pytest.raises(ValueError, match="symmetry"):
        ReplicaExchangeGibbs(symmetry=("rotate",), model=model)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="anneal_start"):
            ReplicaExchangeGibbs(anneal_start=bad, model=model)
    with pytest.raises(ValueError, match="jump_every"):
        ReplicaExchangeGibbs(mode_jumps=True, jump_every=0, model=model)
    with pytest.raises(NotImplementedError, match="ARD"):
        ReplicaExchangeGibbs(mode_jumps=True, model=exponential_gaussian(_X(), 2, ard=True))
    with pytest.raises(NotImplementedError, match="ARD"):
        ModeJumps(model=exponential_gaussian(_X(), 2, ard=True))
    with pytest.raises(ValueError, match="n_anneal"):
        ModeJumps(n_anneal=0, model=model)
    with pytest.raises(ValueError, match="every free variable"):
        ReplicaExchangeGibbs(vars=[model["A"]], model=model)
    with pytest.raises(ValueError, match="moves"):
        SymmetryMoves(moves=(), model=model)
    with pytest.raises(TypeError, match="ReplicaExchangeGibbs"):
        with pm.Model():
            pm.Normal("x")
            ReplicaExchangeGibbs()


@pytest.mark.slow
def test_agrees_with_nuts():
    """Posterior means of tau and A @ W agree with PyMC's NUTS within 4 combined MCSEs.

    Tiny model, 4 chains each; z = (mean_RE - mean_NUTS) / sqrt(mcse_RE^2 + mcse_NUTS^2)
    over 1 + 12 quantities; |z| < 4 for each has false-failure probability < 13 * 6.3e-5.
    """
    import arviz as az

    X = _X()
    with exponential_gaussian(X, 2, lambda_=1.0) as m:
        re = pm.sample(draws=3000, tune=1000, chains=4, cores=1, random_seed=1,
                       step=ReplicaExchangeGibbs(n_replicas=4, beta_min=0.2,
                                                 symmetry=("rescale", "qtransform")),
                       progressbar=False, compute_convergence_checks=False)
        with pymc_default_steps():  # NUTS, not the GibbsNMF pm.sample() would choose
            nuts = pm.sample(draws=2000, tune=1000, chains=4, cores=1, random_seed=1,
                             nuts_sampler="pymc", target_accept=0.95, progressbar=False,
                             compute_convergence_checks=False, model=m)

    def funcs(idata):
        A = idata.posterior["A"].values
        W = idata.posterior["W"].values
        out = {"tau": idata.posterior["tau"].values}
        AW = np.einsum("cdik,cdkj->cdij", A, W)
        for i, j in np.ndindex(X.shape[0], X.shape[1]):
            if (i + j) % 3 == 0:
                out[f"AW{i}{j}"] = AW[:, :, i, j]
        return out

    fr, fn = funcs(re), funcs(nuts)
    for name in fr:
        mr, mn = fr[name].mean(), fn[name].mean()
        se = np.hypot(float(az.mcse(fr[name])), float(az.mcse(fn[name])))
        assert abs(mr - mn) < 4 * se, (name, mr, mn, se)
