"""Matrix files read block by block: every format gives the in-memory matrix's blocks exactly,
one block is read without the rest of the file, and the blocked fit of a file is bit for bit
the fit of the same matrix in memory, with the file's labels."""

import tracemalloc
import warnings

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.datasets import matrixfiles
from bnmfzoo.datasets.counts import SparseCounts
from bnmfzoo.datasets.matrixfiles import open_matrix
from bnmfzoo.datasets.singlecell import write_10x_mtx
from bnmfzoo.inference.blocked import ArraySource, FileSource, fit_blocked_gibbs

anndata = pytest.importorskip("anndata")
zarr = pytest.importorskip("zarr")

D, N = 37, 23
ROWS = [f"AAAC{i:04d}-1" for i in range(D)]
COLS = [f"ENSG{j:011d}" for j in range(N)]
FORMATS = ["csr.h5ad", "csc.h5ad", "dense.h5ad", "csr.zarr", "csc.zarr", "dense.zarr",
           "dense.h5", "csr.h5", "tenx", "tenx.h5"]
LABELLED = {"csr.h5ad", "csc.h5ad", "dense.h5ad", "csr.zarr", "csc.zarr", "tenx", "tenx.h5"}


def _counts():
    rng = np.random.default_rng(11)
    mu = rng.gamma(0.4, 1.0, size=(D, 3)) @ rng.gamma(0.4, 1.0, size=(3, N))
    X = rng.poisson(2.0 * mu).astype(np.float32)
    X[0, 0] = 5.0
    return sp.csr_matrix(X)


def _write_10x_h5(path, X):
    """The 10x HDF5 layout: group ``matrix``, genes x cells compressed over cells."""
    csc = sp.csc_matrix(X.T)  # genes x cells, one column (cell) after another
    with h5py.File(path, "w") as f:
        g = f.create_group("matrix")
        g["data"], g["indices"], g["indptr"] = csc.data, csc.indices, csc.indptr
        g["shape"] = np.array(csc.shape)
        g["barcodes"] = np.array(ROWS, dtype="S")
        g.create_group("features")["id"] = np.array(COLS, dtype="S")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("matrices")
    X = _counts()
    ad = anndata.AnnData(X)
    ad.obs_names, ad.var_names = ROWS, COLS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(d / "csr.h5ad")
        ad.write_zarr(d / "csr.zarr")
        ad.X = sp.csc_matrix(X)
        ad.write_h5ad(d / "csc.h5ad")
        ad.write_zarr(d / "csc.zarr")
        ad.X = X.toarray()
        ad.write_h5ad(d / "dense.h5ad")
    z = zarr.create_array(d / "dense.zarr", shape=(D, N), chunks=(8, N), dtype="float32")
    z[:] = X.toarray()
    with h5py.File(d / "dense.h5", "w") as f:
        f.create_dataset("counts", data=X.toarray(), chunks=(8, N))
    with h5py.File(d / "csr.h5", "w") as f:  # a sparse group in AnnData's encoding
        g = f.create_group("X")
        g.attrs["encoding-type"], g.attrs["shape"] = "csr_matrix", X.shape
        g["data"], g["indices"], g["indptr"] = X.data, X.indices, X.indptr
    write_10x_mtx(SparseCounts(sp.csr_array(X), np.array(ROWS), np.array(COLS), {}, {}, {}),
                  d / "tenx")
    _write_10x_h5(d / "tenx.h5", X)
    return d, sp.csr_matrix(X, dtype=np.float64)


def _same_block(a, b):
    assert a.index == b.index and a.row0 == b.row0 and a.n_cols == b.n_cols
    for field in ("indptr", "cols", "values"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field


@pytest.mark.parametrize("name", FORMATS)
def test_blocks_equal_the_in_memory_blocks(files, name):
    d, X = files
    src = FileSource(d / name, block_rows=10)
    ref = ArraySource(X, 10)
    assert src.shape == X.shape and src.n_blocks == ref.n_blocks == 4
    for b in range(src.n_blocks):
        _same_block(src.load(b), ref.load(b))
    # the transposed view: column blocks of the file are row blocks of X^T
    srcT, refT = FileSource(open_matrix(d / name).T, block_rows=6), ArraySource(X.T, 6)
    assert srcT.n_blocks == refT.n_blocks == 4
    for b in range(srcT.n_blocks):
        _same_block(srcT.load(b), refT.load(b))
    # without block_rows, the same blocks as an in-memory matrix (exact entry counts)
    assert np.array_equal(FileSource(d / name).bounds, [0, D])


@pytest.mark.parametrize("name", FORMATS)
def test_labels_kept(files, name):
    m = open_matrix(files[0] / name)
    if name in LABELLED:
        assert list(m.row_labels) == ROWS and list(m.col_labels) == COLS
        assert list(m.T.row_labels) == COLS
    else:
        assert m.row_labels is None and m.col_labels is None


def test_gaussian_dense_file_nan_is_missing_zero_observed(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 5))
    X[X < -1] = np.nan
    X[0, 1] = 0.0  # an observed zero stays stored
    z = zarr.create_array(tmp_path / "g.zarr", shape=X.shape, chunks=(4, 5), dtype="float64")
    z[:] = X
    block = FileSource(tmp_path / "g.zarr", block_rows=12, counts=False).load(0)
    r, c = np.nonzero(~np.isnan(X))
    assert np.array_equal(block.cols, c) and np.array_equal(block.values, X[r, c])
    assert np.array_equal(np.diff(block.indptr), (~np.isnan(X)).sum(axis=1))


