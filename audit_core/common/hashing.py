"""Content hashes, defined once: the reports' input digests and the result store's keys.

``table_digest`` is what a report prints beside each input (pandas' stable row hashes, so
the same table gives the same digest on any machine); ``fingerprint`` keys a cached result
on everything it was computed from (tables, arrays, bytes, dicts, sequences, scalars).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["fingerprint", "table_digest"]


def table_digest(df: pd.DataFrame) -> str:
    """SHA-256 over a table's row hashes and column names."""
    row_hashes = pd.util.hash_pandas_object(df, index=False).to_numpy()
    return hashlib.sha256(row_hashes.tobytes() + "|".join(map(str, df.columns)).encode()).hexdigest()


def fingerprint(*parts: Any) -> str:
    """A stable SHA-256 of tables, arrays, bytes, dicts, sequences and scalars (the key of a heavy result).

    A table's ``attrs`` are part of it: the dashboard marks an uploaded table with the session that
    uploaded it, so a result computed from one session's upload is never found by another session.
    """
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, pd.DataFrame):
            h.update(repr(sorted(x.attrs.items(), key=lambda kv: str(kv[0]))).encode())
            h.update(table_digest(x).encode() + str(x.dtypes.tolist()).encode())
        elif isinstance(x, np.ndarray):
            h.update(np.ascontiguousarray(x).tobytes() + str((x.dtype, x.shape)).encode())
        elif isinstance(x, bytes | bytearray):
            h.update(hashlib.sha256(x).digest())
        elif isinstance(x, dict):
            for k in sorted(x, key=str):
                feed(str(k))
                feed(x[k])
        elif isinstance(x, list | tuple):
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode())
        h.update(b";")

    for part in parts:
        feed(part)
    return h.hexdigest()
