"""Bridge sampling (``bnmfzoo.inference.bridge``, ``bnmfzoo.inference.mode_bridge``): log Z and
mode masses against exact answers.

Each check is ``|estimate - truth| <= 4 se`` with the bridge's own asymptotic error (Meng &
Wong 1996; Fruhwirth-Schnatter 2004, with the draws' integrated autocorrelation time), or the
spread of independent estimates where stated. For a normal error a 4-se miss has probability
6e-5; the asymptotic error is itself estimated from a few hundred draws, so the measured rate
over seeds (stated per test) is what counts.
"""

import math

import numpy as np
import pytest
from _quadrature import GAUSSIAN_SIGMA, GAUSSIAN_X, gaussian_rank1_log_z, poisson_rank1_log_z
from scipy import stats
from scipy.special import gammaln, logsumexp

from bnmfzoo.inference.bridge import (
    MIN_OVERLAP,
    BoxCoxWarp,
    GaussianProposal,
    bridge_log_z,
    integrated_time,
    split_fit_bridge,
)
from bnmfzoo.inference.mode_bridge import bridge_masses, masses_from_log_z

# ------------------------------------------------------------------------------------------
# the numeric core: a non-Gaussian target of known normalizer
# ------------------------------------------------------------------------------------------

SHAPE, RATE, DIM = 3.0, 2.0, 5
#: log of prod_d int exp(a t - b e^t) dt = prod Gamma(a) / b^a (t = log of a Gamma draw)
LOG_Z_GAMMA = DIM * (gammaln(SHAPE) - SHAPE * math.log(RATE))


def _log_gamma_target(theta):
    return np.sum(SHAPE * theta - RATE * np.exp(theta), axis=1)


def _gamma_bridge(seed, n=600, n_prop=None):
    rng = np.random.default_rng(seed)
    theta = np.log(rng.gamma(SHAPE, 1.0 / RATE, size=(n, DIM)))
    return split_fit_bridge(theta, _log_gamma_target, rng, n_prop=n_prop)


@pytest.mark.parametrize("n_prop", [None, 900])
def test_bridge_log_z_of_a_product_of_log_gammas_is_exact(n_prop):
    """5 log-Gamma(3, 2) coordinates (skewed: the normal proposal is not the target); with
    as many and with three times as many proposal draws as bridge draws (the latter catches
    a confusion of ``N1`` and ``N2``). Measured false failures: 0 of 200 seeds for each."""
    est = _gamma_bridge(0, n_prop=n_prop)
    assert abs(est.log_z - LOG_Z_GAMMA) <= 4 * est.se, (est.log_z, est.se, LOG_Z_GAMMA)
    assert 0.0 < est.se < 0.1


def test_bridge_error_matches_the_spread_of_independent_estimates():
    """The asymptotic error is the estimates' sd: over 30 seeds their sd lies within a factor
    1.6 of the mean reported se (the sd of 30 normal draws is within 0.75-1.25 of sigma with
    probability 0.97; the rest of the factor is the se's own noise)."""
    ests = [_gamma_bridge(s, n=300) for s in range(30)]
    sd = np.std([e.log_z for e in ests], ddof=1)
    se = np.mean([e.se for e in ests])
    assert se / 1.6 <= sd <= 1.6 * se, (sd, se)


def test_bridge_iteration_reaches_the_fixed_point():
    """With ``q = p`` normalized, every term is ``1 / (s1 + s2 r)``: the fixed point is r = Z
    exactly (here Z = 1), and the error is zero."""
    rng = np.random.default_rng(3)
    q = GaussianProposal(np.zeros(2), np.eye(2))
    a, b = q.sample(50, rng), q.sample(70, rng)
    est = bridge_log_z(q.logpdf(a), q.logpdf(a), q.logpdf(b), q.logpdf(b))
    assert abs(est.log_z) < 1e-9 and est.se < 1e-9


