"""Widgets every page uses: errors, progress, metric cards, downloads, last results."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import datetime as dt
import gc
import hashlib
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from audit_core import contract
from audit_core.common.hashing import fingerprint
from audit_core.common.limits import SEED
from audit_core.common.outputs import csv_text
from audit_core.common.report import Report, pdf_available, to_json_text
from audit_core.common.roc import TprAtFpr
from audit_core.common.runtime import ProgressFn
from audit_core.common.tables import read_table
from audit_core.contract import Audit, Inputs, Outcome, Settings
from ui import state

HELP: dict[str, str] = {
    "auc": "Area under the ROC curve: 0.5 is chance (the attack cannot tell members from non-members), 1.0 is perfect.",
    "tpr_at_fpr": (
        "True-positive rate at a fixed false-positive rate: the share of members the attacker exposes while wrongly "
        "accusing only that share of non-members. The number that matters for individuals; averages hide it."
    ),
    "ci": (
        "95 % interval of the TPR that accounts for both samples: the threshold's uncertainty (it is estimated from "
        "the non-members) and the members' count; exact and conservative. Below 10/alpha non-members, the FPR "
        "itself cannot be measured."
    ),
    "eer": "Equal error rate: where false positives and false negatives are equally frequent (0.5 = chance).",
    "accuracy": "Share of records classified correctly at P(member) >= 0.5. Can look harmless while a few records are exposed.",
    "precision": "Of the records called members, the share that really are.",
    "recall": "Of the members, the share called members (= TPR at that threshold).",
    "f1": "Harmonic mean of precision and recall at the decision threshold.",
    "p_member": "P(member | distance): the attacker's posterior that this record was in the training data.",
    "distance": "Gower distance to the nearest synthetic record: 0 means an exact copy, 1 means nothing in common.",
    "error_area": "Error area = 1 - AUC: the higher, the more the MIA is fooled.",
    "grad_norm": "Norm of the loss gradient with respect to the input; fabricated members show a collapse of it.",
}


def show_input_error(exc: Exception) -> None:
    """Show a bad-input error as one clear sentence (no traceback)."""
    st.error(str(exc), icon="🚫")


@contextlib.contextmanager
def progress_reporter(label: str) -> Iterator[ProgressFn]:
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


T = TypeVar("T")
_CACHE_SIZE = 32
"""Most results the store keeps (the byte budget is the bound that matters; a comparison
of four generators writes twelve entries: fits, samples and audits)."""
CACHE_BYTES = 768 * 2**20
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

    def __init__(self, max_entries: int = _CACHE_SIZE, max_bytes: int = CACHE_BYTES) -> None:
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
            release_free_memory()  # also what Streamlit freed when a session's linger ended

    threading.Thread(target=sweep, name="result-store-sweep", daemon=True).start()
    return store


def release_free_memory() -> None:
    """Return freed heap pages to the system (glibc ``malloc_trim``; a no-op elsewhere).

    Python and pandas free a dropped table, but glibc keeps the pages in its arenas,
    so without this the server's resident size would not fall after sessions end.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def result_cache(namespace: str) -> StoreView:
    """A :class:`StoreView` of the result store for this session (the ``cache=`` of audit_core calls)."""
    return StoreView(_result_store(), namespace, _session_id())


def keep_result(key: str, value: Any) -> None:
    """Keep a finished result in the store under ``key`` (read back with :func:`stored_result`)."""
    _result_store().put(key, value, _session_id())


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def _session_is_active(session_id: str) -> bool:
    from streamlit import runtime

    return not runtime.exists() or runtime.get_instance().is_active_session(session_id)


def stored_result(key: str) -> Any | None:
    """A finished result of :func:`cached_run` still in the store, or None (evicted to free memory)."""
    return _result_store().get(key, _session_id())


