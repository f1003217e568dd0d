"""The one result store of the dashboard: finished heavy results, shared by sessions, bounded in entries and bytes.

:func:`cached_run` runs a step once per key under a progress bar and keeps its result;
:func:`load_table` reads a table once (an upload only for its own session); a background
thread drops the large results of sessions that ended. Nothing else in the dashboard caches.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from audit_core.common.hashing import fingerprint
from audit_core.common.runtime import ProgressFn
from audit_core.common.table_files import read_table

__all__ = [
    "SESSION_BOUND_BYTES",
    "SWEEP_SECONDS",
    "UPLOADED_BY",
    "ResultStore",
    "StoreView",
    "approx_nbytes",
    "cached_run",
    "load_database_table",
    "load_table",
    "result_cache",
    "session_id",
]


@contextlib.contextmanager
def _progress_reporter(label: str) -> Iterator[ProgressFn]:
    """A progress bar for long work; yields the ``progress(fraction, message)`` callback.

    The bar disappears when the work ends, whether it finished, failed or was
    interrupted by a rerun.
    """
    bar = st.progress(0.0, text=label)

    def update(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=f"{label}: {message}")

    try:
        yield update
    finally:
        bar.empty()


_T = TypeVar("_T")
_CACHE_SIZE = 32
"""Most results the store keeps (the byte budget is the bound that matters; a comparison
of four generators writes twelve entries: fits, samples and audits)."""
_CACHE_BYTES = 768 * 2**20
"""Most bytes (as :func:`approx_nbytes` counts them) the store keeps, all sessions together."""
SESSION_BOUND_BYTES = 32 * 2**20
"""Results above this size live only while a session that used them is connected."""


class ResultStore:
    """A process-wide LRU of finished heavy results, bounded in entries and in bytes.

    Each entry remembers the sessions that used it. A result larger than
    :data:`SESSION_BOUND_BYTES` (an audit of uploaded tables) is dropped once none of
    them is connected any more, so a closed browser tab does not keep a million-row
    upload in memory; small results (the bundled samples) stay for every session.
    A single result larger than the byte budget (an audit of two million-row uploads)
    is kept alone, the others evicted, until the next result or the end of its sessions.
    """

    def __init__(self, max_entries: int = _CACHE_SIZE, max_bytes: int = _CACHE_BYTES) -> None:
        self.max_entries, self.max_bytes = int(max_entries), int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[Any, int, set[str]]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(size for _, size, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def keys(self) -> list[Hashable]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._items.clear()

    def pop(self, key: Hashable) -> None:
        """Forget ``key`` (no error when it is not held)."""
        with self._lock:
            self._items.pop(key, None)

    def get(self, key: Hashable, session: str | None = None) -> Any | None:
        """The result under ``key`` (marked most recently used, ``session`` added to its users), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            if session:
                item[2].add(session)
            return item[0]

    def put(self, key: Hashable, value: Any, session: str | None = None) -> None:
        """Keep ``value`` under ``key``, evicting least recently used results past the bounds."""
        size = approx_nbytes(value)
        with self._lock:
            self._items.pop(key, None)
            if size > self.max_bytes:  # kept alone (the page must be able to show it), dropped by the next put
                self._items.clear()
            self._items[key] = (value, size, {session} if session else set())
            self._evict()

    def drop_sessions_gone(self, is_active: Callable[[str], bool]) -> int:
        """Drop large results none of whose sessions is active; returns how many were dropped."""
        with self._lock:
            gone = [
                k for k, (_, size, users) in self._items.items()
                if size > SESSION_BOUND_BYTES and users and not any(is_active(u) for u in users)
            ]
            for k in gone:
                del self._items[k]
            return len(gone)

    def _evict(self) -> None:
        total = sum(size for _, size, _ in self._items.values())
        while len(self._items) > 1 and (len(self._items) > self.max_entries or total > self.max_bytes):
            _, (_, size, _) = self._items.popitem(last=False)
            total -= size


def approx_nbytes(obj: Any, _depth: int = 0) -> int:
    """Memory held by a result: tables, arrays and the containers and dataclasses around them.

    Counts DataFrame and Series memory (``deep=True``: strings included), the buffers
    of anything with an integer ``nbytes`` (numpy arrays, torch tensors) and of bytes;
    a torch module counts its parameters and buffers. Other objects count a nominal
    64 bytes. Four levels deep at most.
    """
    if isinstance(obj, pd.DataFrame | pd.Series):
        usage = obj.memory_usage(deep=True, index=True)
        return int(usage.sum() if isinstance(usage, pd.Series) else usage)
    if isinstance(obj, bytes | bytearray | memoryview):
        return len(obj)
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int) and not isinstance(obj, type):
        return nbytes
    state_dict = getattr(obj, "state_dict", None)
    if callable(state_dict) and hasattr(obj, "parameters"):  # a torch.nn.Module
        return 64 + sum(int(t.nbytes) for t in state_dict().values())
    if _depth >= 4:
        return 64
    if isinstance(obj, dict):
        return 64 + sum(approx_nbytes(v, _depth + 1) for v in obj.values())
    if isinstance(obj, list | tuple | set | frozenset):
        return 64 + sum(approx_nbytes(v, _depth + 1) for v in obj)
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is not None:
        return 64 + sum(approx_nbytes(getattr(obj, f, None), _depth + 1) for f in fields)
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return 64 + sum(approx_nbytes(v, _depth + 1) for v in vars(obj).values())
    return 64


