"""Reports that print (issue 21.4): every column of every table reaches the PDF.

Each registered audit runs on the bundled samples (small settings), writes its HTML and
PDF report from the same run, and every table header of the HTML must be in the PDF's
text, each table's header row in order. ``pdftotext -raw`` (content order) is used
rather than ``-layout``: a header that wraps inside its cell on a wide table would be
interleaved with its neighbours' lines by ``-layout``. A column cut off at the page edge
is not drawn, so its header is missing from either text (the check failed on the
exposed-records table before the print stylesheet).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from audit_core.__main__ import main
from audit_core.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "sample_data"
ADULT, GERMAN = SAMPLES / "adult", SAMPLES / "german_credit"

pytestmark = [
    pytest.mark.slow,  # six audits and six Chromium prints: about a minute on 2 cores
    pytest.mark.skipif(
        shutil.which("chromium") is None or shutil.which("pdftotext") is None,
        reason="needs a local Chromium and poppler's pdftotext",
    ),
]

CLI_CASES = {
    "tabular": ["tabular", "--train", str(ADULT / "train.csv"), "--holdout", str(ADULT / "holdout.csv"),
                "--synthetic", str(ADULT / "synthetic_leaky.csv"), "--auxiliary", str(ADULT / "auxiliary.csv")],
    "compare": ["compare", "--data", str(SAMPLES / "german_credit.csv"), "--generators", "bootstrap", "--use-rows", "400"],
    "lira": ["lira", "--data", str(SAMPLES / "german_credit.csv"), "--target", "credit", "--models", "8"],
    "model": ["model", "--model", str(GERMAN / "model_mlp.skops"), "--train", str(GERMAN / "train.csv"),
              "--population", str(GERMAN / "holdout.csv"), "--target", "credit", "--reference-models", "1"],
    "scores": ["scores", "--scores", str(SAMPLES / "scores.csv")],
    "dp-audit": ["dp-audit", "--data", str(SAMPLES / "german_credit.csv"), "--target", "credit", "--epsilon", "1",
                 "--canaries", "100", "--epochs", "2"],
}  # fmt: skip
CASES = [name for name in [*CLI_CASES, "fabrication"] if name in REGISTRY]


class _Headers(HTMLParser):
    """The text of every ``<th>``, table by table."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[str]] = []
        self._in_th = False

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "th":
            self._in_th = True
            self.tables[-1].append("")

    def handle_endtag(self, tag) -> None:
        if tag == "th":
            self._in_th = False

    def handle_data(self, data) -> None:
        if self._in_th:
            self.tables[-1][-1] += data


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _fabrication_report(html: Path, pdf: Path) -> None:
    """The fabrication audit on a small slice of the bundled digits (the CLI's default run takes minutes)."""
    from audit_core.fabrication.audit import run_fabrication
    from audit_core.fabrication.bundled import load_bundled
    from audit_core.fabrication.setup import prepare_audit
    from audit_core.fabrication.verdict import build_report

    data = load_bundled("digits", seed=0, n_members=40, n_non_members=80)
    setup = prepare_audit(data, n_reference_models=2, seed=0, device=torch.device("cpu"))
    result = run_fabrication(
        setup, epsilon=32 / 255, steps=2, epsilons=(8 / 255, 32 / 255), budgets=(2,), compare_attacks=("mfa",),
        adaptive_betas=(0.0, 0.1), n_compare=20, seed=0,
    )  # fmt: skip
    report = build_report(result, lam=1.0)
    html.write_text(report.to_html(), encoding="utf-8")
    report.to_pdf(pdf)


def test_every_audit_has_a_print_case() -> None:
    assert set(REGISTRY) <= {*CLI_CASES, "fabrication"}, "add the new audit's small run to this file"


@pytest.mark.parametrize("name", CASES)
def test_every_table_header_is_in_the_pdf(name: str, tmp_path: Path) -> None:
    html, pdf = tmp_path / f"{name}.html", tmp_path / f"{name}.pdf"
    if name == "fabrication":
        _fabrication_report(html, pdf)
    else:
        assert main(["--quiet", *CLI_CASES[name], "--html", str(html), "--pdf", str(pdf)]) == 0
    page = html.read_text(encoding="utf-8")
    assert "@media print" in page
    assert ".modebar,.modebar-container{display:none!important}" in page  # the toolbar is hidden in print
    parser = _Headers()
    parser.feed(page)
    tables = [t for t in parser.tables if t]
    assert len(tables) >= 3  # threats or inputs, the audit's own tables, regulation
    done = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True, timeout=60)
    text = _squash(done.stdout)
    missing = [h for t in tables for h in t if _squash(h) not in text]
    assert not missing, f"{name}: column headers cut off in the PDF: {missing}"
    broken = [t[:3] for t in tables if _squash("".join(t)) not in text]
    assert not broken, f"{name}: header rows not printed whole: {broken}"
    pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Page size:\s+841\.\d+ x 59[45]\.\d+ pts", pages), pages  # A4 landscape
