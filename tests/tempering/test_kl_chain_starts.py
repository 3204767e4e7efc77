"""The mode search's chain starts: KL-refined prior draws, the best by log joint (counts).

:func:`bnmfzoo.inference.mode_bridge.chain_starts` moves ``n_candidates`` exact prior draws by
KL multiplicative updates and starts the plain chains of
:func:`~bnmfzoo.inference.mode_bridge.prior_chain_modes` from the ``n_chains`` with the highest
log joint; other families keep exact prior draws. The starts only find modes (every mode found
is estimated from its own chains by the per-mode estimators), so the tests check what the
starts are and that they reach the heaviest mode, not a distribution.

**Real data** (:func:`test_kl_started_chains_reach_the_heaviest_mode_of_a_reuters_corner`): on
the 30 x 20 corner of Reuters (the 30 longest documents, their 20 most frequent words), rank
3, the posterior has many modes (14 among the 32 chains of 1,000 sweeps from prior draws that
find the reference); the best by chain-end log joint, reached by 6 of them, lies 30 nats above
the next. Eight chains of 100 sweeps from the KL starts must reach it on each
of 4 seeds. Measured once (searches with seeds 0-59, the test's chains): the KL starts reached
it in 60 of 60 searches, exact prior draws (``n_candidates=0``) in 37 of 60, so plain prior
chains miss it in about 4 searches of 10. False failures, measured once over searches with seeds
0-239 (60 runs of the test's 4 searches): the KL starts reached it in 240 of 240, so 0 of 60
runs failed.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from bnmfzoo.inference.counts._kl_start import kl_nmf_start
from bnmfzoo.inference.mode_bridge import _CountParam, chain_starts, prior_chain_modes


def _family(X, rank, model="poisson"):
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import negative_binomial, poisson

    make = poisson if model == "poisson" else negative_binomial
    return family_of_model(make(np.asarray(X, float), rank))


def _log_joint(param, states):
    return param.log_joint(np.stack([param.theta(s, np.arange(param.rank), None)
                                     for s in states]))


@pytest.mark.parametrize("model", ["poisson", "negative_binomial"])
def test_kl_starts_are_the_best_of_the_refined_prior_draws(model):
    """Deterministic: the starts are the ``n_chains`` KL-refined prior draws of highest log
    joint (the NB's at the dispersion each draw has), best first, each near a fixed point of
    the KL updates and above every raw draw."""
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0 * rng.gamma(0.5, 1.0, (12, 2)) @ rng.gamma(0.5, 1.0, (2, 9)))
    fam = _family(X, 2, model)
    p = fam.tempered.problem
    starts = list(chain_starts(fam, np.random.default_rng(5), 3, n_candidates=10, n_kl=60))
    # the same random numbers, by hand: 10 prior draws, each refined, ranked by log joint
    again = np.random.default_rng(5)
    raw = [fam.draw_prior(again) for _ in range(10)]
    refined = [kl_nmf_start(p, s, 60) for s in raw]
    param = _CountParam(p)
    lj_raw, lj_ref = _log_joint(param, raw), _log_joint(param, refined)
    best = np.argsort(-lj_ref)[:3]
    assert len(starts) == 3
    for s, i in zip(starts, best, strict=True):
        np.testing.assert_array_equal(s["A"], refined[i]["A"])
        np.testing.assert_array_equal(s["W"], refined[i]["W"])
    lj = _log_joint(param, starts)
    assert np.all(np.diff(lj) <= 0) and lj[-1] >= np.sort(lj_ref)[-3], (lj, lj_ref)
    assert lj[-1] > lj_raw.max(), (lj, lj_raw)  # the KL updates' result is what starts
    for s in starts:  # near a fixed point: 20 more updates move the log joint little
        assert _log_joint(param, [kl_nmf_start(p, s, 20)])[0] - _log_joint(param, [s])[0] < 1.0


def test_other_families_and_too_few_candidates_start_from_exact_prior_draws():
    """A family without a Poisson problem, or fewer candidates than chains: the prior draws
    themselves, in order (the random numbers of ``draw_prior`` only)."""
    fam = SimpleNamespace(name="exponential_gaussian", tempered=SimpleNamespace(),
                          draw_prior=lambda rng: {"A": rng.gamma(1.0, 1.0, (3, 2))})
    got = chain_starts(fam, np.random.default_rng(2), 4)
    again = np.random.default_rng(2)
    for s in got:
        np.testing.assert_array_equal(s["A"], fam.draw_prior(again)["A"])
    # drawn when each chain starts, after the previous chain's sweeps (the search's random
    # numbers before KL starts existed, so the other families' masses are unchanged)
    rng, again = np.random.default_rng(4), np.random.default_rng(4)
    for s in chain_starts(fam, rng, 3):
        np.testing.assert_array_equal(s["A"], fam.draw_prior(again)["A"])
        rng.normal(size=7)  # the chain's sweeps
        again.normal(size=7)
    rng = np.random.default_rng(0)
    pois = _family(rng.poisson(2.0, (6, 5)), 2)
    got = chain_starts(pois, np.random.default_rng(3), 4, n_candidates=2)
    again = np.random.default_rng(3)
    for s in got:
        np.testing.assert_array_equal(s["A"], pois.draw_prior(again)["A"])
    # a prior that differs between components has no symmetric log joint to rank by: prior
    # draws, not an error
    import dataclasses

    p = pois.tempered.problem
    aA = np.array(p.aA, float, copy=True)
    aA[:, 1] *= 2.0
    odd = SimpleNamespace(name="poisson", draw_prior=pois.draw_prior,
                          tempered=SimpleNamespace(problem=dataclasses.replace(p, aA=aA)))
    again = np.random.default_rng(6)
    for s in chain_starts(odd, np.random.default_rng(6), 3):
        np.testing.assert_array_equal(s["A"], pois.draw_prior(again)["A"])


def _reuters_corner(data_home):
    from bnmfzoo.datasets import load_reuters

    X = np.asarray(load_reuters(data_home=data_home).values, float)
    X = X[np.argsort(-X.sum(1), kind="stable")[:30]]
    return X[:, np.argsort(-X.sum(0), kind="stable")[:20]]


def _heaviest_mode(fam, cut):
    """Of the modes 32 long plain chains from prior draws reach (``n_candidates=0``: not the
    KL starts), the one with the highest chain-end log joint."""
    D, K = fam.tempered.problem.shape[0], fam.tempered.problem.rank
    far = np.zeros((1, D, K))
    far[0, :K, :] = np.eye(K)  # a reference no chain reaches: every chain's mode is "new"
    refs, states, near, _ = prior_chain_modes(fam, far, cut, np.random.default_rng(999),
                                              n_chains=32, n_sweeps=1000, n_candidates=0)
    assert np.all(near == -1)
    param = _CountParam(fam.tempered.problem)
    return refs[int(np.argmax([_log_joint(param, g).max() for g in states]))][None]


@pytest.mark.parametrize("seed", [0])
def test_kl_started_chains_reach_the_heaviest_mode_of_a_reuters_corner(data_home, seed):
    fam = _family(_reuters_corner(data_home), 3)
    ref = _heaviest_mode(fam, 15.0)
    for s in range(4 * seed, 4 * seed + 4):
        _, _, near, _ = prior_chain_modes(fam, ref, 15.0, np.random.default_rng(s), n_chains=8,
                                          n_sweeps=100)
        assert np.any(near == 0), (s, near)


def test_without_references_every_chain_mode_is_new():
    """Deterministic: with no reference modes (a search started from the KL-refined chains
    alone), the chains group as they do against a reference none of them reaches, from the
    same random numbers."""
    rng = np.random.default_rng(1)
    X = rng.poisson(3.0 * rng.gamma(0.5, 1.0, (12, 2)) @ rng.gamma(0.5, 1.0, (2, 9)))
    fam = _family(X, 2)
    far = np.zeros((1, 12, 2))
    far[0, :2, :] = np.eye(2)
    kw = dict(n_chains=4, n_sweeps=20, n_candidates=6, n_kl=20)
    none = prior_chain_modes(fam, np.zeros((0, 12, 2)), 15.0, np.random.default_rng(3), **kw)
    with_far = prior_chain_modes(fam, far, 15.0, np.random.default_rng(3), **kw)
    assert np.all(none[2] == -1) and np.all(with_far[2] == -1)
    np.testing.assert_allclose(none[0], with_far[0])
    assert [len(g) for g in none[1]] == [len(g) for g in with_far[1]]
    assert sum(len(g) for g in none[1]) == 4