def test_bridge_rejects_bad_input():
    with pytest.raises(ValueError, match="log_p_post"):
        bridge_log_z([np.nan, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="one value per draw"):
        bridge_log_z([0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="support"):
        bridge_log_z([0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, -np.inf])
    with pytest.raises(ValueError, match="draws must be"):
        GaussianProposal.fit(np.zeros((3, 2)))


def test_integrated_time_sees_autocorrelation():
    rng = np.random.default_rng(0)
    x = np.zeros(5000)
    for t in range(1, x.size):  # AR(1), rho 0.8: tau = (1 + rho) / (1 - rho) = 9
        x[t] = 0.8 * x[t - 1] + rng.normal()
    assert 5.0 < integrated_time(x) < 15.0


def _ar1_bridge(seed, rho=0.9, dim=3, n_chains=4, n=400):
    """``split_fit_bridge`` of ``exp(-|t|^2 / 2)`` (``log Z = dim log(2 pi) / 2``) from
    ``n_chains`` AR(1) chains started in stationarity (exact marginals, ``tau = 19`` at 0.9)."""
    rng = np.random.default_rng(seed)
    x = np.empty((n_chains, n, dim))
    x[:, 0] = rng.normal(size=(n_chains, dim))
    e = rng.normal(size=(n_chains, n, dim)) * math.sqrt(1.0 - rho * rho)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return split_fit_bridge(x.reshape(-1, dim), lambda t: -0.5 * np.sum(t * t, axis=1), rng,
                            chain_of=np.repeat(np.arange(n_chains), n))


def test_bridge_interval_covers_log_z_from_autocorrelated_draws():
    """The stated 2-se interval covers the exact ``log Z`` from autocorrelated draws (AR(1),
    rho 0.9) in at least 75 of 100 seeds. Nominal coverage is 95 %; batch means of 10 batches
    of 20 draws see about half of ``tau = 19`` here, so the measured coverage is 0.885 (sd of
    the standardised error 1.14; Geyer's initial-sequence ESS would give 0.94). 0.75 is 4.2
    binomial sds below 0.885. Measured false failures: 0 of 300 disjoint blocks of 100 seeds
    (lowest 0.78, 1 % quantile 0.81). With ``tau`` ignored (1) the coverage is 0.43-0.47."""
    cover = [abs(e.log_z - 1.5 * math.log(2 * math.pi)) <= 2 * e.se
             for e in (_ar1_bridge(s) for s in range(100))]
    assert np.mean(cover) >= 0.75, np.mean(cover)


def test_bridge_without_overlap_reports_no_error_bar():
    """A standard normal in 60 dimensions bridged with ``N(0, 0.4^2 I)`` (1000 draws each):
    the sums rest on one to four draws. The asymptotic error would sit at its ceiling (at most
    ``sqrt(1 + tau)`` = 1.41 nats here, since ``var / mean^2 <= n - 1`` for non-negative
    terms) while the estimate is 7.7 nats off (median over 1000 seeds), so the bridge must
    report no error bar. Over 10 seeds: every one without an error bar, rms error above 3 nats.
    Measured false failures: 0 of 100 disjoint blocks of 10 seeds (overlap at most 3.9 in
    1000 seeds; lowest block rms error 5.6)."""
    from bnmfzoo.inference.bridge import MIN_OVERLAP

    d = 60
    q = GaussianProposal(np.zeros(d), np.eye(d) * 0.4 ** 2)

    def log_p(t):
        return -0.5 * np.sum(t * t, axis=1)

    err = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        post, prop = rng.normal(size=(1000, d)), q.sample(1000, rng)
        est = bridge_log_z(log_p(post), q.logpdf(post), log_p(prop), q.logpdf(prop))
        assert min(est.overlap) < MIN_OVERLAP and est.se == math.inf, est
        err.append(est.log_z - 0.5 * d * math.log(2 * math.pi))
    assert math.sqrt(np.mean(np.square(err))) > 3.0, err  # the error the ceiling would hide
    good = _gamma_bridge(0)  # a proposal that overlaps keeps its finite error
    assert min(good.overlap) >= MIN_OVERLAP and math.isfinite(good.se), good


#: 150 log-Gamma coordinates of shapes 0.3, 0.5, 1 (rate 1): skewness -1.8 to -1.1 in log space
_SKEW_A = np.array([0.3, 0.5, 1.0])[np.arange(150) % 3]


def _skewed_log_gammas(theta):
    return np.sum(_SKEW_A * theta - np.exp(theta), axis=1)


def test_warped_bridge_of_skewed_log_gammas_in_150_dimensions():
    """Exact draws of 150 independent log-Gamma(0.3 | 0.5 | 1, 1) coordinates (``Z = prod
    Gamma(a)``), shaped like a negative-binomial NMF mode in log space (factor entries near
    zero, skewed to the left). The plain normal proposal fitted to 800 draws (the other
    families' bridge) rests on 1-2 effective draws: no error bar, in every seed. The Box-Cox
    warp with the draws sized by dimension (``p (p + 1) / 16`` = 1416 fitted, as many
    bridged) rests on 250-300, and its error is honest: over 10 seeds at least 8 within 2 se
    and the rms error at most 1.5 times the rms se. Measured false failures: 1 of 100 disjoint
    blocks of 10 seeds (seeds 970-979: 7 of 10 within 2 se; at 95 % coverage per seed the
    chance of at most 7 of 10 is 1.2 %); rms error / rms se at most 1.47, mean 0.93. 3 CPU s."""
    truth = float(np.sum(gammaln(_SKEW_A)))
    cover, err, se = 0, [], []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        theta = np.log(rng.gamma(_SKEW_A, 1.0, size=(2832, _SKEW_A.size)))
        old = split_fit_bridge(theta[:1600], _skewed_log_gammas, rng)
        assert old.se == math.inf, old
        new = split_fit_bridge(theta, _skewed_log_gammas, rng, warp=True)
        assert min(new.overlap) >= MIN_OVERLAP and math.isfinite(new.se), new
        cover += abs(new.log_z - truth) <= 2 * new.se
        err.append(new.log_z - truth)
        se.append(new.se)
    assert cover >= 8, (err, se)
    assert math.sqrt(np.mean(np.square(err))) <= 1.5 * math.sqrt(np.mean(np.square(se))), (err,
                                                                                         se)


def test_box_cox_warp_is_one_to_one_with_its_jacobian():
    """Inverse, image and log Jacobian (against a finite difference) of the warp, and the fit
    choosing ``lam = 0`` for normal log draws and ``lam`` near 1/3 for log-Gamma(5) ones
    (Wilson & Hilferty 1931: the cube root of a Gamma variate is nearly normal)."""
    rng = np.random.default_rng(0)
    w = BoxCoxWarp(np.array([0.0, 0.3, 1.0]))
    t = rng.normal(size=(50, 3))
    y, lj = w.forward(t)
    back, ok = w.inverse(y)
    assert ok.all() and np.allclose(back, t)
    h = 1e-6
    fd = np.sum(np.log((w.forward(t + h)[0] - w.forward(t - h)[0]) / (2 * h)), axis=1)
    assert np.allclose(lj, fd, atol=1e-6)
    assert not w.inverse(np.array([[0.0, -1 / 0.3 - 0.01, 0.0]]))[1][0]  # outside the image
    lam = BoxCoxWarp.fit(np.column_stack([rng.normal(size=4000),
                                          np.log(rng.gamma(5.0, size=4000))])).lam
    assert lam[0] == 0.0 and 0.2 <= lam[1] <= 0.5, lam


def test_per_mode_bridge_without_overlap_fails_the_mode(monkeypatch):
    """A mode whose bridge has no error bar (no overlap) is a failed mode, never a finite
    ``log Z`` with an infinite error (which "agrees" with any SMC ``log Z``)."""
    from bnmfzoo.inference import mode_bridge
    from bnmfzoo.inference.bridge import BridgeEstimate
    from bnmfzoo.inference.mode_bridge import check_reasons

    monkeypatch.setattr(mode_bridge, "split_fit_bridge",
                        lambda *a, **k: BridgeEstimate(-1.0, math.inf, 1, 300, 300, 1.0,
                                                       (1.0, 1.0)))
    out = _toy_masses(0)
    assert np.all(np.isneginf(out["log_z"])), out["log_z"]
    reasons = check_reasons("bridge", out["log_z"], out["left"], out["log_z_total"],
                            out["log_z_total_se"], -1.0, 0.1)
    assert any("failed" in r for r in reasons), reasons


def test_masses_from_log_z_delta_method():
    m, s = masses_from_log_z([0.0, math.log(3.0)], [0.2, 0.0])
    assert np.allclose(m, [0.25, 0.75]) and np.allclose(s, [0.25 * 0.75 * 0.2] * 2)


# ------------------------------------------------------------------------------------------
# per-mode evidence: a bimodal target with local moves (exact masses)
# ------------------------------------------------------------------------------------------

S0, S, M, W1 = 3.0, 0.3, 2.0, 0.8
_SD = math.sqrt(S0**2 + S**2)
Z_LEFT = W1 * stats.norm.pdf(-M, 0, _SD)
Z_RIGHT = (1 - W1) * stats.norm.pdf(M, 0, _SD)


class _Toy:
    """p0 = N(0, S0^2), exp(l) = W1 N(-M, S^2) + (1 - W1) N(M, S^2); random-walk moves."""

    dimension = 1
    rank = 1
    offset = 0.0

    @staticmethod
    def _logp(x):
        a = math.log(W1) - 0.5 * ((x + M) / S) ** 2
        b = math.log1p(-W1) - 0.5 * ((x - M) / S) ** 2
        return -0.5 * (x / S0) ** 2 + np.logaddexp(a, b) - math.log(2 * math.pi * S * S0)

    def sweep(self, state, beta, rng):
        x = state[0]
        for step, u in zip(rng.normal(size=3), rng.random(3), strict=True):
            y = x + step * S
            if math.log(u) < self._logp(y) - self._logp(x):
                x = y
        state[0] = x

    def loglik(self, state):
        return 0.0

    def copy(self, state):
        return list(state)

    # the parametrisation bridge_masses needs
    def theta(self, state, perm, rng):
        return np.array([state[0]])

    def log_joint(self, theta):
        return self._logp(np.asarray(theta)[:, 0])


def _toy_masses(seed):
    from types import SimpleNamespace

    toy = _Toy()
    fam = SimpleNamespace(tempered=toy, factors=None)
    return bridge_masses(fam, toy, np.zeros((2, 1, 1)), [[[-M]], [[M]]],
                         np.random.default_rng(seed), cut=90.0, n_chains=2, n_draws=300, thin=2,
                         align=False)


def test_per_mode_bridge_masses_of_a_bimodal_target_are_exact():
    """Chains started in each mode stay there (modes 13 sd apart); each mode's evidence is a
    normal integral. Measured false failures: 0 of 100 seeds."""
    out = _toy_masses(0)
    truth = np.log([Z_LEFT, Z_RIGHT])
    assert np.all(np.abs(out["log_z"] - truth) <= 4 * out["log_z_se"]), (out["log_z"], truth)
    right = Z_RIGHT / (Z_LEFT + Z_RIGHT)
    assert abs(out["mass"][1] - right) <= 4 * out["se"][1], (out["mass"], out["se"], right)
    assert abs(out["log_z_total"] - math.log(Z_LEFT + Z_RIGHT)) <= 4 * out["log_z_total_se"]


# ------------------------------------------------------------------------------------------
# the families' parametrisations: exact evidence of tiny models
# ------------------------------------------------------------------------------------------


def _family_bridge(model, seed=0, n_draws=500, align=False):
    from bnmfzoo.inference.mode_bridge import bridge_parametrisation
    from bnmfzoo.inference.smc_masses import family_of_model

    fam = family_of_model(model)
    param = bridge_parametrisation(model, fam)
    rng = np.random.default_rng(seed)
    start = fam.draw_prior(rng)
    A = np.asarray(fam.factors(start)[0], float)
    return bridge_masses(fam, param, A[None] / np.linalg.norm(A, axis=0), [[start]], rng,
                         cut=180.0, n_chains=2, n_draws=n_draws, thin=2, n_burn=50,
                         align=align)


def test_poisson_bridge_log_z_matches_quadrature():
    """Poisson rank 1 on a 1 x 2 matrix, Gamma(1, 1) priors (exact Z by quadrature, as in
    ``test_smc.py``). Measured false failures: 0 of 40 seeds."""
    from bnmfzoo.models import poisson

    x = np.array([3, 1])
    exact = poisson_rank1_log_z(x, 1.0)
    out = _family_bridge(poisson(x[None, :], 1, a=1.0, b=1.0))
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)


def test_gaussian_bridge_log_z_matches_quadrature():
    """Exponential-Gaussian rank 1 on a 1 x 2 matrix, sigma fixed, rates 1 (nested
    quadrature). Measured false failures: 0 of 40 seeds."""
    from bnmfzoo.models import exponential_gaussian

    x, sig = GAUSSIAN_X, GAUSSIAN_SIGMA
    exact = gaussian_rank1_log_z(x, sig)
    out = _family_bridge(exponential_gaussian(x[None, :], 1, sigma=sig, lambda_=1.0))
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)


