"""The `bnmfzoo` command: argument parsing, file reading, clean failures."""

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bnmfzoo import cli
from bnmfzoo._fitcli import atomic_write, read_matrix


def test_parser_has_the_four_commands():
    parser = cli.build_parser()
    for cmd in (["datasets"], ["demo", "--quick"], ["report", "x.nc"],
                ["fit", "x.csv", "--rank", "2", "--out", "y.nc"]):
        assert parser.parse_args(cmd).command == cmd[0]


def test_read_matrix_formats(tmp_path):
    X = np.array([[1.0, np.nan, 2.0], [0.5, 3.0, 4.0]])
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "x.csv").write_text("1,,2\n0.5,3,4\n")
    (tmp_path / "h.tsv").write_text("gene\ts1\ts2\ts3\ng1\t1\tNaN\t2\ng2\t0.5\t3\t4\n")
    xr.Dataset({"X": (("row", "col"), X)}).to_netcdf(tmp_path / "x.nc", engine="h5netcdf")
    for name in ("x.npy", "x.csv", "h.tsv", "x.nc"):
        da = read_matrix(tmp_path / name)
        assert da.dims == ("row", "col")
        np.testing.assert_array_equal(np.isnan(da.values), np.isnan(X))
        np.testing.assert_allclose(np.nan_to_num(da.values), np.nan_to_num(X))
    labelled = read_matrix(tmp_path / "h.tsv")
    assert list(labelled["row"].values) == ["g1", "g2"]
    assert list(labelled["col"].values) == ["s1", "s2", "s3"]


def test_read_matrix_whitespace_txt_as_numpy_savetxt_writes_it(tmp_path):
    X = np.array([[1.0, 2.5, 3.0], [4.0, 5.0, 6.0]])
    np.savetxt(tmp_path / "x.txt", X)
    np.testing.assert_array_equal(read_matrix(tmp_path / "x.txt").values, X)
    (tmp_path / "h.txt").write_text("gene  s1 s2\ng1 1   2\ng2 3 4\n")
    labelled = read_matrix(tmp_path / "h.txt")
    assert list(labelled["col"].values) == ["s1", "s2"]
    np.testing.assert_array_equal(labelled.values, [[1.0, 2.0], [3.0, 4.0]])
    (tmp_path / "ragged.txt").write_text("1 2 3\n4 5\n")
    with pytest.raises(ValueError, match="ragged.txt line 2 has 2 fields, expected 3"):
        read_matrix(tmp_path / "ragged.txt")


def test_read_matrix_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_matrix(tmp_path / "missing.csv")
    (tmp_path / "bad.xyz").write_text("1")
    with pytest.raises(ValueError, match="unsupported"):
        read_matrix(tmp_path / "bad.xyz")
    (tmp_path / "text.csv").write_text("a,b\nc,d\n")
    with pytest.raises(ValueError, match="text.csv line 2, column 2 .'b'.: 'd' is not a number"):
        read_matrix(tmp_path / "text.csv")


def _read(tmp_path, text, name="x.csv", **kw):
    path = tmp_path / name
    path.write_text(text)
    return read_matrix(path, return_info=True, **kw)


