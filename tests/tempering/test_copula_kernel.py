"""The compiled copula rung transition against its NumPy reference (deterministic).

:func:`bnmfzoo.inference.counts.tempering._hmc_copula.hmc_step_copula` runs the transition of
:func:`bnmfzoo.inference.counts.tempering._hmc_term.hmc_step_term` (dense counts, the copula's
surrogate kicks) in one numba call; the NumPy form is the one the exact-target tests of
``test_copula_reference.py`` established (and they run through the compiled one too, since the
adapter's sweep takes it). Here, with the same momentum, step and uniform:

* the compiled scores (:mod:`bnmfzoo.inference.kernels.gamma_scores`) agree with SciPy's
  ``gammainc``/``gammaincc``/``ndtri`` to 1e-11 over shapes 0.02-50 and both tails (the
  algorithms are accurate to about 1e-13; the bound leaves room for the scores' conditioning
  in the far tails), and the compiled surrogate field agrees with
  :meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.surrogate_grad` to 1e-9
  relative;
* one transition gives the same code, log acceptance (1e-8) and state (1e-9) as the NumPy
  form, at ``b = 0``, ``0.4`` and ``1`` on a 7 x 9, K = 2 problem whose copula has entries
  with shapes below 1 (exact scores) and above (Wilson-Hilferty);
* non-finite states are refused as the NumPy form refuses them.
"""

import math

import numpy as np
import pytest
from scipy.special import gammainc, gammaincc, ndtri

from bnmfzoo.inference.counts.tempering._hmc_copula import hmc_step_copula
from bnmfzoo.inference.counts.tempering._hmc_term import hmc_step_term
from bnmfzoo.inference.kernels.gamma_copula import GammaCopula, factor_blocks
from bnmfzoo.inference.kernels.gamma_scores import gamma_p_q, normal_quantile, surrogate_field

D, N, K = 7, 9, 2


def test_incomplete_gamma_and_normal_quantile_match_scipy():
    rng = np.random.default_rng(0)
    for a in (0.02, 0.3, 0.9, 1.0, 2.5, 12.0, 50.0):
        for x in np.concatenate([a * np.exp(rng.normal(0, 2, 40)), [1e-12, a + 1.0, 200.0]]):
            p, q = gamma_p_q(a, x)
            assert abs(p - gammainc(a, x)) <= 1e-11 * max(1.0, gammainc(a, x)), (a, x)
            assert abs(q - gammaincc(a, x)) <= 1e-11 * max(gammaincc(a, x), 1e-300) + 1e-15, (
                a, x, q, gammaincc(a, x))
    for p in np.concatenate([10.0 ** -np.arange(1, 300, 7.0), rng.uniform(0, 1, 200)]):
        assert abs(normal_quantile(p) - ndtri(p)) <= 1e-11 * max(1.0, abs(ndtri(p))), p
        if p > 1e-15:  # 1 - p below 1 in double precision
            want = ndtri(1 - p)
            assert abs(normal_quantile(1 - p) - want) <= 1e-9 * max(1.0, abs(want)), p
    assert math.isnan(normal_quantile(1.5)) and normal_quantile(0.0) == -math.inf
    assert all(math.isnan(v) for v in gamma_p_q(-1.0, 1.0) + gamma_p_q(1.0, math.nan))


