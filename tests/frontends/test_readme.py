"""The README's Python examples run as written and print what their comments say.

Each ```python block of README.md is executed in a fresh namespace, exactly as a reader would
paste it. Only the MCMC length is shortened, by capping ``draws`` and ``tune`` of
``pymc.sample`` (which ``BayesianNMF`` also goes through) in this process; the README text is
not edited. The Dask block starts a local cluster and is marked slow.

Printed values (issue #36). The block runs statement by statement; the output of each top-level
``print(...)`` is captured and checked against the comment on its line, read by
:func:`claims` (so the check follows the README's text as others edit it):

* ``name: 123`` pairs (dimension sizes, ``chain: 2, draw: 500``): ``'name': 123`` printed,
  except ``draw`` / ``tune``, which this test caps at ``MAX_DRAWS``;
* tuples of integers ``(5, 139)`` (shapes) and list literals ``['17-AAG' ...]`` (labels):
  printed verbatim;
* a comment that is one bare word (``halfnormal``): the whole output;
* on an assignment, a ``D x N`` size (``705 cell lines x 139 drugs``): the assigned value's
  shape; a constructor-like repr (``LongMatrix(3 rows x 3 cols, 5 observed)``): its ``repr``.

Anything else in a comment is prose and not checked. The README states no statistical values
in these comments today (posterior summaries, scores); they would need a tolerance from their
Monte Carlo error at the capped length, so a statistical claim should not be written as a bare
number there. ``test_readme_claims_are_checked`` makes sure the parser still finds the claims.
"""

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
MAX_DRAWS = 30


def _blocks():
    text = README.read_text()
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        start = text.count("\n", 0, match.start()) + 1
        heading = re.findall(r"^#+ (.*)$", text[: match.start()], flags=re.M)[-1]
        slow = "Client(" in match.group(1)
        blocks.append(pytest.param(match.group(1), start,
                                   id=f"line{start}-{heading.replace(' ', '_')}",
                                   marks=[pytest.mark.slow] if slow else []))
    return blocks


def test_readme_has_examples():
    assert len(_blocks()) >= 3


_INT_PAIR = re.compile(r"\b([A-Za-z_]\w*): (\d+)\b")
_TUPLE = re.compile(r"\(\d+(?:, \d+)*,?\)")
_LIST = re.compile(r"\[[^\]]*\]")
_SIZE = re.compile(r"\b(\d+)(?: [a-z][a-z ]*?)? x (\d+)\b")
_REPR = re.compile(r"^[A-Z]\w*\(.*\)$")


def claims(comment, *, printed):
    """The checkable claims of one comment: a list of ``(kind, value)``.

    ``printed``: the comment is on a ``print`` line (else on an assignment).
    """
    comment = comment.strip()
    if not printed:
        if _REPR.match(comment):
            return [("repr", comment)]
        m = _SIZE.search(comment)
        return [("shape", (int(m.group(1)), int(m.group(2))))] if m else []
    if re.fullmatch(r"[A-Za-z_][\w-]*", comment):
        return [("output", comment)]
    out = [("size", (k, int(v))) for k, v in _INT_PAIR.findall(comment)]
    out += [("verbatim", t) for t in _TUPLE.findall(comment)]
    out += [("verbatim", t) for t in _LIST.findall(comment)]
    return out


def _check(kind, value, *, output=None, obj=None):
    if kind == "output":
        assert output.strip() == value, (output, value)
    elif kind == "size":
        name, n = value
        if name in ("draw", "tune"):
            n = min(n, MAX_DRAWS)
        assert re.search(rf"['\"]?{name}['\"]?: {n}\b", output), (output, value)
    elif kind == "verbatim":
        assert value in output, (output, value)
    elif kind == "shape":
        assert tuple(obj.shape[:2]) == value, (obj.shape, value)
    elif kind == "repr":
        assert repr(obj) == value, (repr(obj), value)


def _comment(code, stmt):
    """The ``# ...`` comment on the last line of ``stmt`` (empty if none)."""
    last = code.splitlines()[stmt.end_lineno - 1]
    return last.split("#", 1)[1] if "#" in last else ""


def _is_print(stmt):
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "print")


def run_block(code, filename, namespace):
    """Execute ``code`` statement by statement; check each comment's claims. Returns them."""
    checked = []
    for stmt in ast.parse(code).body:
        compiled = compile(ast.Module([stmt], type_ignores=[]), filename, "exec")
        comment = _comment(code, stmt)
        if _is_print(stmt):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compiled, namespace)  # noqa: S102
            print(buf.getvalue(), end="")
            for kind, value in claims(comment, printed=True):
                _check(kind, value, output=buf.getvalue())
                checked.append((kind, value))
            continue
        exec(compiled, namespace)  # noqa: S102
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            for kind, value in claims(comment, printed=False):
                _check(kind, value, obj=namespace[stmt.targets[0].id])
                checked.append((kind, value))
    return checked


def test_readme_claims_are_checked():
    """The parser finds the README's printed-value claims (no execution: fast).

    At least one claim of each kind the README used when this test was written; a README edit
    that drops them all would otherwise turn the check into a no-op.
    """
    found = []
    for param in _blocks():
        code = param.values[0]
        for stmt in ast.parse(code).body:
            if _is_print(stmt) or isinstance(stmt, ast.Assign):
                found += claims(_comment(code, stmt), printed=_is_print(stmt))
    kinds = {k for k, _ in found}
    assert {"size", "verbatim", "output", "shape"} <= kinds, found
    assert len(found) >= 10, found


def test_claims_parser():
    assert claims(" chain: 2, draw: 500, row: 705, factor: 5", printed=True) == [
        ("size", ("chain", 2)), ("size", ("draw", 500)), ("size", ("row", 705)),
        ("size", ("factor", 5))]
    assert claims(" (5, 139) (5, 139): mean and sd", printed=True) == [
        ("verbatim", "(5, 139)"), ("verbatim", "(5, 139)")]
    assert claims(" ['17-AAG' '681640' 'A-443654']", printed=True) == [
        ("verbatim", "['17-AAG' '681640' 'A-443654']")]
    assert claims(" halfnormal", printed=True) == [("output", "halfnormal")]
    assert claims(" R-hat, ESS now, on the aligned draws", printed=True) == []
    assert claims(" 705 cell lines x 139 drugs, NaN = missing", printed=False) == [
        ("shape", (705, 139))]
    assert claims(" LongMatrix(3 rows x 3 cols, 5 observed)", printed=False) == [
        ("repr", "LongMatrix(3 rows x 3 cols, 5 observed)")]
    assert claims(" Gibbs, 2 chains x (100 warm-up + 200 draws)", printed=False) == []
    with pytest.raises(AssertionError):
        _check("size", ("factor", 5), output="Frozen({'chain': 2, 'factor': 4})")
    _check("size", ("draw", 500), output=f"Frozen({{'chain': 2, 'draw': {MAX_DRAWS}}})")


@pytest.mark.parametrize(("code", "line"), _blocks())
def test_readme_example_runs(code, line, data_home, monkeypatch):
    import pymc as pm

    monkeypatch.setenv("BNMFZOO_DATA", str(data_home))
    real_sample = pm.sample

    def short_sample(*args, **kwargs):
        for name, default in (("draws", 1000), ("tune", 1000)):
            kwargs[name] = min(kwargs.get(name, default), MAX_DRAWS)
        return real_sample(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", short_sample)
    run_block(code, f"{README}:{line}", {"__name__": "__readme__"})
