"""Mode masses with Monte-Carlo errors: known answers by quadrature and by a Markov chain.

``bnmfzoo.diagnostics.modes`` calls a mode's ``weight`` a posterior mass only when the chains
cross between the modes; its error ``weight_mcse`` comes from batch means of the mode
indicator (:mod:`bnmfzoo.diagnostics._modes.masses`). These tests compare both with exact
answers: a two-state Markov chain (stationary probability and asymptotic variance in closed
form) and a tiny exponential-Gaussian NMF (2 x 2 data, rank 1, fixed noise) whose posterior
mass of any set of basis directions is a 2-D integral, computed here by quadrature, sampled by
the library's ``GibbsNMF``.
"""

import math
import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

from bnmfzoo.diagnostics._modes.masses import (
    batch_means_mcse,
    indicator_rhat,
    mode_masses,
    visits,
)

# ------------------------------------------------------------------------------------------
# a two-state Markov chain: p = a / (a + b), asymptotic variance p (1 - p) (1 + l) / (1 - l)
# ------------------------------------------------------------------------------------------


def _two_state(rng, a, b, C, S, reps):
    """``reps`` runs of C stationary two-state chains of length S: (reps, C, S) of 0/1."""
    p = a / (a + b)
    x = np.empty((reps, C, S), dtype=np.int8)
    x[..., 0] = rng.random((reps, C)) < p
    u = rng.random((reps, C, S))
    for s in range(1, S):
        prev = x[..., s - 1]
        x[..., s] = np.where(prev == 1, u[..., s] >= b, u[..., s] < a)
    return x


def _two_state_lean(rng, a, b, C, S, reps):
    """As :func:`_two_state`, drawing the uniforms one step at a time (less memory)."""
    x = np.empty((reps, C, S), dtype=np.int8)
    x[..., 0] = rng.random((reps, C)) < a / (a + b)
    for s in range(1, S):
        u = rng.random((reps, C))
        x[..., s] = np.where(x[..., s - 1] == 1, u >= b, u < a)
    return x


def test_batch_means_mcse_matches_the_exact_error_of_a_markov_chain():
    """A two-state chain with P(0 -> 1) = 0.01, P(1 -> 0) = 0.04 (stationary mass 0.2 of
    state 1, visits ~40 draws long, integrated autocorrelation time 1.95 / 0.05 = 39): over
    400 replicate runs of 4 chains x 4000 draws, the batch-means MCSE averages the exact
    asymptotic error within 15 % (its own sampling spread over 400 runs is ~1 %; batch means
    are biased low by about (tau / L) ~ 5 % at batches of L = 800 draws), and
    ``|mean - p| <= 2 MCSE`` holds in 95 % +- 5 % of the runs (binomial sd over 400 runs 1.1 %;
    t with 19 dof gives 94 %). Seeds 0-19 of this generator: 0/20 failures."""
    rng = np.random.default_rng(0)
    a, b, C, S, reps = 0.01, 0.04, 4, 4000, 400
    p = a / (a + b)
    lam = 1.0 - a - b
    exact = math.sqrt(p * (1 - p) * (1 + lam) / (1 - lam) / (C * S))
    x = _two_state(rng, a, b, C, S, reps)
    est = x.mean(axis=(1, 2))
    se = np.array([batch_means_mcse(x[r]) for r in range(reps)])
    assert abs(se.mean() / exact - 1) < 0.15
    assert abs(est.std() / exact - 1) < 0.15  # the exact error is the true spread
    cover = np.mean(np.abs(est - p) <= 2 * se)
    assert 0.90 <= cover <= 1.0


def test_mass_interval_covers_a_rare_mode_at_its_level():
    """The reported 95 % interval (``weight_low``-``weight_high``, Korn-Graubard from the
    batch-means MCSE) of a rare mode shaped like the minor solution of ``laurberg(0.5)``
    (stationary mass 0.0045, visits 3.4 draws long, ~105 visits in 4 chains x 20000 draws):
    over 600 replicate runs it covers the exact mass in 0.92-0.98 of them (binomial sd of the
    coverage 0.009, so the window is +-3.4 sd: false-failure rate below 1e-3). Measured with
    1000 runs (26 Nov 2026): 0.966, 0.952, 0.943 on generator seeds 3, 4, 5 (the symmetric
    +-2 MCSE 0.945, 0.931, 0.922) and 0.945 at mass 0.0045, 0.954 at 0.0017, 0.963 at 0.2 in
    another run. Misses are split between the two sides (neither above 0.05). About 3 CPU s.
    Before the interval existed ``mode_masses`` had no ``weight_low``."""
    rng = np.random.default_rng(3)
    a, b, C, S, reps = 0.00131, 0.29, 4, 20000, 600
    p = a / (a + b)
    x = _two_state_lean(rng, a, b, C, S, reps)
    low, high = np.empty(reps), np.empty(reps)
    for r in range(reps):
        out = mode_masses(x[r].astype(int), 2)
        low[r], high[r] = out["weight_low"][1], out["weight_high"][1]
        assert low[r] <= out["weight"][1] <= high[r]
    assert 0.92 <= np.mean((low <= p) & (p <= high)) <= 0.98
    assert np.mean(high < p) < 0.05 and np.mean(low > p) < 0.05


