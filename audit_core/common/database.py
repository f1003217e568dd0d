"""Tables from a database: an SQLAlchemy URL naming one table or a read-only query, read like a file.

Every table input (``--train``, ``--holdout``, ..., the page's source picker, the Python API) takes,
besides a CSV or Parquet file, a URL with a ``table`` or a ``query`` parameter::

    postgresql://steward@db.example.org/clinic?table=patients
    postgresql://steward@db.example.org/clinic?table=registry.patients      (a schema-qualified table)
    sqlite:///extract.db?query=SELECT age, sex, diagnosis FROM visits WHERE year = 2024

The table is read whole (``SELECT * FROM <table>``, the name quoted by the dialect) or the query
is run inside a read-only transaction (PostgreSQL ``SET TRANSACTION READ ONLY``; SQLite opened
with ``mode=ro``), and only one statement: a query that writes is refused by the database, never
executed. A table's rows come in the database's order (a table loaded once and not updated:
the order it was loaded in), or ordered by ``&order_by=col1,col2``; a query's as it orders
them. A query is stopped after :data:`~audit_core.common.limits.DATABASE_SECONDS` (PostgreSQL's
``statement_timeout``, SQLite's progress handler: a recursive CTE that never ends), and a result of
more cells than a Parquet file may declare is refused as it arrives. The frame then goes through the same checks as a file
(:func:`audit_core.common.table_files.check_frame`), NULL read as missing, so a database-backed
audit gives the file-backed one's JSON byte for byte (tested against SQLite and a real
PostgreSQL server).

Credentials are never echoed: :func:`redacted` drops the password from the URL for the
reproduce line, the report and every message (give it through the driver's environment,
``PGPASSWORD`` for PostgreSQL, or a ``.pgpass`` file; the reproduce line then runs as printed).
A bare ``postgresql://`` uses psycopg 3 (``postgresql+psycopg://``).
"""

from __future__ import annotations

import re
from typing import Any

from audit_core.common.errors import InputError
from audit_core.common.limits import DATABASE_SECONDS

__all__ = ["SCHEMES", "database_label", "is_database_url", "read_database", "redacted", "source_name"]

SCHEMES: tuple[str, ...] = ("postgresql", "postgres", "sqlite", "mysql", "mariadb", "mssql", "oracle")
"""URL schemes read as databases (with or without ``+driver``); anything else is a file path."""

_URL = re.compile(r"^(?P<scheme>[a-z][a-z0-9]*)(\+[a-z0-9_]+)?://", re.IGNORECASE)
_PARAMS = ("table", "query", "order_by")
_TIMEOUT_S = 10
_CHUNK_ROWS = 1_000_000
"""Rows fetched at a time (a table of up to a million rows is read in one go, as pandas reads it)."""


def is_database_url(source: Any) -> bool:
    """Whether ``source`` is a database URL (a string starting ``postgresql://``, ``sqlite:///``, ...)."""
    match = _URL.match(source) if isinstance(source, str) else None
    return match is not None and match["scheme"].lower() in SCHEMES


def _parse(source: str) -> Any:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(source)
    except (ArgumentError, ValueError):
        raise InputError(f"{_shown(source)} is not a database URL like postgresql://user@host/db?table=patients.") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def _shown(source: str) -> str:
    """``source`` with any password removed (also from text that is not a valid URL)."""
    return re.sub(r"(://[^:/@?#]*):[^@/?#]*@", r"\1@", source)


def redacted(source: str) -> str:
    """The URL without its password: what the reproduce line, the report and every message show.

    >>> redacted("postgresql://ann:s3cret@db:5432/clinic?table=patients")
    'postgresql://ann@db:5432/clinic?table=patients'
    >>> redacted("sqlite:///x.db?table=t")
    'sqlite:///x.db?table=t'
    """
    return _shown(source)


