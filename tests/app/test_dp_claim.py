"""The DP claim check page: the sample runs and matches the backend; a bad claim is one sentence."""

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from audit_core.common.report import to_json_text
from audit_core.dp.audit import run_dp_audit
from tests.conftest import command_argv, page_json
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "dp_claim.py")


@pytest.mark.slow
def test_page_runs_on_the_sample_and_matches_the_backend():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state[state.DpClaim.AUTORUN] = True
    at.run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]
    page = json.loads(page_json(at, "dp_claim.downloads"))
    # the page's demonstrating default: 5,000 rows (seeded), an MLP, outlier canaries, 50 epochs, white-box canaries
    sample = pd.read_csv(ROOT / "sample_data" / "adult.csv").sample(n=5000, random_state=0).reset_index(drop=True)
    direct = run_dp_audit(sample, target="income_per_year", epsilon=1.0, delta=1e-5, m=1000, kind="outlier", model="mlp",
                          epochs=50, white_box=True, seed=0)  # fmt: skip
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    shown = {m.label: m.value for m in at.metric}
    assert shown["audited epsilon ≥"] == f"{direct.dp.bound.epsilon:.2f}"
    assert shown["ceiling"] == f"{direct.ceiling:.2f}"
    assert shown["white-box: epsilon ≥"] == f"{direct.white_box.bound.epsilon:.2f}"
    # the three bars say three different things: DP-SGD holds, the same model without DP disproves the claim
    assert not direct.disproved
    assert direct.non_dp.bound.epsilon > 1.0
    assert direct.white_box.bound.epsilon > direct.dp.bound.epsilon
    command = at.session_state["dp_claim.downloads.command"]
    assert "dp-audit --data sample_data/adult.csv --target income_per_year --epsilon 1.0" in command
    assert "--canary-kind outlier --model mlp --epochs 50 --rows 5000 --white-box" in command


def test_an_impossible_claim_is_one_sentence_on_the_page():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    canaries = next(n for n in at.number_input if n.label == "Canaries m")
    canaries.set_value(50_000)
    at.button[0].click().run()
    assert not at.exception
    assert any("at most" in e.value for e in at.error)
    assert state.DpClaim.RESULT not in at.session_state


def _upload_mode(at, model_name, model_bytes, canaries_bytes):
    at.radio(key=state.DpClaim.MODE).set_value("Audit an uploaded model with its canary file").run()
    at.file_uploader(key=state.DpClaim.UPLOADED + ".model").upload(model_name, model_bytes, "application/octet-stream")
    at.file_uploader(key=state.DpClaim.UPLOADED + ".canaries").upload("canaries.csv", canaries_bytes, "text/csv")
    return at.run()


@pytest.mark.slow
def test_the_uploaded_model_mode_matches_the_backend_and_its_reproduce_line(tmp_path, monkeypatch):
    from audit_core.__main__ import main
    from audit_core.common.report import to_json_text
    from audit_core.common.table_files import read_table
    from audit_core.dp.uploaded import audit_uploaded_model
    from tests.canary_files import leaky_case

    case = leaky_case(tmp_path / "leaky")
    at = _upload_mode(AppTest.from_file(PAGE, default_timeout=120).run(), "forest.onnx", case["onnx"].read_bytes(),
                      case["canaries"].read_bytes())  # fmt: skip
    assert not at.exception
    assert next(t for t in at.text_input if t.label.startswith("Trusted skops types")).value == ""  # not "()"
    next(n for n in at.number_input if n.label == "Claimed epsilon").set_value(0.5)
    at.button[0].click().run()
    assert not at.exception
    page = json.loads(page_json(at, state.DpClaim.UPLOADED + ".downloads"))
    direct = audit_uploaded_model(case["onnx"].read_bytes(), read_table(case["canaries"], name="canaries.csv"),
                                  target="credit", epsilon=0.5, delta=1e-5, names=("forest.onnx", "canaries.csv"))  # fmt: skip
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    shown = {m.label: m.value for m in at.metric}
    assert shown["audited epsilon ≥"] == f"{direct.bound.epsilon:.2f}"
    assert shown["ceiling"] == f"{direct.ceiling:.2f}"
    assert any(e.value.startswith("**DP claim: DISPROVED.**") for e in at.error)
    command = at.session_state[state.DpClaim.UPLOADED + ".downloads.command"]
    assert "dp-audit-model --model forest.onnx --canaries-file canaries.csv --target credit --epsilon 0.5" in command
    monkeypatch.chdir(case["onnx"].parent)  # uploads are named as uploaded: the line runs where they are
    assert main(["--quiet", *command_argv(command), "--json", str(tmp_path / "cli.json")]) == 0
    assert (tmp_path / "cli.json").read_text() == page_json(at, state.DpClaim.UPLOADED + ".downloads")


def test_a_pickle_in_the_uploaded_model_mode_is_one_sentence(tmp_path):
    from tests.model_files import pickle_bytes

    canaries = b"a,credit,included\n1,good,1\n"
    at = _upload_mode(AppTest.from_file(PAGE, default_timeout=120).run(), "model.onnx", pickle_bytes(), canaries)
    assert not at.exception
    assert len(at.error) == 1
    assert "pickle" in at.error[0].value
    assert state.DpClaim.UPLOADED_RESULT not in at.session_state
