"""The Gram-matrix half-sweep of the NMF Gibbs/ICM sampler against the residual path.

Both paths make the same updates in the same order and consume the generator identically, so
from the same start and seed they must produce the same chain; the only difference is
floating-point rounding (sums over entries in a different order), which stays at the 1e-12
level over a few sweeps of a well-conditioned problem. Their distributional correctness is
checked separately by SBC on each path (``test_gibbs_sbc.py``).
"""

from dataclasses import replace

import numpy as np
import pytest

from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.gibbs._gram import missing_patterns, pattern_grams
from bnmfzoo.models._spec import GaussianHyper

HYPER = GaussianHyper(lambda_A=0.1, lambda_W=0.1, alpha_tau=1.0, beta_tau=1.0, sigma=None,
                      ard=False,
             alpha0=1.0, beta0=1.0)


def _block_missing(seed=0, D=30, N=12, R=3):
    """Low-rank data with block-missing columns (like drugs screened on subsets of rows)."""
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(D, R)) @ rng.exponential(size=(R, N)) + rng.normal(0, 0.3, (D, N))
    X = np.abs(X)
    X[: D // 3, : N // 4] = np.nan  # a block
    X[rng.random((D, N)) < 0.05] = np.nan  # and a few scattered entries
    return X


def test_pattern_grams_equal_direct_products():
    X = _block_missing()
    observed = ~np.isnan(X)
    mp = missing_patterns(X, observed)
    assert 1 < mp.n_patterns < X.shape[0]
    assert (mp.delta_sign < 0).any()  # some Gram matrices are built by subtraction
    V = np.random.default_rng(1).exponential(size=(4, X.shape[1]))
    G = pattern_grams(V, mp)
    for i in range(X.shape[0]):
        Vi = V[:, observed[i]]
        np.testing.assert_allclose(G[mp.pattern_of[i]], Vi @ Vi.T, rtol=1e-13)
    np.testing.assert_array_equal(mp.xm, np.where(observed, X, 0.0))


@pytest.mark.parametrize("variant", ["plain", "ard", "sigma"])
def test_gram_and_residual_paths_give_the_same_chain(variant):
    X = _block_missing()
    obs = gc.observed_entries(X)
    hyper = replace(HYPER, ard=variant == "ard", sigma=0.5 if variant == "sigma" else None)
    rng = np.random.default_rng(2)
    A0, W0 = rng.exponential(size=(X.shape[0], 3)), rng.exponential(size=(3, X.shape[1]))
    lam0 = np.ones(3) if hyper.ard else None
    chains = {}
    for kernel in ("gram", "residual"):
        st = gc.nmf_state(A0, W0, 1.0, lam0, obs)
        gen = np.random.default_rng(3)
        trace = []
        for _ in range(10):
            gc.nmf_sweep(st, obs, hyper, gen, kernel=kernel)
            trace.append(np.concatenate([st.A.ravel(), st.W.ravel(), [st.tau, st.sse]]))
        chains[kernel] = np.array(trace)
        # both generators consumed the same number of draws
        chains[kernel + " next"] = gen.random()
    np.testing.assert_allclose(chains["gram"], chains["residual"], rtol=1e-9)
    assert chains["gram next"] == chains["residual next"]


def test_sse_after_gram_sweeps_matches_the_residual():
    X = _block_missing(seed=4)
    obs = gc.observed_entries(X)
    st = gc.nmf_state(np.ones((X.shape[0], 3)), np.ones((3, X.shape[1])), 1.0, None, obs)
    gen = np.random.default_rng(0)
    for _ in range(5):
        gc.nmf_sweep(st, obs, HYPER, gen, kernel="gram")
    sse = st.sse
    st._sse = None
    st._resid = None  # recompute from scratch
    assert sse == pytest.approx(st.sse, rel=1e-10)
    assert st.train_mse() == pytest.approx(np.nanmean((X - st.A @ st.W) ** 2), rel=1e-10)


def test_auto_picks_gram_for_block_missing_and_residual_for_scattered():
    rng = np.random.default_rng(0)
    dense = gc.observed_entries(_block_missing(D=200, N=60))
    scattered = np.where(rng.random((200, 300)) < 0.05, 1.0, np.nan)
    assert dense.half_sweep_paths(10) == ("gram", "gram")
    assert gc.observed_entries(scattered).half_sweep_paths(10) == ("residual", "residual")


def test_unknown_kernel_is_refused():
    X = _block_missing()
    obs = gc.observed_entries(X)
    st = gc.nmf_state(np.ones((X.shape[0], 2)), np.ones((2, X.shape[1])), 1.0, None, obs)
    with pytest.raises(ValueError, match="kernel"):
        gc.nmf_sweep(st, obs, HYPER, np.random.default_rng(0), kernel="dense")


def _tree_masks(mp):
    """Rebuild each pattern's mask by walking the tree from the root (checks order/parents)."""
    built = {}
    for p in mp.tree_order:
        q = mp.tree_parent[p]
        base = built[q].copy() if q >= 0 else np.zeros(mp.masks.shape[1])
        sl = slice(mp.delta_ptr[p], mp.delta_ptr[p + 1])
        np.add.at(base, mp.delta_pos[sl], mp.delta_sign[sl])
        built[p] = base
    return np.array([built[p] for p in range(mp.n_patterns)])


def test_pattern_tree_spans_every_pattern_and_saves_terms():
    X = _block_missing(D=60, N=20)
    mp = missing_patterns(X, ~np.isnan(X))
    assert sorted(mp.tree_order.tolist()) == list(range(mp.n_patterns))
    # walking parent -> child add/remove lists reproduces every mask exactly
    np.testing.assert_array_equal(_tree_masks(mp), mp.masks)
    # the tree never costs more than summing each pattern from the root, and here it saves
    assert mp.n_tree_entries < mp.masks.sum()
    assert (mp.delta_sign < 0).any()  # the test below exercises subtraction too


def test_star_tree_fallback_gives_the_same_grams(monkeypatch):
    from bnmfzoo.inference.gaussian.gibbs import _gram as gg

    X = _block_missing(D=60, N=20)
    observed = ~np.isnan(X)
    V = np.random.default_rng(5).exponential(size=(4, X.shape[1]))
    tree = missing_patterns(X, observed)
    monkeypatch.setattr(gg, "MAX_TREE_WORK", 0)
    star = missing_patterns(X, observed)
    assert (star.tree_parent == -1).all()
    assert star.n_tree_entries == star.masks.sum()
    np.testing.assert_array_equal(_tree_masks(star), star.masks)
    # built along different trees: equal to rounding (sums of ~20 positive terms)
    np.testing.assert_allclose(pattern_grams(V, tree), pattern_grams(V, star), rtol=1e-13)


@pytest.mark.parametrize("shape", [(200, 100), (1000, 500)])
@pytest.mark.parametrize("frac", [0.2, 0.5])
def test_auto_takes_the_residual_path_for_randomly_missing_data(shape, frac):
    # Measured (benchmarks/speed/gibbs_paths.py): with every row its own pattern the Gram
    # path was 2.3-7.4x slower than the residual path at these sizes and fractions, ranks 10-20
    # (at rank 4 on 200 x 100 both take about 0.3 ms and either choice is fine).
    rng = np.random.default_rng(1)
    X = np.where(rng.random(shape) < frac, 1.0, np.nan)
    X[:, 0] = 1.0
    for rank in (10, 20):
        assert gc.observed_entries(X).half_sweep_paths(rank) == ("residual", "residual")
