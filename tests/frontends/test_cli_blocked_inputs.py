"""``bnmfzoo fit`` on chunked matrix files, block by block (``--method blocked_gibbs``) and
whole (the other methods); bad input gives exit 2, one ``bnmfzoo fit: error:`` line on stderr
and no file written."""

import warnings

import h5py
import numpy as np
import pytest
import scipy.sparse as sp
import xarray as xr

from bnmfzoo import cli
from bnmfzoo.datasets.counts import SparseCounts
from bnmfzoo.datasets.singlecell import write_10x_mtx

anndata = pytest.importorskip("anndata")
zarr = pytest.importorskip("zarr")

ROWS = [f"AAAC{i:04d}-1" for i in range(30)]
COLS = [f"ENSG{j:011d}" for j in range(12)]
FIT = ["--model", "poisson", "--rank", "2", "--draws", "4", "--tune", "1", "--chains", "1",
       "--seed", "1", "--quiet"]


def _counts():
    rng = np.random.default_rng(9)
    X = rng.poisson(rng.gamma(0.5, 2.0, size=(30, 2)) @ rng.gamma(0.5, 1.0, size=(2, 12)))
    X[0, 0] = 4
    return X.astype(np.float32)


def _h5ad(path, X):
    ad = anndata.AnnData(sp.csr_matrix(X))
    ad.obs_names, ad.var_names = ROWS, COLS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(path)
    return path


def _fails(capsys, argv, phrase, out):
    code = cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("bnmfzoo fit: error: "), err
    assert phrase in err[0], err[0]
    assert not out.exists()
    assert not list(out.parent.glob(f"{out.name}*"))  # no partial file either
    return err[0]


@pytest.mark.parametrize("kind", ["csc.h5ad", "x.zarr", "x.hdf5", "tenx"])
def test_blocked_method_reads_files_with_labels(tmp_path, kind):
    X = _counts()
    path = tmp_path / kind
    if kind.endswith(".h5ad"):
        ad = anndata.AnnData(sp.csc_matrix(X))
        ad.obs_names, ad.var_names = ROWS, COLS
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ad.write_h5ad(path)
    elif kind.endswith(".zarr"):
        zarr.create_array(path, shape=X.shape, chunks=(8, 12), dtype="int32")[:] = X
    elif kind.endswith(".hdf5"):
        with h5py.File(path, "w") as f:
            f.create_dataset("counts", data=X, chunks=(8, 12))
    else:
        write_10x_mtx(SparseCounts(sp.csr_array(X), np.array(ROWS), np.array(COLS), {}, {},
                                   {}), path)
    out = tmp_path / "out.nc"
    assert cli.main(["fit", str(path), *FIT, "--method", "blocked_gibbs", "--block-rows", "8",
                     "--out", str(out)]) == 0
    dt = xr.open_datatree(out)
    assert dt.posterior["W"].shape == (1, 4, 2, 12)
    assert dt.attrs["n_blocks"] == 4 and dt.attrs["method"] == "blocked_gibbs"
    if kind != "x.zarr" and kind != "x.hdf5":
        assert list(dt["rows"]["row"].values) == ROWS
        assert list(dt.posterior["col"].values) == COLS


def test_other_methods_read_zarr_and_hdf5_whole(tmp_path):
    X = _counts()
    zarr.create_array(tmp_path / "x.zarr", shape=X.shape, chunks=(8, 12), dtype="int32")[:] = X
    out = tmp_path / "gibbs.nc"
    assert cli.main(["fit", str(tmp_path / "x.zarr"), *FIT, "--out", str(out)]) == 0
    assert xr.open_datatree(out).posterior["W"].sizes["col"] == 12


@pytest.mark.parametrize("method", [[], ["--method", "blocked_gibbs"]])
def test_normalized_h5ad_one_line(tmp_path, capsys, method):
    X = _counts()
    X = np.log1p(X / X.sum(1, keepdims=True).clip(1) * 1e4)
    path = _h5ad(tmp_path / "norm.h5ad", X)
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(path), *FIT, *method, "--out", str(out)],
           "holds non-integer values", out)


