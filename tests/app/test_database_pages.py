"""Every page that reads a table offers a database table in its source picker (ui/source.py ``database_table``).

Per page, a run from a SQLite file equals the run from the same tables as files: the page's JSON download is
the same document byte for byte (the comparison's fit times aside: wall-clock). The reproduce line names the URL.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import json_leaves, page_json
from ui import state
from ui.source import DATABASE

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "views"
GERMAN = ROOT / "sample_data" / "german_credit"
TABLES = {  # table in the database -> the bundled file it holds
    "german_credit": ROOT / "sample_data" / "german_credit.csv",
    **{name: GERMAN / f"{name}.csv" for name in ("train", "holdout", "synthetic_leaky", "auxiliary")},
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The German Credit sample's tables in one SQLite file, each as its CSV reads."""
    path = tmp_path_factory.mktemp("db") / "extract.db"
    with sqlite3.connect(path) as conn:
        for table, file in TABLES.items():
            pd.read_csv(file).to_sql(table, conn, index=False)
    return path


def _url(db: Path, table: str) -> str:
    return f"sqlite:///{db}?table={table}"


def _differing(a: str, b: str) -> set[str]:
    """The JSON paths whose values differ between two documents."""
    la, lb = dict(json_leaves(json.loads(a))), dict(json_leaves(json.loads(b)))
    return {k for k in la.keys() | lb.keys() if la.get(k) != lb.get(k)}


def _number(at: AppTest, label: str):
    return next(n for n in at.number_input if n.label == label)


@pytest.mark.slow  # the pages' first run imports torch (about 4 s); the score check page's test is the fast tier's
def test_the_database_choice_refuses_a_bad_url_in_one_sentence():
    """The pickers' database choice (one helper: two pages here, every page in the slow tests below); text that is no
    database URL is the helper's one sentence."""
    says = ("That is not a database URL; it starts postgresql://, sqlite:///, mysql:// ... and ends ?table=NAME or "
            "?query=SELECT ...")
    pages = [  # page, how its picker is set, the URL field's key
        ("lira_calibration.py", lambda at: at.radio(key=state.Lira.SOURCE).set_value(DATABASE), state.Lira.DATABASE),
        ("synthetic_risk.py", lambda at: at.selectbox(key=state.Synthetic.SOURCE).set_value(DATABASE),
         f"{state.Synthetic.DATABASE}.train"),
    ]  # fmt: skip
    for page, choose, field in pages:
        at = AppTest.from_file(str(VIEWS / page), default_timeout=120).run()
        choose(at)
        at.run()
        assert not at.exception, page
        at.text_input(key=field).set_value("/home/me/train.csv").run()
        assert not at.exception, page
        assert [e.value.replace("\u2060", "") for e in at.error] == [says], page  # a word joiner after :// on a page


@pytest.mark.slow
def test_lira_page_from_sqlite_equals_the_file_run(db):
    def run(at: AppTest) -> AppTest:
        _number(at, "Number of models M").set_value(8)
        _number(at, "Seed").set_value(31)
        at.button[0].click().run()
        assert not at.exception
        return at

    from_file = run(AppTest.from_file(str(VIEWS / "lira_calibration.py"), default_timeout=300).run())
    at = AppTest.from_file(str(VIEWS / "lira_calibration.py"), default_timeout=300).run()
    at.radio(key=state.Lira.SOURCE).set_value(DATABASE).run()
    at.text_input(key=state.Lira.DATABASE).set_value(_url(db, "german_credit")).run()
    from_db = run(at)
    assert page_json(from_db, "lira.downloads") == page_json(from_file, "lira.downloads")
    assert _url(db, "german_credit") in from_db.session_state["lira.downloads.command"]
    assert any(h.value == "Result: 8 logistic models on german_credit" for h in from_db.subheader)  # the table's name


@pytest.mark.slow
def test_generators_page_from_sqlite_equals_the_file_run(db):
    def run(at: AppTest) -> AppTest:
        at.multiselect(key="generators.names").set_value(["bootstrap", "population"])
        at.number_input(key="generators.use_rows").set_value(400)  # a seeded subset: the same rows from either source
        at.number_input(key="generators.seed").set_value(17)
        at.button[0].click().run()
        assert not at.exception
        return at

    at = AppTest.from_file(str(VIEWS / "generators.py"), default_timeout=300).run()
    at.radio(key=state.Generators.SOURCE).set_value("German credit (bundled sample)").run()
    from_file = run(at)
    at = AppTest.from_file(str(VIEWS / "generators.py"), default_timeout=300).run()
    at.radio(key=state.Generators.SOURCE).set_value(DATABASE).run()
    at.text_input(key=state.Generators.DATABASE).set_value(_url(db, "german_credit")).run()
    from_db = run(at)
    differ = _differing(page_json(from_db, "generators.report"), page_json(from_file, "generators.report"))
    assert differ == {".generators.bootstrap.fit_seconds", ".generators.population.fit_seconds"}  # wall-clock only
    assert _url(db, "german_credit") in from_db.session_state["generators.report.command"]


