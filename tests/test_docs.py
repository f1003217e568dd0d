"""The Python sessions in docs/api.md and the README's "Python API" section run as written (doctest)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _run(text: str, name: str) -> doctest.TestResults:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, name, str(ROOT / name), 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.fixture
def in_project(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sessions run from the project folder and write into out/ (ignored by git)."""
    monkeypatch.chdir(ROOT)
    (ROOT / "out").mkdir(exist_ok=True)


@pytest.mark.slow  # four audits, a LiRA among them
@pytest.mark.usefixtures("in_project")
def test_docs_api_session_runs_as_written():
    result = _run((ROOT / "docs" / "api.md").read_text(), "docs/api.md")
    assert result.attempted >= 20
    assert result.failed == 0


@pytest.mark.slow
@pytest.mark.usefixtures("in_project")
def test_readme_python_api_section_runs_as_written():
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"^## Python API\n(.*?)^## ", readme, re.S | re.M)
    assert section is not None
    result = _run(section[1], "README.md")
    assert result.attempted >= 8
    assert result.failed == 0
