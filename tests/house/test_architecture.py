"""The package's architecture, checked from its source with :mod:`ast` (nothing is imported).

Four rules, each with a unit test on a synthetic graph that shows the checker reports a
violation:

(a) no import cycles between modules of ``bnmfzoo`` (every import counts, including those inside
    functions; a strongly connected component of more than one module fails, naming them);
(b) floors: the low layers (``datasets``, ``_terms``, ``likelihoods``, ``models``,
    ``diagnostics`` and the plain NMF solvers ``_nmf_solvers``) never import ``inference`` or
    anything above it; ``models`` never imports ``diagnostics``; the solver module imports
    nothing of ``bnmfzoo`` but ``_rng`` and ``_validation``; the four inference wings
    (``gaussian``, ``binary``, ``particles``, ``exploration``) never import each other, and
    ``inference`` never imports the front ends (estimator, command line, report, plots,
    ``experiments``); the numeric-kernel floor ``inference/kernels`` (random streams, truncated
    normal, GIG, CRT, Gamma / binomial / multinomial samplers), which every wing may import,
    imports no other part of ``inference`` and nothing above it;
(c) no module longer than 600 lines of code, where a line of code is a line that is neither
    blank nor a pure ``#`` comment (docstrings count: a reader reads them too). Only ``.py``
    files are measured; data files shipped with the package are exempt.
(d) no folder of the package holds more than 15 modules (``.py`` files, ``__init__`` included):
    a reader sees a folder's parts from its listing (sub-packages group them);

(e) no module-level ``__getattr__`` outside a package's ``__init__`` (a lazy re-export shim in
    an ordinary module hides an import behind attribute access), except a public face built
    with ``bnmfzoo._base.lazy.lazy_namespace`` (``likelihoods``), whose strings are edges.

An import ``from p import name`` is an edge to the module ``p.name`` when that module exists,
else to ``p`` (its ``__init__``). Imports by string are edges too: a call of ``import_module``
or ``__import__`` (a constant names its module; an f-string is an edge to every module it can
name), and, in a module that imports by string or builds a lazy namespace
(``bnmfzoo._base.lazy``), every string constant that names a module of the package (absolute,
relative to the module's package, or a bare submodule name in a package ``__init__``).
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "bnmfzoo"
MAX_LOC = 600
MAX_MODULES = 15

#: Modules above the floors: the low layers never import these.
ABOVE = (
    "bnmfzoo.inference",
    "bnmfzoo.estimator",
    "bnmfzoo.cli",
    "bnmfzoo.report",
    "bnmfzoo.plots",
    "bnmfzoo._registry",
    "bnmfzoo._demo",
    "bnmfzoo._fitcli",
    "bnmfzoo.experiments",
    "bnmfzoo._cli",
    "bnmfzoo._report",
    "bnmfzoo._estimator_counts",
    "bnmfzoo.signatures",
)
#: The front ends and experiment protocols: inference never imports these.
FRONT = tuple(m for m in ABOVE if m != "bnmfzoo.inference")
LOW = (
    "bnmfzoo.datasets",
    "bnmfzoo._terms",
    "bnmfzoo.likelihoods",
    "bnmfzoo.models",
    "bnmfzoo.diagnostics",
    "bnmfzoo._base",
)
WINGS = tuple(f"bnmfzoo.inference.{w}"
              for w in ("gaussian", "binary", "particles", "exploration", "counts", "blocked"))
#: The numeric-kernel floor under the wings: every wing may import it.
KERNELS = "bnmfzoo.inference.kernels"
#: What the kernel floor never imports: every other part of ``inference`` (the wings,
#: ``tempering``, the step glue...) and the front ends.
KERNEL_FORBIDDEN = (
    *sorted(f"bnmfzoo.inference.{p.stem}" for p in (ROOT / "inference").iterdir()
            if p.stem not in ("kernels", "__init__", "__pycache__")
            and (p.suffix == ".py" or (p / "__init__.py").exists())),
    *FRONT,
)
#: ``(importer prefix, forbidden prefixes, explanation)``.
FLOOR_RULES = (
    *((low, ABOVE, "a low layer imports from above it") for low in LOW),
    ("bnmfzoo.models", ("bnmfzoo.diagnostics",), "models import diagnostics"),
    ("bnmfzoo.inference", FRONT, "inference imports a front end"),
    *((w, tuple(o for o in WINGS if o != w), "inference wings import each other")
      for w in WINGS),
    (KERNELS, KERNEL_FORBIDDEN, "the kernel floor imports from above it"),
)
#: The only ``bnmfzoo`` modules the plain NMF solvers may import.
SOLVER_MODULE = "bnmfzoo._base.nmf_solvers"
SOLVER_ALLOWED = ("bnmfzoo._base.rng", "bnmfzoo._base.validation")

# Known offenders, each to be removed when its fix is merged. A stale entry fails the tests
# below, so the list cannot outlive the problem.
KNOWN_CYCLES = set()
KNOWN_LONG = set()
KNOWN_CROWDED = set()


# ------------------------------------------------------------------------------------------------
# the checker
# ------------------------------------------------------------------------------------------------


def module_name(path, root):
    """Dotted module name of ``path`` inside the package directory ``root``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve_relative(module, is_package, level, target):
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


