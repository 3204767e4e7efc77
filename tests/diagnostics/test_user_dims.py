"""Hand-written models name their dims: every diagnostic, plot and report keeps those names.

A PyMC user writes ``dims=("genome", "signature")`` on ``A`` and ``("signature", "channel")`` on
``W`` (or ``cell_line`` / ``k`` / ``drug``); the library reads the roles from the result (the
factor dim is the one ``A`` and ``W`` share) and keeps the user's names and coordinates in
every output. Each model is tiny and sampled once by the library's Gibbs steps (seconds).
"""

import functools
import html
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import bnmfzoo as bz
from bnmfzoo import likelihoods
from bnmfzoo.diagnostics._modes._dims import FactorDims, factor_dims
from bnmfzoo.plots import plot_bases, plot_modes
from bnmfzoo.report import write_report

D, N, R = 10, 7, 2
GENOMES = [f"PD{i:02d}" for i in range(D)]
CHANNELS = [f"C>A:{j}" for j in range(N)]
SIGNATURES = ["SBS1", "SBS5"]
CELL_LINES = [f"ACH-{i:03d}" for i in range(D)]
DRUGS = [f"drug{j}" for j in range(N)]
KS = ["k0", "k1"]


def _sample(model):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(draws=40, tune=20, chains=2, random_seed=1, progressbar=False,
                         compute_convergence_checks=False)


def _coords(model, with_coords, names, labels):
    for name, values in zip(names, labels):
        if with_coords:
            model.add_coord(name, values)
        else:  # dims only: a length, no labels (ArviZ numbers them 0..n-1)
            model.add_coord(name, length=len(values))


@functools.cache
def _counts(with_coords):
    """Poisson NMF of counts, written by hand (pm.Gamma priors, pm.Poisson on A @ W)."""
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(2.0, 1.0, (D, R)) @ rng.gamma(2.0, 1.0, (R, N)))
    with pm.Model() as model:
        _coords(model, with_coords, ("genome", "channel", "signature"),
                (GENOMES, CHANNELS, SIGNATURES))
        A = pm.Gamma("A", 1.0, 1.0, dims=("genome", "signature"))
        W = pm.Gamma("W", 1.0, 1.0, dims=("signature", "channel"))
        pm.Poisson("X", mu=A @ W, observed=X, dims=("genome", "channel"))
    labels = (GENOMES, SIGNATURES, CHANNELS) if with_coords else (
        list(range(D)), list(range(R)), list(range(N)))
    return _sample(model), ("genome", "signature", "channel"), labels


@functools.cache
def _gaussian(with_coords):
    """The README's own-prior Gaussian model, with cell_line / k / drug dims."""
    rng = np.random.default_rng(1)
    X = rng.gamma(2.0, 1.0, (D, R)) @ rng.gamma(2.0, 1.0, (R, N)) + rng.normal(0, 0.1, (D, N))
    X[0, 0] = np.nan
    with pm.Model() as model:
        _coords(model, with_coords, ("cell_line", "drug", "k"), (CELL_LINES, DRUGS, KS))
        A = pm.HalfNormal("A", 1.0, dims=("cell_line", "k"))
        lam = pm.Gamma("lam", 2.0, 2.0, dims="k")
        W = pm.Exponential("W", lam[:, None], dims=("k", "drug"))
        tau = pm.Gamma("tau", 1.0, 1.0)
        likelihoods.gaussian("X", A, W, observed=X, tau=tau)
    labels = (CELL_LINES, KS, DRUGS) if with_coords else (
        list(range(D)), list(range(R)), list(range(N)))
    return _sample(model), ("cell_line", "k", "drug"), labels


@pytest.fixture(params=[("counts", True), ("counts", False), ("gaussian", True),
                        ("gaussian", False)],
                ids=["counts-coords", "counts-dims-only", "gaussian-coords",
                     "gaussian-dims-only"])
def fitted(request):
    kind, with_coords = request.param
    return (_counts if kind == "counts" else _gaussian)(with_coords)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _labels_of(da, dim):
    return [v.item() if hasattr(v, "item") else v for v in da[dim].values]


