"""Display tables for readers: the pages' and the reports' tables in words, never the code's keys.

The backend's tables keep their keys (``tpr``, ``ci_low``, ``rate_low``: tests, the JSON and the
per-record CSVs read them); :func:`readable` turns one into what a person reads: labels from
:data:`LABELS` (the glossary's words), shares as percent where the cards show percent, intervals
as one "a–b %" column, ``–`` for a missing value (never "None" or "nan"), yes / no for flags, three
significant digits for other numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LABELS", "PERCENT", "readable"]

LABELS: dict[str, str] = {
    "attack": "attack",
    "auc": "AUC",
    "tpr": "TPR",
    "target_fpr": "target FPR",
    "achieved_fpr": "FPR reached",
    "threshold": "score threshold",
    "n_non_members": "non-members behind it",
    "n_pos": "members",
    "supported": "measurable",
    "epsilon_lower_bound": "epsilon ≥ (95 % confidence)",
    "delta": "delta",
    "confidence": "confidence",
    "inequality": "what is compared",
    "rate_low": "rate tested (its lower bound)",
    "rate_high": "rate it is compared with (its upper bound)",
    "members_evaluated": "members evaluated",
    "non_members_evaluated": "non-members evaluated",
    "source": "table",
    "row": "row",
    "rank": "rank",
    "is_member": "member",
    "distance": "Gower distance",
    "p_member_true": "P(member | d), true-distribution attack",
    "p_member_realistic": "P(member | d), realistic attack",
    "nearest_synthetic_row": "nearest synthetic row",
    "matching_columns": "columns equal",
    "differs_in": "differs in (column: share of the distance)",
    "note": "note",
    "share": "share",
    "reference models": "reference models",
    "tpr at 1 % fpr": "TPR at 1 % FPR",
    "fpr_if_flagged": "FPR if this record is flagged",
    "score": "score",
}
"""Code key -> the words a reader sees (the glossary's terms where it has one)."""

PERCENT: frozenset[str] = frozenset({"tpr", "target_fpr", "achieved_fpr", "share", "tpr at 1 % fpr", "fpr_if_flagged",
                                     "rate_low", "rate_high"})  # fmt: skip
"""Keys shown as percent (the cards show these shares as percent too)."""

_INEQUALITY = {
    "TPR <= e^eps FPR + delta": "members flagged vs non-members flagged (TPR ≤ e^ε · FPR + δ)",
    "TNR <= e^eps FNR + delta": "non-members passed vs members passed (TNR ≤ e^ε · FNR + δ)",
}


def _pct(v: float) -> str:
    return "–" if v != v else (f"{100 * v:.2g} %" if 0 < abs(v) < 0.001 else f"{100 * v:.1f} %")


_IDS = frozenset({"row", "rank", "nearest_synthetic_row", "record_id", "reference models"})
"""Columns of ids and small counts: written as they are, without thousands separators."""


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float | np.floating) and v != v):
        return "–"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return f"{int(v):,}"
    if isinstance(v, float | np.floating):
        f = float(v)
        return f"{f:.3g}" if abs(f) < 1e6 else f"{f:,.0f}"
    return str(v)


def readable(
    frame: pd.DataFrame,
    *,
    labels: Mapping[str, str] | None = None,
    percent: Sequence[str] = (),
    intervals: Mapping[str, tuple[str, str]] | None = None,
    drop: Sequence[str] = (),
) -> pd.DataFrame:
    """``frame`` for a reader: text cells, labelled columns, percent where asked, no "None".

    Parameters
    ----------
    frame : pandas.DataFrame
        A backend table (its keys as columns).
    labels : mapping, optional
        Column labels beyond :data:`LABELS` (or overriding them).
    percent : sequence of str
        Columns shown as percent beyond :data:`PERCENT`.
    intervals : mapping, optional
        ``{label: (low column, high column)}``: the two columns become one "a–b %" column (percent when
        the low column is a percent column), placed where the low column was.
    drop : sequence of str
        Columns left out (code keys a reader does not need).
    """
    names = {**LABELS, **(labels or {})}
    as_percent = set(PERCENT) | set(percent) | {"ci_low", "ci_high"}
    out: dict[str, list[str]] = {}
    paired = {lo: (label, hi) for label, (lo, hi) in (intervals or {}).items()}
    skip = set(drop) | {hi for _, hi in paired.values()}
    for col in frame.columns:
        if col in skip:
            continue
        if col in paired:
            label, hi = paired[col]
            pct = col in as_percent
            out[label] = [("–" if lo != lo or h != h else (f"{100 * lo:.1f}–{100 * h:.1f} %" if pct else f"{lo:.3g}–{h:.3g}"))
                          for lo, h in zip(frame[col], frame[hi], strict=True)]  # fmt: skip
            continue
        values = frame[col].tolist()
        if col == "inequality":
            cells = [_INEQUALITY.get(str(v), _num(v)) for v in values]
        elif col in as_percent:
            cells = [_pct(float(v)) if isinstance(v, int | float | np.number) and not isinstance(v, bool) else _num(v)
                     for v in values]  # fmt: skip
        elif col in _IDS:
            cells = ["–" if v is None or v != v else str(v) for v in values]
        else:
            cells = [_num(v) for v in values]
        out[names.get(str(col), str(col))] = cells
    return pd.DataFrame(out)