def test_read_matrix_layout_rules(tmp_path):
    # a first row of numbers is data, never a header
    X, info = _read(tmp_path, "1,2,3\n4,,6\n")
    assert X.shape == (2, 3) and not info.header and info.n_missing == 1
    assert info.describe() == f"read {tmp_path / 'x.csv'}: 2 rows \u00d7 3 columns, 1 missing"
    # text in the first row: header; text in the first column: row labels
    X, info = _read(tmp_path, "gene,s1,s2\n\ng1,1,NA\ng2,0.5,3\n")
    assert list(X["row"].values) == ["g1", "g2"] and list(X["col"].values) == ["s1", "s2"]
    assert "header row; row labels from column 1 'gene'" in info.describe()
    # pandas' to_csv layout: empty corner cell, numeric names, an index column
    X, info = _read(tmp_path, ",0,1\n0,1,2\n1,3,4\n2,5,6\n")
    assert X.shape == (3, 2) and info.header and info.index_col == 0
    # a numeric ID column is never silently read as data (nor silently dropped)
    with pytest.raises(ValueError, match="first column 'id' .*consecutive integers.*index-col"):
        _read(tmp_path, "id,a,b\n1,0.5,1\n2,1,2\n3,2,2\n")
    X, _ = _read(tmp_path, "id,a,b\n1,0.5,1\n2,1,2\n3,2,2\n", index_col=0)
    assert list(X["row"].values) == [1, 2, 3] and X.shape == (3, 2)  # integer labels
    X, _ = _read(tmp_path, "id,a,b\n1,0.5,1\n2,1,2\n3,2,2\n", index_col=None)
    assert X.shape == (3, 3)
    # explicit header switches
    X, info = _read(tmp_path, "1,2\n3,4\n", header=True)
    assert X.shape == (1, 2) and list(X["col"].values) == [1, 2]
    with pytest.raises(ValueError, match="line 1, column 1: 'a' is not a number"):
        _read(tmp_path, "a,b\n3,4\n", header=False, index_col=None)
    # one column and 1 x 1 files work
    X, info = _read(tmp_path, "v\n1\n2\nNA\n")
    assert X.shape == (3, 1) and info.header and info.n_missing == 1
    X, info = _read(tmp_path, "5\n")
    assert X.shape == (1, 1) and info.describe().endswith("1 row \u00d7 1 column, 0 missing")
    # tab-separated .tsv and semicolons are detected
    X, _ = _read(tmp_path, "1\t2\n3\t4\n", name="x.tsv")
    assert X.shape == (2, 2)
    X, _ = _read(tmp_path, "1;2\n3;4\n")
    assert X.shape == (2, 2)


@pytest.mark.parametrize(("text", "match"), [
    ("1,2,3\n4,5\n6,7,8\n", r"x.csv line 2 has 2 fields, expected 3"),
    ("1,2,3\n\n4,5,6,7\n", r"x.csv line 3 has 4 fields, expected 3"),
    ("", r"x.csv is empty"),
    ("\n\n", r"x.csv is empty"),
    ("a,b\n1,x\n", r"x.csv line 2, column 2 \('b'\): 'x' is not a number"),
    ("a,b\n", r"x.csv has a header row but no data rows"),
])
def test_read_matrix_refuses_bad_files_naming_them(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        _read(tmp_path, text)


def test_netcdf_without_coordinates_fits(tmp_path, capsys):
    V = (np.random.default_rng(0).random((6, 5)) < 0.5).astype(float)
    xr.DataArray(V, dims=("a", "b")).to_dataset(name="V").to_netcdf(tmp_path / "v.nc",
                                                                     engine="h5netcdf")
    X = read_matrix(tmp_path / "v.nc")
    assert list(X["row"].values) == list(range(6))
    out = tmp_path / "fit.nc"
    assert cli.main(["fit", str(tmp_path / "v.nc"), "--model", "beta_dir", "--truncation", "4",
                     "--draws", "5", "--tune", "2", "--chains", "1", "--seed", "0", "--out",
                     str(out), "--quiet"]) == 0
    back = xr.open_datatree(out)
    # a truncated model stores its active components; the truncation group lists all 4
    kept = back["truncation"]["kept"].values
    assert back["truncation"].sizes["component"] == 4 and back.attrs["model"] == "beta_dir"
    assert back["posterior"]["A"].sizes["factor"] == kept.sum() >= 1
    assert back["posterior"]["factor"].values.tolist() == np.flatnonzero(kept).tolist()


def test_fit_rejects_negative_data_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "neg.csv").write_text("1,-2\n3,4\n")
    out = tmp_path / "res.nc"
    # the Gaussian models accept negative data; SILF's divergences need X >= 0
    code = cli.main(["fit", str(tmp_path / "neg.csv"), "--model", "silf", "--rank", "1",
                     "--out", str(out), "--quiet"])
    assert code == 2
    assert "negative" in capsys.readouterr().err
    assert not out.exists()
    assert list(tmp_path.glob("*.part")) == []


