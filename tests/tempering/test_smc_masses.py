"""``bnmfzoo.inference.smc_mode_masses``: what it returns, and one clear error per bad input."""

import numpy as np
import pytest

from bnmfzoo.inference import smc_mode_masses
from bnmfzoo.inference.smc_masses import ais_schedule


@pytest.fixture(scope="module")
def poisson_out():
    from bnmfzoo.models import poisson

    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    return smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2, check_runs=8,
                           check_refine=2, random_seed=0)


def test_result_has_masses_members_interval_estimator_and_statement(poisson_out):
    out = poisson_out
    modes = out["modes"]
    mass = np.array([m["mass"] for m in modes])
    assert np.all(np.diff(mass) <= 1e-12) and abs(mass.sum() - 1.0) < 1e-9
    for m in modes:
        assert m["estimator"] in ("smc", "smc_not_reached")
        assert m["check_estimator"] == "reference_path"  # the default check="auto" for Poisson
        assert m["low"] <= m["mass"] <= m["high"]
        assert m["A"].shape == (m["n_members"], 6, 2) and m["W"].shape == (m["n_members"], 2, 5)
        assert abs(m["member_weight"].sum() - m["mass"]) < 1e-9
    assert abs(sum(m["mass_check"] for m in modes) - 1.0) < 1e-9 or not out["established"]
    assert "unknown, not zero" in out["statement"]
    assert isinstance(out["established"], bool) and np.isfinite(out["log_z"])


def test_same_seed_same_masses(poisson_out):
    from bnmfzoo.models import poisson

    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    again = smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2, check_runs=8,
                            check_refine=2, random_seed=0)
    assert [m["mass"] for m in again["modes"]] == [m["mass"] for m in poisson_out["modes"]]


def test_without_a_check_nothing_is_established():
    from bnmfzoo.models import beta_dir

    V = (np.random.default_rng(1).random((5, 4)) < 0.4).astype(int)
    out = smc_mode_masses(beta_dir(V, 2), n_runs=2, n_particles=10, n_moves=1, check_runs=0,
                          random_seed=0)
    assert not out["established"] and "no check was run" in out["statement"]


def test_the_ais_check_is_still_available():
    from bnmfzoo.models import poisson

    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    out = smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2, check="ais",
                          check_runs=8, check_refine=2, random_seed=0)
    assert all(m["check_estimator"] == "ais_prior" for m in out["modes"])
    assert out["bridge"] is None
    with pytest.raises(ValueError, match="check must be"):
        smc_mode_masses(poisson(X, 2), check="bogus")
    assert "NOT established" in out["statement"]


def test_a_failed_bridge_compares_no_masses_and_advises_the_bridge(monkeypatch):
    """A bridge that failed on a mode (no overlap) gives no check masses (not 0 with a NaN
    error, compared with the SMC's) and the advice names the bridge, not only more SMC."""
    import math

    from bnmfzoo.inference import mode_bridge
    from bnmfzoo.inference.bridge import BridgeEstimate
    from bnmfzoo.models import poisson

    monkeypatch.setattr(mode_bridge, "split_fit_bridge",
                        lambda *a, **k: BridgeEstimate(-1.0, math.inf, 1, 300, 300, 1.0,
                                                       (1.0, 1.0)))
    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    out = smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2, check="bridge",
                          check_runs=2, bridge_chains=2, bridge_draws=20, prior_chains=0,
                          random_seed=0)
    assert not out["established"]
    assert all(np.isnan(m["mass_check"]) for m in out["modes"] if m["estimator"] == "smc")
    assert "vs bridge" not in out["statement"], out["statement"]
    assert "the bridge failed" in out["statement"] and "bridge_draws" in out["statement"]


def test_ais_schedule_refines_the_smc_schedule():
    s = ais_schedule([0.0, 0.1, 0.4, 1.0], 3)
    assert s.size == 9 and s[-1] == 1.0 and np.all(np.diff(s) > 0)
    assert np.allclose(s[2::3], [0.1, 0.4, 1.0])


@pytest.mark.parametrize("kwargs, match", [
    ({"n_runs": 1}, "n_runs"), ({"n_particles": 1}, "n_particles"),
    ({"check_runs": 1}, "check_runs"), ({"budget_s": -1}, "budget_s"),
    ({"budget_s": 1e-4}, "budget_s = 0.0001 CPU s is too small"),
])
def test_bad_settings_raise_one_clear_error(kwargs, match):
    from bnmfzoo.models import poisson

    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    with pytest.raises(ValueError, match=match):
        smc_mode_masses(poisson(X, 2), **kwargs)


