"""Widgets every page uses: errors, progress, metric cards, downloads, last results."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator

import pandas as pd
import streamlit as st

from audit_core.report import Report, to_json_text
from audit_core.runtime import ProgressFn
from ui import state

HELP: dict[str, str] = {
    "auc": "Area under the ROC curve: 0.5 is chance (the attack cannot tell members from non-members), 1.0 is perfect.",
    "tpr_at_fpr": (
        "True-positive rate at a fixed false-positive rate: the share of members the attacker exposes while wrongly "
        "accusing only that share of non-members. The number that matters for individuals; averages hide it."
    ),
    "ci": "95 % Clopper-Pearson interval of the TPR. Below 10/alpha non-members, the FPR itself cannot be measured.",
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


def metric_card(label: str, value: str, *, help: str | None = None, delta: str | None = None) -> None:
    """One metric with its help text (a thin wrapper so every page looks alike)."""
    st.metric(label, value, delta=delta, delta_color="off", help=help)


def format_tpr(tpr: float, lo: float, hi: float, *, n_neg: int, supported: bool) -> str:
    """'12.3 % [10.1, 14.6]' plus a warning sign when the FPR is not measurable."""
    text = f"{100 * tpr:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"
    return text if supported else text + " ⚠"


def report_downloads(report: Report, *, records: pd.DataFrame | None = None, key: str) -> None:
    """Download buttons for the HTML report, the JSON summary and the per-record CSV."""
    cols = st.columns(3)
    slug = report.title.lower().replace(" ", "_")[:40]
    cols[0].download_button(
        "⬇ HTML report",
        data=report.to_html(),
        file_name=f"{slug}.html",
        mime="text/html",
        key=f"{key}.html",
        help="Self-contained: opens offline, figures included.",
    )
    cols[1].download_button(
        "⬇ JSON summary",
        data=to_json_text(report.to_json()),
        file_name=f"{slug}.json",
        mime="application/json",
        key=f"{key}.json",
    )
    if records is not None:
        cols[2].download_button(
            "⬇ Per-record CSV",
            data=records.to_csv(index=False),
            file_name=f"{slug}_records.csv",
            mime="text/csv",
            key=f"{key}.csv",
        )


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