_STRING_IMPORTERS = ("import_module", "__import__", "lazy_namespace")


def _call_name(node):
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _fstring_pattern(node):
    """A regex matching every module name the f-string ``node`` can produce."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(re.escape(str(value.value)))
        else:
            parts.append(r"[A-Za-z0-9_]+")
    return re.compile("".join(parts) + r"\Z")


def string_imports(tree, module, is_package, known):
    """Modules in ``known`` that ``tree`` imports by string (see the module docstring)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and _call_name(n) in _STRING_IMPORTERS]
    if not calls:
        return set()
    out = set()
    for call in calls:
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.JoinedStr) and _call_name(call) != "lazy_namespace":
            pattern = _fstring_pattern(arg)
            out.update(m for m in known if pattern.match(m))
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not text or len(text) > 200 or " " in text:
            continue
        if text.startswith("."):
            level = len(text) - len(text.lstrip("."))
            base = package.split(".")
            base = base[: len(base) - (level - 1)] if level > 1 else base
            name = ".".join(base + [text.lstrip(".")]) if text.lstrip(".") else ".".join(base)
        elif is_package and f"{module}.{text}" in known:
            name = f"{module}.{text}"
        else:
            name = text
        if name in known:
            out.add(name)
    return out


def imports_of(source, module, is_package, known):
    """Set of modules in ``known`` that ``source`` (the text of ``module``) imports, anywhere."""
    out = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:  # "import a.b.c" where only a.b is ours
                    name = name.rpartition(".")[0]
                if name:
                    out.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif base in known:
                    out.add(base)
    out |= string_imports(tree, module, is_package, known)
    out.discard(module)
    return out


def getattr_shims(root):
    """Modules other than a package ``__init__`` that define a module-level ``__getattr__``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            lazy = isinstance(getattr(node, "value", None), ast.Call) and \
                _call_name(node.value) == "lazy_namespace"
            defines = (isinstance(node, ast.FunctionDef) and node.name == "__getattr__") or (
                isinstance(node, ast.Assign) and not lazy and any(
                    isinstance(t, ast.Name) and t.id == "__getattr__" for t in ast.walk(node)
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)))
            if defines:
                out.append(module_name(path, root))
                break
    return out


def import_graph(root):
    """``{module: set of imported modules}`` for every module of the package at ``root``."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    return {
        mod: imports_of(path.read_text(encoding="utf-8"), mod, path.name == "__init__.py", known)
        for mod, path in files.items()
    }


def strongly_connected(graph):
    """Strongly connected components of ``graph`` (Tarjan 1972), each a frozenset."""
    index, low, stack, on_stack, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            comps.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def cycles(graph):
    """Import cycles: strongly connected components of more than one module, sorted."""
    return sorted((c for c in strongly_connected(graph) if len(c) > 1), key=sorted)


