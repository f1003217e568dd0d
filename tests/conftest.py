"""Shared test helpers: the repo root on sys.path, the bundled samples, and running a page or a command line.

- :func:`command_argv`: a page's "Reproduce this" line as the CLI's arguments (without ``--json``).
- :func:`run_command`: that line run verbatim (only its ``--json`` path changed); its JSON text.
- :func:`cli_json`: ``python -m audit_core ... --json`` in this process; the JSON text and stdout.
- :func:`page_json`: the JSON a page's download button serves (``ui.downloads``), text.
- :func:`click`: press the button whose label contains a text, and rerun.
- :func:`json_leaves`: every leaf of a JSON document with its path (for tolerance comparisons).
- :func:`spy`: count the calls of a function (it still runs): "the models were trained once".
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return ROOT / "sample_data"


def command_argv(command: str) -> list[str]:
    """A page's ``python -m audit_core ... --json out.json`` line as the CLI's arguments, without ``--json``."""
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "audit_core"]
    at = argv.index("--json")
    return argv[3:at] + argv[at + 2 :]


def run_command(command: str, out: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a page's ``python -m audit_core ...`` line from the project folder, writing ``--json`` to ``out``."""
    from audit_core.__main__ import main

    monkeypatch.chdir(ROOT)  # sample paths in the command are relative to the project folder
    assert main(["--quiet", *command_argv(command), "--json", str(out)]) == 0
    return out.read_text()


def cli_json(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """``python -m audit_core --quiet <argv> --json out`` in this process (from the project folder): the JSON text
    and what it printed."""
    import os

    from audit_core.__main__ import main

    capsys.readouterr()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert main(["--quiet", *argv, "--json", str(out)]) == 0
    finally:
        os.chdir(cwd)
    return out.read_text(), capsys.readouterr().out


def page_json(at: Any, key: str) -> str:
    """The JSON a page's download button serves, as text (the CLI's ``--json`` file, byte for byte)."""
    return at.session_state[f"{key}.json"]


def click(at: Any, label: str) -> Any:
    """Press the one button whose label contains ``label`` and rerun the page."""
    [button] = [b for b in at.button if label in b.label]
    return button.click().run()


def json_leaves(x: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON document, with its path (``.a.b[2]``)."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from json_leaves(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from json_leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[Any, ...]]:
    """Wrap ``owner.name`` (``owner`` a module's dotted name, a module or a class) so every call is recorded (its
    positional arguments) and then runs as before."""
    import importlib

    target = importlib.import_module(owner) if isinstance(owner, str) else owner
    real, calls = getattr(target, name), []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, recorded)
    return calls


# --------------------------------------------------------------------------- make test skips nothing
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ``AUDIT_NO_SKIPS=1`` (``make test`` as root, so CI) a skipped test fails the run: a green run checked
    everything (the PDFs with poppler's pdftotext, the database with PostgreSQL, the browser with Chromium)."""
    import os

    if os.environ.get("AUDIT_NO_SKIPS") == "1" and _SKIPPED and exitstatus == 0:
        print("\nerror: AUDIT_NO_SKIPS=1 and these tests were skipped:\n  " + "\n  ".join(_SKIPPED))
        session.exitstatus = 1