def test_fit_rejects_bad_rank(tmp_path, capsys):
    (tmp_path / "x.csv").write_text("1,2\n3,4\n")
    code = cli.main(["fit", str(tmp_path / "x.csv"), "--rank", "5", "--out",
                     str(tmp_path / "r.nc"), "--quiet"])
    assert code == 2
    assert "rank" in capsys.readouterr().err


def _tiny_tree():
    from bnmfzoo._base.results import build_datatree

    return build_datatree({"A": np.ones((1, 3, 2, 2))}, attrs={"method": "test", "flag": True})


def test_atomic_write_round_trip(tmp_path):
    dt = _tiny_tree()
    path = atomic_write(dt, tmp_path / "r.nc")
    back = xr.open_datatree(path)
    assert back.attrs["method"] == "test"
    np.testing.assert_array_equal(back["posterior"]["A"].values, dt["posterior"]["A"].values)
    assert list(tmp_path.iterdir()) == [path]
    with pytest.raises(FileNotFoundError, match="does not exist"):  # folders are not created
        atomic_write(dt, tmp_path / "sub" / "r.nc")


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_result_file_mode_honours_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = atomic_write(_tiny_tree(), tmp_path / "r.nc")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_interrupted_write_leaves_no_part_file_and_keeps_the_old_result(tmp_path,
                                                                         monkeypatch):
    from bnmfzoo._fitcli import Interrupted

    out = tmp_path / "r.nc"
    out.write_bytes(b"previous result")

    real = os.write

    def exploding_write(fd, data):  # the interrupt arrives in the middle of the write
        real(fd, b"half")
        raise Interrupted()

    monkeypatch.setattr(os, "write", exploding_write)
    with pytest.raises(Interrupted):
        atomic_write(_tiny_tree(), out)
    monkeypatch.undo()
    assert out.read_bytes() == b"previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]