@pytest.mark.slow
def test_synthetic_risk_page_from_sqlite_equals_the_file_run(db):
    def run(at: AppTest) -> AppTest:
        [button] = [b for b in at.button if "Run the audit" in b.label]
        button.click().run()
        assert not at.exception
        return at

    at = AppTest.from_file(str(VIEWS / "synthetic_risk.py"), default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = "German credit – leaky synthetic"
    from_file = run(at.run())
    at = AppTest.from_file(str(VIEWS / "synthetic_risk.py"), default_timeout=300).run()
    at.selectbox(key=state.Synthetic.SOURCE).set_value(DATABASE).run()
    tables = {"train": "train", "holdout": "holdout", "synthetic": "synthetic_leaky", "auxiliary": "auxiliary"}
    for role, table in tables.items():
        at.text_input(key=f"{state.Synthetic.DATABASE}.{role}").set_value(_url(db, table)).run()
        assert not at.exception
    from_db = run(at)
    assert page_json(from_db, "synthetic") == page_json(from_file, "synthetic")  # inputs named by role: byte for byte
    command = from_db.session_state["synthetic.command"]
    assert all(_url(db, table) in command for table in tables.values())


@pytest.mark.slow
def test_own_model_page_from_sqlite_equals_the_file_run(db):
    def run(at: AppTest) -> AppTest:
        next(m for m in at.multiselect if m.label == "Attacks").set_value(["loss", "rmia"])
        _number(at, "Reference models K").set_value(1)
        next(s for s in at.selectbox if s.label == "Reference family").set_value("logistic")
        at.button[0].click().run()
        assert not at.exception
        return at

    at = AppTest.from_file(str(VIEWS / "own_model.py"), default_timeout=300).run()
    at.radio(key=state.OwnModel.SOURCE).set_value(at.radio(key=state.OwnModel.SOURCE).options[1]).run()  # German
    from_file = run(at)
    at = AppTest.from_file(str(VIEWS / "own_model.py"), default_timeout=300).run()
    at.radio(key=state.OwnModel.SOURCE).set_value("Upload my model, tables from a database").run()
    at.file_uploader(key=state.OwnModel.UPLOAD + ".model").upload("model_mlp.skops", (GERMAN / "model_mlp.skops").read_bytes(),
                                                                  "application/octet-stream")  # fmt: skip
    at.run()
    at.text_input(key=f"{state.OwnModel.DATABASE}.train").set_value(_url(db, "train")).run()
    at.text_input(key=f"{state.OwnModel.DATABASE}.population").set_value(_url(db, "holdout")).run()
    assert not at.exception
    from_db = run(at)
    differ = _differing(page_json(from_file, "own_model.downloads"), page_json(from_db, "own_model.downloads"))
    assert not differ, differ  # the model audit's JSON does not name its tables: byte for byte
    assert page_json(from_db, "own_model.downloads") == page_json(from_file, "own_model.downloads")
    assert _url(db, "holdout") in from_db.session_state["own_model.downloads.command"]


@pytest.mark.slow
def test_dp_claim_canary_table_from_sqlite_equals_the_uploaded_file(tmp_path):
    """The DP claim page's uploaded-model mode: the canary table from a database, as from its file."""
    from tests.canary_files import leaky_case

    case = leaky_case(tmp_path / "leaky")
    with sqlite3.connect(tmp_path / "canaries.db") as conn:
        pd.read_csv(case["canaries"]).to_sql("canaries", conn, index=False)
    url = _url(tmp_path / "canaries.db", "canaries")
    key = state.DpClaim.UPLOADED

    def run(from_db: bool) -> AppTest:
        at = AppTest.from_file(str(VIEWS / "dp_claim.py"), default_timeout=120).run()
        at.radio(key=state.DpClaim.MODE).set_value("Audit an uploaded model with its canary file").run()
        at.file_uploader(key=key + ".model").upload("forest.onnx", case["onnx"].read_bytes(), "application/octet-stream")
        if from_db:
            at.radio(key=key + ".canaries_source").set_value(DATABASE).run()
            at.text_input(key=key + ".canaries_database").set_value(url)
        else:
            at.file_uploader(key=key + ".canaries").upload("canaries.csv", case["canaries"].read_bytes(), "text/csv")
        at.run()
        assert not at.exception
        at.button[0].click().run()
        assert not at.exception
        return at

    from_file, from_db = run(False), run(True)
    differ = _differing(page_json(from_file, key + ".downloads"), page_json(from_db, key + ".downloads"))
    assert differ == {".canaries.file"}, differ  # "canaries.csv" against the table's name, "canaries"
    assert url in from_db.session_state[key + ".downloads.command"]