def test_mode_masses_calls_crossing_chains_a_mass_and_others_not():
    """Crossing chains: a mass with MCSE. No chain changes mode: NaN weight and the share of
    chains. Chains that cross but disagree (one chain twice as often in mode 1): indicator
    R-hat above 1.05, flagged unreliable. Deterministic inputs except the chain draws (seed
    fixed; the R-hat of the disagreeing chains is ~1.4, far from 1.05)."""
    rng = np.random.default_rng(1)
    x = _two_state(rng, 0.02, 0.08, 4, 2000, 1)[0]
    out = mode_masses(x, 2)
    assert out["estimator"] == "draws" and out["is_mass"]
    assert np.allclose(out["weight"], [1 - x.mean(), x.mean()])
    assert np.all(out["weight_mcse"] > 0) and out["weight"].sum() == pytest.approx(1.0)
    assert out["n_visits"].min() >= 10 and (out["n_changes"] > 0).all()
    stuck = np.repeat(np.array([0, 0, 1, 1])[:, None], 500, axis=1)
    out = mode_masses(stuck, 2)
    assert out["estimator"] == "share_of_chains" and not out["is_mass"]
    assert np.isnan(out["weight"]).all() and np.allclose(out["share"], 0.5)
    assert "NOT posterior masses" in out["message"] and "ReplicaExchangeGibbs" in out["message"]
    assert indicator_rhat(stuck) == math.inf
    lo = _two_state(rng, 0.02, 0.08, 3, 4000, 1)[0]
    hi = _two_state(rng, 0.08, 0.08, 1, 4000, 1)[0]
    out = mode_masses(np.concatenate([lo, hi]), 2)
    assert out["rhat"].max() > 1.05 and out["estimator"] == "draws_unreliable"
    assert "disagree" in out["message"]
    v, c = visits(np.array([[0, 1, 1, 0, 0, 2]]), 3)
    assert v.tolist() == [2, 1, 1] and c.tolist() == [3]
    # plain chains that all sit in one mode and never cross: no mass of 1 is claimed, the
    # other modes' masses are said to be unknown; with enough round trips it is a mass
    one = mode_masses(np.zeros((2, 300), int), 1)
    assert one["estimator"] == "one_mode" and not one["is_mass"]
    assert np.isnan(one["weight_mcse"]).all() and "unknown, not zero" in one["message"]
    assert mode_masses(np.zeros((2, 300), int), 1, round_trips=[10, 11])["is_mass"]


# ------------------------------------------------------------------------------------------
# a tiny NMF posterior whose masses are 2-D integrals
# ------------------------------------------------------------------------------------------

X_TINY = np.array([[1.0, 0.0], [0.0, 0.9]])
SIGMA, LAM = 0.2, 1.0


def _log_marginal_a(a1, a2):
    """``log p(a | X)`` up to a constant: W integrated out exactly (truncated Gaussians).

    ``x_ij ~ N(a_i w_j, SIGMA^2)``, ``a_i, w_j ~ Exp(LAM)``; for fixed ``a`` the ``w_j`` are
    independent with ``int_0^inf exp(l w - q w^2 / 2) dw = exp(l^2 / 2q) sqrt(2 pi / q)
    Phi(l / sqrt(q))``, ``q = |a|^2 / SIGMA^2``, ``l = a . x_j / SIGMA^2 - LAM``.
    """
    out = -LAM * (a1 + a2)
    q = (a1**2 + a2**2) / SIGMA**2
    for j in range(2):
        lin = (a1 * X_TINY[0, j] + a2 * X_TINY[1, j]) / SIGMA**2 - LAM
        out = out + 0.5 * lin**2 / q - 0.5 * np.log(q) + log_ndtr(lin / np.sqrt(q))
    return out


