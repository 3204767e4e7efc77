"""Execute every notebook in ``notebooks/*.py`` (jupytext percent format) in small mode.

Each notebook is converted with jupytext, executed with nbclient on a kernel that runs this
interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``, so a ``python3`` spec that
resolves to another Python cannot be picked up), in a temporary working directory, with
``BNMFZOO_NOTEBOOK_SMALL=1``. An exception in any cell fails the test. Notebooks that read the
real datasets skip (with a reason) when ``../shared/data`` / ``$BNMFZOO_DATA`` is absent.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
KERNEL_NAME = "bnmfzoo-test-kernel"
# Notebooks that read the real data (the others run on synthetic data or bundled generators).
NEEDS_DATA = {"tour", "masood2019", "lumbreras2020"}


def _data_dir():
    env = os.environ.get("BNMFZOO_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "data")
    for path in candidates:
        if path.is_dir() and (path / "SHA256SUMS").exists():
            return path
    return None


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A JUPYTER_PATH holding a kernel spec that starts ``sys.executable``."""
    pytest.importorskip("ipykernel")
    base = tmp_path_factory.mktemp("jupyter")
    spec_dir = base / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bnmfzoo test kernel",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return base


def test_notebooks_found():
    names = {p.stem for p in NOTEBOOKS}
    assert {"tour", "brouwer2017", "masood2019", "masood2016_rrt", "lumbreras2020"} <= names


def test_kernel_spec_runs_this_interpreter(kernel_dir, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    assert spec.argv[0] == sys.executable


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, kernel_dir, tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    data = _data_dir()
    if path.stem in NEEDS_DATA and data is None:
        pytest.skip("real datasets not found: set BNMFZOO_DATA or put them in ../shared/data")
    if data is not None:
        monkeypatch.setenv("BNMFZOO_DATA", str(data))
    monkeypatch.setenv("BNMFZOO_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    # Render figures as PNG outputs (as in Jupyter) rather than into Agg canvases nobody sees.
    pytest.importorskip("matplotlib_inline")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    nb = jupytext.read(path)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=900,
        resources={"metadata": {"path": str(tmp_path)}},
        allow_errors=False,
    )
    start = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError on the first failing cell
    finally:
        # keep the executed notebook beside the test's outputs for inspection
        nbformat.write(nb, str(tmp_path / f"{path.stem}.ipynb"))
    elapsed = time.perf_counter() - start
    print(f"{path.name}: executed in {elapsed:.1f} s")
    n_code = sum(1 for c in nb.cells if c.cell_type == "code")
    assert n_code > 0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"{path.name} drew no figure"
