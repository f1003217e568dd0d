"""Tables from a database (audit_core/common/database.py): SQLite and a real PostgreSQL server the tests start.

A database-backed audit gives the file-backed one's JSON byte for byte; a password never reaches the
reproduce line, the report, stdout or stderr; a query that would write is refused.
"""

from __future__ import annotations

import shlex
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.database import read_database, redacted
from audit_core.common.errors import InputError
from audit_core.common.table_files import read_table
from tests.postgres_server import PgServer, pg_bindir, postgres_server

ROOT = Path(__file__).resolve().parents[3]
ROLES = ("train", "holdout", "synthetic")
ROWS = 300  # per table: enough for the audit, cheap (a couple of seconds per audit)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[pd.DataFrame, Path]]:
    """German Credit's train / holdout / leaky synthetic tables, 300 rows each, as CSV files and as frames."""
    folder = tmp_path_factory.mktemp("files")
    out = {}
    for role, file in zip(ROLES, ("train", "holdout", "synthetic_leaky"), strict=True):
        frame = read_table(ROOT / "sample_data" / "german_credit" / f"{file}.csv", name=role).head(ROWS)
        path = folder / f"{role}.csv"
        frame.to_csv(path, index=False)
        out[role] = (read_table(path, name=role), path)
    return out


@pytest.fixture(scope="module")
def sqlite_db(tables: dict[str, tuple[pd.DataFrame, Path]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "extract.db"
    with sqlite3.connect(path) as conn:
        for role, (frame, _) in tables.items():
            frame.to_sql(role, conn, index=False)
    return path


@pytest.fixture(scope="module")
def pg(tables: dict[str, tuple[pd.DataFrame, Path]]) -> Iterator[PgServer]:
    """A real PostgreSQL server holding the same three tables (and a schema-qualified copy of one)."""
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make test installs Debian's postgresql)")
    from sqlalchemy import create_engine, text

    with postgres_server(bindir) as server:
        engine = create_engine(server.url().replace("postgresql://", "postgresql+psycopg://"))
        with engine.begin() as conn:
            conn.execute(text("CREATE SCHEMA registry"))
            for role, (frame, _) in tables.items():
                frame.to_sql(role, conn, index=False)
            tables["train"][0].to_sql("Train Copy", conn, index=False, schema="registry")
        engine.dispose()
        yield server


def _audit_json(sources: dict[str, str], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """``tabular`` on these sources: its --json text, and everything it printed (stdout + stderr)."""
    capsys.readouterr()
    argv = ["tabular", *[a for role in ROLES for a in (f"--{role}", sources[role])], "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr()
    return out.read_text(), printed.out + printed.err


def test_sqlite_table_and_query_read_as_the_file(tables, sqlite_db):
    frame, _ = tables["train"]
    pd.testing.assert_frame_equal(read_table(f"sqlite:///{sqlite_db}?table=train", name="train"), frame)
    columns = ", ".join(f'"{c}"' for c in frame.columns[:3])
    query = quote(f"SELECT {columns} FROM train WHERE rowid <= 10 ORDER BY rowid")
    got = read_database(f"sqlite:///{sqlite_db}?query={query}")
    pd.testing.assert_frame_equal(got, frame.iloc[:10, :3])


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite:///{db}", "exactly one of ?table=NAME or ?query="),
        ("sqlite:///{db}?table=train&query=SELECT+1", "exactly one of ?table=NAME or ?query="),
        ("sqlite:///{db}?table=patients", "no such table: patients"),
        ("sqlite:///{db}?query=DELETE+FROM+train", "read-only SELECT"),
        ("sqlite:///{db}?query=SELECT+1;DROP+TABLE+train", "one SELECT statement"),
        ("sqlite:///{db}?query=WITH+x+AS+(SELECT+1)+INSERT+INTO+train+SELECT+*+FROM+train", "readonly"),
        ("sqlite:///{db}?query=SELECT+*+FROM+train+WHERE+0", "has no rows"),
        ("sqlite:///missing.db?table=train", "was not found"),
        ("postgresql://ann:hunter2@127.0.0.1:9/clinic?table=t", "could not be read from postgresql://ann@127.0.0.1:9"),
    ],
)
def test_bad_database_urls_are_one_sentence_without_the_password(url, says, sqlite_db):
    with pytest.raises(InputError) as err:
        read_table(url.format(db=sqlite_db), name="train")
    message = str(err.value)
    assert says in message
    assert "\n" not in message
    assert "hunter2" not in message
    with sqlite3.connect(sqlite_db) as conn:  # nothing was written
        assert conn.execute("SELECT count(*) FROM train").fetchone() == (ROWS,)


@pytest.mark.slow
def test_an_audit_from_sqlite_gives_the_file_audit_json_byte_for_byte(tables, sqlite_db, tmp_path, capsys):
    from_files, _ = _audit_json({r: str(p) for r, (_, p) in tables.items()}, tmp_path / "files.json", capsys)
    from_db, _ = _audit_json({r: f"sqlite:///{sqlite_db}?table={r}" for r in ROLES}, tmp_path / "db.json", capsys)
    assert from_db == from_files


@pytest.mark.slow
def test_an_audit_from_postgresql_gives_the_file_audit_json_and_never_shows_the_password(tables, pg, tmp_path, capsys):
    from audit_core import audit_table

    from_files, _ = _audit_json({r: str(p) for r, (_, p) in tables.items()}, tmp_path / "files.json", capsys)
    urls = {r: f"{pg.url()}?table={r}" for r in ROLES}
    from_db, printed = _audit_json(urls, tmp_path / "db.json", capsys)
    assert from_db == from_files
    result = audit_table(**urls)  # the API: the same document, and a reproduce line without the password
    assert result.to_json() == from_files
    html = result.to_html(tmp_path / "report.html").read_text()
    for shown in (printed, from_db, result.command, html, repr(result)):
        assert pg.password not in shown
    assert f"--train {shlex.quote(pg.url(password=False) + '?table=train')}" in result.command


@pytest.mark.slow  # starts a PostgreSQL server (with the test above)
def test_postgresql_schema_table_order_and_a_read_only_transaction(tables, pg):
    frame, _ = tables["train"]
    got = read_table(f"{pg.url()}?table=registry.Train Copy", name="train")
    pd.testing.assert_frame_equal(got, frame)
    ordered = read_table(f"{pg.url()}?table=train&order_by=age", name="train")
    assert ordered["age"].is_monotonic_increasing
    assert len(ordered) == ROWS
    with pytest.raises(InputError, match="read-only transaction") as err:
        read_table(f"{pg.url()}?query=" + quote("WITH gone AS (DELETE FROM train RETURNING *) SELECT * FROM gone"),
                   name="train")  # fmt: skip
    assert pg.password not in str(err.value)
    assert len(read_table(f"{pg.url()}?table=train", name="train")) == ROWS
    with pytest.raises(InputError, match="password authentication failed") as err:
        read_table(f"postgresql://{pg.user}:wrong-{pg.password}@{pg.host}:{pg.port}/{pg.database}?table=train",
                   name="train")  # fmt: skip
    assert "wrong-" not in str(err.value)


def test_redacted_drops_the_password_from_malformed_urls_too():
    assert redacted("postgresql://u:p@w@host/db?table=t") == "postgresql://u@w@host/db?table=t"
    assert "secret" not in redacted("postgresql://u:secret@[::1/db")
