"""Every report opens with the release decision and carries the regulator map, the threat cards and the terms."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pytest

from audit_core.common.glossary import TERMS
from audit_core.common.regulation import FRAMEWORKS
from audit_core.common.report import to_json_text
from audit_core.common.threats import CARD_COLUMNS
from audit_core.contract import Inputs, run
from audit_core.registry import REGISTRY

GERMAN = Path(__file__).resolve().parents[2] / "sample_data" / "german_credit"


@pytest.mark.slow
def test_the_tabular_report_leads_with_the_decision_and_maps_it_for_regulators() -> None:
    tables = {r: pd.read_csv(GERMAN / f"{r}.csv") for r in ("train", "holdout", "synthetic_leaky")}
    inputs = Inputs({"train": tables["train"], "holdout": tables["holdout"], "synthetic": tables["synthetic_leaky"]})
    audit = REGISTRY["tabular"]
    outcome = run(audit, inputs, audit.settings(), seed=0)
    decision = outcome.decision()
    assert decision.level == "high"  # 10 % of the synthetic rows are training copies
    report = outcome.report()
    page = report.to_html()
    assert page.index("Release decision") < page.index("Question")  # the decision comes first
    assert decision.headline in html.unescape(page)
    for name, _ in FRAMEWORKS:
        assert name in page
    assert "Passing this audit does not prove anonymity" in page
    for column in CARD_COLUMNS:
        assert column in page
    assert "Terms used" in page
    assert sum(term in page for term in TERMS) >= 5
    # the report's JSON is the --json document (NaN / inf written as null in both)
    assert report.to_json()["metrics"] == json.loads(to_json_text(outcome.to_json()))
    assert report.to_json()["decision"] == decision.to_json()
