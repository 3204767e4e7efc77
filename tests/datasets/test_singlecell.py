"""Single-cell inputs: ``.h5ad`` and 10x ``matrix.mtx`` folders round-trip with their labels,
are read block by block, and reach the models, the estimator, the blocked sweep and the CLI."""

import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.datasets.singlecell import (
    h5ad_rows,
    read_10x_mtx,
    read_h5ad,
    write_10x_mtx,
)

anndata = pytest.importorskip("anndata")


def _adata(normalized=False):
    """A real-looking small AnnData: 40 cells x 25 genes of UMI-like sparse counts."""
    rng = np.random.default_rng(3)
    mu = rng.gamma(0.4, 1.0, size=(40, 2)) @ rng.gamma(0.4, 1.0, size=(2, 25))
    X = rng.poisson(0.8 * mu).astype(np.float32)
    X[0, 0] = 7.0  # at least one non-zero count in row 0
    if normalized:
        X = np.log1p(X / np.maximum(X.sum(1, keepdims=True), 1) * 1e4)
    obs = [f"AAAC{i:04d}-1" for i in range(40)]
    var = [f"ENSG{j:011d}" for j in range(25)]
    ad = anndata.AnnData(sp.csr_matrix(X))
    ad.obs_names, ad.var_names = obs, var
    ad.var["gene_symbols"] = [f"G{j}" for j in range(25)]
    return ad


@pytest.fixture
def h5ad_file(tmp_path):
    path = tmp_path / "cells.h5ad"
    _adata().write_h5ad(path)
    return path


def test_h5ad_round_trip_keeps_labels(h5ad_file):
    ad = _adata()
    back = read_h5ad(h5ad_file)
    assert back.shape == (40, 25)
    assert (back.X != sp.csr_array(ad.X)).nnz == 0
    assert list(back.row_labels) == list(ad.obs_names)
    assert list(back.col_labels) == list(ad.var_names)


def test_h5ad_rows_read_only_their_block(h5ad_file):
    X = sp.csr_array(_adata().X)
    indptr, cols, vals = h5ad_rows(h5ad_file, 10, 23)
    block = sp.csr_array((vals, cols, indptr), shape=(13, 25))
    assert (block != X[10:23]).nnz == 0


def test_10x_folder_round_trip(tmp_path, h5ad_file):
    cells = read_h5ad(h5ad_file)
    write_10x_mtx(cells, tmp_path / "tenx")
    assert sorted(p.name for p in (tmp_path / "tenx").iterdir()) == [
        "barcodes.tsv.gz", "features.tsv.gz", "matrix.mtx.gz"]
    back = read_10x_mtx(tmp_path / "tenx")
    assert (back.X != cells.X).nnz == 0
    assert list(back.row_labels) == list(cells.row_labels)
    assert list(back.col_labels) == list(cells.col_labels)


def test_normalized_h5ad_refused_for_counts(tmp_path):
    path = tmp_path / "norm.h5ad"
    _adata(normalized=True).write_h5ad(path)
    with pytest.raises(ValueError, match=r"non-integer or negative values \(normalized"):
        read_h5ad(path)
    from bnmfzoo.inference.blocked import fit_blocked_gibbs

    with pytest.raises(ValueError, match=r"non-integer"):
        fit_blocked_gibbs(_adata(normalized=True), 2, draws=2, tune=0)


def test_10x_folder_with_mismatched_names_refused(tmp_path, h5ad_file):
    cells = read_h5ad(h5ad_file)
    write_10x_mtx(cells, tmp_path / "tenx")
    import gzip

    with gzip.open(tmp_path / "tenx" / "barcodes.tsv.gz", "wt") as fh:
        fh.write("only-one\n")
    with pytest.raises(ValueError, match=r"lists 25 genes and barcodes.tsv.gz 1 barcodes"):
        read_10x_mtx(tmp_path / "tenx")


def test_models_and_blocked_sweep_take_anndata_with_labels(h5ad_file):
    import bnmfzoo as bz
    from bnmfzoo.inference.blocked import H5adSource, fit_blocked_gibbs

    ad = _adata()
    model = bz.models.poisson(ad, 2)
    assert list(model.coords["row"]) == list(ad.obs_names)
    assert list(model.coords["col"]) == list(ad.var_names)
    dt = fit_blocked_gibbs(ad, 2, draws=4, tune=2, block_rows=16)
    assert list(dt.posterior["col"].values) == list(ad.var_names)
    assert list(dt["rows"]["row"].values) == list(ad.obs_names)
    # the same chain when each block is read from the file by itself
    src = H5adSource(h5ad_file, block_rows=16)
    from_file = fit_blocked_gibbs(src, 2, draws=4, tune=2)
    assert np.array_equal(from_file.posterior.W.values, dt.posterior.W.values)


def test_estimator_fit_anndata_labels_results():
    import bnmfzoo as bz

    ad = _adata()
    est = bz.BayesianNMF(2, model="poisson", draws=5, tune=5, chains=1, random_state=0,
                         progressbar=False).fit(ad)
    assert list(est.posterior_.posterior["row"].values) == list(ad.obs_names)
    assert list(est.posterior_.posterior["col"].values) == list(ad.var_names)


@pytest.mark.parametrize("kind", ["h5ad", "10x"])
def test_cli_fit_reads_single_cell_files(tmp_path, h5ad_file, kind):
    import xarray as xr

    from bnmfzoo import cli

    data = h5ad_file
    if kind == "10x":
        data = tmp_path / "tenx"
        write_10x_mtx(read_h5ad(h5ad_file), data)
    out = tmp_path / f"{kind}.nc"
    code = cli.main(["fit", str(data), "--model", "poisson", "--rank", "2", "--draws", "5",
                     "--tune", "5", "--chains", "1", "--out", str(out), "--quiet"])
    assert code == 0
    dt = xr.open_datatree(out)
    assert list(dt.posterior["row"].values) == list(_adata().obs_names)
    assert list(dt.posterior["col"].values) == list(_adata().var_names)


def test_normalized_h5ad_blocks_refused_before_sweeping(tmp_path):
    from bnmfzoo.inference.blocked import H5adSource, fit_blocked_gibbs

    path = tmp_path / "norm.h5ad"
    _adata(normalized=True).write_h5ad(path)
    with pytest.raises(ValueError, match=r"block 0 holds non-integer or negative values"):
        fit_blocked_gibbs(H5adSource(path, block_rows=16), 2, draws=2, tune=0)
