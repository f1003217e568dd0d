"""Self-contained HTML and JSON reports of an audit.

A pre-release review ends in a document someone signs. A :class:`Report` holds what
was asked, what went in (rows, columns, SHA-256 of each input), every setting and
seed, the package versions, the figures, the metrics, the verdict and the limits of
the method. ``to_html()`` inlines plotly.js once, so the file opens offline;
``to_pdf()`` prints that HTML with a local headless Chromium when one is installed.
Each audit builds its report in ``audit_core/<audit>/verdict.py`` (``build_report``), from the
figures and tables of ``audit_core/<audit>/figures.py``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import json
import platform
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from audit_core.common.display import readable
from audit_core.common.errors import InputError
from audit_core.common.glossary import terms_in
from audit_core.common.hashing import table_digest

__all__ = [
    "CHROMIUM_FLAGS",
    "REPORT_RECORDS",
    "InputFile",
    "InputSummary",
    "RecordTable",
    "Report",
    "add_software_status",
    "command_block",
    "describe_input",
    "package_versions",
    "pdf_available",
    "require_pdf",
    "to_json_text",
]

_REPORTED_PACKAGES = (
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "torch",
    "sdv",
    "pgmpy",
    "numba",
    "plotly",
    "streamlit",
)


CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Flags for a headless Chromium that never reaches the network (PDF export, browser tests)."""


def _chromium() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def pdf_available() -> bool:
    """True when a local Chromium can print reports to PDF."""
    return _chromium() is not None


def require_pdf() -> str:
    """The local Chromium that prints reports to PDF; without one, the refusal (checked before an audit runs)."""
    browser = _chromium()
    if browser is None:
        raise InputError("PDF export needs a local Chromium (apt-get install chromium); the HTML report works without it.")
    return browser


@dataclass(frozen=True)
class InputSummary:
    """What one input was: its name, shape and a hash that identifies its content."""

    name: str
    rows: int
    columns: int
    sha256: str
    detail: str = ""


@dataclass(frozen=True)
class InputFile:
    """One input file as given: its input, its file name, its size and the SHA-256 of its bytes (``sha256sum FILE``).

    ``sha256`` is empty where the input had no file (a bundled data set), or the file's bytes were not kept.
    """

    input: str
    file: str
    sha256: str
    size: int | None = None


@dataclass(frozen=True)
class RecordTable:
    """A table of individual people's records: redacted in a report unless full records are asked for.

    Redacted, the report shows ``keep`` only (the row ids and the columns that make each record
    exposed: its scores and the share of non-members it outranks); with ``--report-records full``
    the whole ``frame``, under a warning that the report is then personal data.
    """

    caption: str
    frame: pd.DataFrame
    keep: tuple[str, ...]

    def shown(self, full: bool) -> pd.DataFrame:
        """The table as the report prints it."""
        return self.frame if full else self.frame[[c for c in self.keep if c in self.frame.columns]]


REPORT_RECORDS = ("redacted", "full")
"""``--report-records``: exposed records redacted (the default) or in full (personal data, with a warning)."""