def _main(argv, capsys):
    """Run the command in-process; return (exit code, stdout, stderr)."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("args", "match"), [
    (["--chains", "0"], "argument --chains: must be an integer >= 1, got '0'"),
    (["--tune", "-1"], "argument --tune: must be an integer >= 0, got '-1'"),
    (["--draws", "0"], "argument --draws: must be an integer >= 1"),
    (["--rank", "x"], "argument --rank: must be an integer >= 1, got 'x'"),
    (["--index-col", "-2"], "argument --index-col"),
    (["--lambda", "-1"], "argument --lambda: must be a positive number"),
    (["--model-arg", "gamma"], "argument --model-arg: must look like key=value"),
    (["--model", "nmf"], "argument --model: invalid choice"),
    (["--out", "{tmp}/res.csv"], "--out '{tmp}/res.csv' must end in .nc"),
    (["--out", "{tmp}/nope/res.nc"], "folder '{tmp}/nope' does not exist"),
    (["--out", "{tmp}"], "--out '{tmp}' is a folder"),
    (["--truncation", "3"], "--truncation does not apply to model 'exponential_gaussian'"),
    (["--model", "beta_dir", "--lambda", "2"], "--lambda does not apply to model 'beta_dir'"),
    (["--model-arg", "foo=1"], "--model-arg foo: model 'exponential_gaussian' has no such"),
    (["--method", "cvb0"], "method 'cvb0' does not apply to model 'exponential_gaussian'"),
    (["--method", "vb", "--log-likelihood", "yes"],
     "--log-likelihood yes applies to the MCMC methods run through PyMC, not to 'vb'"),
    (["--log-likelihood", "maybe"], "argument --log-likelihood: invalid choice"),
    (["--model", "beta_dir", "--rank", "2", "--truncation", "3"], "not both"),
    (["--data", "ragged.csv"], "ragged.csv line 2 has 1 field, expected 2"),
    (["--data", "text.csv"], "text.csv line 2, column 2: 'abc' is not a number"),
    (["--data", "empty.csv"], "empty.csv is empty"),
])
def test_bad_input_is_one_line_naming_the_problem_exit_2(tmp_path, capsys, args, match):
    (tmp_path / "ok.csv").write_text("1,0\n0,1\n")
    (tmp_path / "ragged.csv").write_text("1,0\n0\n")
    (tmp_path / "text.csv").write_text("1,0\n1,abc\n")
    (tmp_path / "empty.csv").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    data = str(tmp_path / "ok.csv")
    if args[0] == "--data":
        data, args = str(tmp_path / args[1]), args[2:]
    if "--rank" not in args:
        args += ["--rank", "1"]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "res.nc")]
    code, out, err = _main(["fit", data, *args, "--quiet"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnmfzoo fit: error: "), err
    assert match.replace("{tmp}", str(tmp_path)) in lines[0], lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "res.nc").exists() and not list(tmp_path.glob("*.part"))


def test_fit_help_lists_models_methods_defaults_and_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    text = capsys.readouterr().out
    for word in ("beta_dir", "dir_dir", "collapsed_gibbs_dirdir", "cvb0", "gibbs_nmtf",
                 "--truncation", "--ard", "--lambda", "--sigma", "--model-arg", "--header",
                 "--no-header", "--index-col", "default 500", "default 200", "default 2",
                 "exponential_gaussian)", "nonparametric", "Exit codes"):
        assert word in text, word


def test_model_options_reach_the_model(tmp_path):
    from bnmfzoo._registry import build_model

    args = cli.build_parser().parse_args(
        ["fit", "v.csv", "--model", "beta_dir", "--truncation", "7", "--model-arg", "gamma=2",
         "--out", "r.nc"])
    kwargs = cli._model_kwargs(args)
    assert kwargs == {"truncation": 7, "gamma": 2}
    V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    from bnmfzoo.models._spec import find_spec

    spec = find_spec(build_model("beta_dir", xr.DataArray(V, dims=("row", "col")), None,
                                 **kwargs))
    assert spec.rank == 7 and spec.hyper.nonparametric
    np.testing.assert_allclose(spec.hyper.gamma, 2.0 / 7)
    args = cli.build_parser().parse_args(
        ["fit", "x.csv", "--rank", "2", "--ard", "--lambda", "0.5", "--sigma", "1.5",
         "--model-arg", "lambda=0.3", "--out", "r.nc"])
    assert cli._model_kwargs(args) == {"ard": True, "lambda_": 0.3, "sigma": 1.5}


def _proc_cpu(pid):
    """CPU seconds (user + system) used so far by the running process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(cli.__file__).resolve().parents[1])
    return env


