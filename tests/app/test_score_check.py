"""The Score check page: the sample runs and matches the CLI's numbers; bad files are one sentence."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from audit_core.common.report import to_json_text
from audit_core.scores.audit import read_scores, score_check
from tests.conftest import page_json
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "score_check.py")


@pytest.mark.slow
def test_page_runs_on_the_sample_and_matches_the_backend():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[state.ScoreCheck.AUTORUN] = True
    at.run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    page = json.loads(page_json(at, "score_check.downloads"))
    direct = score_check(read_scores(ROOT / "sample_data" / "scores.csv"), fprs=(0.001, 0.01, 0.1), delta=1e-5, seed=0)
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    eps = [m.value for m in at.metric if m.label == "epsilon ≥"]
    assert eps == [f"{a.epsilon.epsilon:.2f}" for a in direct.attacks.values()]
    assert any("same pool" in c.value for c in at.caption)
    assert any("epsilon" in m.value for m in at.markdown)  # the verdict sentence, under the decision box


@pytest.mark.slow
def test_form_reruns_with_other_settings():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    at.multiselect[0].set_value([0.05])
    at.button[0].click().run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    assert json.loads(page_json(at, "score_check.downloads"))["settings"]["fpr"] == [0.05]
    assert [m.label for m in at.metric].count("TPR at 5 % FPR") == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("frame", "words"),
    [
        (pd.DataFrame({"score": [np.nan, 1.0, 0.2, 0.3], "is_member": [1, 0, 1, 0]}), "finite"),
        (pd.DataFrame({"score": ["x", "1", "2", "3"], "is_member": [1, 0, 1, 0]}), "'x'"),
        (pd.DataFrame({"score": [0.1, 1.0, 0.2, 0.3], "is_member": [1, 1, 1, 1]}), "only members"),
        (pd.DataFrame({"score": [0.1, 1.0, 0.2, 0.3], "is_member": [1, 0, 3, 0]}), "0 (non-member) or 1"),
        (pd.DataFrame({"record_id": [1, 1, 2, 3], "score": [0.1, 1.0, 0.2, 0.3], "is_member": [1, 0, 1, 0]}), "more than once"),
    ],
)
def test_bad_file_is_one_sentence_on_the_page(frame, words):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key=state.ScoreCheck.SOURCE).set_value("Upload my scores").run()
    at.file_uploader(key=state.ScoreCheck.UPLOAD).upload("bad.csv", frame.to_csv(index=False).encode(), "text/csv").run()
    assert not at.exception
    at.button[0].click().run()
    assert not at.exception
    assert len(at.error) == 1
    assert words in at.error[0].value
    assert state.ScoreCheck.RESULT not in at.session_state


def test_hostile_table_files_on_the_page_are_a_result_or_one_sentence():
    """The probe's two exception boxes: a Parquet file with pandas' named index, a cell over the CSV field limit."""
    from tests.hostile_inputs import long_cell_csv, parquet_with_index

    scores = pd.DataFrame({"record_id": [f"r{i}" for i in range(40)], "score": np.arange(40.0), "is_member": np.arange(40) % 2})
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key=state.ScoreCheck.SOURCE).set_value("Upload my scores").run()
    at.file_uploader(key=state.ScoreCheck.UPLOAD).upload(
        "scores.parquet", parquet_with_index(scores, "record_id"), "application/octet-stream"
    ).run()
    at.button[0].click().run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    assert json.loads(page_json(at, "score_check.downloads"))["attacks"]["attack"]["auc"] > 0.5
    at.file_uploader(key=state.ScoreCheck.UPLOAD).upload("long.csv", long_cell_csv(scores), "text/csv").run()
    assert not at.exception
    assert len(at.error) == 1
    assert "has a cell longer than 131,072 characters" in at.error[0].value
