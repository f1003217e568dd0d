"""Tables checked against each other and converted to the form the distance code trusts.

:func:`align_tables` checks that the tables share their compared columns, refuses a column
that is numeric in one table and text in another, drops columns with no values, and converts
numeric columns to float64 with NaN and categorical ones to ``str`` with NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.errors import InputError
from audit_core.common.table_files import MISSING_TOKENS, check_unique_names

__all__ = ["AlignedTables", "align_tables", "check_shared_columns", "refuse_infinite"]


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


def _quote_list(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(f"'{c}'" for c in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def refuse_infinite(values: np.ndarray, *, table: str, column: str) -> None:
    """One sentence for a numeric column holding +-inf (how many, the first row), as every audit says it."""
    inf = np.isinf(values)
    if inf.any():
        first = int(np.flatnonzero(inf)[0])
        raise InputError(
            f"Column '{column}' of table '{table}' holds infinite values ({int(inf.sum())}, first at row "
            f"{first}); replace them with numbers or leave the cells empty."
        )


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
    bad = parsed.isna() & series.notna() & ~text.isin(MISSING_TOKENS)
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
    return np.nan if text in MISSING_TOKENS else text


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
    check_unique_names(cols, name=name)
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


def check_shared_columns(frames: Mapping[str, pd.DataFrame], *, types: ColumnTypes) -> None:
    """Refuse tables that do not share the compared columns of ``types`` (the first table is the reference).

    The cheap first check of :func:`align_tables` alone, for a page to run as soon as the tables are
    uploaded (before the audit is asked for).
    """
    names = list(frames)
    used = list(types.columns)
    for name in names:
        _check_columns(frames[name], name=name, used=used, known=set(used) | set(types.ignored), reference=names[0])


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
        refuse_infinite(values.to_numpy(), table=name, column=col)
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
