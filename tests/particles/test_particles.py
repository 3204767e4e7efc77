"""fit_particles: Q-Transform / restarts / NNDSVDar particles with Stein weights; NUTS/ADVI."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo._terms.silf import silf_loss
from bnmfzoo.inference import fit_particles
from bnmfzoo.inference.particles.qtransform import generate_q_bank
from bnmfzoo.inference.particles.weighted import resolve_nmf_model, systematic_resample
from bnmfzoo.models import silf
from bnmfzoo.models._spec import find_spec

M = 6


def _data(seed=0, D=8, N=7, R=3):
    rng = np.random.default_rng(seed)
    return rng.random((D, R)) @ rng.random((R, N)) + 0.05 * rng.random((D, N))


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return generate_q_bank(n_datasets=4, n_restarts=5, cache_dir=tmp_path_factory.mktemp("q"))


@pytest.fixture(scope="module")
def model():
    return silf(_data(), 3, n_reference=5, random_seed=1)


@pytest.fixture(scope="module")
def fit(model, bank):
    return fit_particles(model, n_particles=M, q_bank=bank, random_seed=3, progressbar=False)


def test_weights_on_simplex_and_optimal(fit):
    w = fit["particles"]["weight"].values
    assert w.shape == (M,)
    assert (w >= 0).all()
    assert w.sum() == pytest.approx(1.0, abs=1e-9)
    d = fit["diagnostics"]
    # uniform weights are feasible, so the optimum cannot be worse (QP tolerance ~1e-8 relative)
    assert float(d["stein_discrepancy"]) <= float(d["stein_discrepancy_uniform"]) * (1 + 1e-6)
    assert float(d["stein_discrepancy"]) > 0
    assert fit.attrs["method"] == "particles" and fit.attrs["model"] == "silf"


def test_particles_on_support_and_good(fit, model):
    A = fit["particles"]["A"].values
    W = fit["particles"]["W"].values
    assert A.shape == (M, 8, 3) and W.shape == (M, 3, 7)
    np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-12)
    assert (A > 0).all() and (W > 0).all()
    eps = find_spec(model).hyper.epsilon
    f = fit["particles"]["objective"].values
    # epsilon is 1.2 x the worst of the reference fits: converged particles sit in the flat region
    assert (f < 0.9 * eps).all()
    np.testing.assert_allclose(
        f, [np.sum((_data() - a @ w) ** 2) for a, w in zip(A, W)], rtol=1e-10)
    assert (fit["particles"]["solve_time"].values >= 0).all()
    assert float(fit["diagnostics"]["total_time"]) >= fit["particles"]["time"].values.sum()


def test_flat_region_scores(fit, model):
    """Digest sec. 2.2: in SILF's flat region the score is (0 for A, -lambda for W)."""
    from bnmfzoo.diagnostics import score_function

    score = score_function(model)
    pts = {"A": fit["particles"]["A"].values, "W": fit["particles"]["W"].values}
    S = score(pts)
    assert np.all(silf_loss(fit["particles"]["objective"].values,
                            find_spec(model).hyper.epsilon) == 0)
    np.testing.assert_allclose(S[:, score.blocks["A"]], 0.0, atol=1e-12)
    np.testing.assert_allclose(S[:, score.blocks["W"]], -1.0, atol=1e-12)


def test_posterior_resampled_by_weight(fit):
    post = fit["posterior"]
    n = post.sizes["draw"]
    assert post.sizes["chain"] == 1 and n == 100
    src = fit["sample_stats"]["particle"].values.ravel()
    counts = np.bincount(src, minlength=M) / n
    w = fit["particles"]["weight"].values
    # systematic resampling: each count is floor or ceil of n * w, so |count/n - w| < 1/n
    assert np.all(np.abs(counts - w) < 1.0 / n + 1e-12)
    np.testing.assert_array_equal(post["A"].values[0], fit["particles"]["A"].values[src])
    # ArviZ cannot know that ESS / R-hat / LOO of this group mean nothing: the group says so
    assert "not an MCMC sample" in post.attrs["note"]


