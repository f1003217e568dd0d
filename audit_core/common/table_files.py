"""Reading a table file (CSV or Parquet) into a DataFrame, refusing bad input with one clear sentence.

Every table the dashboard or the command line reads goes through :func:`read_table` once
(validate at the boundary): the size, the header, the encoding, the delimiter, overlong cells,
duplicate column names and Parquet's own types are checked before anything trusts the data.
Uploaded files are never unpickled: CSV is parsed as UTF-8 text, Parquet through pyarrow (its
pandas metadata is JSON, not pickle). Column types: :mod:`audit_core.common.column_types`;
tables checked against each other: :mod:`audit_core.common.alignment`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import TABLE_COLUMNS

__all__ = [
    "FILE_SHA256",
    "FILE_SIZE",
    "MAX_PARQUET_CELLS",
    "MAX_PARQUET_TEXT_MB",
    "MAX_UPLOAD_MB",
    "MISSING_TOKENS",
    "check_frame",
    "check_unique_names",
    "read_table",
    "shortened",
]

FILE_SHA256 = "file_sha256"
"""Key in a read table's ``attrs``: the SHA-256 of the file's bytes as given (the reports print it beside the file name)."""
FILE_SIZE = "file_size"
"""Key in a read table's ``attrs``: the file's size in bytes."""

MAX_UPLOAD_MB = 200
"""Largest table file accepted, in MiB (same as ``maxUploadSize`` in .streamlit/config.toml)."""
MAX_PARQUET_CELLS = 100_000_000
"""Most cells (rows x columns) a Parquet table may declare: about what a 200 MB CSV can hold."""
MAX_PARQUET_TEXT_MB = 4 * MAX_UPLOAD_MB
"""Most text a Parquet table may decode to, in MiB (dictionary pages can repeat one long string without end)."""

MISSING_TOKENS: tuple[str, ...] = (
    "",
    "?",
    "NA",
    "N/A",
    "n/a",
    "NaN",
    "nan",
    "NULL",
    "null",
    "None",
    "#N/A",
    "<NA>",
    "-nan",
    "-NaN",
)
"""Cell texts read as missing values (pandas' usual set plus ``?``, used by e.g. UCI Adult)."""

_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_GZIP_MAGIC = b"\x1f\x8b"
_PICKLE_PREFIXES = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


def _read_bytes(source: Any, *, name: str, limit: int) -> tuple[bytes, str]:
    """Return the raw bytes of ``source`` (at most ``limit`` + 1 of them) and a file name hint."""
    too_big = InputError(
        f"Table '{name}' is larger than the {limit // (1024 * 1024)} MB limit; "
        "upload a smaller sample of the rows or save it as Parquet."
    )
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > limit:
            raise too_big
        return data, ""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            st = path.stat()
        except FileNotFoundError:
            st = None
        except OSError as exc:  # a 5,000-character name, a loop of links: the reason, not a traceback
            raise InputError(f"Table '{name}': the path '{shortened(str(path))}' cannot be used ({exc.strerror}).") from None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise InputError(f"Table '{name}': there is no file at '{path}'; check the path.")
        if st.st_size > limit:
            raise too_big
        try:
            with path.open("rb") as handle:
                return handle.read(limit + 1), path.name
        except OSError as exc:
            raise InputError(f"Table '{name}': the file '{path}' cannot be read ({exc.strerror}).") from exc
    if hasattr(source, "read"):
        hint = str(getattr(source, "name", "") or "")
        size = getattr(source, "size", None)
        if isinstance(size, int) and size > limit:
            raise too_big
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):
                pass
        data = source.read(limit + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > limit:
            raise too_big
        return bytes(data), hint
    raise InputError(f"Table '{name}' must be a file path, bytes or an uploaded file, not {type(source).__name__}.")


def shortened(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with "..." (a 5,000-character path or name in a sentence)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_column_count(n_columns: int, *, name: str) -> None:
    """Refuse a header with more columns than :data:`TABLE_COLUMNS` allows, before any row is parsed."""
    if n_columns > TABLE_COLUMNS.high:
        raise InputError(
            f"Table '{name}' has {n_columns:,} columns; {TABLE_COLUMNS.rule()}: keep only the columns the audit needs."
        )


def check_unique_names(names: Sequence[str], *, name: str) -> None:
    seen: set[str] = set()
    dup: list[str] = []
    for col in names:
        if col in seen and col not in dup:
            dup.append(col)
        seen.add(col)
    if dup:
        listed = ", ".join(f"'{c}'" for c in dup)
        raise InputError(f"Table '{name}' has duplicate column names ({listed}); give every column a distinct name.")


def _one_line(exc: BaseException, limit: int = 200) -> str:
    return shortened(" ".join(str(exc).split()) or type(exc).__name__, limit)


def _parquet_columns_as_text(table: Any, *, name: str) -> Any:
    """Binary columns decoded as UTF-8 text, decimals as floats; nested or undecodable columns refused."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, fld in enumerate(table.schema):
        kind = fld.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
            try:
                text = pc.cast(table.column(i).cast(pa.large_binary()), pa.large_string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise InputError(
                    f"Column '{fld.name}' of table '{name}' holds binary data that is not text; "
                    "drop the column or store it as text."
                ) from None
            table = table.set_column(i, pa.field(fld.name, pa.large_string()), text)
        elif pa.types.is_decimal(kind):
            table = table.set_column(i, pa.field(fld.name, pa.float64()), table.column(i).cast(pa.float64()))
        elif pa.types.is_nested(kind) or pa.types.is_union(kind):
            raise InputError(
                f"Column '{fld.name}' of table '{name}' holds {kind} values (lists or records), not single values; "
                "flatten it into plain columns."
            )
    return table


def _check_parquet_cells(rows: int, columns: int, *, name: str) -> None:
    """Refuse a Parquet file whose footer declares more cells than :data:`MAX_PARQUET_CELLS`, before a page is read
    (a few hundred KB of run-length-encoded zeros can declare 10^9 rows)."""
    if rows * max(columns, 1) > MAX_PARQUET_CELLS:
        raise InputError(f"Table '{name}' declares {rows:,} rows of {columns:,} columns ({rows * columns:,} cells); at "
                         f"most {MAX_PARQUET_CELLS:,} cells are accepted: upload a sample.")  # fmt: skip


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
                or pa.types.is_large_binary(kind))  # fmt: skip


def _text_bounded(table: Any, *, name: str) -> Any:
    """Text columns read as dictionaries (no value repeated in memory yet), their cells checked against the CSV
    reader's field limit and their total length against :data:`MAX_PARQUET_TEXT_MB`, then decoded: a 1 MB string
    referenced by a million rows is refused, not expanded to a terabyte."""
    import pyarrow as pa
    import pyarrow.compute as pc

    budget = MAX_PARQUET_TEXT_MB * 2**20
    total = 0
    for i, fld in enumerate(table.schema):
        if not pa.types.is_dictionary(fld.type):
            continue
        for chunk in table.column(i).chunks:
            lengths = pc.binary_length(chunk.dictionary)
            longest = pc.max(lengths).as_py() or 0
            if longest > csv.field_size_limit():
                raise InputError(f"Table '{name}' has a cell of {longest:,} characters in column '{fld.name}'; cells "
                                 f"longer than {csv.field_size_limit():,} characters are not accepted.")  # fmt: skip
            total += pc.sum(lengths.take(chunk.indices)).as_py() or 0
            if total > budget:
                raise InputError(f"Table '{name}' holds over {MAX_PARQUET_TEXT_MB:,} MB of text once decoded; upload a "
                                 "sample.")  # fmt: skip
        table = table.set_column(i, pa.field(fld.name, fld.type.value_type), table.column(i).cast(fld.type.value_type))
    return table


def _read_parquet(data: bytes, *, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        names = [str(c) for c in parquet.schema_arrow.names]
        _check_column_count(len(names), name=name)
        check_unique_names(names, name=name)
        _check_parquet_cells(parquet.metadata.num_rows, len(names), name=name)
        text = [f.name for f in parquet.schema_arrow if _is_text(f.type)]
        table = _text_bounded(pq.ParquetFile(io.BytesIO(data), read_dictionary=text).read(), name=name)
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(
            f"Table '{name}' looks like Parquet but cannot be read ({_one_line(exc)}); re-save it as CSV or Parquet."
        ) from exc
    table = _parquet_columns_as_text(table, name=name)
    try:
        frame = table.to_pandas()
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InputError(
            f"Table '{name}' holds Parquet column types that cannot be converted ({_one_line(exc)}); save it as CSV."
        ) from exc
    if not isinstance(frame.index, pd.RangeIndex):  # a pandas index stored as columns: named levels are data
        named = [level for level in frame.index.names if level is not None]
        frame = frame.reset_index(level=named) if named else frame
        names = [str(c) for c in frame.columns]
        check_unique_names(names, name=name)
    frame.columns = names
    return frame.reset_index(drop=True)


def _decode_utf8(data: bytes, *, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1]
        line = data[: exc.start].count(b"\n") + 1
        guess = "it looks like Latin-1/Windows-1252" if bad and bad[0] >= 0x80 else "it is not UTF-8"
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            guess = "it is UTF-16"
        raise InputError(
            f"Table '{name}' is not UTF-8 text: byte 0x{bad.hex()} on line {line} cannot be decoded "
            f"({guess}); re-save the file as UTF-8 CSV."
        ) from exc


def _sniff_delimiter(first_line: str) -> str:
    counts = {sep: first_line.count(sep) for sep in (",", ";", "\t", "|")}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] > 0 else ","


def _short_rows(text: str, sep: str, n_fields: int, *, name: str) -> tuple[int, str] | None:
    """The first data row with fewer than ``n_fields`` fields: (line number, its text), else None.

    pandas pads such rows with missing values without a word; a row written with
    another delimiter (``1,2`` under a ``;`` header) looks exactly like that.
    """
    lines = text.split("\n")
    if '"' not in text:  # fast path: no quoting, so fields are separated by every delimiter
        start = next((i for i, line in enumerate(lines) if line.strip()), 0)
        for i in range(start + 1, len(lines)):
            line = lines[i]
            if line.count(sep) < n_fields - 1 and line.strip():
                return i + 1, line.strip()
        return None
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    rows = iter(reader)
    try:
        for row in rows:
            if any(cell.strip() for cell in row):
                break
        for row in rows:
            if len(row) < n_fields and any(cell.strip() for cell in row):
                return reader.line_num, sep.join(row)
    except csv.Error as exc:
        raise _csv_error(exc, reader.line_num, name=name) from None
    return None


def _csv_error(exc: csv.Error, line: int, *, name: str) -> InputError:
    """One sentence for the csv module's refusal (a cell over its 131,072-character limit: often an unclosed quote)."""
    if "field larger than field limit" in str(exc):
        return InputError(
            f"Table '{name}' has a cell longer than {csv.field_size_limit():,} characters (from line {line}); "
            "this is usually a quote that is never closed: check the quotes, or shorten the cell."
        )
    return InputError(f"Table '{name}' is not a readable CSV table near line {line} ({_one_line(exc)}); check its quotes.")


def _read_csv(data: bytes, *, name: str) -> pd.DataFrame:
    head = data[:8192]
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"Table '{name}' is a binary file, not a CSV or Parquet table; export the data as CSV.")
    text = _decode_utf8(data, name=name)
    if not text.strip():
        raise InputError(f"Table '{name}' is empty; upload a file with a header row and data rows.")
    first_line = text.lstrip("\r\n").splitlines()[0]
    sep = _sniff_delimiter(first_line)
    if first_line.count(sep) + 1 > TABLE_COLUMNS.high:  # quoted delimiters may overcount: parse the header to be sure
        _check_column_count(len(next(csv.reader(io.StringIO(first_line), delimiter=sep), [])), name=name)
    try:
        header = next(csv.reader(io.StringIO(text.lstrip("\r\n")), delimiter=sep))
    except csv.Error as exc:
        raise _csv_error(exc, 1, name=name) from None
    except StopIteration as exc:
        raise InputError(f"Table '{name}' has an unreadable header row ({_one_line(exc)}); check the file is a CSV.") from exc
    header = [h.strip() for h in header]
    _check_column_count(len(header), name=name)
    trailing = 0  # a trailing delimiter (spreadsheet export) leaves blank names at the end
    while trailing < len(header) and header[len(header) - 1 - trailing] == "":
        trailing += 1
    named = header[: len(header) - trailing]
    if not named:
        raise InputError(f"Table '{name}' has no column names in its first row; add a header row.")
    if "" in named:
        position = named.index("") + 1
        raise InputError(
            f"Table '{name}' has a column without a name (column {position} of the header); "
            "give every column a name in the first row."
        )
    check_unique_names(named, name=name)
    short = _short_rows(text, sep, len(named), name=name) if len(named) > 1 else None
    if short is not None:
        line, row = short
        shown = row if len(row) <= 60 else row[:57] + "..."
        others = [d for d in (",", ";", "\t", "|") if d != sep and d in row]
        why = (
            f"it uses {others[0]!r} where the header uses {sep!r}" if others else "it has fewer fields than the header"
        )
        raise InputError(
            f"Table '{name}' line {line} ('{shown}') does not match the header: {why}; use one delimiter "
            "throughout and give every row a field per column."
        )
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            skipinitialspace=True,
            na_values=list(MISSING_TOKENS),
            keep_default_na=False,
            low_memory=False,
            skip_blank_lines=True,
        )
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"Table '{name}' is empty; upload a file with a header row and data rows.") from exc
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        raise InputError(
            f"Table '{name}' is not a readable CSV table ({_one_line(exc)}); check that every row has "
            "the same number of fields as the header."
        ) from exc
    if not isinstance(frame.index, pd.RangeIndex):
        raise InputError(
            f"Table '{name}' has rows with more fields than the header has names; check the delimiter "
            "and that every row has the same number of fields as the header."
        )
    if trailing:
        extra = frame.iloc[:, len(named) :]
        if extra.shape[1] != trailing or extra.notna().to_numpy().any():
            position = len(named) + 1
            raise InputError(
                f"Table '{name}' has a column without a name (column {position} of the header); "
                "give every column a name in the first row."
            )
        frame = frame.iloc[:, : len(named)]
        header = named
    frame.columns = header if len(header) == frame.shape[1] else [str(c).strip() for c in frame.columns]
    return frame


