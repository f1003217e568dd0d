"""A report a regulator can verify: each input file's SHA-256 is `sha256sum`'s, people's records are redacted unless
asked for, the limits come before the appendix, the metrics are the --json document (its hash printed), and the
reproduce line in the PDF survives pdftotext token for token."""

from __future__ import annotations

import hashlib
import html
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from audit_core.__main__ import build_parser
from audit_core.common.report import pdf_available, to_json_text
from audit_core.common.table_files import FILE_SHA256, read_table
from audit_core.contract import Inputs, run
from audit_core.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
GERMAN = "sample_data/german_credit"
FILES = {"model": f"{GERMAN}/model_mlp.skops", "train": f"{GERMAN}/train.csv", "population": f"{GERMAN}/holdout.csv"}


@pytest.fixture(scope="module")
def outcome():
    import os

    here = os.getcwd()
    os.chdir(ROOT)  # the paths as a user gives them, relative to the project folder
    try:
        audit = REGISTRY["model"]
        data = {spec.name: spec.read(FILES[spec.name], Path(FILES[spec.name]).name) for spec in audit.inputs}
        settings = audit.settings(target="credit", reference_family="mlp", attacks=("loss",))
        yield run(audit, Inputs(data, dict(FILES)), settings, seed=0)
    finally:
        os.chdir(here)


def _sha256sum(path: Path) -> str:
    if shutil.which("sha256sum"):
        return subprocess.run(["sha256sum", str(path)], check=True, capture_output=True, text=True).stdout.split()[0]
    return hashlib.sha256(path.read_bytes()).hexdigest()  # pragma: no cover - coreutils is everywhere CI runs


def test_every_input_file_is_named_with_the_sha256_sha256sum_prints(outcome) -> None:
    page = html.unescape(outcome.report().to_html())
    files = page[page.index("SHA-256 of the file") : page.index("SHA-256 of the data frame")]
    for name, path in FILES.items():
        digest = _sha256sum(ROOT / path)
        row = re.search(rf"<td>{name}</td><td>{re.escape(Path(path).name)}</td><td>[\d,]+</td><td><span class='hash'>"
                        rf"([0-9a-f]{{64}})</span>", files)  # fmt: skip
        assert row is not None, name
        assert row.group(1) == digest  # the whole digest, of the file itself
    raw = (ROOT / FILES["train"]).read_bytes()  # an upload (bytes) gets the same digest as the file on disk
    assert read_table(raw, name="train.csv").attrs[FILE_SHA256] == _sha256sum(ROOT / FILES["train"])


def test_records_are_redacted_unless_full_records_are_asked_for(outcome) -> None:
    exposed = outcome.value.exposed
    values = [c for c in exposed.columns if c in read_table(ROOT / FILES["train"], name="train").columns]
    assert len(values) > 10  # the audit's table holds each exposed member's record
    redacted = outcome.report().to_html()
    section = redacted[redacted.index("<h2>Most exposed members</h2>") :][:20_000]
    section = section[: section.index("<h2>", 10)]
    assert "Redacted" in section
    assert not any(f"<th>{c}</th>" in section for c in values)  # no value column of a person's record
    assert "This report is personal data" not in redacted
    full = outcome.report(full_records=True).to_html()
    assert "This report is personal data" in full
    assert all(f"<th>{c}</th>" in full for c in values)
    args = build_parser().parse_args(["model", "--model", "m", "--train", "t", "--population", "p", "--target", "y",
                                      "--report-records", "full"])  # fmt: skip
    assert args.report_records == "full"
    assert build_parser().parse_args(["model", "--model", "m", "--train", "t", "--population", "p", "--target",
                                      "y"]).report_records == "redacted"  # fmt: skip


def test_limits_come_before_the_appendix_and_the_metrics_are_the_json_document(outcome) -> None:
    page = html.unescape(outcome.report().to_html())
    assert page.index("Release decision") < page.index("Limits of the method") < page.index("Appendix")
    document = to_json_text(outcome.to_json())  # what --json writes, byte for byte
    assert hashlib.sha256(document.encode()).hexdigest() in page
    assert not re.search(r"<td>[a-z_]+\.[a-z_0-9]+\.", page)  # no flattened-JSON dump (attacks.loss.auc ...)


@pytest.mark.skipif(not pdf_available() or not shutil.which("pdftotext"), reason="needs Chromium and pdftotext")
def test_the_pdf_reproduce_line_survives_pdftotext_and_the_metrics_take_no_pages(outcome, tmp_path) -> None:
    pdf = outcome.report().to_pdf(tmp_path / "report.pdf")
    text = subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    block = text[text.index("python -m audit_core") :]
    lines = []
    for line in block.splitlines():
        lines.append(line.rstrip())
        if not line.rstrip().endswith("\\"):
            break
    copied = " ".join(line.removesuffix("\\").strip() for line in lines)
    assert shlex.split(copied) == shlex.split(outcome.command())  # a copy of the block runs the same command
    pages = text.split("\f")
    start = next(i for i, p in enumerate(pages) if "Appendix: All metrics" in p)
    assert len([p for p in pages[start:] if p.strip()]) < 3  # the metrics are the --json file, named by its hash
    assert text.index("Limits of the method") < text.index("Appendix")