def database_label(source: str) -> str:
    """How messages name a database table: its table name, or ``query`` (never the URL's credentials).

    >>> database_label("postgresql://ann:pw@db/clinic?table=patients")
    'patients'
    """
    url = _parse(source)
    table = url.query.get("table")
    return str(table) if isinstance(table, str) else "query"


def source_name(source: Any) -> str:
    """How messages and the report name an input: a file's name, or a database table's (:func:`database_label`)."""
    from pathlib import Path

    if is_database_url(source):
        try:
            return database_label(source)
        except InputError:
            return "database"
    return Path(str(source)).name


def _one(url: Any, key: str) -> str | None:
    value = url.query.get(key)
    if isinstance(value, tuple):
        raise InputError(f"The database URL gives ?{key}= more than once; give it once.")
    return value


def _statement(url: Any, engine: Any) -> Any:
    """The one SELECT to run: the table's, or the user's query (refused unless it is one statement)."""
    from sqlalchemy import text

    table, query, order_by = _one(url, "table"), _one(url, "query"), _one(url, "order_by")
    unknown = sorted(set(url.query) - set(_PARAMS))
    if unknown and url.get_backend_name() == "sqlite":
        raise InputError(f"The database URL has ?{unknown[0]}=, which is not read; give ?table= or ?query=.")
    if (table is None) == (query is None):
        raise InputError("The database URL needs exactly one of ?table=NAME or ?query=SELECT ...; e.g. "
                         "postgresql://user@host/db?table=patients.")  # fmt: skip
    if query is not None:
        body = query.strip().rstrip(";").strip()
        if not body or ";" in body:
            raise InputError("The database query must be one SELECT statement (no ';' inside it).")
        if not re.match(r"^(select|with|values|table)\b", body, re.IGNORECASE):
            raise InputError("The database query must be a read-only SELECT (or WITH ... SELECT); "
                             f"got one starting {body.split()[0][:20]!r}.")  # fmt: skip
        return text(body)
    preparer = engine.dialect.identifier_preparer
    parts = [p for p in str(table).split(".") if p]
    if not parts or len(parts) > 2:
        raise InputError(f"?table={table!r} must be a table name, or schema.table.")
    name = ".".join(preparer.quote(p) for p in parts)
    order = [preparer.quote(c.strip()) for c in order_by.split(",") if c.strip()] if order_by else None
    return text(f"SELECT * FROM {name}" + (f" ORDER BY {', '.join(order)}" if order else ""))


def _connect_args(url: Any) -> dict[str, Any]:
    backend = url.get_backend_name()
    if backend == "postgresql":
        return {"connect_timeout": _TIMEOUT_S}
    if backend == "sqlite":
        return {"timeout": _TIMEOUT_S}
    return {}


def _sqlite_read_only(url: Any) -> Any:
    """A SQLite URL opened read-only (``file:...?mode=ro``), refusing a file that is not there."""
    from pathlib import Path

    database = url.database
    if not database or database == ":memory:":
        raise InputError("The SQLite URL names no database file; write sqlite:///path/to/file.db?table=NAME.")
    if not Path(database).is_file():
        raise InputError(f"The SQLite database {Path(database).name} was not found.")
    return url.set(database=f"file:{database}", query={"mode": "ro", "uri": "true"})


