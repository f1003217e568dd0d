"""The home page's Validation expander: the last self-check from the cache, and the quick one on click."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_validation_says_not_run_then_runs_the_quick_selfcheck_on_click(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert any("No self-check has run" in i.value for i in at.info)
    assert not (tmp_path / "selfcheck.json").exists()  # loading the page runs nothing
    next(b for b in at.button if b.key == "home.selfcheck").click().run()
    assert not at.exception
    assert any("quick self-check" in s.value and "passed" in s.value for s in at.success)
    table = at.dataframe[-1].value
    assert "tpr_interval.gaussian.coverage" in set(table["check"])
    assert set(table["result"]) == {"pass"}
    assert (tmp_path / "selfcheck.json").exists()
