"""The workflow end to end on a small catalogue: the DataTree, the CLI's files, bad input.

The runs that compare ranks 1-3 take ~10 CPU s each (one Gibbs run per channel block and rank:
Chib's estimate needs single-channel blocks to keep its Rao-Blackwell averages reliable), so
they are marked slow; the fast tests run the same path at rank 1 only.
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _sigdata import catalog

from bnmfzoo.cli import main
from bnmfzoo.signatures import extract
from bnmfzoo.signatures.formats import CHANNELS, read_catalog

KW = {"n_burn": 60, "n_keep": 200}


@pytest.fixture(scope="module")
def small():
    df, W = catalog(n_samples=24, burden=300, seed=3)
    ref = pd.DataFrame(np.vstack([W, np.random.default_rng(0).dirichlet(np.ones(96), 3)]).T,
                       columns=["SBSa", "SBSb", "R1", "R2", "R3"])
    ref.insert(0, "Type", list(CHANNELS))
    return df, W, ref


@pytest.fixture(scope="module")
def tree(small):
    df, _, ref = small
    return extract(df, ranks=[1, 2, 3], reference=ref, random_seed=0, rank_method="chib", **KW)


@pytest.mark.slow
def test_extract_returns_one_labelled_tree(small, tree):
    df, W, ref = small
    dt = tree
    assert isinstance(dt, xr.DataTree)
    assert set(dt.children) == {"ranks", "signatures", "exposures", "assignment"}
    ranks = dt["ranks"].to_dataset()
    assert list(ranks["rank"].values) == [1, 2, 3]
    assert dt.attrs["rank"] == 2 and "most probable rank 2" in dt.attrs["note"]
    sig = dt["signatures"]
    assert sig["mean"].dims == ("signature", "channel") and sig.sizes["signature"] == 2
    np.testing.assert_allclose(sig["mean"].sum("channel"), 1.0)
    assert (sig["low"] <= sig["mean"]).all() and (sig["mean"] <= sig["high"]).all()
    expo = dt["exposures"]
    assert expo["mean"].dims == ("sample", "signature") and expo.sizes["sample"] == 24
    # exposures add up to each sample's burden (to within the posterior spread)
    total = read_catalog(df).sum("col").values
    np.testing.assert_allclose(expo["mean"].sum("signature"), total, rtol=0.15)
    calls = set(dt["assignment"]["call"].values)
    assert calls == {"SBSa", "SBSb"}
    assert (dt["assignment"]["probability"] > 0.9).all()


def test_same_seed_same_result(small):
    df, _, ref = small
    a, b = (extract(df, ranks=[1], reference=ref, random_seed=4, n_burn=20, n_keep=60)
            for _ in range(2))
    for node in ("ranks", "signatures", "exposures", "assignment"):
        xr.testing.assert_equal(a[node].to_dataset(), b[node].to_dataset())


def _cli(tmp_path, small, ranks, *extra):
    df, _, ref = small
    df.to_csv(tmp_path / "cat.txt", sep="\t", index=False)
    ref.to_csv(tmp_path / "ref.txt", sep="\t", index=False)
    out = tmp_path / "out"
    code = main(["signatures", str(tmp_path / "cat.txt"), "--ranks", ranks, "--reference",
                 str(tmp_path / "ref.txt"), "--out", str(out), "--seed", "0", "--quiet",
                 *extra])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["assignment.tsv", "exposures.tsv",
                                                     "ranks.tsv", "report.html",
                                                     "signatures.tsv"]
    return out


def test_cli_files_in_the_fields_layout(small, tmp_path, capsys):
    out = _cli(tmp_path, small, "1", "--burn", "20", "--keep", "60", "--rank-method", "chib")
    ranks = pd.read_csv(out / "ranks.tsv", sep="\t")
    assert list(ranks.columns[:4]) == ["rank", "probability", "low", "high"]
    assert ranks["probability"].tolist() == [1.0]
    sig = pd.read_csv(out / "signatures.tsv", sep="\t")
    assert list(sig.columns) == ["MutationType", "Sig1"]
    assert list(sig["MutationType"]) == list(CHANNELS)
    assert sig["Sig1"].sum() == pytest.approx(1.0, abs=1e-4)
    expo = pd.read_csv(out / "exposures.tsv", sep="\t")
    assert list(expo.columns) == ["Samples", "Sig1", "Sig1_low", "Sig1_high"]
    assert (expo["Sig1_low"] <= expo["Sig1"]).all() and (expo["Sig1"] <= expo["Sig1_high"]).all()
    assign = pd.read_csv(out / "assignment.tsv", sep="\t")
    assert list(assign.columns[:3]) == ["signature", "best_match", "probability"]
    assert "<img" in (out / "report.html").read_text()
    assert "most probable rank 1" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_finds_the_two_signatures(small, tmp_path, capsys):
    out = _cli(tmp_path, small, "1-3", "--burn", "60", "--keep", "200", "--rank-method", "chib")
    sig = pd.read_csv(out / "signatures.tsv", sep="\t")
    assert list(sig.columns) == ["MutationType", "Sig1", "Sig2"]
    assert set(pd.read_csv(out / "assignment.tsv", sep="\t")["call"]) == {"SBSa", "SBSb"}
    assert "most probable rank 2" in capsys.readouterr().out


@pytest.mark.parametrize(("edit", "message"), [
    (lambda df: df.iloc[:90], "the rows must be the 96 SBS channels"),
    (lambda df: df.assign(S1=0), "zero mutations, e.g. 'S1'"),
    (lambda df: df.astype({"S2": float}).assign(S2=0.5), "counts must be integers"),
])
def test_cli_bad_catalogue_one_line_nothing_written(small, tmp_path, capsys, edit, message):
    df, _, _ = small
    edit(df).to_csv(tmp_path / "bad.txt", sep="\t", index=False)
    out = tmp_path / "out"
    assert main(["signatures", str(tmp_path / "bad.txt"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err and err.startswith("bnmfzoo signatures")
    assert not out.exists()


def test_cli_bad_ranks(capsys):
    with pytest.raises(SystemExit) as info:
        main(["signatures", "x.txt", "--ranks", "5-a", "--out", "o"])
    assert info.value.code == 2 and "ranks must look like" in capsys.readouterr().err
