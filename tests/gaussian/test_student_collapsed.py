"""The collapsed update of Student-t noise precisions
(:func:`bnmfzoo.inference.gaussian.priors._weighted_core.collapsed_precision`).

Invariance test (Geweke 2004's "marginal-conditional" idea, one step): draw ``(tau, r)`` from
the generative model (``tau ~ Gamma(alpha, beta)``, ``lambda_e ~ Gamma(nu/2, nu/2)``,
``r_e ~ Normal(0, 1 / (tau lambda_e))``), apply the update to ``tau`` given ``r``; an update
that leaves ``p(tau | r)`` invariant returns ``(tau', r)`` with the same joint law, so ``tau'``
is again ``Gamma(alpha, beta)`` and ``tau' * mean(r^2)`` has the law of ``tau * mean(r^2)``
under fresh independent simulations. Each simulation is a group of its own, so one call
updates thousands of independent groups (the grouped path); the scalar path is checked on
fewer simulations. Groups of 6 entries keep the Laplace proposal far from the target (about
92 % accepted), so a wrong acceptance ratio shows.
"""

import numpy as np
import pytest
from scipy import stats

from bnmfzoo.inference.gaussian.priors._weighted_core import collapsed_precision

ALPHA, BETA, NU, N_ENTRIES = 2.0, 1.5, 4.0, 6
#: family-wise level of the three KS tests of one seed (Bonferroni)
FAMILY_ALPHA = 1e-3


def _simulate(rng, n_sims):
    tau = rng.gamma(ALPHA, 1.0 / BETA, size=n_sims)
    lam = rng.gamma(0.5 * NU, 2.0 / NU, size=(n_sims, N_ENTRIES))
    r = rng.standard_normal((n_sims, N_ENTRIES)) / np.sqrt(tau[:, None] * lam)
    return tau, r


def invariance_pvalues(seed, n_sims=4000, steps=2):
    """KS p-values: ``tau'`` against Gamma(alpha, beta), ``tau' mean(r^2)`` against fresh
    simulations, and the scalar path's ``tau'`` (400 simulations) against Gamma(alpha, beta).
    Also returns the acceptance rate."""
    rng = np.random.default_rng(seed)
    tau, r = _simulate(rng, n_sims)
    group = np.repeat(np.arange(n_sims), N_ENTRIES)
    acc = []
    for _ in range(steps):
        tau, a = collapsed_precision(tau, r.ravel(), group, ALPHA, BETA, NU, rng)
        acc.append(a.mean())
    fresh_tau, fresh_r = _simulate(rng, n_sims)
    p_tau = stats.kstest(tau, stats.gamma(ALPHA, scale=1.0 / BETA).cdf).pvalue
    p_joint = stats.ks_2samp(tau * (r**2).mean(1), fresh_tau * (fresh_r**2).mean(1)).pvalue
    t1, r1 = _simulate(rng, 400)
    out = np.empty(400)
    for m in range(400):
        out[m] = collapsed_precision(float(t1[m]), r1[m], None, ALPHA, BETA, NU, rng)[0]
    p_scalar = stats.kstest(out, stats.gamma(ALPHA, scale=1.0 / BETA).cdf).pvalue
    return np.array([p_tau, p_joint, p_scalar]), float(np.mean(acc))


def test_collapsed_precision_keeps_the_conditional():
    """Bonferroni over the 3 p-values at 1e-3. Seeds 0-199: 0 failures (smallest p * 3 over the
    seeds 0.003); acceptance about 0.92. A proposal ratio with the wrong sign, an acceptance
    that ignores the target, a dropped ``(nu + 1) / 2`` or a missing ``n / 2`` in the exponent
    fail at p < 1e-6 (``benchmarks/mutation/catalog_priors.py``). About 0.3 s."""
    p, acc = invariance_pvalues(seed=5)
    assert 0.5 < acc < 1.0, acc  # some proposals are rejected: the MH correction is exercised
    assert p.min() * p.size > FAMILY_ALPHA, p


def test_collapsed_precision_is_nearly_exact_on_many_entries():
    # 5000 entries per group: the Laplace proposal is close to the target, nearly every step
    # is accepted, and the draw is near the noise precision that made the data
    rng = np.random.default_rng(2)
    r = rng.standard_t(NU, size=(3, 5000)) / np.sqrt([[0.5], [2.0], [8.0]])
    tau, acc = collapsed_precision(np.ones(3), r.ravel(), np.repeat(np.arange(3), 5000),
                                   ALPHA, BETA, NU, rng)
    assert acc.all()
    assert np.allclose(tau, [0.5, 2.0, 8.0], rtol=0.1), tau


@pytest.mark.parametrize("bad", ["tau", "resid", "nu", "beta"])
def test_collapsed_precision_refuses_non_finite_input(bad):
    args = dict(tau=1.0, resid=np.ones(4), alpha=ALPHA, beta=BETA, nu=NU)
    args[bad] = {"tau": np.nan, "resid": np.array([1.0, np.inf, 0.0, 1.0]), "nu": -1.0,
                 "beta": 0.0}[bad]
    with pytest.raises(FloatingPointError, match="collapsed precision"):
        collapsed_precision(args["tau"], args["resid"], None, args["alpha"], args["beta"],
                            args["nu"], np.random.default_rng(0))


def test_sweep_with_and_without_the_collapsed_update():
    # the sweep runs the update only for Student-t noise with a sampled precision; with
    # collapsed_tau=False the draws are those of the plain data-augmentation sweep
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    from bnmfzoo.inference.gaussian.priors._prior_core import NMFPriorPlan, PriorTerms
    from bnmfzoo.inference.gaussian.priors._weighted_core import (
        WeightedPlan,
        factor_terms,
        weighted_nmf_sweep,
    )

    X = np.random.default_rng(0).exponential(size=(6, 5))
    obs = observed_entries(X)

    def gam(shape):
        return PriorTerms("constant", *factor_terms("gamma", {"alpha": 2.0, "beta": 1.0},
                                                    shape)[:2])

    plan = WeightedPlan(NMFPriorPlan(A=gam((6, 2)), W=gam((5, 2))), shape_A=np.ones((6, 2)),
                        shape_W=np.ones((5, 2)), nu=4.0)
    taus = {}
    for flag in (True, False):
        st = nmf_state(np.ones((6, 2)), np.ones((2, 5)), 1.0, None, obs)
        rng = np.random.default_rng(1)
        taus[flag] = [weighted_nmf_sweep(st, obs, plan, rng, rates={}, update={"A", "W", "tau"},
                                         collapsed_tau=flag).tau for _ in range(5)]
    assert taus[True] != taus[False]
    assert all(t > 0 for t in taus[True])
