"""Widgets every page uses: errors, progress, metric cards, downloads, last results."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from audit_core.limits import SEED
from audit_core.report import Report, pdf_available, to_json_text
from audit_core.roc import TprAtFpr
from audit_core.runtime import ProgressFn
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


def require_router() -> None:
    """Hand a deep-linked page over to app.py's router (call first in every page).

    Streamlit treats a ``pages/`` folder beside the entry script as an old-style
    multipage app until ``st.navigation`` has run once in the server's life, so a
    bookmark to a page opened on a freshly started server would run the page alone
    (no router, no layout, an auto-generated sidebar). Clearing that flag and
    rerunning lets app.py route the same URL.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


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
_CACHE_SIZE = 8


@st.cache_resource(show_spinner=False)
def _result_store() -> tuple[OrderedDict, threading.Lock]:
    """One process-wide LRU store of finished heavy results (shared by sessions)."""
    return OrderedDict(), threading.Lock()


def fingerprint(*parts: Any) -> str:
    """A stable hash of tables, arrays, dicts and scalars (the key of a heavy result)."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, pd.DataFrame):
            h.update(pd.util.hash_pandas_object(x, index=False).to_numpy().tobytes())
            h.update("|".join(map(str, x.columns)).encode() + str(x.dtypes.tolist()).encode())
        elif isinstance(x, np.ndarray):
            h.update(np.ascontiguousarray(x).tobytes() + str((x.dtype, x.shape)).encode())
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


def cached_run(label: str, key: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, progress=..., **kwargs)`` under a progress bar, once per ``key``.

    Unlike ``st.cache_data``, the progress bar lives outside the cached work, and a
    result is stored only after ``fn`` returns: an error, or a rerun that interrupts
    the work, leaves no half-written entry. Finished results are shared by sessions
    (an LRU of a few entries), so moving a slider or coming back to a page is instant.
    """
    store, lock = _result_store()
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
    with progress_reporter(label) as progress:
        result = fn(*args, progress=progress, **kwargs)
    with lock:
        store[key] = result
        while len(store) > _CACHE_SIZE:
            store.popitem(last=False)
    return result


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


def report_downloads(report: Report, *, records: pd.DataFrame | None = None, key: str) -> None:
    """Download buttons: the HTML report, a PDF of it, the JSON summary, the per-record CSV.

    The files are built only when a button is clicked (deferred data), so reruns
    stay fast however large the report. The PDF button appears where a local
    Chromium can print it (no network involved).
    """
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
            data=lambda: records.to_csv(index=False),
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
    """The seed widget, bounded as on the command line (:data:`audit_core.limits.SEED`)."""
    return int(container.number_input("Seed", min_value=0, max_value=int(SEED.high), value=0, step=1, key=key))
