"""The bridge check joins a "mode" only a plain chain from the prior found, when that chain was
still on its way into a mode the SMC found (its own bridge chains all leave it for that mode),
and keeps a real second mode.

A toy of two narrow modes: every sweep draws the basis afresh around the mode the state is in,
``A = mu_m * exp(0.05 z)`` (a draw lies about 2 degrees from the mode's mean, the modes 40+
degrees apart, the cut 12 degrees), so which draws leave which mode is certain; the joint is
the half-half mixture of the two log-normal modes (normalized: each mode's evidence is 1/2).
Which draws leave is deterministic in effect (no draw comes near the cut's edge); the bridge
estimates are checked within 4 of their reported standard errors (``P(|z| > 4) = 6e-5`` under
normality; measured over seeds 0-29 of ``_check`` for both tests, 29 Nov 2026: 0 failures of
60, largest |z| 2.87 joined and 2.13 kept).
"""

import math
from types import SimpleNamespace

import numpy as np
from scipy.special import logsumexp

import bnmfzoo.inference.mode_bridge as mb
from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2

_MUS = [np.array([[4, 0.5], [3, 0.5], [2, 1], [1, 2.0]]),
        np.array([[0.5, 4], [2, 0.5], [0.5, 3], [3, 2.0]])]
_S, _CUT = 0.05, 12.0


def _family():
    def sweep(state, beta, rng):
        state[0] = _MUS[state[1]] * np.exp(_S * rng.standard_normal(_MUS[0].shape))

    return SimpleNamespace(tempered=SimpleNamespace(sweep=sweep, copy=lambda s: list(s)),
                           factors=lambda s: (s[0], None), draw_prior=None)


def _param():
    def log_joint(theta):
        theta = np.atleast_2d(theta)
        parts = [math.log(0.5) + np.sum(-0.5 * ((theta - np.log(mu).ravel()) / _S) ** 2
                                         - math.log(_S * math.sqrt(2 * math.pi)), axis=1)
                 for mu in _MUS]
        return logsumexp(np.stack(parts), axis=0)

    return SimpleNamespace(rank=2, offset=0.0, log_joint=log_joint,
                           theta=lambda s, perm, rng: np.log(s[0][:, perm]).ravel())


def _check(monkeypatch, prior_mode_of_starts, seed=0):
    """``bridge_check`` with the SMC's one mode (mode 0) and one prior-chain "mode" whose
    reference is mode 1's mean and whose chains start in ``prior_mode_of_starts``."""
    refs = _unit_l2(np.stack(_MUS))
    monkeypatch.setattr(mb, "bridge_parametrisation", lambda model, family: _param())
    monkeypatch.setattr(mb, "prior_chain_modes", lambda *a, **k: (
        refs[1:], [[[_MUS[prior_mode_of_starts].copy(), prior_mode_of_starts]]],
        np.array([-1]), 0.0))
    states = [[_MUS[0].copy(), 0]]
    return mb.bridge_check(None, _family(), states, np.array([0]), np.ones(1),
                           {"reference": refs[:1], "cut": _CUT}, math.log(2) + math.log(0.5),
                           0.05, np.random.default_rng(seed), n_chains=2, n_draws=400, thin=1,
                           prior_chains=1)


def test_a_prior_chain_on_its_way_into_an_smc_mode_is_joined_to_it(monkeypatch):
    """All the transient's bridge draws leave it for mode 0: joined, no failure, and the total
    is mode 0's (log 2! + log 1/2), not failed by a "mode" that holds nothing."""
    mass, se, extra, reasons, details = _check(monkeypatch, 0)
    assert details["joined_prior_modes"] == [(1, 0)]
    assert extra == [] and reasons == [], reasons
    assert abs(details["log_z_total"] - (math.log(2) + math.log(0.5))) \
        <= 4 * details["log_z_total_se"], (details["log_z_total"], details["log_z_total_se"])
    assert np.allclose(mass, [1.0])


def test_a_real_second_mode_from_the_prior_chains_is_kept(monkeypatch):
    """The prior chains' mode holds its chains (none leave): kept, mass one half each."""
    mass, se, extra, reasons, details = _check(monkeypatch, 1)
    assert details["joined_prior_modes"] == []
    assert len(extra) == 1 and abs(extra[0][0] - mass[0]) <= 4 * 2 * extra[0][1] + 1e-12
    assert abs(details["log_z_total"] - math.log(2)) <= 4 * details["log_z_total_se"]


def test_bridge_masses_reports_where_the_leaving_draws_went():
    """``into[k, j]``: the share of mode k's draws within the cut of mode j."""
    refs = _unit_l2(np.stack(_MUS))
    start = [_MUS[0].copy(), 0]
    out = mb.bridge_masses(_family(), _param(), refs, [[start], [start]],
                           np.random.default_rng(1), cut=_CUT, n_chains=2, n_draws=50, thin=1,
                           n_burn=2)
    assert out["left"].tolist() == [0.0, 1.0]
    assert math.isclose(out["into"][1, 0], 1.0) and out["into"][0, 1] == 0.0


def test_the_transient_rule_needs_nearly_all_draws_gone_into_an_smc_mode():
    """Joined only when more than 95 % of the draws left and most went into one SMC mode: not a
    mode that holds half its chains, not one whose draws went nowhere known or into another
    prior-chain mode."""
    into = np.zeros((4, 4))
    into[2, 0], into[3, 2] = 0.97, 0.97
    assert mb.transient_prior_modes([0.0, 0.0, 0.97, 1.0], into, 2) == [(2, 0)]
    assert mb.transient_prior_modes([0.0, 0.0, 0.5, 0.0], into, 2) == []
    into[2, 0] = 0.3
    assert mb.transient_prior_modes([0.0, 0.0, 1.0, 0.0], into, 2) == []


def test_the_sized_bridge_draws_stay_within_the_budget_left():
    """The warped bridge's draws per chain grow with the dimension (``dim (dim + 1) / (8
    chains)``) up to the per-mode cap, and to the CPU budget left shared among the modes still
    to estimate: with almost nothing left a chain keeps ``n_draws``, never more."""
    import time

    from bnmfzoo.inference._mass_budget import budget_scope

    refs = _unit_l2(np.stack(_MUS))
    param = _param()
    param.warp, param.dim = True, 60  # wants ceil(60 * 61 / 16) = 229 draws per chain

    def draws(scope_left):
        kw = dict(cut=_CUT, n_chains=2, n_draws=40, thin=1, n_burn=5)
        starts = [[[_MUS[0].copy(), 0]], [[_MUS[1].copy(), 1]]]
        if scope_left is None:
            out = mb.bridge_masses(_family(), param, refs, starts, np.random.default_rng(0), **kw)
        else:
            with budget_scope(100.0, start=time.process_time() - (100.0 - scope_left)):
                out = mb.bridge_masses(_family(), param, refs, starts, np.random.default_rng(0),
                                       **kw)
        return out["draws_per_chain"].tolist()

    assert draws(None) == [229, 229]
    assert draws(1e-4) == [40, 40]