def describe_input(name: str, data: pd.DataFrame | np.ndarray | bytes, *, detail: str = "") -> InputSummary:
    """Summarise an input table, array or raw file for the report.

    The hash is over the data's values (pandas' stable row hashes for a table, the raw
    bytes for an array or file), so the same data gives the same hash on any machine.
    """
    if isinstance(data, pd.DataFrame):
        return InputSummary(name, int(data.shape[0]), int(data.shape[1]), table_digest(data), detail)
    if isinstance(data, np.ndarray):
        arr = np.ascontiguousarray(data)
        digest = hashlib.sha256(arr.tobytes() + str(arr.shape).encode()).hexdigest()
        cols = int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1
        return InputSummary(name, int(arr.shape[0]) if arr.ndim else 1, cols, digest, detail)
    raw = bytes(data)
    return InputSummary(name, 0, 0, hashlib.sha256(raw).hexdigest(), detail or f"{len(raw)} bytes")


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape the numbers."""
    from audit_core import __version__

    out = {"python": platform.python_version(), "audit_core": __version__}
    for name in _REPORTED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    for name, line in _SOFTWARE_STATUS.items():  # the registry's: which self-check this installation passes
        out[name] = line()
    return out


_SOFTWARE_STATUS: dict[str, Callable[[], str]] = {}


def add_software_status(name: str, line: Callable[[], str]) -> None:
    """Show ``name: line()`` in every report's Software section (``audit_core.registry`` adds the self-check's
    status), so shared code knows no audit."""
    _SOFTWARE_STATUS[name] = line


def _jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays and other odd values to plain JSON values."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        f = float(x)
        return f if np.isfinite(f) else None
    return x


def to_json_text(obj: Any) -> str:
    """JSON text of ``obj`` with numpy values converted and NaN/inf written as null."""
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False)


@dataclass(frozen=True)
class Report:
    """One audit's deliverable; render with :meth:`to_html` or :meth:`to_json`.

    An audit's report builder fills in what its result says; the title and the question are the
    registry's (``Audit.title``, ``Audit.question``), set by ``audit_core.contract.Outcome.report``.
    """

    inputs: list[InputSummary]
    settings: dict[str, Any]
    metrics: dict[str, Any]
    figures: list[tuple[str, go.Figure]]
    verdict: str
    limits: list[str]
    seed: int
    title: str = ""
    question: str = ""
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    checklist: pd.DataFrame | None = None  # a "release checklist" shown first (audit_core.synthetic.verdict)
    command: str = ""  # the ``python -m audit_core ...`` line that reproduces the result (audit_core.contract)
    decision: Any = None  # the release decision (audit_core.common.decision.Decision), shown first
    regulation: list[dict[str, str]] = field(default_factory=list)  # what regulators ask (audit_core.common.regulation)
    threats: list[dict[str, str]] = field(default_factory=list)  # a card per test (audit_core.common.threats)
    files: list[InputFile] = field(default_factory=list)  # every input file with its SHA-256 (audit_core.contract)
    records: list[RecordTable] = field(default_factory=list)  # people's records: redacted unless full_records
    full_records: bool = False  # --report-records full: the records in full, under a personal-data warning
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))

    def to_json(self) -> dict[str, Any]:
        """Everything but the figures, as plain JSON values."""
        return _jsonable(
            {
                "title": self.title,
                "question": self.question,
                "created": self.created,
                "inputs": [vars(i) for i in self.inputs],
                "files": [vars(f) for f in self.files],
                "settings": self.settings,
                "seed": self.seed,
                "metrics": self.metrics,
                "verdict": self.verdict,
                "decision": self.decision.to_json() if self.decision is not None else None,
                "regulation": self.regulation,
                "limits": self.limits,
                "command": self.command,
                "versions": package_versions(),
            }
        )

    def to_html(self) -> str:
        """A single self-contained HTML page (plotly.js inlined once; opens offline).

        Order: the decision, the checklist, the question, the verdict and the limits of the method, the
        inputs (each file's full SHA-256), the figures and tables, what regulators ask, the command that
        reproduces the result; then the appendix: settings, terms, software and all metrics (the
        ``--json`` document, collapsed; in print only its SHA-256, so the PDF stays short).
        """
        esc = html.escape
        wrap = lambda table: f"<div class='table-wrap'>{table}</div>"  # noqa: E731  (scrolls on screen, wraps in print)
        table_html = lambda frame: wrap(readable(frame).to_html(index=False, border=0, na_rep="–"))  # noqa: E731
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'>",
            f"<title>{esc(self.title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{esc(self.title)}</h1><p class='meta'>Created {esc(self.created)} · seed {self.seed}</p>",
        ]
        if self.full_records and self.records:
            parts.append("<div class='personal'><b>This report is personal data.</b> It prints the full records of the "
                         "most exposed people (--report-records full). Store and share it as personal data; the default "
                         "report prints only their row ids and the columns that make them exposed.</div>")  # fmt: skip
        parts.append(_decision_html(self.decision))
        if self.checklist is not None:
            parts += ["<h2>Release checklist</h2>", wrap(self.checklist.to_html(index=False, border=0, classes="checklist"))]
        parts += [
            f"<h2>Question</h2><p>{esc(self.question)}</p>",
            f"<h2>Verdict</h2><div class='verdict'>{esc(self.verdict)}</div>",
            "<h2>Limits of the method</h2><ul>",
            *(f"<li>{esc(limit)}</li>" for limit in self.limits),
            "</ul>",
            *_inputs_html(self.files, self.inputs),
        ]
        if self.threats:
            parts += ["<h2>What each test assumes and measures</h2>",
                      wrap(pd.DataFrame(self.threats).to_html(index=False, border=0, classes="threats"))]  # fmt: skip
        include_js: bool | str = True
        for caption, fig in self.figures:
            parts.append(f"<h2>{esc(caption)}</h2>")
            figure = fig.to_html(full_html=False, include_plotlyjs=include_js,
                                 config={"displaylogo": False, "responsive": True, "displayModeBar": False})  # fmt: skip
            parts.append(f"<div class='figure'>{figure}</div>")
            include_js = False
        for caption, table in self.tables:
            parts += [f"<h2>{esc(caption)}</h2>", table_html(table)]
        for rec in self.records:
            parts.append(f"<h2>{esc(rec.caption)}</h2>")
            if not self.full_records:
                parts.append("<p class='note'>Redacted: row ids and the columns that make each record exposed; the "
                             "records' values are left out (personal data). <code>--report-records full</code> prints "
                             "them.</p>")  # fmt: skip
            parts.append(table_html(rec.shown(self.full_records)))
        if self.regulation:
            parts.append("<h2>What regulators ask, and what this audit shows</h2>")
            parts.append(wrap(pd.DataFrame(self.regulation).to_html(index=False, border=0, classes="regulation")))
        if self.command:
            parts.append("<div class='keep'><h2>Reproduce this</h2><p class='note'>Run it in the project folder; its "
                         "--json file is the metrics below, byte for byte.</p>"
                         + command_block(self.command) + "</div>")  # fmt: skip
        parts.append("<h2 class='appendix'>Appendix: Settings</h2>" + wrap(_dict_table(self.settings)))
        terms = terms_in([self.verdict, *self.limits, *(c for c, _ in self.figures), *(c for c, _ in self.tables),
                          *(self.decision.reasons if self.decision is not None else ())])  # fmt: skip
        if terms:
            parts.append("<h2>Appendix: Terms used</h2><dl class='terms'>")
            parts.extend(f"<dt>{esc(t)}</dt><dd>{esc(line)}</dd>" for t, line in terms.items())
            parts.append("</dl>")
        parts.append("<h2>Appendix: Software</h2>" + wrap(_dict_table(package_versions())))
        parts.append(_metrics_html(self.metrics))
        parts.append("</body></html>")
        return "\n".join(parts)

    def to_pdf(self, path: str | Path, *, timeout_s: float = 120) -> Path:
        """Print the HTML report to PDF with a local headless Chromium (no network).

        Raises :class:`InputError` when no Chromium is installed
        (``apt-get install chromium``).
        """
        browser = require_pdf()
        path = Path(path).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "report.html"
            page.write_text(self.to_html(), encoding="utf-8")
            cmd = [
                browser,
                "--headless",
                *CHROMIUM_FLAGS,
                f"--user-data-dir={tmp}/profile",
                "--virtual-time-budget=10000",
                "--no-pdf-header-footer",
                f"--print-to-pdf={path}",
                page.as_uri(),
            ]
            try:
                subprocess.run(cmd, check=True, capture_output=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise InputError(f"Chromium did not print the PDF report within {timeout_s:g} s; the HTML report "
                                 "has the same content.") from None  # fmt: skip
            except subprocess.CalledProcessError as exc:
                raise InputError(f"Chromium could not print the PDF report (it exited with status {exc.returncode}); "
                                 "the HTML report has the same content.") from None  # fmt: skip
            except OSError as exc:
                raise InputError(f"Chromium could not be started to print the PDF report ({exc.strerror}); the HTML "
                                 "report has the same content.") from None  # fmt: skip
        if not path.is_file() or path.stat().st_size == 0:
            raise InputError("Chromium wrote no PDF report; the HTML report has the same content.")
        return path


def _decision_html(decision: Any) -> str:
    """The decision box: its question and answer, the headline, the findings behind it, the next steps and the cut-offs."""
    if decision is None:
        return ""
    esc = html.escape
    items = lambda xs: "".join(f"<li>{esc(x)}</li>" for x in xs)  # noqa: E731
    title = getattr(decision, "title", decision.level.upper())
    rules = getattr(decision, "rules", ())
    return (
        f"<h2>{esc(title.split(':')[0])}</h2><div class='decision level-{esc(decision.level)}'>"
        f"<p><b>{esc(title)}</b> · {esc(decision.headline)}</p>"
        + (f"<p>Why:</p><ul>{items(decision.reasons)}</ul>" if decision.reasons else "")
        + (f"<p>What to do next:</p><ol>{items(decision.next_steps)}</ol>" if decision.next_steps else "")
        + (f"<p>How the level is decided:</p><ul class='rules'>{items(rules)}</ul>" if rules else "")
        + "</div>"
    )


def _inputs_html(files: list[InputFile], inputs: list[InputSummary]) -> list[str]:
    """The inputs: each file's full SHA-256 (check with sha256sum), then the data as read (its own digest, named so)."""
    esc = html.escape
    out = ["<h2>Inputs</h2>"]
    if files:
        out.append("<p class='note'>SHA-256 of each input file as given: <code>sha256sum FILE</code> prints the same.</p>"
                   "<div class='table-wrap'><table class='files'><tr><th>input</th><th>file</th><th>bytes</th>"
                   "<th>SHA-256 of the file</th></tr>")  # fmt: skip
        for f in files:
            size = f"{f.size:,}" if f.size is not None else "–"
            digest = f"<span class='hash'>{esc(f.sha256)}</span>" if f.sha256 else "– (no file: " + esc(f.file) + ")"
            out.append(f"<tr><td>{esc(f.input)}</td><td>{esc(f.file)}</td><td>{size}</td><td>{digest}</td></tr>")
        out.append("</table></div>")
    if inputs:
        out.append("<p class='note'>The data as the audit read it: rows, columns and the SHA-256 of the data frame "
                   "(pandas' row hashes of the values and the column names; not a file hash).</p>"
                   "<div class='table-wrap'><table class='frames'><tr><th>input</th><th>rows</th><th>columns</th>"
                   "<th>SHA-256 of the data frame</th><th>detail</th></tr>")  # fmt: skip
        for i in inputs:
            out.append(f"<tr><td>{esc(i.name)}</td><td>{i.rows:,}</td><td>{i.columns:,}</td>"
                       f"<td class='hash'>{esc(i.sha256)}</td><td>{esc(i.detail)}</td></tr>")  # fmt: skip
        out.append("</table></div>")
    return out


def _metrics_html(metrics: dict[str, Any]) -> str:
    """All metrics: the --json document, collapsed on screen, with a download link; in print its SHA-256 alone."""
    text = to_json_text(metrics)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    link = "data:application/json;base64," + base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (
        "<h2>Appendix: All metrics</h2>"
        f"<p>The JSON document of this audit ({len(text.encode('utf-8')):,} bytes): the --json file of the command "
        f"above, byte for byte. SHA-256 <span class='hash'>{digest}</span>; <code>sha256sum out.json</code> prints the "
        f"same. <a download='metrics.json' href='{link}'>Save it as a file</a>.</p>"
        "<details class='metrics'><summary>Show the JSON</summary>"
        f"<pre class='json'>{html.escape(text)}</pre></details>"
    )


def command_block(command: str) -> str:
    """The reproduce line as a block that never breaks inside a token: one flag and its value a line, joined by
    `` \\`` (a shell continuation), so a copy of the block, or of its text out of the PDF, runs as it is."""
    tokens = shlex.split(command)
    lines: list[list[str]] = [[]]
    for token in tokens:
        if token.startswith("--") and lines[-1]:  # each flag starts a line; its value stays beside it
            lines.append([])
        lines[-1].append(token)
    text = " \\\n    ".join(shlex.join(line) for line in lines)
    return f"<pre class='command'>{html.escape(text)}</pre>"


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}"
    if isinstance(v, list | tuple) and v and all(isinstance(x, float | int | np.floating) for x in v):
        return "[" + ", ".join(f"{float(x):.4g}" for x in v) + "]"
    return str(v)