def test_factor_dims_read_from_the_result(fitted):
    idata, (row, factor, col), _ = fitted
    assert factor_dims(idata["posterior"]) == FactorDims(row, factor, col)


def test_align_keeps_names_and_coords(fitted):
    idata, (row, factor, col), (rows, factors, cols) = fitted
    out = _quiet(bz.diagnostics.align, idata, normalize=True)
    assert out["posterior"]["A"].dims == ("chain", "draw", row, factor)
    assert out["posterior"]["W"].dims == ("chain", "draw", factor, col)
    assert _labels_of(out["posterior"], row) == rows
    diag = out["diagnostics"]
    assert diag["permutation"].dims == ("chain", "draw", factor)
    assert diag["reference_A"].dims == (row, factor)
    assert _labels_of(diag, row) == rows and _labels_of(diag, factor) == factors
    # normalize=True rescaled each draw's columns of A to unit l1 over the user's row dim
    np.testing.assert_allclose(out["posterior"]["A"].sum(row).values, 1.0, rtol=1e-9)
    prod = np.einsum("cdik,cdkj->cdij", out["posterior"]["A"].values,
                     out["posterior"]["W"].values)
    ref = np.einsum("cdik,cdkj->cdij", idata["posterior"]["A"].values,
                    idata["posterior"]["W"].values)
    np.testing.assert_allclose(prod, ref, rtol=1e-9)  # A @ W of each draw unchanged


def test_modes_keep_names_and_coords(fitted):
    idata, (row, factor, col), (rows, factors, cols) = fitted
    m = bz.diagnostics.modes(idata, warn=False)["modes"]
    assert m["A_mean"].dims == ("mode", row, factor)
    assert m["W_mean"].dims == ("mode", factor, col)
    assert m["member_perm"].dims == ("chain", "draw", factor)
    assert _labels_of(m, row) == rows and _labels_of(m, col) == cols
    assert _labels_of(m, factor) == factors
    assert (m.attrs["row_dim"], m.attrs["factor_dim"], m.attrs["col_dim"]) == (row, factor, col)
    assert "row" not in m.dims and "factor" not in m.dims and "col" not in m.dims


def test_summary_names_entries_by_the_users_coords(fitted):
    idata, (row, factor, col), (rows, factors, cols) = fitted
    table = _quiet(bz.diagnostics.summary, idata, var_names=["A", "W"])
    names = list(table.index.get_level_values(-1))
    assert f"A[{rows[3]}, {factors[1]}]" in names
    assert f"W[{factors[0]}, {cols[2]}]" in names
    blocks = 1 if table.index.nlevels == 1 else len(set(table.index.get_level_values(0)))
    assert len([n for n in names if n.startswith("A[")]) == D * R * blocks  # one per mode


def test_point_estimate_labelled(fitted):
    idata, (row, factor, col), (rows, factors, cols) = fitted
    A, W, info = bz.diagnostics.point_estimate(idata)
    assert info["dims"] == {"row": row, "factor": factor, "col": col}
    Al, Wl = info["A_labelled"], info["W_labelled"]
    assert Al.dims == (row, factor) and Wl.dims == (factor, col)
    assert _labels_of(Al, row) == rows and _labels_of(Wl, col) == cols
    np.testing.assert_array_equal(Al.values, A)
    np.testing.assert_array_equal(Wl.values, W)
    # the pair reconstructs the data's scale: one draw's product is in the same range
    post = idata["posterior"]
    mean_prod = np.einsum("cdik,cdkj->ij", post["A"].values, post["W"].values) / (
        post.sizes["chain"] * post.sizes["draw"])
    assert np.linalg.norm(A @ W - mean_prod) / np.linalg.norm(mean_prod) < 0.1


def test_explicit_dims_and_errors():
    idata, dims, _ = _counts(True)
    assert factor_dims(idata["posterior"], dims=dims) == FactorDims(*dims)
    m = bz.diagnostics.modes(idata, warn=False, dims={"row": dims[0], "factor": dims[1],
                                                      "col": dims[2]})["modes"]
    assert m["A_mean"].dims == ("mode", dims[0], dims[1])
    with pytest.raises(ValueError, match="dims=.*does not match 'A'"):
        bz.diagnostics.modes(idata, warn=False, dims=("row", "factor", "col"))
    with pytest.raises(ValueError, match="dims must"):
        bz.diagnostics.align(idata, dims="genome")


