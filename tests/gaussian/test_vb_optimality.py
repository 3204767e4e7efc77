"""Each mean-field VB update of ``q(tau)`` and ``q(lambda)`` maximizes the ELBO in its block.

A coordinate-ascent update that is not the optimum of its block (a Gamma shape that counts the
missing entries, an ARD shape missing the entries of one factor) still gives an ELBO that rises
from sweep to sweep and matches its Monte Carlo estimate, so ``test_vb.py`` cannot see it (issue
#36's mutation check). Here: after a few VB iterations on small data with missing entries, the
update's Gamma parameters against multiplicative perturbations of each of them, the rest of q
held fixed: the ELBO must not increase (a deterministic check; tolerance 1e-9 relative for
round-off). Fast (well under a second after the imports).
"""

import numpy as np
import pytest

from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.inference.gaussian.variational import vb
from bnmfzoo.models import exponential_gaussian


def _state(ard):
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(12, 3)) @ rng.exponential(size=(3, 9)) + 0.5 * rng.normal(
        size=(12, 9))
    X[rng.random(X.shape) < 0.3] = np.nan  # missing entries: n_observed < D N
    problem = glue.problem_from_model(exponential_gaussian(X, 3, ard=ard), method="fit_vb")
    mus = core.init_means(problem, "random", rng)
    state = core.MomentState(problem, mus)
    for role, mu in mus.items():
        state.mu[role] = mu.copy()
        state.prec[role] = np.ones_like(mu)
        state.E[role], state.V[role] = core.tn_moments(mu, state.prec[role])
    state.refresh()
    vb._update_tau(state, state.expected_sse())
    for _ in range(5):  # the iteration of fit_vb
        if ard:
            vb._update_ard(state)
        core.sweep(state, core.tn_moments_rule)
        vb._update_tau(state, state.expected_sse())
    return state


FACTORS = [np.exp(-0.05), np.exp(0.05), 0.5, 2.0]


def test_tau_update_maximizes_the_elbo():
    state = _state(ard=False)
    sse = state.expected_sse()
    vb._update_tau(state, sse)
    best = vb.elbo(state, sse)
    a, b = state.tau_ab
    for which in (0, 1):
        for f in FACTORS:
            ab = [a, b]
            ab[which] *= f
            state.tau_ab = tuple(ab)
            state.tau = ab[0] / ab[1]
            state.logtau = float(core.gamma_elog(*ab))
            assert vb.elbo(state, sse) <= best + 1e-9 * abs(best), (which, f)


def test_ard_update_maximizes_the_elbo():
    state = _state(ard=True)
    vb._update_ard(state)
    sse = state.expected_sse()
    best = vb.elbo(state, sse)
    for key, (a, b) in list(state.lam_ab.items()):
        for which in (0, 1):
            for f in FACTORS:
                ab = [np.array(a, dtype=float), np.array(b, dtype=float)]
                ab[which] = ab[which] * f
                state.lam_ab[key] = tuple(ab)
                state.lam_E[key] = ab[0] / ab[1]
                state.lam_logE[key] = core.gamma_elog(*ab)
                assert vb.elbo(state, sse) <= best + 1e-9 * abs(best), (key, which, f)
        state.lam_ab[key] = (a, b)
        state.lam_E[key] = a / b
        state.lam_logE[key] = core.gamma_elog(a, b)


@pytest.mark.parametrize("ard", [False, True])
def test_perturbation_check_has_power(ard):
    """The same check rejects a q(tau) whose shape counts every D x N entry."""
    state = _state(ard=ard)
    sse = state.expected_sse()
    p = state.problem
    a = p.alpha_tau + 0.5 * p.obs.shape[0] * p.obs.shape[1]  # the wrong shape
    b = p.beta_tau + 0.5 * sse
    state.tau_ab, state.tau, state.logtau = (a, b), a / b, float(core.gamma_elog(a, b))
    wrong = vb.elbo(state, sse)
    vb._update_tau(state, sse)
    assert vb.elbo(state, sse) > wrong
