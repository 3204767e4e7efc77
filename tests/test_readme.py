"""The README's Python examples run as written.

Each ```python block of README.md is executed in a fresh namespace, exactly as a reader would
paste it. Only the MCMC length is shortened, by capping ``draws`` and ``tune`` of
``pymc.sample`` (which ``BayesianNMF`` also goes through) in this process; the README text is
not edited. The Dask block starts a local cluster and is marked slow.
"""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
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
    exec(compile(code, f"{README}:{line}", "exec"), {"__name__": "__readme__"})  # noqa: S102