def test_beta_dir_bridge_log_z_matches_enumeration():
    """Beta-Dir K = 2 on a 2 x 3 binary matrix, on the factors ``(A, W)`` (not the labels):
    the evidence by enumeration of the 2^6 labellings. The posterior's two copies overlap on
    so little data, so the draws are not aligned (``align=False``): the bridge estimates the
    whole evidence. Measured false failures: 0 of 40 seeds."""
    from itertools import product

    from bnmfzoo.inference.binary._core import BetaDirChain
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import beta_dir

    V = np.array([[1, 0, 1], [0, 1, 1]])
    model = beta_dir(V, 2)
    c = family_of_model(model).draw_prior(np.random.default_rng(0))
    lj = [BetaDirChain(c.rows, c.cols, c.v, 2, 3, c.g, c.a, c.b, None,
                       z=np.array(z, np.int64)).log_joint() for z in product(range(2), repeat=6)]
    exact = logsumexp(lj) - 6 * math.log(2)  # the SMC's scale (p0 uniform labels)
    out = _family_bridge(model)
    assert abs(out["log_z_total"] - exact) <= 4 * out["log_z_total_se"], (out, exact)


def test_unsupported_priors_are_refused():
    from bnmfzoo.inference.mode_bridge import _symmetric

    with pytest.raises(ValueError, match="same prior for every component"):
        _symmetric("the Gamma prior of A", np.array([[1.0, 2.0]]), axis=1)


