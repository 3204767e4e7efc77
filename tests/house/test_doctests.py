"""The package's doctests, collected by a plain ``pytest tests``.

``pytest --doctest-modules bnmfzoo`` collects one item per docstring with examples in every
module of the package; a contributor's ``pytest tests`` did not, so a change that broke a
docstring's printed number passed locally and failed only under ``make test``. This module
collects the same doctests with the same rules, one parametrized test per docstring:

* every ``*.py`` file under ``bnmfzoo/`` (``__init__.py`` included), except ``__main__.py``
  and ``setup.py``, as pytest's doctest plugin does;
* :class:`doctest.DocTestFinder` on the imported module, with pytest's fix for
  ``functools.cached_property`` docstrings on Python < 3.13; docstrings without examples are
  not tests;
* the option flags of pytest's ``doctest_optionflags`` ini setting (``ELLIPSIS`` unless
  ``pyproject.toml`` says otherwise);
* a docstring whose examples are all ``# doctest: +SKIP`` is reported as skipped.

``make test`` and CI therefore run ``pytest tests`` without ``--doctest-modules bnmfzoo``
(nothing runs twice). ``test_every_module_with_examples_is_collected`` checks that the walk
found the whole package.
"""

import doctest
import functools
import importlib
import io
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "bnmfzoo"
#: files pytest's doctest plugin never collects
_NOT_COLLECTED = ("__main__.py", "setup.py")


def _module_names():
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in _NOT_COLLECTED or "__pycache__" in path.parts:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


class _Finder(doctest.DocTestFinder):
    """pytest's finder: ``cached_property`` docstrings count as the module's (Python < 3.13)."""

    if sys.version_info < (3, 13):

        def _from_module(self, module, object):  # noqa: A002 (doctest's own signature)
            if isinstance(object, functools.cached_property):
                object = object.func  # noqa: A001
            return super()._from_module(module, object)


def _collect():
    """``[(module name, DocTest)]`` of every docstring with examples, in pytest's order."""
    out = []
    finder = _Finder()
    for name in _module_names():
        module = importlib.import_module(name)
        out += [(name, t) for t in finder.find(module, module.__name__) if t.examples]
    return out


def _optionflags(config):
    """pytest's ``doctest_optionflags`` (default ``ELLIPSIS``) as :mod:`doctest` flags."""
    flags = 0
    for name in config.getini("doctest_optionflags"):
        if name not in doctest.OPTIONFLAGS_BY_NAME:
            raise ValueError(f"doctest_optionflags: {name!r} is a pytest-only flag (NUMBER, "
                             "ALLOW_UNICODE, ALLOW_BYTES) that tests/house/test_doctests.py does "
                             "not implement; use a standard doctest flag")
        flags |= doctest.OPTIONFLAGS_BY_NAME[name]
    return flags


_DOCTESTS = _collect()


@pytest.mark.parametrize("dtest", [t for _, t in _DOCTESTS], ids=[t.name for _, t in _DOCTESTS])
def test_doctest(dtest, request):
    """Run one docstring's examples; report the first failure in doctest's own words."""
    if all(ex.options.get(doctest.SKIP, False) for ex in dtest.examples):
        pytest.skip("all examples are marked +SKIP")
    runner = doctest.DocTestRunner(verbose=False, optionflags=_optionflags(request.config))
    out = io.StringIO()
    # on a copy of the module's globals: the runner clears the globals it ran with
    test = doctest.DocTest(dtest.examples, dict(dtest.globs), dtest.name, dtest.filename,
                           dtest.lineno, dtest.docstring)
    result = runner.run(test, out=out.write)
    assert result.failed == 0, out.getvalue()


def test_every_module_with_examples_is_collected():
    """The walk imports every module of the package and finds the docstrings pytest would.

    The known floor: modules whose doctests are part of the documented behaviour (the split,
    the batch-means error, the mass interval) are among the collected ones, and no module of
    the package is missing from the walk.
    """
    names = _module_names()
    on_disk = {p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert len(names) == len(on_disk) - sum(p.name in _NOT_COLLECTED for p in on_disk)
    collected = {t.name for _, t in _DOCTESTS}
    for name in ("bnmfzoo.inference.counts.sweep.split_counts",
                 "bnmfzoo.diagnostics._modes.masses.batch_means_mcse",
                 "bnmfzoo.diagnostics._modes.masses.mass_interval"):
        assert name in collected
