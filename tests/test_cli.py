"""The `bnmfzoo` command: argument parsing, file reading, clean failures."""

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


def test_read_matrix_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_matrix(tmp_path / "missing.csv")
    (tmp_path / "bad.xyz").write_text("1")
    with pytest.raises(ValueError, match="unsupported"):
        read_matrix(tmp_path / "bad.xyz")
    (tmp_path / "text.csv").write_text("a,b\nc,d\n")
    with pytest.raises(ValueError):
        read_matrix(tmp_path / "text.csv")


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


def test_atomic_write_round_trip(tmp_path):
    from bnmfzoo._results import build_datatree

    dt = build_datatree({"A": np.ones((1, 3, 2, 2))}, attrs={"method": "test", "flag": True})
    path = atomic_write(dt, tmp_path / "sub" / "r.nc")
    back = xr.open_datatree(path)
    assert back.attrs["method"] == "test"
    np.testing.assert_array_equal(back["posterior"]["A"].values, dt["posterior"]["A"].values)
    assert list((tmp_path / "sub").iterdir()) == [path]


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
