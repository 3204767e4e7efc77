"""`bnmfzoo report`: a self-contained HTML page with the figures, checked in headless Chromium."""

import shutil
import subprocess

import numpy as np
import pytest
import xarray as xr

from bnmfzoo import cli
from bnmfzoo._base.results import build_datatree
from bnmfzoo._fitcli import atomic_write

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def particle_result(tmp_path_factory):
    rng = np.random.default_rng(3)
    M, D, N, R = 6, 16, 10, 3
    A = rng.random((M, D, R))
    W = rng.random((M, R, N))
    w = rng.dirichlet(np.ones(M))
    idx = rng.choice(M, size=50, p=w)
    dt = build_datatree(
        {"A": A[idx][None], "W": W[idx][None], "tau": rng.gamma(2.0, size=(1, 50))},
        observed_data={"X": rng.random((D, N))},
        groups={
            "particles": {"A": (("particle", "row", "factor"), A),
                          "W": (("particle", "factor", "col"), W),
                          "weight": ("particle", w)},
            "diagnostics": {"stein_discrepancy": 0.123},
            "variational": {"elbo": ("iteration", np.cumsum(rng.random(30)))},
        },
        attrs={"method": "particles", "model": "silf", "image_shape": np.array([4, 4])},
    )
    path = tmp_path_factory.mktemp("report") / "result.nc"
    return atomic_write(dt, path)


def test_report_is_self_contained(particle_result):
    assert cli.main(["report", str(particle_result)]) == 0
    out = particle_result.with_name("result-report")
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 3  # particles, ELBO, traces
    assert "particles" in page and "silf" in page
    assert "stein_discrepancy" in page and "0.123" in page
    for name in ("modes", "particles", "elbo", "traces"):
        assert (out / f"{name}.png").stat().st_size > 1000
    assert "<h2>Modes</h2>" in page and "Mean basis" not in page  # the title is in the PNG


def test_report_shows_modes_of_chains(tmp_path):
    """Chains in two modes: the report lists both with their weights and chains, and the
    summary is per mode with the warning shown, not pooled across modes."""
    from bnmfzoo.datasets import laurberg
    from bnmfzoo.report import write_report

    rng = np.random.default_rng(0)
    (A1, W1), (A2, W2) = laurberg(0.5).solutions
    A = np.stack([A0 * rng.lognormal(0, 0.02, (30, 6, 3)) for A0 in (A1, A1, A2)]) + 1e-9
    W = np.stack([W0 * rng.lognormal(0, 0.02, (30, 3, 6)) for W0 in (W1, W1, W2)])
    A[1], W[1] = A[1][..., [2, 0, 1]], W[1][:, [2, 0, 1]]  # chain 1: labels permuted
    dt = build_datatree({"A": A, "W": W, "tau": rng.gamma(5.0, size=(3, 30))},
                        observed_data={"X": laurberg(0.5).X.values})
    page = write_report(dt, out_dir=tmp_path).read_text()
    assert "<h2>Modes</h2>" in page and "2 modes" in page
    assert "0: 100%, 1: 100%" in page and "2: 100%" in page
    assert "chains sit in different modes" in page
    assert (tmp_path / "modes.png").stat().st_size > 1000


def test_report_errors(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "nope.nc")]) == 2
    bad = tmp_path / "bad.nc"
    bad.write_text("not netcdf")
    assert cli.main(["report", str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed")
def test_report_renders_in_chromium(particle_result, tmp_path):
    from PIL import Image

    cli.main(["report", str(particle_result), "--out", str(tmp_path / "rep")])
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
         "--window-size=1200,2400", f"--screenshot={shot}",
         (tmp_path / "rep" / "report.html").as_uri()],
        check=True, timeout=120, capture_output=True,
    )
    img = np.asarray(Image.open(shot).convert("L"), dtype=float)
    # The figures are there: the page is not blank, and a large share of it is non-white
    # (text alone covers well under 5% of the pixels).
    assert img.shape[0] >= 2000
    assert (img < 200).mean() > 0.05


