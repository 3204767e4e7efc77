"""Column blocks and file inputs of the blocked sweep.

Column blocks fit ``X^T`` in row blocks with the priors of ``A`` and ``W`` swapped, so a fit of
``X`` with column blocks is, bit for bit, the fit of ``X.T`` with row blocks, factors and labels
swapped back (``np.array_equal``: the same numbers go through the same kernels). Files on Dask:
each worker reads its own blocks, and the chain is the serial one bit for bit. A worker killed
by its nanny at its ``memory_limit`` while reading a block gives one line naming the block.
"""

import sys
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.inference.blocked import FileSource, fit_blocked_gibbs

anndata = pytest.importorskip("anndata")
zarr = pytest.importorskip("zarr")


def _wide_counts():
    """14 genes x 45 cells (more columns than rows), UMI-like."""
    rng = np.random.default_rng(4)
    mu = rng.gamma(0.5, 1.0, size=(14, 2)) @ rng.gamma(0.5, 1.0, size=(2, 45))
    X = rng.poisson(2.0 * mu).astype(float)
    X[0, 0] = 3.0
    return X


def _wide_gaussian():
    rng = np.random.default_rng(5)
    X = rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 40))
    X += rng.normal(scale=0.3, size=X.shape)
    X[rng.random(X.shape) < 0.2] = np.nan
    return X


CASES = {
    "poisson": (_wide_counts, {}),
    "gaussian": (_wide_gaussian, {"model": "exponential_gaussian"}),
}


def _swapped_equal(by_cols, by_rows):
    """``by_cols`` (fit of X, column blocks) is ``by_rows`` (fit of X.T) with factors swapped."""
    assert by_cols.attrs["blocks"] == "cols"
    assert np.array_equal(by_cols.posterior["A"].values,
                          np.swapaxes(by_rows.posterior["W"].values, 2, 3))
    assert np.array_equal(by_cols["cols"]["W_mean"].values, by_rows["rows"]["A_mean"].values.T)
    assert np.array_equal(by_cols["cols"]["W_last"].values, by_rows["rows"]["A_last"].values.T)
    if "tau" in by_rows.posterior:
        assert np.array_equal(by_cols.posterior["tau"].values, by_rows.posterior["tau"].values)
    assert np.array_equal(by_cols.posterior["row"].values, by_rows.posterior["col"].values)
    assert np.array_equal(by_cols["cols"]["col"].values, by_rows["rows"]["row"].values)


