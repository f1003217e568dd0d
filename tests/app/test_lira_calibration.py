"""The calibrated-LiRA page on German Credit: trains, shows the four numbers, re-scores on alpha."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from tests.conftest import page_json, spy
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "lira_calibration.py")


@pytest.fixture(scope="module")
def trained():
    with pytest.MonkeyPatch.context() as mp:
        fits = spy(mp, "audit_core.lira.pool", "train_pool")
        at = AppTest.from_file(PAGE, default_timeout=300)
        at.run()
        assert not at.exception
        at.number_input[0].set_value(16)  # M
        at.number_input[1].set_value(21)  # a seed no other test uses: the models are trained here
        at.button[0].click().run()
        assert len(fits) == 1
    return at


@pytest.mark.slow
def test_page_trains_on_german_credit_and_reads_the_numbers(trained):
    at = trained
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    labels = [m.label for m in at.metric]
    assert any("naive" in label for label in labels)
    assert any("Student-t" in label for label in labels)
    values = [float(m.value.rstrip(" %")) for m in at.metric]
    assert all(0.0 <= v <= 100.0 for v in values)
    reading = next(m.value for m in at.markdown if m.value.startswith("Report the"))  # under the decision box
    assert "per-sample average" in reading
    assert "95 % interval" in reading
    assert any("FPR it holds" in c.value for c in at.caption)  # the per-sample card says what its test holds
    metrics = json.loads(page_json(at, "lira.downloads"))
    assert metrics["n_models"] == 16
    assert metrics["n_samples"] == 1000
    command = at.session_state["lira.downloads.command"]  # the page's "Reproduce this" line
    assert "lira --data sample_data/german_credit.csv --target credit --models 16" in command


@pytest.mark.slow
def test_alpha_re_evaluates_without_retraining(trained, monkeypatch):
    at = trained
    fits = spy(monkeypatch, "audit_core.lira.pool", "train_pool")
    evaluations = spy(monkeypatch, "audit_core.lira.result", "evaluate_pool")
    before = [m.value for m in at.metric]
    at.select_slider(key=state.Lira.FPR).set_value(0.1).run()
    assert not at.exception
    assert (len(fits), len(evaluations)) == (0, 1)  # the trained models are kept; alpha re-evaluates them
    at.selectbox(key=state.Lira.GROUPS).set_value("purpose").run()
    assert (len(fits), len(evaluations)) == (0, 1)  # risk by group re-scores the evaluation
    assert "--fpr 0.1" in at.session_state["lira.downloads.command"]
    assert [m.value for m in at.metric] != before
    assert any("TPR at FPR 0.1**" in m.value for m in at.markdown)


def test_continuous_target_is_one_sentence():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert at.selectbox[0].value == "credit"  # the sample's target is preselected
    at.selectbox[0].set_value("age")
    at.button[0].click().run()
    assert not at.exception
    assert "'age'" in at.error[0].value


def test_odd_number_of_models_is_refused():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    at.number_input[0].set_value(15)
    at.button[0].click().run()
    assert not at.exception
    assert "even" in at.error[0].value