@pytest.mark.parametrize("method", [[], ["--method", "blocked_gibbs"]])
def test_negative_zarr_one_line(tmp_path, capsys, method):
    X = _counts()
    X[5, 5] = -3
    zarr.create_array(tmp_path / "n.zarr", shape=X.shape, chunks=(8, 12), dtype="int32")[:] = X
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(tmp_path / "n.zarr"), *FIT, *method, "--out", str(out)],
           "holds negative values (min -3)", out)


@pytest.mark.parametrize("method", [[], ["--method", "blocked_gibbs"]])
def test_wrong_dtype_hdf5_one_line(tmp_path, capsys, method):
    with h5py.File(tmp_path / "c.hdf5", "w") as f:
        f.create_dataset("X", data=_counts().astype(np.complex64))
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(tmp_path / "c.hdf5"), *FIT, *method, "--out", str(out)],
           "stores complex64 values; a matrix file must hold real numbers", out)


@pytest.mark.parametrize("method", [[], ["--method", "blocked_gibbs"]])
def test_10x_without_barcodes_one_line(tmp_path, capsys, method):
    folder = tmp_path / "tenx"
    write_10x_mtx(SparseCounts(sp.csr_array(_counts()), np.array(ROWS), np.array(COLS), {},
                               {}, {}), folder)
    (folder / "barcodes.tsv.gz").unlink()
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(folder), *FIT, *method, "--out", str(out)],
           "a 10x folder needs barcodes.tsv(.gz) beside matrix.mtx", out)


def test_blocked_method_other_model_and_block_rows_alone_refused(tmp_path, capsys):
    path = _h5ad(tmp_path / "x.h5ad", _counts())
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(path), "--model", "dir_dir", "--method", "blocked_gibbs",
                    "--out", str(out)], "fits the models poisson, exponential_gaussian", out)
    _fails(capsys, ["fit", str(path), *FIT, "--block-rows", "5", "--out", str(out)],
           "--block-rows applies to --method blocked_gibbs", out)


@pytest.mark.slow  # the client tries for 10 s before it gives up
def test_unreachable_scheduler_one_line(tmp_path, capsys):
    path = _h5ad(tmp_path / "x.h5ad", _counts())
    out = tmp_path / "o.nc"
    _fails(capsys, ["fit", str(path), *FIT, "--method", "blocked_gibbs", "--scheduler",
                    "tcp://127.0.0.1:9", "--out", str(out)],
           "no Dask scheduler answered at 'tcp://127.0.0.1:9'", out)


@pytest.mark.slow  # starts a LocalCluster
def test_block_above_worker_memory_one_line(tmp_path, capsys):
    """A dense Zarr array of 4000 x 5000 cells (a few non-zero): a block of 4000 columns is
    sized as its dense piece (128 MB as float64), above 70% of a 200 MB limit: refused before
    any block is read, in one line naming the worker, the block and the limit."""
    distributed = pytest.importorskip("distributed")
    z = zarr.create_array(tmp_path / "big.zarr", shape=(4000, 5000), chunks=(500, 5000),
                          dtype="float32")
    z[:8, :8] = np.eye(8, dtype=np.float32) * 3
    out = tmp_path / "o.nc"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  memory_limit="200MB", dashboard_address=None) as cluster:
        line = _fails(capsys, ["fit", str(tmp_path / "big.zarr"), *FIT, "--method",
                               "blocked_gibbs", "--block-rows", "4000", "--scheduler",
                               cluster.scheduler_address, "--out", str(out)],
                      "out of memory: worker tcp://", out)
    # wider than tall: column blocks; block 0 is 4000 columns read as a 4000 x 4000 float64
    # piece (128 MB) + 8 entries x 12 B + 4001 offsets x 8 B: 122.1 MiB
    assert "block 0: 122.1 MiB" in line and "memory_limit of 190.7 MiB" in line
    assert "use more workers or a larger memory_limit" in line and "nothing was run" in line
