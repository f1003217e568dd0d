"""The command line's shared contract: exit 2 and one line on stderr for bad input."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_missing_flag_is_one_line_exit_2():
    r = _run("tabular", "--train", "x.csv")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--holdout" in r.stderr


def test_bad_epsilon_is_one_line_exit_2():
    r = _run("fabrication", "--dataset", "digits", "--epsilon", "eight")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1


def test_every_subcommand_has_a_help_page():
    from audit_core.registry import REGISTRY, TOOLS

    for name in ["", *REGISTRY, *TOOLS]:
        r = _run(*([name] if name else []), "--help")
        assert r.returncode == 0, r.stderr
        assert "usage: python -m audit_core" in r.stdout