def test_undeclared_dims_name_dims_in_the_error():
    """``shape=`` without ``dims=``: A and W share no dim name, so the roles are not told."""
    rng = np.random.default_rng(2)
    post = xr.Dataset({"A": (("chain", "draw", "A_dim_0", "A_dim_1"), rng.random((1, 5, D, R))),
                       "W": (("chain", "draw", "W_dim_0", "W_dim_1"), rng.random((1, 5, R, N)))})
    dt = xr.DataTree.from_dict({"posterior": post})
    for fn in (bz.diagnostics.align, bz.diagnostics.modes, bz.diagnostics.point_estimate):
        with pytest.raises(ValueError, match=r"share none; name the model's dims so that they "
                           r"share the factor dim: dims=\(row, factor\)"):
            fn(dt)
    with pytest.raises(ValueError, match=r"dims=.*or by_mode=False"):
        bz.diagnostics.summary(dt, by_mode=True)
    with pytest.warns(UserWarning, match="not split into modes"):
        table = bz.diagnostics.summary(dt, var_names=["A"])
    assert "A[0, 0]" in table.index


def test_plots_show_the_users_names(fitted):
    import matplotlib.pyplot as plt

    idata, (row, factor, col), (rows, factors, cols) = fitted
    fig = plot_modes(idata)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[: len(factors)] == [f"{factor} {f}" for f in factors]
    ticks = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels()}
    assert ticks and ticks <= {str(r) for r in rows}
    assert f"top {row} of each {factor}" in fig._suptitle.get_text()
    plt.close(fig)
    A = idata["posterior"]["A"].mean(("chain", "draw"))
    fig = plot_bases(A)
    assert [ax.get_title() for ax in fig.axes] == [f"{factor} {f}" for f in factors]
    plt.close(fig)


def test_report_from_a_saved_netcdf(fitted, tmp_path):
    """The report reads the roles from the file alone (no model), and shows the user's names."""
    idata, (row, factor, col), (rows, factors, cols) = fitted
    nc = tmp_path / "result.nc"
    idata.to_netcdf(nc, engine="h5netcdf")
    page = _quiet(write_report, nc, out_dir=tmp_path / "out").read_text(encoding="utf-8")
    assert f"<th>{row}</th>" in page and f"<th>{col}</th>" in page  # loadings tables
    assert sum(f"<h4>{factor} {f} " in page for f in factors) == R  # one block per factor
    cells = [f"<td class='name'>{html.escape(str(v))}</td>" for v in (*rows, *cols)]
    assert sum(c in page for c in cells[:D]) >= R and sum(c in page for c in cells[D:]) >= R
    assert "No modes or loadings" not in page
    for png in ("modes", "loadings", "fit"):
        assert (tmp_path / "out" / f"{png}.png").exists(), png


def test_estimator_keeps_the_datas_dim_names():
    rng = np.random.default_rng(3)
    X = xr.DataArray(rng.gamma(2.0, 1.0, (D, R)) @ rng.gamma(2.0, 1.0, (R, N)),
                     dims=("cell_line", "drug"), coords={"cell_line": CELL_LINES,
                                                         "drug": DRUGS})
    est = _quiet(bz.BayesianNMF(n_components=R, random_state=0, draws=30, tune=10).fit, X)
    post = est.posterior_["posterior"]
    assert post["A"].dims == ("chain", "draw", "cell_line", "factor")
    assert post["W"].dims == ("chain", "draw", "factor", "drug")
    assert _labels_of(post, "drug") == DRUGS
    assert est.components_.shape == (R, N) and est.A_.shape == (D, R)
    obs = est.posterior_["observed_data"]["X"]
    assert "row" not in obs.dims and "col" not in obs.dims
    m = bz.diagnostics.modes(est.posterior_, warn=False)["modes"]
    assert m["W_mean"].dims == ("mode", "factor", "drug")


