"""Hostile input files, second probe: sizes declared by headers, numeric headers, count data.

Each test runs the command in-process (``cli.main``) where it can and asserts the one-line
message (exit 2) and that nothing was written to the output folder. ``test_hostile_files``
holds the first probe's cases (typos, ambiguous layouts, symlinks, full disk while fitting);
this file adds the ``.npz`` and netCDF bombs, the numeric header, all-zero and duplicate
counts, ``--long`` rows without counts, duplicate labels on the count path, a full disk while
a report is written, non-integer counts floored by PyMC and genomes given as columns.
"""

import errno
import os
import subprocess
import sys
import warnings
from pathlib import Path

import h5netcdf
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import xarray as xr
from _synthetic import tiny_result

import bnmfzoo._base.memory as memory
from bnmfzoo import cli
from bnmfzoo._fitcli import atomic_write, read_long, read_matrix


def _fails(capsys, argv, *words):
    """``bnmfzoo ARGV`` exits 2 with one line on stderr holding every word; return the line."""
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _empty(folder):
    return sorted(p.name for p in Path(folder).iterdir()) == []


def _npz_bomb(path, shape=(2, 400_000_000)):
    sp.save_npz(path, sp.csr_array((np.array([1.0, 2.0, 3.0]), (np.array([0, 1, 1]),
                                                               np.array([0, 5, 7]))),
                                   shape=shape))
    return path


def _nc_bomb(path):
    """A valid netCDF4 result declaring 12 GB (4 x 1000 x 75,000 x 5 float64), never written."""
    with h5netcdf.File(path, "w") as f:
        g = f.create_group("posterior")
        g.dimensions = {"chain": 4, "draw": 1000, "row": 75_000, "factor": 5}
        g.create_variable("A", ("chain", "draw", "row", "factor"), float,
                          chunks=(1, 10, 1000, 5), compression="gzip")
    return path


def _fit(data, out, *extra):
    return ["fit", data, "--out", out, "--quiet", *extra]


# -- sizes checked before reading ------------------------------------------------------------


def test_npz_bomb_is_refused_from_its_headers(tmp_path, capsys):
    bomb = _npz_bomb(tmp_path / "x.npz")
    assert bomb.stat().st_size < 2000
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(bomb, out / "r.nc", "--model", "poisson", "--rank", "2"),
           "declares a 2 x 400000000 sparse matrix", "3 stored entries", "in memory, more than")
    assert _empty(out)


def test_npz_member_declaring_more_than_it_holds_is_refused(tmp_path, capsys):
    """A member whose .npy header declares 2e8 entries but holds 3 (forged or truncated)."""
    import zipfile

    bomb = _npz_bomb(tmp_path / "x.npz", shape=(2, 9))
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(bomb) as src, zipfile.ZipFile(forged, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "data.npy":
                header = np.lib.format.header_data_from_array_1_0(np.zeros(200_000_000))
                head = tmp_path / "h"
                with open(head, "wb") as fh:
                    np.lib.format.write_array_header_1_0(fh, header)
                data = head.read_bytes() + np.array([1.0, 2.0, 3.0]).tobytes()
            dst.writestr(info.filename, data)
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(forged, out / "r.nc", "--model", "poisson", "--rank", "2"),
           "member 'data' declares a 200000000 float64 array", "(truncated or corrupt)")
    assert _empty(out)


def test_netcdf_result_bomb_is_refused_before_the_report_reads_it(tmp_path, capsys):
    bomb = _nc_bomb(tmp_path / "r.nc")
    assert bomb.stat().st_size < 20_000
    _fails(capsys, ["report", bomb, "--out", tmp_path / "rep"], "declares 12 GB of variables",
           "posterior/A: 4 x 1000 x 75000 x 5", "never written")
    assert not (tmp_path / "rep").exists()


def test_report_and_text_sized_against_the_budget(tmp_path, capsys, monkeypatch):
    """Under a small memory budget a real (written) result and a CSV are refused up front."""
    result = tiny_result(tmp_path / "r.nc")
    (tmp_path / "x.csv").write_text("1,2,3\n" * 2000)
    monkeypatch.setattr(memory, "memory_budget", lambda: 5_000)
    _fails(capsys, ["report", result, "--out", tmp_path / "rep"], "the report of",
           "would need", "in memory, more than the 5 kB allowed")
    assert not (tmp_path / "rep").exists()
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(tmp_path / "x.csv", out / "r.nc", "--rank", "1"),
           "x.csv (12 kB of text, up to 6,001 cells) parsed would need")
    assert _empty(out)