def test_quiet_silences_pymc_logs_and_file_mode_follows_umask(tmp_path):
    (tmp_path / "x.csv").write_text("1,2,3\n2,1,1\n1,1,2\n")
    out = tmp_path / "r.nc"
    proc = subprocess.run(
        [sys.executable, "-m", "bnmfzoo.cli", "fit", str(tmp_path / "x.csv"), "--rank", "1",
         "--draws", "5", "--tune", "5", "--seed", "0", "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=_env(), timeout=300,
        preexec_fn=lambda: os.umask(0o027),
    )
    assert proc.returncode == 0, proc.stderr
    assert "ampling" not in proc.stderr and "GibbsNMF" not in proc.stderr, proc.stderr
    assert "read " in proc.stdout and "3 rows \u00d7 3 columns, 0 missing" in proc.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_ctrl_c_stops_promptly_writes_nothing_and_exits_130(tmp_path):
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "x.csv", rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)),
               delimiter=",")
    out = tmp_path / "r.nc"
    out.write_bytes(b"previous result")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bnmfzoo.cli", "fit", str(tmp_path / "x.csv"), "--rank", "2",
         "--draws", "2000000", "--tune", "10", "--seed", "0", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(),
    )
    try:
        for line in proc.stderr:  # PyMC logs "Sequential sampling ..." when sampling starts
            if "sampling" in line.lower():
                break
        time.sleep(1.0)
        assert proc.poll() is None, "the fit ended before it was interrupted"
        # CPU seconds the child spends after the signal (not wall time, which a loaded machine
        # stretches, #36): its CPU so far from /proc, its total from the reaped child's rusage
        cpu_before = _proc_cpu(proc.pid)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        elapsed = (after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
                   - cpu_before)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130, err
    assert elapsed < 10, elapsed  # CPU s after SIGINT (the unwinding itself: well under 1 s)
    assert "interrupted; no result written" in err and "Traceback" not in err
    assert out.read_bytes() == b"previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "x.csv"]


def test_datasets_command_lists(capsys, data_home):
    assert cli.main(["datasets", "--data-home", str(data_home)]) == 0
    text = capsys.readouterr().out
    for name in ("gdsc", "ccle", "animals", "faces"):
        assert name in text.lower()


def test_fit_then_report_end_to_end(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 7))
    lines = [",".join("" if (i + j) % 9 == 0 else f"{v:.5f}" for j, v in enumerate(row))
             for i, row in enumerate(X)]
    data = tmp_path / "x.csv"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "fit.nc"
    assert cli.main(["fit", str(data), "--model", "exponential_gaussian", "--rank", "2",
                     "--method", "vb", "--out", str(out), "--quiet"]) == 0
    back = xr.open_datatree(out)
    assert back.attrs["method"] == "vb" and back.attrs["model"] == "exponential_gaussian"
    assert back["posterior"]["A"].sizes["factor"] == 2
    assert list(tmp_path.glob("*.part")) == []
    assert cli.main(["report", str(out)]) == 0
    page = (tmp_path / "fit-report" / "report.html").read_text()
    assert "data:image/png;base64," in page and "vb" in page


def test_demo_results_honour_umask(tmp_path):
    """The demo writes its DataTrees through the same atomic, umask-respecting writer."""
    from bnmfzoo._demo import _write_compact

    old = os.umask(0o022)
    try:
        path = _write_compact(_tiny_tree(), tmp_path / "d.nc")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("method, n_chains", [("vb", 1), ("gibbs", 2)])
def test_draws_option_reaches_fitters_and_samplers(tmp_path, method, n_chains):
    # --draws is the number of stored draws for a fitter (n_draws) as for a sampler (per chain)
    rng = np.random.default_rng(0)
    np.savetxt(tmp_path / "x.csv", rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 9)),
               delimiter=",")
    out = tmp_path / "r.nc"
    code = cli.main(["fit", str(tmp_path / "x.csv"), "--rank", "2", "--method", method,
                     "--draws", "7", "--tune", "3", "--seed", "0", "--out", str(out), "--quiet"])
    assert code == 0
    post = xr.open_datatree(out)["posterior"]
    assert post.sizes["draw"] == 7 and post.sizes["chain"] == n_chains, dict(post.sizes)


@pytest.mark.parametrize("text, shape, missing", [
    ("NaN,1.0,2.0\n0.5,1.0,2.0\n1.5,2,2.0\n", (3, 3), 1),
    ("1,2,3\nNaN,1.0,2.0\n2,1.0,2.0\n3,2,2.0\n", (4, 3), 1),
])
def test_read_matrix_missing_value_in_first_column(tmp_path, text, shape, missing):
    # a NaN in the first column is a missing entry, not a reason to crash the row-ID check
    (tmp_path / "x.csv").write_text(text)
    X, info = read_matrix(tmp_path / "x.csv", return_info=True)
    assert X.shape == shape and int(np.isnan(X.values).sum()) == missing
    assert np.isnan(X.values[:, 0]).sum() == 1