def _under(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


def floor_violations(graph, rules=FLOOR_RULES):
    """``(importer, imported, explanation)`` for every edge a rule forbids, sorted."""
    out = set()
    for src, targets in graph.items():
        for prefix, forbidden, why in rules:
            if not _under(src, prefix):
                continue
            for dst in targets:
                if any(_under(dst, f) for f in forbidden):
                    out.add((src, dst, why))
    return sorted(out)


def solver_violations(graph, module=SOLVER_MODULE, allowed=SOLVER_ALLOWED):
    """Modules of ``bnmfzoo`` that the solver module imports beyond ``allowed``."""
    return sorted(t for t in graph.get(module, ()) if t not in allowed)


def lines_of_code(source):
    """Lines that are neither blank nor a pure ``#`` comment (docstrings count)."""
    return sum(1 for line in source.splitlines() if line.strip() and not
               line.lstrip().startswith("#"))


def long_modules(root, limit=MAX_LOC):
    """``{module: lines of code}`` for every module of ``root`` above ``limit``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        n = lines_of_code(path.read_text(encoding="utf-8"))
        if n > limit:
            out[module_name(path, root)] = n
    return out


def crowded_folders(root, limit=MAX_MODULES):
    """``{folder relative to root's parent: number of modules}`` for folders above ``limit``."""
    out = {}
    for folder in sorted({root, *(p for p in root.rglob("*") if p.is_dir())}):
        if folder.name == "__pycache__":
            continue
        n = len(list(folder.glob("*.py")))
        if n > limit:
            out[folder.relative_to(root.parent).as_posix()] = n
    return out


# ------------------------------------------------------------------------------------------------
# the rules on bnmfzoo
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_graph_sees_the_package(graph):
    # a sanity check that the walker finds modules and edges (an empty graph passes every rule)
    assert len(graph) > 50
    assert "bnmfzoo._base.nmf_solvers" in graph["bnmfzoo.models.uniform"]
    vb = "bnmfzoo.inference.gaussian.variational"
    assert f"{vb}._vb_glue" in graph[f"{vb}.vb"]


def test_no_import_cycles(graph):
    found = set(cycles(graph))
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"
    stale = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not stale, f"fixed, remove from KNOWN_CYCLES: {stale}"


def test_no_getattr_shims():
    found = getattr_shims(ROOT)
    assert not found, f"module-level __getattr__ outside a package __init__: {found}"


def test_floors(graph):
    bad = floor_violations(graph)
    assert not bad, "\n".join(f"{src} -> {dst} ({why})" for src, dst, why in bad)


def test_solver_module_is_low(graph):
    assert SOLVER_MODULE in graph
    bad = solver_violations(graph)
    assert not bad, f"{SOLVER_MODULE} may import only {SOLVER_ALLOWED}, imports {bad}"


def test_module_length():
    found = long_modules(ROOT)
    new = {m: n for m, n in found.items() if m not in KNOWN_LONG}
    assert not new, f"modules above {MAX_LOC} lines of code: {new}"
    stale = KNOWN_LONG - set(found)
    assert not stale, f"short now, remove from KNOWN_LONG: {sorted(stale)}"


def test_folder_size():
    found = crowded_folders(ROOT)
    new = {f: n for f, n in found.items() if f not in KNOWN_CROWDED}
    assert not new, f"folders with more than {MAX_MODULES} modules (split into sub-packages): {new}"
    stale = KNOWN_CROWDED - set(found)
    assert not stale, f"small now, remove from KNOWN_CROWDED: {sorted(stale)}"


# ------------------------------------------------------------------------------------------------
# the checker reports violations
# ------------------------------------------------------------------------------------------------


def test_checker_reports_a_cycle():
    g = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p.e": set()}
    assert cycles(g) == [frozenset({"p.a", "p.b", "p.c"})]
    assert cycles({"p.a": {"p.b"}, "p.b": set()}) == []


def test_checker_reports_up_arrows_and_wing_crossings():
    g = {
        "bnmfzoo.models.uniform": {"bnmfzoo.inference.exploration.rrt", "bnmfzoo._base.rng",
                                   "bnmfzoo.diagnostics.distances"},
        "bnmfzoo.inference.particles.svgd": {"bnmfzoo.inference.gaussian.variational._vb_core"},
        "bnmfzoo.inference.gaussian.variational.vb":
        {"bnmfzoo.inference.gaussian.variational._vb_core"},
        "bnmfzoo._base.nmf_solvers": {"bnmfzoo._base.rng", "bnmfzoo._base.results"},
    }
    assert floor_violations(g) == [
        ("bnmfzoo.inference.particles.svgd", "bnmfzoo.inference.gaussian.variational._vb_core",
         "inference wings import each other"),
        ("bnmfzoo.models.uniform", "bnmfzoo.diagnostics.distances", "models import diagnostics"),
        ("bnmfzoo.models.uniform", "bnmfzoo.inference.exploration.rrt",
         "a low layer imports from above it"),
    ]
    assert solver_violations(g) == ["bnmfzoo._base.results"]


def test_kernel_floor_is_registered_and_checked():
    """Every wing sits above the kernel floor; a kernel importing a wing is reported."""
    assert all(w in KERNEL_FORBIDDEN for w in WINGS)
    assert "bnmfzoo.inference.tempering" in KERNEL_FORBIDDEN
    assert KERNELS not in KERNEL_FORBIDDEN
    g = {"bnmfzoo.inference.kernels.gig": {"bnmfzoo.inference.kernels.streams",
                                           "bnmfzoo.inference.counts._data"},
         "bnmfzoo.inference.counts.sweep": {"bnmfzoo.inference.kernels.crt"},
         "bnmfzoo.inference.gaussian.gibbs._gram": {"bnmfzoo.inference.kernels.truncnorm"}}
    assert floor_violations(g) == [("bnmfzoo.inference.kernels.gig",
                                    "bnmfzoo.inference.counts._data",
                                    "the kernel floor imports from above it")]


def test_walker_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "bnmfzoo"
    (pkg / "models").mkdir(parents=True)
    (pkg / "inference").mkdir()
    for init in (pkg, pkg / "models", pkg / "inference"):
        (init / "__init__.py").write_text("")
    (pkg / "inference" / "fit.py").write_text("from ..models import gauss\n")
    (pkg / "models" / "gauss.py").write_text(
        '"""Doc."""\n\n\ndef f():\n    from bnmfzoo.inference.fit import g  # lazy\n    return g\n'
    )
    g = import_graph(pkg)
    assert g["bnmfzoo.inference.fit"] == {"bnmfzoo.models.gauss"}
    assert g["bnmfzoo.models.gauss"] == {"bnmfzoo.inference.fit"}
    assert cycles(g) == [frozenset({"bnmfzoo.inference.fit", "bnmfzoo.models.gauss"})]
    assert floor_violations(g) == [
        ("bnmfzoo.models.gauss", "bnmfzoo.inference.fit", "a low layer imports from above it")
    ]


def test_walker_sees_string_imports_and_shims(tmp_path):
    pkg = tmp_path / "bnmfzoo"
    (pkg / "wings" / "a").mkdir(parents=True)
    (pkg / "wings" / "b").mkdir()
    for init in (pkg / "wings", pkg / "wings" / "a", pkg / "wings" / "b"):
        (init / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        "from bnmfzoo.lazy import lazy_namespace\n"
        "__getattr__, __dir__ = lazy_namespace(__name__, {'Est': '.est'}, ('wings',))\n")
    (pkg / "lazy.py").write_text("")
    (pkg / "est.py").write_text(
        "import importlib\n\n\ndef f(w):\n"
        "    return importlib.import_module(f'bnmfzoo.wings.{w}')\n")
    (pkg / "reg.py").write_text(
        "from importlib import import_module\nTABLE = {'x': 'bnmfzoo.est'}\n\n\n"
        "def get(k):\n    return import_module(TABLE[k])\n")
    (pkg / "shim.py").write_text(
        "def __getattr__(name):\n    return __import__('bnmfzoo.reg')\n")
    g = import_graph(pkg)
    assert g["bnmfzoo"] == {"bnmfzoo.lazy", "bnmfzoo.est", "bnmfzoo.wings"}
    assert g["bnmfzoo.est"] == {"bnmfzoo.wings.a", "bnmfzoo.wings.b"}
    assert g["bnmfzoo.reg"] == {"bnmfzoo.est"}
    assert g["bnmfzoo.shim"] == {"bnmfzoo.reg"}
    assert getattr_shims(pkg) == ["bnmfzoo.shim"]


def test_lines_of_code_rule(tmp_path):
    text = '"""Doc\n\nstring."""\n\n# comment\n    # indented comment\nx = 1  # code\n'
    assert lines_of_code(text) == 3  # two docstring lines with text, one statement
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_LOC + 1))
    (tmp_path / "ok.py").write_text("x = 1\n" * MAX_LOC)
    assert long_modules(tmp_path) == {f"{tmp_path.name}.big": MAX_LOC + 1}


