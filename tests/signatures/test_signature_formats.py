"""SigProfiler / COSMIC files: reading, channel order, bad input (one line each), writing."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _sigdata import catalog

from bnmfzoo.signatures.formats import CHANNELS, read_catalog, read_signatures, write_matrix

DATA = Path(os.environ.get("BNMFZOO_DATA", "/nonexistent")) / "counts"


def _write(df, path):
    df.to_csv(path, sep="\t", index=False)
    return path


def test_channels_are_sigprofilers_order():
    assert len(CHANNELS) == 96 and CHANNELS[:3] == ("A[C>A]A", "A[C>A]C", "A[C>A]G")
    assert CHANNELS[-1] == "T[T>G]T"


@pytest.mark.skipif(not DATA.exists(), reason="needs the data folder")
def test_real_files_read_in_the_same_channel_order():
    brca = DATA / "sbs96_21brca_cosmic"
    X = read_catalog(brca / "Samples_SBS.txt")  # header "Mutation Types"
    assert X.shape == (21, 96) and int(X.sum()) == 183_916
    ref = read_signatures(brca / "COSMIC_v3.4_SBS_GRCh37.txt")  # header "Type", CRLF
    assert ref.shape == (86, 96)
    np.testing.assert_allclose(ref.sum("channel"), 1.0)
    raw = pd.read_csv(brca / "Samples_SBS.txt", sep="\t")
    assert list(raw.iloc[:, 0]) == list(CHANNELS)  # the file's order is ours


def test_shuffled_channels_are_reordered_by_name(tmp_path):
    df, _ = catalog()
    ref = read_catalog(_write(df, tmp_path / "a.txt"))
    shuffled = df.iloc[np.random.default_rng(1).permutation(96)]
    got = read_catalog(_write(shuffled, tmp_path / "b.txt"))
    assert list(got.col.values) == list(CHANNELS)
    np.testing.assert_array_equal(got.values, ref.values)
    assert got.dims == ("row", "col") and got.shape == (30, 96)


def test_csv_and_dataframe_inputs(tmp_path):
    df, _ = catalog()
    a = read_catalog(df)
    df.to_csv(tmp_path / "c.csv", index=False)
    np.testing.assert_array_equal(read_catalog(tmp_path / "c.csv").values, a.values)


def test_samples_as_rows_are_read_as_the_transpose(tmp_path):
    """Channels in the header, one row per sample (a file, a DataFrame with the samples in
    its index or in a first column): the same catalogue; a table with neither its rows nor
    its header the 96 channels is still refused."""
    df, _ = catalog()
    a = read_catalog(df)
    t = df.set_index("MutationType").T
    t.to_csv(tmp_path / "t.txt", sep="\t", index_label="Sample")
    for source in (tmp_path / "t.txt", t, t.reset_index(names="Sample")):
        got = read_catalog(source)
        np.testing.assert_array_equal(got.values, a.values)
        assert list(got.row.values) == list(a.row.values)
    t.iloc[:, :95].to_csv(tmp_path / "t95.txt", sep="\t", index_label="Sample")
    with pytest.raises(ValueError, match="the rows must be the 96 SBS channels"):
        read_catalog(tmp_path / "t95.txt")


def test_older_two_column_layouts_read_as_the_same_reference(tmp_path):
    """``Type``/``SubType`` (``C>A``/``ACA``, Alexandrov et al. 2020's tables) and COSMIC v2's
    ``Substitution Type``/``Trinucleotide``/``Somatic Mutation Type`` with trailing tabs, both
    in their own channel order (by substitution, then context): the same signatures as the
    one-column layout; a context whose middle base is not the substitution's is refused."""
    rng = np.random.default_rng(3)
    values = rng.random((96, 2))
    one = pd.DataFrame({"Type": list(CHANNELS), "Sa": values[:, 0], "Sb": values[:, 1]})
    want = read_signatures(one)
    sub = [c[2:5] for c in CHANNELS]
    tri = [c[0] + c[2] + c[6] for c in CHANNELS]
    order = np.lexsort((tri, sub))  # COSMIC's order: substitution, then context
    pcawg = pd.DataFrame({"Type": sub, "SubType": tri, "Sa": values[:, 0],
                          "Sb": values[:, 1]}).iloc[order]
    pcawg.to_csv(tmp_path / "pcawg.csv", index=False)
    got = read_signatures(tmp_path / "pcawg.csv")
    assert list(got.signature.values) == ["Sa", "Sb"]
    np.testing.assert_allclose(got.values, want.values, rtol=1e-12)
    v2 = pcawg.rename(columns={"Type": "Substitution Type", "SubType": "Trinucleotide"})
    v2.insert(2, "Somatic Mutation Type", np.asarray(CHANNELS)[order])
    v2.to_csv(tmp_path / "v2.txt", sep="\t", index=False)
    (tmp_path / "v2t.txt").write_text("\n".join(ln + "\t\t" for ln in
                                               (tmp_path / "v2.txt").read_text().splitlines()))
    np.testing.assert_allclose(read_signatures(tmp_path / "v2t.txt").values, want.values,
                               rtol=1e-12)
    np.testing.assert_allclose(read_signatures(pcawg).values, want.values, rtol=1e-12)
    bad = pcawg.assign(SubType=["AGA"] + list(pcawg.SubType[1:]))
    with pytest.raises(ValueError, match="not SBS96 channels"):
        read_signatures(bad)
    if DATA.exists():
        from bnmfzoo.datasets import load_cosmic_signatures

        real = read_signatures(DATA / "sbs96_21brca_cosmic" /
                               "sigProfiler_SBS_signatures_2018_03_28.csv")
        loaded = load_cosmic_signatures("sigprofiler2018", data_home=DATA.parent)
        assert real.shape == (65, 96)
        np.testing.assert_allclose(real.values, loaded.values / loaded.values.sum(
            1, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda df: df.iloc[:95], "found 95 rows, 1 channel\\(s\\) missing, e.g. 'T\\[T>G\\]T'"),
    (lambda df: pd.concat([df, df.iloc[:1].assign(MutationType="A[C>Z]A")]),
     "1 row\\(s\\) that are not SBS96 channels, e.g. 'A\\[C>Z\\]A'"),
    (lambda df: pd.concat([df.iloc[:95], df.iloc[:1]]), "channel 'A\\[C>A\\]A' appears twice"),
    (lambda df: df.assign(S3=0), "1 sample\\(s\\) with zero mutations, e.g. 'S3'"),
    (lambda df: df.astype({"S2": float}).assign(S2=lambda d: d["S2"] + 0.5),
     "counts must be integers; found '.*' at channel A\\[C>A\\]A, column S2"),
    (lambda df: df.astype({"S1": object}).assign(S1=["x"] + [1] * 95),
     "value 'x' at channel A\\[C>A\\]A, column S1 is not a number"),
    (lambda df: df.assign(S0=-1), "counts must be non-negative"),
])
def test_bad_catalogues_one_clear_line(tmp_path, edit, message):
    df, _ = catalog()
    path = _write(edit(df), tmp_path / "bad.txt")
    with pytest.raises(ValueError, match=message) as info:
        read_catalog(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_file_and_not_a_table(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_catalog(tmp_path / "nope.txt")
    (tmp_path / "one.txt").write_text("just one column\nA[C>A]A\n")
    with pytest.raises(ValueError, match="no sample columns"):
        read_catalog(tmp_path / "one.txt")


def test_write_round_trip_in_sigprofiler_layout(tmp_path):
    df, _ = catalog()
    X = read_catalog(df)
    path = write_matrix(X.isel(col=np.random.default_rng(2).permutation(96)), tmp_path / "o.txt")
    text = path.read_text().splitlines()
    assert text[0].split("\t")[:2] == ["MutationType", "S0"]
    assert [ln.split("\t")[0] for ln in text[1:]] == list(CHANNELS)
    assert "." not in text[1]  # counts are written as integers
    np.testing.assert_array_equal(read_catalog(path).values, X.values)
    assert [p.name for p in tmp_path.iterdir()] == ["o.txt"]  # no staging folder left


def test_reference_rows_rescaled_and_zero_signature_refused(tmp_path):
    ref = pd.DataFrame({"Type": list(CHANNELS), "A": 1.0, "B": np.arange(96.0)})
    got = read_signatures(ref)
    np.testing.assert_allclose(got.sum("channel"), 1.0)
    with pytest.raises(ValueError, match="signature 'A' is all zeros"):
        read_signatures(ref.assign(A=0.0))
