"""The end of every page: the command line that reproduces the result, and the downloads (report, JSON, records).

Every file is built only when its button is clicked. The JSON download is the CLI's ``--json``
document byte for byte (``Outcome.to_json``, written by ``to_json_text``); the page keeps its
text and the command in ``st.session_state[f"{key}.json"]`` and ``[f"{key}.command"]`` so a
test can run the command and compare the bytes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from audit_core.common.outputs import csv_text
from audit_core.common.report import pdf_available, to_json_text
from audit_core.contract import Outcome

__all__ = ["outcome_downloads"]


def outcome_downloads(outcome: Outcome[Any, Any], *, key: str) -> None:
    """"Reproduce this" (the ``python -m audit_core ...`` line) and the buttons: HTML and PDF report, JSON, records."""
    command, document = outcome.command(), to_json_text(outcome.to_json())
    st.session_state[f"{key}.command"] = command
    st.session_state[f"{key}.json"] = document
    with st.expander("⌨️ Reproduce this from the command line"):
        st.code(command, language="bash")
        st.caption(
            "Run it in the project folder (with its environment: `.venv/bin/python`): its --json file is the JSON "
            "download below, byte for byte, computed from the same inputs, settings and seed. Uploaded files are named "
            "as you uploaded them: run it where they are."
        )
    slug = outcome.audit.name.replace("-", "_")
    buttons: list[tuple[str, Any, str, str, str]] = []
    if outcome.audit.report is not None:
        full = outcome.audit.report_records and st.checkbox(
            "Full records of the most exposed people in the report (the report is then personal data)",
            key=f"{key}.full_records", help="By default the report shows only their row ids and the columns that make "
            "them exposed (the CLI's --report-records redacted).")  # fmt: skip
        buttons.append(("⬇ HTML report", lambda: outcome.report(full_records=full).to_html(), f"{slug}.html",
                        "text/html", "Self-contained: opens offline, figures included."))  # fmt: skip
        if pdf_available():
            buttons.append(("⬇ PDF report", lambda: _pdf_bytes(outcome, full), f"{slug}.pdf", "application/pdf",
                            "The HTML report printed by a local headless Chromium."))  # fmt: skip
    buttons.append(("⬇ JSON", document, f"{slug}.json", "application/json", "The command line's --json document."))
    if outcome.audit.records is not None:
        buttons.append(("⬇ Per-record CSV", lambda: csv_text(outcome.records()), f"{slug}_records.csv", "text/csv",
                        "One row per record: what the command line's --records writes."))  # fmt: skip
    for col, (label, data, name, mime, help_text) in zip(st.columns(4), buttons, strict=False):
        col.download_button(label, data=data, file_name=name, mime=mime, key=f"{key}.{name}", on_click="ignore",
                            help=help_text)  # fmt: skip


def _pdf_bytes(outcome: Outcome[Any, Any], full_records: bool = False) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return outcome.report(full_records=full_records).to_pdf(Path(tmp) / "report.pdf").read_bytes()