def test_unsupported_models_are_named():
    from bnmfzoo.models import exponential_gaussian

    with pytest.raises(TypeError, match="pymc.Model"):
        smc_mode_masses(np.ones((3, 3)))
    with pytest.raises(ValueError, match="fixed rates"):
        smc_mode_masses(exponential_gaussian(np.ones((4, 3)), 2, ard=True))


def test_a_failed_check_leaves_no_check_mass_on_the_modes_only_plain_chains_found():
    """A check that failed on a mode only plain chains from the prior found makes every check
    mass unknown, the SMC's modes' included, and a failure on an SMC mode makes the extra
    modes' unknown too (their shares would be among the modes it did estimate)."""
    import math

    from bnmfzoo.inference._mass_verdict import failed_check_unknown_all

    m, s, extra = failed_check_unknown_all([0.7, 0.3], [0.05, 0.05], [(0.0, math.nan)])
    assert np.all(np.isnan(m)) and np.all(np.isnan(s)) and np.all(np.isnan(extra[0]))
    m, s, extra = failed_check_unknown_all([1.0, 0.0], [0.0, math.nan], [(0.2, 0.1)])
    assert np.all(np.isnan(m)) and np.all(np.isnan(extra[0]))
    m, s, extra = failed_check_unknown_all([0.6, 0.3], [0.05, 0.05], [(0.1, 0.02)])
    assert m.tolist() == [0.6, 0.3] and s.tolist() == [0.05, 0.05] and extra == [(0.1, 0.02)]
    assert failed_check_unknown_all([0.6], [0.1], None)[2] is None


@pytest.mark.parametrize("model, expected", [("poisson", 50), ("negative_binomial", 50),
                                             ("exponential_gaussian", 50), ("beta_dir", 2)])
def test_a_count_modes_width_is_measured_over_more_sweeps(monkeypatch, model, expected):
    """The within-mode angle that sets the clustering cut is measured ``n_moves`` sweeps
    apart, but at least :data:`~bnmfzoo.inference.smc_masses.WIDTH_SWEEPS` for count and
    Gaussian models (whose sweeps move a broad mode's factors slowly: at 2 sweeps the cut split
    breast SBS96's one NB mode into 27, an over-ranked Poisson ridge into 164, and at 10 an
    over-ranked Gaussian ridge into 2-6). Deterministic (the sweeps asked for are recorded)."""
    import bnmfzoo.inference.smc_masses as sm
    from bnmfzoo.models import beta_dir, exponential_gaussian, negative_binomial, poisson

    seen = []

    def record(family, states, weights, n_moves, rng):
        seen.append(n_moves)
        return 1.0

    monkeypatch.setattr(sm, "_within_mode_angle", record)
    X = np.random.default_rng(0).poisson(3.0, (5, 4))
    make = {"poisson": poisson, "negative_binomial": negative_binomial,
            "exponential_gaussian": lambda X, K: exponential_gaussian(X.astype(float), K, sigma=1.0,
                                                                  lambda_=1.0),
            "beta_dir": lambda X, K: beta_dir((X > 2).astype(float), K)}[model]
    sm.smc_mode_masses(make(X, 2), n_runs=2, n_particles=10, n_moves=2, check=None,
                       random_seed=0)
    assert seen == [expected]


def test_overlapping_label_copies_advise_the_rank_or_the_model_not_more_smc():
    """laurberg's 6 x 6 matrix under the command's default model: 79 % of the mode's draws sat
    on another label copy, and the advice asked for more SMC, which does not change that."""
    from bnmfzoo.inference._mass_verdict import CopiesOverlap, advice, check_reasons

    reasons = check_reasons("reference path", [-26.3], [0.0], -24.5, 0.2, -26.2, 0.01,
                            left_what="chain draws or path particles", swapped=[0.79],
                            one_sided=True)
    assert len(reasons) == 1 and isinstance(reasons[0], CopiesOverlap)
    text = advice(reasons, "reference")
    assert "lower rank" in text and "more SMC runs" not in text
    both = advice(reasons + ["the runs' log Z disagree (sd 3.10 nats)"], "reference")
    assert "lower rank" in both and "more SMC runs" in both
