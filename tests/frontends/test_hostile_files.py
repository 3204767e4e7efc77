"""Hostile, broken and ambiguous input to the `bnmfzoo` command (issue #35, items 3 and 4).

Each test reproduces one failure of the issue's reliability probe and checks the fix: one-line
errors with exit code 2, nothing allocated before the size check (run under an address-space
cap), nothing written through a symlink, nothing half-written on a full disk or a SIGTERM.
"""

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _synthetic import tiny_result

from bnmfzoo import cli
from bnmfzoo._fitcli import atomic_write, read_matrix

#: address-space cap of the capped subprocesses: PyMC imports in ~1.5 GB of address space, and
#: half of the cap (the memory budget) is far below the allocations the hostile files declare
CAP = 4 * 2**30


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(cli.__file__).resolve().parents[1])
    return env


def _run(args, *, cap=CAP, fsize=None, cwd=None):
    """Run ``bnmfzoo ARGS`` in a subprocess under an address-space (and file-size) cap."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "bnmfzoo.cli", *map(str, args)],
                          capture_output=True, text=True, env=_env(), preexec_fn=limits,
                          timeout=600, cwd=cwd)


def _one_line_exit_2(proc, *words, unconverged=False):
    """One error line; ``unconverged``: after the one-line unconverged-chains warning."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if unconverged:  # a tiny budget: the fit warns (one line) before the write fails
        assert lines[0].startswith("warning: after alignment"), proc.stderr[-2000:]
        lines = lines[1:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _binary_csv(path, D=12, N=9, seed=0):
    V = (np.random.default_rng(seed).random((D, N)) < 0.4).astype(float)
    np.savetxt(path, V, delimiter=",", fmt="%g")
    return path


# -- 3. reading files ----------------------------------------------------------------------------


def test_pandas_csv_round_trips_with_numeric_column_names(tmp_path):
    """``df.to_csv`` with row labels and years as column names reads back the same matrix."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.random((5, 4)), index=["USA", "Cuba", "India", "5637", "Chad"],
                      columns=[1946, 1960, 1975, 1990])
    df.iloc[1, 2] = np.nan
    df.to_csv(tmp_path / "a.csv")
    X = read_matrix(tmp_path / "a.csv")
    assert X["row"].values.tolist() == ["USA", "Cuba", "India", "5637", "Chad"]
    assert X["col"].values.tolist() == [1946, 1960, 1975, 1990]
    np.testing.assert_array_equal(X.values, df.to_numpy())  # to_csv keeps 17 digits
    # integer row labels and integer column names (pandas' default index) come back too
    df2 = pd.DataFrame(rng.random((3, 3)), columns=[2001, 2002, 2003])
    df2.to_csv(tmp_path / "b.csv")
    X2 = read_matrix(tmp_path / "b.csv")
    assert X2["row"].values.tolist() == [0, 1, 2] and X2["col"].values.tolist() == [2001, 2002,
                                                                                     2003]
    np.testing.assert_array_equal(X2.values, df2.to_numpy())


@pytest.mark.parametrize(("text", "match"), [
    # a typo in column 1 is not turned into a column of row labels
    ("1,0,1\n0,1,1\n1.1.1,0,0\n1,1,0\n", r"x.csv line 3, column 1: '1.1.1' is not a number"),
    # a typo in line 1 is not turned into a header
    ("1,0,3.1x,1\n0,1,1,0\n1,0,0,1\n", r"x.csv line 1, column 3: '3.1x' is not a number"),
    # a typo in the top-left cell
    ("1.1.1,0,1\n0,1,1\n1,0,0\n", r"x.csv line 1, column 1: '1.1.1' is not a number"),
    # a named label column over numeric names: a header, or a data row labelled 'country'?
    ("country,1946,1947\nUSA,1,0\nCuba,0,1\n", r"x.csv line 1, column 1: is line 1 a header"),
    # pandas' to_csv of a named index of IDs over numeric column names: the options named
    ("userID,51,52,53\n2,13883,0,5\n7,0,11690,3\n12,1,2,3\n",
     r"x.csv line 1, column 1: 'userID' is not a number.*--header --index-col 0"),
    # an empty corner over numbers everywhere, column 1 not an index 0, 1, 2, ...
    (",5,7\n3,1,0\n9,0,1\n", r"x.csv line 1, column 1 is empty .*--no-header"),
    # 1e400 is infinite as a float64: refused with its position
    ("1,2\n3,1e400\n", r"x.csv line 2, column 2: '1e400' is infinite"),
    # duplicate row labels
    ("g,a,b\nx,1,2\nx,3,4\n", r"row labels in column 1: 'x' on lines 2 and 3"),
])
def test_ambiguous_or_broken_layouts_are_refused_with_line_and_column(tmp_path, text, match):
    (tmp_path / "x.csv").write_text(text)
    with pytest.raises(ValueError, match=match):
        read_matrix(tmp_path / "x.csv")


def test_the_options_settle_what_auto_refuses(tmp_path):
    (tmp_path / "x.csv").write_text("country,1946,1947\nUSA,1,0\nCuba,0,1\n")
    X = read_matrix(tmp_path / "x.csv", header=True)
    assert X["col"].values.tolist() == [1946, 1947] and X["row"].values.tolist() == ["USA",
                                                                                     "Cuba"]
    X = read_matrix(tmp_path / "x.csv", header=False)
    assert X.shape == (3, 2) and X["row"].values.tolist() == ["country", "USA", "Cuba"]
    # a named ID column over numeric names: --header alone leaves it to a guess, refused
    (tmp_path / "z.csv").write_text("userID,51,52\n2,13883,0\n7,0,11690\n12,1,2\n")
    with pytest.raises(ValueError, match=r"line 1: column 1 is named 'userID'.*--index-col 0"):
        read_matrix(tmp_path / "z.csv", header=True)
    X = read_matrix(tmp_path / "z.csv", header=True, index_col=0)
    assert X["row"].values.tolist() == [2, 7, 12] and X["col"].values.tolist() == [51, 52]
    assert read_matrix(tmp_path / "z.csv", header=True, index_col=None).shape == (3, 3)
    # mostly text with a number in column 1: labels (a cell line can be called 5637)
    (tmp_path / "y.csv").write_text("line,d1\nA549,1\n5637,2\nHeLa,3\n")
    assert read_matrix(tmp_path / "y.csv")["row"].values.tolist() == ["A549", "5637", "HeLa"]


def test_cli_refuses_typo_with_exit_2(tmp_path, capsys):
    (tmp_path / "x.csv").write_text("1,0,1\n0,1,1\n1.1.1,0,0\n1,1,0\n")
    code = cli.main(["fit", str(tmp_path / "x.csv"), "--model", "beta_dir", "--out",
                     str(tmp_path / "r.nc"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "line 3, column 1: '1.1.1'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r.nc").exists()


# -- 4. sizes checked before allocation ------------------------------------------------------------


_CAPPED_SCRIPT = """
import sys
from bnmfzoo import cli
for args in sys.argv[1:]:
    code = cli.main(args.split("|"))
    print("EXIT", code, file=sys.stderr, flush=True)
"""


def test_sizes_are_checked_before_allocation_under_a_memory_cap(tmp_path):
    """A 6 kB netCDF declaring 40,000 x 40,000, a 200-byte ``.npy`` header declaring
    100,000 x 100,000 and ``--draws 1000000000``: each refused in one line (exit 2) before
    anything is allocated, in a process capped at 4 GB of address space (one process for the
    three, to keep the test at one PyMC import)."""
    import h5netcdf

    nc = tmp_path / "big.nc"
    with h5netcdf.File(nc, "w") as f:  # 40,000 x 40,000 declared, nothing written
        f.dimensions = {"row": 40_000, "col": 40_000}
        f.create_variable("X", ("row", "col"), float, chunks=(100, 100), compression="gzip")
    assert nc.stat().st_size < 20_000
    npy = tmp_path / "big.npy"
    with open(npy, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (100_000, 100_000)})
        fh.write(b"\0" * 64)
    assert npy.stat().st_size < 300
    data = _binary_csv(tmp_path / "v.csv")
    out = tmp_path / "r.nc"
    runs = [f"fit|{nc}|--model|beta_dir|--out|{out}|--quiet",
            f"fit|{npy}|--model|beta_dir|--out|{out}|--quiet",
            f"fit|{data}|--model|beta_dir|--draws|1000000000|--out|{out}|--quiet"]
    proc = subprocess.run([sys.executable, "-c", _CAPPED_SCRIPT, *runs], capture_output=True,
                          text=True, env=_env(), timeout=600,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr and len(lines) == 6, proc.stderr[-3000:]
    assert lines[1::2] == ["EXIT 2"] * 3
    assert "40000 x 40000" in lines[0] and "in memory, more than" in lines[0]
    assert "declares a 100000 x 100000 float64 array" in lines[2] and "64 bytes" in lines[2]
    assert "--draws 1000000000 x --chains 2" in lines[4] and "in memory" in lines[4]
    assert not out.exists()


@pytest.mark.parametrize("args, match", [
    (["--chains", "1000000"], "argument --chains: must be an integer from 1 to 1000"),
    (["--draws", "1e9"], "argument --draws: must be an integer >= 1, got '1e9'"),
    (["--thin", "0"], "argument --thin: must be an integer >= 1"),
])
def test_absurd_counts_are_refused(tmp_path, capsys, args, match):
    data = _binary_csv(tmp_path / "v.csv")
    with pytest.raises(SystemExit) as exc:
        cli.main(["fit", str(data), "--model", "beta_dir", "--out", str(tmp_path / "r.nc"),
                  *args])
    assert exc.value.code == 2 and match in capsys.readouterr().err


# -- 4. safe writing -----------------------------------------------------------------------------


def test_report_never_writes_through_symlinks(tmp_path):
    result = tiny_result(tmp_path / "r.nc")
    out = tmp_path / "rep"
    out.mkdir()
    victims = {name: tmp_path / f"victim_{name}" for name in ("report.html", "fit.png")}
    for name, victim in victims.items():
        victim.write_text("precious")
        (out / name).symlink_to(victim)
    assert cli.main(["report", str(result), "--out", str(out)]) == 0
    for name, victim in victims.items():
        assert victim.read_text() == "precious"  # the link's target is untouched
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 1000
    assert "<html" in (out / "report.html").read_text()


def test_fit_out_symlink_is_replaced_and_file_mode_kept(tmp_path):
    data = _binary_csv(tmp_path / "v.csv")
    victim = tmp_path / "victim.nc"
    victim.write_text("precious")
    link = tmp_path / "link.nc"
    link.symlink_to(victim)
    args = ["fit", str(data), "--model", "beta_dir", "--truncation", "3", "--draws", "4",
            "--tune", "2", "--chains", "1", "--seed", "0", "--quiet"]
    assert cli.main([*args, "--out", str(link)]) == 0
    assert victim.read_text() == "precious" and not link.is_symlink()
    # a result rewritten over a chmod-600 file stays 600
    out = tmp_path / "r.nc"
    out.write_text("old")
    out.chmod(0o600)
    assert cli.main([*args, "--out", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert xr.open_datatree(out).attrs["model"] == "beta_dir"


def test_full_disk_is_one_line_exit_2_and_writes_nothing(tmp_path):
    """A file-size limit (RLIMIT_FSIZE: ``write`` fails with EFBIG, the same path as ENOSPC,
    since the CLI ignores SIGXFSZ) while the result is written: one line, exit 2, the old
    result unchanged, no ``.part`` file, no segfault (HDF5 never writes to the disk itself)."""
    data = _binary_csv(tmp_path / "v.csv", D=30, N=40)
    out = tmp_path / "r.nc"
    args = ["fit", data, "--model", "beta_dir", "--draws", "50", "--tune", "5", "--chains",
            "1", "--seed", "0", "--keep-all", "--out", out, "--quiet"]
    # a first run, in this process, writes the result (and fills PyTensor's and Numba's caches,
    # the subprocess's too, which the file-size limit would otherwise hit first)
    assert cli.main([str(a) for a in args]) == 0
    previous = out.read_bytes()
    assert len(previous) > 1_000_000
    proc = _run(args[:-3] + ["--seed", "1", "--out", out, "--quiet"], fsize=1_000_000)
    _one_line_exit_2(proc, "file size limit reached", "nothing was written",
                     "previous file is unchanged", unconverged=True)
    assert out.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "v.csv"]


def test_enospc_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """ENOSPC (a full disk) simulated in ``write``: the same clean failure."""
    import errno

    real = os.write
    calls = []

    def full(fd, data):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data[:10])

    out = tmp_path / "r.nc"
    out.write_text("previous result")
    from bnmfzoo._base.results import build_datatree

    dt = build_datatree({"A": np.ones((1, 3, 2, 2))}, attrs={"method": "test"})
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="no space left on the device; nothing was written"):
        atomic_write(dt, out)
    monkeypatch.undo()
    assert out.read_text() == "previous result" and sorted(tmp_path.iterdir()) == [out]


def test_sigterm_is_handled_like_ctrl_c(tmp_path):
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "x.csv", rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)),
               delimiter=",")
    out = tmp_path / "r.nc"
    out.write_bytes(b"previous result")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bnmfzoo.cli", "fit", str(tmp_path / "x.csv"), "--rank", "2",
         "--draws", "2000000", "--tune", "10", "--seed", "0", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        for line in proc.stderr:  # PyMC logs "Sequential sampling ..." when sampling starts
            if "sampling" in line.lower():
                break
        time.sleep(1.0)
        assert proc.poll() is None, "the fit ended before it was terminated"
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 143, err  # 128 + SIGTERM, as shells report it
    assert "interrupted; no result written" in err and "Traceback" not in err
    assert out.read_bytes() == b"previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "x.csv"]


def test_report_refuses_netcdf_that_is_not_a_result(tmp_path, capsys):
    path = tmp_path / "data.nc"
    xr.Dataset({"X": (("a", "b"), np.ones((3, 2)))}).to_netcdf(path, engine="h5netcdf")
    assert cli.main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is not a bnmfzoo result" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "data-report").exists()


# -- 5. library checks -----------------------------------------------------------------------------


def test_library_refuses_complex_and_duplicate_labels(tmp_path, capsys):
    from bnmfzoo._base.validation import check_matrix

    with pytest.raises(TypeError, match="X has complex entries"):
        check_matrix(np.array([[1 + 2j, 1.0], [0.5, 2.0]]))
    with pytest.raises(TypeError, match="complex"):
        check_matrix(xr.DataArray(np.ones((2, 2), dtype=complex), dims=("row", "col")))
    with pytest.raises(ValueError, match="duplicate row labels: 'a' appears 2 times"):
        check_matrix(pd.DataFrame(np.ones((2, 2)), index=["a", "a"]))
    with pytest.raises(ValueError, match="duplicate column labels"):
        check_matrix(xr.DataArray(np.ones((2, 2)), dims=("row", "col"),
                                  coords={"col": [3, 3]}))
    with pytest.raises(ValueError, match="infinite entry .* row 1, column 'b'"):
        check_matrix(pd.DataFrame([[1.0, 2.0], [3.0, np.inf]], columns=["a", "b"]))
    np.save(tmp_path / "c.npy", np.ones((3, 3), dtype=complex))
    assert cli.main(["fit", str(tmp_path / "c.npy"), "--rank", "1", "--out",
                     str(tmp_path / "r.nc")]) == 2
    assert "complex" in capsys.readouterr().err


@pytest.mark.parametrize("shape", [(2, 7), (7, 2), (1, 5)])
def test_fit_particles_on_tiny_matrices(shape):
    """The Q-Transform start padded the SVD of a matrix with fewer than 3 rows or columns
    wrongly (a matmul shape error); it now works at every shape."""
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import silf

    X = np.random.default_rng(0).random(shape) + 0.1
    dt = fit_particles(silf(X, min(2, *shape)), n_particles=5, random_seed=0, progressbar=False)
    assert np.isfinite(dt["particles"]["A"].values).all()
    assert dt["particles"]["A"].shape == (5, shape[0], min(2, *shape))


def test_fit_particles_extreme_data_errors_are_clear(monkeypatch):
    import bnmfzoo.inference.particles.weighted as weighted
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import silf

    with pytest.raises(ValueError, match="every observed entry is 0"):
        fit_particles(silf(np.zeros((4, 3)), 2), n_particles=3, random_seed=0,
                      progressbar=False)

    def overflowing(*args, **kwargs):
        raise ValueError("K contains NaN or infinite entries")

    monkeypatch.setattr(weighted, "weigh_particles", overflowing)
    X = np.random.default_rng(0).random((4, 3)) * 1e140
    with pytest.raises(ValueError, match="scale is extreme .*rescale X.*weights='uniform'"):
        fit_particles(silf(X, 2), n_particles=3, random_seed=0, progressbar=False)