def test_errors_and_predictions_read_the_roles_by_name():
    """W stored as (channel, signature) is transposed by name, not taken by position."""
    rng = np.random.default_rng(4)
    A = rng.random((2, 3, D, R))
    W = rng.random((2, 3, R, N))
    post = xr.Dataset({"A": (("chain", "draw", "genome", "signature"), A),
                       "W": (("chain", "draw", "channel", "signature"),
                             np.swapaxes(W, -1, -2))})
    dt = xr.DataTree.from_dict({"posterior": post})
    mean = np.einsum("cdik,cdkj->ij", A, W) / 6
    np.testing.assert_allclose(bz.diagnostics.predict_mean(dt), mean, rtol=1e-12)
    X = mean + 0.5
    got = bz.diagnostics.reconstruction_error(X, dt, kind="mse")
    assert float(np.asarray(got)) == pytest.approx(0.25, rel=1e-12)
    _, What, info = bz.diagnostics.point_estimate(dt)
    assert info["W_labelled"].dims == ("signature", "channel") and What.shape == (R, N)


def test_a_basis_without_weights_takes_dims():
    """Without W nothing is shared: our own ``factor`` name is read, another needs dims=."""
    rng = np.random.default_rng(5)
    A = rng.random((1, 6, D, R))
    post = xr.Dataset({"A": (("chain", "draw", "genome", "signature"), A)},
                      coords={"genome": GENOMES, "chain": [0], "draw": np.arange(6)})
    dt = xr.DataTree.from_dict({"posterior": post})
    with pytest.raises(ValueError, match=r"without 'W': pass dims=\(row_dim, factor_dim"):
        bz.diagnostics.modes(dt, warn=False)
    m = bz.diagnostics.modes(dt, warn=False, dims=("genome", "signature"))["modes"]
    assert m["A_mean"].dims == ("mode", "genome", "signature")
    assert _labels_of(m, "genome") == GENOMES and "W_mean" not in m
    ours = xr.DataTree.from_dict({"posterior": post.rename(genome="row", signature="factor")})
    assert factor_dims(ours["posterior"]) == FactorDims("row", "factor", None)


def test_tri_factorization_aligns_in_the_users_names():
    """F S G^T with dims named by the user (cell_line, k_row, k_col, drug): ``align`` reads the
    two factor dims from the variables (the dim F and S share, the dim S and G share) and gives
    exactly what it gives for the same draws under our names, renamed."""
    from bnmfzoo._base.results import build_datatree

    rng = np.random.default_rng(0)
    F0, G0 = rng.exponential(size=(5, 2)), rng.exponential(size=(4, 3))
    F = F0 * rng.lognormal(0, 0.05, size=(2, 6, 5, 2))
    G = G0 * rng.lognormal(0, 0.05, size=(2, 6, 4, 3))
    S = rng.exponential(size=(2, 6, 2, 3))
    F[1], S[1] = F[1][..., ::-1], S[1][:, ::-1]  # chain 1: row factors relabelled
    ours = build_datatree({"F": F, "S": S, "G": G},
                          dims={"F": ["row", "factor_row"], "S": ["factor_row", "factor_col"],
                                "G": ["col", "factor_col"]})
    names = {"row": "cell_line", "factor_row": "k_row", "factor_col": "k_col", "col": "drug"}
    theirs = build_datatree({"F": F, "S": S, "G": G},
                            dims={"F": ["cell_line", "k_row"], "S": ["k_row", "k_col"],
                                  "G": ["drug", "k_col"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # R-hat of 6 draws
        a = bz.diagnostics.align(ours, normalize=True)
        b = bz.diagnostics.align(theirs, normalize=True)
    assert b.posterior["F"].dims == ("chain", "draw", "cell_line", "k_row")
    assert b.posterior["S"].dims == ("chain", "draw", "k_row", "k_col")
    for v in ("F", "S", "G"):
        np.testing.assert_allclose(b.posterior[v].values, a.posterior[v].values, rtol=1e-12)
    assert b["diagnostics"]["n_relabelled_k_row"].values.tolist() == \
        a["diagnostics"]["n_relabelled_factor_row"].values.tolist() == [0, 6]
    assert set(names.values()) <= set(b.posterior.dims)