def read_database(source: str, *, name: str | None = None) -> Any:
    """The rows of ``?table=`` or ``?query=`` at database URL ``source``, as a DataFrame (no file involved).

    Parameters
    ----------
    source : str
        An SQLAlchemy URL with ``?table=NAME`` (optionally ``schema.NAME`` and ``&order_by=col1,col2``)
        or ``?query=SELECT ...`` (URL-encoded where needed).
    name : str, optional
        How messages name the table (default :func:`database_label`).

    Returns
    -------
    pandas.DataFrame
        String column names, a 0-based index; a table's rows in the database's order (by ``order_by``
        when given), a query's as it orders them.

    Raises
    ------
    InputError
        A malformed URL, a missing or unreachable database, a table that is not there, a query
        that is not one read-only SELECT, a driver that is not installed, no rows: one sentence,
        with no password in it.
    """
    import pandas as pd
    from sqlalchemy import create_engine
    from sqlalchemy.exc import NoSuchModuleError, SQLAlchemyError

    url = _parse(source)
    label = name or database_label(source)
    shown = redacted(source)
    try:
        engine_url = _sqlite_read_only(url) if url.get_backend_name() == "sqlite" else url.set(
            query={k: v for k, v in url.query.items() if k not in _PARAMS})  # fmt: skip
        engine = create_engine(engine_url, connect_args=_connect_args(url), poolclass=_null_pool())
    except NoSuchModuleError:
        raise InputError(f"No driver for {url.drivername} is installed; install its SQLAlchemy driver "
                         "(psycopg for PostgreSQL).") from None  # fmt: skip
    except ModuleNotFoundError as exc:
        raise InputError(f"The driver {exc.name} for {url.get_backend_name()} is not installed.") from None
    import time

    deadline = time.monotonic() + DATABASE_SECONDS
    try:
        statement = _statement(url, engine)
        with engine.connect() as conn:
            if url.get_backend_name() == "postgresql":
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(DATABASE_SECONDS * 1000)}")
            elif url.get_backend_name() == "sqlite":  # the query stops when the deadline passes (a recursive CTE)
                raw: Any = conn.connection.driver_connection
                raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            frame = _bounded_rows(pd.read_sql_query(statement, conn, chunksize=_CHUNK_ROWS), label=label)
            conn.rollback()
    except InputError:
        raise
    except SQLAlchemyError as exc:
        if time.monotonic() > deadline:
            raise InputError(f"Table '{label}' was not read from {shown} within {DATABASE_SECONDS:g} s, so the query "
                             "was stopped; read a table or a query that ends.") from None  # fmt: skip
        raise InputError(f"Table '{label}' could not be read from {shown}: {_reason(exc, source)}") from None
    finally:
        engine.dispose()
    if frame.shape[1] == 0 or len(frame) == 0:
        raise InputError(f"Table '{label}' from the database has no rows; check ?table= or the query.")
    import numpy as np

    from audit_core.common.table_files import check_frame

    for col in frame.columns:  # NULL arrives as None in text columns: NaN, as the CSV reader gives a missing cell
        if frame[col].dtype == object and frame[col].isna().any():
            frame[col] = frame[col].where(frame[col].notna(), np.nan)
    return check_frame(frame, name=label)


def _bounded_rows(chunks: Any, *, label: str) -> Any:
    """The chunks of a result as one frame, refused once it holds more than :data:`MAX_PARQUET_CELLS` cells (a
    query that never ends is stopped by the deadline; one that returns 10^9 rows, here): memory stays bounded."""
    import pandas as pd

    from audit_core.common.table_files import MAX_PARQUET_CELLS

    parts, cells = [], 0
    for chunk in chunks:
        parts.append(chunk)
        cells += chunk.size
        if cells > MAX_PARQUET_CELLS:
            raise InputError(f"Table '{label}' from the database holds more than {MAX_PARQUET_CELLS:,} cells; read a "
                             "sample (a query with LIMIT, or a smaller table).")  # fmt: skip
    if not parts:
        return pd.DataFrame()
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def _null_pool() -> Any:
    from sqlalchemy.pool import NullPool

    return NullPool


def _reason(exc: Exception, source: str) -> str:
    """The database's own one-line reason, without the statement, parameters or password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    text = text.replace(source, redacted(source))
    password = _password(source)
    if password:
        text = text.replace(password, "***")
    text = text.rstrip(". ")
    return (text[:200] + "...") if len(text) > 200 else text + "."


def _password(source: str) -> str | None:
    match = re.search(r"://[^:/@?#]*:([^@/?#]*)@", source)
    return match[1] if match else None
