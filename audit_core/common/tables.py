"""Load, type and align the tables of an audit, refusing bad input with one clear sentence.

Every table the dashboard or the command line reads goes through here once
(validate at the boundary): :func:`read_table` turns a CSV or Parquet file into a
DataFrame, :func:`infer_column_types` decides which columns are numeric and which
categorical (the user's choice always wins), and :func:`align_tables` checks that
the tables share their columns and converts them to the form the distance code
trusts (numeric float64 with NaN, categorical ``str`` with NaN). See docs/methods.md §1
step 1 for why the column types matter (Gower distance treats them differently).

Uploaded files are never unpickled: CSV is parsed as UTF-8 text, Parquet through
pyarrow (its pandas metadata is JSON, not pickle).
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import TABLE_COLUMNS

__all__ = [
    "MAX_UPLOAD_MB",
    "AlignedTables",
    "ColumnTypes",
    "align_tables",
    "columns_sentence",
    "infer_column_types",
    "read_table",
    "shortened",
    "table_row",
    "yes_no_flags",
    "yes_no_note",
]

MAX_UPLOAD_MB = 200
"""Largest table file accepted, in MiB (same as ``maxUploadSize`` in .streamlit/config.toml)."""

_MISSING_TOKENS: tuple[str, ...] = (
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


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------
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


def _check_unique_names(names: Sequence[str], *, name: str) -> None:
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


def _read_parquet(data: bytes, *, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        names = [str(c) for c in parquet.schema_arrow.names]
        _check_column_count(len(names), name=name)
        _check_unique_names(names, name=name)
        table = parquet.read()
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
        _check_unique_names(names, name=name)
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
    _check_unique_names(named, name=name)
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
            na_values=list(_MISSING_TOKENS),
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
        A path, the raw bytes, or an open binary file (e.g. a Streamlit ``UploadedFile``).
        The format is recognised from the content (Parquet's ``PAR1`` magic), not
        trusted from the file name. CSV must be UTF-8; the delimiter (``,`` ``;``
        tab ``|``) is taken from the header row; the cells in :data:`_MISSING_TOKENS`
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
    if frame.shape[1] == 0:
        raise InputError(f"Table '{name}' has no columns; upload a file with a header row.")
    if len(frame) == 0:
        raise InputError(f"Table '{name}' has column names but no rows; upload a file with data rows.")
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


# --------------------------------------------------------------------------------------
# Column types
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnTypes:
    """Which columns are compared as numbers, which as categories, which are left out.

    Attributes
    ----------
    numeric, categorical, ignored : tuple of str
        Column names, each in table order. ``numeric`` columns are compared by
        ``|x - s| / range`` and ``categorical`` ones by equality (docs/methods.md §1 step 1).
    """

    numeric: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The compared columns: numeric first, then categorical."""
        return self.numeric + self.categorical

    def kind(self, column: str) -> str:
        """Return ``"numeric"``, ``"categorical"`` or ``"ignored"`` for a column name."""
        if column in self.numeric:
            return "numeric"
        if column in self.categorical:
            return "categorical"
        if column in self.ignored:
            return "ignored"
        raise KeyError(column)


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


_MOSTLY_NUMERIC = 0.9


def _looks_numeric_text(series: pd.Series) -> bool:
    """True when a text column is mostly numbers (a numeric column with some junk in it)."""
    values = series.dropna()
    if values.empty:
        return False
    parsed = pd.to_numeric(values.astype(str).str.strip(), errors="coerce")
    return bool(parsed.notna().mean() >= _MOSTLY_NUMERIC)