def test_netcdf_data_file_is_sized_before_reading(tmp_path, capsys):
    nc = tmp_path / "x.nc"
    with h5netcdf.File(nc, "w") as f:  # a coordinate xarray would load as an index at open
        f.dimensions = {"row": 300_000_000, "col": 3}
        f.create_variable("row", ("row",), "i8", chunks=(100_000,), compression="gzip")
        f.create_variable("X", ("row", "col"), float, chunks=(1000, 3), compression="gzip")
    import h5py

    with h5py.File(tmp_path / "x.h5", "w") as f:  # plain HDF5, no netCDF dimensions
        f.create_dataset("X", shape=(200_000, 100_000), dtype="f8", chunks=(100, 100),
                         compression="gzip")
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(nc, out / "r.nc", "--rank", "1"), "x.nc", "300000000 x 3")
    _fails(capsys, _fit(tmp_path / "x.h5", out / "r.nc", "--rank", "1"),
           "x.h5 (160 GB of variables; the largest, /X: 200000 x 100000) would need")
    assert _empty(out)


_RSS_SCRIPT = """
import sys
from bnmfzoo import cli
from bnmfzoo._base.memory import peak_resident_bytes
codes = [cli.main(["fit", sys.argv[1], "--model", "poisson", "--rank", "2", "--out",
                   sys.argv[3], "--quiet"]),
         cli.main(["report", sys.argv[2], "--out", sys.argv[4]])]
peak = peak_resident_bytes() // 1024  # kB: this program's own peak, not the parent's
print("RESULT", *codes, peak)
"""


def test_bombs_are_refused_with_peak_memory_under_200_mb(tmp_path):
    """Both bombs in one process: its peak resident memory (imports included) < 200 MB."""
    npz, nc = _npz_bomb(tmp_path / "x.npz"), _nc_bomb(tmp_path / "r.nc")
    env = dict(os.environ, PYTHONPATH=str(Path(cli.__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, npz, nc, tmp_path / "o.nc",
                           tmp_path / "rep"], capture_output=True, text=True, env=env,
                          timeout=300)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, proc.stderr[-2000:]
    _, fit_code, report_code, peak_kb = line[0].split()
    assert (fit_code, report_code) == ("2", "2"), proc.stderr
    assert int(peak_kb) < 200_000, f"peak RSS {int(peak_kb) / 1e3:.0f} MB"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "x.npz"]


# -- one rule for headers and labels ---------------------------------------------------------


def test_pandas_default_column_names_are_a_header(tmp_path):
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=(30, 20))
    pd.DataFrame(counts).to_csv(tmp_path / "a.csv", index=False)
    X, info = read_matrix(tmp_path / "a.csv", return_info=True)
    assert X.shape == (30, 20) and info.header and X["col"].values.tolist() == list(range(20))
    np.testing.assert_array_equal(X.values, counts)
    # 1..N (R's write.csv names, say) and real data under 0..2 are headers too
    pd.DataFrame(counts, columns=range(1, 21)).to_csv(tmp_path / "b.csv", index=False)
    assert read_matrix(tmp_path / "b.csv").shape == (30, 20)
    pd.DataFrame(rng.random((10, 3))).to_csv(tmp_path / "c.csv", index=False)
    assert read_matrix(tmp_path / "c.csv").shape == (10, 3)
    # pandas' default index under an empty corner: labels and header, as before
    pd.DataFrame(counts).to_csv(tmp_path / "d.csv")
    X = read_matrix(tmp_path / "d.csv")
    assert X.shape == (30, 20) and X["row"].values.tolist() == list(range(30))


def test_numeric_first_lines_that_stay_data_or_are_ambiguous(tmp_path, capsys):
    # fewer than 5 integer columns: 0,1,2 is a plausible row of counts, so data (as before)
    (tmp_path / "s.csv").write_text("0,1,2\n3,0,2\n1,1,0\n")
    assert read_matrix(tmp_path / "s.csv").shape == (3, 3)
    # np.arange data: line 2 continues the count of line 1; names or data? refused
    (tmp_path / "x.csv").write_text("0,1,2,3,4\n5,6,7,8,9\n10,11,12,13,14\n")
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(tmp_path / "x.csv", out / "r.nc", "--rank", "1"),
           "x.csv line 1: line 2 continues the count of line 1 (0, ..., 4, then 5, ...)",
           "pass --header or --no-header")
    assert _empty(out)
    assert read_matrix(tmp_path / "x.csv", header=True).shape[0] == 2  # the option settles it
    assert read_matrix(tmp_path / "x.csv", header=False).shape[0] == 3


