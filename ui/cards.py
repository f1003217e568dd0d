"""Metric cards every page uses: one number with its help, a TPR with its interval and the negatives behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import streamlit as st

from audit_core.common.decision import times_chance

if TYPE_CHECKING:
    from audit_core.common.roc import TprAtFpr

__all__ = ["CHART", "HELP", "metric_card", "show_table", "tpr_card"]

CHART: dict[str, object] = {"displayModeBar": False, "displaylogo": False}
"""Plotly's config on every page: no toolbar over the charts' titles (zoom by dragging, double-click resets)."""

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
    if t.supported:
        scale = f"{times_chance(t.tpr, t.target_fpr)} (chance {100 * t.target_fpr:g} %)"
    else:
        scale = f"not measurable (needs {int(np.ceil(10 / t.target_fpr)):,} non-members)"
    st.caption(f"{scale} · 95 % CI {100 * t.ci_low:.1f}–{100 * t.ci_high:.1f} % · {t.n_neg:,} non-members behind it")


def show_table(frame: Any, *, key: str | None = None, height: int | Literal["auto", "stretch", "content"] = "auto") -> None:
    """A display table: index hidden, full width, its first column pinned so a wide table scrolls under it."""
    first = str(frame.columns[0]) if len(frame.columns) else None
    config = {first: st.column_config.Column(pinned=True)} if first is not None else None
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=key, height=height)
