"""Bad input: the one exception type, the end of a refusal that names a table's columns, and a refusal as one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["InputError", "columns_sentence", "one_line"]


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


_LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": " "}


def one_line(text: str, *, limit: int = 2000) -> str:
    """``text`` as one printable line: what the CLI prints after ``error:`` and a page shows in its error box.

    A refusal quotes what it was given (a CSV row, a column name, a model's error text), and that
    can hold line breaks (``\\n``, ``\\r``, and the ones :meth:`str.splitlines` also splits on: form
    feed, ``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029), terminal control sequences (``\\x1b[...``) or
    invisible format characters (a right-to-left override, U+202E, that would show a name reversed). Newlines and
    carriage returns are shown as ``\\n`` / ``\\r``, a tab as a space, any other control, format or separator
    character as its ``\\x..`` / ``\\u....`` escape; beyond ``limit`` characters the text is cut with "...".

    >>> one_line("line 3 ('a,b\\nc') has 2 fields")
    "line 3 ('a,b\\\\nc') has 2 fields"
    """
    import unicodedata

    out = []
    for ch in text.strip():
        if ch in _LINE_BREAKS:
            out.append(_LINE_BREAKS[ch])
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ascii(ch)[1:-1])
        else:
            out.append(ch)
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 3] + "..."