UPLOADED_BY = "uploaded_by_session"
"""``DataFrame.attrs`` key of an uploaded table: the session that uploaded it. ``fingerprint`` hashes a table's attrs
with it, so one session never receives a result computed from another session's upload."""


def load_table(source: bytes | str | Path, name: str, *, upload: bool) -> pd.DataFrame:
    """Read and validate a table once (the one result store); an upload is kept for its own session only.

    ``source`` is an upload's bytes or a bundled sample's path; ``name`` names it in messages.
    """
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    session = _session_id() if upload else None
    key = fingerprint("table", hashlib.sha256(raw).hexdigest(), name, session or "")

    def read(progress: ProgressFn) -> pd.DataFrame:
        table = read_table(raw if upload else source, name=name)
        if upload:
            table.attrs[UPLOADED_BY] = session or ""
        return table

    return cached_run(f"Reading {name}", key, read)


def cached_run(label: str, key: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, progress=..., **kwargs)`` under a progress bar, once per ``key``.

    Unlike ``st.cache_data``, the progress bar lives outside the cached work, and a
    result is stored only after ``fn`` returns: an error, or a rerun that interrupts
    the work, leaves no half-written entry. Finished results are shared by sessions
    (:class:`ResultStore`: a few entries, :data:`CACHE_BYTES` at most, large results
    dropped when their sessions end), so moving a slider or coming back to a page is instant.
    """
    store, session = _result_store(), _session_id()
    store.drop_sessions_gone(_session_is_active)
    hit = store.get(key, session)
    if hit is not None:
        return hit
    with progress_reporter(label) as progress:
        result = fn(*args, progress=progress, **kwargs)
    store.put(key, result, session)
    return result


def run_audit(
    audit: Audit, inputs: Inputs, settings: Settings, *, seed: int, label: str, cache_rescore: bool = False
) -> tuple[str, Outcome]:
    """A page's one call into audit_core: ``(key, outcome)`` for these inputs, settings and seed.

    The heavy run (``audit_core.contract.run``, on the Dask cluster when the dashboard has one)
    happens once per inputs, seed and costly settings, kept in the one result store under
    ``key``; a later change of a ``rescore`` knob re-scores that run instead of repeating it.
    ``cache_rescore`` also keeps each re-scored outcome (for audits whose re-scoring takes seconds).
    """
    from ui.cluster import dask_client

    knobs, defaults = settings.knobs(), settings.defaults()
    cheap = {name: getattr(settings, name) for name, k in knobs.items() if k.rescore}
    key = fingerprint(audit.name, dict(inputs.data), dataclasses.replace(settings, **{n: defaults[n] for n in cheap}).as_dict(),
                      seed)  # fmt: skip

    def compute(progress: ProgressFn) -> Outcome:
        return contract.run(audit, inputs, settings, seed=seed, progress=progress, client=dask_client())

    outcome = cached_run(label, key, compute)
    if not cache_rescore or not dataclasses.replace(outcome.settings, **cheap).changed(outcome.settings):
        return key, outcome.rescore(**cheap)
    rescored = fingerprint(key, "rescore", cheap)
    return key, cached_run("Re-scoring", rescored, lambda progress: outcome.rescore(**cheap))


def metric_card(label: str, value: str, *, help: str | None = None, delta: str | None = None) -> None:
    """One metric with its help text (a thin wrapper so every page looks alike)."""
    st.metric(label, value, delta=delta, delta_color="off", help=help)


def tpr_card(label: str, t: TprAtFpr) -> None:
    """A TPR-at-FPR metric: the value, its 95 % interval and the negatives behind it.

    Marked ⚠ when there are fewer than 10/alpha non-members (the FPR itself is then
    not measurable).
    """
    value = f"{100 * t.tpr:.1f} %" + ("" if t.supported else " ⚠")
    metric_card(label, value, help=HELP["tpr_at_fpr"] + " " + HELP["ci"])
    note = "" if t.supported else f" (needs {int(np.ceil(10 / t.target_fpr)):,})"
    st.caption(f"95 % CI {100 * t.ci_low:.1f}–{100 * t.ci_high:.1f} % · {t.n_neg:,} non-members behind it{note}")


def reproduce(outcome: Outcome, *, key: str) -> None:
    """The exact ``python -m audit_core ...`` line for this result (the report prints it too).

    Its ``--json`` file holds the page's numbers (tested); the line and that JSON are also kept in
    ``st.session_state[f"{key}.command"]`` and ``[f"{key}.cli_json"]`` so a test can run and compare them.
    """
    command = outcome.command()
    st.session_state[f"{key}.command"] = command
    st.session_state[f"{key}.cli_json"] = outcome.to_json()  # what the line's --json file holds
    with st.expander("⌨️ Reproduce this from the command line"):
        st.code(command, language="bash")
        st.caption(
            "Run it in the project folder (with its environment: `.venv/bin/python`): its --json file holds the numbers "
            "this page shows, computed from the same inputs, settings and seed. Uploaded files are named as you "
            "uploaded them: run it where they are."
        )


def report_downloads(report: Report, *, records: pd.DataFrame | None = None, key: str) -> None:
    """Download buttons: the HTML report, a PDF of it, the JSON summary, the per-record CSV.

    The files are built only when a button is clicked (deferred data), so reruns
    stay fast however large the report. The PDF button appears where a local
    Chromium can print it (no network involved). The JSON summary's ``metrics``
    (built from the same ``to_json()`` that the CLI writes with ``--json``) are also kept
    in ``st.session_state[f"{key}.metrics"]``, so a test can compare the page with the CLI.
    """
    st.session_state[f"{key}.metrics"] = report.metrics
    slug = report.title.lower().replace(" ", "_")[:40]
    cols = iter(st.columns(4))
    next(cols).download_button(
        "⬇ HTML report",
        data=report.to_html,
        file_name=f"{slug}.html",
        mime="text/html",
        key=f"{key}.html",
        on_click="ignore",
        help="Self-contained: opens offline, figures included.",
    )
    if pdf_available():
        next(cols).download_button(
            "⬇ PDF report",
            data=lambda: _pdf_bytes(report),
            file_name=f"{slug}.pdf",
            mime="application/pdf",
            key=f"{key}.pdf",
            on_click="ignore",
            help="The HTML report printed by a local headless Chromium.",
        )
    next(cols).download_button(
        "⬇ JSON summary",
        data=lambda: to_json_text(report.to_json()),
        file_name=f"{slug}.json",
        mime="application/json",
        key=f"{key}.json",
        on_click="ignore",
    )
    if records is not None:
        next(cols).download_button(
            "⬇ Per-record CSV",
            data=lambda: csv_text(records),
            file_name=f"{slug}_records.csv",
            mime="text/csv",
            key=f"{key}.csv",
            on_click="ignore",
        )


def _pdf_bytes(report: Report) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return report.to_pdf(Path(tmp) / "report.pdf").read_bytes()


def remember_result(page: str, headline: str, metrics: dict[str, str]) -> None:
    """Record a page's latest result for the home page's 'last results' list."""
    results = st.session_state.setdefault(state.Home.LAST_RESULTS, {})
    results[page] = {"headline": headline, "metrics": metrics, "time": dt.datetime.now().strftime("%H:%M:%S")}


def request_autorun(key: str) -> None:
    """Ask a page to run its sample audit once when it opens (home page buttons)."""
    st.session_state[key] = True


def take_autorun(key: str) -> bool:
    """True once after :func:`request_autorun`: the page should run its sample audit now."""
    return bool(st.session_state.pop(key, False))


def seed_input(container: Any = st, *, key: str | None = None) -> int:
    """The seed widget, bounded as on the command line (:data:`audit_core.common.limits.SEED`)."""
    return int(container.number_input("Seed", min_value=0, max_value=int(SEED.high), value=0, step=1, key=key))