@pytest.mark.parametrize("name", ["csc.h5ad", "dense.zarr", "tenx"])
def test_fit_from_file_is_the_in_memory_fit(files, name):
    d, X = files
    kw = dict(draws=4, tune=2, block_rows=10, random_seed=3)
    ref = fit_blocked_gibbs(X, 2, **kw)
    dt = fit_blocked_gibbs(str(d / name), 2, **kw)
    assert dt.attrs["n_blocks"] == 4
    assert np.array_equal(dt.posterior["W"].values, ref.posterior["W"].values)
    assert np.array_equal(dt["rows"]["A_mean"].values, ref["rows"]["A_mean"].values)
    if name in LABELLED:
        assert list(dt.posterior["col"].values) == COLS
        assert list(dt["rows"]["row"].values) == ROWS


# ---------------------------------------------------------------------- memory
@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """20 000 x 1 000 counts with 1 M stored entries: 12 MB of CSR (data float32 + int32)."""
    d = tmp_path_factory.mktemp("large")
    rng = np.random.default_rng(0)
    nnz_row = 50
    indptr = np.arange(0, 20_000 * nnz_row + 1, nnz_row)
    # one entry in each run of 20 columns: sorted, distinct
    indices = np.arange(0, 1_000, 20) + rng.integers(0, 20, size=(20_000, nnz_row))
    X = sp.csr_matrix((rng.integers(1, 20, indptr[-1]).astype(np.float32), indices.ravel(),
                       indptr), shape=(20_000, 1_000))
    del indices
    ad = anndata.AnnData(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(d / "csr.h5ad")
        ad.X = X.tocsc()
        ad.write_h5ad(d / "csc.h5ad")
    z = zarr.create_array(d / "dense.zarr", shape=(20_000, 1_000), chunks=(500, 1_000),
                          dtype="float32")
    for a in range(0, 20_000, 2_000):
        z[a:a + 2_000] = X[a:a + 2_000].toarray()
    return d, X.nnz * 12 + 8 * 20_001  # CSR bytes as a block stores it (float64 + int32)


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", ["csr.h5ad", "dense.zarr"])
def test_one_block_reads_only_its_rows(large, name):
    """A 500-row block (25 000 entries: 300 kB as a block) of a matrix that takes 12 MB as CSR
    and 40 MB as a float32 dense Zarr array. CSR: the slices of ``indptr``, ``indices`` and
    ``data`` and their float64 copy, about 0.6 MB measured; bound 1/10 of the CSR. Dense:
    the 2 MB piece (500 rows of float32), the chunk being decoded and a mask, 4.1-5.0 MB
    measured; bound 4 pieces, 8 MB, 1/5 of the stored array (1/10 of it as float64)."""
    d, whole = large
    src = FileSource(d / name, block_rows=500)
    peak = _peak(lambda: src.load(7))
    bound = whole / 10 if name == "csr.h5ad" else 4 * 500 * 1_000 * 4
    assert peak < bound, (peak, bound)
    assert src.load(7).nnz == 25_000


def test_csc_rows_scanned_in_pieces(large, monkeypatch):
    """Rows of a CSC ``X`` are found by scanning the stored entries in pieces: the peak is
    bounded by one piece (2^16 entries: indices, mask, positions, values, at most 40 bytes
    each, 2.6 MB) plus the block's entries and their sorted copies (4 blocks, 1.2 MB), 3.8 MB,
    below a third of the 12 MB matrix (about 1.8 MB measured)."""
    d, whole = large
    monkeypatch.setattr(matrixfiles, "SCAN_ENTRIES", 2**16)
    src = FileSource(d / "csc.h5ad", block_rows=500)
    ref = FileSource(d / "csr.h5ad", block_rows=500)
    peak = _peak(lambda: src.load(3))
    assert peak < 40 * 2**16 + 4 * ref.block_nbytes(3) < whole / 3, peak
    _same_block(src.load(3), ref.load(3))


# ---------------------------------------------------------------------- bad input
def _normalized_h5ad(path):
    X = _counts().toarray()
    X = np.log1p(X / np.maximum(X.sum(1, keepdims=True), 1) * 1e4).astype(np.float32)
    ad = anndata.AnnData(sp.csr_matrix(X))
    ad.obs_names, ad.var_names = ROWS, COLS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(path)
    return path


def test_normalized_h5ad_refused_for_counts_taken_for_gaussian(tmp_path):
    path = _normalized_h5ad(tmp_path / "norm.h5ad")
    with pytest.raises(ValueError, match=r"norm.h5ad holds non-integer values \(e\.g\. .*"
                                         r"normalized or log-transformed data\?\)"):
        fit_blocked_gibbs(str(path), 2, draws=2, tune=0)
    src = FileSource(path, block_rows=10, counts=False)  # a Gaussian model takes them
    assert src.load(0).values.dtype == np.float64


def test_negative_entries_refused_at_open_and_in_a_later_block(tmp_path, monkeypatch):
    X = _counts().toarray()
    X[2, 3] = -1.0
    z = zarr.create_array(tmp_path / "neg.zarr", shape=X.shape, chunks=(8, N), dtype="float32")
    z[:] = X
    with pytest.raises(ValueError, match=r"neg.zarr holds negative values \(min -1\)"):
        FileSource(tmp_path / "neg.zarr")
    # a negative entry past the values checked at open is refused when its block is read
    X[2, 3], X[33, 0] = 0.0, -2.0
    with h5py.File(tmp_path / "neg.h5", "w") as f:
        f.create_dataset("X", data=X, chunks=(8, N))
    monkeypatch.setattr(matrixfiles, "SAMPLE_VALUES", 5 * N)
    src = FileSource(tmp_path / "neg.h5", block_rows=10)
    src.load(0)
    with pytest.raises(ValueError, match=r"X: block 3: .*neg.h5 \(rows 30:37\) holds negative "
                                         r"values \(min -2\)"):
        src.load(3)


@pytest.mark.parametrize("dtype", ["complex128", "S5", "bool"])
def test_wrong_dtype_refused(tmp_path, dtype):
    path = tmp_path / f"bad_{dtype}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=np.ones((4, 3)).astype(dtype))
    with pytest.raises(TypeError, match=rf"bad_{dtype}.h5 \(X\) stores .* values; a matrix "
                                        r"file must hold real numbers"):
        open_matrix(path)


def test_10x_folder_without_barcodes_refused(files, tmp_path):
    import shutil

    folder = tmp_path / "tenx"
    shutil.copytree(files[0] / "tenx", folder)
    (folder / "barcodes.tsv.gz").unlink()
    with pytest.raises(ValueError, match=r"tenx: a 10x folder needs barcodes.tsv\(.gz\) beside "
                                         "matrix.mtx"):
        fit_blocked_gibbs(str(folder), 2, draws=2, tune=0)


def test_stored_nan_refused_for_sparse_gaussian(tmp_path):
    X = sp.random(12, 5, density=0.5, random_state=0, format="csr")
    X.data[3] = np.nan
    with h5py.File(tmp_path / "nan.h5", "w") as f:
        g = f.create_group("X")
        g.attrs["encoding-type"], g.attrs["shape"] = "csr_matrix", X.shape
        g["data"], g["indices"], g["indptr"] = X.data, X.indices, X.indptr
    with pytest.raises(ValueError, match="stores NaN: sparse data list the observed entries"):
        fit_blocked_gibbs(str(tmp_path / "nan.h5"), 2, model="exponential_gaussian", draws=2)


def test_source_pickled_for_workers_without_labels(files):
    import pickle

    src = FileSource(files[0] / "csr.h5ad", block_rows=10)
    back = pickle.loads(pickle.dumps(src))
    assert back.row_labels is None and back.matrix.col_labels is None
    assert list(src.row_labels) == ROWS  # the driver's copy keeps them
    _same_block(back.load(2), src.load(2))


def test_10x_folder_in_cell_order_stops_past_the_block(files, monkeypatch):
    """Cell Ranger writes ``matrix.mtx`` cell by cell: a block stops reading past its cells."""
    monkeypatch.setattr(matrixfiles, "SCAN_ENTRIES", 8)
    seen = []
    chunks = matrixfiles._mtx_chunks

    def counting(*args, **kwargs):
        for piece in chunks(*args, **kwargs):
            seen.append(piece[0][0].size)
            yield piece

    src = FileSource(files[0] / "tenx", block_rows=10)
    assert src.matrix.sorted_rows and not src.matrix.T.sorted_rows
    monkeypatch.setattr(matrixfiles, "_mtx_chunks", counting)
    _same_block(src.load(0), ArraySource(files[1], 10).load(0))
    assert 0 < sum(seen) < files[1].nnz / 2  # block 0 holds 10 of 37 cells
