"""Which columns of a table are compared as numbers, which as categories, which are left out (the user's choice wins).

docs/methods.md §1 step 1: the Gower distance treats the two kinds differently, so the types
matter; :func:`infer_column_types` guesses them and every audit takes the user's overrides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from audit_core.common.errors import InputError

__all__ = ["ColumnTypes", "infer_column_types"]


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
