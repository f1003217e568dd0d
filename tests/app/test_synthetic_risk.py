"""The synthetic-risk page through AppTest, on the bundled Adult samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import page_json, spy
from ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "synthetic_risk.py")
LEAKY = "Adult – leaky synthetic (some training rows copied)"
COPULA = "Adult – Gaussian copula synthetic"


def _json(at: AppTest) -> dict:
    """The page's JSON download (the CLI's --json document)."""
    return json.loads(page_json(at, "synthetic"))


def _run(source: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = source
    at.run()
    assert not at.exception
    [run] = [b for b in at.button if "Run the audit" in b.label]
    run.click().run()
    assert not at.exception
    return at


@pytest.fixture(scope="module")
def leaky() -> AppTest:
    return _run(LEAKY)


@pytest.mark.slow
def test_leaky_sample_is_flagged_unsafe_with_all_views(leaky: AppTest) -> None:
    assert any("UNSAFE" in e.value for e in leaky.error)
    labels = [m.label for m in leaky.metric]
    for label in ("AUC", "TPR at 0.1 % FPR", "TPR at 1 % FPR", "TPR at 10 % FPR", "F1 at P ≥ 0.5"):
        assert label in labels
    # 2,000 non-members cannot support 0.1 % FPR: the page says so.
    assert any("not measurable" in w.value for w in leaky.warning)
    assert any("non-members behind it" in c.value for c in leaky.caption)
    # Log-ROC, two P(member) histograms and the distance plot.
    assert len(leaky.get("plotly_chart")) == 4
    assert _json(leaky)["exact_copies"]["members"] > 100


@pytest.mark.slow
def test_sliders_rescore_without_recomputing_distances(leaky: AppTest, monkeypatch) -> None:
    audits = spy(monkeypatch, "audit_core.synthetic.audit", "audit_synthetic")
    auc_before = [m.value for m in leaky.metric if m.label == "AUC"]
    leaky.slider(key=state.Synthetic.PRIOR).set_value(0.1).run()
    assert not leaky.exception
    leaky.select_slider(key=state.Synthetic.BANDWIDTH).set_value(4.0).run()
    assert not leaky.exception
    assert not audits  # the distances are kept; only the densities are re-fitted
    assert (_json(leaky)["settings"]["prior"], _json(leaky)["settings"]["bandwidth_scale"]) == (0.1, 4.0)
    assert [m.value for m in leaky.metric if m.label == "AUC"] != auc_before
    assert any("Precision" in m.label for m in leaky.metric)


@pytest.mark.slow
def test_gaussian_copula_sample_is_not_unsafe() -> None:
    at = _run(COPULA)
    assert not any("UNSAFE" in e.value for e in at.error)
    assert any("No measurable risk" in s.value for s in at.success)
    assert _json(at)["exact_copies"]["members"] == 0


def test_upload_mode_asks_for_the_tables() -> None:
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[state.Synthetic.SOURCE] = "Upload my own tables"
    at.run()
    assert not at.exception
    assert any("Upload" in i.value for i in at.info)
    assert not [b for b in at.button if "Run the audit" in b.label]


def test_hostile_uploads_are_one_sentence_on_the_page() -> None:
    """The probe's exception box: a cell over the csv module's 131,072-character limit (often an unclosed quote)."""
    from tests.hostile_inputs import good_frame, long_cell_csv

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[state.Synthetic.SOURCE] = "Upload my own tables"
    at.run()
    at.file_uploader(key=f"{state.Synthetic.UPLOAD}.train").upload(
        "train.csv", long_cell_csv(good_frame(40), closed=False), "text/csv"
    ).run()
    assert not at.exception
    assert [e.value for e in at.error if "131,072" in e.value] == [
        "Table 'train' has a cell longer than 131,072 characters (from line 2); this is usually a quote that is "
        "never closed: check the quotes, or shorten the cell."
    ]
