"""Yes/no columns (a score file's ``is_member``, a canary file's ``included``): 1/0, true/false, yes/no, in any case."""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError

__all__ = ["table_row", "yes_no_flags", "yes_no_note"]

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
            shown = "empty" if np.isnan(arr[i]) else f"{arr[i]:g}"
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
