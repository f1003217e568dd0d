"""The fabricated-members page on 8x8 digits: trains, attacks, shows the numbers, re-scores on lambda."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import state

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "fabrication.py")


@pytest.fixture(scope="module")
def ran():
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.run()
    assert not at.exception
    at.slider[0].set_value(64)  # epsilon in /255: the regime where the collapse shows on digits
    at.number_input[0].set_value(10)  # steps
    at.button[0].click().run()
    return at


def test_page_runs_the_default_audit_and_reads_the_numbers(ran):
    at = ran
    assert not at.exception
    assert not at.error
    labels = [m.label for m in at.metric]
    assert "MFD AUC" in labels
    values = {m.label: float(m.value) for m in at.metric}
    assert values["MIA AUC, fabricated"] < values["MIA AUC, clean"]
    assert values["MFD AUC"] > 0.8
    result = at.session_state[state.Fabrication.RESULT]["result"]
    assert result.epsilon == pytest.approx(64 / 255)
    assert result.steps == 10
    assert "collapse" in at.info[0].value


def test_lambda_rescores_without_re_attacking(ran):
    at = ran
    before = at.session_state[state.Fabrication.RESULT]["result"]
    ar_before = [m.value for m in at.metric if "AR-MIA" in m.label]
    at.select_slider(key=state.Fabrication.LAMBDA).set_value(100.0).run()
    assert not at.exception
    assert at.session_state[state.Fabrication.RESULT]["result"] is before
    assert [m.value for m in at.metric if "AR-MIA" in m.label] != ar_before
    assert any("lambda 100" in m.label for m in at.metric)


def test_upload_without_a_file_is_one_sentence():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    at.radio(key=state.Fabrication.SOURCE).set_value("Upload images (.npz) and a model")
    at.button[0].click().run()
    assert not at.exception
    assert ".npz" in at.error[0].value
