"""Risk by group (issue 18.5): uncommon records are hit hardest, and an average hides them.

For one column of the audited records, each group (a category, or a quartile of a numeric
column) gets its own TPR at 1 % FPR with the interval every audit uses
(:func:`audit_core.common.roc.tpr_at_fpr`, threshold from that group's own non-members),
its AUC and its sizes, worst group first. A group with too few non-members to resolve
a 1 % FPR at all (fewer than :data:`MIN_NON_MEMBERS`) says so instead of showing a number;
one with fewer than 1,000 (the tool's rule for a supported TPR at 1 % FPR) shows it marked ⚠,
its interval as wide as its sample. Without a column named,
the column whose groups differ most (the spread of their AUCs, over groups with at least
:data:`_MIN_GROUP` members and non-members) is chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.roc import TprAtFpr, roc_curve, tpr_at_fpr

__all__ = ["MIN_NON_MEMBERS", "GroupRisk", "risk_by_group"]

MIN_NON_MEMBERS = 100
"""Fewest non-members a group needs for a TPR at 1 % FPR to be shown at all (one false positive in 100)."""

_MIN_GROUP = 10
"""Fewest members and non-members a group needs for its AUC to count when choosing the column."""

_MAX_GROUPS = 30  # categories beyond the 29 largest are pooled as "other"
_FPR = 0.01


def _group_labels(values: pd.Series) -> pd.Series:
    """Group labels of one column: its categories (the largest 29, the rest "other"), or quartiles of a number."""
    if pd.api.types.is_float_dtype(values) and np.isinf(values.to_numpy()).any():
        values = values.where(np.isfinite(values))  # +-inf: no quartile holds it; grouped with the missing
    if pd.api.types.is_numeric_dtype(values) and values.nunique(dropna=True) > 8:
        bins = pd.qcut(values, 4, duplicates="drop")
        return bins.astype(str).where(values.notna(), "missing")
    labels = values.astype(object).where(values.notna(), "missing").astype(str)
    keep = labels.value_counts().index[: _MAX_GROUPS - 1]
    return labels.where(labels.isin(keep), "other")


def _auc(scores: np.ndarray, member: np.ndarray) -> float:
    return float(roc_curve(scores, member).auc) if member.any() and (~member).any() else float("nan")


@dataclass(frozen=True)
class GroupRisk:
    """The per-group TPR at 1 % FPR of one column.

    Attributes
    ----------
    column : str
    chosen : bool
        True when the column was picked automatically (largest spread of risk).
    rows : tuple of dict
        Per group, worst first: ``group``, ``n_members``, ``n_non_members``, ``auc``,
        ``tpr_at_fpr`` (a TprAtFpr; its ``supported`` says whether 1,000 non-members back it),
        ``measurable`` (at least :data:`MIN_NON_MEMBERS` non-members).
    """

    column: str
    chosen: bool
    rows: tuple[dict[str, Any], ...]

    def table(self) -> pd.DataFrame:
        """One row per group: sizes, TPR at 1 % FPR with its interval (or "too few non-members"), AUC."""
        out = []
        for r in self.rows:
            t: TprAtFpr | None = r["tpr_at_fpr"]
            if r["measurable"] and t is not None:
                tpr = f"{100 * t.tpr:.1f} % [{100 * t.ci_low:.1f}, {100 * t.ci_high:.1f}]" + ("" if t.supported else " ⚠")
            else:
                tpr = f"too few non-members to measure ({r['n_non_members']} < {MIN_NON_MEMBERS})"
            out.append({"group": r["group"], "members": r["n_members"], "non-members": r["n_non_members"],
                        "TPR at 1 % FPR [95 % interval]": tpr, "AUC": round(r["auc"], 3)})  # fmt: skip
        return pd.DataFrame(out)

    def to_json(self) -> dict[str, Any]:
        """``{column: {group: {n_members, n_non_members, auc, measurable, tpr_at_fpr: {"0.01": ...}}}}``, plus how chosen."""
        groups = {}
        for r in self.rows:
            t = r["tpr_at_fpr"]
            auc = r["auc"] if np.isfinite(r["auc"]) else None  # no members or no non-members in the group
            groups[r["group"]] = {"n_members": r["n_members"], "n_non_members": r["n_non_members"], "auc": auc,
                                  "measurable": r["measurable"],
                                  "tpr_at_fpr": {"0.01": t.to_json()} if t is not None else {}}  # fmt: skip
        return {self.column: groups, "column": self.column,
                "chosen_by": "largest spread of risk" if self.chosen else "given"}  # fmt: skip


def _spread(labels: pd.Series, scores: np.ndarray, member: np.ndarray) -> float:
    aucs = []
    for g in labels.unique():
        mask = (labels == g).to_numpy()
        if (mask & member).sum() >= _MIN_GROUP and (mask & ~member).sum() >= _MIN_GROUP:
            aucs.append(_auc(scores[mask], member[mask]))
    return float(np.nanmax(aucs) - np.nanmin(aucs)) if len(aucs) >= 2 else -1.0


def _pick_column(columns: Mapping[str, pd.Series], scores: np.ndarray, member: np.ndarray) -> str:
    """The column whose groups' AUCs spread most (ties: the first)."""
    if not columns:
        raise InputError("There is no column to group the records by.")
    spreads = {name: _spread(_group_labels(values), scores, member) for name, values in columns.items()}
    return max(spreads, key=lambda c: spreads[c])


def risk_by_group(
    columns: Mapping[str, pd.Series], scores: np.ndarray, is_member: np.ndarray, *, column: str | None = None
) -> GroupRisk:
    """Per-group TPR at 1 % FPR for ``column`` (None: :func:`_pick_column`).

    Parameters
    ----------
    columns : mapping of str to pandas.Series
        The audited records' values, one series per column, aligned with ``scores``.
    scores, is_member : array
        Each record's attack score (higher = more member-like) and membership.
    """
    member = np.asarray(is_member, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    if column is not None and column not in columns:
        raise InputError(f"--groups: there is no column '{column}'; choose one of {', '.join(columns)}.")
    chosen = column is None
    name = _pick_column(columns, scores, member) if column is None else column
    labels = _group_labels(columns[name].reset_index(drop=True))
    rows: list[dict[str, Any]] = []
    for g in labels.unique():
        mask = (labels == g).to_numpy()
        n_pos, n_neg = int((mask & member).sum()), int((mask & ~member).sum())
        point = tpr_at_fpr(scores[mask], member[mask], _FPR) if n_pos and n_neg else None
        rows.append({"group": str(g), "n_members": n_pos, "n_non_members": n_neg, "auc": _auc(scores[mask], member[mask]),
                     "tpr_at_fpr": point, "measurable": bool(point is not None and n_neg >= MIN_NON_MEMBERS)})  # fmt: skip
    rows.sort(key=lambda r: (not r["measurable"], -(r["tpr_at_fpr"].tpr if r["measurable"] else 0.0),
                             -np.nan_to_num(r["auc"], nan=0.0)))  # worst first: the highest TPR at 1 % FPR
    return GroupRisk(column=name, chosen=chosen, rows=tuple(rows))