def test_systematic_resample_property():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(7))
    idx = systematic_resample(w, 1000, rng)
    assert np.all(np.abs(np.bincount(idx, minlength=7) / 1000 - w) < 1e-3 + 1e-12)


def test_same_seed_same_result(fit, model, bank):
    again = fit_particles(model, n_particles=M, q_bank=bank, random_seed=3, progressbar=False)
    np.testing.assert_array_equal(again["particles"]["A"].values, fit["particles"]["A"].values)
    np.testing.assert_array_equal(again["particles"]["weight"].values,
                                  fit["particles"]["weight"].values)


def test_netcdf_round_trip(fit, tmp_path):
    path = tmp_path / "particles.nc"
    fit.to_netcdf(path)
    back = xr.open_datatree(path)
    for group in ("posterior", "sample_stats", "observed_data", "particles", "diagnostics"):
        assert group in back.children
    xr.testing.assert_allclose(back["particles"].to_dataset(), fit["particles"].to_dataset())
    np.testing.assert_array_equal(back["posterior"]["W"].values, fit["posterior"]["W"].values)
    assert back.attrs["method"] == "particles"
    back.close()


@pytest.mark.parametrize("init", ["random", "nndsvdar"])
def test_other_inits(model, init):
    dt = fit_particles(model, n_particles=4, init=init, random_seed=0, progressbar=False)
    assert dt.attrs["init"] == init
    assert dt["particles"]["weight"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(dt["particles"]["A"].values.sum(axis=1), 1.0)


def test_user_model_with_callable_init_and_missing_data():
    import pymc as pm

    from bnmfzoo.likelihoods import silf as silf_term

    X = _data()
    X[2, 3] = np.nan
    with pm.Model() as user:
        A = pm.HalfNormal("A", 1.0, shape=(8, 3))
        W = pm.Exponential("W", 1.0, shape=(3, 7))
        silf_term("lik", A, W, observed=X, epsilon=1.0)
    calls = []

    def my_init(X, rank, rng):
        calls.append(np.isnan(X).any())
        return rng.random((X.shape[0], rank)), rng.random((rank, X.shape[1]))

    info = resolve_nmf_model(user)
    assert not info.simplex_columns and info.masked and info.rank == 3
    dt = fit_particles(user, n_particles=3, init=my_init, random_seed=0, progressbar=False)
    assert calls == [False] * 3  # the callable sees zero-filled data, never NaN
    assert dt.attrs["model"] == "custom" and "mask" in dt["observed_data"]
    # no column normalization for a HalfNormal basis
    assert not np.allclose(dt["particles"]["A"].values.sum(axis=1), 1.0)
    # the objective ignores the missing entry
    a, w = dt["particles"]["A"].values[0], dt["particles"]["W"].values[0]
    mask = ~np.isnan(X)
    assert dt["particles"]["objective"].values[0] == pytest.approx(
        np.sum((X - a @ w)[mask] ** 2))


def test_exponential_gaussian_model(bank):
    """The paper's other model: no simplex projection, same Stein weighting."""
    from bnmfzoo.models import exponential_gaussian

    m = exponential_gaussian(_data(), 3, sigma="reference", lambda_=1.0)
    info = resolve_nmf_model(m)
    assert not info.simplex_columns
    dt = fit_particles(m, n_particles=4, q_bank=bank, random_seed=2, progressbar=False)
    assert dt.attrs["model"] == "exponential_gaussian"
    assert dt["particles"]["weight"].sum() == pytest.approx(1.0)
    assert float(dt["diagnostics"]["stein_discrepancy"]) <= \
        float(dt["diagnostics"]["stein_discrepancy_uniform"]) * (1 + 1e-6)


def test_missing_data_qtransform(bank):
    X = _data()
    rng = np.random.default_rng(4)
    X[rng.random(X.shape) < 0.15] = np.nan
    m = silf(X, 3, n_reference=5)
    dt = fit_particles(m, n_particles=4, q_bank=bank, random_seed=1, progressbar=False,
                       max_iter=500)
    assert np.isfinite(float(dt["diagnostics"]["stein_discrepancy"]))
    assert dt["particles"]["weight"].sum() == pytest.approx(1.0)


def test_errors(model):
    import pymc as pm

    from bnmfzoo.models import exponential_gaussian

    with pytest.raises(ValueError, match="init"):
        fit_particles(model, init="svd", progressbar=False)
    with pytest.raises(ValueError, match="n_particles"):
        fit_particles(model, n_particles=0, progressbar=False)
    # fit_particles completes tau per particle (test_user_model_particles.py); the gradient
    # methods still need A and W to be the only free variables, and say so
    from bnmfzoo.inference import fit_svgd

    with pytest.raises(TypeError, match="tau"):
        fit_svgd(exponential_gaussian(_data(), 3), progressbar=False)
    with pm.Model() as bare:
        pm.HalfNormal("A", 1.0, shape=(8, 3))
        pm.HalfNormal("W", 1.0, shape=(3, 7))
    with pytest.raises(ValueError, match="X="):
        fit_particles(bare, progressbar=False)
    with pytest.raises(ValueError, match="shape"):
        fit_particles(bare, X=np.ones((5, 5)), progressbar=False)
    with pytest.raises(TypeError, match="pymc.Model"):
        fit_particles("model", progressbar=False)


def test_dask_matches_serial(model, bank, fit):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dt = fit_particles(model, n_particles=M, q_bank=bank, random_seed=3, client=client,
                           progressbar=False)
    np.testing.assert_array_equal(dt["particles"]["A"].values, fit["particles"]["A"].values)
    np.testing.assert_array_equal(dt["particles"]["W"].values, fit["particles"]["W"].values)
    np.testing.assert_allclose(dt["particles"]["weight"].values,
                               fit["particles"]["weight"].values)
    assert dt.attrs["dask"] == 1


@pytest.mark.slow
def test_fit_nuts_and_advi_baselines(model):
    """NUTS/ADVI wrapped to the particle output (slow: each compiles a PyMC graph, ~1-2 min)."""
    from bnmfzoo.inference import fit_advi, fit_nuts

    dt = fit_nuts(model, draws=150, tune=150, n_particles=5, checkpoints=[50, 150],
                  random_seed=0, progressbar=False)
    d = dt["diagnostics"]
    np.testing.assert_array_equal(d["checkpoint_draw"].values, [50, 150])
    assert np.all(np.diff(d["checkpoint_time"].values) > 0)
    p = dt["particles"]
    assert p.sizes["particle"] == 5 and p["weight"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p["A"].values.sum(axis=1), 1.0, atol=1e-9)
    # thinned draws are the chain's draws 0, 37, 75, 112, 149
    np.testing.assert_array_equal(p["source_draw"].values, [0, 37, 74, 112, 149])
    assert dt["posterior"].sizes["draw"] == 150 and dt.attrs["method"] == "nuts"
    da = fit_advi(model, n=400, n_particles=5, n_draws=50, checkpoints=[200, 400],
                  random_seed=0, progressbar=False)
    assert da["posterior"].sizes["draw"] == 50 and da.attrs["method"] == "advi"
    assert da["variational"]["loss"].size == 400
    assert np.isfinite(da["diagnostics"]["checkpoint_stein_discrepancy"].values).all()


@pytest.mark.parametrize("simplex", [True, False])
def test_projection_of_a_dead_component_keeps_the_product(simplex):
    # scikit-learn's cd solver can return a zero row of W beside a huge column of A (seen on
    # swimmer: column sum 6e20); flooring W first turned it into a 6e8 term of A @ W
    from bnmfzoo.inference.particles._view import ParticleView
    from bnmfzoo.models._spec import ModelSpec

    rng = np.random.default_rng(0)
    A = rng.random((6, 3))
    W = rng.random((3, 5))
    A[:, 2] *= 1e20
    W[2] = 0.0
    X = A @ W
    spec = ModelSpec(family="custom", X=X, mask=np.ones_like(X, bool), rank=3)
    info = ParticleView(None, spec, {}, simplex)
    Ap, Wp = info.project(A, W)
    assert (Ap > 0).all() and (Wp > 0).all()
    np.testing.assert_allclose(Ap @ Wp, X, rtol=1e-9)
    if simplex:
        np.testing.assert_allclose(Ap.sum(axis=0), 1.0)
    # stacks of particles too
    As, Ws = info.project(np.stack([A, A]), np.stack([W, W]))
    np.testing.assert_allclose(As[1] @ Ws[1], X, rtol=1e-9)


def test_balance_moves_components_to_the_prior_optimal_scale(bank):
    # a solver's per-component scale is arbitrary; under Exponential priors fit_particles puts
    # each component where lam_A * sum A[:, r] = lam_W * sum W[r] (the log prior's maximum along
    # the likelihood's exact symmetry A[:, r] b, W[r] / b)
    from bnmfzoo.models import exponential_gaussian

    m = exponential_gaussian(_data(), 3, sigma="reference", lambda_A=0.5, lambda_W=2.0)
    info = resolve_nmf_model(m)
    lam_A, lam_W = info.exponential_rates
    assert np.allclose(lam_A, 0.5) and np.allclose(lam_W, 2.0)
    rng = np.random.default_rng(3)
    A = rng.random((2, *lam_A.shape)) * np.array([1e4, 1.0, 1e-3])
    W = rng.random((2, *lam_W.shape))
    Ab, Wb = info.balance(A, W)
    np.testing.assert_allclose(Ab @ Wb, A @ W, rtol=1e-12)
    np.testing.assert_allclose(0.5 * Ab.sum(axis=-2), 2.0 * Wb.sum(axis=-1), rtol=1e-12)

    def log_prior(a, w):
        return -0.5 * a.sum() - 2.0 * w.sum()

    for k in range(2):  # the balanced point beats every other scale on a grid
        best = log_prior(Ab[k], Wb[k])
        for b in (0.5, 0.9, 1.1, 2.0):
            assert log_prior(Ab[k] * b, Wb[k] / b) < best
    # the solver particles (Algorithm 1, no rejuvenation: Gibbs sweeps would move them off the
    # balanced scale, as posterior draws should)
    dt = fit_particles(m, n_particles=3, q_bank=bank, random_seed=2, progressbar=False,
                       rejuvenate=None)
    pa, pw = dt["particles"]["A"].values, dt["particles"]["W"].values
    np.testing.assert_allclose(0.5 * pa.sum(axis=1), 2.0 * pw.sum(axis=2), rtol=1e-6)


def test_balance_leaves_other_priors_alone(model):
    # SILF: Dirichlet bases fix the scale; nothing to balance
    info = resolve_nmf_model(model)
    assert info.exponential_rates is None
    A, W = np.ones((4, 3)), np.full((3, 5), 2.0)
    Ab, Wb = info.balance(A, W)
    assert Ab is A and Wb is W


def test_values_to_factors_maps_sampler_states_to_their_factors(model):
    """The faces NUTS benchmark scores the chain's states, not prior draws (a past bug)."""
    from bnmfzoo.inference.particles.baselines import values_to_factors

    info = resolve_nmf_model(model)
    to_factors = values_to_factors(model, info.names["A"], info.names["W"])
    rng = np.random.default_rng(0)
    point = {k: v + rng.normal(size=np.shape(v)) for k, v in model.initial_point().items()}
    A, W = (np.asarray(x) for x in to_factors(point))
    A2, W2 = (np.asarray(x) for x in to_factors(point))
    np.testing.assert_array_equal(A, A2)  # a function of the state, not a random draw
    np.testing.assert_allclose(W, np.exp(point[f"{info.names['W']}_log__"]), rtol=1e-12)
    A_rv = model[info.names["A"]]
    simplex = model.rvs_to_transforms[A_rv]
    expected = simplex.backward(point[f"{info.names['A']}_simplex__"], *A_rv.owner.inputs).eval()
    np.testing.assert_allclose(A, expected, rtol=1e-12)
    np.testing.assert_allclose(A.sum(axis=0), 1.0, rtol=1e-12)