def read_table(source: Any, *, name: str, max_mb: float = MAX_UPLOAD_MB) -> pd.DataFrame:
    """Read a CSV or Parquet table, refusing anything that is not a usable table.

    Parameters
    ----------
    source : str, os.PathLike, bytes or file-like
        A path, the raw bytes, or an open binary file (e.g. a Streamlit ``UploadedFile``); or a
        database URL with ``?table=`` or ``?query=`` (:mod:`audit_core.common.database`).
        The format is recognised from the content (Parquet's ``PAR1`` magic), not
        trusted from the file name. CSV must be UTF-8; the delimiter (``,`` ``;``
        tab ``|``) is taken from the header row; the cells in :data:`MISSING_TOKENS`
        (including ``?``) are read as missing.
    name : str
        The table's role or file name, used in error messages ("train", "synthetic").
    max_mb : float, default MAX_UPLOAD_MB
        Size limit in MiB.

    Returns
    -------
    pandas.DataFrame
        The table with string column names and a 0-based ``RangeIndex`` (row ``i``
        is the ``i``-th data row of the file).

    Raises
    ------
    InputError
        Empty file, header without rows, binary or non-tabular content, text that
        is not UTF-8, duplicate or blank column names, a file over the size limit,
        or a pickle / Excel / compressed file.

    Notes
    -----
    Nothing is ever unpickled. Column typing and cross-table checks are the job of
    :func:`infer_column_types` and :func:`align_tables` (docs/methods.md §1 step 1).

    Examples
    --------
    >>> read_table(b"a,b\\n1,x\\n2,?\\n", name="demo")
       a    b
    0  1    x
    1  2  NaN
    """
    from audit_core.common.database import is_database_url, read_database

    if is_database_url(source):  # postgresql://...?table=patients, sqlite:///x.db?query=SELECT ...
        return read_database(source, name=name)
    limit = int(max_mb * 1024 * 1024)
    name = shortened(name)
    data, hint = _read_bytes(source, name=name, limit=limit)
    if not data.strip():
        raise InputError(f"Table '{name}' is empty; upload a file with a header row and data rows.")
    if data.startswith(_PARQUET_MAGIC):
        frame = _read_parquet(data, name=name)
    elif data.startswith(_ZIP_MAGIC):
        raise InputError(f"Table '{name}' is a ZIP or Excel file; save the sheet as CSV (UTF-8) or Parquet and upload that.")
    elif data.startswith(_GZIP_MAGIC):
        raise InputError(f"Table '{name}' is a compressed file; decompress it and upload the CSV or Parquet inside.")
    elif data.startswith(_PICKLE_PREFIXES) or hint.lower().endswith((".pkl", ".pickle")):
        raise InputError(f"Table '{name}' is a Python pickle, which is never loaded for safety; save it as CSV or Parquet.")
    else:
        if hint.lower().endswith((".parquet", ".pq")):
            raise InputError(f"Table '{name}' is named as Parquet but is not a Parquet file; re-save it.")
        frame = _read_csv(data, name=name)
    frame = check_frame(frame, name=name)
    frame.attrs[FILE_SHA256] = hashlib.sha256(data).hexdigest()  # the file as given: what `sha256sum FILE` prints
    frame.attrs[FILE_SIZE] = len(data)
    return frame