class _Copies:
    """Two exchangeable components: ``p(x1, x2) = (N(x1; -2) N(x2; 2) + N(x1; 2) N(x2; -2)) /
    2`` (sd 0.3), normalized, so each of the ``2!`` copies holds ``Z = 1/2``. Its "basis" is
    ``[[e^x1, e^x2], [1, 1]]``, so swapping the components swaps the columns."""

    dimension, rank, offset = 2, 2, 0.0

    @staticmethod
    def _lp(t):
        t = np.atleast_2d(t)
        a = -0.5 * (((t[:, 0] + 2) / 0.3) ** 2 + ((t[:, 1] - 2) / 0.3) ** 2)
        b = -0.5 * (((t[:, 0] - 2) / 0.3) ** 2 + ((t[:, 1] + 2) / 0.3) ** 2)
        return np.logaddexp(a, b) - math.log(2.0) - 2 * math.log(2 * math.pi * 0.09) / 2

    def sweep(self, state, beta, rng):
        x = np.array(state)
        for _ in range(3):
            y = x + 0.3 * rng.normal(size=2)
            if math.log(rng.random()) < self._lp(y)[0] - self._lp(x)[0]:
                x = y
        state[:] = list(x)

    def loglik(self, state):
        return 0.0

    def copy(self, state):
        return list(state)

    @staticmethod
    def factors(state):
        return np.array([[math.exp(state[0]), math.exp(state[1])], [1.0, 1.0]]), None

    def theta(self, state, perm, rng):
        return np.asarray(state, float)[perm]

    def log_joint(self, theta):
        return self._lp(theta)