def _blocs(path, D=30, N=40, K=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.full(K, 0.2), size=D)
    V = (rng.random((D, N)) < A @ rng.beta(0.3, 0.3, size=(K, N))).astype(float)
    np.savetxt(path, V, delimiter=",", fmt="%g")
    return path


def test_results_are_sized_for_use_and_full_on_request(tmp_path, capsys, monkeypatch):
    """A truncated binary fit stores its active components (indices kept), thinned float32
    draws and Rao-Blackwellized means; --keep-all stores every component and draw. The size
    thresholds (direct collapsed Gibbs above 256 MiB of trace, float32 above 64 MiB) are set
    to 0 so that this small fit takes the path of a large one."""
    import bnmfzoo._cli.sizing as sizing
    import bnmfzoo._fitcli as fitcli

    monkeypatch.setattr(sizing, "FLOAT32_BYTES", 0)
    monkeypatch.setattr(fitcli, "TRACE_BYTES", 0)
    data = _blocs(tmp_path / "v.csv")
    args = ["fit", str(data), "--model", "beta_dir", "--truncation", "20", "--draws", "250",
            "--tune", "50", "--chains", "1", "--seed", "1", "--quiet"]
    assert cli.main([*args, "--out", str(tmp_path / "small.nc")]) == 0
    assert cli.main([*args, "--keep-all", "--out", str(tmp_path / "full.nc")]) == 0
    small, full = (xr.open_datatree(tmp_path / f"{n}.nc") for n in ("small", "full"))
    post = small["posterior"]
    kept = small["truncation"]["kept"].values
    assert post.sizes["draw"] == 250 // 3 and small.attrs["thin"] == 3  # <= 100 per chain
    assert post["A"].dtype == np.float32 and 1 <= post.sizes["factor"] == kept.sum() < 20
    assert post["factor"].values.tolist() == np.flatnonzero(kept).tolist()
    # the active components carry the mass: >= 1 % each, and the dropped ones < 1 % each
    share = small["truncation"]["share"].values[0]
    assert (share[kept] >= 0.01).all() and (share[~kept] < 0.01).all()
    assert full["posterior"].sizes["factor"] == 20 and full["posterior"].sizes["draw"] == 250
    assert full["posterior"]["A"].dtype == np.float64
    assert "rao_blackwell" in small.children
    assert (tmp_path / "small.nc").stat().st_size < (tmp_path / "full.nc").stat().st_size / 4
    # --thin N keeps every N-th draw of a PyMC sampler too
    np.savetxt(tmp_path / "x.csv", np.random.default_rng(0).random((8, 6)), delimiter=",")
    assert cli.main(["fit", str(tmp_path / "x.csv"), "--rank", "2", "--draws", "20", "--tune",
                     "5", "--chains", "1", "--thin", "4", "--seed", "0", "--quiet", "--out",
                     str(tmp_path / "g.nc")]) == 0
    assert xr.open_datatree(tmp_path / "g.nc")["posterior"].sizes["draw"] == 5
    # a small result keeps the fitter's float64 bits
    monkeypatch.undo()
    assert cli.main(["fit", str(tmp_path / "x.csv"), "--rank", "2", "--draws", "20", "--tune",
                     "5", "--chains", "1", "--seed", "0", "--quiet", "--out",
                     str(tmp_path / "h.nc")]) == 0
    assert xr.open_datatree(tmp_path / "h.nc")["posterior"]["A"].dtype == np.float64


def test_fit_help_shows_thin_and_keep_all(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    text = capsys.readouterr().out
    assert "--thin" in text and "--keep-all" in text and "at most 100" in text