def infer_column_types(
    df: pd.DataFrame,
    *,
    categorical: Sequence[str] | str = (),
    numeric: Sequence[str] | str = (),
    ignore: Sequence[str] | str = (),
) -> ColumnTypes:
    """Decide which columns are numeric and which categorical; the user's choices win.

    Parameters
    ----------
    df : pandas.DataFrame
        A representative table (normally the training table).
    categorical, numeric, ignore : sequence of str or comma-separated str
        Columns the user marks explicitly. A column may appear in only one of them.

    Returns
    -------
    ColumnTypes
        Unmarked columns: object, string, bool and category dtypes are categorical,
        except a text column that is at least 90 % numbers, which is numeric (so that
        :func:`align_tables` names the junk values rather than silently comparing
        them as categories); numeric and datetime dtypes are numeric. A numeric
        column with few distinct integer values (e.g. a 0/1 flag or a 1-5 grade) stays
        numeric unless marked categorical: Gower then counts a difference of one step
        as a fraction of the range, the usual choice for ordinal codes.

    Raises
    ------
    InputError
        A marked column is not in the table, or is marked twice.

    Examples
    --------
    >>> df = pd.DataFrame({"age": [30, 41], "sex": ["F", "M"], "id": [1, 2]})
    >>> infer_column_types(df, ignore=["id"])
    ColumnTypes(numeric=('age',), categorical=('sex',), ignored=('id',))
    """
    marks = {"categorical": _names(categorical), "numeric": _names(numeric), "ignored": _names(ignore)}
    columns = [str(c) for c in df.columns]
    unknown = [c for names in marks.values() for c in names if c not in columns]
    if unknown:
        raise InputError(
            "Column(s) "
            + ", ".join(f"'{c}'" for c in dict.fromkeys(unknown))
            + " named in the column settings are not in the table; the columns are "
            + ", ".join(f"'{c}'" for c in columns[:30])
            + ("..." if len(columns) > 30 else "")
            + "."
        )
    owner: dict[str, str] = {}
    for kind, names in marks.items():
        for col in names:
            if col in owner and owner[col] != kind:
                raise InputError(f"Column '{col}' is marked both {owner[col]} and {kind}; choose one.")
            owner[col] = kind
    out: dict[str, list[str]] = {"numeric": [], "categorical": [], "ignored": []}
    for col, series in zip(columns, (df.iloc[:, i] for i in range(df.shape[1])), strict=True):
        if col in owner:
            out[owner[col]].append(col)
            continue
        dtype = series.dtype
        if pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
            out["categorical"].append(col)
        elif pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype) or _looks_numeric_text(series):
            out["numeric"].append(col)
        else:
            out["categorical"].append(col)
    return ColumnTypes(numeric=tuple(out["numeric"]), categorical=tuple(out["categorical"]), ignored=tuple(out["ignored"]))


# --------------------------------------------------------------------------------------
# Alignment
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlignedTables:
    """Tables checked against each other and converted for the distance code.

    Attributes
    ----------
    frames : dict of str to pandas.DataFrame
        Same keys as the input. Each frame holds exactly ``types.columns`` in that
        order, a 0-based ``RangeIndex`` (row ``i`` = row ``i`` of the input),
        numeric columns as float64 with NaN for missing, categorical columns as
        Python ``str`` with NaN for missing.
    types : ColumnTypes
        The types actually used (columns dropped here are moved to ``ignored``).
    warnings : tuple of str
        Plain sentences about what was changed or looks odd (dropped all-missing
        columns, constant columns, identifier-like columns).
    """

    frames: dict[str, pd.DataFrame] = field(repr=False)
    types: ColumnTypes
    warnings: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> pd.DataFrame:
        return self.frames[key]


def columns_sentence(columns: Sequence[Any], wanted: str | None = None, *, limit: int = 200) -> str:
    """The end of a refusal naming the table's columns: all of them (beyond ``limit``, "... and N more"), then
    the closest name to ``wanted`` (:mod:`difflib`, case-insensitive) when one is close: "did you mean 'credit'?"."""
    import difflib

    names = [str(c) for c in columns]
    shown = ", ".join(f"'{c}'" for c in names[:limit]) + (f", ... and {len(names) - limit:,} more" if len(names) > limit else "")
    text = f"its column is {shown}" if len(names) == 1 else f"its {len(names):,} columns are {shown}"
    if wanted is not None:
        lowered = {n.lower(): n for n in reversed(names)}  # the first spelling wins
        close = difflib.get_close_matches(str(wanted).strip().lower(), list(lowered), n=1, cutoff=0.6)
        if close:
            return f"{text}; did you mean '{lowered[close[0]]}'?"
    return text + "."