def _copula(rng):
    """A copula over the flat ``(A, W)`` of a D x N, K = 2 problem: mixed shapes, 3 factors."""
    d = (D + N) * K
    draws = rng.gamma(rng.uniform(0.3, 8.0, d), 1.0, size=(400, d))
    draws[:, :d // 2] *= np.exp(0.4 * rng.standard_normal((400, 1)))  # shared factors
    cop = GammaCopula.fit(draws, 1.0, factor_blocks(D, N, K), n_factors=3)
    assert (cop.a < 1).any() and (cop.a >= 1).any()  # both kinds of score are exercised
    return cop


def test_the_compiled_field_is_the_surrogate_gradient():
    rng = np.random.default_rng(1)
    cop = _copula(rng)
    for x in cop.draw(rng, 20):
        theta = np.log(x) + 0.3 * rng.standard_normal(x.size)
        out = np.empty_like(theta)
        assert surrogate_field(theta, *cop.surrogate_parts(), out)
        want = cop.surrogate_grad(theta)
        assert np.allclose(out, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
        assert cop.copula_value(theta) == pytest.approx(cop.copula_theta(theta)[0], rel=1e-13)
    theta[0] = 800.0
    assert not surrogate_field(theta, *cop.surrogate_parts(), out)
    assert math.isnan(cop.copula_value(theta))


def _transition(form, state, momentum, grid, shapes, beta, inv_mass, eps, log_u, cop):
    """One transition of ``form`` ("numpy" or "compiled") on copies; ``(code, log_acc), tA,
    tWt``. A transition must reject a non-finite trajectory, never raise."""
    (sA, sWt), (pA, pWt) = (a.copy() for a in state), (p.copy() for p in momentum)
    try:
        if form == "numpy":
            res = hmc_step_term(sA, sWt, pA, pWt, grid, True, shapes, beta, *inv_mass, eps, 8,
                                log_u, cop.copula_theta, 1.0 - beta, cop.surrogate_grad)
        else:
            res = hmc_step_copula(sA, sWt, pA, pWt, grid, shapes, beta, *inv_mass, eps, 8,
                                  log_u, cop, 1.0 - beta)
    except ArithmeticError as err:  # e.g. a compiled division by a zero mean
        pytest.fail(f"{form}, eps {eps}: raised {err!r} instead of rejecting")
    return res, sA, sWt


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_one_transition_equals_the_numpy_form(beta):
    rng = np.random.default_rng(2)
    cop = _copula(rng)
    grid = (rng.poisson(3.0, (D, N)).astype(float), np.ones((D, N)))
    shapes = (rng.uniform(0.5, 3, (D, K)), rng.uniform(0.5, 3, (D, K)),
              rng.uniform(0.5, 3, (N, K)), rng.uniform(0.5, 3, (N, K)))
    inv_mass = (rng.uniform(0.2, 1.0, (D, K)), rng.uniform(0.2, 1.0, (N, K)))

    def start():
        x = cop.draw(rng)
        return (np.log(x[:D * K]).reshape(D, K),
                np.ascontiguousarray(np.log(x[D * K:]).reshape(K, N).T))

    codes = set()
    for i in range(12):
        state = start()
        momentum = (rng.standard_normal((D, K)), rng.standard_normal((N, K)))
        eps, log_u = rng.uniform(0.02, 0.3) * (1 + 4 * (i % 2)), math.log(rng.uniform())
        (c0, l0), A0, W0 = _transition("numpy", state, momentum, grid, shapes, beta,
                                       inv_mass, eps, log_u, cop)
        (c1, l1), A1, W1 = _transition("compiled", state, momentum, grid, shapes, beta,
                                       inv_mass, eps, log_u, cop)
        assert c0 == c1 and l1 == pytest.approx(l0, rel=1e-8, abs=1e-8)
        assert np.allclose(A0, A1, rtol=1e-9) and np.allclose(W0, W1, rtol=1e-9)
        codes.add(c0)
    assert codes == {0, 1}  # both accepted and rejected transitions compared
    # a step so long that means underflow or overflow: rejected (not raised), as in NumPy
    state = start()
    momentum = (np.full((D, K), -3.0), np.full((N, K), -3.0))
    for eps in (300.0, 3000.0):
        for form in ("numpy", "compiled"):
            res, sA, _ = _transition(form, state, momentum, grid, shapes, beta, inv_mass, eps,
                                     0.0, cop)
            assert res == (1, -math.inf) and np.array_equal(sA, state[0]), (form, eps, res)
    bad = np.full((D, K), np.nan)
    assert hmc_step_copula(bad, state[1].copy(), *(m.copy() for m in momentum), grid, shapes,
                           beta, *inv_mass, 0.1, 8, 0.0, cop, 1.0 - beta)[0] == 2


def test_the_memo_of_the_copula_term_returns_the_same_values_and_stays_bounded(monkeypatch):
    import pickle

    import bnmfzoo.inference.kernels.gamma_copula as gc

    rng = np.random.default_rng(3)
    cop = _copula(rng)
    xs = cop.draw(rng, 30)
    want = [cop.log_copula(cop.scores(x)) for x in xs]
    monkeypatch.setattr(gc, "MEMO_BYTES", 8 * xs.shape[1] * 10)  # room for 10 points
    for _ in range(2):  # the second pass meets the last 10 in the memo
        got = [cop.logpdf(x) - float(np.sum(cop._log_norm_a + (cop.a - 1) * np.log(x)
                                            - cop.r * x)) for x in xs]
        assert np.allclose(got, want, rtol=0, atol=1e-9)
        assert len(cop._memo) == 10
    assert cop.copula_value(np.log(xs[-1])) == pytest.approx(want[-1], abs=1e-9)
    assert pickle.loads(pickle.dumps(cop))._memo == {}


def test_theta_is_in_the_order_of_the_adapters_draws():
    """The HMC moves' flat ``theta`` (:func:`~bnmfzoo.inference.counts.tempering._hmc_term.
    flat_theta`, the compiled ``flat_into``) lists ``log A`` and ``log W`` in the order of the
    reference adapter's flat draws, the order the copula was fitted in; ``unflat_into`` is its
    inverse."""
    from bnmfzoo.inference.counts.tempering._hmc_term import flat_into, flat_theta, unflat_into
    from bnmfzoo.inference.reference_path import reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    rng = np.random.default_rng(0)
    D, N, K = 4, 5, 3
    ad = reference_adapter(family_of_model(poisson(rng.poisson(3.0, (D, N)).astype(float), K)))
    A, W = rng.gamma(2.0, 1.0, (D, K)), rng.gamma(2.0, 1.0, (K, N))
    theta = flat_theta(np.log(A), np.log(W).T)
    assert np.allclose(np.exp(theta), ad.draws({"A": A, "W": W}, slice(None)))
    out = np.empty_like(theta)
    flat_into(np.log(A), np.ascontiguousarray(np.log(W).T), out)
    tA, tWt = np.empty((D, K)), np.empty((N, K))
    unflat_into(out, tA, tWt)
    assert np.array_equal(out, theta) and np.allclose(tA, np.log(A))
    assert np.allclose(tWt, np.log(W).T)
