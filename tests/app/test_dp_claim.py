"""The DP claim check page: the sample runs and matches the backend; a bad claim is one sentence."""

import json
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from audit_core.common.report import to_json_text
from audit_core.dp.audit import run_dp_audit
from tests.conftest import page_json
from ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "dp_claim.py")


def test_page_runs_on_the_sample_and_matches_the_backend():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state[state.DpClaim.AUTORUN] = True
    at.run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith("**Release decision")]
    page = json.loads(page_json(at, "dp_claim.downloads"))
    direct = run_dp_audit(pd.read_csv(ROOT / "sample_data" / "adult.csv"), target="income_per_year", epsilon=1.0,
                          delta=1e-5, m=1000, seed=0)  # fmt: skip
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    shown = {m.label: m.value for m in at.metric}
    assert shown["audited epsilon ≥"] == f"{direct.dp.bound.epsilon:.2f}"
    assert shown["ceiling"] == f"{direct.ceiling:.2f}"
    command = at.session_state["dp_claim.downloads.command"]
    assert "dp-audit --data sample_data/adult.csv --target income_per_year --epsilon 1.0" in command


def test_an_impossible_claim_is_one_sentence_on_the_page():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    canaries = next(n for n in at.number_input if n.label == "Canaries m")
    canaries.set_value(50_000)
    at.button[0].click().run()
    assert not at.exception
    assert any("at most" in e.value for e in at.error)
    assert state.DpClaim.RESULT not in at.session_state
