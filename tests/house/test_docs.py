"""The documentation sources in ``docs/`` are consistent, checked without building them.

The real check is ``make docs`` (Sphinx with warnings as errors, in CI); these tests are cheap
(no import of PyMC, no Sphinx) and name the file to fix:

* the API reference (``docs/api/*.rst``) lists exactly the public names of each subpackage (its
  lazy ``_NAMES`` table, read from the source) and every name of the design's public-name table;
* every guide, results page and notebook is in a toctree, and every ``{doc}`` link has a target;
* the user-facing pages carry no issue numbers or dated measurements, and no page is over 800
  lines.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: The contract of the design's "Public names" table: module -> names.
DESIGN_PUBLIC_NAMES = {
    "bnmfzoo.datasets": ["load_gdsc", "load_ccle", "load_nbmf", "load_faces", "load_all_aml",
                         "load_movielens_100k", "swimmer", "laurberg", "continuum",
                         "exponential_gaussian", "bernoulli_mean", "holdout_mask",
                         "kfold_masks"],
    "bnmfzoo.models": ["exponential_gaussian", "tri_exponential_gaussian", "silf",
                       "uniform_noise", "beta_dir", "dir_beta", "dir_dir"],
    "bnmfzoo.likelihoods": ["gaussian", "silf", "uniform", "bernoulli_mean"],
    "bnmfzoo.inference": ["GibbsNMF", "GibbsNMTF", "CollapsedGibbsBetaDir",
                          "CollapsedGibbsDirDir", "fit_vb", "fit_icm", "fit_multiplicative",
                          "fit_particles", "fit_svgd", "fit_dsgd", "fit_cvb0", "fit_rrt"],
    "bnmfzoo.diagnostics": ["stein_discrepancy", "stein_weights", "l1_distance",
                            "angle_distance", "weighted_angle_distance", "covering_number",
                            "reconstruction_error", "align", "modes", "summary", "sbc"],
    "bnmfzoo": ["BayesianNMF"],
}

#: Module -> (its source file, its API page).
MODULES = {
    "bnmfzoo": ("bnmfzoo/__init__.py", "api/bnmfzoo.rst"),
    "bnmfzoo.datasets": ("bnmfzoo/datasets/__init__.py", "api/datasets.rst"),
    "bnmfzoo.models": ("bnmfzoo/models/__init__.py", "api/models.rst"),
    "bnmfzoo.likelihoods": ("bnmfzoo/likelihoods.py", "api/likelihoods.rst"),
    "bnmfzoo.inference": ("bnmfzoo/inference/__init__.py", "api/inference.rst"),
    "bnmfzoo.diagnostics": ("bnmfzoo/diagnostics/__init__.py", "api/diagnostics.rst"),
    "bnmfzoo.signatures": ("bnmfzoo/signatures/__init__.py", "api/signatures.rst"),
}
GUIDES = ["choosing", "gaussian", "binary", "counts", "signatures", "own_models", "modes", "data",
          "cli", "scaling", "scale"]


def _public_names(source):
    """The names of a lazy namespace, read from its source (``_NAMES`` keys or ``__all__``)."""
    tree = ast.parse((ROOT / source).read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in ("_NAMES", "__all__"):
                found[target.id] = node.value
    if "__all__" in found and isinstance(found["__all__"], ast.List):
        names = {ast.literal_eval(e) for e in found["__all__"].elts}
        # the subpackages are pages of their own, not autosummary entries
        return names - {m.rsplit(".", 1)[-1] for m in MODULES}
    return set(ast.literal_eval(found["_NAMES"]).keys())


def _autosummary_names(page):
    """Names listed in the ``.. autosummary::`` blocks of an rst page."""
    names, inside = [], False
    for line in (DOCS / page).read_text().splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside and line.strip() and not line.strip().startswith(":"):
            names.append(line.strip())
    return names


def _toctree_entries(page):
    """Documents listed in the MyST ``{toctree}`` blocks of a Markdown page."""
    entries, inside = [], False
    for line in (DOCS / page).read_text().splitlines():
        if line.startswith("```{toctree}"):
            inside = True
        elif inside and line.startswith("```"):
            inside = False
        elif inside and line.strip() and not line.startswith(":"):
            entries.append(line.strip())
    return entries


def _user_pages():
    return [DOCS / "index.md", DOCS / "notebooks.md", DOCS / "guide" / "index.md"] + [
        DOCS / "guide" / f"{g}.md" for g in GUIDES]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_api_page_lists_exactly_the_public_names(module):
    source, page = MODULES[module]
    listed = _autosummary_names(page)
    assert len(listed) == len(set(listed)), f"docs/{page} lists a name twice"
    public = _public_names(source)
    missing, stale = public - set(listed), set(listed) - public
    assert not missing, f"public names of {module} not in docs/{page}: {sorted(missing)}"
    assert not stale, f"docs/{page} lists names {module} does not export: {sorted(stale)}"


@pytest.mark.parametrize("module", sorted(DESIGN_PUBLIC_NAMES))
def test_design_public_names_are_documented(module):
    listed = set(_autosummary_names(MODULES[module][1]))
    missing = set(DESIGN_PUBLIC_NAMES[module]) - listed
    assert not missing, f"{module}: public names without an API entry: {sorted(missing)}"


def test_api_index_lists_every_module_page():
    entries = {line.strip() for line in (DOCS / "api" / "index.rst").read_text().splitlines()}
    for _, page in MODULES.values():
        assert Path(page).stem in entries, f"docs/api/index.rst misses {page}"


def test_every_page_is_in_a_toctree():
    index = _toctree_entries("index.md")
    guide = _toctree_entries("guide/index.md")
    for name in GUIDES:
        assert name in guide, f"docs/guide/{name}.md is in no toctree of docs/guide/index.md"
    assert set(p.stem for p in (DOCS / "guide").glob("*.md")) == {*GUIDES, "index"}, \
        "a guide page was added or removed: update GUIDES here and docs/guide/index.md"
    for page in ("guide/index", "notebooks", "api/index", "results/index"):
        assert page in index, f"docs/{page} is in no toctree of index.md"
    results = set(_toctree_entries("results/index.md"))
    for path in (DOCS / "results").glob("*.md"):
        if path.stem != "index":
            assert path.stem in results, f"docs/results/{path.name} is in no toctree"
    notebooks = set(_toctree_entries("notebooks.md"))
    for path in (ROOT / "notebooks").glob("*.py"):
        assert f"notebooks/{path.stem}" in notebooks, \
            f"notebooks/{path.name} is not rendered: add it to docs/notebooks.md"


def test_doc_links_have_targets():
    pattern = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
    for path in [*DOCS.glob("*.md"), *DOCS.glob("guide/*.md"), *DOCS.glob("results/*.md")]:
        for target in pattern.findall(path.read_text()):
            base = DOCS if target.startswith("/") else path.parent
            resolved = (base / target.lstrip("/")).resolve()
            if target == "notebooks" or target.startswith("notebooks/"):
                continue  # copied in from notebooks/ at build time
            assert any(resolved.with_suffix(s).exists() for s in (".md", ".rst")), \
                f"{path.relative_to(ROOT)}: {{doc}} link to missing page {target!r}"


ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)|\bsession \d+", re.IGNORECASE)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATED = re.compile(rf"\b(\d{{1,2}} )?({MONTHS}|Nov|Dec|Oct|Sep)\.? 20\d\d\b")


@pytest.mark.parametrize("path", _user_pages(), ids=lambda p: p.stem)
def test_user_pages_have_no_issue_numbers_or_dates(path):
    text = path.read_text()
    assert not ISSUE.findall(text), f"{path.name}: issue or session numbers in user-facing text"
    assert not DATED.findall(text), f"{path.name}: a dated measurement in user-facing text"


def test_no_page_over_800_lines():
    for path in DOCS.rglob("*.md"):
        if "_build" in path.parts:
            continue
        n = len(path.read_text().splitlines())
        assert n <= 800, f"{path.relative_to(ROOT)} has {n} lines (at most 800)"


def test_docs_target_builds_with_warnings_as_errors():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^docs:.*\n\t.*sphinx-build -W --keep-going -b html docs docs/_build/html",
                     makefile, re.MULTILINE), "make docs must build with -W"
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = re.search(r"^docs = \[(.*?)\]", pyproject, re.MULTILINE | re.DOTALL)
    assert extra, "pyproject.toml has no docs extra"
    for package in ("sphinx", "pydata-sphinx-theme", "numpydoc", "myst-nb", "jupytext"):
        assert f'"{package}>=' in extra.group(1), f"docs extra misses {package}"
    assert "make docs" in (ROOT / ".ci" / "run").read_text(), ".ci/run does not build the docs"
