"""The pages' source picker reads a database table (ui/source.py): the page's JSON is the CLI's for the same URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from audit_core.__main__ import main
from tests.conftest import page_json
from ui import state
from ui.source import DATABASE

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "score_check.py")


def test_score_check_from_a_database_table_equals_the_cli_and_a_bad_url_is_one_sentence(tmp_path):
    db = tmp_path / "scores.db"
    with sqlite3.connect(db) as conn:
        pd.read_csv(ROOT / "sample_data" / "scores.csv").to_sql("scores", conn, index=False)
    url = f"sqlite:///{db}?table=scores"
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.radio(key=state.ScoreCheck.SOURCE).set_value(DATABASE).run()
    box = at.text_input(key=f"{state.ScoreCheck.SOURCE}.database_url")
    box.set_value(f"sqlite:///{db}?table=nope").run()
    assert not at.exception
    assert [e.value.replace("\u2060", "") for e in at.error] == [  # a page puts a word joiner after ://
        f"Table 'nope' could not be read from sqlite:///{db}?table=nope: no such table: nope."]  # fmt: skip
    at.text_input(key=f"{state.ScoreCheck.SOURCE}.database_url").set_value(url).run()
    at.button[0].click().run()
    assert not at.exception
    assert main(["--quiet", "scores", "--scores", url, "--json", str(tmp_path / "cli.json")]) == 0
    assert page_json(at, "score_check.downloads") == (tmp_path / "cli.json").read_text()
    assert any(url in c.value for c in at.caption)