def test_folder_size_rule(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for i in range(MAX_MODULES + 1):
        (pkg / f"m{i}.py").write_text("x = 1\n")
    for i in range(MAX_MODULES):
        (pkg / "sub" / f"m{i}.py").write_text("x = 1\n")
    assert crowded_folders(pkg) == {"pkg": MAX_MODULES + 1}


def benchmark_importers(folder):
    """Files under ``folder`` that import ``benchmarks`` (statement, ``import_module`` or
    ``__import__`` with a literal name), relative to ``folder``."""
    found = []
    for path in sorted(Path(folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif (isinstance(node, ast.Call) and node.args
                  and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", None))
                  in ("import_module", "__import__")):
                names = [node.args[0].value]
            if any(n == "benchmarks" or n.startswith("benchmarks.") for n in names):
                found.append(str(path.relative_to(folder)))
                break
    return found


def test_tests_and_notebooks_never_import_benchmarks():
    """Benchmarks may use the library and its tests' ideas, never the other way round: a test
    that needs a benchmark's code tests the benchmark, and lives beside it in ``benchmarks/``."""
    top = ROOT.parent
    assert benchmark_importers(top / "tests") == []
    assert benchmark_importers(top / "notebooks") == []


def test_benchmark_importer_rule(tmp_path):
    (tmp_path / "a.py").write_text("from benchmarks.speed import x\n")
    (tmp_path / "b.py").write_text("import importlib\nimportlib.import_module('benchmarks.y')\n")
    (tmp_path / "c.py").write_text("import benchmarksish\nfrom . import benchmarks\n")
    assert benchmark_importers(tmp_path) == ["a.py", "b.py"]
