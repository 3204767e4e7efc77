"""Inputs that used to hang a sampler forever (uninterruptibly, inside numba) now fail fast.

Each trigger below once drove a non-finite value into the truncated-normal rejection loops,
which then never accepted. They now end within seconds with an error naming the problem: bad
data and hyperparameters are refused up front, and the kernels and sweeps refuse to run on (or
report) non-finite values when the checks up front are bypassed.
"""

from dataclasses import replace

import numba
import numpy as np
import pymc as pm
import pytest

from bnmfzoo.inference import GibbsNMF, GibbsNMTF, fit_particles, fit_vb
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.gibbs._gram import conditional_scaled
from bnmfzoo.inference.kernels.truncnorm import sample_truncnorm, truncnorm_excess
from bnmfzoo.models import exponential_gaussian, silf, tri_exponential_gaussian
from bnmfzoo.models._spec import GaussianHyper

pytestmark = pytest.mark.timeout(60)

SAMPLE = dict(draws=5, tune=0, chains=1, cores=1, progressbar=False,
              compute_convergence_checks=False, random_seed=0)


def _X(scale=1.0, big=None):
    X = np.random.default_rng(0).exponential(size=(8, 6)) * scale
    if big is not None:
        X[0, 0] = big
    return X


def test_gibbs_nmf_huge_entry():
    with pytest.raises(ValueError, match=r"X has an entry of magnitude 1e\+155.*rescale X"):
        with exponential_gaussian(_X(big=1e155), 2):
            pm.sample(step=GibbsNMF(), **SAMPLE)


def test_gibbs_nmtf_huge_data():
    with pytest.raises(ValueError, match=r"X has an entry of magnitude .*e\+200"):
        with tri_exponential_gaussian(_X(scale=1e200), (2, 2)):
            pm.sample(step=GibbsNMTF(), **SAMPLE)


@pytest.mark.parametrize("hyper", [dict(alpha0=1e-100), dict(beta0=1e300)])
def test_ard_extreme_hyperparameters(hyper):
    name = next(iter(hyper))
    with pytest.raises(ValueError, match=rf"{name} must lie in \[1e-10, 1e\+10\]"):
        with exponential_gaussian(_X(), 2, ard=True, **hyper):
            pm.sample(step=GibbsNMF(), **SAMPLE)


def test_fit_vb_huge_entry():
    with pytest.raises(ValueError, match="magnitude 1e\\+155"):
        fit_vb(exponential_gaussian(_X(big=1e155), 2), progressbar=False)


def test_fit_particles_huge_entry():
    with pytest.raises(ValueError, match="magnitude 1e\\+155"):
        fit_particles(silf(_X(big=1e155), 2), n_particles=4, progressbar=False)


def test_square_overflow_refused():
    # every entry below the bound, but the sum of squares overflows float64
    X = np.full((40, 30), 3e152)
    with pytest.raises(ValueError, match=r"sum\(x\^2\) must be finite"):
        exponential_gaussian(X, 2)


# -- the same triggers with the checks up front bypassed: the sweeps raise -------------------
HYPER = GaussianHyper(lambda_A=0.1, lambda_W=0.1, alpha_tau=1.0, beta_tau=1.0, sigma=None,
                      ard=False,
             alpha0=1.0, beta0=1.0)


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("kernel", ["residual", "gram"])
def test_nmf_sweep_on_huge_data_raises(kernel):
    obs = gc.observed_entries(_X(scale=1e200))
    st = gc.nmf_state(np.ones((8, 2)), np.ones((2, 6)), 1.0, None, obs)
    with pytest.raises(FloatingPointError, match=r"Gibbs sweep: .* not finite.*largest \|x\|"):
        for _ in range(20):
            gc.nmf_sweep(st, obs, HYPER, np.random.default_rng(0), kernel=kernel)