def _exact_masses(refs):
    """Posterior mass of each reference's cell (basis direction nearest by angle)."""
    n, top = 1600, 4.0  # the mass beyond a_i = 4 is below 1e-4 (checked at top = 6)
    g = (np.arange(n) + 0.5) * top / n
    A1, A2 = np.meshgrid(g, g, indexing="ij")
    lp = _log_marginal_a(A1, A2)
    p = np.exp(lp - lp.max())
    ang = np.arctan2(A2, A1)
    ref_ang = np.array([math.atan2(r[1, 0], r[0, 0]) for r in refs])
    cell = np.abs(ang[..., None] - ref_ang).argmin(-1)
    return np.array([p[cell == k].sum() for k in range(len(refs))]) / p.sum()


@pytest.fixture(scope="module")
def tiny_gibbs():
    import pymc as pm

    from bnmfzoo.inference import GibbsNMF
    from bnmfzoo.models import exponential_gaussian

    with exponential_gaussian(X_TINY, 1, sigma=SIGMA, lambda_=LAM), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(step=GibbsNMF(), draws=1000, tune=500, chains=4, cores=1,
                         random_seed=7, progressbar=False, compute_convergence_checks=False)


def test_mode_masses_match_quadrature_on_a_tiny_nmf(tiny_gibbs):
    """2 x 2 data, rank 1, noise sd 0.2: the basis direction ``a`` sits near e1 (explaining
    the entry 1.0) or near e2 (0.9), and Gibbs crosses between them through small ``a``
    hundreds of times. ``modes`` cuts the directions into cells around its representatives;
    the exact mass of every cell is a 2-D integral (W integrated out in closed form). Every
    reported weight lies within 4 of its MCSE of the exact mass (batch means with 19 dof:
    P(|t| > 4) < 0.1 % per mode), and the estimator says the weights are masses. False-failure
    rate measured over sampler seeds 1-50 (4 chains x 1000 draws, this test's body in a loop,
    26 Nov 2026): 0 of 50 (largest |z| over the modes 3.6; on the fixed partition 3.4); the
    test uses seed 7."""
    from bnmfzoo.diagnostics import modes

    m = modes(tiny_gibbs, warn=False)["modes"]
    assert m.attrs["estimator"] == "draws" and m.attrs["weight_is_mass"] == 1
    exact = _exact_masses(m["reference"].values)
    z = (m["weight"].values - exact) / m["weight_mcse"].values
    assert np.all(np.abs(z) < 4.0), (m["weight"].values, exact, z)
    # the fixed partition a1 > a2 (mass 0.8127 by quadrature) through the NumPy core
    A = tiny_gibbs.posterior["A"].values[..., 0]
    out = mode_masses((A[..., 0] > A[..., 1]).astype(int), 2)
    exact1 = 0.8127
    assert abs(out["weight"][1] - exact1) < 4.0 * out["weight_mcse"][1]


def test_masses_from_log_evidence_propagates_errors_like_a_simulation():
    """Delta-method errors of ``Z_k / sum Z`` against 20000 simulated ``log Z`` vectors with
    the stated independent normal errors (0.05, 0.1, 0.2): the simulated sd of each mass has
    a relative Monte-Carlo error of 0.5 %, the delta method's own error at these small log
    errors is below 2 %, so 5 % never fails by chance (deterministic seed)."""
    from bnmfzoo.inference.gaussian.modes.mode_evidence import masses_from_log_evidence

    log_z, se = np.log([0.2, 0.3, 0.5]), np.array([0.05, 0.1, 0.2])
    p, dp = masses_from_log_evidence(log_z, se)
    assert np.allclose(p, [0.2, 0.3, 0.5])
    sim = log_z + se * np.random.default_rng(0).standard_normal((20000, 3))
    w = np.exp(sim)
    w /= w.sum(1, keepdims=True)
    assert np.allclose(dp, w.std(0), rtol=0.05)
    p, dp = masses_from_log_evidence([0.0, -np.inf], [0.1, np.nan])
    assert p.tolist() == [1.0, 0.0] and np.isnan(dp[1])


