"""The 'Audit my model' page: the sample runs and matches the backend; a pickle upload is one sentence."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.report import to_json_text
from audit_core.common.table_files import read_table
from audit_core.model.audit import audit_model
from audit_core.model.images import read_images
from tests.conftest import page_json, run_command
from tests.model_files import pickle_bytes
from ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "own_model.py")
SAMPLE = ROOT / "sample_data" / "adult"  # the default sample: 1,000 non-members measure a 1 % FPR


@pytest.mark.slow
def test_page_runs_on_the_sample_and_matches_the_backend(tmp_path, monkeypatch):
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state[state.OwnModel.AUTORUN] = True
    at.run()
    assert not at.exception
    assert not at.error
    page = json.loads(page_json(at, "own_model.downloads"))
    direct = audit_model((SAMPLE / "model_mlp.skops").read_bytes(), read_table(SAMPLE / "train.csv", name="train.csv"),
                         read_table(SAMPLE / "holdout.csv", name="holdout.csv"), target="income_per_year", n_reference=4,
                         seed=0, names=("model_mlp.skops", "train.csv", "holdout.csv"))  # fmt: skip
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    assert page["verdict"]["level"] not in ("low", "inconclusive")  # the sample MLP is overfit (train accuracy 0.97)
    assert all(a.tpr_at_fpr["0.01"].supported for a in direct.attacks.values())  # the headline metric is measurable
    assert [m.value for m in at.metric if m.label == "AUC"] == [f"{a.auc:.3f}" for a in direct.attacks.values()]
    command = at.session_state["own_model.downloads.command"]
    assert "python -m audit_core model --model sample_data/adult/model_mlp.skops" in command
    assert run_command(command, tmp_path / "cli.json", monkeypatch) == page_json(at, "own_model.downloads")


def test_a_pickle_upload_is_one_sentence(tmp_path):
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key=state.OwnModel.SOURCE).set_value("Upload my model and tables").run()
    at.file_uploader(key=state.OwnModel.UPLOAD + ".model").upload("model.onnx", pickle_bytes(), "application/octet-stream").run()
    assert not at.exception
    assert len(at.error) == 1
    assert "pickle" in at.error[0].value
    assert state.OwnModel.RESULT not in at.session_state


@pytest.mark.slow
def test_page_audits_an_image_model_with_lira_online(tmp_path):
    from tests.model_files import image_case

    case = image_case(tmp_path, epochs=20)
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    at.radio(key=state.OwnModel.SOURCE).set_value("Upload my model and tables").run()
    for role, path in (("model", case["model"]), ("train", case["train"]), ("population", case["population"])):
        at.file_uploader(key=state.OwnModel.UPLOAD + "." + role).upload(path.name, path.read_bytes(),
                                                                        "application/octet-stream").run()  # fmt: skip
    assert not at.error
    assert [s.label for s in at.selectbox if s.label == "Label column"] == []  # images carry their labels
    at.multiselect[0].set_value(["loss", "lira_online"])
    at.number_input[0].set_value(2)  # reference models
    at.number_input[1].set_value(3)  # reference epochs
    at.button[0].click().run()
    assert not at.exception
    direct = audit_model(case["model"].read_bytes(), *(read_images(case[r], case[r].name) for r in ("train", "population")),
                         attacks=("loss", "lira_online"), n_reference=2, epochs=3, seed=0,
                         names=("cnn.safetensors", "members.npz", "population.npz"))  # fmt: skip
    # 3 epochs make reference CNNs far from the target: the page says so, and nothing else goes wrong
    assert [e.value for e in at.error] == [direct.fidelity.sentence()]
    page = json.loads(page_json(at, "own_model.downloads"))
    assert {k: v for k, v in page.items() if k != "verdict"} == json.loads(to_json_text(direct.to_json()))
    command = at.session_state["own_model.downloads.command"]
    assert "--reference-epochs 3" in command
    assert "--target" not in command
