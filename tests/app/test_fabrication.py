"""The fabricated-members page on 8x8 digits: trains, attacks, shows the numbers, re-scores on lambda,
and shows what ``python -m audit_core fabrication`` prints for the same settings."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from tests.conftest import json_leaves, page_json, spy
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "fabrication.py")


def _result(at: AppTest) -> dict:
    """The page's JSON download (the CLI's --json document)."""
    return json.loads(page_json(at, "fabrication.report"))


@pytest.fixture(scope="module")
def ran():
    with pytest.MonkeyPatch.context() as mp:
        setups = spy(mp, "audit_core.fabrication.setup", "setup_fabrication")
        at = AppTest.from_file(PAGE, default_timeout=600)
        at.run()
        assert not at.exception
        at.slider[0].set_value(64)  # epsilon in /255: the regime where the collapse shows on digits
        at.number_input[0].set_value(10)  # steps
        at.button[0].click().run()
        assert len(setups) == 1
    return at


@pytest.mark.slow
def test_page_runs_the_default_audit_and_reads_the_numbers(ran):
    at = ran
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    labels = [m.label for m in at.metric]
    assert "MFD AUC" in labels
    values = {m.label: float(m.value) for m in at.metric if "AUC" in m.label}
    assert values["MIA AUC, fabricated"] < values["MIA AUC, clean"]
    assert values["MFD AUC"] > 0.8
    result = _result(at)
    assert result["epsilon"] == pytest.approx(64 / 255)
    assert at.session_state["fabrication.report.command"].count("--steps 10") == 1
    assert "collapse" in at.info[0].value


@pytest.mark.slow
def test_lambda_rescores_without_re_attacking_and_steps_without_retraining(ran, monkeypatch):
    at = ran
    setups = spy(monkeypatch, "audit_core.fabrication.setup", "setup_fabrication")
    attacks = spy(monkeypatch, "audit_core.fabrication.audit", "run_fabrication")
    ar_before = [m.value for m in at.metric if "AR-MIA" in m.label]
    at.select_slider(key=state.Fabrication.LAMBDA).set_value(100.0).run()
    assert not at.exception
    assert (len(setups), len(attacks)) == (0, 0)  # lambda re-scores: no training, no attack
    assert [m.value for m in at.metric if "AR-MIA" in m.label] != ar_before
    assert any("lambda 100" in m.label for m in at.metric)
    at.number_input[0].set_value(8)  # another T: the attacks run again on the kept models
    at.button[0].click().run()
    assert not at.exception
    assert (len(setups), len(attacks)) == (0, 1)
    at.number_input[0].set_value(10)
    at.button[0].click().run()  # back to the first T: the kept result
    assert (len(setups), len(attacks)) == (0, 1)


def test_upload_without_a_file_is_one_sentence():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    at.radio(key=state.Fabrication.SOURCE).set_value("Upload images (.npz) and a model")
    at.button[0].click().run()
    assert not at.exception
    assert ".npz" in at.error[0].value


@pytest.mark.slow
def test_page_and_cli_give_the_same_numbers(ran, tmp_path):
    """Same data, seed and settings: the page's result is the CLI's JSON, and its cards show those numbers."""
    at = ran
    at.select_slider(key=state.Fabrication.LAMBDA).set_value(1.0).run()  # the CLI's --lambda (re-scores only)
    assert not at.exception
    out = tmp_path / "fab.json"
    r = subprocess.run(
        [sys.executable, "-m", "audit_core", "--quiet", "fabrication", "--dataset", "digits", "--epsilon", "64/255",
         "--steps", "10", "--seed", "0", "--lambda", "1", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, r.stderr
    cli = json.loads(out.read_text())
    page = _result(at)
    cli_leaves, page_leaves = dict(json_leaves(cli)), dict(json_leaves(page))
    assert cli_leaves.keys() == page_leaves.keys()
    for key, want in cli_leaves.items():
        got = page_leaves[key]
        if isinstance(want, float) and isinstance(got, float):
            assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9), key  # torch computes in float32
        else:
            assert got == want, key
    shown = {m.label: m.value for m in at.metric}
    assert shown["MIA AUC, clean"] == f"{cli['mia']['auc_clean']:.3f}"
    assert shown["MIA AUC, fabricated"] == f"{cli['mia']['auc_fabricated']:.3f}"
    assert shown["MFD AUC"] == f"{cli['mfd']['auc']:.3f}"
    assert shown["AR-MIA AUC, fabricated"] == f"{cli['ar_mia']['auc_fabricated']:.3f}"
    fpr = at.radio(key=state.Fabrication.FPR).value
    pct = f"{100 * float(fpr):g} %"
    for label, t in ((f"MIA TPR at {pct} FPR, clean", cli["mia"]["tpr_at_fpr_clean"][fpr]),
                     (f"MFD TPR at {pct} FPR (fabricated flagged)", cli["mfd"]["tpr_at_fpr"][fpr])):
        assert shown[label].startswith(f"{100 * t['tpr']:.1f} %"), label
    captions = " ".join(c.value for c in at.caption)
    t = cli["mfd"]["tpr_at_fpr"][fpr]
    assert f"95 % CI {100 * t['ci_low']:.1f}–{100 * t['ci_high']:.1f} %" in captions