def test_ais_mode_evidence_matches_quadrature_on_a_tiny_nmf(tiny_gibbs):
    """The independent estimate (:func:`bnmfzoo.inference.mode_evidence`: annealed importance
    sampling from a mean-field reference fitted to each mode, 200 runs x 50 steps) agrees with
    the exact cell masses within 4 of its delta-method standard errors, and every run's weight
    is finite. The cells of this tiny posterior are not separated modes (only 10-50 % of a
    reference's runs end in its own cell), so the estimate of a small cell rests on few runs:
    with 50 runs x 100 steps, AIS seeds 0-15 gave |z| 8.7 once (1 of 16; the cell's estimate
    from 5 runs); with 200 runs x 50 steps, AIS seeds 0-26 on this fixture: 0 of 27 above 4
    (largest |z| 3.5; this test's body in a loop, 26 Nov 2026). The test uses AIS seed 0."""
    from bnmfzoo.diagnostics import modes
    from bnmfzoo.inference import mode_evidence
    from bnmfzoo.models import exponential_gaussian

    model = exponential_gaussian(X_TINY, 1, sigma=SIGMA, lambda_=LAM)
    m = modes(tiny_gibbs, warn=False)
    ev = mode_evidence(tiny_gibbs, model, modes_tree=m, n_runs=200, n_anneal=50,
                       random_seed=0, progressbar=False)
    exact = _exact_masses(m["modes"]["reference"].values)
    assert np.isfinite(ev["log_weight"].values).all()
    assert ev["weight"].sum() == pytest.approx(1.0)
    z = (ev["weight"].values - exact) / ev["weight_se"].values
    assert np.all(np.abs(z) < 4.0), (ev["weight"].values, exact, z)


# ------------------------------------------------------------------------------------------
# laurberg(0.5), sigma 0.05: the documented default path (replica exchange, then modes)
# ------------------------------------------------------------------------------------------

#: the minor exact factorization's mass on noise seed 0 (independent parallel tempering 0.0041
#: +- 0.0003 over 4 seeds, thermodynamic integration 0.0044, AIS 0.0044; issue 32)
MINOR_MASS = 0.0042


def _laurberg_default_path(noise_seed, sampler_seed, draws=20000):
    import pymc as pm

    from bnmfzoo.datasets import laurberg
    from bnmfzoo.diagnostics import modes
    from bnmfzoo.inference import ReplicaExchangeGibbs
    from bnmfzoo.models import exponential_gaussian

    d = laurberg(0.5, sigma=0.05, random_seed=noise_seed)
    with exponential_gaussian(d.X, 3, sigma=0.05, lambda_=1.0), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(step=ReplicaExchangeGibbs(), draws=draws, tune=1000, chains=4,
                          cores=1, random_seed=sampler_seed, progressbar=False,
                          compute_convergence_checks=False)
    return d, idata, modes(idata, warn=False)["modes"]


def _solution_of_modes(d, m):
    from bnmfzoo.diagnostics import angle_distance

    return [int(np.argmin([angle_distance(ref, s[0]) for s in d.solutions]))
            for ref in m["reference"].values]