def test_long_format_follows_the_same_rule(tmp_path):
    lines = "".join(f"{d},{n},{d + n + 0.5}\n" for d in range(4) for n in range(3))
    (tmp_path / "real.csv").write_text("0,1,2\n" + lines)  # pandas' names over real values
    e, info = read_long(tmp_path / "real.csv")
    assert info.header and e.n_observed == 12
    (tmp_path / "int.csv").write_text("0,1,2\n" + lines.replace(".5", ""))
    # over integer counts 0,1,2 is an entry (row 0, col 1, count 2), added to the other one
    e, info = read_long(tmp_path / "int.csv", counts=True)
    assert not info.header and info.summed == 1 and e.n_observed == 12
    e, info = read_long(tmp_path / "int.csv", counts=True, header=True)
    assert info.header and info.summed == 0


# -- count data --------------------------------------------------------------------------------


def test_all_zero_counts_are_refused_on_the_command_line(tmp_path, capsys):
    np.savetxt(tmp_path / "z.csv", np.zeros((30, 20)), delimiter=",", fmt="%d")
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(tmp_path / "z.csv", out / "r.nc", "--model", "poisson", "--rank", "2"),
           "z.csv holds no nonzero count: a count model has nothing to factorize")
    sp.save_npz(tmp_path / "z.npz", sp.csr_array(np.zeros((5, 4))))
    _fails(capsys, _fit(tmp_path / "z.npz", out / "r.nc", "--model", "poisson", "--rank", "2"),
           "z.npz holds no nonzero count")
    assert _empty(out)


def test_duplicate_sparse_entries_sum_for_counts_and_are_refused_otherwise(tmp_path, capsys):
    """A cell stored twice: counts add up (scipy's meaning, and the count models' in Python);
    for a Gaussian or binary model two observations of one cell are refused, in a file as in
    Python."""
    from bnmfzoo._base.validation import check_entries
    from bnmfzoo._terms.poisson import count_entries

    coo = sp.coo_array((np.array([2.0, 3.0, 1.0, 4.0]), (np.array([0, 0, 1, 2]),
                                                         np.array([1, 1, 0, 2]))), shape=(3, 3))
    sp.save_npz(tmp_path / "d.npz", coo)
    e, info = read_long(tmp_path / "d.npz", counts=True)
    python = count_entries(coo)
    assert e.values.tolist() == python.values.tolist() == [5.0, 1.0, 4.0]
    assert info.summed == 1
    (tmp_path / "d.csv").write_text("g1,c2,2\ng1,c2,3\ng2,c1,1\ng3,c3,4\n")
    e, info = read_long(tmp_path / "d.csv", counts=True)
    assert e.values.tolist() == [5.0, 1.0, 4.0] and info.summed == 1
    with pytest.raises(ValueError, match="1 duplicate entries"):
        check_entries(coo)
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(tmp_path / "d.npz", out / "r.nc", "--rank", "1"),
           "d.npz", "1 duplicate entries (first: row 0, col 1)")
    assert _empty(out)


def test_long_counts_keep_rows_without_a_listed_count(tmp_path, capsys):
    rng = np.random.default_rng(0)
    counts = rng.poisson(2.0, size=(30, 20))
    counts[17] = 0  # a row with no nonzero count: never listed
    rows, cols = np.nonzero(counts)
    pd.DataFrame({"r": rows, "c": cols, "v": counts[rows, cols]}).to_csv(tmp_path / "l.csv",
                                                                        index=False)
    e, info = read_long(tmp_path / "l.csv", counts=True)
    assert e.shape == (29, 20) and "a row with no listed cell is not in the data" in \
        info.describe() and "--shape D,N" in info.describe()
    e, info = read_long(tmp_path / "l.csv", counts=True, shape=(30, 20))
    assert e.shape == (30, 20) and "--shape" not in info.describe()
    np.testing.assert_array_equal(e.to_dense(0.0), counts)
    out = tmp_path / "out"
    out.mkdir()
    _fails(capsys, _fit(tmp_path / "l.csv", out / "r.nc", "--model", "poisson", "--rank", "2",
                        "--long", "--shape", "20,20"),
           "row key 20 is not an integer position in 0..19")
    _fails(capsys, _fit(tmp_path / "l.csv", out / "r.nc", "--rank", "2", "--shape", "30,20"),
           "--shape applies to sparse data (--long)")
    assert _empty(out)


def test_duplicate_row_labels_are_refused_on_the_count_path(tmp_path, capsys):
    import bnmfzoo as bz

    df = pd.DataFrame(np.arange(12.0).reshape(4, 3), index=["a", "a", "b", "c"])
    for build in (bz.models.poisson, bz.models.exponential_gaussian):
        with pytest.raises(ValueError, match="duplicate row labels: 'a' appears 2 times"):
            build(df, 2)
    xr.DataArray(df.to_numpy(), dims=("row", "col"),
                 coords={"row": df.index}).to_dataset(name="X").to_netcdf(tmp_path / "x.nc")
    out = tmp_path / "out"
    out.mkdir()
    for model in ("poisson", "exponential_gaussian"):
        _fails(capsys, _fit(tmp_path / "x.nc", out / "r.nc", "--model", model, "--rank", "2"),
               "duplicate row labels: 'a' appears 2 times")
    assert _empty(out)


