"""Sparse (``scipy.sparse``) and long-format input for the Gaussian family, end to end.

The entries of a :class:`~bnmfzoo._base.entries.LongMatrix` are in the same row-major order as the
observed entries of the equivalent dense matrix with NaN, and every sparse-aware code path does
the same floating-point operations in the same order, so the same seed must give **bitwise**
the same draws (Gibbs through ``pm.sample``) and the same VB fit. Which path a model takes
depends on the data, not on the form they came in: recognition keeps dense ``X``/``mask``
arrays when at least ``DENSE_MIN_FRACTION`` (1/8) of the entries are observed, else long-format
entries with :class:`DenseOnDemand` views. The fixture's data are 40 % observed, so the tests
of the long path lower that threshold (fixture ``long_path``) and compare with the dense path
at the default. The memory test runs the whole
path on a 20,000 x 20,000 matrix with 0.05 % observed, where one dense float64 copy would take
3.2 GB.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import scipy.sparse as sp
import xarray as xr

import bnmfzoo as bz
from bnmfzoo._base.entries import DenseOnDemand
from bnmfzoo._base.validation import check_entries
from bnmfzoo._terms._pairs import pair_product
from bnmfzoo._terms.gaussian import mean_path, observed_mean
from bnmfzoo.inference import GibbsNMF, GibbsNMTF, fit_vb
from bnmfzoo.models import exponential_gaussian, tri_exponential_gaussian
from bnmfzoo.models._spec import find_spec

D, N = 30, 20
ROW = np.array([f"cell{i:02d}" for i in range(D)])
COL = np.array([f"drug{j:02d}" for j in range(N)])


@pytest.fixture(scope="module")
def data():
    """Dense labelled data with NaN (60 % missing, one explicit zero) and its sparse forms."""
    rng = np.random.default_rng(5)
    X = rng.exponential(size=(D, 3)) @ rng.exponential(size=(3, N)) + rng.normal(0, 0.3, (D, N))
    X[rng.random(X.shape) < 0.6] = np.nan
    X[np.arange(D), np.arange(D) % N] = 1.0  # every row and column observed
    X[0, 0] = 0.0  # an observed zero: must stay observed in sparse form
    rows, cols = np.nonzero(~np.isnan(X))
    values = X[rows, cols]
    dense = xr.DataArray(X, dims=("row", "col"), coords={"row": ROW, "col": COL})
    shuffle = np.random.default_rng(0).permutation(rows.size)  # order must not matter
    frame = pd.DataFrame({"row": ROW[rows][shuffle], "col": COL[cols][shuffle],
                          "value": values[shuffle]})
    csr = sp.csr_array((values, (rows, cols)), shape=(D, N))
    return dict(
        dense=dense,
        frame=bz.long_format(frame),
        arrays=bz.long_format(ROW[rows], COL[cols], values),
        scipy=bz.long_format(csr, row_labels=ROW, col_labels=COL),
        csr=csr,
    )


FORMS = ("frame", "arrays", "scipy")


def _use_long_path(monkeypatch):
    """Recognition keeps long-format entries for any data with a missing entry."""
    import bnmfzoo.models._observed as observed

    monkeypatch.setattr(observed, "DENSE_MIN_FRACTION", 1.0)


@pytest.fixture
def long_path(monkeypatch):
    _use_long_path(monkeypatch)


def _gibbs(model, step):
    with model:
        return pm.sample(draws=15, tune=5, chains=1, step=step(), random_seed=7,
                         progressbar=False, compute_convergence_checks=False)


@pytest.mark.parametrize("form", FORMS)
def test_gibbs_nmf_bitwise_equal_to_dense(data, form, monkeypatch):
    ref = _gibbs(exponential_gaussian(data["dense"], 3), GibbsNMF)
    assert not find_spec(exponential_gaussian(data[form], 3)).entries  # 40 %: dense path
    _use_long_path(monkeypatch)
    model = exponential_gaussian(data[form], 3)
    assert find_spec(model).entries is not None
    res = _gibbs(model, GibbsNMF)
    for v in ("A", "W", "tau"):
        np.testing.assert_array_equal(res["posterior"][v].values, ref["posterior"][v].values)
    assert res["posterior"]["row"].values.tolist() == ROW.tolist()
    assert res["posterior"]["col"].values.tolist() == COL.tolist()


def test_gibbs_nmtf_and_plain_scipy_bitwise(data, monkeypatch):
    """Unlabelled scipy input equals the unlabelled dense array (integer labels)."""
    dense = data["dense"].values
    ref = _gibbs(tri_exponential_gaussian(dense, (2, 3)), GibbsNMTF)
    _use_long_path(monkeypatch)
    res = _gibbs(tri_exponential_gaussian(data["csr"], (2, 3)), GibbsNMTF)
    for v in ("F", "S", "G", "tau"):
        np.testing.assert_array_equal(res["posterior"][v].values, ref["posterior"][v].values)
    assert res["posterior"]["row"].values.tolist() == list(range(D))


@pytest.mark.parametrize("tri", [False, True])
def test_vb_bitwise_equal_and_long_observed_data(data, tri, monkeypatch):
    def make(X):
        return tri_exponential_gaussian(X, (2, 2)) if tri else exponential_gaussian(X, 3)

    ref = fit_vb(make(data["dense"]), max_iter=15, n_draws=10, random_seed=3, progressbar=False)
    assert ref["observed_data"]["X"].dims == ("row", "col")  # 40 % observed: dense
    _use_long_path(monkeypatch)
    res = fit_vb(make(data["frame"]), max_iter=15, n_draws=10, random_seed=3, progressbar=False)
    for v in ref["posterior"].data_vars:
        np.testing.assert_array_equal(res["posterior"][v].values, ref["posterior"][v].values)
    np.testing.assert_array_equal(res["variational"]["elbo"].values,
                                  ref["variational"]["elbo"].values)
    np.testing.assert_array_equal(res["sample_stats"]["mse"].values,
                                  ref["sample_stats"]["mse"].values)
    obs = res["observed_data"]
    assert obs["X"].dims == ("X_obs",)  # long format: no D x N array
    X = data["dense"]
    np.testing.assert_array_equal(obs["X"].values, X.values[obs["row_index"], obs["col_index"]])
    assert (obs["row"].values == ROW[obs["row_index"].values]).all()
    assert (obs["col"].values == COL[obs["col_index"].values]).all()
    assert res["posterior"]["row"].values.tolist() == ROW.tolist()


def test_explicit_zeros_are_observed_and_unstored_are_missing():
    S = sp.csr_array(([0.0, 2.0, 3.0], ([0, 1, 1], [1, 0, 1])), shape=(2, 2))
    e = check_entries(S, kind="real")
    assert e.n_observed == 3 and e.values.tolist() == [0.0, 2.0, 3.0]
    spec = find_spec(exponential_gaussian(S, 1))
    assert np.isnan(spec.X.values[0, 0]) and spec.X.values[0, 1] == 0.0
    assert spec.mask.tolist() == [[False, True], [True, True]]


def test_dense_on_demand_for_methods_that_need_the_dense_matrix(data, long_path):
    """``spec.X`` / ``spec.mask`` stay usable by methods that are not sparse-aware."""
    spec = find_spec(exponential_gaussian(data["frame"], 2))
    assert isinstance(spec.X.data, DenseOnDemand) and spec.X.shape == (D, N)
    np.testing.assert_array_equal(spec.X.values, data["dense"].values)
    np.testing.assert_array_equal(np.asarray(spec.mask), ~np.isnan(data["dense"].values))
    assert int(spec.mask.sum()) == spec.entries.n_observed
    np.testing.assert_array_equal(spec.X_values, np.nan_to_num(data["dense"].values))


def test_long_format_with_integer_positions_and_shape():
    m = bz.long_format(np.array([2, 0]), np.array([1, 0]), np.array([1.0, 2.0]), shape=(3, 2))
    assert m.shape == (3, 2) and m.rows.tolist() == [0, 2] and m.values.tolist() == [2.0, 1.0]
    with pytest.raises(ValueError, match="row.*with no observed entry"):
        exponential_gaussian(m, 1)


@pytest.mark.parametrize("make, match", [
    (lambda: sp.coo_array(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2)), "duplicate entries"),
    (lambda: sp.csr_array(([1.0, np.nan, 2.0], ([0, 1, 1], [0, 0, 1])), shape=(2, 2)),
     "NaN entries among its observed"),
    (lambda: sp.csr_array(([1.0, np.inf, 2.0], ([0, 1, 1], [0, 0, 1])), shape=(2, 2)),
     "infinite entries"),
    (lambda: sp.csr_array(([1.0, 2.0], ([0, 1], [0, 0])), shape=(2, 2)),
     "column.*with no observed entry"),
    (lambda: sp.csr_array((2, 0)), "empty"),
])
def test_bad_sparse_input(make, match):
    with pytest.raises(ValueError, match=match):
        exponential_gaussian(make(), 1)


def test_bad_long_format_input():
    with pytest.raises(ValueError, match="duplicate entries"):
        bz.long_format(["a", "a"], ["x", "x"], [1.0, 2.0])
    with pytest.raises(ValueError, match="shape must be positive"):
        bz.long_format([0], [0], [1.0], shape=(-1, 5))
    with pytest.raises(ValueError, match="integer positions"):
        bz.long_format([0, 3], [0, 1], [1.0, 2.0], shape=(3, 2))
    with pytest.raises(ValueError, match="not in row_labels"):
        bz.long_format(["a", "z"], ["x", "y"], [1.0, 2.0], row_labels=["a", "b"])
    with pytest.raises(ValueError, match="same length"):
        bz.long_format([0, 1], [0, 1], [1.0], shape=(2, 2))
    with pytest.raises(TypeError, match="numbers"):
        bz.long_format(["a"], ["x"], np.array(["high"]))
    with pytest.raises(ValueError, match="3 columns"):
        bz.long_format(pd.DataFrame({"a": [1], "b": [2]}))
    with pytest.raises(TypeError, match="mask= is not used"):
        exponential_gaussian(sp.eye(3, format="csr"), 1, mask=np.ones((3, 3), bool))


def test_pair_product_gradient_and_paths():
    """The pair Op equals the flat-index path in value and gradient (and passes verify_grad)."""
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(1)
    A, W = pt.matrix("A"), pt.matrix("W")
    rows, cols = rng.integers(0, 6, 40), rng.integers(0, 5, 40)
    g = rng.normal(size=40)
    Av, Wv = rng.random((6, 3)), rng.random((3, 5))
    outs = []
    for path in ("flat", "pairs"):
        mu = observed_mean(A, W, rows, cols, (6, 5), path=path)
        f = pytensor.function([A, W], [mu, *pytensor.grad((mu * g).sum(), [A, W])])
        outs.append(f(Av, Wv))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    pytensor.gradient.verify_grad(lambda a, w: pair_product(a, w, rows, cols), [Av, Wv],
                                  rng=rng)
    assert mean_path(79_000, (705, 139)) == "flat"
    assert mean_path(10_000_000, (72_000, 10_000)) == "pairs"


MEMORY_SCRIPT = textwrap.dedent("""
    import resource, tracemalloc
    import numpy as np, scipy.sparse as sp, pymc as pm
    from bnmfzoo._base.entries import DenseOnDemand
    from bnmfzoo.models import exponential_gaussian
    from bnmfzoo.inference import GibbsNMF, fit_vb

    def refuse(self):
        raise AssertionError("the dense matrix was built")

    DenseOnDemand.dense = refuse

    def data(D, N, n, rng):
        rows, cols = np.divmod(rng.choice(D * N, size=n, replace=False), N)
        rows[:D] = np.arange(D)
        cols[D:2 * D] = np.arange(N)
        S = sp.coo_array((rng.exponential(size=n), (rows, cols)), shape=(D, N))
        S.sum_duplicates()
        return S

    def run(S):
        model = exponential_gaussian(S, 10)
        with model:
            pm.sample(draws=3, tune=0, chains=1, step=GibbsNMF(), random_seed=1,
                      progressbar=False, compute_convergence_checks=False)
        fit_vb(model, max_iter=3, n_draws=5, random_seed=1, progressbar=False)

    def status(key):
        with open("/proc/self/status") as f:
            return next(float(l.split()[1]) / 1024 for l in f if l.startswith(key + ":"))

    rng = np.random.default_rng(0)
    # the same code paths on a small matrix first: compiling the kernels (numba/LLVM, whose
    # memory depends on whether the on-disk cache is warm) is not what is measured
    run(data(2000, 2000, 2000 * 2000 // 200, rng))
    D = N = 20000
    S = data(D, N, D * N // 2000, rng)  # 0.05 % observed
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set (VmHWM) to the current one
    rss0 = status("VmRSS")
    tracemalloc.start()
    run(S)
    print(tracemalloc.get_traced_memory()[1] / 2**20, status("VmHWM") - rss0)
""")


def test_memory_is_linear_in_observed_entries():
    """Sparse 20,000 x 20,000 data (200,000 entries): build, Gibbs and VB, no dense D x N array.

    One dense float64 copy is 3,052 MiB (a bool mask 381 MiB). Bounds: NumPy allocations
    traced by tracemalloc peak below 250 MiB (measured 109: the entries, CSR/CSC copies,
    factors and coordinates; 90 on a cold numba cache), and the growth of the peak resident
    set during the measured run below 500 MiB (measured 112). The kernels are compiled first
    on a small matrix and the peak is reset (``/proc/self/clear_refs``) before the run: the
    absolute peak, 411 MiB with a warm numba cache, reached 1,009 MiB on a cold one (a fresh
    clone), from compilation alone.
    ``DenseOnDemand.dense`` is also made to raise, so any densification of the spec's views
    fails the test.
    """
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    traced, growth = (float(v) for v in out.stdout.split()[-2:])
    assert traced < 250, traced
    assert growth < 500, growth


RECOGNITION_SCRIPT = textwrap.dedent("""
    import time, tracemalloc
    import numpy as np, pymc as pm
    from bnmfzoo._base.entries import DenseOnDemand
    from bnmfzoo import long_format
    from bnmfzoo.models import exponential_gaussian, recognize
    from bnmfzoo.models._spec import get_spec
    from bnmfzoo.inference import GibbsNMF

    def refuse(self):
        raise AssertionError("the dense matrix was built")

    DenseOnDemand.dense = refuse
    D, N, n = 200_000, 100_000, 300_000
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.arange(D), rng.integers(0, D, n - D)])
    cols = np.concatenate([rng.integers(0, N, D), np.arange(N)])
    flat = np.unique(rows * N + cols)
    rows, cols = np.divmod(flat, N)
    X = long_format(rows, cols, rng.exponential(size=rows.size), shape=(D, N))
    tracemalloc.start()
    model = exponential_gaussian(X, 3)
    f = recognize(model)
    spec = get_spec(model, families="exponential_gaussian", method="test")
    step = GibbsNMF(model=model, rng=1)
    point, _ = step.step(model.initial_point())
    assert f.on_demand and spec.entries.n_observed == rows.size
    assert np.array_equal(spec.entries.rows, rows) and np.array_equal(spec.entries.cols, cols)
    assert spec.X.shape == (D, N) and np.isfinite(point["A_log__"]).all()
    print(tracemalloc.get_traced_memory()[1] / 2**20)
""")


def test_recognition_of_a_huge_sparse_model_builds_no_dense_array():
    """200,000 x 100,000 with 300,000 entries: build, recognize, one Gibbs step.

    One dense float64 copy would take 149 GiB (a bool mask 19 GiB), so the traced NumPy peak
    below 200 MiB (the entries, the factors, the probes of recognition: each
    O(observed + (D + N) rank)) shows that nothing of size D x N was allocated;
    ``DenseOnDemand.dense`` raises as well.
    """
    out = subprocess.run([sys.executable, "-c", RECOGNITION_SCRIPT], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert float(out.stdout.split()[-1]) < 200


@pytest.mark.parametrize("fitter", ["fit_icm", "fit_multiplicative"])
def test_other_gaussian_fitters_on_long_format(data, fitter, monkeypatch):
    """ICM and multiplicative updates share VB's sparse problem: same fit as the dense input."""
    import bnmfzoo.inference as inf

    fit = getattr(inf, fitter)
    dense = np.abs(data["dense"])  # the multiplicative updates need X >= 0
    rows, cols = np.nonzero(~np.isnan(dense.values))
    long = bz.long_format(ROW[rows], COL[cols], dense.values[rows, cols])
    ref = fit(exponential_gaussian(dense, 3), max_iter=10, random_seed=2, progressbar=False)
    _use_long_path(monkeypatch)
    res = fit(exponential_gaussian(long, 3), max_iter=10, random_seed=2, progressbar=False)
    for v in ref["posterior"].data_vars:
        np.testing.assert_array_equal(res["posterior"][v].values, ref["posterior"][v].values)
    assert res["observed_data"]["X"].dims == ("X_obs",)