def _purity(d, idata, m, sol):
    """Share of each mode's draws whose nearest exact factorization is the mode's own."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    A = idata.posterior["A"].values
    A = A.reshape(-1, *A.shape[2:])
    near = matched_angles(_unit_l2(A), _unit_l2(np.stack([s[0] for s in d.solutions])))[0]
    near = near.argmin(1)
    label = m["member_mode"].values.ravel()
    return [float(np.mean(near[label == k] == sol[k])) for k in range(len(sol))]


@pytest.fixture(scope="module")
def laurberg_noise0_runs():
    """The documented default path on noise seed 0 with sampler seeds 1-4 (~70 CPU s each)."""
    out = {}
    for seed in (1, 2, 3, 4):
        d, idata, m = _laurberg_default_path(0, seed)
        sol = _solution_of_modes(d, m)
        out[seed] = (m, sol, _purity(d, idata, m, sol))
        print(f"laurberg noise 0, sampler seed {seed}: modes on solutions {sol}, weight "
              f"{m['weight'].values}, mcse {m['weight_mcse'].values}, 95 % interval "
              f"{m['weight_low'].values}-{m['weight_high'].values}, visits "
              f"{m['n_visits'].values}")  # shown with pytest -s (RESULTS §3.7)
    return out


@pytest.mark.slow
@pytest.mark.timeout(7200)  # ~280 CPU s, but the project's 900 s of wall time ran out on a
# loaded 2-core machine (26 Nov 2026: an error at 900 s, not a failure)
def test_laurberg_minor_mass_by_default_path(laurberg_noise0_runs):
    """``ReplicaExchangeGibbs()`` defaults, 4 chains x (1000 + 20000) steps, then ``modes()``
    defaults, sampler seeds 1-4 (issue 32's must-show): in every run two modes, one per exact
    factorization (> 99 % of each mode's draws nearest its own), the minor one's weight a mass
    (estimator ``draws``) within a factor 2 of 0.0042; and its reported 95 % interval
    (``weight_low``-``weight_high``) covers 0.0042 in at least 3 of the 4 runs.

    False-failure rate: with 95 % coverage per run, 2 or more misses of 4 happen with
    probability 1.4 % (2.7 % at 93 %, the lowest coverage measured); the interval's coverage
    on pieces of long default-path chains and on a two-state chain of this shape is 0.93-0.97
    (``benchmarks/RESULTS.md`` §3.7; the fast
    ``test_mass_interval_covers_a_rare_mode_at_its_level``). A factor 2 is more than 5 MCSE
    above and 3.5 below (relative error ~14 %; 0 of 1000 two-state runs, 0 of the long-chain
    pieces outside it). Under pytest (26 Nov 2026, 307 CPU s): 0.0044 ± 0.0005, 0.0052 ±
    0.0008, 0.0042 ± 0.0006, 0.0049 ± 0.0006, intervals covering 0.0042 in 4 of 4."""
    covered = 0
    for seed, (m, sol, pure) in laurberg_noise0_runs.items():
        assert m.sizes["mode"] == 2 and m.attrs["estimator"] == "draws", seed
        assert sorted(sol) == [0, 1], seed
        assert min(pure) > 0.99, (seed, pure)
        k = sol.index(0)  # solution 0 is the minor one on noise seed 0
        w = float(m["weight"][k])
        assert MINOR_MASS / 2 <= w <= 2 * MINOR_MASS, (seed, w)
        covered += float(m["weight_low"][k]) <= MINOR_MASS <= float(m["weight_high"][k])
    assert covered >= 3, covered


@pytest.mark.slow
@pytest.mark.timeout(3600)  # ~70 CPU s; wall time on a loaded machine is several times that
def test_laurberg_seed4_two_modes_one_factorization_each():
    """Noise seed 4: solution 0 holds 0.24-0.25 of the mass (issue 32). The default path gives
    two modes within 0.05 of 0.25 / 0.75, and > 99 % of each mode's draws are nearest that
    mode's factorization (the clustering of stretches used to mix them: 29 % and 40 % of the
    minor one in each). The MCSE at 4 x 20000 steps is 0.013 (0.033 at 4 x 5000), so 0.05 is
    about 3.5 MCSE from the truth (0.245 +- 0.005): false-failure rate about 0.1 % if the MCSE
    is right. Measured: 0.237 +- 0.013 / 0.763, each mode 100 % one factorization; passed under
    pytest (26 Nov 2026), about 75 CPU s."""
    d, idata, m = _laurberg_default_path(4, 1)
    assert m.sizes["mode"] == 2 and m.attrs["estimator"] == "draws"
    sol = _solution_of_modes(d, m)
    assert sorted(sol) == [0, 1]
    w = m["weight"].values
    assert abs(w[sol.index(0)] - 0.25) < 0.05 and abs(w[sol.index(1)] - 0.75) < 0.05
    assert min(_purity(d, idata, m, sol)) > 0.99


def _with_round_trips(idata, n):
    """A copy of ``idata`` whose sample stats record ``n`` round trips in every chain."""
    import xarray as xr

    out = idata.copy()
    ss = out["sample_stats"].to_dataset()
    C, S = ss.sizes["chain"], ss.sizes["draw"]
    ss["round_trips"] = (("chain", "draw"), np.full((C, S), n, dtype=np.int64))
    out["sample_stats"] = xr.DataTree(ss)
    return out


def test_replica_runs_without_round_trips_give_no_mass(tiny_gibbs):
    """Shares from a replica-exchange run whose replicas made fewer than 10 round trips per
    chain are not called masses (issue 32: on CCLE and GDSC the default ladder made 0 round
    trips and ``modes`` used to report ``weight 1.0 ± 0`` as a mass), also when every draw
    sits in one mode; with 50 round trips the same draws are masses. Deterministic given the
    fixture (its draws give ``"draws"`` without the stat, see the quadrature test)."""
    from bnmfzoo.diagnostics import modes

    with pytest.warns(UserWarning, match="round trips"):
        m = modes(_with_round_trips(tiny_gibbs, 0))["modes"]
    assert m.attrs["estimator"] == "draws_unreliable" and m.attrs["weight_is_mass"] == 0
    assert np.all(np.isnan(m["weight_low"].values))
    m = modes(_with_round_trips(tiny_gibbs, 50), warn=False)["modes"]
    assert m.attrs["estimator"] == "draws" and m.attrs["weight_is_mass"] == 1
    one = mode_masses(np.zeros((4, 100), int), 1, round_trips=[3, 12, 40, 0])
    assert one["estimator"] == "draws_unreliable" and not one["is_mass"]
    assert "3, 12, 40, 0 round trips" in one["message"]
    assert mode_masses(np.zeros((4, 100), int), 1, round_trips=[10] * 4)["is_mass"]