class StoreView(MutableMapping):
    """A ``cache`` mapping for audit_core functions that take one, kept in the result store.

    Entries live under ``(namespace, key)`` in ``store`` with the same bounds, LRU order
    and end-of-session rule as every other result (the generators page's fitted models,
    samples and audits), instead of in a second, unbounded dict.
    """

    def __init__(self, store: ResultStore, namespace: str, session: str | None = None) -> None:
        self.store, self.namespace, self.session = store, namespace, session

    def __getitem__(self, key: Hashable) -> Any:
        value = self.store.get((self.namespace, key), self.session)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.store.put((self.namespace, key), value, self.session)

    def __delitem__(self, key: Hashable) -> None:
        self.store.pop((self.namespace, key))

    def __contains__(self, key: object) -> bool:
        return (self.namespace, key) in self.store

    def __iter__(self) -> Iterator[Hashable]:
        return iter([k[1] for k in self.store.keys() if isinstance(k, tuple) and len(k) == 2 and k[0] == self.namespace])

    def __len__(self) -> int:
        return sum(1 for _ in self)


SWEEP_SECONDS = 20.0
"""How often the store drops the large results of sessions that ended (a background thread)."""


@st.cache_resource(show_spinner=False)
def _result_store() -> ResultStore:
    """The one process-wide :class:`ResultStore` (shared by sessions).

    A daemon thread drops the large results of ended sessions every
    :data:`SWEEP_SECONDS` and hands freed memory back to the system (also the uploads
    Streamlit frees when a closed session's linger ends), so a closed tab's upload
    leaves the server's memory without waiting for another audit to start.
    """
    store = ResultStore()

    def sweep() -> None:
        while True:
            time.sleep(SWEEP_SECONDS)
            store.drop_sessions_gone(_session_is_active)
            _release_free_memory()  # also what Streamlit freed when a session's linger ended

    threading.Thread(target=sweep, name="result-store-sweep", daemon=True).start()
    return store


def _release_free_memory() -> None:
    """Return freed heap pages to the system (glibc ``malloc_trim``; a no-op elsewhere).

    Python and pandas free a dropped table, but glibc keeps the pages in its arenas,
    so without this the server's resident size would not fall after sessions end.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def result_cache(namespace: str) -> StoreView:
    """A :class:`StoreView` of the result store for this session (the ``cache`` an audit's stages are kept in)."""
    return StoreView(_result_store(), namespace, session_id())


def session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def _session_is_active(session_id: str) -> bool:
    from streamlit import runtime

    return not runtime.exists() or runtime.get_instance().is_active_session(session_id)


UPLOADED_BY = "uploaded_by_session"
"""``DataFrame.attrs`` key of an uploaded table: the session that uploaded it. ``fingerprint`` hashes a table's attrs
with it, so one session never receives a result computed from another session's upload."""


def load_table(source: bytes | str | Path, name: str, *, upload: bool) -> pd.DataFrame:
    """Read and validate a table once (the one result store); an upload is kept for its own session only.

    ``source`` is an upload's bytes or a bundled sample's path; ``name`` names it in messages.
    """
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    session = session_id() if upload else None
    key = fingerprint("table", hashlib.sha256(raw).hexdigest(), name, session or "")

    def read(progress: ProgressFn) -> pd.DataFrame:
        table = read_table(raw if upload else source, name=name)
        if upload:
            table.attrs[UPLOADED_BY] = session or ""
        return table

    return cached_run(f"Reading {name}", key, read)


def load_database_table(url: str, name: str) -> pd.DataFrame:
    """A table read from a database URL (``?table=`` or ``?query=``) once per session: kept for this session only,
    like an upload, and keyed by the whole URL (a new password or query reads again)."""
    from audit_core.common.database import read_database

    session = session_id()
    key = fingerprint("database", hashlib.sha256(url.encode()).hexdigest(), name, session or "")

    def read(progress: ProgressFn) -> pd.DataFrame:
        table = read_database(url, name=name)
        table.attrs[UPLOADED_BY] = session or ""
        return table

    return cached_run(f"Reading {name} from the database", key, read)


def cached_run(label: str, key: str, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """Run ``fn(*args, progress=..., **kwargs)`` under a progress bar, once per ``key``.

    Unlike ``st.cache_data``, the progress bar lives outside the cached work, and a
    result is stored only after ``fn`` returns: an error, or a rerun that interrupts
    the work, leaves no half-written entry. Finished results are shared by sessions
    (:class:`ResultStore`: a few entries, :data:`_CACHE_BYTES` at most, large results
    dropped when their sessions end), so moving a slider or coming back to a page is instant.
    """
    store, session = _result_store(), session_id()
    store.drop_sessions_gone(_session_is_active)
    hit = store.get(key, session)
    if hit is not None:
        return hit
    with _progress_reporter(label) as progress:
        result = fn(*args, progress=progress, **kwargs)
    store.put(key, result, session)
    return result