def test_label_switching_copies_are_aligned_and_counted():
    """Chains started in both copies of one mode: aligned to one copy, the bridge estimates
    that copy's ``Z = 1/2`` and the total ``2! Z = 1``. Unaligned, the normal proposal would
    straddle both copies. Measured false failures: 0 of 100 seeds."""
    from types import SimpleNamespace

    toy = _Copies()
    fam = SimpleNamespace(tempered=toy, factors=toy.factors)
    A = toy.factors([-2.0, 2.0])[0]
    out = bridge_masses(fam, toy, (A / np.linalg.norm(A, axis=0))[None],
                        [[[-2.0, 2.0], [2.0, -2.0]]], np.random.default_rng(0), cut=20.0,
                        n_chains=2, n_draws=300, thin=2)
    assert out["left"][0] == 0.0
    # aligned, the draws are one copy, a product of normals that the normal proposal fits
    # exactly: the relative error is ~ 1 / sqrt(300) (measured 0.010); straddling both
    # copies it is 0.23
    assert out["log_z_se"][0] < 0.05, out
    assert abs(out["log_z"][0] - math.log(0.5)) <= 4 * out["log_z_se"][0], out
    assert abs(out["log_z_total"]) <= 4 * out["log_z_total_se"], out


def test_plain_chains_from_the_prior_report_a_mode_the_references_lack():
    """The bimodal toy with only its left mode as reference: chains from the prior that end
    on the right are grouped into one new mode (and none is lost)."""
    from types import SimpleNamespace

    from bnmfzoo.inference.mode_bridge import prior_chain_modes

    toy = _Toy()

    def basis(state):
        return np.array([[math.exp(state[0])], [1.0]]), None

    fam = SimpleNamespace(tempered=toy, factors=basis,
                          draw_prior=lambda rng: [rng.normal() * S0])
    left = basis([-M])[0]
    new_refs, new_states, near, _ = prior_chain_modes(
        fam, (left / np.linalg.norm(left))[None], 20.0, np.random.default_rng(1), n_chains=12,
        n_sweeps=100)
    ends = [s[0] for group in new_states for s in group]
    assert new_refs.shape == (1, 2, 1) and len(ends) == int(np.sum(near < 0)) > 0
    assert all(x > 0 for x in ends) and np.sum(near == 0) > 0
