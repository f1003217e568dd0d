"""Bad input: the one exception type, and the end of a refusal that names a table's columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["InputError", "columns_sentence"]


class InputError(ValueError):
    """Bad input, described in one plain sentence that says what to fix.

    The dashboard shows the message with ``st.error``; the command line prints it
    as one line on stderr and exits with status 2. Anything else that escapes is
    a bug, not a user error.
    """


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