def _dict_table(d: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(_fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table>{rows}</table>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
pre.command{background:#f6f6f6;padding:.6em;white-space:pre;overflow-x:auto;word-break:normal;overflow-wrap:normal}
pre.json{background:#f6f6f6;padding:.6em;font-size:.8em;max-height:40em;overflow:auto}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}h2.appendix{margin-top:2.4em}
.table-wrap{overflow-x:auto;max-width:100%;margin:.3em 0}
table{border-collapse:collapse;font-size:.85em}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f3f3f3}td{max-width:38em}
.table-wrap :is(td,th):first-child{position:sticky;left:0;background:#fff}.table-wrap th:first-child{background:#f3f3f3}
.figure{max-width:100%;overflow:hidden}
.verdict{background:#f6f6f6;border-left:4px solid #555;padding:.6em 1em}
.decision{padding:.4em 1em;border-left:6px solid #999;background:#f6f6f6}.level-high{border-color:#B00020;background:#fdecec}
.level-elevated{border-color:#E69F00;background:#fff6e0}.level-low{border-color:#009E73;background:#eaf7f1}
.level-inconclusive{border-color:#56B4E9;background:#eef6fb}.meta,.note{color:#555}
.hash{font-family:monospace;font-size:.95em;white-space:nowrap}
.personal{border:2px solid #B00020;background:#fdecec;padding:.5em 1em;margin:1em 0}
dl.terms dt{font-weight:600;margin-top:.4em}dl.terms dd{margin-left:1.5em}
@page{size:A4 landscape;margin:12mm 10mm}
@media print{
body{max-width:none;margin:0;padding:0;font-size:9pt}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
.modebar,.modebar-container{display:none!important}
.table-wrap{overflow:visible}
table{font-size:7pt;max-width:100%}
td,th{padding:1px 3px;max-width:none}
table:has(th:nth-child(9)){font-size:6pt}
pre.command{font-size:7.5pt;overflow:visible}
.table-wrap :is(td,th):first-child{position:static}
table:has(th:nth-child(9)){table-layout:fixed;width:100%}table:has(th:nth-child(9)) :is(td,th){overflow-wrap:anywhere}
details.metrics{display:none}
thead{display:table-header-group}tr,.figure,.decision,.verdict,pre.command,dl.terms dd,.keep{break-inside:avoid}
h1,h2{break-after:avoid}
.figure,.figure .plotly-graph-div,.figure .svg-container{max-width:100%!important}
}
"""
