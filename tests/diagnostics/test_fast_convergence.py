"""The vectorized rank-normalized R-hat and bulk ESS are arviz-stats' numbers, entry by entry.

``rhat_ess_bulk`` computes all entries at once (one ranking, one FFT, Geyer's sequences as array
operations); arviz-stats loops over entries. Both do the same floating-point operations up to
summation order, so they agree to rounding: measured max |difference| 0 for R-hat and 2e-14
relative for ESS on AR(1) chains (lags from -0.5 to 0.99, so Geyer's truncation and the
monotone correction both act), and 0 / 5e-12 absolute on the aligned Gibbs chains of CCLE,
breast SBS96 and a synthetic matrix (the default-budget study in ``docs/results``). The
tolerance 1e-9 relative is far above rounding and far below any difference that matters for a
1.01 / 400 threshold; nothing random is compared, so the test cannot fail by chance.
"""

import warnings

import numpy as np
import pytest
import xarray as xr

from bnmfzoo.diagnostics._convergence import rhat_ess_bulk

azs = pytest.importorskip("arviz_stats")


def _arviz(x):
    ds = xr.Dataset({"v": (("chain", "draw", "entry"), x)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = azs.rhat(ds, sample_dims=["chain", "draw"])["v"].values
        e = azs.ess(ds, sample_dims=["chain", "draw"], method="bulk")["v"].values
    return r, e


def _chains(C, S, E, seed):
    """AR(1) chains, lag from -0.5 to 0.99; a third with shifted chains; ties, a constant, NaN."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(-0.5, 0.99, E)
    x = np.zeros((C, S, E))
    eps = rng.standard_normal((C, S, E))
    for t in range(S):
        x[:, t] = (phi * x[:, t - 1] if t else 0.0) + eps[:, t]
    x += rng.normal(0.0, 0.5, (C, 1, E)) * (rng.random(E) < 0.3)
    x[..., :3] = np.round(x[..., :3])  # many ties
    x[..., 3] = 1.5  # constant draws
    x[0, 0, 4] = np.nan
    return x


@pytest.mark.parametrize("C,S", [(2, 400), (4, 101), (1, 150), (3, 33), (2, 4), (2, 7)])
def test_matches_arviz_stats_entry_by_entry(C, S):
    x = _chains(C, S, 60, seed=C * 1000 + S)
    r0, e0 = _arviz(x)
    r1, e1 = rhat_ess_bulk(x)
    np.testing.assert_array_equal(np.isnan(r1), np.isnan(r0))
    np.testing.assert_array_equal(np.isnan(e1), np.isnan(e0))
    np.testing.assert_allclose(r1, r0, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(e1, e0, rtol=1e-9, equal_nan=True)
    assert np.isnan(e1[4]) and e1[3] == 2 * C * (S // 2)  # NaN draw; constant: the draw count
    assert (C < 2) == bool(np.isnan(r1).all())


def test_trailing_shape_and_short_chains():
    x = _chains(2, 50, 12, seed=1).reshape(2, 50, 3, 4)
    r, e = rhat_ess_bulk(x)
    assert r.shape == e.shape == (3, 4)
    r, e = rhat_ess_bulk(x[:, :3])  # fewer than 4 draws: undefined, as in arviz-stats
    assert np.isnan(r).all() and np.isnan(e).all()
    with pytest.raises(ValueError, match="draws"):
        rhat_ess_bulk(np.zeros(5))


def test_chains_in_different_places_and_mixed_chains():
    # two chains stuck apart: R-hat far above 1.01 and ESS tiny; i.i.d. chains: neither
    rng = np.random.default_rng(3)
    apart = rng.standard_normal((2, 300, 5)) + np.array([0.0, 3.0])[:, None, None]
    r, e = rhat_ess_bulk(apart)
    assert (r > 1.5).all() and (e < 50).all()
    r, e = rhat_ess_bulk(rng.standard_normal((2, 300, 5)))
    assert (r < 1.05).all() and (e > 300).all()


@pytest.mark.slow  # a Gibbs fit (PyMC's import and compile dominate: ~10 s)
def test_real_aligned_chains_match_arviz_stats():
    # the draws the estimator's check reads: the heaviest mode's aligned, balanced A and W
    from bnmfzoo import BayesianNMF
    from bnmfzoo.diagnostics._modes import alignment

    rng = np.random.default_rng(7)
    X = rng.gamma(2.0, 1.0, (30, 3)) @ rng.gamma(2.0, 1.0, (3, 20))
    X = X + 0.5 * rng.standard_normal(X.shape)
    seen = {}
    orig = alignment.convergence_message

    def capture(post, fdims, **kw):
        seen["post"] = post
        return orig(post, fdims, **kw)

    alignment.convergence_message = capture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            BayesianNMF(n_components=3, draws=150, tune=50, random_state=0).fit(X)
    finally:
        alignment.convergence_message = orig
    for v in ("A", "W"):
        x = seen["post"][v].values
        x = x.reshape(*x.shape[:2], -1)
        r0, e0 = _arviz(x)
        r1, e1 = rhat_ess_bulk(x)
        np.testing.assert_allclose(r1, r0, rtol=1e-9, equal_nan=True)
        np.testing.assert_allclose(e1, e0, rtol=1e-9, equal_nan=True)


def test_entries_in_groups_give_the_same_numbers(monkeypatch):
    # the entries are computed in groups of about CHUNK_VALUES draws (bounded memory)
    from bnmfzoo.diagnostics import _convergence

    x = _chains(2, 100, 40, seed=5)
    whole = rhat_ess_bulk(x)
    monkeypatch.setattr(_convergence, "CHUNK_VALUES", 7 * 200)  # groups of 7 entries
    for a, b in zip(whole, rhat_ess_bulk(x)):
        np.testing.assert_array_equal(a, b)