def check_frame(frame: pd.DataFrame, *, name: str) -> pd.DataFrame:
    """The checks every table passes however it came (a file, a database, a DataFrame given to the Python API).

    Columns and rows present, at most :data:`TABLE_COLUMNS` columns, distinct string column
    names, a 0-based index.
    """
    name = shortened(name)
    if frame.shape[1] == 0:
        raise InputError(f"Table '{name}' has no columns; upload a file with a header row.")
    if len(frame) == 0:
        raise InputError(f"Table '{name}' has column names but no rows; upload a file with data rows.")
    _check_column_count(frame.shape[1], name=name)
    names = [str(c) for c in frame.columns]
    check_unique_names(names, name=name)
    frame = frame.copy() if frame.columns.tolist() != names or not isinstance(frame.index, pd.RangeIndex) else frame
    frame.columns = names
    decoded = {i: text for i, col in enumerate(names) if (text := _checked_cells(frame.iloc[:, i], col, name=name)) is not None}
    if decoded:
        frame = frame.copy()  # never the caller's own frame
        for i, text in decoded.items():
            frame.isetitem(i, text)
    return frame.reset_index(drop=True)


def _checked_cells(values: pd.Series, col: str, *, name: str) -> pd.Series | None:
    """A column of a DataFrame given as it is (the Python API) holds what a file could: no complex numbers, and bytes
    only as UTF-8 text (decoded, as a Parquet binary column is: the column to use instead, None when it is fine)."""
    if pd.api.types.is_complex_dtype(values.dtype):
        raise InputError(f"Column '{col}' of table '{name}' holds complex numbers; give real numbers.")
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=True) not in ("bytes", "mixed", "mixed-integer"):
        return None
    raw = values.map(lambda v: isinstance(v, bytes | bytearray | memoryview)).to_numpy(dtype=bool)
    if not raw.any():
        return None
    try:
        return values.where(~raw, values[raw].map(lambda v: bytes(v).decode("utf-8")))
    except UnicodeDecodeError:
        raise InputError(f"Column '{col}' of table '{name}' holds binary data that is not text; drop the column or "
                         "store it as text.") from None  # fmt: skip
