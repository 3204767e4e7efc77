"""Sparse (``scipy.sparse``) and long-format input for the Bernoulli models, end to end.

The collapsed samplers and CVB0 work on the observed entries in row-major order (Dir-Beta: of the
transpose). A :class:`~bnmfzoo._base.entries.LongMatrix` lists the same entries in the same order as
the dense matrix with NaN, the latent labels are one per observed entry and the count tables
per row, column and factor, so the same seed must give **bitwise** the same draws. The model is
read from its graph whatever form the data came in (:func:`bnmfzoo.models.recognize`), so the
density rule of :data:`bnmfzoo.models._observed.DENSE_MIN_FRACTION` decides the layout: from 1/8
observed on (fixture ``half``) the outputs are D x N, below it (fixture ``few``) on the observed
entries, for sparse and dense input alike: the same model, so the same outputs bit for bit.
The memory test runs every binary method on a 200,000 x 100,000 matrix, where one dense float64
copy would take 149 GiB.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import xarray as xr

import bnmfzoo as bz
from bnmfzoo.inference import (
    CollapsedGibbsBetaDir,
    CollapsedGibbsDirDir,
    fit_collapsed_gibbs,
    fit_cvb0,
    sample,
)
from bnmfzoo.inference.binary._core import entry_means, observed_entries
from bnmfzoo.models import beta_dir, dir_beta, dir_dir, recognize
from bnmfzoo.models._observed import DENSE_MIN_FRACTION

D, N = 24, 17
ROW = np.array([f"mp{i:02d}" for i in range(D)])
COL = np.array([f"vote{j:02d}" for j in range(N)])
MODELS = {"beta_dir": beta_dir, "dir_beta": dir_beta, "dir_dir": dir_dir}
STEPS = {"beta_dir": CollapsedGibbsBetaDir, "dir_beta": CollapsedGibbsBetaDir,
         "dir_dir": CollapsedGibbsDirDir}
#: predictions are sums of K products formed in another order (BLAS vs a loop): round-off only
ROUND_OFF = dict(rtol=1e-12, atol=1e-14)


@pytest.fixture(scope="module", params=["half", "few"])
def data(request):
    """Dense labelled binary data with NaN and its sparse and long forms.

    ``half``: about half the entries observed (dense by the 1/8 rule); ``few``: about 9 %
    (long format).
    """
    rng = np.random.default_rng(11)
    X = (rng.random((D, 3)) @ rng.random((3, N)) / 3 > rng.random((D, N))).astype(float)
    X[rng.random(X.shape) < (0.5 if request.param == "half" else 0.97)] = np.nan
    X[np.arange(D), np.arange(D) % N] = 0.0  # every row and column observed (zeros stored)
    X[0, 1] = 1.0
    rows, cols = np.nonzero(~np.isnan(X))
    values = X[rows, cols]
    shuffle = np.random.default_rng(0).permutation(rows.size)  # order must not matter
    frame = pd.DataFrame({"row": ROW[rows][shuffle], "col": COL[cols][shuffle],
                          "value": values[shuffle]})
    csr = sp.csr_array((values, (rows, cols)), shape=(D, N))
    return dict(
        dense=xr.DataArray(X, dims=("row", "col"), coords={"row": ROW, "col": COL}),
        frame=bz.long_format(frame),
        scipy=bz.long_format(csr, row_labels=ROW, col_labels=COL),
        csr=csr, rows=rows, cols=cols,
        dense_out=rows.size >= DENSE_MIN_FRACTION * D * N,
    )


@pytest.mark.parametrize("transpose", [False, True])
def test_entries_in_the_dense_order(data, transpose):
    """Sparse entries come out in the order of the dense observed entries (transposed too)."""
    X = data["dense"].values
    dense = observed_entries(np.nan_to_num(X), ~np.isnan(X), transpose=transpose)
    for form in ("frame", "scipy"):
        for a, b in zip(dense, observed_entries(data[form], transpose=transpose)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    A, W = np.random.default_rng(0).random((D, 3)), np.random.default_rng(1).random((3, N))
    r, c = data["rows"], data["cols"]
    np.testing.assert_allclose(entry_means(r, c, A, W), (A @ W)[r, c], **ROUND_OFF)


@pytest.mark.parametrize("family", list(MODELS))
@pytest.mark.parametrize("form", ["frame", "scipy", "csr"])
def test_fit_collapsed_gibbs_bitwise_equal_to_dense(data, family, form):
    """Same seed: the same draws, stats and Rao-Blackwellized means on the observed entries."""
    kw = dict(draws=12, tune=6, thin=3, chains=2, random_seed=4, progressbar=False)
    ref = fit_collapsed_gibbs(MODELS[family](data["dense"], rank=3), **kw)
    out = fit_collapsed_gibbs(MODELS[family](data[form], rank=3), **kw)
    for var in ("A", "W"):
        np.testing.assert_array_equal(out.posterior[var].values, ref.posterior[var].values)
    for stat in ("log_joint", "n_active"):
        np.testing.assert_array_equal(out.sample_stats[stat].values, ref.sample_stats[stat].values)
    rb, rb_ref = out["rao_blackwell"], ref["rao_blackwell"]
    r, c = data["rows"], data["cols"]
    # the same model whatever form the data came in: the same outputs, in the layout of the
    # 1/8 rule (D x N from 1/8 observed on, else the observed entries)
    assert rb["X_mean"].dims == (("row", "col") if data["dense_out"] else ("X_obs",))
    for name in ("X_mean", "A_mean", "W_mean"):
        np.testing.assert_array_equal(rb[name].values, rb_ref[name].values)
    obs = out.observed_data
    np.testing.assert_array_equal(obs["X"].values, ref.observed_data["X"].values)
    if data["dense_out"]:
        return
    assert obs["X"].dims == ("X_obs",)
    np.testing.assert_array_equal(obs["X"].values, data["dense"].values[r, c])
    if form != "csr":  # a bare scipy matrix has integer labels
        assert obs["row"].values.tolist() == ROW[r].tolist()
        assert obs["col"].values.tolist() == COL[c].tolist()


@pytest.mark.parametrize("family", list(MODELS))
def test_pm_sample_bitwise_equal_and_labelled_log_likelihood(data, family):
    """Through ``sample`` (PyMC's loop): same draws; log-likelihood on the labelled entries."""
    step = STEPS[family]
    kw = dict(step=step, draws=8, tune=4, chains=1, random_seed=2, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyMC: few draws for R-hat
        ref = sample(MODELS[family](data["dense"], rank=3), **kw)
        out = sample(MODELS[family](data["scipy"], rank=3), **kw)
    for var in ("A", "W"):
        np.testing.assert_array_equal(out.posterior[var].values, ref.posterior[var].values)
    ll, ll_ref = out.log_likelihood["X"], ref.log_likelihood["X"]
    assert ll.sizes["X_obs"] == data["rows"].size
    # the dense model forms the means by the flat (A @ W) path, the sparse one by the pair path
    np.testing.assert_allclose(ll.values, ll_ref.values, **ROUND_OFF)
    assert ll["row"].values.tolist() == ROW[data["rows"]].tolist()
    assert ll["col"].values.tolist() == COL[data["cols"]].tolist()


@pytest.mark.parametrize("family", ["beta_dir", "dir_beta"])
def test_cvb0_bitwise_equal_to_dense(data, family):
    """CVB0: the same responsibilities, so the same q and draws, NLL and predictions."""
    kw = dict(max_iter=40, n_draws=6, random_seed=5, progressbar=False)
    ref = fit_cvb0(MODELS[family](data["dense"], rank=4), **kw)
    out = fit_cvb0(MODELS[family](data["frame"], rank=4), **kw)
    for var in ("A", "W"):
        np.testing.assert_array_equal(out.posterior[var].values, ref.posterior[var].values)
    v, v_ref = out["variational"], ref["variational"]
    np.testing.assert_array_equal(v["A_mean"].values, v_ref["A_mean"].values)
    np.testing.assert_array_equal(v["max_delta"].values, v_ref["max_delta"].values)
    assert out.attrs["n_iter"] == ref.attrs["n_iter"]
    # the same model whatever form the data came in: NLL and predictions bitwise too
    for name in ("nll", "X_mean"):
        np.testing.assert_array_equal(v[name].values, v_ref[name].values)
    np.testing.assert_array_equal(out.sample_stats["nll"].values, ref.sample_stats["nll"].values)
    assert v["X_mean"].dims == (("row", "col") if data["dense_out"] else ("X_obs",))


def test_explicit_zeros_observed_and_bad_sparse_input():
    """Stored zeros are observed; non-binary values, mask= and empty rows are refused."""
    S = sp.csr_array(([1.0, 0.0, 0.0, 1.0], ([0, 0, 1, 1], [0, 1, 0, 1])), shape=(2, 2))
    model = beta_dir(S, rank=2)
    assert recognize(model).entries.n_observed == 4
    assert model.rvs_to_values[model["X"]].data.shape == (4,)
    with pytest.raises(ValueError, match="binary"):
        beta_dir(sp.csr_array(np.array([[1.0, 2.0], [1.0, 1.0]])), rank=1)
    with pytest.raises(TypeError, match="mask"):
        dir_dir(S, rank=2, mask=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match="no observed entry"):
        beta_dir(sp.csr_array(([1.0, 0.0], ([0, 0], [0, 1])), shape=(3, 2)), rank=1)
    with pytest.warns(UserWarning, match="not stored are missing"):
        beta_dir(sp.eye(3, format="csr"), rank=2)


MEMORY_SCRIPT = textwrap.dedent("""
    import tracemalloc, warnings
    import numpy as np, scipy.sparse as sp
    from bnmfzoo._base.entries import DenseOnDemand
    from bnmfzoo._base.memory import peak_resident_bytes
    from bnmfzoo.models import beta_dir, dir_beta, dir_dir
    from bnmfzoo.inference import (CollapsedGibbsBetaDir, CollapsedGibbsDirDir,
                                   fit_collapsed_gibbs, fit_cvb0, sample)

    def refuse(self):
        raise AssertionError("the dense matrix was built")

    DenseOnDemand.dense = refuse
    warnings.simplefilter("ignore")
    D, N, n = 200_000, 100_000, 400_000
    rng = np.random.default_rng(0)
    rows, cols = np.divmod(rng.choice(D * N, size=n, replace=False), N)
    rows[:D] = np.arange(D)
    cols[D:D + N] = np.arange(N)
    S = sp.coo_array(((rng.random(n) < 0.3).astype(float), (rows, cols)), shape=(D, N))
    S.sum_duplicates()

    def run(S):
        for make in (beta_dir, dir_beta, dir_dir):
            model = make(S, rank=4)
            fit_collapsed_gibbs(model, draws=2, tune=1, thin=1, init_iter=2, random_seed=1,
                                progressbar=False)
            step = CollapsedGibbsDirDir if make is dir_dir else CollapsedGibbsBetaDir
            sample(model, step=step, draws=2, tune=0, chains=1, random_seed=1,
                   progressbar=False)
            if make is not dir_dir:
                fit_cvb0(model, max_iter=2, n_draws=2, random_seed=1, progressbar=False)
            del model

    # compile every kernel first (on a cold numba cache the compiler's own allocations
    # would otherwise be traced), then trace the large run
    small = sp.coo_array((np.r_[1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
                          ([0, 1, 2, 3, 4, 0], [0, 1, 2, 3, 4, 1])), shape=(5, 5))
    run(small)
    tracemalloc.start()
    run(S)
    print(tracemalloc.get_traced_memory()[1] / 2**20, peak_resident_bytes() / 2**20)
""")


@pytest.mark.parametrize("family", list(MODELS))
def test_no_method_builds_the_dense_matrix(data, family, monkeypatch):
    """Every binary method on sparse data runs with ``DenseOnDemand.dense`` made to raise."""
    from bnmfzoo._base.entries import DenseOnDemand
    from bnmfzoo.models._spec import find_spec

    if data["dense_out"]:
        pytest.skip("half the entries observed: dense arrays by the 1/8 rule")
    def refuse(self):
        raise AssertionError("the dense matrix was built")

    monkeypatch.setattr(DenseOnDemand, "dense", refuse)
    model = MODELS[family](data["csr"], rank=3)
    with pytest.raises(AssertionError, match="dense matrix"):
        np.asarray(find_spec(model).X)  # the guard works
    fit_collapsed_gibbs(model, draws=4, tune=2, thin=2, random_seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sample(model, step=STEPS[family], draws=3, tune=1, chains=1, random_seed=1,
               progressbar=False)
    if family != "dir_dir":
        fit_cvb0(model, max_iter=3, n_draws=2, random_seed=1, progressbar=False)


@pytest.mark.slow
def test_memory_is_linear_in_observed_entries():
    """Sparse 200,000 x 100,000 binary data (about 400,000 entries): no dense D x N array.

    Model build, ``fit_collapsed_gibbs``, the PyMC step through ``sample`` (with the
    log-likelihood group) and CVB0 for the three models. One dense float64 copy is 149 GiB and
    a bool mask 18.6 GiB, so any densification fails outright; ``DenseOnDemand.dense`` is also
    made to raise. Bounds: NumPy allocations traced by tracemalloc peak below 600 MiB (measured
    454 MiB: entries, labels, CVB0 responsibilities (n x K), factors (D + N) x K per
    stored draw, coordinates) and the process's peak resident set below 1,500 MiB (measured
    897 MiB; 154 s wall, 52 s CPU). The kernels are compiled on a 5 x 5 matrix before tracing
    starts: with a cold numba cache the compiler's allocations were traced too (607 MiB,
    resident set 1,184 MiB, 24 Nov 2026), so the bound depended on the cache. With the warm-up:
    457 MiB / 1,018 MiB warm, 558 MiB / 1,154 MiB with an empty ``NUMBA_CACHE_DIR`` (the large
    run still compiles some functions for its own argument types). The resident set is the
    child's own peak (``VmHWM``, :func:`bnmfzoo._base.memory.peak_resident_bytes`): its
    ``ru_maxrss`` kept the parent's, and in a full slow-suite session (the pytest process at
    7.4 GiB) the test failed at 7,449 MiB while the program alone peaked at 1,267 MiB.
    """
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    traced, rss = (float(v) for v in out.stdout.split()[-2:])
    print(traced, rss)
    assert traced < 600, traced
    assert rss < 1500, rss


# ------------------------------------------------------------------------------------------------
# front ends: BayesianNMF and `bnmfzoo fit`
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model, method", [("beta_dir", "collapsed_gibbs"), ("beta_dir", "cvb0"),
                                           ("dir_dir", None), ("exponential_gaussian", "vb")])
def test_estimator_sparse_equals_dense(data, model, method, monkeypatch):
    """``BayesianNMF.fit`` on sparse input: the dense fit's components, no dense matrix."""
    from bnmfzoo import BayesianNMF
    from bnmfzoo._base.entries import DenseOnDemand

    kw = dict(n_components=3, model=model, method=method, draws=10, tune=5, chains=1,
              random_state=3)
    ref = BayesianNMF(**kw).fit(data["dense"].values)
    monkeypatch.setattr(DenseOnDemand, "dense", lambda self: pytest.fail("densified"))
    est = BayesianNMF(**kw).fit(data["scipy"])
    np.testing.assert_array_equal(est.components_, ref.components_)
    np.testing.assert_allclose(est.reconstruction_err_, ref.reconstruction_err_, **ROUND_OFF)
    # every family follows the recognized model's density rule (dense arrays from 1/8 observed
    # on, bnmfzoo.models._observed.DENSE_MIN_FRACTION), whatever form the input had: then the
    # layout of the dense input's fit (PyMC's own loop keeps the likelihood's X_obs either way)
    assert est.posterior_.observed_data["X"].dims == (
        ref.posterior_.observed_data["X"].dims if data["dense_out"] else ("X_obs",))
    assert est.n_features_in_ == N and list(est.feature_names_in_) == COL.tolist()
    np.testing.assert_allclose(est.transform(data["csr"]), ref.transform(data["dense"].values),
                               **ROUND_OFF)
    np.testing.assert_allclose(est.score(data["csr"]), ref.score(data["dense"].values),
                               **ROUND_OFF)
    with pytest.raises(ValueError, match="features"):
        est.transform(sp.csr_array(([0.0, 1.0], ([0, 1], [0, 1])), shape=(2, N + 1)))


def test_estimator_densifies_other_methods_with_a_warning_or_refuses(data):
    """Particles need the dense matrix: a warning with its size; above 5e7 cells an error."""
    from bnmfzoo import BayesianNMF

    X = data["dense"].values.copy()
    X[~np.isnan(X)] += 0.5  # positive data for the classical-NMF placement
    S = sp.csr_array((X[data["rows"], data["cols"]], (data["rows"], data["cols"])),
                     shape=(D, N))
    kw = dict(n_components=2, method="particles", random_state=1,
              method_kwargs={"n_particles": 4})
    with pytest.warns(UserWarning, match=rf"not sparse-aware: the {D} x {N} .* MiB"):
        est = BayesianNMF(**kw).fit(S)
    np.testing.assert_array_equal(est.components_, BayesianNMF(**kw).fit(X).components_)
    big = sp.eye(8000, format="csr")  # 6.4e7 cells, 489 MiB dense
    with pytest.raises(ValueError, match="8000 x 8000 .*488 MiB"):
        BayesianNMF(**kw).fit(big)


def _cli(*args):
    from bnmfzoo.cli import main

    return main([str(a) for a in args])


def test_cli_reads_npz_and_long_csv(data, tmp_path, capsys):
    """``bnmfzoo fit x.npz`` / ``--long x.csv``: entries kept sparse, labelled results."""
    import scipy.sparse as sps

    sps.save_npz(tmp_path / "x.npz", data["csr"])
    r, c = data["rows"], data["cols"]
    v = data["dense"].values[r, c]
    pd.DataFrame({"user": ROW[r], "item": COL[c], "vote": v.astype(int)}).sample(
        frac=1, random_state=0).to_csv(tmp_path / "x.csv", index=False)
    common = ("--model", "beta_dir", "--rank", "3", "--seed", "1", "--quiet")
    assert _cli("fit", tmp_path / "x.npz", "--draws", 6, "--tune", 2, "--chains", 1,
                "--out", tmp_path / "a.nc", *common) == 0
    assert _cli("fit", tmp_path / "x.csv", "--long", "--method", "cvb0", "--draws", 4,
                "--out", tmp_path / "b.nc", *common) == 0
    out = capsys.readouterr().out
    assert f"{D} rows \u00d7 {N} columns, {r.size} observed entries (sparse; header row)" in out
    a = xr.open_datatree(tmp_path / "a.nc")
    b = xr.open_datatree(tmp_path / "b.nc")
    assert a["log_likelihood"]["X"].sizes["X_obs"] == r.size
    if data["dense_out"]:  # dense arrays by the 1/8 rule, labelled
        assert b.observed_data["row"].values.tolist() == ROW.tolist()
        np.testing.assert_array_equal(b.observed_data["X"].values[r, c], v)
    else:
        assert b.observed_data["row"].values.tolist() == ROW[r].tolist()
        np.testing.assert_array_equal(b.observed_data["X"].values, v)
    # --draws reaches the fitter: CVB0 stores 4 draws from its fitted approximation
    ref = fit_cvb0(beta_dir(data["dense"], rank=3), random_seed=1, n_draws=4, progressbar=False)
    np.testing.assert_array_equal(b.posterior["A"].values, ref.posterior["A"].values)
    (tmp_path / "bad.csv").write_text("r,c,v\na,x,1\nb,y,oops\n")
    assert _cli("fit", tmp_path / "bad.csv", "--long", "--out", tmp_path / "c.nc",
                *common) == 2
    assert "line 3: value 'oops' is not a number" in capsys.readouterr().err