def _binary_truncated_result(tmp_path, *, K=30, active=3, C=2, S=300, D=12, N=15):
    """A beta_dir-like result: K components, ``active`` of them carrying the mass."""
    rng = np.random.default_rng(5)
    A = rng.dirichlet(np.r_[np.full(active, 5.0), np.full(K - active, 1e-3)], size=(C, S, D))
    W = rng.beta(2.0, 2.0, size=(C, S, K, N))
    X = (rng.random((D, N)) < (A[0, 0] @ W[0, 0])).astype(float)
    X[0, 0] = np.nan
    dt = build_datatree(
        {"A": A, "W": W}, observed_data={"X": X},
        coords={"row": [f"country_{i}" for i in range(D)],
                "col": [f"vote_{j}" for j in range(N)]},
        attrs={"method": "collapsed_gibbs", "model": "beta_dir"})
    return atomic_write(dt, tmp_path / "binary.nc")


def test_report_shows_both_loadings_the_fit_and_a_predictive_check(tmp_path, monkeypatch):
    """Rows and columns by name per mode, the fit and the PPC; bounded: 200 of 300 draws,
    the active components of a truncated model, and no summary over the entries of A or W."""
    import bnmfzoo.diagnostics as diagnostics

    called = []
    real = diagnostics.summary
    monkeypatch.setattr(diagnostics, "summary",
                        lambda dt, var_names=None, **kw: called.append(var_names)
                        or real(dt, var_names=var_names, **kw))
    path = _binary_truncated_result(tmp_path)
    assert cli.main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "200 of the 300 draws per chain" in page
    assert "the 3 active of its 30 components" in page
    assert "Loadings per mode" in page and "country_" in page and "vote_" in page
    assert page.count("<table class='load'>") >= 6  # rows and columns of 3 factors
    assert "Posterior predictive check" in page
    assert "Log-likelihood per observed entry" in page
    for name in ("loadings", "fit"):
        assert (tmp_path / "rep" / f"{name}.png").stat().st_size > 10_000
    assert all("A" not in (v or ()) and "W" not in (v or ()) for v in called)


def test_modes_table_shows_every_column_with_its_label():
    from bnmfzoo.report import _modes_section

    ds = xr.Dataset(
        {"weight": ("mode", [0.7, 0.3]), "weight_mcse": ("mode", [0.05, 0.05]),
         "size": ("mode", [70, 30]), "novel": ("mode", [1.0, 2.0]),
         "angle": (("mode", "mode_"), [[0.0, 40.0], [40.0, 0.0]])},
        attrs={"source": "posterior", "estimator": "draws", "weighting": "draws",
               "note": "weight: posterior mass"})
    ds["novel"].attrs["long_name"] = "a new column"
    html_text = _modes_section(xr.DataTree.from_dict({"/modes": ds}))
    for text in ("MCSE of weight", "a new column", "members", "estimator: draws",
                 "weight: posterior mass", "0.05"):
        assert text in html_text, text


def test_gdsc_report_shows_drug_and_cell_line_loadings_and_the_fit(tmp_path):
    """A drug-screen fit (a 60 x 30 corner of GDSC, VB for speed): drug names and cell-line
    names per factor, and a fit view."""
    from bnmfzoo.datasets import load_gdsc

    try:
        X = load_gdsc()
    except Exception as err:  # noqa: BLE001 - data not at hand
        pytest.skip(f"GDSC not available: {err}")
    X = X.isel(row=slice(0, 60), col=slice(0, 30))
    X.to_pandas().to_csv(tmp_path / "gdsc.csv")
    out = tmp_path / "gdsc.nc"
    assert cli.main(["fit", str(tmp_path / "gdsc.csv"), "--rank", "3", "--method", "vb",
                     "--seed", "0", "--draws", "100", "--out", str(out), "--quiet"]) == 0
    assert cli.main(["report", str(out)]) == 0
    page = (tmp_path / "gdsc-report" / "report.html").read_text()
    drugs = [str(d) for d in X["col"].values]
    lines = [str(c) for c in X["row"].values]
    assert sum(d in page for d in drugs) >= 10 and sum(c in page for c in lines) >= 10
    assert "<h2>Fit</h2>" in page and "alt='fit'" in page and "alt='loadings'" in page
