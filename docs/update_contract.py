"""Rewrite the "Flags of each subcommand" blocks of docs/contract.md from ``--help`` (run after changing a knob).

``python docs/update_contract.py`` (from the project folder, with its environment). The test
``tests/core/test_cli.py::test_the_contract_document_lists_every_flag_as_help_prints_it`` fails
until the document matches.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

DOC = Path(__file__).with_name("contract.md")
BLOCK = re.compile(r"(### `(?P<name>[\w-]+)`\n\n```text\n)(?P<body>.*?)(\n```)", re.S)


def help_text(name: str) -> str:
    """What ``python -m audit_core <name> --help`` prints, at 80 columns."""
    sys.path.insert(0, str(DOC.parents[1]))
    from audit_core.__main__ import build_parser

    os.environ["COLUMNS"] = "80"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([name, "--help"])
    return out.getvalue().rstrip("\n")


def updated(text: str) -> str:
    """``text`` with every subcommand's block replaced by its current ``--help``."""
    return BLOCK.sub(lambda m: m.group(1) + help_text(m.group("name")) + m.group(4), text)


if __name__ == "__main__":
    DOC.write_text(updated(DOC.read_text()))