def _quote_list(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(f"'{c}'" for c in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _to_numeric(series: pd.Series, *, table: str, column: str) -> pd.Series:
    if pd.api.types.is_bool_dtype(series.dtype):
        return series.astype("float64")
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        stamps = pd.to_datetime(series, utc=True)
        seconds = (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
        return seconds.astype("float64")
    if pd.api.types.is_numeric_dtype(series.dtype):
        return series.astype("float64")
    text = series.astype("string").str.strip()
    parsed = pd.to_numeric(text, errors="coerce").astype("float64")
    bad = parsed.isna() & series.notna() & ~text.isin(_MISSING_TOKENS)
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"Column '{column}' of table '{table}' is numeric but holds text such as "
            f"'{series.iloc[first]}' (row {first}, {int(bad.sum())} such cells); fix those cells "
            "or mark the column as categorical."
        )
    return parsed


def _label(value: Any) -> Any:
    """One category label as str (NaN for missing), with 13 and 13.0 written the same way."""
    if value is None or value is pd.NA or value is pd.NaT:
        return np.nan
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return np.nan
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    return np.nan if text in _MISSING_TOKENS else text


def _to_categorical(series: pd.Series) -> pd.Series:
    """Category labels as Python str with NaN for missing (converted once per distinct value)."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    labels = np.empty(len(uniques) + 1, dtype=object)
    labels[:-1] = [_label(u) for u in uniques]
    labels[-1] = np.nan
    return pd.Series(labels[codes], dtype=object)


_MIN_CATEGORY_OVERLAP = 0.5
"""Below this share of shared category values (by rows, either direction), two tables' codings are flagged."""


def _category_mismatch(column: str, ref_name: str, ref: pd.Series, name: str, other: pd.Series) -> str | None:
    """A sentence when ``other`` codes ``column`` with categories that barely occur in ``ref`` (or the reverse)."""
    a, b = ref.dropna(), other.dropna()
    if a.empty or b.empty or a.nunique() > 0.5 * len(a):  # empty, or identifier-like: warned about elsewhere
        return None
    in_ref = float(b.isin(set(a.unique())).mean())
    in_other = float(a.isin(set(b.unique())).mean())
    if min(in_ref, in_other) >= _MIN_CATEGORY_OVERLAP:
        return None

    def examples(values: pd.Series, exclude: pd.Series) -> str:
        common = values[~values.isin(set(exclude.unique()))].value_counts().index[:3]
        return ", ".join(f"'{v}'" for v in common)

    share, which, whose = (in_ref, name, ref_name) if in_ref <= in_other else (in_other, ref_name, name)
    return (
        f"Column '{column}' is coded differently in table '{name}' (e.g. {examples(b, a) or 'the same values'}) "
        f"than in table '{ref_name}' (e.g. {examples(a, b) or 'the same values'}): only {100 * share:.0f} % of "
        f"the values in '{which}' occur in '{whose}'; recode the tables the same way, otherwise the distances "
        "compare codes, not records."
    )


def _check_columns(frame: Any, *, name: str, used: Sequence[str], known: set[str], reference: str) -> None:
    """Refuse a table that is not a DataFrame, has duplicate column names, or lacks or adds compared columns."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"Table '{name}' is not a table (got {type(frame).__name__}).")
    cols = [str(c) for c in frame.columns]
    _check_unique_names(cols, name=name)
    missing = [c for c in used if c not in cols]
    extra = [c for c in cols if c not in known]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"lacks the column(s) {_quote_list(missing)}")
        if extra:
            parts.append(f"has column(s) {_quote_list(extra)} that the others lack")
        raise InputError(
            f"Table '{name}' " + " and ".join(parts) + f" compared with table '{reference}'; "
            "all tables need the same columns (rename them, or ignore the extra ones)."
        )


def _check_row_counts(frames: Mapping[str, pd.DataFrame], min_rows: Mapping[str, int] | None) -> None:
    """Refuse a table with fewer rows than its floor in ``min_rows`` (1 for a table not named there)."""
    floors = {name: 1 for name in frames}
    floors.update({k: int(v) for k, v in (min_rows or {}).items() if k in frames})
    for name in frames:
        n = len(frames[name])
        if n < floors[name]:
            raise InputError(f"Table '{name}' has {n} row(s) but at least {floors[name]} are needed; use a larger table.")


def _convert_columns(frame: pd.DataFrame, *, name: str, types: ColumnTypes) -> dict[str, pd.Series]:
    """The compared columns of one table: numeric as float64 (infinite values refused), categorical as str labels.

    Columns are found by name, whatever their order in ``frame``; each result has a 0-based index.
    """
    position = {str(c): i for i, c in enumerate(frame.columns)}

    def column(col: str) -> pd.Series:
        return frame.iloc[:, position[col]].reset_index(drop=True)

    converted: dict[str, pd.Series] = {}
    for col in types.numeric:
        values = _to_numeric(column(col), table=name, column=col)
        arr = values.to_numpy()
        inf = np.isinf(arr)
        if inf.any():
            first = int(np.flatnonzero(inf)[0])
            raise InputError(
                f"Column '{col}' of table '{name}' holds infinite values ({int(inf.sum())}, first at row "
                f"{first}); replace them with numbers or leave the cells empty."
            )
        converted[col] = values
    for col in types.categorical:
        converted[col] = _to_categorical(column(col))
    return converted


def _drop_empty_columns(
    converted: Mapping[str, Mapping[str, pd.Series]], used: Sequence[str]
) -> tuple[list[str], list[str], list[str]]:
    """Drop every column that is entirely missing in some table (members and non-members must share columns).

    Returns
    -------
    kept, dropped, warnings : list of str
        The columns left, the columns dropped, and one sentence per dropped column.

    Raises
    ------
    InputError
        When no column is left.
    """
    warnings: list[str] = []
    dropped: list[str] = []
    for col in used:
        empty_in = [name for name in converted if converted[name][col].isna().all()]
        if empty_in:
            dropped.append(col)
            warnings.append(f"Column '{col}' was dropped: it has no values in table(s) {_quote_list(empty_in)}.")
    kept = [c for c in used if c not in dropped]
    if not kept:
        raise InputError("Every compared column is entirely missing in at least one table; no column is left to compare.")
    return kept, dropped, warnings


def _column_warnings(
    converted: Mapping[str, Mapping[str, pd.Series]], kept: Sequence[str], *, types: ColumnTypes, reference: str
) -> list[str]:
    """Sentences about kept columns that look odd: constant, identifier-like, or coded differently between tables."""
    names = list(converted)
    warnings: list[str] = []
    for col in kept:
        pooled = pd.concat([converted[name][col] for name in names], ignore_index=True)
        distinct = pooled.nunique(dropna=True)
        if distinct == 1:
            warnings.append(f"Column '{col}' has the same value in every table; it adds nothing to the distances.")
        elif col in types.categorical:
            first = converted[reference][col]
            n_first = int(first.notna().sum())
            if n_first >= 50 and first.nunique(dropna=True) == n_first:
                warnings.append(
                    f"Column '{col}' has a different value in every row of table '{reference}'; if it is an "
                    "identifier, ignore it, because it makes every record look equally far from every other."
                )
    for col in (c for c in types.categorical if c in kept):
        for name in names[1:]:
            note = _category_mismatch(col, reference, converted[reference][col], name, converted[name][col])
            if note:
                warnings.append(note)
    return warnings


def align_tables(
    frames: Mapping[str, pd.DataFrame],
    *,
    types: ColumnTypes,
    min_rows: Mapping[str, int] | None = None,
) -> AlignedTables:
    """Check that the tables share their columns and convert them for the distance code.

    Parameters
    ----------
    frames : mapping of str to pandas.DataFrame
        The tables by role, e.g. ``{"train": ..., "holdout": ..., "synthetic": ...}``.
        The first one is the reference in error messages.
    types : ColumnTypes
        Column types, usually from :func:`infer_column_types` on the training table.
        Columns are matched by name (their order may differ between tables).
    min_rows : mapping of str to int, optional
        Minimum number of rows per table (default 1 for every table).

    Returns
    -------
    AlignedTables
        Converted frames, the types used and warnings. A column that is entirely
        missing in any table is dropped (with a warning): otherwise members and
        non-members would be compared on different columns.

    Raises
    ------
    InputError
        Columns missing from or extra in a table, duplicate column names, text in a
        numeric column, infinite values, too few rows, or no column left to compare.

    Notes
    -----
    docs/methods.md §1 step 1: Gower distance compares numeric columns by scaled
    absolute difference and categorical columns by equality, so both sides of a
    comparison must hold the same columns with the same types.
    """
    if not frames:
        raise InputError("No tables were given; upload at least the training and synthetic tables.")
    names = list(frames)
    reference = names[0]
    used = list(types.columns)
    if not used:
        raise InputError("No column is left to compare; un-ignore at least one column.")
    for name in names:
        _check_columns(frames[name], name=name, used=used, known=set(used) | set(types.ignored), reference=reference)
    _check_row_counts(frames, min_rows)
    converted = {name: _convert_columns(frames[name], name=name, types=types) for name in names}
    kept, dropped, warnings = _drop_empty_columns(converted, used)
    warnings += _column_warnings(converted, kept, types=types, reference=reference)
    numeric = tuple(c for c in types.numeric if c in kept)
    categorical = tuple(c for c in types.categorical if c in kept)
    order = list(numeric + categorical)
    out_frames = {name: pd.DataFrame({col: converted[name][col] for col in order}, columns=order) for name in names}
    new_types = ColumnTypes(numeric=numeric, categorical=categorical, ignored=tuple(types.ignored) + tuple(dropped))
    return AlignedTables(frames=out_frames, types=new_types, warnings=tuple(warnings))


# --------------------------------------------------------------------------------------
# Yes/no columns
# --------------------------------------------------------------------------------------
_YES_TEXTS = frozenset({"1", "1.0", "true", "yes"})
_NO_TEXTS = frozenset({"0", "0.0", "false", "no"})
"""Cell texts read as yes (1) and no (0) in a yes/no column, in any case (``is_member``, a canary's ``included``)."""


def table_row(table: str, row: int) -> str:
    """Where a 0-based data row stands in a file, as its user counts: "row 3 of 'x.csv' (counting the header as row 1)"."""
    return f"row {row + 2} of '{table}' (counting the header as row 1)"


def yes_no_flags(values: pd.Series, *, column: str, table: str, yes: str, no: str) -> np.ndarray:
    """A yes/no column as bool: 0/1, booleans, or yes/no / true/false text in any case.

    Anything else is refused with the first bad cell, naming ``yes`` and ``no`` (what 1 and 0 mean).
    """
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        arr = values.to_numpy(dtype=np.float64)
        bad = ~np.isin(arr, (0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            shown = "empty" if np.isnan(arr[i]) else f"{values.iloc[i]!r}"
            raise InputError(f"Column '{column}' must be 0 ({no}) or 1 ({yes}), but {table_row(table, i)} is {shown} "
                             f"({int(bad.sum())} such rows).")  # fmt: skip
        return arr == 1.0
    text = values.astype("string").str.strip().str.lower()
    true, false = text.isin(_YES_TEXTS).to_numpy(dtype=bool), text.isin(_NO_TEXTS).to_numpy(dtype=bool)
    bad = ~(true | false)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        shown = "empty" if pd.isna(values.iloc[i]) else repr(str(values.iloc[i]))
        raise InputError(f"Column '{column}' must be 0 ({no}) or 1 ({yes}), or yes/no or true/false, but "
                         f"{table_row(table, i)} is {shown} ({int(bad.sum())} such rows).")  # fmt: skip
    return true


def yes_no_note(values: pd.Series, *, column: str, yes: str, no: str) -> str | None:
    """The sentence saying how a yes/no column given as text was read, or None for 0/1 or booleans."""
    if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_numeric_dtype(values.dtype):
        return None
    text = values.dropna().astype("string").str.strip()
    seen = sorted(set(text), key=lambda v: (v.lower() not in _YES_TEXTS, v.lower()))
    if all(v.lower() in ("0", "1", "0.0", "1.0") for v in seen):
        return None
    said_yes = ", ".join(f"'{v}'" for v in seen if v.lower() in _YES_TEXTS)
    said_no = ", ".join(f"'{v}'" for v in seen if v.lower() in _NO_TEXTS)
    return (f"Column '{column}' holds text: {said_yes} read as {yes} (1) and {said_no} as {no} (0) "
            "(accepted: yes/no, true/false, 1/0, in any case).")  # fmt: skip
