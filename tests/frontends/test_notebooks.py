"""Execute every notebook in ``notebooks/*.py`` (jupytext percent format).

Each notebook is converted with jupytext, executed with nbclient on a kernel that runs this
interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``, so a ``python3`` spec that
resolves to another Python cannot be picked up), in a temporary working directory.
``test_notebook_executes`` runs them in small mode (``BNMFZOO_NOTEBOOK_SMALL=1``);
``test_notebook_full_size``
(marked slow; ``make notebooks``) runs them at their default size and prints each wall time.
An exception in any cell fails the test, naming the notebook and the cell. Notebooks that read
the real datasets skip (with a reason) when ``../shared/data`` / ``$BNMFZOO_DATA`` is absent.

The small-size runs are marked slow too: the documentation build (``make docs``, which CI runs
after ``make test``) executes every notebook at the small size, fails on an exception in any
cell, and fails when a notebook drew no figure (``docs/conf.py``), so running them in the fast
suite as well only doubled about 115 s of its time.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
KERNEL_NAME = "bnmfzoo-test-kernel"
# Notebooks that read the real data (the others run on synthetic data or bundled generators).
NEEDS_DATA = {"tour", "masood2019", "lumbreras2020"}


def _data_dir():
    env = os.environ.get("BNMFZOO_DATA")  # when set, the only place looked at (as conftest.py)
    path = Path(env) if env else ROOT.parent / "shared" / "data"
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


def test_notebooks_do_not_import_benchmarks():
    """Notebooks use the package only: ``benchmarks/`` is not installed and may be reorganized."""
    for path in NOTEBOOKS:
        code = [line for line in path.read_text().splitlines() if not line.startswith("#")]
        offending = [line for line in code if "benchmarks" in line]
        assert not offending, f"{path.name} uses benchmarks/: {offending}"


def _execute(path, kernel_dir, tmp_path, monkeypatch, *, small, timeout):
    """Run one notebook; return its wall time (s). Fails naming the notebook and the cell."""
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    exceptions = pytest.importorskip("nbclient.exceptions")
    pytest.importorskip("matplotlib_inline")
    data = _data_dir()
    if path.stem in NEEDS_DATA and data is None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):  # as conftest.py
            pytest.fail("CI=true but the real datasets were not found: set BNMFZOO_DATA or "
                        "put them in ../shared/data")
        pytest.skip("real datasets not found: set BNMFZOO_DATA or put them in ../shared/data")
    if data is not None:
        monkeypatch.setenv("BNMFZOO_DATA", str(data))
    if small:
        monkeypatch.setenv("BNMFZOO_NOTEBOOK_SMALL", "1")
    else:
        monkeypatch.delenv("BNMFZOO_NOTEBOOK_SMALL", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    # Render figures as PNG outputs (as in Jupyter) rather than into Agg canvases nobody sees.
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    nb = jupytext.read(path)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=timeout,
        resources={"metadata": {"path": str(tmp_path)}},
        allow_errors=False,
    )
    size = "small" if small else "default"
    executed = tmp_path / f"{path.stem}.ipynb"
    start = time.perf_counter()
    try:
        client.execute()
    except exceptions.CellExecutionError as err:
        elapsed = time.perf_counter() - start
        cell = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                     and any(o.get("output_type") == "error" for o in c.get("outputs", []))),
                    None)
        nbformat.write(nb, str(executed))
        pytest.fail(f"{path.name} failed at its {size} size in code cell {cell} after "
                    f"{elapsed:.0f} s (executed notebook: {executed}):\n{err}", pytrace=False)
    except TimeoutError as err:
        nbformat.write(nb, str(executed))
        pytest.fail(f"{path.name} timed out at its {size} size: {err}", pytrace=False)
    elapsed = time.perf_counter() - start
    # keep the executed notebook beside the test's outputs for inspection
    nbformat.write(nb, str(executed))
    print(f"{path.name} ({size} size): executed in {elapsed:.1f} s")
    n_code = sum(1 for c in nb.cells if c.cell_type == "code")
    assert n_code > 0
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"{path.name} drew no figure"
    return elapsed


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, kernel_dir, tmp_path, monkeypatch):
    _execute(path, kernel_dir, tmp_path, monkeypatch, small=True, timeout=900)


#: Per-notebook limit at the default size (the longest, tour, took 100 s on 2 idle cores and
#: 260 s on a loaded machine).
FULL_TIMEOUT = 3600


@pytest.mark.slow
@pytest.mark.timeout(FULL_TIMEOUT + 60)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_full_size(path, kernel_dir, tmp_path, monkeypatch, record_property):
    elapsed = _execute(path, kernel_dir, tmp_path, monkeypatch, small=False,
                       timeout=FULL_TIMEOUT)
    record_property("wall_time_s", round(elapsed, 1))
