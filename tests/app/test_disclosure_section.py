"""The synthetic-risk page's disclosure section through AppTest, on the bundled leaky Adult sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import spy
from ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "synthetic_risk.py")
LEAKY = "Adult – leaky synthetic (some training rows copied)"


def _disclosure_button(at: AppTest):
    [button] = [b for b in at.button if "disclosure attacks" in b.label]
    return button


@pytest.mark.slow
def test_roles_run_once_and_rerun_only_when_changed(monkeypatch) -> None:
    audits = spy(monkeypatch, "audit_core.synthetic.audit", "audit_synthetic")
    attacks = spy(monkeypatch, "audit_core.synthetic.disclosure.audit", "audit_disclosure")
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = LEAKY
    at.run()
    [run] = [b for b in at.button if "Run the audit" in b.label]
    run.click().run()
    assert not at.exception
    charts = len(at.get("plotly_chart"))
    [n_attacks] = [w for w in at.number_input if w.label == "Attacks per table"]
    assert n_attacks.value == 2000  # the default; the tables have 2,000 rows
    n_attacks.set_value(300)
    _disclosure_button(at).click().run()
    assert not at.exception
    frames = [d.value for d in at.dataframe if "reading" in d.value.columns]
    assert len(frames) == 1
    table = frames[0]
    assert list(table["attack"])[:3] == ["Singling out (multivariate)", "Singling out (univariate)", "Linkability"]
    assert (table["ci_low"] <= table["risk"]).all()
    assert (table["risk"] <= table["ci_high"]).all()
    assert len(at.get("plotly_chart")) == charts + 1
    assert len(attacks) == 1
    assert len(audits) <= 1
    # a re-run of the page (a slider) keeps the result without recomputing
    at.slider(key=state.Synthetic.PRIOR).set_value(0.2).run()
    assert not at.exception
    again = [d.value for d in at.dataframe if "reading" in d.value.columns]
    assert len(again) == 1
    assert again[0].equals(table)
    assert len(attacks) == 1
    assert "--disclosure" in at.session_state["synthetic.command"]
    assert "--n-attacks 300" in at.session_state["synthetic.command"]
    # a secret that is also known: one sentence, no traceback, and the last result stays
    [secrets] = [w for w in at.multiselect if w.label == "Secret columns to infer"]
    secrets.set_value(["age"])
    _disclosure_button(at).click().run()
    assert not at.exception
    assert any("both secret and known" in e.value for e in at.error)
    assert next(d.value for d in at.dataframe if "reading" in d.value.columns).equals(table)
