"""`bnmfzoo report`: a self-contained HTML page with the figures, checked in headless Chromium."""

import shutil
import subprocess

import numpy as np
import pytest

from bnmfzoo import cli
from bnmfzoo._fitcli import atomic_write
from bnmfzoo._results import build_datatree

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
    for name in ("particles", "elbo", "traces"):
        assert (out / f"{name}.png").stat().st_size > 1000


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
