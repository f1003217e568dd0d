from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_app_routes_to_home_with_every_audit():
    from audit_core.registry import REGISTRY

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("Membership-risk audit" in t.value for t in at.title)
    run_buttons = [b for b in at.button if b.label == "▶ Run on the sample"]
    assert len(run_buttons) == len(REGISTRY) == 7


def test_home_lists_remembered_results():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["home.last_results"] = {
        "Synthetic-data risk": {"headline": "High risk: 10 % of members exposed", "metrics": {"AUC": "0.81"}, "time": "12:00"}
    }
    at.run()
    assert not at.exception
    assert any("High risk" in m.value for m in at.markdown)
    assert [m.value for m in at.metric] == ["0.81"]