def test_non_integer_counts_floored_by_pymc_warn_once(recwarn):
    import pymc as pm

    from bnmfzoo.models import recognize

    X = np.array([[1.5, 2.0, 0.0], [0.3, 4.0, 1.0]])
    with pm.Model() as model:
        data = pm.Data("counts", X)
        A = pm.Gamma("A", 1.0, 1.0, shape=(2, 1))
        W = pm.Gamma("W", 1.0, 1.0, shape=(1, 3))
        pm.Poisson("X", mu=A @ W, observed=data)
    warnings.simplefilter("always")
    recognize(model)
    recognize(model)
    msgs = [str(w.message) for w in recwarn if "floors" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("the observed data of 'X' (counts) hold 2 non-integer values, "
                              "e.g. 1.5 at [0, 0], which PyMC floors")
    with pm.Model() as model:  # integer-valued floats: nothing to say
        data = pm.Data("counts", np.round(X))
        A = pm.Gamma("A", 1.0, 1.0, shape=(2, 1))
        W = pm.Gamma("W", 1.0, 1.0, shape=(1, 3))
        pm.Poisson("X", mu=A @ W, observed=data)
    recwarn.clear()
    recognize(model)
    assert not [w for w in recwarn if "floors" in str(w.message)]


def _channels():
    return [f"{a}[{s}]{b}" for s in ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
            for a in "ACGT" for b in "ACGT"]


def test_genomes_as_columns_are_recognized(tmp_path, capsys):
    from bnmfzoo._fitcli import check_count_layout

    rng = np.random.default_rng(0)
    genomes = [f"PD{i}" for i in range(5)]
    X = pd.DataFrame(rng.poisson(4.0, (96, 5)), index=_channels(), columns=genomes)
    X.index.name = "channel"
    X.to_csv(tmp_path / "sbs.csv")
    as_read = read_matrix(tmp_path / "sbs.csv")
    check_count_layout(as_read, tmp_path / "sbs.csv")
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: the 96 rows of") and "are SBS96 channels (A[C>A]A, ...)" \
        in err and "pass --transpose" in err and len(err.splitlines()) == 1
    check_count_layout(as_read.T.rename({"row": "col", "col": "row"}), "t.csv")  # samples x
    check_count_layout(as_read, "sbs.csv", transposed=True)                       # channels
    assert capsys.readouterr().err == ""
    # --transpose on the command line (dense and --long): no warning, the count checks follow
    (X * 0).to_csv(tmp_path / "zero.csv")
    rows, cols = np.nonzero(np.ones((96, 5)))
    pd.DataFrame({"channel": np.array(_channels())[rows], "genome": np.array(genomes)[cols],
                  "count": 0}).to_csv(tmp_path / "zero_long.csv", index=False)
    out = tmp_path / "out"
    out.mkdir()
    for extra in ([], ["--long"]):
        _fails(capsys, _fit(tmp_path / ("zero_long.csv" if extra else "zero.csv"), out / "r.nc",
                            "--model", "poisson", "--rank", "2", "--transpose", *extra),
               "holds no nonzero count")
    assert _empty(out)


# -- writing ----------------------------------------------------------------------------------


def test_full_disk_while_writing_a_report_leaves_nothing(tmp_path, capsys, monkeypatch):
    """ENOSPC once the first figure is written: one line, and no file of the new report (the
    previous report, if any, unchanged)."""
    from bnmfzoo._base.results import build_datatree

    rng = np.random.default_rng(0)  # two figures: traces.png, then report.html
    result = atomic_write(build_datatree({"tau": rng.gamma(2.0, size=(2, 20))},
                                         attrs={"method": "gibbs"}), tmp_path / "r.nc")
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "report.html").write_text("previous report")
    real_write, synced = os.write, []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))

    def write(fd, data):
        if synced:  # a first file is complete: the disk is now full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    _fails(capsys, ["report", result, "--out", rep], "no space left on the device",
           "nothing was written", str(rep))
    monkeypatch.undo()
    assert sorted(p.name for p in rep.iterdir()) == ["report.html"]
    assert (rep / "report.html").read_text() == "previous report"
    # a new folder is not left behind either
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(os, "write", write)
    _fails(capsys, ["report", result, "--out", tmp_path / "new"], "nothing was written")
    monkeypatch.undo()
    assert not (tmp_path / "new").exists()
