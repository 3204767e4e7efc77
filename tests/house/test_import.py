"""``import bnmfzoo`` is cheap and exposes its subpackages lazily (PEP 562)."""

import subprocess
import sys

import pytest

HEAVY = ("pymc", "pytensor", "numba", "arviz", "sklearn", "xarray", "scipy")


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, bnmfzoo\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    assert _run(code) == "[]"


PATHS = ("models.silf", "models.exponential_gaussian", "datasets.load_gdsc", "inference.GibbsNMF",
         "inference.fit_vb", "diagnostics.align", "likelihoods.gaussian", "BayesianNMF")


def test_attribute_paths_resolve_after_bare_import():
    # a fresh interpreter: each attribute must resolve from `import bnmfzoo as bz` alone, without
    # any earlier `import bnmfzoo.models` done by another test
    code = "import bnmfzoo as bz\n" + "".join(f"print(bz.{p}.__name__)\n" for p in PATHS)
    assert _run(code).split() == [p.rsplit(".", 1)[-1] for p in PATHS]


def test_dir_lists_subpackages_and_unknown_names_fail():
    import bnmfzoo

    assert {"models", "datasets", "inference", "diagnostics", "likelihoods"} <= set(dir(bnmfzoo))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bnmfzoo.nope  # noqa: B018


@pytest.mark.parametrize("statement", [
    "from bnmfzoo.inference import GibbsNMF, CollapsedGibbsBetaDir",
    "from bnmfzoo.inference.binary.collapsed_gibbs import CollapsedGibbsDirDir",
    "from bnmfzoo.inference.gaussian.gibbs.gibbs_nmf import GibbsNMF",
])
def test_step_module_first_then_registered(statement):
    """A step module imported before PyMC (fresh interpreter) loads, and every step is registered
    (the registration used to run inside the step module's own half-finished import)."""
    code = (f"{statement}\nfrom pymc.step_methods import STEP_METHODS\n"
            "print(sorted(c.__name__ for c in STEP_METHODS if c.__module__.startswith('bnmfzoo')))")
    assert _run(code) == str(sorted(["GibbsNMF", "GibbsNMTF", "GibbsNoiseSD",
                                     "CollapsedGibbsBetaDir", "CollapsedGibbsDirDir",
                                     "GibbsPoisson", "HmcPoisson", "NotRecognizedNotice"]))