@pytest.mark.parametrize("name", list(CASES))
def test_column_blocks_are_the_transposed_fit_bit_for_bit(name):
    make, kw = CASES[name]
    X = make()
    hyper = {"lambda_A": 2.0, "lambda_W": 0.5} if name == "gaussian" else {"a": 0.7, "b": 1.3}
    common = dict(draws=30, tune=5, random_seed=8, block_rows=10, keep_rows=True, **kw)
    by_cols = fit_blocked_gibbs(X, 2, axis="cols", **hyper, **common)
    if name == "gaussian":  # the rates of A and W trade places in the transposed fit
        swapped = {"lambda_A": 0.5, "lambda_W": 2.0}
    else:  # Gamma(a, b) for both factors: symmetric
        swapped = hyper
    by_rows = fit_blocked_gibbs(X.T, 2, axis="rows", **swapped, **common)
    _swapped_equal(by_cols, by_rows)
    assert np.array_equal(by_cols.posterior["W"].values,
                          np.swapaxes(by_rows.posterior["A"].values, 2, 3))
    assert by_cols.attrs["n_blocks"] == -(-X.shape[1] // 10)  # the columns in blocks of 10
    # "auto" picks the longer axis: the same chain
    auto = fit_blocked_gibbs(X, 2, **hyper, **common)
    assert np.array_equal(auto.posterior["A"].values, by_cols.posterior["A"].values)
    if name == "gaussian":  # the swap matters: unswapped rates give another chain
        other = fit_blocked_gibbs(X.T, 2, axis="rows", **hyper, **common)
        assert not np.array_equal(other.posterior["W"].values, by_rows.posterior["W"].values)


def test_tall_matrix_keeps_row_blocks_and_rows_still_available():
    X = _wide_counts().T
    auto = fit_blocked_gibbs(X, 2, draws=3, tune=1, block_rows=10)
    rows = fit_blocked_gibbs(X, 2, draws=3, tune=1, block_rows=10, axis="rows")
    assert "blocks" not in auto.attrs
    assert np.array_equal(auto.posterior["W"].values, rows.posterior["W"].values)
    with pytest.raises(ValueError, match="axis must be one of"):
        fit_blocked_gibbs(X, 2, draws=3, tune=1, axis="diagonal")


def test_column_blocks_keep_labels_of_anndata_and_files(tmp_path):
    X = _wide_counts()
    ad = anndata.AnnData(sp.csc_matrix(X.astype(np.float32)))
    ad.obs_names = [f"gene{i}" for i in range(X.shape[0])]
    ad.var_names = [f"cell{j}" for j in range(X.shape[1])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.write_h5ad(tmp_path / "wide.h5ad")
    kw = dict(draws=4, tune=1, block_rows=10, random_seed=2)
    mem = fit_blocked_gibbs(ad, 2, **kw)
    disk = fit_blocked_gibbs(str(tmp_path / "wide.h5ad"), 2, **kw)  # CSC: column slices
    for dt in (mem, disk):
        assert dt.attrs["blocks"] == "cols"
        assert list(dt.posterior["row"].values) == list(ad.obs_names)
        assert list(dt["cols"]["col"].values) == list(ad.var_names)
    assert np.array_equal(mem.posterior["A"].values, disk.posterior["A"].values)


# ---------------------------------------------------------------------- Dask
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_file_blocks_read_on_workers_same_bits(client, tmp_path):
    X = _wide_counts().T  # 45 x 14
    z = zarr.create_array(tmp_path / "x.zarr", shape=X.shape, chunks=(10, 14), dtype="int32")
    z[:] = X.astype(np.int32)
    src = FileSource(tmp_path / "x.zarr", block_rows=10)
    assert not src.in_memory  # each worker reads its own blocks from the file
    serial = fit_blocked_gibbs(src, 2, draws=20, tune=0, random_seed=3)
    dist = fit_blocked_gibbs(src, 2, draws=20, tune=0, random_seed=3, client=client)
    mem = fit_blocked_gibbs(X, 2, draws=20, tune=0, random_seed=3, block_rows=10)
    for dt in (dist, mem):
        assert np.array_equal(dt.posterior["W"].values, serial.posterior["W"].values)
        assert np.array_equal(dt["rows"]["A_mean"].values, serial["rows"]["A_mean"].values)


class _Greedy:
    """A source that says its block is small but grows to gigabytes while it is read."""

    in_memory = False

    def __init__(self, X):
        from bnmfzoo.inference.blocked import ArraySource

        self.inner = ArraySource(sp.csr_matrix(X), X.shape[0])
        self.shape, self.bounds = self.inner.shape, self.inner.bounds

    @property
    def n_blocks(self):
        return self.inner.n_blocks

    def block_nbytes(self, b):
        return self.inner.block_nbytes(b)

    def load(self, b):
        hog = []
        for _ in range(64):  # up to 4 GiB, 64 MiB at a time: the nanny acts on the way
            hog.append(np.ones(2**23))
            time.sleep(0.05)
        return self.inner.load(b)


@pytest.mark.slow
def test_worker_killed_at_memory_limit_names_the_block():
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  memory_limit="700MB", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        with pytest.raises(MemoryError) as err:
            fit_blocked_gibbs(_Greedy(_wide_counts().T), 2, draws=2, tune=0, client=c,
                              timeout=120)
    text = str(err.value)
    assert "\n" not in text
    assert "loading the blocks: worker tcp://" in text
    assert "was lost holding block(s) 0" in text
    assert "memory_limit of 667.6 MiB" in text
    assert "use more workers or a higher memory_limit" in text
