"""`bnmfzoo report`: a self-contained HTML page with the figures, checked in headless Chromium."""

import shutil
import subprocess

import numpy as np
import pytest

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
