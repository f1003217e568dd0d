"""Where a page's one table comes from: the bundled sample, the user's upload, or a database table (one radio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import streamlit as st

from audit_core.common.database import is_database_url, redacted, source_name
from audit_core.common.errors import InputError
from ui.run import show_input_error
from ui.session import take_autorun
from ui.store import load_database_table, load_table

__all__ = ["DATABASE", "Source", "database_table", "sample_or_upload"]

DATABASE = "Database table"
"""The source picker's third choice: an SQLAlchemy URL with ?table= or ?query= (audit_core.common.database)."""


class Source(NamedTuple):
    """The chosen table, its file name, the path the reproduce command names, and whether to run it at once."""

    table: Any
    name: str | None
    path: str | None
    autorun: bool


def sample_or_upload(
    label: str, *, sample: Path, sample_label: str, upload_label: str, empty_help: str, autorun_key: str, key: str,
    upload_key: str,
) -> Source:
    """The table chosen with the radio ``label`` (``key``); its fields are None while nothing is chosen.

    ``path`` is the sample's path relative to the repository (as the CLI is given it), the
    upload's own file name, or the database URL without its password (the reproduce line's).

    The home page's "Run on the sample" (``autorun_key``) selects the sample (``autorun`` True:
    the page runs it at once); an unreadable upload is one sentence on the page
    (``show_input_error``), never an exception box.
    """
    autorun = take_autorun(autorun_key)
    if autorun:
        st.session_state[key] = sample_label
    source = st.radio(label, [sample_label, upload_label, DATABASE], key=key, horizontal=True)
    try:
        if source == DATABASE:
            return _database_source(key, autorun)
        if source == sample_label:
            root = Path(__file__).resolve().parents[1]
            return Source(load_table(sample, sample.name, upload=False), sample.name, str(sample.relative_to(root)), autorun)
        # any file type: a wrong one (a .png) gets a sentence from read_table, not only a red file chip
        upload = st.file_uploader("CSV or Parquet", type=None, key=upload_key)
        if upload is None:
            st.info(empty_help)
            return Source(None, None, None, autorun)
        return Source(load_table(upload.getvalue(), upload.name, upload=True), upload.name, upload.name, autorun)
    except InputError as exc:
        show_input_error(exc)
        return Source(None, None, None, autorun)


def _database_source(key: str, autorun: bool) -> Source:
    table, name, path = database_table(f"{key}.database_url")
    return Source(table, name, path, autorun)


def database_table(
    key: str, *, label: str = "Database URL", name: str | None = None, where: Any = None,
    empty_help: str | None = "Type the URL of a database table; press Enter to read it.",
) -> tuple[Any, str | None, str | None]:
    """The table at a database URL the user types: ``(table, name, path)``, all None while the field is empty.

    Every page's database choice goes through here. The URL is typed in a password field (it may hold a
    password: shown as dots); ``path`` is the URL without its password, what the reproduce line and the
    report name (as the CLI's ``read_inputs``); ``name`` names the table in messages (default: its table
    name, as the CLI; an input named by its role passes the role). The table is read once per session
    (``ui.store.load_database_table``). Text that is not a database URL, or a table that cannot be read,
    raises :class:`InputError` (one sentence: the page shows it with ``show_input_error``).
    ``where`` is the column (or ``st``) the field goes in; ``empty_help`` what it says while empty (None: nothing,
    for a page that says once which of its tables are missing).
    """
    url = (where or st).text_input(
        label, type="password", key=key, placeholder="postgresql://user@host/db?table=NAME",
        help="An SQLAlchemy URL with ?table=NAME (or schema.NAME) or a read-only ?query=SELECT ... (URL-encoded), e.g. "
        "postgresql://steward@db.example.org/clinic?table=patients or sqlite:///extract.db?table=scores. The "
        "password is never shown: the reproduce line and the report name the URL without it.",
    )  # fmt: skip
    if not url:
        if empty_help:
            (where or st).info(empty_help)
        return None, None, None
    if not is_database_url(url):
        raise InputError("That is not a database URL; it starts postgresql://, sqlite:///, mysql:// ... and ends "
                         "?table=NAME or ?query=SELECT ...")  # fmt: skip
    name = name or source_name(url)
    table = load_database_table(url, name)
    (where or st).caption(f"Read from {redacted(url)}")
    return table, name, redacted(url)