@pytest.mark.parametrize("hyper", [dict(alpha0=1e-100), dict(beta0=1e300)])
def test_nmf_sweep_ard_extreme_start_terminates(hyper):
    """The default start of such a model (lambda = alpha0 / beta0, factors = 1 / lambda) hung.

    A bound a = -mu / sigma beyond ~1.3e154 made the exponential proposal's rate overflow to
    inf, and the loop never accepted. Now the draws are exact there, so the chain either runs
    on with finite values or stops with a FloatingPointError; it never hangs.
    """
    obs = gc.observed_entries(_X())
    lam = np.full(2, 1e-100 if "alpha0" in hyper else 1e-300)
    st = gc.nmf_state(np.full((8, 2), 1 / lam[0]), np.full((2, 6), 1 / lam[0]), 1.0, lam, obs)
    try:
        for _ in range(20):
            gc.nmf_sweep(st, obs, replace(HYPER, ard=True, **hyper), np.random.default_rng(0))
    except FloatingPointError as err:
        assert "Gibbs sweep" in str(err)
    else:
        assert np.isfinite(st.A).all() and np.isfinite(st.W).all()
        assert np.isfinite(st.tau) and np.isfinite(st.lambda_).all()


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_nmtf_sweep_on_huge_data_raises():
    obs = gc.observed_entries(_X(scale=1e200))
    st = gc.nmtf_state(np.ones((8, 2)), np.ones((2, 2)), np.ones((6, 2)), 1.0, None, None, obs)
    hyper = GaussianHyper(lambda_F=0.1, lambda_S=0.1, lambda_G=0.1, alpha_tau=1.0, beta_tau=1.0,
                 sigma=None, ard=False, alpha0=1.0, beta0=1.0)
    with pytest.raises(FloatingPointError, match="Gibbs sweep"):
        for _ in range(20):
            gc.nmtf_sweep(st, obs, hyper, np.random.default_rng(0))


def test_nan_tau_raises_instead_of_sampling_the_prior():
    obs = gc.observed_entries(_X())
    st = gc.nmf_state(np.ones((8, 2)), np.ones((2, 6)), np.nan, None, obs)
    with pytest.raises(FloatingPointError, match="noise precision tau"):
        gc.nmf_sweep(st, obs, HYPER, np.random.default_rng(0))


# -- the kernel itself -----------------------------------------------------------------------
@numba.njit
def _excess_many(a, rng):
    out = np.empty(a.size)
    for i in range(a.size):
        out[i] = truncnorm_excess(a[i], rng)
    return out


@numba.njit
def _conditional_many(lin, inv_sd, lam, rng):
    out = np.empty(lin.size)
    for i in range(lin.size):
        out[i] = conditional_scaled(lin[i], inv_sd[i], lam[i], rng)
    return out


def test_truncnorm_kernel_non_finite_bound_returns_nan_promptly():
    rng = np.random.default_rng(0)
    bad = np.array([np.nan, np.inf, -np.inf])
    assert np.isnan(_excess_many(bad, rng)).all()
    # finite but huge bounds (a * a overflows) are drawn, exactly near 0 excess
    big = _excess_many(np.array([1e200, 1e300, 1.7e308]), rng)
    assert np.isfinite(big).all() and (big >= 0).all() and (big < 1e-199).all()
    # the Gibbs conditional: lin or the scale non-finite -> NaN, never a hang nor a silent
    # draw from the prior (only inv_sd = inf, nothing observed, means the prior)
    out = _conditional_many(np.array([np.nan, np.inf, 1.0, -np.inf, 1.0]),
                            np.array([1.0, 1.0, np.nan, 1e-300, np.inf]),
                            np.ones(5), rng)
    assert np.isnan(out[:4]).all() and np.isfinite(out[4])


def test_sample_truncnorm_rejects_non_finite():
    for mu, sigma in ((np.nan, 1.0), (np.inf, 1.0), (0.0, np.nan), (0.0, np.inf)):
        with pytest.raises(ValueError, match="mu|sigma"):
            sample_truncnorm(mu, sigma, rng=0)
    with pytest.raises(FloatingPointError, match="mu / sigma"):
        sample_truncnorm(1e300, 1e-300, rng=0)
